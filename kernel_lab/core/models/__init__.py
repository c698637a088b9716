"""Estimators with the scikit-learn API."""

from __future__ import annotations

from kernel_lab.core.models.krr import CenteredKernelRidge, KernelRidge, PathResult

__all__ = ["CenteredKernelRidge", "KernelRidge", "PathResult"]
