"""Recursive ridge-leverage-score sampling (Musco & Musco, "Recursive sampling for the
Nyström method", NIPS 2017): the level size of the accelerated variant (Section 5.2.1). The
sampler itself (Algorithms 2 and 3, per-row keys) is
:func:`kernel_lab.core.nystrom.landmarks.recursive_rls_landmarks` and
:func:`~kernel_lab.core.nystrom.landmarks.recursive_rls_fixed_landmarks`; the numerics of a
level (λ, ridge factor, Lemma 6 scores, precision) are :mod:`kernel_lab.core.nystrom.scores`'s.
"""

from __future__ import annotations

import math


def accelerated_level_size(n: int, s: int) -> int:
    """Landmarks per recursive level of the accelerated variant:
    ``ceil(sqrt((n s + s³)/(4n)))``, as in the authors' reference code (``sLevel`` of
    ``recursiveNystrom.m``); their paper's Section 5.2.1 says ``≈ sqrt((n s + s³)/n)``,
    twice as many (see :class:`~kernel_lab.core.nystrom.samplers.RecursiveRLSSampler` for
    why the code's is kept)."""
    return math.ceil(math.sqrt((n * s + s**3) / (4.0 * n)))
