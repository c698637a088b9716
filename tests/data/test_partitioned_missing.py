"""Data kept in partitions behave as data in memory for missing values, ``drop_nan``,
constant columns, the subsample and a text target — each checked against a reference
computed independently with numpy over the whole array (the split rebuilt from the row
keys by sorting), or against the CSV reader on the same table."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from kernel_lab.core.errors import DataError
from kernel_lab.core.rows import LocalParts, PartitionedData, RowPlan, part_rows
from kernel_lab.core.rows import keys as rowkeys
from kernel_lab.data.lazy import sample_table
from kernel_lab.data.partitioned import open_partitioned
from kernel_lab.data.read import load_table
from kernel_lab.data.source import DataSource
from kernel_lab.engine.runner import run_experiment

N, P, SEED = 1000, 5, 7
SIZES = [1, 300, 17, 250, 64, 5, 200, 163]  # unequal files, one of a single row
NAMES = [f"x{j + 1}" for j in range(P)]


def _table(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Rows with missing cells in x2 (40) and x4 (9) and a constant column x5."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, P)) * [1.0, 2.0, 0.5, 3.0, 1.0] + [0.0, 1.0, -2.0, 5.0, 0.0]
    X[:, 4] = 2.5
    X[rng.choice(N, 40, replace=False), 1] = np.nan
    X[rng.choice(N, 9, replace=False), 3] = np.nan
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=N)
    return X, y


def _write(folder, X: np.ndarray, y, sizes=SIZES) -> str:
    folder.mkdir()
    frame = pd.DataFrame(X, columns=NAMES)
    frame["y"] = y
    cuts = np.concatenate([[0], np.cumsum(sizes)])
    assert cuts[-1] == len(frame)
    for k, (a, b) in enumerate(itertools.pairwise(cuts)):
        frame.iloc[a:b].to_parquet(folder / f"part.{k}.parquet", index=False)
    return str(folder)


def _open(folder: str, options: str = "", seed: int = SEED) -> PartitionedData:
    data = DataSource.from_spec(f"{folder}:partitions=keep{options}").open(seed)
    assert isinstance(data, PartitionedData)
    return data


def _keyed_test(seed: int, kept: np.ndarray, fraction: float = 0.25) -> np.ndarray:
    """The test rows by their definition: the round(fraction · kept) kept rows with the
    smallest split keys (a full sort: no threshold, no buckets)."""
    rows = np.flatnonzero(kept)
    n_test = max(1, round(fraction * rows.size))
    key = rowkeys.keys(seed, rowkeys.SPLIT, rows)
    test = np.zeros(kept.size, dtype=bool)
    test[rows[np.argsort(key)[:n_test]]] = True
    return test


def _gathered(data: PartitionedData, which: str = "train"):
    got = [part_rows(p, data.plan, which) for p in data.parts.parts]
    return (np.concatenate([r.X for r in got]), np.concatenate([r.y for r in got]),
            np.concatenate([r.index for r in got]))


# -- missing cells: filled with the training mean, then standardised -----------------------
def test_missing_cells_are_filled_with_the_training_mean_and_scaled_as_numpy_does(tmp_path):
    X, y = _table()
    data = _open(_write(tmp_path / "d", X, y))
    test = _keyed_test(SEED, np.ones(N, dtype=bool))
    train = ~test
    A = X[train]
    mean = np.nanmean(A, axis=0)
    m2 = np.nansum((A - mean) ** 2, axis=0)  # filled cells add nothing
    scale = np.sqrt(m2 / train.sum())
    assert scale[4] == 0.0
    scale[4] = 1.0  # a constant column keeps scale 1, as in memory
    np.testing.assert_allclose(data.plan.mean, mean, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(data.plan.scale, scale, rtol=1e-12)
    filled = np.where(np.isnan(X), mean, X)  # test rows filled with the training mean too
    for which, rows in (("train", train), ("test", test)):
        got_X, got_y, index = _gathered(data, which)
        np.testing.assert_array_equal(index, np.flatnonzero(rows))
        np.testing.assert_array_equal(got_y, y[rows])
        np.testing.assert_allclose(got_X, (filled[rows] - mean) / scale, rtol=1e-12,
                                   atol=1e-13)
    # fill then standardise in memory gives the same columns' statistics
    Z = np.where(np.isnan(A), mean, A)
    np.testing.assert_allclose(Z.std(axis=0)[:4], data.plan.scale[:4], rtol=1e-12)
    assert any("constant column 'x5' with scale 1" in note for note in data.notes)


def test_the_fill_warning_is_the_in_memory_text(tmp_path):
    X, y = _table()
    folder = _write(tmp_path / "d", X, y)
    frame = pd.DataFrame(X, columns=NAMES)
    frame["y"] = y
    frame.to_csv(tmp_path / "t.csv", index=False)
    memory = DataSource.from_spec(str(tmp_path / "t.csv")).load(SEED)
    kept = _open(folder)
    said = "filled 49 missing values with each column's mean over the training rows " \
           "('x2' 40, 'x4' 9)"
    assert memory.warnings[0].startswith(said)
    assert kept.warnings[0] == memory.warnings[0]


def test_without_standardising_missing_cells_are_still_filled(tmp_path):
    X, y = _table()
    data = _open(_write(tmp_path / "d", X, y), ",standardize=false")
    train = ~_keyed_test(SEED, np.ones(N, dtype=bool))
    mean = np.nanmean(X[train], axis=0)
    got_X, _, index = _gathered(data)
    np.testing.assert_array_equal(index, np.flatnonzero(train))
    np.testing.assert_allclose(got_X, np.where(np.isnan(X), mean, X)[train], rtol=1e-12)
    assert data.plan.scale is None


def test_a_column_without_a_training_value_is_refused_by_name(tmp_path):
    X, y = _table()
    train = ~_keyed_test(SEED, np.ones(N, dtype=bool))
    X[train, 2] = np.nan  # values in the test rows only
    with pytest.raises(DataError, match=r"the column 'x3' has no value in any training row"
                       r".*drop_columns=x3"):
        _open(_write(tmp_path / "d", X, y))


def test_a_missing_target_and_an_infinite_value_are_refused_naming_file_and_row(tmp_path):
    X, y = _table()
    y = y.copy()
    y[[600, 900]] = np.nan
    starts = np.concatenate([[0], np.cumsum(SIZES)])
    k = int(np.searchsorted(starts, 600, side="right")) - 1
    with pytest.raises(DataError) as err:
        _open(_write(tmp_path / "a", X, y))
    text = str(err.value)
    assert text.startswith(f"part.{k}.parquet (rows {starts[k]:,}–{starts[k + 1] - 1:,}): "
                           f"row 600 (row {600 - starts[k] + 1} of this partition): ")
    assert "the target 'y' is missing or non-finite in 2 of 1000 rows (the first here)" in text
    assert "drop_nan=true" in text
    X2, y2 = _table()
    X2[17, 0] = np.inf
    with pytest.raises(DataError, match=r"part\.1\.parquet .*row 17 .*infinite values in "
                                        r"'x1' \(here\).*drop_columns=x1"):
        _open(_write(tmp_path / "b", X2, y2))


# -- drop_nan ---------------------------------------------------------------------------
def test_drop_nan_leaves_rows_out_of_the_split_without_shifting_indices(tmp_path):
    X, y = _table()
    y = y.copy()
    y[5] = np.nan
    X[11, 2] = -np.inf
    data = _open(_write(tmp_path / "d", X, y), ",drop_nan=true")
    kept = np.isfinite(X).all(axis=1) & np.isfinite(y)
    test = _keyed_test(SEED, kept)
    assert test.sum() == round(0.25 * kept.sum())
    train = kept & ~test
    rows = np.arange(N)
    np.testing.assert_array_equal(data.plan.is_test(rows), test)
    np.testing.assert_array_equal(data.plan.is_train(rows), train)
    assert data.n_train == train.sum() and data.n_test == test.sum()
    np.testing.assert_array_equal(data.plan.dropped, np.flatnonzero(~kept))
    got_X, got_y, index = _gathered(data)
    np.testing.assert_array_equal(index, np.flatnonzero(train))  # global indices kept
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std[4] = 1.0
    np.testing.assert_allclose(got_X, (X[train] - mean) / std, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(got_y, y[train])
    assert f"dropped {N - kept.sum()} of {N} rows with missing or non-finite values" in \
        data.notes
    assert not any(w.startswith("filled") for w in data.warnings)


def test_threshold_leaves_out_the_excluded_rows():
    rng = np.random.default_rng(0)
    for n, k, gone in ((50, 7, 10), (5000, 1200, 300), (5000, 4700, 300)):
        exclude = np.sort(rng.choice(n, gone, replace=False))
        cut = rowkeys.threshold(4, rowkeys.SPLIT, n, k, chunk=999, exclude=exclude)
        rows = np.setdiff1d(np.arange(n), exclude)
        key = np.sort(rowkeys.keys(4, rowkeys.SPLIT, rows))
        assert cut == key[k - 1]
    with pytest.raises(ValueError, match="cannot select 41 of 40"):
        rowkeys.threshold(4, rowkeys.SPLIT, 50, 41, exclude=np.arange(10))


def test_every_row_dropped_is_refused(tmp_path):
    X, y = _table()
    X[:, 0] = np.nan
    with pytest.raises(DataError, match="every row has a missing or non-finite value"):
        _open(_write(tmp_path / "d", X, y), ",drop_nan=true")


def test_nan_handling_gives_the_same_run_however_the_rows_are_cut(tmp_path):
    """Fill, drop and a constant column in a whole nystrom run: eight unequal files and
    one file hold the same rows and give the same table."""
    X, y = _table()
    X[3, 0] = np.inf
    params = {"samplers": ["uniform", "rp-cholesky"], "sizes": "10,30", "trials": 2,
              "eval_points": 200, "lam": 0.1, "sigma": 1.5, "seed": 3}
    many = _write(tmp_path / "many", X, y)
    one = _write(tmp_path / "one", X, y, [N])
    a = run_experiment("nystrom", params, data=f"{many}:partitions=keep,drop_nan=1")
    b = run_experiment("nystrom", params, data=f"{one}:partitions=keep,drop_nan=1")
    kept = int((np.isfinite(X).all(axis=1) & np.isfinite(y)).sum())
    assert a.data["n_train"] == b.data["n_train"] == kept - round(0.25 * kept)
    for name in a.table:
        if not name.startswith("time"):
            # sums over the parts add in another tree: equal to the 1e-8
            np.testing.assert_allclose(a.table[name], b.table[name], rtol=1e-8,
                                       err_msg=name)


def test_a_learning_curve_on_filled_cells_is_the_same_however_the_rows_are_cut(tmp_path):
    X, y = _table()
    params = {"loss": "squared", "n_iter": 60, "batch_size": 16, "features_per_iter": 4,
              "points": 4, "sigma": 1.5, "seed": 3}
    many = _write(tmp_path / "many", X, y)
    one = _write(tmp_path / "one", X, y, [N])
    a = run_experiment("learning-curve", params, data=f"{many}:partitions=keep")
    b = run_experiment("learning-curve", params, data=f"{one}:partitions=keep")
    assert a.data["warnings"][0].startswith("filled 49 missing values")
    assert any("constant column 'x5'" in note for note in a.data["notes"])
    for name in a.table:
        if not name.startswith("time"):
            # sums over the parts add in another tree: equal to the 1e-8
            np.testing.assert_allclose(a.table[name], b.table[name], rtol=1e-8,
                                       err_msg=name)


# -- the subsample: keyed, and stratified for a class target -------------------------------
def test_a_class_target_is_subsampled_by_class_shares_with_the_smallest_keys(tmp_path):
    X, _ = _table()
    X = np.nan_to_num(X)
    labels = np.array(["a"] * 500 + ["b"] * 301 + ["c"] * 199, dtype=object)
    labels = labels[np.random.default_rng(1).permutation(N)]
    folder = tmp_path / "d"
    _write(folder, X, labels)
    source = open_partitioned(folder)
    assert source.task == "multiclass" and source.classes == ["a", "b", "c"]
    table = sample_table(source, LocalParts(source.parts), 100, seed=9)
    # shares 50, 30.1, 19.9: floors 50, 30, 19 and the one left to the largest fraction
    want = {"a": 50, "b": 30, "c": 20}
    chosen = []
    for c, name in enumerate(source.classes):
        rows = np.flatnonzero(labels == name)
        key = rowkeys.keys(9, rowkeys.SUBSAMPLE, rows)
        chosen.append(rows[np.argsort(key)[:want[name]]])
        assert (table.y == c).sum() == want[name]
    index = np.sort(np.concatenate(chosen))
    np.testing.assert_array_equal(table.X, X[index])
    np.testing.assert_array_equal(table.y, [source.classes.index(v) for v in labels[index]])
    assert table.classes == ["a", "b", "c"]


def test_a_two_valued_target_is_subsampled_by_class_too(tmp_path):
    X = np.nan_to_num(_table()[0])
    y = np.where(np.arange(N) % 10 < 7, -1.0, 1.0)  # 700 and 300
    source = open_partitioned(_write(tmp_path / "d", X, y))
    table = sample_table(source, LocalParts(source.parts), 51, seed=2)
    # shares 35.7 and 15.3: floors 35 and 15, the one left to the larger fraction (0.7)
    chosen = []
    for value, k in ((-1.0, 36), (1.0, 15)):
        rows = np.flatnonzero(y == value)
        chosen.append(rows[np.argsort(rowkeys.keys(2, rowkeys.SUBSAMPLE, rows))[:k]])
    index = np.sort(np.concatenate(chosen))
    np.testing.assert_array_equal(table.y, y[index])
    np.testing.assert_array_equal(table.X, X[index])


def test_a_numeric_target_subsample_is_the_smallest_keys_and_keeps_missing_cells(tmp_path):
    X, y = _table()
    source = open_partitioned(_write(tmp_path / "d", X, y))
    table = sample_table(source, LocalParts(source.parts), 120, seed=9)
    index = np.sort(np.argsort(rowkeys.keys(9, rowkeys.SUBSAMPLE, np.arange(N)))[:120])
    np.testing.assert_array_equal(table.X, X[index])  # NaN where the file has NaN
    np.testing.assert_array_equal(table.y, y[index])
    dropped = sample_table(source, LocalParts(source.parts), 120, seed=9, drop_nan=True)
    kept = np.flatnonzero(np.isfinite(X).all(axis=1))
    index = np.sort(kept[np.argsort(rowkeys.keys(9, rowkeys.SUBSAMPLE, kept))[:120]])
    np.testing.assert_array_equal(dropped.X, X[index])
    assert f"used a random 120 of {kept.size:,} rows" in dropped.notes[-1]


# -- a text target --------------------------------------------------------------------------
@pytest.mark.parametrize("levels", [["setosa", " versicolor", "virginica"], ["no", "yes"]])
def test_a_text_target_has_the_levels_and_codes_of_the_csv_reader(tmp_path, levels):
    X = np.nan_to_num(_table()[0])  # the CSV's dropped rows: those of a missing target
    rng = np.random.default_rng(2)
    y = np.array(levels, dtype=object)[rng.integers(0, len(levels), N)]
    y[[4, 70]] = "NA"  # missing, as the CSV reader reads them
    y[300] = ""
    y[301] = None
    _write(tmp_path / "d", X, y)
    frame = pd.DataFrame(X, columns=NAMES)
    frame["y"] = y
    frame.to_csv(tmp_path / "t.csv", index=False)
    csv = load_table(tmp_path / "t.csv", nan_policy="drop")
    source = open_partitioned(tmp_path / "d")
    assert source.classes == csv.classes
    assert any(note in source.notes for note in csv.notes if note.startswith("text target"))
    codes = np.concatenate([p.read_target() for p in source.parts])
    assert np.isnan(codes[[4, 70, 300, 301]]).all()
    np.testing.assert_array_equal(codes[np.isfinite(codes)], csv.y[csv.kept()])
    assert source.task == ("multiclass" if len(levels) > 2 else "classification")
    whole = DataSource.from_spec(f"{tmp_path / 'd'}:partitions=load,drop_nan=1").load(SEED)
    assert whole.task == source.task and whole.classes == csv.classes


def test_a_categorical_text_target_reads_as_its_strings(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    frame = pd.DataFrame({"x1": np.arange(6.0), "y": pd.Categorical(list("abcabc"))})
    frame.iloc[:4].to_parquet(folder / "p0.parquet", index=False)
    frame.iloc[4:].to_parquet(folder / "p1.parquet", index=False)
    source = open_partitioned(folder)
    assert source.classes == ["a", "b", "c"]
    np.testing.assert_array_equal(np.concatenate([p.read_target() for p in source.parts]),
                                  [0, 1, 2, 0, 1, 2])


def test_a_text_target_runs_classification_in_partitions(tmp_path):
    X, y = _table()
    labels = np.where(y > np.median(y), "high", "low").astype(object)
    data = _open(_write(tmp_path / "d", np.nan_to_num(X), labels))
    assert data.task == "classification" and data.summary()["classes"] is None
    _, got_y, index = _gathered(data)
    # levels sorted: "low" second, so +1 (as the CSV reader codes two levels)
    np.testing.assert_array_equal(got_y, np.where(labels[index] == "low", 1.0, -1.0))


def test_a_part_read_with_a_plan_that_does_not_fill_refuses_a_missing_value(tmp_path):
    X, y = _table()
    source = open_partitioned(_write(tmp_path / "d", X, y))
    row = int(np.flatnonzero(np.isnan(X).any(axis=1))[0])
    k = next(p for p in source.parts if p.start <= row < p.start + p.rows)
    with pytest.raises(DataError, match=rf"part\.{k.index}\.parquet .*: row {row} "):
        part_rows(k, RowPlan(0, N, 0, None))
