"""svmlight/libsvm files (``label index:value …`` per line, ``#`` comments, ``qid:``),
read by scikit-learn's ``load_svmlight_file``. Its errors do not say where; the line and
field of the first bad one are located in the text and named in the message."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.data.raw import decode_text
from kernel_lab.data.table import Table


def read_svmlight(path: Path, raw: bytes, target: str | int | None) -> Table:
    """The rows of the file, dense; features ``x1 …`` (``x0 …`` when the file's indices
    start at 0, as scikit-learn's ``zero_based="auto"`` decides), target ``y``."""
    from sklearn.datasets import load_svmlight_file

    if target is not None:
        raise DataError("the target of an svmlight/libsvm file is the first value on each line; "
                        "a target column cannot be chosen", "leave the target option empty",
                        path=path)
    text, _ = decode_text(path, raw, "an svmlight/libsvm text file")
    try:
        X, y = load_svmlight_file(io.BytesIO(raw), zero_based=True)
    except ValueError as exc:
        raise _locate(path, text) or DataError(
            f"the file cannot be read as svmlight/libsvm ({exc})",
            "write each line as the target value, then index:value pairs", path=path
        ) from None
    if X.shape[0] == 0:
        raise DataError("the file has no data lines", "choose a file with data in it", path=path)
    if X.indices.size == 0:
        raise DataError("no line has any feature", "add index:value pairs after each label",
                        path=path)
    zero_based = bool(X.indices.min() == 0)
    dense = X.toarray() if zero_based else X[:, 1:].toarray()
    first = 0 if zero_based else 1
    names = [f"x{j + first}" for j in range(dense.shape[1])]
    lines = np.array([i for i, line in enumerate(text.splitlines(), start=1)
                      if line.split("#", 1)[0].strip()])
    return Table(dense, np.asarray(y, dtype=np.float64), names, "y",
                 lines=lines if lines.size == dense.shape[0] else None)


def _locate(path: Path, text: str) -> DataError | None:
    """The first bad label, pair or index of the text, as a message with its line and
    field (1-based), or None when none is found."""
    for line_no, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        try:
            float(fields[0])
        except ValueError:
            return DataError(f"{fields[0]!r} is not a numeric label",
                             "each line must start with the target value, then "
                             "index:value pairs", path=path, line=line_no, column=1)
        last = -1
        for k, item in enumerate(fields[1:], start=2):
            idx, colon, value = item.partition(":")
            if idx == "qid":
                continue
            try:
                if not colon:
                    raise ValueError(item)
                j = int(idx)
                float(value)
            except ValueError:
                return DataError(f"{item!r} is not an index:value pair",
                                 "write features as index:value, e.g. 3:0.25", path=path,
                                 line=line_no, column=k)
            if j < 0 or j <= last:
                return DataError(f"feature index {j} is negative or not increasing",
                                 "indices must be non-negative and in increasing order",
                                 path=path, line=line_no, column=k)
            last = j
    return None
