"""The learning curve's one run on partitioned data: DSG over keyed blocks of rows, the
squared-loss baselines from normal sums reduced over the parts, and the run itself — the
same rows cut into one part or six give the same numbers, the estimators' fit takes the
same keyed epochs, and the in-memory references agree."""

from __future__ import annotations

import collections
import pickle

import numpy as np
import pytest

from kernel_lab.core.dsg.stream import BlockStream, epoch_rows, take_range, target_summary
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.models import DSGClassifier, DSGRegressor
from kernel_lab.core.models.rff import cos_features
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.core.ridge.normal import (
    CosineFeatures,
    KernelColumns,
    normal_sums,
    uniform_landmarks,
)
from kernel_lab.core.rows import (
    LocalParts,
    PartitionedData,
    RowPlan,
    array_parts,
    part_rows,
    standardize_plan,
)
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.rows.mapreduce import Rows
from kernel_lab.experiments.learning_curve import LearningCurveExperiment, keyed_rows


def _data(n: int = 600, p: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * [1.0, 3.0, 0.5, 2.0][:p] + 1.0
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _split(X: np.ndarray, y: np.ndarray, pieces: int | list[int], seed: int = 5,
           fraction: float = 0.25) -> tuple[LocalParts, RowPlan]:
    parts = LocalParts(array_parts(X, y, pieces))
    plan = standardize_plan(parts, RowPlan.split(seed, X.shape[0], fraction))
    return parts, plan


@pytest.mark.parametrize(("B", "block"), [(7, 128), (300, 64)])
def test_epoch_order_is_a_permutation_of_the_training_rows_whatever_the_partitioning(B, block):
    X, y = _data(600)
    seen = []
    for pieces in (1, 6, [1, 127, 2, 300, 63, 107]):  # one array, six even parts, uneven
        parts, plan = _split(X, y, pieces)
        stream = iter(BlockStream(parts, plan, seed=9, batch_size=B, block=block))
        # 2 epochs and a bit: batches cross block and epoch boundaries (and, of 300 rows,
        # span several blocks of 64)
        batches = [next(stream) for _ in range(2 * plan.n_train // B + 3)]
        assert all(b.index.size == B for b in batches)
        got = np.concatenate([b.index for b in batches])
        seen.append(got)
        # the batches hold the rows themselves, standardised by the plan
        whole = part_rows(array_parts(X, y, 1)[0], plan)
        where = np.searchsorted(whole.index, got)
        np.testing.assert_allclose(np.concatenate([b.X for b in batches]), whole.X[where],
                                   rtol=1e-12)
        np.testing.assert_array_equal(np.concatenate([b.y for b in batches]), whole.y[where])
        train = np.flatnonzero(~plan.is_test(np.arange(600)))
        m = plan.n_train
        for e in range(2):
            part = got[e * m:(e + 1) * m]
            np.testing.assert_array_equal(np.sort(part), train)  # each epoch: a permutation
            # blocks of rows in keyed order, each visited once, rows within a block in
            # the order of their keys
            blocks = part // block
            assert np.count_nonzero(np.diff(blocks)) == -(-600 // block) - 1
            for k in np.unique(blocks):
                key = rowkeys.keys(9, rowkeys.DSG_EPOCH + e, part[blocks == k])
                assert np.all(key[1:] > key[:-1])
            np.testing.assert_array_equal(part, epoch_rows(plan, 9, e, block))
    np.testing.assert_array_equal(seen[0], seen[1])
    np.testing.assert_array_equal(seen[0], seen[2])
    assert not np.array_equal(seen[0][:plan.n_train], seen[0][plan.n_train:2 * plan.n_train])


def test_a_block_straddling_parts_reads_only_the_parts_it_overlaps():
    X, y = _data(600)
    parts, plan = _split(X, y, 6)  # parts of 100 rows
    read = []

    class Counting:
        def __init__(self, part):
            self.part, self.index, self.start, self.rows = part, part.index, part.start, \
                part.rows

        def read(self):
            read.append(self.index)
            return self.part.read()

        def describe(self):
            return self.part.describe()

    counting = LocalParts([Counting(p) for p in parts.parts])
    rows = take_range(counting, plan, 150, 310)
    assert sorted(read) == [1, 2, 3]
    whole = part_rows(array_parts(X, y, 1)[0], plan)
    keep = (whole.index >= 150) & (whole.index < 310)
    np.testing.assert_array_equal(rows.index, whole.index[keep])
    np.testing.assert_allclose(rows.X, whole.X[keep], rtol=1e-12)


def _reference_batches(plan: RowPlan, seed: int, B: int, count: int) -> list[np.ndarray]:
    """Global training rows of ``count`` batches with one block: each epoch the training
    rows in the order of their keys, epochs one after the other."""
    train = np.flatnonzero(~plan.is_test(np.arange(plan.n)))
    stream = np.concatenate([train[np.argsort(rowkeys.keys(seed, rowkeys.DSG_EPOCH + e,
                                                            train))] for e in range(4)])
    return [stream[i * B:(i + 1) * B] for i in range(count)]


def _trained(model, parts, plan, iterations, *, offset=0.0, classes=None, block=None,
             chunks=(None,)):
    """``model`` prepared and trained over the keyed stream of ``parts`` (its seed, its
    batch size), in calls of ``chunks`` iterations (None: the rest)."""
    p = len(plan.mean)
    if classes is None:
        model.prepare(np.zeros((1, p)), offset=offset)
    else:
        model.prepare(np.zeros((1, p)), classes=classes)
    stream = BlockStream(parts, plan, model.seed_, model.batch_size, block=block, p=p)
    batches = (Rows(b.X, model.labels(b.y), b.index) for b in stream)
    losses, done = [], 0
    for k in chunks:
        k = iterations - done if k is None else k
        losses += model.train(batches, k)
        done += k
    return losses


def test_dsg_over_the_stream_with_one_block_is_the_models_own_run_on_the_same_batches():
    X, y = _data(400)
    parts, plan = _split(X, y, 3)
    B, T = 16, 45  # 45 × 16 = 720 rows: more than two epochs of 300
    kw = {"sigma": 2.0, "nu": 1e-2, "batch_size": B, "n_features_per_iter": 4,
          "cache_features": True, "random_state": 3}
    whole = part_rows(array_parts(X, y, 1)[0], plan)  # training rows in index order
    ybar = float(whole.y.mean())
    model = DSGRegressor(**kw)
    losses = _trained(model, parts, plan, T, offset=ybar, block=1 << 16, chunks=(20, None))
    assert len(losses) == T and model.n_iter_ == T

    ref = DSGRegressor(**kw)
    ref.prepare(whole.X, offset=ybar)  # the model's public protocol, on rows in memory
    position = {int(i): k for k, i in enumerate(whole.index)}
    for b in _reference_batches(plan, ref.seed_, B, T):
        rows = np.array([position[int(i)] for i in b])
        ref.step(whole.X[rows], ref.labels(whole.y[rows]))
    ref.finish()
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-12, atol=1e-15)
    assert model.scale_ == pytest.approx(ref.scale_, rel=1e-14)
    np.testing.assert_allclose(model.predict(whole.X[:50]), ref.predict(whole.X[:50]),
                               rtol=1e-12)


@pytest.mark.parametrize("cls", [DSGRegressor, DSGClassifier])
def test_the_estimators_fit_is_the_stream_over_its_array_as_one_part(cls):
    """``fit(X, y)`` on an array runs the same keyed epochs as the learning curve over a
    data set whose training rows are those rows (global rows 0 … n − 1): the same batches,
    hence the same model, bit for bit — also when split in warm-started fits whose
    batches cross blocks and epochs."""
    from kernel_lab.core.dsg import stream as dsg
    from kernel_lab.core.rows.mapreduce import one_part

    X, y = _data(300)
    if cls is DSGClassifier:
        y = np.where(y > np.median(y), 2.0, -1.0)
    kw = {"sigma": 2.0, "nu": 1e-2, "batch_size": 24, "n_features_per_iter": 4,
          "cache_features": True, "random_state": 7}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dsg, "BLOCK_ROWS", 64)  # 300 rows: 5 blocks of 64 rows
        mp.setattr(dsg, "MIN_BLOCK_ROWS", 64)
        fitted = cls(n_iter=40, **kw).fit(X, y)  # 960 rows: three epochs and a bit
        warm = cls(n_iter=7, warm_start=True, **kw).fit(X, y)
        for k in (13, 20):
            warm.set_params(n_iter=k).fit(X, y)
        parts, plan = one_part(X, y)
        plan = plan.with_scaling(np.zeros(X.shape[1]), np.ones(X.shape[1]))
        streamed = cls(**kw)
        offset = float(y.mean()) if cls is DSGRegressor else 0.0
        _trained(streamed, parts, plan, 40, offset=offset,
                 classes=np.unique(y) if cls is DSGClassifier else None)
    for model in (fitted, warm):
        assert model.n_iter_ == 40 and model.stream_position_ == 960
        np.testing.assert_array_equal(model.coef_ * model.scale_,
                                      streamed.coef_ * streamed.scale_)


def test_dsg_over_the_stream_classifies_two_classes():
    X, y = _data(600)
    labels = np.where(y > np.median(y), 3.0, 1.0)
    parts, plan = _split(X, labels, 4)
    model = DSGClassifier("logistic", sigma=2.0, nu=1e-3, batch_size=16,
                          n_features_per_iter=8, cache_features=True, random_state=1)
    _trained(model, parts, plan, 150, classes=np.array([1.0, 3.0]), block=100)
    test = part_rows(array_parts(X, labels, 1)[0], plan, "test")
    assert np.mean(model.predict(test.X) != test.y) < 0.2


def test_dsg_over_the_stream_is_the_same_on_one_part_and_six():
    X, y = _data(600)
    out = []
    for pieces in (1, 6):
        parts, plan = _split(X, y, pieces)
        ybar = target_summary(parts, plan).mean
        model = DSGRegressor(sigma=2.0, nu=1e-3, batch_size=8, n_features_per_iter=4,
                             cache_features=True, random_state=3)
        _trained(model, parts, plan, 100, offset=ybar, block=128)
        out.append((model.coef_.copy(), ybar))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-8, atol=1e-12)
    assert out[0][1] == pytest.approx(out[1][1], rel=1e-12)


def test_the_gather_pass_sums_the_targets_as_their_own_pass_does(monkeypatch):
    # keyed_rows' first pass also makes target_summary: the same bits (count, sum, the
    # distinct values) on one part, six and uneven parts cut inside blocks, and the same
    # rows as without the summary
    monkeypatch.setattr("kernel_lab.core.rows.blocks.ROW_BLOCK", 64)
    X, y = _data(600)
    labels = np.where(y > np.median(y), 3.0, 1.0)
    asks = [("test", rowkeys.TEST_SUBSET, 50), ("train", rowkeys.BANDWIDTH, 40)]
    sums = set()
    for target, values in ((y, False), (labels, True)):
        for pieces in (1, 6, [1, 127, 2, 300, 63, 107]):
            parts, plan = _split(X, target, pieces)
            plain, none = keyed_rows(parts, plan, asks)
            rows, found = keyed_rows(parts, plan, asks, values)
            alone = target_summary(parts, plan, values)
            assert none is None and found.n == alone.n == 450
            assert found.total == alone.total   # bit for bit
            np.testing.assert_array_equal(found.values, alone.values)
            sums.add((values, found.total))
            for a, b in zip(plain, rows, strict=True):
                np.testing.assert_array_equal(a.X, b.X)
                np.testing.assert_array_equal(a.index, b.index)
        np.testing.assert_array_equal(found.values, [1.0, 3.0] if values else [])
    assert len(sums) == 2                           # the same sum however cut


def test_normal_sums_over_parts_are_the_dense_products():
    X, y = _data(500)
    kernel = make_kernel("gaussian", {"sigma": 1.5})
    rng = np.random.default_rng(2)
    W, b = rng.normal(size=(4, 30)), rng.uniform(0, 2 * np.pi, 30)
    for pieces in (1, 6):
        parts, plan = _split(X, y, pieces)
        marks = uniform_landmarks(parts, plan, 25)
        whole = part_rows(array_parts(X, y, 1)[0], plan)
        # landmarks: 25 training rows in the order of their keys (so the first s are the
        # keyed uniform subset of s)
        key = rowkeys.keys(plan.seed, rowkeys.LANDMARKS, whole.index)
        first = whole.index[np.argsort(key)[:25]]
        np.testing.assert_array_equal(marks.index, first)
        np.testing.assert_allclose(marks.X, whole.X[np.argsort(key)[:25]], rtol=1e-12)
        rff, nys = normal_sums(parts, plan, [CosineFeatures(W, b),
                                             KernelColumns(kernel, marks.X)], shift=0.7)
        for sums, F in ((rff, cos_features(whole.X, W, b, 1.0)), (nys, kernel(whole.X,
                                                                               marks.X))):
            yc = whole.y - 0.7
            np.testing.assert_allclose(sums.G, F.T @ F, rtol=1e-10)
            np.testing.assert_allclose(sums.b, F.T @ yc, rtol=1e-10)
            assert sums.yy == pytest.approx(yc @ yc, rel=1e-10) and sums.n == whole.y.size
        assert target_summary(parts, plan).mean == pytest.approx(whole.y.mean(), rel=1e-12)


PARAMS = {"kernel": "gaussian", "sigma": None, "loss": "auto", "nu": 1e-3, "theta": None,
          "t0": None, "n_iter": 120, "batch_size": 16, "features_per_iter": 8, "points": 6,
          "rff_max": None, "exact_max": 4000, "seed": 4}


class PicklingParts(LocalParts):
    """LocalParts that sends every call through pickle, as a cluster does: the function
    must be a module-level one and its arguments picklable."""

    def map(self, fn, *args, progress=None, message=""):
        fn, args = pickle.loads(pickle.dumps((fn, args)))
        return [pickle.loads(pickle.dumps(r)) for r in
                super().map(fn, *args, progress=progress, message=message)]


def _partitioned(X: np.ndarray, y: np.ndarray, pieces: int, seed: int = 4,
                 kind: type[LocalParts] = LocalParts) -> PartitionedData:
    parts, plan = _split(X, y, pieces, seed=seed)
    return PartitionedData(kind(parts.parts), plan, [f"x{j}" for j in range(X.shape[1])], "y",
                           name="generated")


def _run(experiment, params, data, progress):
    return experiment.run(params, data, progress)


def _last(results):
    return collections.deque(results, maxlen=1)[0]


def test_the_driver_gives_the_same_curve_on_one_part_and_six(monkeypatch):
    from kernel_lab.core.dsg import stream as dsg

    monkeypatch.setattr(dsg, "BLOCK_ROWS", 128)  # blocks straddling the parts of 100 rows
    monkeypatch.setattr(dsg, "MIN_BLOCK_ROWS", 64)
    X, y = _data(600)
    exp = LearningCurveExperiment()
    runs = [_last(_run(exp, dict(PARAMS, rff_max=128), _partitioned(X, y, k, kind=kind),
                               Progress())) for k, kind in ((1, LocalParts), (6, PicklingParts))]
    a, b = runs
    assert set(a.table) == set(b.table)
    for key in a.table:
        np.testing.assert_allclose(a.table[key], b.table[key], rtol=1e-8, equal_nan=True)
    t = a.table
    has = t["n_features"] <= 128
    assert np.isfinite(t["dsg_test_error"]).all()
    assert np.isfinite(t["rff_test_error"][has]).all()
    assert np.isfinite(t["nystrom_test_error"][has]).all()
    assert np.isnan(t["rff_test_error"][~has]).all()
    # n = 450 ≤ exact_max: the exact floor on the gathered training rows, as in memory
    assert np.isfinite(t["krr_test_error"]).all() and np.isfinite(t["dsg_floor_distance"]).all()
    assert a.summaries["sigma"] == pytest.approx(b.summaries["sigma"], rel=1e-12)
    assert a.summaries["dsg_block_rows"] == 128 and a.summaries["partitions"] == 1


def test_the_driver_reports_progress_in_order_and_can_be_cancelled():
    X, y = _data(600)
    fractions = []
    params = dict(PARAMS, rff_max=64)
    results = list(_run(LearningCurveExperiment(), params, _partitioned(X, y, 3),
                                Progress(lambda f, m: fractions.append(f))))
    assert len(results) == 1 + results[-1].table["iteration"].size
    assert np.all(np.diff(fractions) >= -1e-12) and fractions[-1] == pytest.approx(1.0)
    assert [r.fraction for r in results] == sorted(r.fraction for r in results)
    cancel: list[bool] = []
    run = _run(LearningCurveExperiment(), dict(params, n_iter=100_000),
                       _partitioned(X, y, 3), Progress(is_cancelled=lambda: bool(cancel)))
    assert next(run).table["iteration"][-1] == 100_000  # the set-up's result
    cancel.append(True)  # DSG stops at its next report, before the first curve point
    with pytest.raises(Cancelled):
        next(run)


def test_the_driver_refuses_by_name_what_does_not_fit_the_data():
    X, y = _data(200)
    with pytest.raises(ParameterError, match="'logistic' does not fit these regression"):
        _last(_run(LearningCurveExperiment(), dict(PARAMS, loss="logistic"),
                           _partitioned(X, y, 2), Progress()))
    labels = np.where(np.arange(200) < 2, 1.0, -1.0)  # two rows of one class
    data = _partitioned(X, labels, 2, seed=4)
    data.task = "classification"
    train = ~data.plan.is_test(np.arange(200))
    if np.unique(labels[train]).size == 2:  # the split left a row of each class in training
        labels[np.flatnonzero(train)[:2]] = -1.0
        data = _partitioned(X, labels, 2, seed=4)
        data.task = "classification"
    with pytest.raises(ParameterError, match="two classes are needed"):
        _last(_run(LearningCurveExperiment(), dict(PARAMS, loss="hinge"), data,
                           Progress()))


def _memory_twin(data: PartitionedData, X: np.ndarray, y: np.ndarray, **kw) -> Dataset:
    """The rows of ``data`` in memory: its training and test rows, standardised by its
    plan, in row order."""
    whole = array_parts(X, y, 1)[0]
    train, test = part_rows(whole, data.plan), part_rows(whole, data.plan, "test")
    return Dataset(train.X, train.y, test.X, test.y, data.feature_names, "y", **kw)


@pytest.mark.parametrize(("loss", "classes"), [("logistic", 2), ("hinge", 2),
                                               ("multinomial", 3)])
def test_classification_on_parts_is_close_to_the_in_memory_run(loss, classes):
    """The same rows in memory and in 5 parts: the floor and the RFF baseline are the same
    fits of the same rows (equal to rounding). The in-memory twin holds the training rows
    at other global indices (its own given split), so DSG's keyed epochs and the Nyström
    baseline's keyed landmarks are other draws of the same law: over four seeds their
    mean errors agree."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1500, 4))
    f = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=1500)
    y = (np.digitize(f, [-0.5, 0.5]).astype(float) if classes == 3
         else np.where(f > 0, 1.0, 0.0))
    data = _partitioned(X, y, 5)
    data.task = "multiclass" if classes == 3 else "classification"
    names = ["low", "middle", "high"] if classes == 3 else None
    memory = _memory_twin(data, X, y, classes=names)
    assert memory.task == data.task
    params = dict(PARAMS, loss=loss, n_iter=400, rff_max=96, exact_max=2000, sigma=2.0)
    exp = LearningCurveExperiment()
    # the floor (the costly part) once: it does not depend on the seed
    seeds = [dict(params, seed=s, exact_max=params["exact_max"] if s == 0 else 0)
             for s in range(4)]
    runs = [(_last(_run(exp, q, data, Progress())), _last(exp.run(q, memory, Progress())))
            for q in seeds]
    a, b = runs[0]
    assert a.summaries["loss"] == b.summaries["loss"]
    assert a.summaries.get("classes") == b.summaries.get("classes")
    assert a.summaries["krr_test_error"] == pytest.approx(b.summaries["krr_test_error"],
                                                          abs=1.5 / memory.n_test)
    has = np.isfinite(b.table["rff_test_error"])
    assert has.sum() >= 3
    np.testing.assert_allclose(a.table["rff_test_error"][has], b.table["rff_test_error"][has],
                               atol=1.5 / memory.n_test)
    floor = b.summaries["krr_test_error"]
    chance = 1.0 - np.max(np.bincount(memory.y_test.astype(int))) / memory.n_test
    for key in ("dsg_test_error", "nystrom_test_error"):
        last = np.flatnonzero(np.isfinite(b.table[key]))[-1]
        means = [np.mean([run[side].table[key][last] for run in runs]) for side in (0, 1)]
        assert abs(means[0] - means[1]) < 0.03, key
        for run in runs:
            for side in run:  # learnt: well below chance
                assert side.table[key][last] < 0.5 * (floor + chance), key
    # the distance to the floor and the twin's excess objective fall on both
    for run in (a, b):
        dist = run.table["dsg_floor_distance"]
        assert dist[-1] < dist[0]
        assert np.isfinite(run.table["dsg_twin_excess_objective"]).all()


def test_the_driver_is_close_to_the_in_memory_experiment_on_the_same_rows():
    """3000 × 5 generated rows: the same training and test rows in memory and in parts. The
    RFF baseline is the same draw of features on the same rows, so equal to rounding; DSG
    (random batches in memory, keyed epochs on parts) and the Nyström baseline (recursive
    RLS in memory, keyed uniform landmarks on parts) are statistically close."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=3000)
    data = _partitioned(X, y, 5)
    whole = array_parts(X, y, 1)[0]
    train, test = part_rows(whole, data.plan), part_rows(whole, data.plan, "test")
    memory = Dataset(train.X, train.y, test.X, test.y, data.feature_names, "y")
    params = dict(PARAMS, n_iter=600, rff_max=104, exact_max=0, sigma=2.0)  # 13 × 8
    exp = LearningCurveExperiment()
    a = _last(_run(exp, params, data, Progress()))
    b = _last(exp.run(params, memory, Progress()))
    has = np.isfinite(b.table["rff_test_error"])
    assert has.sum() >= 3
    np.testing.assert_allclose(a.table["rff_test_error"][has], b.table["rff_test_error"][has],
                               rtol=1e-7)
    var = np.var(test.y)
    for key in ("dsg_test_error", "nystrom_test_error"):
        last = np.flatnonzero(np.isfinite(b.table[key]))[-1]
        assert abs(a.table[key][last] - b.table[key][last]) < 0.1 * var, key
    # both learn: DSG's final error well below the variance and within 15 % of memory's
    assert a.table["dsg_test_error"][-1] < 0.5 * var
    assert a.table["dsg_test_error"][-1] == pytest.approx(b.table["dsg_test_error"][-1],
                                                          rel=0.15)
    assert a.summaries["dsg_test_error"] == a.table["dsg_test_error"][-1]
    for key in ("task", "loss", "sigma", "lam_exact", "theta", "t0"):
        assert a.summaries[key] == b.summaries[key]


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_the_rff_baseline_goes_beyond_n_features_on_parts_as_in_memory(loss):
    """225 training rows and DSG's final 480 features: past n the RFF baseline comes from
    the n × n Gram matrix of the gathered training rows on parts as in memory (the same
    draw of features, the same rows: equal to rounding), up to n from sums or features."""
    X, y = _data(300)
    labels = y if loss == "squared" else np.where(y > np.median(y), 1.0, -1.0)
    data = _partitioned(X, labels, 4)
    data.task = "regression" if loss == "squared" else "classification"
    memory = _memory_twin(data, X, labels)
    params = dict(PARAMS, loss=loss, n_iter=60, features_per_iter=8, points=12, sigma=2.0,
                  exact_max=0)
    exp = LearningCurveExperiment()
    a = _last(_run(exp, params, data, Progress()))
    b = _last(exp.run(params, memory, Progress()))
    beyond = a.table["n_features"] > data.n_train
    assert beyond.sum() >= 2 and a.summaries["rff_max_features"] == 480
    assert np.isfinite(a.table["rff_test_error"]).all()
    np.testing.assert_allclose(a.table["rff_test_error"], b.table["rff_test_error"],
                               rtol=1e-6, atol=1e-9)
    assert np.isnan(a.table["nystrom_test_error"][beyond]).all()  # s ≤ n landmarks
    assert np.isnan(a.table["krr_test_error"]).all()  # exact_max = 0: no floor
