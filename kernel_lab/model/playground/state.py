"""The Playground's state, Qt-free: the points (generated or painted, with undo/redo), the
method and its parameters, the stepping position of DSG and GFC. The window's Playground
view draws the :class:`~kernel_lab.engine.playground.fit.Fit` values this model publishes
and sends the user's gestures back as method calls; nothing here imports Qt (tests drive it
directly, and ``tests/test_layers.py`` checks the layering)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core import playground as pg
from kernel_lab.core.errors import ParameterError
from kernel_lab.engine.events import Event
from kernel_lab.engine.playground.fit import Fit, FitEngine, Request
from kernel_lab.engine.playground.params import (
    DEFAULTS,
    MAX_STEPS,
    resolve_fit_params,
    resolve_state,
)
from kernel_lab.engine.playground.state import (
    OfDataset,
    PlaygroundState,
    Points,
    points_of,
    shape_of,
)
from kernel_lab.engine.worker import Worker
from kernel_lab.model.playground.worker import fit_worker

UNDO_LIMIT = 200


class PlaygroundModel(OfDataset):
    """State and gestures of the Playground. Each change sends a :class:`Request` to
    :attr:`worker`, a :class:`~kernel_lab.engine.worker.Worker` computing the latest
    request only (default: :func:`~kernel_lab.model.playground.worker.fit_worker` inline,
    synchronously here — the window sets its threaded one). Its answers come back as
    ``("fit", fit)`` / ``("failed", message, …)`` messages; those of a superseded request
    are dropped by their ticket (:meth:`~kernel_lab.engine.worker.Ticket.deliver`), so
    whatever arrives here is published.

    Every change of the data (a painted point, a new data set, a loaded table, a restored
    session) is one undo step; the undo entry keeps the data set's name, the points and
    the note about them."""

    def __init__(self, worker: Worker | None = None,
                 engine: FitEngine | None = None) -> None:
        self.engine = engine or FitEngine()
        self.worker: Worker = worker or fit_worker(self.engine, inline=True)
        #: () the points or the data set changed
        self.data_changed: Event = Event()
        #: (dict of changed parameters)
        self.params_changed: Event = Event()
        #: (Fit) the latest request's fit arrived
        self.fit_ready: Event = Event()
        #: (str) the latest request failed: the message
        self.failed: Event = Event()
        self.dataset = "sine"
        self.n, self.noise = 60, 0.3
        self.params: dict[str, Any] = dict(DEFAULTS)
        self.steps = 0
        self.note = ""
        self._serial = 0  # requests made (a fit carries its request's number)
        self._version = 0
        self._undo: list[_Snapshot] = []
        self._redo: list[_Snapshot] = []
        self.error = ""  # the latest request's failure (cleared by its fit)
        self.points = Points(np.zeros((0, 1)), np.zeros(0), np.zeros(0, dtype=bool))
        self.latest: Fit | None = None
        self.set_dataset("sine", push=False)

    # -- data -------------------------------------------------------------------------
    @property
    def truth(self) -> Callable[[np.ndarray], np.ndarray] | None:
        return pg.SETS[self.dataset].truth if self.dataset in pg.SETS else None

    def _push(self) -> None:
        """Remember the current data for Undo (a new change: Redo is forgotten)."""
        self._undo.append(self._snapshot())
        del self._undo[:-UNDO_LIMIT]
        self._redo.clear()

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(self.dataset, self.n, self.noise, self.points, self.note)

    def _set_points(self, points: Points, push: bool = True) -> None:
        if push:
            self._push()
        self.points = points
        self._version += 1
        if self.worker.inline:  # the fit is computed at once: after the data's news
            self.data_changed.emit()
            self.refit()
        else:  # first: the worker's thread fits while the view draws the new points
            self.refit()
            self.data_changed.emit()

    def set_dataset(self, name: str, *, n: int | None = None, noise: float | None = None,
                    push: bool = True) -> None:
        """Choose a generated set (or ``paint-1d`` / ``paint-2d`` for a blank canvas) and
        draw it with the current n and noise."""
        shape_of(name)  # an unknown name: the message lists the sets and the canvases
        # n and noise: checked by the declarations sessions and presets are checked by
        state = resolve_state({"dataset": name, "n": self.n if n is None else n,
                               "noise": self.noise if noise is None else noise})
        n, noise = state["n"], state["noise"]
        points = points_of(name, n, noise, int(self.params["seed"]))
        if push:
            self._push()
        self.dataset, self.n, self.noise, self.note = name, n, noise, ""
        self._set_points(points, push=False)

    def add_points(self, X: np.ndarray, label: float | np.ndarray, *,
                   continues: bool = False) -> None:
        """Painted points at inputs X (rows), with targets ``label`` (one for all, or one
        per row; 1-D: the y values; 2-D classification: ±1), as training points — one
        undo step however many; ``continues``: part of the gesture before (a spray drag),
        undone with it."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64)).reshape(-1, self.dim)
        X = np.clip(X, -pg.EXTENT, pg.EXTENT)
        k = len(X)
        labels = np.broadcast_to(np.asarray(label, dtype=np.float64), (k,))
        if not (np.isfinite(X).all() and np.isfinite(labels).all()):
            raise ParameterError("painted points must have finite coordinates")
        pts = self.points
        if pts.n + k > pg.MAX_POINTS:
            raise ParameterError(f"the Playground holds up to {pg.MAX_POINTS} points")
        self._set_points(Points(np.vstack([pts.X, X]), np.concatenate([pts.y, labels]),
                                np.concatenate([pts.test, np.zeros(k, dtype=bool)])),
                         push=not (continues and self._undo))

    def remove_nearest(self, x: np.ndarray) -> int | None:
        """Remove the point nearest to x (in the input space; 1-D: in the (x, y) plane)."""
        pts = self.points
        if pts.n == 0:
            return None
        x = np.asarray(x, dtype=np.float64).ravel()
        where = np.column_stack([pts.X, pts.y]) if self.dim == 1 else pts.X
        i = int(np.argmin(np.sum((where - x[: where.shape[1]]) ** 2, axis=1)))
        keep = np.arange(pts.n) != i
        self._set_points(Points(pts.X[keep], pts.y[keep], pts.test[keep]))
        return i

    def clear(self) -> None:
        d = self.dim
        self._set_points(Points(np.zeros((0, d)), np.zeros(0), np.zeros(0, dtype=bool)))

    def load_table(self, X: np.ndarray, y: np.ndarray, names: tuple[str, ...] = ()) -> None:
        """Two columns of a loaded table: one input column and the target (1-D regression;
        input and target scaled into the view), or two inputs (scaled) and a target with
        two classes (mapped to ±1, the larger value +1). More than
        :data:`~kernel_lab.core.playground.MAX_POINTS` rows: a seeded random subset, said
        in :attr:`note`."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).ravel()
        if X.ndim != 2 or X.shape[1] not in (1, 2) or len(X) != len(y):
            raise ParameterError("send one input column (with the target) or two (with a "
                                 "two-class target) to the Playground")
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise ParameterError("the columns sent to the Playground hold missing or "
                                 "infinite values: remove those rows first")
        classes = np.unique(y)
        if X.shape[1] == 2 and classes.size != 2:
            raise ParameterError(f"two input columns need a target with two classes; this "
                                 f"one has {classes.size} distinct values")
        X, y, note = pg.subsample(X, y, pg.MAX_POINTS, int(self.params["seed"]))
        notes = [note] if note else []
        X = _into_view(X)
        if X.shape[1] == 2:
            y = np.where(y == classes[-1], 1.0, -1.0)
            notes.append(f"class +1: target {classes[-1]:g}, −1: {classes[0]:g}")
        elif len(y) and (y.min() < -pg.EXTENT or y.max() > pg.EXTENT):
            lo, hi = float(y.min()), float(y.max())
            y = _into_view(y[:, None])[:, 0]
            notes.append(f"target {lo:.4g} … {hi:.4g} drawn as −2.7 … 2.7")
        rng = np.random.default_rng([int(self.params["seed"]), 13])
        test = np.zeros(len(y), dtype=bool)
        test[rng.permutation(len(y))[: round(0.25 * len(y))]] = True
        self._push()
        self.dataset = "paint-1d" if X.shape[1] == 1 else "paint-2d"
        self.note = "; ".join(notes)
        self._set_points(Points(X, y, test), push=False)

    def _restore(self, into: list[_Snapshot], outof: list[_Snapshot]) -> bool:
        if not outof:
            return False
        into.append(self._snapshot())
        snap = outof.pop()
        self.dataset, self.n, self.noise, self.note = snap.dataset, snap.n, snap.noise, \
            snap.note
        self._set_points(snap.points, push=False)
        return True

    def undo(self) -> bool:
        return self._restore(self._redo, self._undo)

    def redo(self) -> bool:
        return self._restore(self._undo, self._redo)

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    # -- method and parameters ------------------------------------------------------------
    def set_params(self, **values: Any) -> None:
        """Change parameters; a bad value is refused (:class:`ParameterError`) and nothing
        changes."""
        trial = resolve_fit_params(values, self.params)
        changed = {k: v for k, v in trial.items() if self.params.get(k) != v}
        if not changed:
            return
        self.params = trial
        if "method" in changed or "seed" in changed:
            self.steps = 0
        self.params_changed.emit(changed)
        self.refit()

    def step(self, k: int = 1) -> None:
        """Advance DSG by k iterations or GFC by k features."""
        self.steps = min(self.steps + int(k), MAX_STEPS)
        self.refit()

    def can_step(self) -> bool:
        """Whether Step / Play can advance: a stepped method, two training points or more,
        no failure of the latest request, not past the last GFC feature or MAX_STEPS."""
        if self.params["method"] not in pg.STEPPED or self.error or self.steps >= MAX_STEPS:
            return False
        if int(np.count_nonzero(~self.points.test)) < 2:
            return False
        latest = self.latest.primary if self.latest is not None else None
        return not (latest is not None and latest.extra.get("done")
                    and self.steps >= latest.extra.get("features", 0))

    def reset_steps(self) -> None:
        self.steps = 0
        self.refit()

    # -- fits -----------------------------------------------------------------------------
    @property
    def serial(self) -> int:
        """The number of the latest request made (a fit carries its request's)."""
        return self._serial

    def request(self) -> Request:
        self._serial += 1
        return Request(self._serial, self._version, self.points, self.dim, self.task,
                       dict(self.params), self.steps)

    def refit(self) -> None:
        self.error = ""
        if self.points.n == 0:  # nothing to fit: any fit still computing is stale
            self.worker.cancel()
            self.latest = None
            return
        self.worker.submit(self.request(), self._receive)

    def _receive(self, kind: str, *payload: Any) -> None:
        """A message of the latest request (stale ones never get here): a fit is
        published, a failure shown."""
        if kind == "fit":
            self.latest = payload[0]
            self.error = ""
            self.fit_ready.emit(payload[0])
        elif kind == "failed":
            self.error = payload[0]
            self.failed.emit(payload[0])

    # -- sessions -------------------------------------------------------------------------
    def state(self) -> PlaygroundState:
        """What is shown, as the value a session stores."""
        return PlaygroundState(self.dataset, self.n, self.noise, dict(self.params),
                               self.steps, self.points, self.note)

    def to_dict(self) -> dict[str, Any]:
        return self.state().to_dict()

    def apply(self, doc: PlaygroundState | Mapping[str, Any], *, points: bool = True) -> None:
        """Restore a state (of a session or a preset) or its document (checked by
        :meth:`PlaygroundState.from_dict`). Without ``points`` (presets) the data set is
        generated from its name, n and noise. Everything is checked and built first: a bad
        document raises :class:`ParameterError` and changes nothing. One undo step."""
        state = doc if isinstance(doc, PlaygroundState) else \
            PlaygroundState.from_dict(doc, points=points)
        restored = state.points if points and state.points is not None else \
            points_of(state.dataset, state.n, state.noise, int(state.params["seed"]))
        note = state.note if restored is state.points else ""
        self._push()
        self.dataset, self.params, self.steps = state.dataset, dict(state.params), state.steps
        self.n, self.noise, self.note = state.n, state.noise, note
        self.params_changed.emit(dict(self.params))
        self._set_points(restored, push=False)


@dataclass(frozen=True)
class _Snapshot:
    """One undo step: the data set's name, its n and noise, the points, their note."""

    dataset: str
    n: int
    noise: float
    points: Points
    note: str




def _into_view(X: np.ndarray) -> np.ndarray:
    """Columns mapped linearly onto [−2.7, 2.7] (constant columns to 0)."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.where(hi > lo, (X - lo) / span * (2 * 2.7) - 2.7, 0.0)
