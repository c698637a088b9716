"""Target leakage: the vectorised Spearman correlation agrees with scipy's, ties
included; a feature derived from the target (its logarithm, its bounds) is named with
the option that drops it, in the data set, the result and the command line's output;
dropping it removes the warning; nothing is dropped silently."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from kernel_lab.cli import main
from kernel_lab.core.leakage import (
    LEAKAGE_RHO,
    MAX_RANK_ROWS,
    average_ranks,
    leaking_columns,
    spearman_with_target,
)
from kernel_lab.data.source import DataSource


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spearman_matches_scipy_with_ties_and_constants(seed):
    rng = np.random.default_rng(seed)
    n = 300
    y = rng.normal(size=n)
    X = np.column_stack([
        y + 0.1 * rng.normal(size=n),        # strong
        rng.normal(size=n),                  # none
        np.round(2 * y),                     # many ties
        rng.integers(0, 3, n).astype(float),  # ties only
        -np.exp(y),                          # monotone, decreasing
    ])
    got = spearman_with_target(X, y)
    want = [spearmanr(X[:, j], y).statistic for j in range(X.shape[1])]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert got[4] == pytest.approx(-1.0)
    # a constant column (and a constant target) has no correlation: NaN, not reported
    with np.errstate(all="ignore"):
        assert np.isnan(spearman_with_target(np.ones((5, 1)), np.arange(5.0))).all()
    ties = np.round(y)  # a target with ties, too
    np.testing.assert_allclose(spearman_with_target(X, ties),
                               [spearmanr(X[:, j], ties).statistic for j in range(5)],
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 5000])
def test_average_ranks_are_scipys_rankdata_to_the_bit_and_in_its_layout(n):
    """The ranks the leakage check uses are scipy's (ties averaged, a column with a NaN
    NaN whole, -0.0 tied with 0.0), and the transposed call gives rankdata(X, axis=0)'s
    column-major layout, on which the sums of the correlation depend."""
    rng = np.random.default_rng(n)
    X = np.column_stack([
        rng.uniform(size=n),                     # no tie
        np.round(3 * rng.normal(size=n)),        # many ties
        np.ones(n),                              # one group
        np.where(rng.uniform(size=n) < 0.5, -0.0, 0.0),  # signed zeros: equal
        rng.integers(0, 4, n) + np.where(np.arange(n) == n // 2, np.nan, 0.0),  # a NaN
    ])
    want = rankdata(X, axis=0)
    got = average_ranks(X.T).T
    assert got.flags.f_contiguous == want.flags.f_contiguous
    np.testing.assert_array_equal(got, want)
    for j in range(X.shape[1]):
        np.testing.assert_array_equal(average_ranks(X[:, j][None, :])[0], rankdata(X[:, j]))


def test_leaking_columns_reports_single_columns_and_exact_pairs():
    rng = np.random.default_rng(3)
    n = 200
    price = rng.gamma(4.0, 5.0, n)
    spread = rng.uniform(0.0, 12.0, n)
    low, high = price - spread, price + spread  # the target is their mean
    noise = rng.normal(size=n)
    X = np.column_stack([noise, low, high, np.log(price)])
    found, rho, pairs, rows = leaking_columns(X, price)
    assert rows == n
    assert found.tolist() == [3]  # the logarithm: ρ = 1
    assert rho[0] == pytest.approx(1.0)
    assert (1, 2) in {(i, j) for i, j, _ in pairs}  # low and high together
    single = spearman_with_target(X[:, 1:3], price)
    assert (np.abs(single) < LEAKAGE_RHO).all()  # neither bound alone would be reported


def _csv(tmp_path, n=120, seed=0):
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    y = np.exp(1.0 + 0.3 * x1 - 0.2 * x2 + 0.1 * rng.normal(size=n))
    lines = ["x1,logy,x2,y"] + [f"{a:.6f},{np.log(b):.6f},{c:.6f},{b:.6f}"
                                for a, b, c in zip(x1, y, x2, strict=True)]
    path = tmp_path / "leak.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_csv_with_a_leaking_column_warns_naming_it_and_the_option(tmp_path):
    path = _csv(tmp_path)
    ds = DataSource.from_spec(str(path)).load()
    assert len(ds.warnings) == 1
    warning = ds.warnings[0]
    assert "'logy' (ρ = +1.000)" in warning and "'x1'" not in warning
    assert "the data option drop_columns=logy" in warning
    assert f"on the {ds.n_train} training rows" in warning
    assert "logy" in ds.feature_names  # warned, never dropped
    assert ds.summary()["warnings"] == ds.warnings
    clean = DataSource.from_spec(str(path), {"drop_columns": "logy"}).load()
    assert clean.warnings == []


def test_the_result_and_the_command_line_carry_the_warning(tmp_path, capsys):
    path = _csv(tmp_path)
    out = tmp_path / "out"
    code = main(["run", "krr-path", "--data", str(path), "--out", str(out), "--no-plot",
                 "--set", "n_lams=3", "-q"])
    err = capsys.readouterr().err
    assert code == 0
    assert "warning: possible target leakage" in err and "--drop-columns logy" in err
    data = json.loads((out / "result.json").read_text())["data"]
    assert len(data["warnings"]) == 1 and "'logy'" in data["warnings"][0]
    code = main(["run", "krr-path", "--data", str(path), "--drop-columns", "logy",
                 "--out", str(out), "--no-plot", "--set", "n_lams=3"])
    err = capsys.readouterr().err
    assert code == 0 and "warning" not in err
    assert json.loads((out / "result.json").read_text())["data"]["warnings"] == []


def test_data_kept_in_partitions_are_checked_on_a_sample_of_training_rows(tmp_path,
                                                                         monkeypatch):
    import pandas as pd

    from kernel_lab.core.rows import PartitionedData
    from kernel_lab.data import split

    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    frame["y"] = frame["a"] ** 3 + 0.01 * rng.normal(size=n)  # a monotone in y: leaks
    folder = tmp_path / "parts"
    folder.mkdir()
    for k in range(4):
        frame.iloc[100 * k:100 * (k + 1)].to_parquet(folder / f"part.{k}.parquet", index=False)
    source = DataSource.from_spec(str(folder), {"partitions": "keep"})
    data = source.open()
    assert isinstance(data, PartitionedData)
    assert len(data.warnings) == 1 and "'a' (ρ = +" in data.warnings[0]
    assert f"on the {data.n_train:,} training rows" in data.warnings[0]
    assert data.summary()["warnings"] == data.warnings
    monkeypatch.setattr(split, "LEAKAGE_ROWS", 150)  # one rule, in memory too
    sampled = source.open().warnings
    assert "a random 150 of the" in sampled[0] and "'a'" in sampled[0]
    frame.to_csv(tmp_path / "rows.csv", index=False)
    memory = DataSource.from_spec(str(tmp_path / "rows.csv")).load()
    assert memory.warnings == sampled  # the same rows ranked: the same warning
    assert source.with_options(drop_columns="a").open().warnings == []


def test_a_large_set_is_ranked_on_evenly_spaced_rows_and_says_so():
    from kernel_lab.data.leakage import leakage_warning

    rng = np.random.default_rng(9)
    n = MAX_RANK_ROWS + 5_000
    y = rng.normal(size=n)
    X = np.column_stack([rng.normal(size=n), y + 0.01 * rng.normal(size=n)])
    found, rho, _, rows = leaking_columns(X, y, max_rows=500)
    take = np.linspace(0, n - 1, 500).astype(np.int64)
    assert rows == 500 and found.tolist() == [1]
    assert rho[0] == pytest.approx(spearmanr(X[take, 1], y[take]).statistic, abs=1e-12)
    warning = leakage_warning(X, y, ["x", "copy"], "y")
    assert f"on {MAX_RANK_ROWS:,} evenly spaced of the {n:,} training rows" in warning
