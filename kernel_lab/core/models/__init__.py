"""Estimators with the scikit-learn API."""

from __future__ import annotations

from kernel_lab.core.models.dsg import DSGClassifier, DSGRegressor
from kernel_lab.core.models.gfc import GreedyFeatureRegressor
from kernel_lab.core.models.krr import CenteredKernelRidge, KernelRidge, PathResult
from kernel_lab.core.models.nystrom import NystromFeatures, NystromRidge
from kernel_lab.core.models.rff import RandomFourierFeatures, RFFRidge

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
