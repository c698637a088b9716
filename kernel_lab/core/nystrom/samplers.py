"""The Nyström landmark samplers behind one interface, in memory.

``sampler.sample(X, kernel, s, rng)`` returns a :class:`~kernel_lab.core.nystrom.common.Sample`:
``s`` distinct landmark indices, per-point scores where the method has them (for display),
and the number of kernel entries evaluated. The scalable samplers (uniform, recursive RLS and
its accelerated variant, randomly pivoted Cholesky) evaluate O(n s) entries (RP-Cholesky on
large data a few times that, see :class:`RPCholeskySampler`) in row blocks of at most
:data:`~kernel_lab.core.nystrom.common.BLOCK_ENTRIES` kernel entries, and never hold more
than O(n + s²) beyond them (RP-Cholesky on small data keeps its n × s factor); the exact
ridge-leverage-score sampler forms the n×n matrix and is a reference for small n.
Recursive RLS at a fixed λ (``RecursiveRLSSampler(lam=λ)``, Algorithm 2) is called with
``s=None`` and returns as many landmarks as d_eff(λ) calls for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import Kernel
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.nystrom.common import (
    CountingKernel,
    Sample,
    Sampler,
    check_rows,
    distinct_by_weight,
)
from kernel_lab.core.nystrom.rls import AcceleratedRLSSampler, RecursiveRLSSampler
from kernel_lab.core.nystrom.rpcholesky import RPCholeskySampler
from kernel_lab.core.nystrom.scores import exact_ridge_scores, lambda_for_budget

#: Bytes the exact leverage scores of n points take per entry of the n × n kernel matrix:
#: the matrix, its eigenvectors and LAPACK's work space.
EXACT_BYTES_PER_ENTRY = 3 * 8.0


def check_exact_memory(n: int, fix: str) -> None:
    """Refuse (MemoryBudgetError, saying ``fix``) exact leverage scores on n points whose
    n × n work does not fit the memory budget."""
    check_allocation(EXACT_BYTES_PER_ENTRY * n * n, f"exact leverage scores on {n} points",
                     fix)


class UniformSampler(Sampler):
    """s distinct points uniformly at random (no kernel evaluations)."""

    name = "uniform"
    title = "uniform"

    def sample(self, X: np.ndarray, kernel: Kernel, s: int, rng: np.random.Generator) -> Sample:
        n = check_rows(X, s)
        order = rng.choice(n, size=s, replace=False)  # in random order: prefixes nest
        return Sample(np.sort(order), None, 0, order=order)


class ExactRLSSampler(Sampler):
    """Exact ridge leverage scores ``l_i = (K (K + λI)⁻¹)_ii`` from one eigendecomposition of
    the n×n kernel matrix (reference for small n); s distinct points ∝ scores.

    Parameters
    ----------
    lam : float or None
        Ridge λ; None chooses it with :func:`lambda_for_budget` on the whole K.
    """

    name = "exact-rls"
    title = "exact RLS"
    scalable = False

    def __init__(self, lam: float | None = None) -> None:
        self.lam = lam

    def sample(self, X: np.ndarray, kernel: Kernel, s: int, rng: np.random.Generator) -> Sample:
        n = check_rows(X, s)
        check_exact_memory(n, "Use the recursive RLS sampler, which needs O(n s) memory.")
        counter = CountingKernel(kernel)
        K = counter(X)
        lam = lambda_for_budget(K, np.ones(n), s) if self.lam is None else float(self.lam)
        scores = exact_ridge_scores(K, lam)
        return Sample(distinct_by_weight(scores, s, rng), scores, counter.evaluations, lam)


SAMPLERS: dict[str, type[Sampler]] = {
    cls.name: cls for cls in (UniformSampler, ExactRLSSampler, RecursiveRLSSampler,
                              AcceleratedRLSSampler, RPCholeskySampler)
}


def make_sampler(name: str | Sampler, **params: Any) -> Sampler:
    """A sampler by name (see :data:`SAMPLERS`)."""
    if isinstance(name, Sampler):
        return name
    if name not in SAMPLERS:
        raise ParameterError(f"unknown sampler {name!r}; choose one of: {', '.join(SAMPLERS)}")
    return SAMPLERS[name](**params)
