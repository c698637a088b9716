"""Missing feature cells (NA, empty) are filled by the column's training mean at the split,
with a warning; a missing target or an infinite value is refused; ``drop_nan`` drops
the rows instead; ``nan_policy="error"`` of the reader still refuses every one."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.core.errors import DataError
from kernel_lab.data.read import load_table
from kernel_lab.data.source import DataSource
from kernel_lab.data.split import dataset_from_table
from kernel_lab.data.table import Table


def _table_with_holes(tmp_path, n=200, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 5.0, 0.1] + [0.0, 10.0, -2.0]
    y = X @ [1.0, 0.2, 3.0] + 0.1 * rng.normal(size=n)
    holes = rng.random((n, 3)) < [0.0, 0.1, 0.05]
    lines = ["a,b,c,y"]
    for i in range(n):
        cells = ["NA" if holes[i, j] else repr(float(X[i, j])) for j in range(3)]
        lines.append(",".join([*cells, repr(float(y[i]))]))
    path = tmp_path / "holes.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, X, y, holes


def test_missing_cells_take_the_training_mean_of_their_column(tmp_path):
    path, X, y, holes = _table_with_holes(tmp_path)
    ds = DataSource.from_spec(f"{path}:standardize=false").load(seed=5)
    raw = load_table(path, nan_policy="fill").X  # NaN where the file says NA
    # the same split of the raw rows, by the seed (rows are identified by their target)
    order = {float(v): i for i, v in enumerate(y)}
    train = np.array([order[float(v)] for v in ds.y_train])
    test = np.array([order[float(v)] for v in ds.y_test])
    for j, name in enumerate("abc"):
        observed = raw[train, j][~np.isnan(raw[train, j])]
        mean = observed.mean()  # the training rows only: the test rows never inform it
        np.testing.assert_allclose(ds.X_train[holes[train, j], j], mean, rtol=1e-15)
        np.testing.assert_allclose(ds.X_test[holes[test, j], j], mean, rtol=1e-15)
        kept = ~holes[train, j]
        np.testing.assert_array_equal(ds.X_train[kept, j], X[train, j][kept])
        if holes[:, j].any():
            assert f"{name!r} {int(holes[:, j].sum())}" in ds.warnings[0]
    assert ds.warnings[0].startswith(f"filled {int(holes.sum())} missing values with each "
                                     "column's mean over the training rows")
    assert "'a'" not in ds.warnings[0]  # a column with nothing missing is not named
    assert "drop_nan=true" in ds.warnings[0] and "drop_columns=b,c" in ds.warnings[0]
    assert np.isfinite(ds.X_train).all() and np.isfinite(ds.X_test).all()


def test_standardised_a_filled_cell_is_zero(tmp_path):
    """The standardisation's mean is that of the filled column, which the fill keeps."""
    path, _X, y, holes = _table_with_holes(tmp_path)
    ds = DataSource.from_spec(str(path)).load(seed=5)
    order = {float(v): i for i, v in enumerate(y)}
    train = np.array([order[float(v)] for v in ds.y_train])
    assert holes[train, 1].sum() >= 5
    np.testing.assert_allclose(ds.X_train[holes[train, 1], 1], 0.0, atol=1e-12)
    assert ds.summary()["warnings"][0].startswith("filled")


def test_drop_nan_drops_the_rows_instead(tmp_path):
    path, _X, _y, holes = _table_with_holes(tmp_path)
    ds = DataSource.from_spec(f"{path}:drop_nan=true").load(seed=5)
    assert ds.n_train + ds.n_test == int((~holes.any(axis=1)).sum())
    assert not any(w.startswith("filled") for w in ds.warnings)


def test_the_reader_can_still_refuse_every_missing_value(tmp_path):
    path, *_ = _table_with_holes(tmp_path)
    with pytest.raises(DataError, match=r"rows per column: 'b' \d+, 'c' \d+"):
        load_table(path, nan_policy="error")


def _split(X, names, columns=None):
    """The table's rows, every one a training row but the last (a given fraction)."""
    table = Table(X, np.arange(float(X.shape[0])), list(names), "y", columns=columns)
    return dataset_from_table(table, name="t", test_fraction=0.25, seed=0,
                              standardize=False)


def test_a_column_with_no_training_value_is_refused_by_name():
    X = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan], [1.0, np.nan]])
    with pytest.raises(DataError, match=r"the column 'b' has no value in any training row"
                                        r".*drop_columns=b"):
        _split(X, ["a", "b"])


def test_one_hot_parts_are_named_by_their_file_column():
    X = np.array([[1.0, 0.0, np.nan], [0.0, 1.0, 2.0], [1.0, 0.0, 4.0], [0.0, 1.0, 6.0],
                  [1.0, 0.0, np.nan]])
    ds = _split(X, ["region=N", "region=S", "rooms"], columns=["region", "rooms", "price"])
    said = ds.warnings[0]
    assert "drop_columns=rooms" in said
    present = ~np.isnan(X[ds.i_train, 2])
    mean = X[ds.i_train, 2][present].mean()  # the training rows' mean fills every hole
    for rows, got in ((ds.i_train, ds.X_train), (ds.i_test, ds.X_test)):
        holes = np.isnan(X[rows, 2])
        assert (got[holes, 2] == mean).all()
        np.testing.assert_array_equal(got[~holes], X[rows][~holes])


def test_nothing_missing_is_left_alone():
    X = np.arange(8.0).reshape(4, 2)
    before = X.copy()
    ds = _split(X, ["a", "b"])
    assert not any(w.startswith("filled") for w in ds.warnings)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(ds.X_train, before[ds.i_train])
