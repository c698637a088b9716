"""Estimator parameters checked from one declaration, and random states made seeds.

Each estimator declares its checked parameters once, as the class attribute
``_parameter_checks`` (parameter name → constraint: :class:`Integer`, :class:`Real`,
:class:`OneOf`), after scikit-learn's ``_parameter_constraints``. Its ``fit`` calls
:func:`check_params`, which checks them all and returns their values converted (``int``,
``float``); a bad value raises :class:`~kernel_lab.core.errors.ParameterError` with a
message that names the parameter, says what is allowed and shows what was given.
Parameters that need more than one value to check (DSG's first step, say) are checked by
the estimator after :func:`check_params`.

:func:`check_seed` and :func:`check_generator` turn a ``random_state`` (None, int,
RandomState, Generator, SeedSequence) into an int seed or a numpy Generator.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core.errors import ParameterError

#: Seeds drawn from a random state lie in [0, SEED_BOUND).
SEED_BOUND = 2**31 - 1


@dataclass(frozen=True)
class Integer:
    """An integer ≥ ``low`` (bools refused); None allowed when ``optional``."""

    low: int = 1
    optional: bool = False
    label: str = ""

    def check(self, name: str, value: Any) -> int | None:
        if value is None and self.optional:
            return None
        if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                or value < self.low):
            what = "a positive integer" if self.low == 1 else f"an integer ≥ {self.low}"
            raise ParameterError(f"{self.label or name} must be {what}, got {value!r}")
        return int(value)


@dataclass(frozen=True)
class Real:
    """A finite real number > ``low`` (``strict``) or ≥ ``low``; None allowed when
    ``optional``. ``hint`` is appended to the message (e.g. a typical value)."""

    low: float = 0.0
    strict: bool = True
    optional: bool = False
    label: str = ""
    hint: str = ""

    def check(self, name: str, value: Any) -> float | None:
        if value is None and self.optional:
            return None
        number = not isinstance(value, bool) and isinstance(value, numbers.Real)
        if not (number and math.isfinite(value)
                and (value > self.low if self.strict else value >= self.low)):
            if not number:
                what = "a number"
            elif self.low == 0:
                what = "positive and finite" if self.strict else "finite and non-negative"
            else:
                what = f"a finite number {'>' if self.strict else '≥'} {self.low:g}"
            hint = f"; {self.hint}" if self.hint else ""
            raise ParameterError(f"{self.label or name} must be {what}, got {value!r}{hint}")
        return float(value)


@dataclass(frozen=True)
class OneOf:
    """One of the strings ``choices``."""

    choices: tuple[str, ...]
    label: str = ""

    def check(self, name: str, value: Any) -> str:
        if not (isinstance(value, str) and value in self.choices):
            raise ParameterError(f"{self.label or name} must be one of: "
                                 f"{', '.join(self.choices)}; got {value!r}")
        return value


Constraint = Integer | Real | OneOf
#: The type of an estimator's ``_parameter_checks`` declaration.
ParameterChecks = Mapping[str, Constraint]

#: The λ of the ridge estimators.
LAM = Real(label="λ (lam)", hint="use a value such as 1e-3")


def check_params(estimator: Any) -> dict[str, Any]:
    """Check the parameters declared in ``type(estimator)._parameter_checks`` and return
    their values, converted (raises ParameterError at the first bad one)."""
    checks: ParameterChecks = type(estimator)._parameter_checks
    return {name: c.check(name, getattr(estimator, name)) for name, c in checks.items()}


def check_random_state(seed: Any) -> np.random.RandomState:
    """A RandomState for ``seed``, as scikit-learn's ``check_random_state`` gives it: None
    (or ``np.random``) numpy's global one, an int a new one seeded with it, a RandomState
    itself. Here rather than imported, so that the core's tasks on a Dask worker do not
    import scikit-learn (seconds a worker) for it."""
    if seed is None or seed is np.random:
        return np.random.mtrand._rand
    if isinstance(seed, numbers.Integral):
        return np.random.RandomState(seed)
    if isinstance(seed, np.random.RandomState):
        return seed
    raise ValueError(f"{seed!r} cannot be used to seed a numpy.random.RandomState instance")


def check_seed(random_state: Any) -> int:
    """An int seed below 2³¹ from ``random_state``: None (fresh entropy), an int, a
    RandomState or a Generator (one draw each), or a SeedSequence (its first word)."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, SEED_BOUND))
    if isinstance(random_state, np.random.SeedSequence):
        return int(random_state.generate_state(1)[0] % 2**31)
    return int(check_random_state(random_state).randint(0, SEED_BOUND))


def check_generator(random_state: Any) -> np.random.Generator:
    """A numpy Generator for ``random_state``: a Generator itself, a SeedSequence's
    generator, or one seeded with :func:`check_seed`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    return np.random.default_rng(check_seed(random_state))
