"""The Playground's parameters, declared as :class:`~kernel_lab.core.params.ParamSpec`\\ s and
checked by :func:`~kernel_lab.core.params.resolve_params`, the path the experiments'
parameters take: one validator for the window's gestures, sessions, presets and
``kernel-lab run --preset playground-…``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel_lab.core.nystrom.samplers import SAMPLERS
from kernel_lab.core.params import ParamSpec, resolve_params
from kernel_lab.core.playground import (
    BLANK,
    KERNELS,
    MAX_NOISE,
    MAX_POINTS,
    METHODS,
    SETS,
    STEPPED,
)
from kernel_lab.experiments.base import SEED

#: DSG iterations / GFC features a session or Play can ask for.
MAX_STEPS = 100_000
#: Methods that can be drawn beside the active one ("" : none).
COMPARABLE = tuple(m for m in METHODS if m not in STEPPED)

#: The fit's parameters (a session's ``params``).
PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("method", "choice", "krr", choices=METHODS, help="the fitted method"),
    ParamSpec("compare", "choice", "", choices=("", *COMPARABLE),
              help="a second method drawn dashed (empty: none)"),
    ParamSpec("kernel", "choice", "gaussian", choices=KERNELS),
    ParamSpec("sigma", "float", 0.5, label="σ", low=1e-12, high=1e12, log=True,
              help="kernel bandwidth"),
    ParamSpec("lam", "float", 0.1, label="λ", low=1e-12, high=1e12, log=True,
              help="ridge penalty"),
    ParamSpec("s", "int", 20, label="landmarks s", low=1, high=MAX_POINTS),
    ParamSpec("sampler", "choice", "recursive-rls", choices=tuple(SAMPLERS),
              help="how Nyström's landmarks are drawn"),
    ParamSpec("D", "int", 50, label="features D", low=1, high=MAX_POINTS),
    ParamSpec("orthogonal", "bool", False, help="orthogonal random features"),
    ParamSpec("nu", "float", 1e-3, label="ν (DSG)", low=1e-12, high=1e12, log=True,
              help="DSG's regularisation"),
    ParamSpec("leverage", "bool", False, help="size points by ridge leverage score"),
    ParamSpec("resolution", "int", 100, low=1, high=400,
              help="grid points per axis of the function view"),
    SEED,
)
#: The data and the stepping position (a session's other fields).
STATE: tuple[ParamSpec, ...] = (
    ParamSpec("dataset", "choice", "sine", choices=(*SETS, *BLANK), label="data set"),
    ParamSpec("n", "int", 60, low=2, high=MAX_POINTS, label="points n"),
    ParamSpec("noise", "float", 0.3, low=0.0, high=MAX_NOISE),
    ParamSpec("steps", "int", 0, low=0, high=MAX_STEPS,
              help="DSG iterations or GFC features"),
)
#: Parameters and their defaults (sessions store them; a preset overrides some).
DEFAULTS: dict[str, Any] = {s.name: s.default for s in PARAMS}
OWNER = "the Playground"


def resolve_fit_params(values: Mapping[str, Any] | None,
                       base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (default: the defaults) updated by ``values``, every value coerced and
    checked by its declaration (a :class:`~kernel_lab.core.errors.ParameterError` naming
    it)."""
    return resolve_params(PARAMS, {**(base or {}), **(values or {})}, owner=OWNER)


def resolve_state(values: Mapping[str, Any]) -> dict[str, Any]:
    """The data set's name, n, noise and steps of ``values`` (defaults where absent),
    checked by their declarations."""
    return resolve_params(STATE, values, owner=OWNER)
