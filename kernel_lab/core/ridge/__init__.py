"""Ridge regression from sums over a data set's parts, split by what they hold.

- :mod:`~kernel_lab.core.ridge.sums`: squared-loss ridge from normal sums
  (:class:`~kernel_lab.core.ridge.sums.NormalSums`, ``accumulate``, ``solve_squared``) and
  ridge with an unpenalised intercept from centred sums
  (:class:`~kernel_lab.core.ridge.sums.CentredSums`) with λ by exact leave-one-out
  (:class:`~kernel_lab.core.ridge.sums.LooGrid`);
- :mod:`~kernel_lab.core.ridge.fit`: the downstream ridge of the ``nystrom`` experiment —
  Nyström or random features of the rows, summed per canonical row block, the fit, the
  trace, spectral and test errors;
- :mod:`~kernel_lab.core.ridge.normal`: normal sums of feature maps for the learning
  curve's baselines, and the fits on their first D features or s landmarks;
- :mod:`~kernel_lab.core.ridge.cg`: Nyström ridge by preconditioned conjugate gradients,
  one map/reduce over the rows per product.

Every sum is taken per canonical row block and combined in the one fixed tree of
:mod:`kernel_lab.core.rows.blocks`, so the same rows give the same bits in memory and on a
cluster.
"""
