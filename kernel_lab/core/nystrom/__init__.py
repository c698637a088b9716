"""Nyström landmark samplers, split by what they hold.

- :mod:`~kernel_lab.core.nystrom.common`: the counted kernel, the :class:`Sample` a sampler
  returns, the budget check, draws by weight, the :class:`Sampler` interface, the block and
  size constants;
- :mod:`~kernel_lab.core.nystrom.scores`: ridge leverage scores — the λ of a budget, the
  ridge factor, Lemma 6's scores of rows, their precision, Algorithm 2's oversampling bound,
  exact scores;
- :mod:`~kernel_lab.core.nystrom.rls`: recursive RLS in memory (Algorithms 2 and 3, the
  accelerated variant);
- :mod:`~kernel_lab.core.nystrom.rpcholesky`: randomly pivoted Cholesky in memory, with the
  candidates' residual and the rejection step the partitioned sampler shares;
- :mod:`~kernel_lab.core.nystrom.samplers`: uniform and exact RLS, and the samplers by name
  (``SAMPLERS``, ``make_sampler``).

The one keyed implementation over a data set's parts is
:mod:`kernel_lab.core.parts.landmarks`, which calls the numerics of ``scores`` and
``rpcholesky``; ``samplers`` runs it on an array as one part.
``kernel_lab.core.samplers`` re-exports the public names for the tests that still import
them from there.

References
----------
C. Musco and C. Musco, "Recursive sampling for the Nyström method", NIPS 2017
(Algorithms 2 and 3; accelerated variant of Section 5.2.1).
Y. Chen, E. Epperly, J. Tropp, R. Webber, "Randomly pivoted Cholesky", 2022.
E. Epperly, J. Tropp, R. Webber, "Embrace rejection: kernel matrix approximation by
accelerated randomly pivoted Cholesky", 2024 (the same law, pivots proposed in blocks).
"""
