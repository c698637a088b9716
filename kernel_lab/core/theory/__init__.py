"""Closed-form curves: the random-matrix theory of centered kernel ridge regression."""

from __future__ import annotations

from kernel_lab.core.theory.ckrr import (
    DataSpectrum,
    FMoments,
    LimitSetting,
    limiting_risks,
    m_general,
    m_identity,
    moments_of_f,
    optimal_lam,
)

__all__ = [
    "DataSpectrum",
    "FMoments",
    "LimitSetting",
    "limiting_risks",
    "m_general",
    "m_identity",
    "moments_of_f",
    "optimal_lam",
]
