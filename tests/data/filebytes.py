"""Bytes of small binary data files, for loader tests."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import scipy.io


def npy_bytes(array: np.ndarray, **kwargs: Any) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, **kwargs)
    return buf.getvalue()


def npz_bytes(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def mat_bytes(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    scipy.io.savemat(buf, arrays)
    return buf.getvalue()
