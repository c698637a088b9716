"""The stepped methods: :class:`DSGStepper` continues the same doubly stochastic run
(iteration k of a stepped run equals a run of k iterations); :class:`GFCStepper` adds one
greedy feature per step (one descent of one step per pass, so after k steps the model is
GFC with k features)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from kernel_lab.core.models import DSGClassifier, DSGRegressor, GreedyFeatureRegressor
from kernel_lab.core.playground.fits import Problem, error

Array = np.ndarray

#: Entries of a grid map's factors per block of DSG iterations (2¹⁸ doubles: 2 MiB each).
GRID_BLOCK = 1 << 18


class DSGStepper:
    """A DSG run advanced k iterations at a time; the loss after each step is kept."""

    #: Iterations run between two checks for a newer request.
    CHUNK = 100

    def __init__(self, problem: Problem, kernel: str, sigma: float, nu: float, seed: int,
                 batch_size: int = 8, features_per_iter: int = 8) -> None:
        cls = DSGClassifier if problem.task == "classification" else DSGRegressor
        loss = "logistic" if problem.task == "classification" else "squared"
        self.problem = problem
        self.model = cls(loss, kernel=kernel, sigma=sigma, nu=nu, n_iter=1,
                         batch_size=min(batch_size, len(problem.y)),
                         n_features_per_iter=features_per_iter, cache_features=True,
                         warm_start=True, random_state=seed)
        self.iterations = 0
        # before the first iteration f is DSG's offset: the target mean (regression)
        self._offset = float(np.mean(problem.y)) if problem.task == "regression" else 0.0
        self.history: list[tuple[int, float, float]] = []  # (iteration, train, test error)
        self._sums: dict[int, tuple[int, Array | None, int]] = {}  # running sums per set

    def step(self, k: int = 1, cancelled: Callable[[], bool] | None = None) -> None:
        """Advance k iterations; the errors are recorded at up to 20 points on the way
        (a long jump) or once (a few iterations, as in Play). ``cancelled()`` is asked
        between chunks of at most :attr:`CHUNK` iterations: a long replay stops early
        (where it got to is kept and consistent)."""
        if k < 1:
            return
        target = self.iterations + int(k)
        marks = [target] if k <= 20 else np.unique(np.round(np.geomspace(
            self.iterations + 1, target, 20)).astype(int))
        for mark in marks:
            while self.iterations < mark:
                if cancelled is not None and cancelled():
                    return
                upto = min(int(mark), self.iterations + self.CHUNK)
                self.model.set_params(n_iter=upto - self.iterations)
                self.model.fit(self.problem.X, self.problem.y)
                self.iterations = upto
            _, train, test = self.predict(grid=False)
            p = self.problem
            self.history.append((self.iterations, error(train, p.y, p.task),
                                 error(test, p.y_test, p.task)))

    def _scores(self, which: int, X: Array) -> Array:
        """f on a point set, extended by the iterations since the last call only."""
        if len(X) == 0 or self.iterations == 0:
            return np.full(len(X), self._offset)
        m = self.model
        done, total, rescales = self._sums.get(which, (0, None, -1))
        if rescales != m.n_rescales_ or total is None:
            done, total = 0, np.zeros((len(X), 1))
        if done < self.iterations:
            if which == 0:  # the grid: its cosines by rows and columns (gridmap), in
                # blocks of iterations of bounded memory (a replay from step 0 has them all)
                r = max(1, int(m.n_features_per_iter))
                per = max(1, GRID_BLOCK // (4 * self.problem.grid.resolution * r))
                for first in range(done, self.iterations, per):
                    W, b, coef = m.terms(first, min(first + per, self.iterations))
                    total = total + self.problem.grid.cosines(W, b)(coef)
            else:
                total = total + m.partial_sum(X, done, self.iterations)
        self._sums[which] = (self.iterations, total, m.n_rescales_)
        f = total[:, 0] * (math.sqrt(2.0) * m.scale_)
        return f + getattr(m, "offset_", 0.0)

    def predict(self, grid: bool = True) -> tuple[Array, Array, Array]:
        p = self.problem
        G = self._scores(0, p.G) if grid else np.zeros(0)
        return G, self._scores(1, p.X), self._scores(2, p.X_test)


class GFCStepper:
    """Greedy feature construction one feature at a time: passes of one descent of one
    step each (the paper's protocol, no pruning), so after k steps the model is GFC with k
    features; the learned frequencies are kept for the frequency-plane view."""

    def __init__(self, problem: Problem, seed: int, max_features: int = 60) -> None:
        self.problem = problem
        self.model = gfc_model(max_features, seed)
        self._passes = self.model.fit_passes(problem.X, problem.y)
        self.features = 0
        self.done = False
        self.history: list[tuple[int, float, float]] = []

    def step(self) -> None:
        if self.done:
            return
        try:
            next(self._passes)
        except StopIteration:
            self.done = True
            return
        self.features = int(self.model.n_features_out_)
        _, train, test = self.predict()
        p = self.problem
        self.history.append((self.features, error(train, p.y, p.task),
                             error(test, p.y_test, p.task)))

    def predict(self) -> tuple[Array, Array, Array]:
        p = self.problem
        if self.features == 0:
            mean = float(np.mean(p.y))
            return (np.full(len(p.G), mean), np.full(len(p.y), mean),
                    np.full(len(p.y_test), mean))
        m = self.model
        test = m.predict(p.X_test) if len(p.X_test) else np.zeros(0)
        return m.predict(p.G), m.predict(p.X), test

    @property
    def frequencies(self) -> Array:
        return getattr(self.model, "frequencies_", np.zeros((0, self.problem.X.shape[1])))


def gfc_model(k: int, seed: int) -> GreedyFeatureRegressor:
    """GFC adding exactly one feature per pass (k passes: k features)."""
    return GreedyFeatureRegressor(n_features=k, n_passes=k, n_descents=1, max_steps=1,
                                  protocol="paper", eta=0.0, random_state=seed)
