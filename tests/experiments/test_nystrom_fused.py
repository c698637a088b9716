"""Fused passes of the ``nystrom`` experiment: on partitions every cell shares each pass
over them, so the run makes as many passes as its longest cell (plus two for the
evaluation, test and picture rows), and its table has the bits of the cells run one by
one."""

from __future__ import annotations

import operator
import threading
from collections import Counter

import numpy as np
import pytest

from kernel_lab.core.executor import call_single_threaded
from kernel_lab.core.nystrom import landmarks as parts_landmarks
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.core.rows import blocks
from kernel_lab.core.rows.mapreduce import LocalParts, RowPlan, array_parts, reduce_blocks
from kernel_lab.core.rows.partitioned import PartitionedData
from kernel_lab.core.rows.prepare import standardize_plan
from kernel_lab.experiments.nystrom import NystromExperiment
from kernel_lab.experiments.nystrom_cells import FusedRun


class CountingParts:
    """A PartMap that counts the passes (maps and reduces) made over its parts."""

    def __init__(self, inner: LocalParts) -> None:
        self.inner, self.parts = inner, inner.parts
        self.passes = 0

    def map(self, fn, *args, **kw):
        self.passes += 1
        return self.inner.map(fn, *args, **kw)

    def reduce(self, fn, *args, **kw):
        self.passes += 1
        return self.inner.reduce(fn, *args, **kw)


class OneByOne:
    """An executor that is not SERIAL (so a LocalParts run takes the per-cell path) and
    counts the passes each task makes (``LocalParts.map`` patched to count)."""

    def __init__(self, counter: list[int]) -> None:
        self.counter = counter
        self.passes: list[tuple[str, int]] = []

    def map(self, fn, tasks):
        for task in tasks:
            before = self.counter[0]
            out = call_single_threaded(fn, task)  # as a parallel executor runs a task
            self.passes.append((task.sampler, self.counter[0] - before))
            yield out


def _data(n: int = 6000, p: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    centres = rng.uniform(-3, 3, size=(5, p))
    X = centres[rng.choice(5, size=n, p=[0.5, 0.2, 0.15, 0.1, 0.05])]
    X = X + 0.4 * rng.standard_normal((n, p))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


def _dataset(parts, X: np.ndarray) -> PartitionedData:
    plan = standardize_plan(getattr(parts, "inner", parts), RowPlan.split(3, X.shape[0], 0.2))
    return PartitionedData(parts, plan, [f"x{j}" for j in range(X.shape[1])], "y",
                           name="clusters")


def _last(it):
    last = None
    for last in it:  # noqa: B007
        pass
    return last


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 256 rows; recursive RLS with levels of more than 300 rows scored on the
    parts and RP-Cholesky in blocked rounds on the parts, as on large data."""
    monkeypatch.setattr(blocks, "ROW_BLOCK", 256)
    monkeypatch.setitem(parts_landmarks.recursive_rls_landmarks.__kwdefaults__,
                        "gather_rows", 300)
    monkeypatch.setattr(parts_landmarks, "RPC_STORED_MAX", 0)
    monkeypatch.setattr(parts_landmarks, "GATHER_ROWS", 300)


PARAMS = {"eval_points": 300}


def _params(**kw):
    return NystromExperiment.resolve({**PARAMS, **kw})


@pytest.mark.parametrize("protocol", ["light", "paper"])
def test_fused_defaults_on_16_parts_share_every_pass_and_keep_the_bits(
        small, monkeypatch: pytest.MonkeyPatch, protocol: str) -> None:
    X, y = _data()
    sizes = np.diff(np.linspace(0, X.shape[0], 17).round().astype(int)) + np.tile([-40, 40], 8)
    params = _params(protocol=protocol)
    if protocol == "paper":
        params.update(sizes="10,40", samplers=["uniform", "recursive-rls", "rp-cholesky"])

    # the cells one by one (the in-memory parallel path, here one after the other),
    # counting the passes each makes
    counter = [0]
    plain = LocalParts.map

    def counted(self, fn, *args, **kw):
        counter[0] += 1
        return plain(self, fn, *args, **kw)

    monkeypatch.setattr(LocalParts, "map", counted)
    one_by_one = OneByOne(counter)
    reference = _last(NystromExperiment().run(
        params, _dataset(LocalParts(array_parts(X, y, list(sizes))), X), Progress(),
        one_by_one))
    monkeypatch.setattr(LocalParts, "map", plain)

    parts = LocalParts(array_parts(X, y, list(sizes)))
    counting = CountingParts(parts)
    fused = _last(NystromExperiment().run(params, _dataset(counting, X), Progress()))

    assert set(fused.table) == set(reference.table)
    for key, value in reference.table.items():
        if key.startswith("time"):
            assert np.all(np.isfinite(fused.table[key]) == np.isfinite(value)), key
            assert np.all(fused.table[key][np.isfinite(value)] > 0), key
            continue
        np.testing.assert_array_equal(fused.table[key], value, err_msg=key)
    for key, value in reference.summaries.items():
        if isinstance(value, float | int | str) and "time" not in key:
            assert fused.summaries[key] == value, key

    # cells in lock-step: two passes gather the evaluation, test and picture rows, then
    # as many as the longest cell makes alone (Σ k(x, x) rides in the first)
    per_cell = Counter()
    for sampler, passes in one_by_one.passes:
        per_cell[sampler] = max(per_cell[sampler], passes)
    assert counting.passes == 2 + max(per_cell.values())
    bound = 2 + sum(per_cell.values())  # ≤ 2 + Σ_samplers(levels or rounds + 2)
    assert counting.passes <= bound
    assert sum(p for _, p in one_by_one.passes) > 10 * counting.passes
    if protocol == "light":
        # recursive RLS: its levels on the parts, the top one, the sums; RP-Cholesky its
        # rounds, a fill or not, the sums
        levels = parts_landmarks.rls_levels(int(_dataset(parts, X).n_train), 160)
        assert per_cell["recursive-rls"] <= levels + 3
        assert per_cell["uniform"] == 3 and per_cell["rff"] == 1


def test_a_fused_run_is_cancelled_within_a_pass(small) -> None:
    X, y = _data()
    parts = LocalParts(array_parts(X, y, 16))
    reports: list[tuple[float, str]] = []
    progress = Progress(lambda f, m: reports.append((f, m)),
                        is_cancelled=lambda: any("partitions" in m and "pass 3" in m
                                                 for _, m in reports))
    run = NystromExperiment().run(_params(samplers=["recursive-rls", "rp-cholesky"]),
                                  _dataset(parts, X), progress)
    with pytest.raises(Cancelled):
        _last(run)
    # cancelled at the first partition after the first report of pass 3
    assert "pass 3" in reports[-1][1] and "(1/16 partitions)" in reports[-1][1]
    fractions = [f for f, _ in reports]
    assert fractions == sorted(fractions)
    assert not _fused_threads()  # every cell waiting for a reply unwound and joined


def _sum_rows(rows, scale):
    return float(rows.X.sum()) * scale


def _fails(part, plan):
    raise ValueError("a cell's error")


def test_fused_run_combines_each_request_in_its_own_tree_and_raises_a_cells_error() -> None:
    X = np.arange(60.0).reshape(20, 3)
    y = np.zeros(20)
    parts = LocalParts(array_parts(X, y, [3, 7, 2, 8]))
    plan = RowPlan(1, 20, 0, None, block=4, given_test_start=20)
    alone = [reduce_blocks(parts, _sum_rows, plan, k) for k in (1.0, 2.0)]
    jobs = [lambda p, _pr, k=k: reduce_blocks(p, _sum_rows, plan, k) for k in (1.0, 2.0)]
    jobs.append(lambda p, _pr: p.reduce(lambda part, *a: part.rows, combine=operator.add))
    counting = CountingParts(parts)
    run = FusedRun(counting, jobs)
    got = [value for value, _ in run.results()]
    assert got == [*alone, 20] and counting.passes == 1
    bad = FusedRun(parts, [jobs[0], lambda p, _pr: p.map(_fails, plan)])
    with pytest.raises(ValueError, match="a cell's error"):
        list(bad.results())
    assert not _fused_threads()


def _fused_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fused-cell")]


def _steps(plan: RowPlan, scales: tuple[float, ...], ran: Counter, name: str,
           fail_after: int | None = None):
    """A job of several reduces, counting each stretch of client code it runs (between
    its requests); raises in its client code after ``fail_after`` replies."""

    def job(parts, _progress):
        total = 0.0
        for i, k in enumerate(scales):
            ran[name, i] += 1
            if fail_after is not None and i == fail_after:
                raise ValueError(f"{name}: an error in a cell's own code")
            total = total * 3 + reduce_blocks(parts, _sum_rows, plan, k)
        ran[name, len(scales)] += 1
        return total

    return job


def _tiny() -> tuple[LocalParts, RowPlan]:
    X = np.arange(60.0).reshape(20, 3)
    parts = LocalParts(array_parts(X, np.zeros(20), [3, 7, 2, 8]))
    return parts, RowPlan(1, 20, 0, None, block=4, given_test_start=20)


@pytest.mark.parametrize("at_once", [1, 2, 3])
def test_each_cell_runs_its_client_code_once_and_resumes_after_each_pass(at_once) -> None:
    parts, plan = _tiny()
    ran: Counter = Counter()
    scales = {"a": (1.0, 2.0, 3.0), "b": (5.0,), "c": (7.0, 11.0)}
    alone = {}
    for name, ks in scales.items():
        total = 0.0
        for k in ks:
            total = total * 3 + reduce_blocks(parts, _sum_rows, plan, k)
        alone[name] = total
    counting = CountingParts(parts)
    run = FusedRun(counting, [_steps(plan, ks, ran, name) for name, ks in scales.items()],
                   at_once=at_once)
    got = [value for value, _ in run.results()]
    assert got == list(alone.values())
    assert counting.passes == 3 == run.passes  # the longest cell's requests
    # every stretch of every cell's code ran exactly once (before: again at every pass)
    assert ran == Counter({(name, i): 1 for name, ks in scales.items()
                           for i in range(len(ks) + 1)})
    assert not _fused_threads()


@pytest.mark.parametrize("at_once", [1, 2])
def test_an_error_in_one_cells_code_stops_the_others_without_leaving_threads(at_once
                                                                             ) -> None:
    parts, plan = _tiny()
    ran: Counter = Counter()
    jobs = [_steps(plan, (1.0, 2.0, 3.0), ran, "long"),
            _steps(plan, (1.0, 2.0), ran, "bad", fail_after=1),
            _steps(plan, (4.0, 5.0, 6.0), ran, "after")]
    run = FusedRun(parts, jobs, at_once=at_once)
    with pytest.raises(ValueError, match="bad: an error in a cell's own code"):
        list(run.results())
    assert run.passes == 1 and not _fused_threads()
    # no cell was resumed after the error was seen (with two at once, the cell after the
    # failing one may have started when the first one handed its baton back before it)
    assert ran["long", 1] == ran["bad", 1] == 1
    assert ran["after", 1] == 0 if at_once == 1 else ran["after", 1] <= 1
    # an error before any request, and one in a pass (on the partitions)
    first = FusedRun(parts, [jobs[0], _steps(plan, (1.0,), ran, "first", fail_after=0)],
                     at_once=at_once)
    with pytest.raises(ValueError, match="first: an error"):
        list(first.results())
    in_pass = FusedRun(parts, [jobs[0], lambda p, _pr: p.map(_fails, plan), jobs[2]],
                       at_once=at_once)
    with pytest.raises(ValueError, match="a cell's error"):
        list(in_pass.results())
    assert not _fused_threads()


def test_a_fused_run_no_longer_read_ends_its_cells_threads() -> None:
    parts, plan = _tiny()
    ran: Counter = Counter()
    jobs = [_steps(plan, (1.0,), ran, "short"), _steps(plan, (1.0, 2.0, 3.0), ran, "long")]
    results = FusedRun(parts, jobs).results()
    first, _ = next(results)
    assert first == reduce_blocks(parts, _sum_rows, plan, 1.0)
    assert len(_fused_threads()) == 1  # the long cell waits for its second reply
    results.close()
    assert not _fused_threads() and ran["long", 2] == 0
