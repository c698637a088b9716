"""One data path: the same rows as a ``.npy`` file, a CSV, one Parquet file read whole and
sixteen Parquet files of unequal sizes kept in their partitions give the same split (cut,
test count, rows dropped), the same filling and scaling (bit for bit) and the same prepared
training and test rows in global row order — because a table in memory is split and
prepared by the code partitions use (column statistics over canonical blocks), and held as
one part (:class:`~kernel_lab.core.rows.mapreduce.MemoryPart`) that every computation over
parts reads unchanged. Rows are checked with missing cells, a constant column, a text
target and ``drop_nan``; a folder just over and just under the size at which it is loaded
rather than kept gives the same test rows. The row block is 256, so 3,000 rows make 12
blocks, most straddling a file boundary."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from kernel_lab.core.errors import DataError
from kernel_lab.core.rows import (
    LocalParts,
    MemoryPart,
    PartitionedData,
    RowPlan,
    align_parts,
    array_parts,
    blocks,
    keyed_subset,
    reduce_blocks,
    take_rows,
)
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.data import lazy, split, text
from kernel_lab.data.source import DataSource
from kernel_lab.data.split import dataset_from_table
from kernel_lab.data.table import Table

N, P, SEED, BLOCK = 3_000, 5, 11, 256
#: Rows per file of the 16-file folder: unequal, with 1-row files and files over a block.
SIZES = [1, 900, 17, 300, 1, 250, 64, 333, 5, 400, 20, 128, 77, 200, 5, 299]
NAMES = [f"x{j + 1}" for j in range(P)]
LEVELS = np.array(["apple", "banana", "cherry"], dtype=object)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "ROW_BLOCK", BLOCK)


def _rows(variant: str) -> tuple[np.ndarray, np.ndarray]:
    """3,000 rows: 30 missing cells in x3, a constant column x5; ``drop`` adds 12 rows
    with a non-finite value (NaN or inf feature, NaN target) for ``drop_nan``."""
    rng = np.random.default_rng(43)
    X = rng.uniform(-1, 1, size=(N, P)) * np.arange(1, P + 1) + np.arange(P)
    X[:, 4] = 2.5
    if variant != "clean":
        X[rng.choice(N, 30, replace=False), 2] = np.nan
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=N)
    if variant == "drop":
        bad = rng.choice(N, 12, replace=False)
        X[bad[:5], 0] = np.nan
        X[bad[5:8], 3] = np.inf
        y[bad[8:]] = np.nan
    return X, y


def _frame(X: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(X, columns=NAMES)
    frame["y"] = y
    return frame


def _sources(root, variant: str) -> tuple[dict[str, str], np.ndarray, np.ndarray]:
    """The rows as .npy (numeric targets), CSV, one Parquet file and 16 Parquet files."""
    X, y = _rows(variant)
    target: np.ndarray = y
    if variant == "text":
        target = LEVELS[np.digitize(y, np.quantile(y, [0.3, 0.7]))]
    frame = _frame(X, target)
    root.mkdir()
    out = {"csv": str(root / "rows.csv")}
    frame.to_csv(out["csv"], index=False, float_format="%.17g")
    if variant != "text":
        out["npy"] = str(root / "rows.npy")
        np.save(out["npy"], np.column_stack([X, y]))
    one = root / "one"
    one.mkdir()
    frame.to_parquet(one / "all.parquet", index=False)
    many = root / "many"
    many.mkdir()
    cuts = np.concatenate([[0], np.cumsum(SIZES)])
    assert cuts[-1] == N
    for k, (a, b) in enumerate(itertools.pairwise(cuts)):
        frame.iloc[a:b].to_parquet(many / f"part.{k:02d}.parquet", index=False)
    out["one"], out["many"] = str(one), str(many)
    return out, X, y


OPTIONS = {"csv": "", "npy": ",target=-1", "one": ",partitions=load",
           "many": ",partitions=keep"}


def _open(path: str, kind: str, variant: str) -> Dataset | PartitionedData:
    drop = ",drop_nan=true" if variant == "drop" else ""
    return DataSource.from_spec(f"{path}:test_fraction=0.3{OPTIONS[kind]}{drop}").open(SEED)


def _gathered(data: Dataset | PartitionedData, which: str):
    """The prepared rows of a data set in global order, through its parts (a gather)."""
    index = np.flatnonzero(data.plan.which(np.arange(data.plan.n), which))
    return take_rows(data.parts, data.plan, index, which)


@pytest.mark.parametrize("variant", ["fill", "text", "drop", "clean"])
def test_every_source_gives_the_same_plan_and_prepared_rows(tmp_path, monkeypatch, variant):
    if variant == "clean":  # every value present: the table's rows are gathered once and
        # their statistics computed from the gathered blocks; the CSV is read as a large
        # file is (pandas from the file, only its head in Python)
        monkeypatch.setattr(text, "BIG_TEXT", 1024)
        monkeypatch.setattr(text, "HEAD_BYTES", 4096)
        # the general path (column statistics of the table, then a second gather) unused
        monkeypatch.setattr(split, "column_stats", None)
    paths, X, _ = _sources(tmp_path / "d", variant)
    got = {kind: _open(path, kind, variant) for kind, path in paths.items()}
    kept = got.pop("many")
    assert isinstance(kept, PartitionedData) and len(kept.parts.parts) > 1
    ref = kept.plan
    assert ref.scale is not None and ref.scale[4] == 1.0  # the constant column: scale 1
    # drop_nan leaves out every row with a missing cell: nothing is left to fill
    assert (ref.fill is None) == (variant in ("drop", "clean"))
    assert (ref.n_dropped > 0) == (variant == "drop")
    for kind, ds in got.items():
        assert isinstance(ds, Dataset), kind
        plan = ds.plan
        assert (plan.n, plan.n_test, plan.cut, plan.seed) == (ref.n, ref.n_test, ref.cut,
                                                              ref.seed), kind
        for name in ("dropped", "fill", "mean", "scale"):
            a, b = getattr(plan, name), getattr(ref, name)
            assert (a is None) == (b is None), (kind, name)
            if a is not None:
                assert np.array_equal(a, b), (kind, name)
        for which, X_held, y_held, i_held in (
                ("train", ds.X_train, ds.y_train, ds.i_train),
                ("test", ds.X_test, ds.y_test, ds.i_test)):
            rows = _gathered(kept, which)
            assert np.array_equal(i_held, rows.index), (kind, which)
            assert np.array_equal(X_held, rows.X), (kind, which)
            assert np.array_equal(y_held, rows.y), (kind, which)
            # the in-memory data set's own part gives the very arrays back (views)
            mine = _gathered(ds, which)
            assert np.array_equal(mine.X, X_held) and np.array_equal(mine.index, i_held)
        assert ds.task == kept.task and ds.classes == kept.classes, kind
    # against an independent reference: the test rows are the round(0.3 · kept) kept rows
    # with the smallest split keys, and a filled cell holds the training rows' mean
    ds = got["csv"]
    keep = np.ones(N, dtype=bool)
    if ds.plan.dropped is not None:
        keep[ds.plan.dropped] = False
    rows = np.flatnonzero(keep)
    order = np.argsort(rowkeys.keys(SEED, rowkeys.SPLIT, rows))
    test = np.sort(rows[order[:round(0.3 * rows.size)]])
    assert np.array_equal(ds.i_test, test)
    if variant == "drop":
        assert np.array_equal(ds.plan.dropped, np.flatnonzero(
            ~(np.isfinite(X).all(axis=1) & np.isfinite(_rows(variant)[1]))))
        return
    train = np.setdiff1d(rows, test)
    if variant == "clean":  # the standardisation against numpy's own statistics
        np.testing.assert_allclose(ds.plan.mean, X[train].mean(axis=0), rtol=1e-13)
        np.testing.assert_allclose(ds.plan.scale[:4], X[train, :4].std(axis=0), rtol=1e-12)
        np.testing.assert_allclose(ds.X_test, (X[test] - ds.plan.mean) / ds.plan.scale,
                                   rtol=0, atol=1e-12)
        return
    column = X[train, 2]
    mean = column[~np.isnan(column)].mean()
    np.testing.assert_allclose(ds.plan.fill[2], mean, rtol=1e-12)
    holes = np.isnan(column)
    np.testing.assert_allclose(ds.X_train[holes, 2],
                               (mean - ds.plan.mean[2]) / ds.plan.scale[2], atol=1e-12)


def test_a_folder_over_and_under_the_loading_size_gives_the_same_test_rows(tmp_path,
                                                                          monkeypatch):
    paths, _, _ = _sources(tmp_path / "d", "fill")
    folder = paths["many"]
    spec = f"{folder}:test_fraction=0.3"
    nbytes = N * (P + 1) * 8  # rows × (columns + 1) × 8: the size the rule reads
    row = (P + 1) * 8
    got = {}
    for limit in (nbytes + row, nbytes - row):  # one row over, one row under
        monkeypatch.setattr(lazy, "WHOLE_BYTES", limit)
        got[limit] = DataSource.from_spec(spec).open(SEED)
    loaded, kept = got[nbytes + row], got[nbytes - row]
    assert isinstance(loaded, Dataset) and isinstance(kept, PartitionedData)
    everything = np.arange(N)
    assert np.array_equal(loaded.plan.is_test(everything), kept.plan.is_test(everything))
    assert np.array_equal(loaded.i_test, np.flatnonzero(kept.plan.is_test(everything)))
    assert np.array_equal(loaded.X_test, _gathered(kept, "test").X)


# -- a data set in memory is one part ------------------------------------------------------
def _block_sums(rows, width: int) -> np.ndarray:
    """Per block: the sums of X, of y, and of XᵀX (a matrix product: its bits depend on
    the block's rows), and the number of rows."""
    if rows.index.size == 0:
        return np.zeros(width + 1 + width * width + 1)
    return np.concatenate([rows.X.sum(axis=0), [rows.y.sum()], (rows.X.T @ rows.X).ravel(),
                           [rows.index.size]])


def _memory_and_pieces(variant: str):
    X, y = _rows(variant)
    table = Table(X.copy(), y.copy(), list(NAMES), "y")
    if variant == "drop":
        bad = ~(np.isfinite(X).all(axis=1) & np.isfinite(y))
        table.dropped = np.flatnonzero(bad)
    ds = dataset_from_table(table, name="t", test_fraction=0.3, seed=SEED, standardize=True)
    pieces = LocalParts(align_parts(array_parts(X, y, SIZES), N, BLOCK))
    return ds, pieces


@pytest.mark.parametrize("variant", ["fill", "drop"])
def test_the_memory_part_reduces_gathers_and_samples_as_sixteen_array_parts(variant):
    ds, pieces = _memory_and_pieces(variant)
    (part,) = ds.parts.parts
    assert isinstance(part, MemoryPart) and part.rows == N and part.start == 0
    assert len(pieces.parts) > 1
    for which in ("train", "test"):
        mine = reduce_blocks(ds.parts, _block_sums, ds.plan, P, which=which)
        theirs = reduce_blocks(pieces, _block_sums, ds.plan, P, which=which)
        assert np.array_equal(mine, theirs), which
        for stream, k in ((rowkeys.EVAL_SUBSET, 100), (rowkeys.VIEW_SUBSET, 7)):
            a = keyed_subset(ds.parts, ds.plan, stream, k, which)
            b = keyed_subset(pieces, ds.plan, stream, k, which)
            assert np.array_equal(a, b)
            got, ref = take_rows(ds.parts, ds.plan, a, which), take_rows(pieces, ds.plan, a,
                                                                          which)
            assert np.array_equal(got.X, ref.X) and np.array_equal(got.y, ref.y)
            assert np.array_equal(got.index, a)
    # part_rows hands out the arrays themselves: no copy
    from kernel_lab.core.rows import part_rows

    held = part_rows(part, ds.plan)
    assert np.shares_memory(held.X, ds.X_train) and held.X.shape == ds.X_train.shape
    # a plan of another split is refused, not read with the wrong rows
    with pytest.raises(ValueError, match="otherwise"):
        part_rows(part, RowPlan.split(SEED + 1, N, 0.3))
    with pytest.raises(TypeError, match="part_rows"):
        part.read()


def test_plain_arrays_and_generated_data_are_a_given_split():
    X = np.arange(20.0).reshape(10, 2)
    ds = Dataset(X[:7], np.arange(7.0), X[7:], np.arange(7.0, 10.0), ["a", "b"], "y")
    assert ds.plan.given_test_start == 7 and ds.plan.cut is None
    assert ds.plan.is_test(np.arange(10)).tolist() == [False] * 7 + [True] * 3
    assert ds.i_train.tolist() == list(range(7)) and ds.i_test.tolist() == [7, 8, 9]
    got = take_rows(ds.parts, ds.plan, np.arange(10), "test")
    assert np.array_equal(got.X, X[7:]) and np.array_equal(got.index, [7, 8, 9])
    gen = DataSource.from_spec("gaussian:n=30,n_test=12,p=3").load(seed=4)
    assert gen.plan.given_test_start == 30 and gen.plan.n_test == 12
    assert gen.plan.seed == 4 and gen.source is not None


def test_the_memory_part_travels_to_a_process_pool():
    from kernel_lab.engine.pool_parts import PoolParts

    ds, _ = _memory_and_pieces("fill")
    pool = PoolParts(ds.parts.parts, 1)
    try:
        got = reduce_blocks(pool, _block_sums, ds.plan, P)
    finally:
        pool.close()
    assert np.array_equal(got, reduce_blocks(ds.parts, _block_sums, ds.plan, P))


def _split_by_parts(X: np.ndarray, y: np.ndarray, test_fraction: float):
    """The reference: the plan, column statistics and prepared rows of ``X, y`` cut into
    sixteen unequal array parts (the partitioned code: statistics per block over the
    parts, every row prepared by :meth:`RowPlan.prepared`)."""
    from kernel_lab.core.rows.prepare import column_stats, prepared_plan

    pieces = LocalParts(align_parts(array_parts(X, y, SIZES), N, BLOCK))
    plan = RowPlan.split(SEED, N, test_fraction)
    plan, _ = prepared_plan(plan, column_stats(pieces, plan))
    return plan, {which: take_rows(pieces, plan, np.flatnonzero(
        plan.which(np.arange(N), which)), which) for which in ("train", "test")}


@pytest.mark.parametrize("layout", ["C", "F", "pandas"])
@pytest.mark.parametrize("test_fraction", [0.3, 0.0])
def test_a_clean_table_is_gathered_once_with_the_bits_of_the_parts(monkeypatch, layout,
                                                                   test_fraction):
    """Every value present: the training rows are gathered block by block and their
    statistics computed from the gathered rows — the plan and the rows equal, bit for
    bit, those of the same rows in sixteen parts; ``column_stats`` is not run."""
    X, y = _rows("clean")
    M = {"C": np.ascontiguousarray(np.column_stack([X, y])),
         "F": np.asfortranarray(np.column_stack([X, y])),
         "pandas": _frame(X, y).to_numpy()}[layout]
    plan, ref = _split_by_parts(X, y, test_fraction)
    monkeypatch.setattr(split, "column_stats", None)  # the general path is not taken
    ds = dataset_from_table(Table(M[:, :P], M[:, P].copy(), list(NAMES), "y"), name="t",
                            test_fraction=test_fraction, seed=SEED, standardize=True)
    for name in ("cut", "n_test", "mean", "scale", "fill"):
        a, b = getattr(ds.plan, name), getattr(plan, name)
        assert (a is None and b is None) or np.array_equal(a, b), name
    for which, X_held, y_held, i_held in (("train", ds.X_train, ds.y_train, ds.i_train),
                                          ("test", ds.X_test, ds.y_test, ds.i_test)):
        assert X_held.flags.c_contiguous and X_held.dtype == np.float64
        assert np.array_equal(i_held, ref[which].index), which
        # (a gather of no rows gives a 0 × 0 array)
        assert np.array_equal(X_held, ref[which].X.reshape(-1, P)), which
        assert np.array_equal(y_held, ref[which].y), which


@pytest.mark.parametrize("where", ["train", "test"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_table_found_unclean_while_gathered_takes_the_general_path(where, value):
    """A missing or infinite cell found among the training or the test rows while they
    are gathered: the table is split, filled or refused by the general path, as before."""
    X, y = _rows("clean")
    plan = RowPlan.split(SEED, N, 0.3)
    row = int(np.flatnonzero(plan.which(np.arange(N), where))[-1])
    X[row, 1] = value
    table = Table(np.asfortranarray(X), y, list(NAMES), "y")
    if value == np.inf:
        with pytest.raises(DataError, match="x2"):
            dataset_from_table(table, name="t", test_fraction=0.3, seed=SEED,
                               standardize=True)
        return
    ds = dataset_from_table(table, name="t", test_fraction=0.3, seed=SEED, standardize=True)
    ref_plan, ref = _split_by_parts(X, y, 0.3)
    assert ds.plan.fill is not None and np.array_equal(ds.plan.fill, ref_plan.fill)
    assert np.array_equal(ds.plan.scale, ref_plan.scale)
    assert np.array_equal(ds.X_train, ref["train"].X)
    assert np.array_equal(ds.X_test, ref["test"].X)
    assert any("x2" in w for w in ds.warnings)  # the filled cell is said


@pytest.mark.parametrize("n", [2, 3, 10, 1_000, 70_001])
def test_a_tables_split_from_keys_computed_once_is_the_rowplan_split(n):
    """The cut found among the keys held in memory is the one :meth:`RowPlan.split`
    finds by counting keys in ranges, and the rows below it are its test rows."""
    from kernel_lab.data.split import keyed_split

    for seed, fraction in itertools.product((0, 7, 2**40 + 3), (0.0, 0.01, 0.25, 0.5)):
        if n - max(round(fraction * n), 1 if fraction else 0) < 2:
            continue
        plan, i_train, i_test = keyed_split(seed, n, fraction)
        ref = RowPlan.split(seed, n, fraction)
        assert (plan.seed, plan.n, plan.n_test, plan.cut, plan.dropped) == (
            ref.seed, ref.n, ref.n_test, ref.cut, ref.dropped)
        test = ref.is_test(np.arange(n))
        assert np.array_equal(i_test, np.flatnonzero(test))
        assert np.array_equal(i_train, np.flatnonzero(~test))
    dropped = np.arange(0, n, 3)
    if n - dropped.size >= 4:
        plan, i_train, i_test = keyed_split(5, n, 0.25, dropped=dropped)
        ref = RowPlan.split(5, n, 0.25, dropped=dropped)
        assert plan.cut == ref.cut and np.array_equal(plan.dropped, dropped)
        assert np.intersect1d(np.union1d(i_train, i_test), dropped).size == 0
        assert i_train.size + i_test.size == n - dropped.size


def test_the_leakage_sample_of_a_table_is_the_one_its_parts_give(monkeypatch):
    """More training rows than the leakage check ranks: the keyed sample is taken from the
    held training indices and arrays, and the warning is the one the same rule gives
    through the parts (keyed_subset, take_rows) — the route data kept in partitions take."""
    from kernel_lab.data.leakage import leakage_warning

    monkeypatch.setattr(split, "LEAKAGE_ROWS", 500)
    ranked = []  # the rows the check ranks

    def spy(X, y, *args, **kwargs):
        ranked.append((X, y))
        return leakage_warning(X, y, *args, **kwargs)

    monkeypatch.setattr(split, "leakage_warning", spy)
    X, y = _rows("clean")
    X[:, 1] = y ** 3 + 1e-3 * np.random.default_rng(2).normal(size=N)  # derived from y
    ds = dataset_from_table(Table(X, y, list(NAMES), "y"), name="t", test_fraction=0.3,
                            seed=SEED, standardize=True)
    index = keyed_subset(ds.parts, ds.plan, rowkeys.LEAKAGE, 500)
    got = take_rows(ds.parts, ds.plan, index)
    said = f"a random 500 of the {ds.n_train:,} training rows (chosen per row from the seed)"
    ref = leakage_warning(got.X, got.y, ds.feature_names, "y", rows_said=said)
    assert ref is not None and "'x2'" in ref and "500" in ref
    assert ds.warnings == [ref]
    assert np.array_equal(ranked[0][0], got.X) and np.array_equal(ranked[0][1], got.y)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 8_192 + 300, 20_000])
def test_rows_prepared_in_place_in_tiles_are_the_plans_prepared_rows(n):
    """Rows filled and scaled in place (256 rows at a time seen as one row, and the rest
    one by one) are :meth:`RowPlan.prepared`'s rows to the bit: missing cells filled,
    a constant column at scale 1, any number of rows."""
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, P)) * 10.0 ** rng.integers(-3, 4, size=P)
    X[rng.uniform(size=(n, P)) < 0.01] = np.nan
    X[:, 4] = 2.5  # constant
    mean = np.nanmean(X, axis=0)
    scale = np.nanstd(X, axis=0)
    scale[scale < 1e-12] = 1.0
    plan = RowPlan(SEED, n, 0, None, fill=mean).with_scaling(mean, scale)
    index = np.sort(rng.choice(n, size=max(1, (2 * n) // 3), replace=False))
    for M in (X, np.asfortranarray(X)):
        got, got_y = split.prepared_rows(M, X[:, 0], index, plan)
        assert np.array_equal(got, plan.prepared(X[index]), equal_nan=True)
        assert np.array_equal(got_y, X[index, 0], equal_nan=True)
    held = X[index]  # C order, as gathered; then in place
    split._prepare_in_place([held], plan)
    assert np.array_equal(held, plan.prepared(X[index]))


@pytest.mark.parametrize("order", ["C", "F"])
def test_gathering_rows_of_a_strided_matrix_reads_only_those_rows(order):
    """The feature columns of a matrix that holds the target too (a mapped ``.npy``: a
    view in neither order) are gathered without a copy of the whole matrix (``np.take``
    made one for every block: 19 s to open 1M × 20); the rows are those of indexing."""
    import tracemalloc

    M = np.asarray(np.random.default_rng(0).normal(size=(200_000, P + 1)), order=order)
    X = M[:, :P] if order == "C" else M[:, 1:]
    assert not (X.flags.c_contiguous or X.flags.f_contiguous) or order == "F"
    rows = np.arange(3, 200_000, 2_000)
    out = np.empty((rows.size, P))
    tracemalloc.start()
    try:
        split._gather(X, rows, out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(out, X[rows])
    assert peak < X.nbytes / 20, f"{peak:,} bytes traced to gather {rows.size} rows"
