"""One JSON sanitiser for results, sessions and reports."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of ``value``: mappings with text keys, lists for tuples and
    arrays, Python numbers for numpy scalars, and ``None`` for non-finite floats."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
