"""NumPy files: a 2-D ``.npy`` array (memory-mapped; the last column is the target) or an
``.npz`` archive of ``X`` and ``y`` (or ``data``/``target``, ``features``/``labels``, or a
single 2-D array). :func:`pick_xy` also serves MATLAB files."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.data.raw import expect_magic
from kernel_lab.data.table import Table, split_target


def _numeric(path: Path, A: Any, what: str) -> np.ndarray:
    A = np.asarray(A)
    if A.dtype.kind not in "biuf":
        raise DataError(f"{what} holds {A.dtype} values, not numbers",
                        "store the data as a numeric array", path=path)
    return A.astype(np.float64, copy=False)


def _matrix_table(path: Path, M: np.ndarray, target: str | int | None, what: str) -> Table:
    M = _numeric(path, M, what)
    if M.ndim != 2:
        raise DataError(f"{what} has shape {M.shape}; a 2-D array (rows = samples, last column = "
                        "target) is needed", "save a 2-D array, or X and y separately in an .npz",
                        path=path)
    names = [f"x{i + 1}" for i in range(M.shape[1] - 1)] + ["y"]
    return split_target(path, M, names, target, header=False)


def _xy_table(path: Path, X: Any, y: Any, xname: str, yname: str) -> Table:
    X = _numeric(path, X, f"the array {xname!r}")
    y = _numeric(path, y, f"the array {yname!r}")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise DataError(f"the array {xname!r} has shape {X.shape}; it must be 2-D "
                        "(samples × features)", "reshape it before saving", path=path)
    if y.ndim == 2 and 1 in y.shape:
        y = y.ravel()
    if y.ndim != 1:
        raise DataError(f"the array {yname!r} has shape {y.shape}; it must be 1-D "
                        "(one target value per sample)", "save a single target vector",
                        path=path)
    if y.shape[0] != X.shape[0]:
        raise DataError(f"{xname!r} has {X.shape[0]} rows but {yname!r} has {y.shape[0]} values",
                        "both must have one entry per sample", path=path)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(f"the array {xname!r} is empty (shape {X.shape})",
                        "save at least one sample and one feature", path=path)
    names = [f"x{i + 1}" for i in range(X.shape[1])]
    return Table(X, y, names, yname)


def read_npy(path: Path, raw: bytes, target: str | int | None) -> Table:
    """A 2-D array, memory-mapped: the features are a view of the file's pages (no copy of
    a float64 array; other dtypes are converted once)."""
    expect_magic(path, raw, b"\x93NUMPY", "a NumPy .npy file")
    try:
        A = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise DataError("the array holds Python objects, which are not loaded for safety",
                            "save a numeric array", path=path) from None
        raise DataError(f"the .npy file is damaged ({exc})", "save it again", path=path) from None
    return _matrix_table(path, A, target, "the array")


def pick_xy(path: Path, arrays: Mapping[str, Any], target: str | int | None,
             kind: str) -> Table:
    lower = {k.lower(): k for k in arrays}
    for xk, yk in (("x", "y"), ("data", "target"), ("features", "labels")):
        if xk in lower and yk in lower:
            if target is not None and str(target) != lower[yk]:
                if str(target) not in arrays:
                    raise DataError(
                        f"there is no array named {target!r} to use as the target "
                        f"(the file has: {', '.join(sorted(arrays))})",
                        f"name one of its arrays, or leave the target empty to use {lower[yk]!r}",
                        path=path)
                yk = str(target)
                return _xy_table(path, arrays[lower[xk]], arrays[yk], lower[xk], yk)
            return _xy_table(path, arrays[lower[xk]], arrays[lower[yk]], lower[xk], lower[yk])
    if len(arrays) == 1:
        (key, A), = arrays.items()
        return _matrix_table(path, A, target, f"the array {key!r}")
    names = ", ".join(sorted(arrays)) or "none"
    raise DataError(
        f"the {kind} file has no arrays named X and y (it has: {names})",
        "store the features as X and the target as y, or a single 2-D array", path=path)


def read_npz(path: Path, raw: bytes, target: str | int | None) -> Table:
    expect_magic(path, raw, b"PK\x03\x04", "a NumPy .npz archive")
    try:  # read from the file, and only the arrays used (not the whole archive in memory)
        with np.load(path, allow_pickle=False) as z:
            return pick_xy(path, z, target, "NPZ")
    except DataError:
        raise
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise DataError("an array holds Python objects, which are not loaded for safety",
                            "save numeric arrays", path=path) from None
        raise DataError(f"the .npz archive is damaged ({exc})", "save it again",
                        path=path) from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DataError(f"the .npz archive is damaged ({exc})", "save it again",
                        path=path) from None
