"""One JSON sanitiser for results, sessions and reports."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of ``value``: mappings with text keys, lists for tuples and
    arrays, Python numbers for numpy scalars, and ``None`` for non-finite floats."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        # numbers in one step (a picture's thousands of points: element by element, the
        # writing of a run's result took a third of a second)
        if value.dtype.kind != "f" or bool(np.isfinite(value).all()):
            return value.tolist()
        kept = value.astype(object)
        kept[~np.isfinite(value)] = None
        return kept.tolist()
    if hasattr(value, "tolist"):  # other numpy arrays and scalars
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
