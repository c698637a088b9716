"""Estimators with the scikit-learn API.

The estimators are imported on first use (PEP 562): ``from kernel_lab.core.models import
KernelRidge`` imports scikit-learn and the estimator's module then, while importing a
submodule that does not need scikit-learn (a Dask worker running a task of the core)
does not import it through this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel_lab.core.models.dsg import DSGClassifier, DSGRegressor
    from kernel_lab.core.models.gfc import GreedyFeatureRegressor
    from kernel_lab.core.models.krr import CenteredKernelRidge, KernelRidge, PathResult
    from kernel_lab.core.models.nystrom import NystromFeatures, NystromRidge
    from kernel_lab.core.models.rff import RandomFourierFeatures, RFFRidge

#: Each public name and the submodule that defines it.
_HOMES = {
    "CenteredKernelRidge": "krr",
    "DSGClassifier": "dsg",
    "DSGRegressor": "dsg",
    "GreedyFeatureRegressor": "gfc",
    "KernelRidge": "krr",
    "NystromFeatures": "nystrom",
    "NystromRidge": "nystrom",
    "PathResult": "krr",
    "RFFRidge": "rff",
    "RandomFourierFeatures": "rff",
}

__all__ = [
    "CenteredKernelRidge",
    "DSGClassifier",
    "DSGRegressor",
    "GreedyFeatureRegressor",
    "KernelRidge",
    "NystromFeatures",
    "NystromRidge",
    "PathResult",
    "RFFRidge",
    "RandomFourierFeatures",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later look-ups find it at once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
