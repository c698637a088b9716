"""What the Playground shows, as a checked value: the data (a generated set from its name,
n and noise, or the points themselves), the fit's parameters and the stepping position.
Sessions and presets carry one (:mod:`kernel_lab.engine.session`); the window's model is
set from one and writes one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.errors import KernelLabError, ParameterError
from kernel_lab.core.playground import BLANK, MAX_POINTS, SETS, generate
from kernel_lab.engine.playground.params import DEFAULTS, resolve_fit_params, resolve_state


@dataclass(frozen=True)
class Points:
    """The data: inputs X (n, d), targets y, the test mask; immutable (undo keeps them)."""

    X: np.ndarray
    y: np.ndarray
    test: np.ndarray

    @property
    def n(self) -> int:
        return len(self.y)

    def to_dict(self) -> dict[str, Any]:
        return {"X": self.X.tolist(), "y": self.y.tolist(), "test": self.test.tolist()}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], dim: int) -> Points:
        try:
            X = np.asarray(doc["X"], dtype=np.float64)
            y = np.asarray(doc["y"], dtype=np.float64)
            flags = list(doc["test"])
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ParameterError(f"the Playground points are malformed ({exc})") from None
        if X.size == 0:
            X = X.reshape(0, dim)
        if X.ndim != 2 or X.shape[1] != dim or y.ndim != 1:
            raise ParameterError(f"the Playground points are malformed: X must be rows of "
                                 f"{dim} number{'s' if dim > 1 else ''}, y one number each")
        if not all(isinstance(t, (bool, np.bool_)) for t in flags):
            raise ParameterError("the Playground points are malformed: test must hold "
                                 "true/false per point")
        test = np.asarray(flags, dtype=bool).reshape(-1)
        if not (len(X) == len(y) == len(test)) or not np.isfinite(X).all() \
                or not np.isfinite(y).all():
            raise ParameterError("the Playground points are malformed: X, y and test must "
                                 "have one finite entry per point")
        if len(y) > MAX_POINTS:
            raise ParameterError(f"the Playground holds up to {MAX_POINTS} points, this "
                                 f"state has {len(y)}")
        return cls(X, y, test)


def shape_of(name: str) -> tuple[int, str]:
    """Dimension and task of a data set name (generated or a blank canvas)."""
    if name in SETS:
        return SETS[name].dim, SETS[name].task
    if name in BLANK:
        return BLANK[name]
    raise ParameterError(f"unknown Playground data set {name!r}; choose one of: "
                         f"{', '.join([*SETS, *BLANK])}")


def points_of(name: str, n: int, noise: float, seed: int) -> Points:
    """The points of a generated set, or none for a blank canvas."""
    if name in BLANK:
        dim = BLANK[name][0]
        return Points(np.zeros((0, dim)), np.zeros(0), np.zeros(0, dtype=bool))
    return Points(*generate(name, n, noise, seed))


class OfDataset:
    """The dimension and task of whatever holds a Playground data set name (a state, the
    model)."""

    dataset: str

    @property
    def dim(self) -> int:
        return shape_of(self.dataset)[0]

    @property
    def task(self) -> str:
        return shape_of(self.dataset)[1]


@dataclass(frozen=True)
class PlaygroundState(OfDataset):
    """A checked Playground document. ``points`` None: generated from ``dataset``, ``n``,
    ``noise`` and the seed (:meth:`make_points`)."""

    dataset: str = "sine"
    n: int = 60
    noise: float = 0.3
    params: dict[str, Any] = field(default_factory=lambda: dict(DEFAULTS))
    steps: int = 0
    points: Points | None = None
    note: str = ""

    def make_points(self) -> Points:
        """The stored points, or the generated set's."""
        if self.points is not None:
            return self.points
        return points_of(self.dataset, self.n, self.noise, int(self.params["seed"]))

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"dataset": self.dataset, "n": self.n, "noise": self.noise,
                               "params": dict(self.params), "steps": self.steps}
        if self.points is not None:
            doc["points"] = self.points.to_dict()
        if self.note:
            doc["note"] = self.note
        return doc

    @classmethod
    def from_dict(cls, doc: Any, *, points: bool = True) -> PlaygroundState:
        """Check a document field by field (every value by its declaration); without
        ``points`` (presets) stored points are ignored and the set is generated."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("params", {}), Mapping):
            raise ParameterError("the Playground state is malformed (not a mapping)")
        name = doc.get("dataset", "sine")
        if not isinstance(name, str):
            raise ParameterError(f"the Playground data set must be a name, got {name!r}")
        dim, task = shape_of(name)
        params = resolve_fit_params(doc.get("params", {}))
        state = resolve_state({k: doc[k] for k in ("n", "noise", "steps") if k in doc}
                              | {"dataset": name})
        restored, note = None, ""
        if points and "points" in doc:
            restored = Points.from_dict(doc["points"], dim)
            if task == "classification" and not np.isin(restored.y, (-1.0, 1.0)).all():
                raise ParameterError("the Playground points are malformed: the labels of "
                                     "a classification set must be +1 or −1")
            note = str(doc.get("note", ""))
        return cls(name, state["n"], float(state["noise"]), params, state["steps"],
                   restored, note)


def state_from_dict(doc: Any, where: str) -> PlaygroundState:
    """:meth:`PlaygroundState.from_dict` for a file: its problems name ``where``."""
    try:
        return PlaygroundState.from_dict(doc)
    except KernelLabError as exc:
        raise ParameterError(f"{where}: {exc}") from None
