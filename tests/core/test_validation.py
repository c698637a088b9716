"""Estimator parameters checked from one declaration; random states made seeds."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import median_heuristic, resolve_bandwidth
from kernel_lab.core.validation import (
    Integer,
    OneOf,
    Real,
    check_generator,
    check_params,
    check_seed,
)


class _Estimator:
    _parameter_checks: ClassVar = {
        "n": Integer(), "folds": Integer(2), "lam": Real(label="λ (lam)"),
        "eps": Real(strict=False), "nu": Real(optional=True), "kind": OneOf(("a", "b"))}

    def __init__(self, **params):
        self.__dict__.update({"n": 3, "folds": 2, "lam": 1, "eps": 0.0, "nu": None,
                              "kind": "a", **params})


def test_values_come_back_converted():
    p = check_params(_Estimator(n=np.int64(4), lam=np.float32(0.5)))
    assert p == {"n": 4, "folds": 2, "lam": 0.5, "eps": 0.0, "nu": None, "kind": "a"}
    assert type(p["n"]) is int and type(p["lam"]) is float


@pytest.mark.parametrize("bad,match", [
    ({"n": 0}, "n must be a positive integer, got 0"),
    ({"n": True}, "n must be a positive integer"),
    ({"n": 2.0}, "n must be a positive integer"),
    ({"folds": 1}, "folds must be an integer ≥ 2, got 1"),
    ({"lam": 0.0}, r"λ \(lam\) must be positive and finite, got 0.0"),
    ({"lam": np.inf}, "λ"), ({"lam": "1"}, r"λ \(lam\) must be a number, got '1'"),
    ({"eps": -1e-9}, "eps must be finite and non-negative"),
    ({"nu": 0}, "nu must be positive"),
    ({"kind": "c"}, "kind must be one of: a, b; got 'c'"),
    ({"kind": ["a"]}, "kind must be one of"),
])
def test_bad_values_are_named(bad, match):
    with pytest.raises(ParameterError, match=match):
        check_params(_Estimator(**bad))


def test_seeds_are_those_of_scikit_learns_conversion():
    from sklearn.utils import check_random_state

    assert check_seed(7) == check_random_state(7).randint(0, 2**31 - 1)
    assert check_seed(np.random.RandomState(3)) == np.random.RandomState(3).randint(0, 2**31 - 1)
    assert check_seed(np.random.default_rng(1)) == check_seed(np.random.default_rng(1))
    ss = np.random.SeedSequence(5)
    assert check_seed(ss) == int(ss.generate_state(1)[0] % 2**31)
    g = np.random.default_rng(0)
    assert check_generator(g) is g
    assert check_generator(7).random() == np.random.default_rng(check_seed(7)).random()
    assert check_generator(ss).random() == np.random.default_rng(ss).random()


def test_resolve_bandwidth():
    X = np.array([[0.0], [1.0], [3.0]])
    assert resolve_bandwidth(None, X) == median_heuristic(X) == 2.0
    assert resolve_bandwidth(0.5, X) == 0.5
