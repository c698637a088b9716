"""The Playground's state, Qt-free: the points (generated or painted, with undo/redo), the
method and its parameters, the stepping position of DSG and GFC — and the fit engine that
turns a snapshot of that state into what is drawn, in a worker thread, latest request
wins.

The window's Playground view draws the :class:`Fit` values this model publishes and sends
the user's gestures back as method calls; nothing here imports Qt (tests drive it
directly, and ``tests/test_layers.py`` checks the layering).
"""

from __future__ import annotations

import copy
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core import playground as pg
from kernel_lab.core.errors import KernelLabError, ParameterError
from kernel_lab.engine.events import Event

#: Parameters and their defaults (sessions store them; a preset overrides some).
DEFAULTS: dict[str, Any] = {
    "method": "krr", "compare": "", "kernel": "gaussian", "sigma": 0.5, "lam": 0.1,
    "s": 20, "sampler": "recursive-rls", "D": 50, "orthogonal": False, "nu": 1e-3,
    "leverage": False, "resolution": 100, "seed": 0,
}
UNDO_LIMIT = 200
#: Points the Playground holds (generated, painted or sent from a table).
MAX_POINTS = 5000
#: DSG iterations / GFC features a session or Play can ask for.
MAX_STEPS = 100_000
#: Seconds without a new request before a quick exact answer is completed.
FOLLOWUP_DELAY = 0.15


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


@dataclass(frozen=True)
class Request:
    """A snapshot of everything a fit depends on (the worker computes from this alone)."""

    serial: int
    version: int
    points: Points
    dim: int
    task: str
    params: dict[str, Any]
    steps: int  # DSG iterations or GFC features wanted


@dataclass
class Fit:
    """The answer to a :class:`Request`: the active method's fit and the comparison's."""

    serial: int
    primary: pg.FitResult
    compare: pg.FitResult | None
    grid: np.ndarray
    dim: int
    task: str


Superseded = pg.Superseded  # a computation given up for a newer request


class FitEngine:
    """Computes :class:`Fit` values, keeping the caches a slider does not invalidate:
    the exact eigendecomposition per (data, kernel, σ, centred), features per (data, σ, s
    or D, …) and the DSG/GFC steppers per (data, kernel, σ, ν) — for the current data
    version only, and the last :attr:`KEEP` of each kind (a σ drag does not pile up
    n × n matrices)."""

    KEEP = 3

    def __init__(self, *, quick: bool = False) -> None:
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        #: With ``quick``, an exact fit without its eigendecomposition is answered by a
        #: direct solve first (``FitResult.extra["followup"]``: compute again for the rest).
        self.quick = quick
        self.slow_ok = not quick
        self._cancelled: Callable[[], bool] = lambda: False

    def _cached(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """``make()`` once per key (key[0]: the kind, key[1]: the data version)."""
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        for old in [k for k in self._cache if k[1] != key[1]]:  # older data: never again
            del self._cache[old]
        same_kind = [k for k in self._cache if k[0] == key[0]]
        for old in same_kind[: max(0, len(same_kind) - self.KEEP + 1)]:
            del self._cache[old]  # before building: never KEEP + 1 at once
        value = make()
        self._cache[key] = value
        return value

    def compute(self, req: Request, *, followup: bool = False,
                cancelled: Callable[[], bool] | None = None) -> Fit:
        """The fit of ``req``; ``followup``: the second, complete pass after a quick one;
        ``cancelled()``: asked during long replays of DSG/GFC steps (raises
        :class:`Superseded` when it says yes)."""
        self.slow_ok = followup or not self.quick
        self._cancelled = cancelled or (lambda: False)
        p = req.params
        train = ~req.points.test
        problem = pg.Problem(req.points.X[train], req.points.y[train], req.points.X[~train],
                             req.points.y[~train], pg.grid(req.dim, int(p["resolution"])),
                             req.task)
        pg.check_fit_params(p, len(problem.y))
        primary = self._fit(p["method"], req, problem, primary=True)
        compare = None
        if p["compare"] and p["compare"] != p["method"]:
            compare = self._fit(p["compare"], req, problem, primary=False)
        res = int(p["resolution"])
        for r in (primary, compare):
            if r is not None:
                r.train_error = pg.error(r.train, problem.y, problem.task)
                r.test_error = pg.error(r.test, problem.y_test, problem.task)
                if req.dim == 2 and req.task == "classification":
                    r.contour = pg.zero_contour(r.grid.reshape(res, res), pg.ticks(res))
        return Fit(req.serial, primary, compare, problem.G, req.dim, req.task)

    def _fit(self, method: str, req: Request, problem: pg.Problem, primary: bool
             ) -> pg.FitResult:
        p = req.params
        v, kern, sigma, lam, seed = req.version, p["kernel"], float(p["sigma"]), \
            float(p["lam"]), int(p["seed"])
        res = int(p["resolution"])  # the grid is inside every cached value
        if method in ("krr", "ckrr"):
            key = (method, v, kern, sigma, res)
            if key not in self._cache and not self.slow_ok:
                # a new σ or new data: answer at once by one Cholesky solve; the worker
                # then makes the eigendecomposition for the λ slider and the λ curve
                (grid, tr, te), t = pg.timed(lambda: pg.exact_direct(
                    problem, kern, sigma, lam, method == "ckrr", self._cancelled))
                return pg.FitResult(method, grid, tr, te, t, extra={"followup": True})
            cache, t_cache = pg.timed(lambda: self._cached(key, lambda: pg.ExactCache(
                problem.X, problem.y, problem.X_test, problem.G, kern, sigma,
                method == "ckrr")))
            (grid, tr, te), t = pg.timed(lambda: cache.predict(lam))
            curve = cache.curve(pg.lam_grid(lam), problem.y_test, problem.task)
            return pg.FitResult(method, grid, tr, te, t + t_cache, dof=cache.dof(lam),
                                curve=curve)
        if method == "nystrom":
            s = min(int(p["s"]), len(problem.y))
            (nf, ridge), t_feat = pg.timed(lambda: self._cached(
                ("nystrom", v, kern, sigma, s, p["sampler"], seed, res),
                lambda: _with_ridge(pg.nystrom_features(problem, kern, sigma, s,
                                                        p["sampler"], seed), problem.y)))
            (grid, tr, te), t = pg.timed(lambda: ridge.predict(lam))
            scores, extra = None, {}
            if p["leverage"] and primary:
                if self.slow_ok or ("spectrum", v, kern, sigma) in self._cache:
                    scores = pg.ridge_leverage(self._spectrum(v, kern, sigma, problem), lam)
                else:  # an n × n eigendecomposition: when the user pauses
                    extra = {"followup": True}
            return pg.FitResult(method, grid, tr, te, t + t_feat, n_features=s,
                                landmarks=np.asarray(nf.landmark_indices_), scores=scores,
                                extra=extra)
        if method == "rff":
            D = int(p["D"])
            ridge, t_feat = pg.timed(lambda: self._cached(
                ("rff", v, kern, sigma, D, bool(p["orthogonal"]), seed, res),
                lambda: pg.FeatureRidge(*pg.rff_features(problem, kern, sigma, D,
                                                         bool(p["orthogonal"]), seed),
                                        problem.y)))
            (grid, tr, te), t = pg.timed(lambda: ridge.predict(lam))
            return pg.FitResult(method, grid, tr, te, t + t_feat, n_features=D)
        if method == "dsg":
            return self._stepped(("dsg", v, kern, sigma, float(p["nu"]), seed, res), req,
                                 lambda: pg.DSGStepper(problem, kern, sigma, float(p["nu"]),
                                                       seed))
        return self._stepped(("gfc", v, seed, res), req,
                             lambda: pg.GFCStepper(problem, seed))

    def _spectrum(self, v: int, kern: str, sigma: float, problem: pg.Problem
                  ) -> tuple[np.ndarray, np.ndarray]:
        """K's spectrum for leverage scores: from the exact KRR cache when it is there."""
        def make() -> tuple[np.ndarray, np.ndarray]:
            exact = next((c for k, c in reversed(self._cache.items())
                          if k[0] == "krr" and k[1:4] == (v, kern, sigma)), None)
            if exact is None:
                return pg.kernel_spectrum(problem, kern, sigma)
            return np.clip(exact.e, 0.0, None), exact.U ** 2

        return self._cached(("spectrum", v, kern, sigma), make)

    def _stepped(self, key: tuple[Any, ...], req: Request, make: Callable[[], Any]
                 ) -> pg.FitResult:
        stepper = self._cache.get(key)
        position = 0 if stepper is None else (
            stepper.iterations if isinstance(stepper, pg.DSGStepper) else stepper.features)
        if position > req.steps:  # back to an earlier step: start again
            self._cache.pop(key)
        stepper = self._cached(key, make)
        cancelled = self._cancelled
        if isinstance(stepper, pg.DSGStepper):
            _, t = pg.timed(lambda: stepper.step(req.steps - stepper.iterations, cancelled))
            if stepper.iterations < req.steps:
                raise Superseded
            grid, tr, te = stepper.predict()
            return pg.FitResult("dsg", grid, tr, te, t, n_features=stepper.iterations * 8,
                                extra={"iterations": stepper.iterations,
                                       "history": np.array(stepper.history).reshape(-1, 3)})
        t = 0.0
        while stepper.features < req.steps and not stepper.done:
            if cancelled():
                raise Superseded
            t += pg.timed(stepper.step)[1]
        grid, tr, te = stepper.predict()
        return pg.FitResult("gfc", grid, tr, te, t, n_features=stepper.features,
                            extra={"features": stepper.features, "done": stepper.done,
                                   "frequencies": stepper.frequencies.copy(),
                                   "history": np.array(stepper.history).reshape(-1, 3)})


def _with_ridge(features: tuple[Any, np.ndarray, np.ndarray, np.ndarray], y: np.ndarray
                ) -> tuple[Any, pg.FeatureRidge]:
    model, F, Ft, Fg = features
    return model, pg.FeatureRidge(F, Ft, Fg, y)


class FitWorker:
    """One background thread computing the latest :class:`Request` only (intermediate
    ones are dropped, a long DSG/GFC replay is given up when a newer request arrives);
    ``on_done(fit)`` / ``on_error(serial, message)`` are called from that thread. numpy
    releases the GIL, so the GUI thread stays free meanwhile."""

    def __init__(self, engine: FitEngine, on_done: Callable[[Fit], Any],
                 on_error: Callable[[int, str], Any]) -> None:
        self.engine = engine
        self.on_done, self.on_error = on_done, on_error
        self._pending: Request | None = None
        self._cond = threading.Condition()
        self._stop = False
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._loop, name="playground-fit", daemon=True)
        self._thread.start()

    def submit(self, req: Request) -> None:
        with self._cond:
            self._pending = req
            self._idle.clear()
            self._cond.notify()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._idle.wait(timeout)

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end after :meth:`close` (a long numpy call finishes
        first)."""
        self._thread.join(timeout)

    def _superseded(self) -> bool:
        return self._stop or self._pending is not None

    def _report(self, serial: int, message: str) -> None:
        if not self._stop:  # after close the receiver may be gone
            self.on_error(serial, message)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._stop)
                if self._stop:
                    return
                req, self._pending = self._pending, None
            try:
                fit = self.engine.compute(req, cancelled=self._superseded)
                if self._stop:
                    return
                self.on_done(fit)
                quick = fit.primary.extra.get("followup") or (
                    fit.compare is not None and fit.compare.extra.get("followup"))
                if quick:
                    # complete the answer (eigendecomposition for the λ slider) once the
                    # user has paused: a σ drag keeps getting quick answers meanwhile
                    with self._cond:
                        self._cond.wait_for(self._superseded, timeout=FOLLOWUP_DELAY)
                        paused = not self._superseded()
                    if paused:
                        fit = self.engine.compute(req, followup=True,
                                                  cancelled=self._superseded)
                        if not self._stop:
                            self.on_done(fit)
            except Superseded:
                pass
            except KernelLabError as exc:
                self._report(req.serial, str(exc))
            except Exception as exc:
                self._report(req.serial, f"{type(exc).__name__}: {exc}")
            with self._cond:
                if self._pending is None:
                    self._idle.set()


class PlaygroundModel:
    """State and gestures of the Playground. ``launch(request)`` sends a request to be
    computed (default: synchronously here — the window passes its worker's ``submit``);
    :meth:`deliver` takes the answer and publishes it if it is the latest.

    Every change of the data (a painted point, a new data set, a loaded table, a restored
    session) is one undo step; the undo entry keeps the data set's name, the points and
    the note about them."""

    def __init__(self, launch: Callable[[Request], Any] | None = None,
                 engine: FitEngine | None = None) -> None:
        self.engine = engine or FitEngine()
        self.launch = launch or self._compute_now
        self.data_changed = Event()      # ()
        self.params_changed = Event()    # (dict of changed parameters)
        self.fit_ready = Event()         # (Fit)
        self.failed = Event()            # (message)
        self.dataset = "sine"
        self.n, self.noise = 60, 0.3
        self.params: dict[str, Any] = dict(DEFAULTS)
        self.steps = 0
        self.note = ""
        self._serial = 0
        self._version = 0
        self._undo: list[_Snapshot] = []
        self._redo: list[_Snapshot] = []
        self.error = ""  # the latest request's failure (cleared by its fit)
        self.points = Points(np.zeros((0, 1)), np.zeros(0), np.zeros(0, dtype=bool))
        self.latest: Fit | None = None
        self.set_dataset("sine", push=False)

    # -- data -------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return _shape_of(self.dataset)[0]

    @property
    def task(self) -> str:
        return _shape_of(self.dataset)[1]

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
        self.data_changed.emit()
        self.refit()

    def set_dataset(self, name: str, *, n: int | None = None, noise: float | None = None,
                    push: bool = True) -> None:
        """Choose a generated set (or ``paint-1d`` / ``paint-2d`` for a blank canvas) and
        draw it with the current n and noise."""
        _shape_of(name)
        n = self.n if n is None else int(n)
        noise = self.noise if noise is None else float(noise)
        points = _points_of(name, n, noise, int(self.params["seed"]))  # may refuse: no change
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
        if pts.n + k > MAX_POINTS:
            raise ParameterError(f"the Playground holds up to {MAX_POINTS} points")
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
        two classes (mapped to ±1, the larger value +1). More than 5,000 rows: a seeded
        random subset, said in :attr:`note`."""
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
        X, y, note = pg.subsample(X, y, 5000, int(self.params["seed"]))
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
        trial = checked_params(values, self.params)
        changed = {k: v for k, v in values.items() if self.params.get(k) != v}
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
    def request(self) -> Request:
        self._serial += 1
        return Request(self._serial, self._version, self.points, self.dim, self.task,
                       dict(self.params), self.steps)

    def refit(self) -> None:
        self.error = ""
        if self.points.n == 0:  # nothing to fit: any fit still computing is stale
            self._serial += 1
            self.latest = None
            return
        self.launch(self.request())

    def _compute_now(self, req: Request) -> None:
        try:
            self.deliver(self.engine.compute(req))
        except KernelLabError as exc:
            self.fail(req.serial, str(exc))

    def deliver(self, fit: Fit) -> None:
        """Publish a computed fit unless a newer request has been made since."""
        if fit.serial != self._serial:
            return
        self.latest = fit
        self.error = ""
        self.fit_ready.emit(fit)

    def fail(self, serial: int, message: str) -> None:
        if serial == self._serial:
            self.error = message
            self.failed.emit(message)

    # -- sessions -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "n": self.n, "noise": self.noise,
                "params": copy.deepcopy(self.params), "steps": self.steps,
                "points": self.points.to_dict(), "note": self.note}

    def apply(self, doc: Mapping[str, Any], *, points: bool = True) -> None:
        """Restore a :meth:`to_dict` document (a session or a preset). Without ``points``
        (presets) the data set is generated from its name, n and noise. Everything is
        checked and built first: a bad document raises :class:`ParameterError` and changes
        nothing. One undo step."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("params", {}), Mapping):
            raise ParameterError("the Playground state is malformed (not a mapping)")
        name = doc.get("dataset", "sine")
        if not isinstance(name, str):
            raise ParameterError(f"the Playground data set must be a name, got {name!r}")
        dim, task = _shape_of(name)
        params = checked_params(doc.get("params", {}), DEFAULTS)
        steps = _whole(doc.get("steps", 0), "steps", 0, MAX_STEPS)
        n = _whole(doc.get("n", self.n), "n", 2, MAX_POINTS)
        noise = doc.get("noise", self.noise)
        if not (isinstance(noise, (int, float)) and not isinstance(noise, bool)
                and math.isfinite(noise) and 0 <= noise <= 10):
            raise ParameterError(f"the noise level must be from 0 to 10, got {noise!r}")
        noise = float(noise)
        note = str(doc.get("note", ""))
        if points and "points" in doc:
            restored = Points.from_dict(doc["points"], dim)
            if task == "classification" and not np.isin(restored.y, (-1.0, 1.0)).all():
                raise ParameterError("the Playground points are malformed: the labels of "
                                     "a classification set must be +1 or −1")
        else:
            restored, note = _points_of(name, n, noise, int(params["seed"])), ""
        self._push()
        self.dataset, self.params, self.steps = name, params, steps
        self.n, self.noise, self.note = n, noise, note
        self.params_changed.emit(dict(params))
        self._set_points(restored, push=False)


@dataclass(frozen=True)
class _Snapshot:
    """One undo step: the data set's name, its n and noise, the points, their note."""

    dataset: str
    n: int
    noise: float
    points: Points
    note: str


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            and low <= value <= high):
        raise ParameterError(f"{name} must be a whole number from {low} to {high}, "
                             f"got {value!r}")
    return int(value)


def checked_params(values: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``values``, every value checked (unknown names, methods,
    kernels, samplers, numbers out of range: a :class:`ParameterError` naming it)."""
    unknown = set(values) - set(DEFAULTS)
    if unknown:
        raise ParameterError(f"unknown Playground parameter(s): {', '.join(sorted(unknown))}")
    trial = {**DEFAULTS, **base, **values}
    pg.check_fit_params(trial)
    return trial


def _shape_of(name: str) -> tuple[int, str]:
    """Dimension and task of a data set name (generated or a blank canvas)."""
    if name in pg.SETS:
        return pg.SETS[name].dim, pg.SETS[name].task
    if name in pg.BLANK:
        return pg.BLANK[name]
    raise ParameterError(f"unknown Playground data set {name!r}; choose one of: "
                         f"{', '.join([*pg.SETS, *pg.BLANK])}")


def _points_of(name: str, n: int, noise: float, seed: int) -> Points:
    """The points of a generated set, or none for a blank canvas."""
    if name in pg.BLANK:
        dim = pg.BLANK[name][0]
        return Points(np.zeros((0, dim)), np.zeros(0), np.zeros(0, dtype=bool))
    return Points(*pg.generate(name, n, noise, seed))


def _into_view(X: np.ndarray) -> np.ndarray:
    """Columns mapped linearly onto [−2.7, 2.7] (constant columns to 0)."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.where(hi > lo, (X - lo) / span * (2 * 2.7) - 2.7, 0.0)


# -- presets ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlaygroundPreset:
    name: str
    title: str
    about: str
    doc: dict[str, Any]


def _preset_folder():  # a Traversable: works installed, editable and frozen
    from importlib import resources

    return resources.files("kernel_lab").joinpath("resources", "playground")


def playground_preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in _preset_folder().iterdir() if p.name.endswith(".json"))


def load_playground_preset(name: str) -> PlaygroundPreset:
    import json

    if name not in playground_preset_names():
        raise KernelLabError(f"unknown Playground preset {name!r} (presets: "
                             f"{', '.join(playground_preset_names())})")
    doc = json.loads(_preset_folder().joinpath(f"{name}.json").read_text(encoding="utf-8"))
    if doc.get("format") != "kernel-lab-playground" or "playground" not in doc:
        raise KernelLabError(f"Playground preset {name!r} is malformed")
    return PlaygroundPreset(name, doc["title"], doc["about"], doc["playground"])
