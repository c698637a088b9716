"""Nyström landmark samplers: the public names of :mod:`kernel_lab.core.nystrom`, kept here
for the callers that import them from this module (see that package for what each holds)."""

from __future__ import annotations

from kernel_lab.core.nystrom.common import (
    BLOCK_ENTRIES,
    FIXED_LAMBDA_BASE,
    LEVEL_CAP,
    RPC_EMPTY_ROUNDS,
    RPC_MAX_PROPOSALS,
    RPC_STORED_MAX,
    RUN_ROWS,
    CountingKernel,
    Sample,
    Sampler,
    check_budget,
    check_rows,
    distinct_by_weight,
)
from kernel_lab.core.nystrom.rls import (
    AcceleratedRLSSampler,
    RecursiveRLSSampler,
    accelerated_level_size,
)
from kernel_lab.core.nystrom.rpcholesky import (
    RPCholeskySampler,
    accept_pivots,
    candidate_residual,
    residual_rows,
)
from kernel_lab.core.nystrom.samplers import (
    SAMPLERS,
    ExactRLSSampler,
    UniformSampler,
    check_exact_memory,
    make_sampler,
)
from kernel_lab.core.nystrom.scores import (
    COARSE,
    COARSE_CHANGES,
    FLOAT64,
    SINGLE,
    check_fixed_lam,
    coarse_score_error,
    exact_ridge_scores,
    fixed_lambda_oversampling_bound,
    lambda_for_budget,
    level_scores,
    ridge_factor,
    ridge_scores,
    score_precision,
    scores_of_rows,
)

__all__ = [
    "BLOCK_ENTRIES", "COARSE", "COARSE_CHANGES", "FIXED_LAMBDA_BASE", "FLOAT64", "LEVEL_CAP",
    "RPC_EMPTY_ROUNDS", "RPC_MAX_PROPOSALS", "RPC_STORED_MAX", "RUN_ROWS", "SAMPLERS",
    "SINGLE", "AcceleratedRLSSampler", "CountingKernel", "ExactRLSSampler",
    "RPCholeskySampler", "RecursiveRLSSampler", "Sample", "Sampler", "UniformSampler",
    "accelerated_level_size", "accept_pivots", "candidate_residual", "check_budget",
    "check_exact_memory", "check_fixed_lam", "check_rows", "coarse_score_error",
    "distinct_by_weight", "exact_ridge_scores", "fixed_lambda_oversampling_bound",
    "lambda_for_budget", "level_scores", "make_sampler", "residual_rows", "ridge_factor",
    "ridge_scores", "score_precision", "scores_of_rows",
]
