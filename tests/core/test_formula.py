from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.formula import Formula, FormulaError


@pytest.fixture
def X():
    return np.random.default_rng(0).uniform(0.1, 2.0, size=(25, 4))


@pytest.mark.parametrize(
    "text,ref",
    [
        ("sin(x1) + 0.5 * x2^2", lambda X: np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2),
        ("x1 ** 3 - x2 / x3", lambda X: X[:, 0] ** 3 - X[:, 1] / X[:, 2]),
        ("tanh(sum(x) / sqrt(p))", lambda X: np.tanh(X.sum(1) / 2.0)),
        ("mean(x)", lambda X: X.mean(1)),
        ("sum(x1, x2^2, 3)", lambda X: X[:, 0] + X[:, 1] ** 2 + 3),
        ("mean(x1, x3)", lambda X: (X[:, 0] + X[:, 2]) / 2),
        ("exp(-abs(x4)) * cos(pi * x1) + log(x2) + e", lambda X: np.exp(-np.abs(X[:, 3]))
         * np.cos(np.pi * X[:, 0]) + np.log(X[:, 1]) + np.e),
        ("-x1 + +x2", lambda X: -X[:, 0] + X[:, 1]),
        ("2", lambda X: np.full(X.shape[0], 2.0)),
    ],
)
def test_formulas_match_numpy(X, text, ref):
    np.testing.assert_allclose(Formula(text, 4)(X), ref(X), rtol=1e-14)


@pytest.mark.parametrize(
    "text,match",
    [
        ("__import__('os').system('true')", "only the listed functions"),
        ("__import__('os')", "unknown function __import__"),
        ("x1.__class__", "Attribute is not allowed"),
        ("x5", "x5 does not exist"),
        ("y1 + 1", "unknown name 'y1'"),
        ("x", "sum\\(x\\) or mean\\(x\\)"),
        ("sin(x1, x2)", "exactly one argument"),
        ("x1 +", "not a valid expression"),
        ("[x1]", "List is not allowed"),
        ("'a'", "not a number"),
        ("", "empty"),
        ("lambda: 0", "Lambda is not allowed"),
        ("x1 if x2 else x3", "IfExp is not allowed"),
        ("x1 < x2", "Compare is not allowed"),
    ],
)
def test_rejected_formulas(text, match):
    with pytest.raises(FormulaError, match=match):
        Formula(text, 4)
