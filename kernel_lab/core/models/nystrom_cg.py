"""Nyström ridge by preconditioned conjugate gradients: the names of
:mod:`kernel_lab.core.parts.cg`, the one implementation (on arrays it runs on the array as
one part), kept here for the import paths that name this module."""

from __future__ import annotations

from kernel_lab.core.parts.cg import (
    CG_ROWS,
    DEFAULT_MAX_ITER,
    DEFAULT_TOL,
    PRECONDITIONER_ROWS_PER_LANDMARK,
    CGInfo,
    Progress,
    cg_info,
    kernel_blocks,
    nystrom_predict,
    nystrom_ridge_cg,
    preconditioned_cg,
    preconditioner_factor,
    product_terms,
)

__all__ = ["CG_ROWS", "DEFAULT_MAX_ITER", "DEFAULT_TOL", "PRECONDITIONER_ROWS_PER_LANDMARK",
           "CGInfo", "Progress", "cg_info", "kernel_blocks", "nystrom_predict",
           "nystrom_ridge_cg", "preconditioned_cg", "preconditioner_factor", "product_terms"]
