"""Doubly stochastic gradients over a data set's parts.

- :mod:`~kernel_lab.core.dsg.stream`: the keyed epochs (blocks of rows visited in keyed
  order, the rows inside a block in keyed order), the mini-batch stream over any parts, and
  the target summaries the estimators and the learning curve start from.

The estimators (:class:`~kernel_lab.core.models.dsg.DSGRegressor`,
:class:`~kernel_lab.core.models.dsg.DSGClassifier`) train on this stream, an array as one
part.
"""
