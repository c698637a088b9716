"""Declared parameters: the single description from which the CLI parses values,
the window builds its forms, and results record what was run."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError

KINDS = ("float", "int", "bool", "choice", "choices", "str")
_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}
AUTO = "auto"


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of an experiment or a data generator.

    Parameters
    ----------
    name : str
        Identifier (``snake_case``; λ is ``lam``).
    kind : {"float", "int", "bool", "choice", "choices", "str"}
        ``"choices"`` is a non-empty subset of ``choices`` (a list).
    default : object
        Default value; ``None`` means "auto" when ``allow_auto`` is set.
    label, help, unit : str
        Text for forms and ``kernel-lab describe``.
    low, high : float, optional
        Inclusive bounds for numbers.
    log : bool
        The natural scale is logarithmic (λ, bandwidths): log sliders, log axes.
    choices : tuple of str
        Allowed values for ``choice`` / ``choices``.
    allow_auto : bool
        ``None`` (written ``auto``) is allowed and means "choose automatically".
    when : mapping, optional
        Only relevant when the named parameters take one of the listed values,
        e.g. ``{"kernel": ("gaussian", "laplace")}``; forms hide it otherwise.
    """

    name: str
    kind: str
    default: Any
    label: str = ""
    help: str = ""
    unit: str = ""
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[str, ...] = ()
    allow_auto: bool = False
    when: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown parameter kind {self.kind!r}")
        if self.kind in ("choice", "choices") and not self.choices:
            raise ValueError(f"parameter {self.name} needs choices")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ")

    def coerce(self, value: Any) -> Any:
        """Convert ``value`` (possibly a string from the command line) and check it."""
        if value is None or (isinstance(value, str) and value.strip().lower() == AUTO):
            if self.allow_auto:
                return None
            if value is None:
                raise ParameterError(f"parameter {self.name} needs a value")
        if self.kind == "float":
            return self._number(value, float)
        if self.kind == "int":
            return self._number(value, int)
        if self.kind == "bool":
            return self._bool(value)
        if self.kind == "choice":
            return self._choice(value)
        if self.kind == "choices":
            items = value.replace(";", ",").split(",") if isinstance(value, str) else list(value)
            out = [self._choice(v) for v in items if str(v).strip()]
            if not out:
                raise ParameterError(f"parameter {self.name} needs at least one of: "
                                     f"{', '.join(self.choices)}")
            return list(dict.fromkeys(out))
        return str(value)

    def _number(self, value: Any, typ: type) -> float | int:
        what = "a whole number" if typ is int else "a number"
        if isinstance(value, bool | np.bool_):  # Python counts true as 1: not a number here
            raise ParameterError(f"parameter {self.name} must be {what}, got "
                                 f"{str(bool(value)).lower()}")
        try:
            if typ is int:
                f = float(value)
                if not f.is_integer():
                    raise ValueError
                v: float | int = int(f)
            else:
                v = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ParameterError(f"parameter {self.name} must be {what}, got {value!r}") from None
        if isinstance(v, float) and not math.isfinite(v):
            raise ParameterError(f"parameter {self.name} must be finite, got {value!r}")
        if self.low is not None and v < self.low:
            raise ParameterError(f"parameter {self.name} must be ≥ {self.low:g}, got {v:g}")
        if self.high is not None and v > self.high:
            raise ParameterError(f"parameter {self.name} must be ≤ {self.high:g}, got {v:g}")
        return v

    def _bool(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ParameterError(f"parameter {self.name} must be true or false, got {value!r}")

    def _choice(self, value: Any) -> str:
        text = str(value).strip()
        for c in self.choices:
            if text.lower() == c.lower():
                return c
        raise ParameterError(
            f"parameter {self.name} must be one of: {', '.join(self.choices)}; got {value!r}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description (for ``describe`` and the window)."""
        d: dict[str, Any] = {"name": self.name, "kind": self.kind, "default": self.default,
                             "label": self.title}
        for key in ("help", "unit", "low", "high", "log", "choices", "allow_auto", "when"):
            value = getattr(self, key)
            empty = value is None or value is False or (
                isinstance(value, str | tuple | Mapping) and len(value) == 0)
            if not empty:
                d[key] = list(value) if isinstance(value, tuple) else (
                    {k: list(v) for k, v in value.items()} if isinstance(value, Mapping)
                    else value)
        return d


def resolve_params(
    specs: Iterable[ParamSpec], values: Mapping[str, Any] | None, *, owner: str
) -> dict[str, Any]:
    """Defaults overlaid with ``values``, each coerced and checked.

    Raises
    ------
    ParameterError
        For an unknown name (with the closest known one suggested) or a bad value.
    """
    specs = list(specs)
    by_name = {s.name: s for s in specs}
    out = {s.name: s.default for s in specs}
    for key, value in (values or {}).items():
        if key not in by_name:
            close = difflib.get_close_matches(key, by_name, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else (
                f"; it takes: {', '.join(by_name)}" if by_name else "; it takes none")
            raise ParameterError(f"{owner} has no parameter {key!r}{hint}")
        out[key] = by_name[key].coerce(value)
    return out


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside parentheses, brackets and quotes.

    ``'f=sin(x1, x2),n=3'`` → ``['f=sin(x1, x2)', 'n=3']``.
    """
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
            continue
        if ch in "\"'":
            quote = ch
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_assignment(item: str, *, what: str) -> tuple[str, str]:
    """``'b=sin(x1, x2)'`` → ``('b', 'sin(x1, x2)')`` (one ``name=value``)."""
    key, eq, value = item.partition("=")
    if not eq or not key.strip():
        raise ParameterError(f"{what}: {item!r} must be written as NAME=VALUE")
    return key.strip(), value.strip()


def parse_assignments(text: str, *, what: str) -> dict[str, str]:
    """``'a=1,b=sin(x1, x2)'`` → ``{'a': '1', 'b': 'sin(x1, x2)'}``."""
    return dict(parse_assignment(item, what=what) for item in split_top_level(text))
