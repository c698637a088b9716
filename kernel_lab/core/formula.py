"""A small, safe expression language for target functions ``f(x)``.

Formulas are written over the features ``x1 … xp`` (1-based), e.g.
``"sin(x1) + 0.5 * x2^2"`` or ``"tanh(sum(x) / sqrt(p))"``.

Grammar: numbers; the names ``x1 … xp``, ``p`` (the dimension), ``pi`` and
``e``; ``+ - * /`` and powers written ``^`` or ``**``; parentheses; the functions
``sin cos exp log sqrt tanh abs`` of one argument, and ``sum`` and ``mean``,
which take either the whole feature vector ``x`` (``sum(x)``, ``mean(x)``) or
several expressions (``sum(x1, x2^2, 3)``).

The text is parsed with :mod:`ast` and only the node types above are
accepted; it is evaluated by walking that tree with numpy, never with
``eval``, so a formula cannot run code.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable

import numpy as np

from kernel_lab.core.errors import ParameterError

MAX_LENGTH = 2000

_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sin": np.sin,
    "cos": np.cos,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "abs": np.abs,
}
_REDUCE = ("sum", "mean")
_BINARY: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
}
_VAR = re.compile(r"x([1-9][0-9]*)\Z")

Node = Callable[[np.ndarray], np.ndarray]


class FormulaError(ParameterError):
    """A formula cannot be parsed or refers to something that does not exist."""

    def __init__(self, text: str, problem: str, column: int | None = None) -> None:
        where = f" at character {column + 1}" if column is not None else ""
        super().__init__(f"formula {text!r}{where}: {problem}")


class Formula:
    """A compiled formula, callable on an (n, p) array.

    Parameters
    ----------
    text : str
        The formula.
    p : int
        Number of features the formula will be evaluated on; ``x{p+1}`` and beyond are
        rejected at compile time.
    """

    def __init__(self, text: str, p: int) -> None:
        if not isinstance(text, str) or not text.strip():
            raise FormulaError(str(text),
                               "the formula is empty; write an expression such as sin(x1)")
        if len(text) > MAX_LENGTH:
            raise FormulaError(text[:40] + "…", f"longer than {MAX_LENGTH} characters")
        self.text = text.strip()
        self.p = int(p)
        source = self.text.replace("^", "**")
        try:
            tree = ast.parse(source, mode="eval")
        except SyntaxError as exc:
            col = None if exc.offset is None else max(exc.offset - 1, 0)
            raise FormulaError(self.text, "this is not a valid expression", col) from None
        self._fn = self._compile(tree.body)
        self.variables = sorted(
            {int(m.group(1)) for m in (_VAR.match(n.id) for n in ast.walk(tree)
                                        if isinstance(n, ast.Name)) if m}
        )

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Evaluate on ``X`` of shape (n, p); returns shape (n,)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.p:
            raise ValueError(f"formula compiled for p = {self.p}, got an array of shape {X.shape}")
        with np.errstate(all="ignore"):
            out = np.asarray(self._fn(X), dtype=np.float64)
        return np.broadcast_to(out, (X.shape[0],)).copy()

    def __repr__(self) -> str:
        return f"Formula({self.text!r}, p={self.p})"

    # -- compilation to closures --------------------------------------------------
    def _fail(self, node: ast.AST, problem: str) -> FormulaError:
        return FormulaError(self.text, problem, getattr(node, "col_offset", None))

    def _compile(self, node: ast.AST) -> Node:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise self._fail(node, f"{node.value!r} is not a number")
            value = float(node.value)
            return lambda X: np.float64(value)
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = self._compile(node.operand)
            if isinstance(node.op, ast.USub):
                return lambda X: np.negative(inner(X))
            return inner
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            op = _BINARY[type(node.op)]
            left, right = self._compile(node.left), self._compile(node.right)
            return lambda X: op(left(X), right(X))
        if isinstance(node, ast.Call):
            return self._call(node)
        kind = type(node).__name__
        raise self._fail(node, f"{kind} is not allowed; use numbers, x1…x{self.p}, + - * / ^ "
                               "and the functions " + ", ".join([*_UNARY, *_REDUCE]))

    def _name(self, node: ast.Name) -> Node:
        name = node.id
        if name == "p":
            p = float(self.p)
            return lambda X: np.float64(p)
        if name in ("pi", "e"):
            value = math.pi if name == "pi" else math.e
            return lambda X: np.float64(value)
        m = _VAR.match(name)
        if m:
            j = int(m.group(1))
            if j > self.p:
                raise self._fail(node, f"{name} does not exist: the data have {self.p} "
                                       f"feature(s), x1…x{self.p}")
            return lambda X: X[:, j - 1]
        if name == "x":
            raise self._fail(node, "the vector x can only be used as sum(x) or mean(x)")
        raise self._fail(node, f"unknown name {name!r}; use x1…x{self.p}, p, pi or e")

    def _call(self, node: ast.Call) -> Node:
        if not isinstance(node.func, ast.Name):
            raise self._fail(node, "only the listed functions can be called")
        fname = node.func.id
        if node.keywords:
            raise self._fail(node, f"{fname}() takes no keyword arguments")
        if fname in _UNARY:
            if len(node.args) != 1:
                raise self._fail(node, f"{fname}() takes exactly one argument")
            fn, arg = _UNARY[fname], self._compile(node.args[0])
            return lambda X: fn(arg(X))
        if fname in _REDUCE:
            if not node.args:
                raise self._fail(node, f"{fname}() needs an argument, e.g. {fname}(x)")
            arg = node.args[0]
            if len(node.args) == 1 and isinstance(arg, ast.Name) and arg.id == "x":
                if fname == "sum":
                    return lambda X: X.sum(axis=1)
                return lambda X: X.mean(axis=1)
            parts = [self._compile(a) for a in node.args]
            count = float(len(parts))

            def reduce(X: np.ndarray) -> np.ndarray:
                total = parts[0](X)
                for part in parts[1:]:
                    total = total + part(X)
                return total if fname == "sum" else total / count

            return reduce
        raise self._fail(node, f"unknown function {fname}(); available: "
                               + ", ".join([*_UNARY, *_REDUCE]))
