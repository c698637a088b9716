"""The Playground's fit engine: a :class:`Request` (a snapshot of the state) in, a
:class:`Fit` (what the view draws) out, with the caches a slider does not invalidate.
No thread here: the window's worker (:mod:`kernel_lab.model.playground.worker`) calls
:meth:`FitEngine.compute` off the GUI thread; ``kernel-lab run --preset playground-…``
calls it directly."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_lab.core import playground as pg
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel
from kernel_lab.engine.playground.params import resolve_fit_params
from kernel_lab.engine.playground.state import Points


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
    #: The 2-D primary fit as a ready-to-draw RGBA image (rows: x₂, columns: x₁), made
    #: off the GUI thread by the worker's ``paint`` (None: the view colours it itself).
    picture: np.ndarray | None = None


#: Above this many training points a new σ or new data is first answered by a Nyström
#: preview (:meth:`FitEngine._preview`), the exact fit following. The exact answer is a
#: Cholesky factorisation, O(n³): n = 1000 took 15–19 ms on a machine whose ``eigh`` of
#: 1000 × 1000 takes 85 ms, so about 37 ms on the reference machine (187 ms), and n³
#: reaches the 50 ms frame target there near n = 1100. Below it nothing changes: the exact
#: fit is already within a frame.
PREVIEW_ABOVE = 1100
#: Landmarks of the preview: its cost is O(n s² + s³) (CᵀC and W's eigendecomposition).
#: With 3750 training points, one BLAS thread and a busy 2-core machine a σ took a median
#: 9 ms with s = 200 and 23 ms with s = 300 (grids 0.06 and 0.004 from the exact fit's on
#: moons): 200 keeps the first answer within a frame.
PREVIEW_S = 200
#: The lab's sampler that chooses them, once per data set: uniform (keyed by the seed and
#: the row index, so it needs no kernel and serves every σ).
PREVIEW_SAMPLER = "uniform"

#: The wait for a quiet hand before the exact fit follows a preview (seconds): short, as
#: the exact fit by CG gives way to a newer request between iterations.
LARGE_FOLLOWUP_DELAY = 0.05
#: The largest rank of the CG preconditioner's factor (:func:`pg.low_rank_factor`): its
#: cost, O(n r²) and an r × r eigendecomposition, stays a fraction of one factorisation.
CG_MAX_RANK = 600
#: Matrices of dropped CG solves kept for the next σ's (a kernel matrix and a test block).
SPARES = 2
#: CG solves kept (each holds its n × n kernel matrix: 112 MB at 3,746 training points).
KEEP_SOLVES = 2

#: At most this much memory for the kept σ-free parts of the kernel (:meth:`FitEngine._pairs`).
PAIRS_BYTES = 256 * 2**20
#: Batches of older data's values waiting to be freed (:attr:`FitEngine._retired`, one
#: per data version) beyond which a new version's first answer frees the oldest batch (a
#: long stroke without rest; the data before the stroke had, after the benchmark's σ
#: drags, a dozen values, several n × n: freed all at once they cost its first point 5 ms).
RETIRED = 8


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
        #: The pass of the request being computed: 0 the first answer, 1, 2 … follow-ups.
        self.stage = 0
        self._cancelled: Callable[[], bool] = lambda: False
        #: Kernel matrices of dropped CG solves, written over by the next σ's.
        self._spare: list[np.ndarray] = []
        self._spare_lock = threading.Lock()
        #: Values of older data not freed yet, a batch per version: freeing them (at
        #: n = 3746 several n × n matrices, 4–8 ms) is left to a follow-up or
        #: :meth:`prepare`, while the hand rests, not to the first answer to new data (a
        #: painted point).
        self._retired: list[list[Any]] = []
        #: Factor keys whose K + λI was not numerically positive definite (at large n).
        self._unfactored: set[tuple[Any, ...]] = set()
        #: While :meth:`_factor_memory` drops the kept factors: the L of those it frees
        #: (:meth:`_factor_freed`), for the new factor rather than the spares.
        self._freed: list[np.ndarray] | None = None
        #: The array of a factor not made (a newer request stopped it, or K + λI was not
        #: positive definite): the next factor's (:meth:`_factor_memory`).
        self._unmade: np.ndarray | None = None

    def _cached(self, key: tuple[Any, ...], make: Callable[[], Any], keep: int | None = None
                ) -> Any:
        """``make()`` once per key (key[0]: the kind, key[1]: the data version); the last
        ``keep`` (default :attr:`KEEP`) of a kind are kept."""
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        # older data: never again (one batch per new version)
        batch = [self._cache.pop(old) for old in [k for k in self._cache if k[1] != key[1]]]
        if batch:
            self._retired.append(batch)
        if self.slow_ok:
            self._retired.clear()
        else:  # a stroke without rest frees the oldest batch beyond RETIRED
            del self._retired[:-RETIRED]
        same_kind = [k for k in self._cache if k[0] == key[0]]
        for old in same_kind[: max(0, len(same_kind) - (keep or self.KEEP) + 1)]:
            del self._cache[old]  # before building: never KEEP + 1 at once
        value = make()
        self._cache[key] = value
        return value

    def compute(self, req: Request, *, followup: bool | int = False,
                cancelled: Callable[[], bool] | None = None) -> Fit:
        """The fit of ``req``; ``followup``: a later pass after a quick one (True or 1:
        the second, 2: the third — with ``quick`` above :data:`PREVIEW_ABOVE` training
        points a new σ is answered by a Nyström preview, then the exact fit by a direct
        solve, then its eigendecomposition); ``cancelled()``: asked during long replays
        of DSG/GFC steps (raises :class:`Superseded` when it says yes)."""
        self.stage = int(followup)
        self.slow_ok = bool(followup) or not self.quick
        if self.slow_ok:
            self._retired.clear()
        self._cancelled = cancelled or (lambda: False)
        p = req.params
        problem = self._problem(req)
        resolve_fit_params(p)  # a request made by hand is checked as a session is
        if len(problem.y) < 2:
            raise ParameterError("the Playground needs at least two training points: "
                                 "paint some, or choose a data set")
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
            large = self.quick and len(problem.y) > PREVIEW_ABOVE
            if large and key not in self._cache and not (
                    self.stage == 0 and self._border_base(problem, kern, sigma, lam) is not None):
                # a new σ, λ or data at large n: a Nyström preview within a frame, then the
                # exact fit by preconditioned CG, then the λ curve (never a preview drawn
                # as exact: extra["preview"]); a painted point is first answered exactly
                # by bordering a solved system (below), then these follow for its data
                answer = self._large(method, req, problem)
                if answer is not None:
                    return answer
            if key not in self._cache and not self.slow_ok:
                # a new σ or new data: answer at once by one Cholesky solve (a painted
                # point borders the last factor, or exact KRR's eigendecomposition); the
                # worker then makes the eigendecomposition for the λ slider and λ curve
                (grid, tr, te), t = pg.timed(lambda: self._quick_exact(
                    problem, v, kern, sigma, lam, method == "ckrr"))
                return pg.FitResult(method, grid, tr, te, t, extra={"followup": True})
            cache, t_cache = pg.timed(lambda: self._cached(key, lambda: pg.ExactCache(
                problem.X, problem.y, problem.X_test, problem.grid, kern, sigma,
                method == "ckrr")))
            (grid, tr, te), t = pg.timed(lambda: cache.predict(lam))
            curve = cache.curve(pg.lam_grid(lam), problem.y_test, problem.task)
            return pg.FitResult(method, grid, tr, te, t + t_cache, dof=cache.dof(lam),
                                curve=curve)
        if method == "nystrom":
            s = min(int(p["s"]), len(problem.y))
            sampler = p["sampler"]

            def nystrom() -> tuple[np.ndarray, pg.FeatureRidge]:
                # the landmarks (a nested sampler's: a prefix of one kept draw), then
                # ridge on them from the kernel columns kept at this σ: a new s computes
                # the new landmarks' columns only
                marks = self._cached(("landmarks", v, kern, sigma, sampler, seed), lambda:
                                     pg.LandmarkDraws(problem.X, kern, sigma, sampler,
                                                      seed))(s)
                columns = self._cached(("landmark-columns", v, kern, sigma, res),
                                       lambda: pg.LandmarkColumns(problem, kern, sigma))
                return marks, columns.ridge(marks)

            (marks, ridge), t_feat = pg.timed(lambda: self._cached(
                ("nystrom", v, kern, sigma, s, sampler, seed, res), nystrom))
            (grid, tr, te), t = pg.timed(lambda: ridge.predict(lam))
            scores, extra = None, {}
            if p["leverage"] and primary:
                if self.slow_ok or ("spectrum", v, kern, sigma) in self._cache:
                    scores = pg.ridge_leverage(self._spectrum(v, kern, sigma, problem), lam)
                else:  # an n × n eigendecomposition: when the user pauses
                    extra = {"followup": True}
            return pg.FitResult(method, grid, tr, te, t + t_feat, n_features=s,
                                landmarks=marks, scores=scores,
                                extra=extra)
        if method == "rff":
            D, orthogonal = int(p["D"]), bool(p["orthogonal"])
            # the cosines of one draw kept at this σ: a new D computes the new ones only
            ridge, t_feat = pg.timed(lambda: self._cached(
                ("rff", v, kern, sigma, D, orthogonal, seed, res),
                lambda: self._cached(
                    ("rff-columns", v, kern, sigma, orthogonal, seed, res),
                    lambda: pg.FrequencyColumns(problem, kern, sigma, orthogonal, seed)
                ).ridge(D)))
            (grid, tr, te), t = pg.timed(lambda: ridge.predict(lam))
            return pg.FitResult(method, grid, tr, te, t + t_feat, n_features=D)
        if method == "dsg":
            return self._stepped(("dsg", v, kern, sigma, float(p["nu"]), seed, res), req,
                                 lambda: pg.DSGStepper(problem, kern, sigma, float(p["nu"]),
                                                       seed))
        return self._stepped(("gfc", v, seed, res), req,
                             lambda: pg.GFCStepper(problem, seed))

    def _large(self, method: str, req: Request, problem: pg.Problem) -> pg.FitResult | None:
        """Exact KRR / CKRR above :data:`PREVIEW_ABOVE` training points, one stage a pass
        (:attr:`stage`): for a new σ or data, 0 the Nyström preview; then the exact fit at λ
        by preconditioned CG (:class:`pg.ExactSolves`, warm-started from the last σ's
        solution), then every λ of the error curve. None: CG could not, so the caller's
        factorisation (and the eigendecomposition for the curve) answers instead."""
        p = req.params
        v, kern, sigma, lam, seed = req.version, p["kernel"], float(p["sigma"]), \
            float(p["lam"]), int(p["seed"])
        centered = method == "ckrr"
        skey = ("solves", v, kern, sigma, centered)
        solves = self._cache.get(skey)
        if solves is None and self.stage == 0:
            (grid, tr, te), t = pg.timed(lambda: self._preview(
                problem, v, kern, sigma, lam, centered, seed))
            return pg.FitResult(method, grid, tr, te, t, n_features=PREVIEW_S, extra={
                "followup": True, "followup_delay": LARGE_FOLLOWUP_DELAY,
                "preview": f"Nyström, s = {min(PREVIEW_S, len(problem.y))}"})
        if solves is not None and solves.basis is not None:
            # σ's curve is complete: any λ at once from the solutions kept, the first
            # answer within BASIS_TOL, refined by CG to TOL when the hand rests
            def complete() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                solves.solve(lam, cancelled=self._cancelled,
                             accept=pg.BASIS_TOL if self.stage == 0 else pg.TOL)
                return solves.predict(lam)
            try:
                (grid, tr, te), t = pg.timed(complete)
            except pg.NotSolved:
                return None
            refine = {} if lam in solves.solved else {
                "followup": True, "followup_delay": LARGE_FOLLOWUP_DELAY}
            return pg.FitResult(method, grid, tr, te, t, curve=solves.curve(
                pg.lam_grid(lam), problem.y_test, problem.task), extra=refine)
        if solves is None or lam not in solves.solved or self.stage == 0:
            # the exact fit at λ (a λ move once σ's solves exist: the first answer)
            def exact() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                s = self._solves(skey, problem, kern, sigma, centered)
                s.solve(lam, start=self._warm_start(skey, lam, len(problem.y)),
                        cancelled=self._cancelled)
                return s.predict(lam)
            try:
                (grid, tr, te), t = pg.timed(exact)
            except pg.NotSolved:
                return None
            solves = self._cache[skey]
            if solves.curve_lams is not None:  # the curve is there: complete
                return pg.FitResult(method, grid, tr, te, t, curve=solves.curve(
                    pg.lam_grid(lam), problem.y_test, problem.task))
            # the curve follows at once: it too gives way to a newer request
            return pg.FitResult(method, grid, tr, te, t, extra={
                "followup": True, "followup_delay": 0.0})
        # every λ of the curve (the λ basis that answers any other λ at once follows
        # while the hand rests: prepare)
        try:
            _, t = pg.timed(lambda: solves.solve_curve(pg.lam_grid(lam), self._cancelled))
        except pg.NotSolved:
            return None
        (grid, tr, te), t2 = pg.timed(lambda: solves.predict(lam))
        return pg.FitResult(method, grid, tr, te, t + t2, dof=None, curve=solves.curve(
            pg.lam_grid(lam), problem.y_test, problem.task))

    def _solves(self, skey: tuple[Any, ...], problem: pg.Problem, kern: str, sigma: float,
                centered: bool) -> pg.ExactSolves:
        """The CG solves of exact KRR / CKRR at σ for this data (kept, :attr:`KEEP`)."""
        def make() -> pg.ExactSolves:
            n, m = len(problem.X), len(problem.X_test)
            pairs = self._pairs(problem, skey[1], kern)
            k = None if pairs is not None else make_kernel(kern, {"sigma": sigma})
            K = pairs[0](sigma, out=self._recycled((n, n))) if pairs is not None \
                else k(problem.X)
            if self._cancelled():
                self._recycle(K)
                raise pg.Superseded
            K_test = (pairs[1](sigma, out=self._recycled((m, n))) if pairs is not None
                      else k(problem.X_test, problem.X)) if m else np.zeros((0, n))
            solves = pg.ExactSolves(K, K_test, problem.grid.kernel(kern, sigma, problem.X),
                                    problem.X, problem.y, problem.X_test, kern, sigma,
                                    centered, max_rank=min(CG_MAX_RANK, n // 2))
            # its kernel blocks back to the pool once nothing uses it (dropped by the cache
            # and by any painted point's system bordering it)
            weakref.finalize(solves, self._recycle, K, K_test)
            return solves

        return self._cached(skey, make, keep=KEEP_SOLVES)

    def _recycled(self, shape: tuple[int, int]) -> np.ndarray | None:
        """A matrix of ``shape`` whose pages are already mapped (a view of the smallest
        free array at least as large), if one is free."""
        size = shape[0] * shape[1]
        with self._spare_lock:
            fits = [a for a in self._spare if a.size >= size]
            if not fits:
                return None
            spare = min(fits, key=lambda a: a.size)
            # by identity (list.remove compares arrays element by element)
            del self._spare[next(i for i, a in enumerate(self._spare) if a is spare)]
        return spare.reshape(-1)[:size].reshape(shape)

    def _recycle(self, *arrays: np.ndarray) -> None:
        """Keep ``arrays`` (the large ones) for :meth:`_recycled`: the last
        :data:`SPARES`."""
        with self._spare_lock:
            self._spare.extend(a for a in arrays if a.size >= 2**20)
            del self._spare[:-SPARES]

    def _warm_start(self, skey: tuple[Any, ...], lam: float, n: int) -> np.ndarray | None:
        """The solutions at λ of the last σ's solves of the same data and method (CG starts
        there: a σ step moves them little), or None."""
        for k, other in reversed(self._cache.items()):
            if k[0] == "solves" and k != skey and k[1:3] == skey[1:3] and k[4] == skey[4] \
                    and lam in other.solved and len(other.y) == n:
                return other.solved[lam]
        return None

    @staticmethod
    def _problem(req: Request) -> pg.Problem:
        """The training and test points of ``req`` and its grid."""
        train = ~req.points.test
        return pg.Problem(req.points.X[train], req.points.y[train], req.points.X[~train],
                          req.points.y[~train],
                          pg.GridMap(req.dim, int(req.params["resolution"])), req.task)

    @staticmethod
    def _factor_key(v: int, kern: str, sigma: float, lam: float) -> tuple[Any, ...]:
        return ("factor", v, kern, float(sigma), float(lam))

    def _new_factor(self, problem: pg.Problem, v: int, kern: str, sigma: float, lam: float
                    ) -> pg.Factor:
        """The Cholesky factor of K + λI for this data, from its kept distances."""
        return pg.Factor.at_once(problem.X, problem.X_test, kern, sigma, lam,
                                 self._pairs(problem, v, kern))

    def wants_preparing(self, req: Request) -> bool:
        """Whether :meth:`prepare` has something to make for ``req``."""
        p = req.params
        methods = {p["method"], p["compare"]} if p["compare"] else {p["method"]}
        key = self._factor_key(req.version, p["kernel"], p["sigma"], p["lam"])
        if self.quick and int((~req.points.test).sum()) > PREVIEW_ABOVE:
            # the λ basis of the CG solves, a factor made in blocks a gesture interrupts,
            # and a spare kernel matrix for the next σ
            return self._large_preparing(req) is not None
        return "ckrr" in methods and key not in self._cache

    def _large_preparing(self, req: Request) -> Callable[[], None] | None:
        """At large n, what :meth:`prepare` makes, as a function, or None: the λ basis of
        the CG solves at the request's σ (:meth:`pg.ExactSolves.complete` — a λ move is
        then answered without a product with K), the Cholesky factor of K + λI at its λ
        (:meth:`_large_factor`: a painted point borders it), and a spare kernel matrix
        whose pages are mapped (the next σ's K writes over it instead of faulting in 112 MB
        of fresh pages: 43–265 ms at 3,746 training points)."""
        p = req.params
        solves = [self._cache.get(("solves", req.version, p["kernel"], float(p["sigma"]),
                                   m == "ckrr"))
                  for m in {p["method"], p["compare"]} & {"krr", "ckrr"}]
        todo = [s for s in solves if s is not None and s.curve_lams is not None
                and s.basis is None]
        made = next((s for s in solves if s is not None), None)
        fkey = self._factor_key(req.version, p["kernel"], p["sigma"], p["lam"])
        factor = made is not None and fkey not in self._cache and fkey not in self._unfactored
        if not todo and not factor and not self._missing_spares(made):
            return None

        def make() -> None:
            for s in todo:
                try:
                    s.complete(s.curve_lams, self._cancelled)
                except pg.NotSolved:  # λ moves solve by CG instead
                    pass
            if factor:
                self._large_factor(made, fkey)
            for b in self._missing_spares(made):
                self._recycle(_touched(np.empty_like(b), self._cancelled))

        return make

    def _missing_spares(self, solves: pg.ExactSolves | None) -> list[np.ndarray]:
        """The kernel blocks of ``solves`` (the kernel matrix, the test block) for which no
        spare as large is kept, the larger first."""
        sizes = sorted((a.size for a in self._spare), reverse=True)
        wanted = [] if solves is None else [b for b in (solves.K, solves.K_test)
                                            if b.size >= 2**20]
        return [b for i, b in enumerate(wanted) if i >= len(sizes) or sizes[i] < b.size]

    def _large_factor(self, solves: pg.ExactSolves, key: tuple[Any, ...]) -> None:
        """The Cholesky factor of K + λI at the request's σ and λ from the CG solves'
        kernel matrix, in blocks a newer request interrupts (:meth:`pg.ExactSolves.factor`),
        with its solve of the targets: a painted point then borders it by two triangular
        solves instead of a CG solve (several products with the n × n matrix: at 3,746
        training points 40–60 ms on the worker's one BLAS thread). One is kept; its memory
        goes to the next factor (:meth:`_factor_memory`), or to the spares, once dropped.
        Not positive definite in double precision (a tiny λ): remembered, and a painted
        point borders the CG solves."""
        lam = key[4]
        out = self._factor_memory(key, len(solves.y))
        try:
            system = self._cached(key, lambda: solves.factor(lam, out, self._cancelled),
                                  keep=1)
        except pg.Superseded:
            self._unmade = out
            raise
        except np.linalg.LinAlgError:
            self._unmade = out
            self._unfactored.add(key)
            return
        weakref.finalize(system, self._factor_freed, system.L)
        system.solve_kept(pg.Solved.rhs(solves.y, centered=True))

    def _factor_memory(self, key: tuple[Any, ...], n: int) -> np.ndarray:
        """An n × n array for :meth:`_large_factor`'s factor at ``key``: the memory of a
        kept factor of another key or of one not made (:attr:`_unmade`), else a spare
        (:meth:`_recycled`), else a new one. The kept factors (one,
        :meth:`_large_factor`'s ``keep``) are for another σ or λ, of no use to the current
        state: dropped here, before the new one is made, rather than by the cache after it
        — which held two n × n factors at once (112 MB each at 3,746 training points) and
        wrote the new one into a spare or fresh pages while the old one's went to the
        spares. Only factors are dropped; one that something else still holds (a painted
        point's system bordering it) keeps its memory, freed when it goes. A factor not
        made keeps its array for the next rather than giving it to the spares, where it
        pushed out one kept for the next σ (:data:`SPARES`)."""
        mine, self._unmade = [] if self._unmade is None else [self._unmade], None
        self._freed = freed = []
        try:
            for old in [k for k in self._cache if k[0] == "factor" and k != key]:
                del self._cache[old]  # its L into `freed` if nothing else holds it
        finally:
            self._freed = None
        mine += freed
        out = next((a for a in mine if a.shape == (n, n) and a.flags.c_contiguous), None)
        self._recycle(*(a for a in mine if a is not out))
        if out is None:
            out = self._recycled((n, n))
        return np.empty((n, n)) if out is None else out

    def _factor_freed(self, L: np.ndarray) -> None:
        """A dropped factor's L (its finaliser): to the factor :meth:`_factor_memory` is
        making room for, else to the spares."""
        freed = self._freed
        if freed is not None:
            freed.append(L)
        else:
            self._recycle(L)

    def prepare(self, req: Request, cancelled: Callable[[], bool] | None = None) -> None:
        """What the next gesture on ``req``'s state needs, made while the hand rests: for
        CKRR, the Cholesky factor of K + λI at its σ and λ, which a painted point then
        borders in O(n²), and its solve of the targets, which the point's system then
        reads instead of solving them again (about 20 ms with n = 1000; a point then costs
        two triangular solves). Exact KRR's eigendecomposition serves any λ for that, and
        a painted point right after a CKRR λ move borders CKRR's eigendecomposition
        (:class:`pg.CenteredEigenSystem`). Above :data:`PREVIEW_ABOVE` training points
        (:meth:`_large_preparing`) the CG solves' λ basis is made first, then the factor
        for KRR and CKRR alike, in blocks of columns: made in one call it took 0.43–0.6 s
        there, holding the worker — and the next gesture — after every λ move; in blocks a
        newer request stops it within one piece of a block's product (until it is there a
        painted point borders the CG solves). ``cancelled()`` is asked between pieces of
        that work (True raises :class:`pg.Superseded`)."""
        self._cancelled = cancelled or (lambda: False)
        self._retired.clear()
        if not self.wants_preparing(req):
            return
        large = self._large_preparing(req)
        if large is not None:
            large()
            return
        p = req.params
        problem = self._problem(req)
        v, kern, sigma, lam = req.version, p["kernel"], float(p["sigma"]), float(p["lam"])
        try:
            system = self._cached(self._factor_key(v, kern, sigma, lam),
                                  lambda: self._new_factor(problem, v, kern, sigma, lam))
            system.solve_kept(pg.Solved.rhs(problem.y, centered=True))
        except np.linalg.LinAlgError:  # not positive definite: a painted point solves anew
            return

    def _preview(self, problem: pg.Problem, v: int, kern: str, sigma: float, lam: float,
                 centered: bool, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The Nyström approximation of exact KRR / CKRR at σ and λ on
        :data:`PREVIEW_S` landmarks chosen once per data set (:data:`PREVIEW_SAMPLER`,
        keyed by the seed): grid, train and test predictions."""
        from kernel_lab.core.kernels import make_kernel
        from kernel_lab.core.nystrom.samplers import make_sampler

        def make() -> pg.NystromPreview:
            s = min(PREVIEW_S, len(problem.y))
            marks = make_sampler(PREVIEW_SAMPLER).sample(
                problem.X, make_kernel(kern, {"sigma": sigma}), s, seed).indices
            return pg.NystromPreview(problem, kern, np.sort(marks))

        preview = self._cached(("preview", v, kern, seed), make)
        return preview.predict(sigma, lam, centered)

    def _border_base(self, problem: pg.Problem, kern: str, sigma: float, lam: float
                     ) -> pg.Solved | None:
        """A kept solved system that ``problem``'s training points extend (a painted
        point): a factor at this σ and λ, or exact KRR's or CKRR's eigendecomposition at
        this σ (any λ)."""
        base = next((f for k, f in reversed(self._cache.items())
                     if k[0] == "factor" and k[2:] == (kern, float(sigma), float(lam))),
                    None)
        if base is not None and base.extends(problem.X, problem.X_test):
            return base
        # exact KRR's eigendecomposition (of K: cheaper), else CKRR's (of the centred
        # one), else at large n the CG solves (of K + λI, whichever method made them)
        for kind in ("krr", "ckrr", "solves"):
            for k, c in reversed(self._cache.items()):
                if k[0] == kind and k[2:4] == (kern, sigma):
                    system = pg.CenteredEigenSystem(c, lam) if kind == "ckrr" \
                        else c.system(lam)
                    if system.extends(problem.X, problem.X_test):
                        return system
        return None

    def _quick_exact(self, problem: pg.Problem, v: int, kern: str, sigma: float, lam: float,
                     centered: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact KRR / CKRR at λ from a solved system ``K + λI`` (:class:`pg.Solved`), kept
        per (data, kernel, σ, λ): the Cholesky factor (:class:`pg.Factor`), or, for data
        that only appended training points to an earlier data set's (a painted point),
        that set's factor at this σ and λ bordered — else its exact KRR
        eigendecomposition at this σ (any λ) bordered. O(n²) either way."""
        key = self._factor_key(v, kern, sigma, lam)
        base = self._border_base(problem, kern, sigma, lam)
        try:
            factor = self._cached(key, lambda: base.bordered(problem.X) if base is not None else
                                  self._new_factor(problem, v, kern, sigma, lam))
        except np.linalg.LinAlgError:  # not numerically positive definite: the estimator
            return pg.exact_direct(problem, kern, sigma, lam, centered)
        return factor.predict(problem, centered)

    def _pairs(self, problem: pg.Problem, v: int, kern: str
               ) -> tuple[pg.PairKernel, pg.PairKernel] | None:
        """The kernel's σ-free parts (train–train, test–train) for this data, kept: the
        next σ costs one pass over them (:class:`pg.PairKernel`). None when they would
        take more than :data:`PAIRS_BYTES`."""
        n, m, d = len(problem.X), len(problem.X_test), problem.X.shape[1]
        if 8 * n * (n + m) * (d if kern == "cauchy" else 1) > PAIRS_BYTES:
            return None
        return self._cached(("pairs", v, kern), lambda: (
            pg.PairKernel(kern, problem.X, problem.X),
            pg.PairKernel(kern, problem.X_test, problem.X)))

    def _spectrum(self, v: int, kern: str, sigma: float, problem: pg.Problem
                  ) -> tuple[np.ndarray, np.ndarray]:
        """K's spectrum for leverage scores: from the exact KRR cache when it is there."""
        def make() -> tuple[np.ndarray, np.ndarray]:
            exact = next((c for k, c in reversed(self._cache.items())
                          if k[0] == "krr" and k[1:4] == (v, kern, sigma)
                          and isinstance(c, pg.ExactCache)), None)
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
                raise pg.Superseded
            grid, tr, te = stepper.predict()
            return pg.FitResult("dsg", grid, tr, te, t, n_features=stepper.iterations * 8,
                                extra={"iterations": stepper.iterations,
                                       "history": np.array(stepper.history).reshape(-1, 3)})
        t = 0.0
        while stepper.features < req.steps and not stepper.done:
            if cancelled():
                raise pg.Superseded
            t += pg.timed(stepper.step)[1]
        grid, tr, te = stepper.predict()
        return pg.FitResult("gfc", grid, tr, te, t, n_features=stepper.features,
                            extra={"features": stepper.features, "done": stepper.done,
                                   "frequencies": stepper.frequencies.copy(),
                                   "history": np.array(stepper.history).reshape(-1, 3)})


def _touched(a: np.ndarray, cancelled: Callable[[], bool]) -> np.ndarray:
    """``a`` with every page written (mapped), a block of rows at a time, asking
    ``cancelled()`` between blocks (True raises :class:`pg.Superseded`)."""
    step = max(1, (8 * 2**20) // max(1, a.strides[0]))
    for lo in range(0, len(a), step):
        if lo and cancelled():
            raise pg.Superseded
        a[lo:lo + step] = 0.0
    return a
