"""Losses ``l(u, y)`` of a prediction u and their (sub)gradients ``l'(u, y)`` in u.

Vectorised over arrays of predictions and targets (Dai et al., 2014; the table is in
``docs/papers.md``): squared ``½(u − y)²``, hinge ``max(0, 1 − y u)``, squared hinge
``½ max(0, 1 − y u)²``, logistic ``log(1 + exp(−y u))``, ε-insensitive
``max(0, |u − y| − ε)``, quantile ``max(q (y − u), (q − 1)(y − u))``. At kinks the
subgradient on the side written in that table is used.

The multinomial (softmax) loss of K classes takes a row of K scores u and a class code
y ∈ {0, …, K−1}: ``logsumexp(u) − u_y``, with gradient ``softmax(u) − e_y``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kernel_lab.core.errors import ParameterError

Array = np.ndarray


@dataclass(frozen=True)
class Loss:
    """A loss with its derivative; ``task`` is ``"regression"`` or ``"classification"``
    (labels ±1)."""

    name: str
    task: str
    value: Callable[[Array, Array], Array]
    deriv: Callable[[Array, Array], Array]


def _squared() -> Loss:
    return Loss("squared", "regression", lambda u, y: 0.5 * (u - y) ** 2, lambda u, y: u - y)


def _epsilon(eps: float) -> Loss:
    return Loss("epsilon_insensitive", "regression",
                lambda u, y: np.maximum(0.0, np.abs(u - y) - eps),
                lambda u, y: np.where(np.abs(u - y) > eps, np.sign(u - y), 0.0))


def _quantile(q: float) -> Loss:
    return Loss("quantile", "regression",
                lambda u, y: np.maximum(q * (y - u), (q - 1.0) * (y - u)),
                lambda u, y: np.where(y > u, -q, 1.0 - q))


def _hinge() -> Loss:
    return Loss("hinge", "classification", lambda u, y: np.maximum(0.0, 1.0 - y * u),
                lambda u, y: np.where(y * u < 1.0, -y, 0.0))


def _squared_hinge() -> Loss:
    return Loss("squared_hinge", "classification",
                lambda u, y: 0.5 * np.maximum(0.0, 1.0 - y * u) ** 2,
                lambda u, y: np.where(y * u < 1.0, u - y, 0.0))


def _logistic() -> Loss:
    return Loss("logistic", "classification", lambda u, y: np.logaddexp(0.0, -y * u),
                lambda u, y: -y * np.exp(-np.logaddexp(0.0, y * u)))


def _softmax(u: Array) -> Array:
    e = np.exp(u - u.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def class_codes(y: Array, n_classes: int) -> Array:
    """``y`` as integer class codes 0 … K−1; raises ParameterError for any other label
    (a −1 would otherwise index the last class)."""
    y = np.asarray(y)
    codes = np.asarray(np.rint(y), dtype=np.intp) if y.size else y.astype(np.intp)
    if y.size and (np.any(codes != y) or codes.min() < 0 or codes.max() >= n_classes):
        bad = y[(codes != y) | (codes < 0) | (codes >= n_classes)].flat[0]
        raise ParameterError(f"the multinomial (softmax) loss takes class codes 0 … "
                             f"{n_classes - 1} as labels, got {bad:g} (map labels such as "
                             "±1 to codes first)")
    return codes


def _multinomial() -> Loss:
    def value(u: Array, y: Array) -> Array:
        codes = class_codes(y, u.shape[-1])
        m = u.max(axis=-1)
        lse = m + np.log(np.exp(u - m[..., None]).sum(axis=-1))
        return lse - np.take_along_axis(u, codes[..., None], axis=-1)[..., 0]

    def deriv(u: Array, y: Array) -> Array:
        g = _softmax(u)
        codes = class_codes(y, u.shape[-1])
        np.put_along_axis(g, codes[..., None],
                          np.take_along_axis(g, codes[..., None], axis=-1) - 1.0, axis=-1)
        return g

    return Loss("multinomial", "multiclass", value, deriv)


REGRESSION_LOSSES = ("squared", "epsilon_insensitive", "quantile")
CLASSIFICATION_LOSSES = ("hinge", "squared_hinge", "logistic")
#: Losses of K class scores (class codes 0 … K−1 as targets).
MULTICLASS_LOSSES = ("multinomial",)


def make_loss(name: str, *, epsilon: float = 0.1, quantile: float = 0.5) -> Loss:
    """The loss called ``name`` (see :data:`REGRESSION_LOSSES`, :data:`CLASSIFICATION_LOSSES`)."""
    if name == "squared":
        return _squared()
    if name == "epsilon_insensitive":
        if not epsilon >= 0:
            raise ParameterError(f"epsilon must be ≥ 0, got {epsilon}")
        return _epsilon(float(epsilon))
    if name == "quantile":
        if not 0 < quantile < 1:
            raise ParameterError(f"the quantile level must be in (0, 1), got {quantile}")
        return _quantile(float(quantile))
    if name == "hinge":
        return _hinge()
    if name == "squared_hinge":
        return _squared_hinge()
    if name == "logistic":
        return _logistic()
    if name == "multinomial":
        return _multinomial()
    raise ParameterError(f"unknown loss {name!r}; choose one of: "
                         f"{', '.join(REGRESSION_LOSSES + CLASSIFICATION_LOSSES)}, "
                         "multinomial")
