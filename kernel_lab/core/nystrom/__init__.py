"""Nyström landmark samplers, split by what they hold.

- :mod:`~kernel_lab.core.nystrom.common`: the counted kernel, the :class:`Sample` a sampler
  returns, the budget check, draws by weight, the :class:`Sampler` interface, the block and
  size constants;
- :mod:`~kernel_lab.core.nystrom.scores`: ridge leverage scores — the λ of a budget, the
  ridge factor, Lemma 6's scores of rows, their precision, Algorithm 2's oversampling bound,
  exact scores;
- :mod:`~kernel_lab.core.nystrom.landmark_rows`: what every sampler on rows shares — the
  :class:`~kernel_lab.core.nystrom.landmark_rows.Landmarks` it returns, the key streams of
  its draws, gathers and weighted keys over global row indices;
- :mod:`~kernel_lab.core.nystrom.landmarks`: the one implementation of every sampler over a
  data set's parts, with keyed row choices (uniform, exact RLS, recursive RLS — Algorithms 2
  and 3 and the accelerated variant — and RP-Cholesky; ``choose_landmarks`` by name);
- :mod:`~kernel_lab.core.nystrom.rls`: the level size of the accelerated variant;
- :mod:`~kernel_lab.core.nystrom.rpcholesky`: randomly pivoted Cholesky's numerics, with
  the candidates' residual and the rejection step;
- :mod:`~kernel_lab.core.nystrom.samplers`: the samplers by name (``SAMPLERS``,
  ``make_sampler``) for an array in memory, which run ``landmarks`` on the array as one part.

The package re-exports the public names of ``common``, ``scores``, ``rls``, ``rpcholesky``
and ``samplers``.

References
----------
C. Musco and C. Musco, "Recursive sampling for the Nyström method", NIPS 2017
(Algorithms 2 and 3; accelerated variant of Section 5.2.1).
Y. Chen, E. Epperly, J. Tropp, R. Webber, "Randomly pivoted Cholesky", 2022.
E. Epperly, J. Tropp, R. Webber, "Embrace rejection: kernel matrix approximation by
accelerated randomly pivoted Cholesky", 2024 (the same law, pivots proposed in blocks).
"""

from kernel_lab.core.nystrom.common import (
    BLOCK_ENTRIES,
    FIXED_LAMBDA_BASE,
    LEVEL_CAP,
    RPC_EMPTY_ROUNDS,
    RPC_MAX_PROPOSALS,
    RPC_STORED_MAX,
    CountingKernel,
    Sample,
    Sampler,
    check_budget,
    check_rows,
)
from kernel_lab.core.nystrom.rls import accelerated_level_size
from kernel_lab.core.nystrom.rpcholesky import accept_pivots, candidate_residual, residual_rows
from kernel_lab.core.nystrom.samplers import (
    SAMPLERS,
    AcceleratedRLSSampler,
    ExactRLSSampler,
    RecursiveRLSSampler,
    RPCholeskySampler,
    UniformSampler,
    key_seed,
    make_sampler,
)
from kernel_lab.core.nystrom.scores import (
    COARSE,
    COARSE_CHANGES,
    EXACT_BYTES_PER_ENTRY,
    FLOAT64,
    SINGLE,
    check_delta,
    check_exact_memory,
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
    "BLOCK_ENTRIES",
    "COARSE",
    "COARSE_CHANGES",
    "EXACT_BYTES_PER_ENTRY",
    "FIXED_LAMBDA_BASE",
    "FLOAT64",
    "LEVEL_CAP",
    "RPC_EMPTY_ROUNDS",
    "RPC_MAX_PROPOSALS",
    "RPC_STORED_MAX",
    "SAMPLERS",
    "SINGLE",
    "AcceleratedRLSSampler",
    "CountingKernel",
    "ExactRLSSampler",
    "RPCholeskySampler",
    "RecursiveRLSSampler",
    "Sample",
    "Sampler",
    "UniformSampler",
    "accelerated_level_size",
    "accept_pivots",
    "candidate_residual",
    "check_budget",
    "check_delta",
    "check_exact_memory",
    "check_fixed_lam",
    "check_rows",
    "coarse_score_error",
    "exact_ridge_scores",
    "fixed_lambda_oversampling_bound",
    "key_seed",
    "lambda_for_budget",
    "level_scores",
    "make_sampler",
    "residual_rows",
    "ridge_factor",
    "ridge_scores",
    "score_precision",
    "scores_of_rows",
]
