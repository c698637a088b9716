"""The gfc experiment: GFC against cross-validated random features and Nyström ridge."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from kernel_lab.cli import main
from kernel_lab.core.errors import ParameterError
from kernel_lab.engine import run, run_experiment
from kernel_lab.engine.presets import load_preset
from kernel_lab.experiments.gfc import (
    STOPPING_RULES,
    baseline_sizes,
    main_inputs,
    percent_rmse,
    range_scaling,
)

RFF = ("rff-gaussian", "rff-laplace", "rff-cauchy")


def test_helpers():
    assert list(baseline_sizes(100, 5)) == [10, 18, 32, 56, 100]
    assert list(baseline_sizes(3, 5)) == [1, 2, 3]
    assert list(baseline_sizes(100, 1)) == [100]
    assert range_scaling(np.array([2.0, 6.0, 4.0])) == (2.0, 4.0)
    assert range_scaling(np.array([3.0, 3.0])) == (3.0, 1.0)
    assert percent_rmse(np.array([0.1, 0.0]), np.array([0.0, 0.1])) == pytest.approx(10.0)
    W = np.array([[0.0, 1.0, 3.0], [0.0, -2.0, 0.1]])
    assert main_inputs(W, np.array([1.0, 1.0])) == (2, 1)  # weights 0, 3, 3.1


def test_streams_every_pass_and_every_cell():
    partials = []
    r = run_experiment("gfc", {"n_features": 20, "n_passes": 3, "points": 2,
                               "bandwidths": 3}, data="friedman:n=600,n_test=300",
                       on_partial=partials.append)
    t, s = r.table, r.summaries
    # the start, one per GFC pass, one per (baseline, size) cell
    assert len(partials) == 1 + 3 + 4 * 2
    gfc_rows = np.isfinite(t["error[gfc]"])
    assert gfc_rows.sum() == 3
    assert np.all(np.diff(t["features[gfc]"][gfc_rows]) >= 0)
    assert t["features[gfc]"][gfc_rows][-1] == s["features_built[gfc]"] <= 20
    assert np.all(np.diff(t["time[gfc]"][gfc_rows]) > 0)
    for m in (*RFF, "nystrom"):
        ok = np.isfinite(t[f"error[{m}]"])
        assert ok.sum() == 2 and list(t[f"features[{m}]"][ok]) == [2, 20]
        assert s[f"error[{m}]"] == t[f"error[{m}]"][ok][-1]
    assert s["best_rff"] in RFF
    assert s["gfc_over_best_rff"] == pytest.approx(
        s["error[gfc]"] / s[f"error[{s['best_rff']}]"])
    # both spectra are distributions over the same bins
    for key in ("spectrum[learned]", "spectrum[random]"):
        assert np.nansum(t[key]) == pytest.approx(1.0)
    assert np.isfinite(t["learned_wa"]).sum() == s["features_built[gfc]"]
    assert np.isfinite(t["random_wa"]).sum() == 20


def test_same_seed_same_result_serial_or_parallel():
    kw = {"n_features": 12, "n_passes": 2, "points": 1, "bandwidths": 2, "seed": 3,
          "methods": ["gfc", "rff-gaussian", "nystrom"]}
    a = run_experiment("gfc", kw, data="breiman:n=500,n_test=200")
    b = run_experiment("gfc", kw, data="breiman:n=500,n_test=200", workers=2)
    for key in ("error[gfc]", "error[rff-gaussian]", "error[nystrom]", "learned_wa"):
        np.testing.assert_array_equal(a.table[key], b.table[key])
    c = run_experiment("gfc", {**kw, "seed": 4}, data="breiman:n=500,n_test=200")
    assert not np.array_equal(a.table["learned_wa"], c.table["learned_wa"], equal_nan=True)


def test_needs_a_test_set():
    with pytest.raises(ParameterError, match="test set"):
        run_experiment("gfc", {"n_features": 5}, data="diabetes:test_fraction=0")


@pytest.mark.parametrize("data", ["breiman:n=400,n_test=200", "diabetes"])
def test_cli_writes_the_contract_files(tmp_path, data):
    out = tmp_path / "gfc"
    code = main(["run", "gfc", "--data", data, "--set", "n_features=10", "--set",
                 "n_passes=2", "--set", "points=2", "--set", "bandwidths=2", "--out",
                 str(out), "-q"])
    assert code == 0
    doc = json.loads((out / "result.json").read_text())
    assert doc["experiment"] == "gfc" and doc["data"]["name"] == data
    assert "error[gfc]" in doc["summaries"]
    header = (out / "curves.csv").read_text().splitlines()[0].split(",")
    assert {"features[gfc]", "error[rff-cauchy]", "spectrum[learned]"} <= set(header)
    assert (out / "plot.png").stat().st_size > 20_000


def _mean_errors(data: str) -> dict[str, float]:
    errors: dict[str, list[float]] = {}
    for seed in range(5):
        r = run_experiment("gfc", {"n_features": 100, "points": 1, "seed": seed,
                                   "methods": ["gfc", *RFF]},
                           data=f"{data}:n=5000,n_test=2000", workers=2)
        for m in ("gfc", *RFF):
            errors.setdefault(m, []).append(r.summaries[f"error[{m}]"])
            assert r.table[f"features[{m}]"][0] <= 100
        assert r.table["features[rff-gaussian]"][0] == 100
    return {m: float(np.mean(v)) for m, v in errors.items()}


@pytest.mark.slow
def test_friedman_gfc_beats_the_best_random_features():
    """Issue acceptance: n = 5000, 100 features, mean over 5 seeds (``slow``; the default
    run checks the same order on one seed at n = 2500, 60 features: test_presets.py's
    gfc-friedman)."""
    err = _mean_errors("friedman")
    best = min(err[m] for m in RFF)
    assert err["gfc"] < best
    assert 2.0 < err["gfc"] < 5.0  # a few percent of the output range (noise floor ≈ 3.5)


@pytest.mark.slow
def test_breiman_gfc_within_five_percent_of_the_best_random_features():
    """n = 5000, 100 features, mean over 5 seeds (``slow``; the default run checks the same
    5 % on one seed at n = 2500, 60 features: test_presets.py's gfc-breiman)."""
    err = _mean_errors("breiman")
    best = min(err[m] for m in RFF)
    assert err["gfc"] <= 1.05 * best
    assert 3.0 < err["gfc"] < 7.0


def test_protocols_differ_where_expected_and_say_so():
    """Friedman, n = 2000: the held-out protocol stops short of 40 features, the paper's
    builds all 40 (one descent step each per pass); the summaries name the protocol."""
    kw = {"n_features": 40, "points": 1, "bandwidths": 2, "seed": 1,
          "methods": ["gfc", "rff-gaussian"]}
    data = "friedman:n=2000,n_test=500"
    runs = {p: run_experiment("gfc", {**kw, "protocol": p}, data=data)
            for p in ("held-out", "paper")}
    for p, r in runs.items():
        assert r.summaries["protocol"] == p
        assert r.summaries["stopping_rule"] == STOPPING_RULES[p]
        assert r.params["protocol"] == p
    paper, held = runs["paper"], runs["held-out"]
    assert paper.summaries["features_built[gfc]"] == 40
    # one row a pass, each pass adding at most its quota of the budget left (the budget
    # spread over the passes left, so a feature pruned for a coefficient below η is made
    # up later): 4 a pass, unless one was pruned — which a coefficient's last bits decide
    # (a pass of 3 then 5 where numpy's AVX2 cosines replace its AVX-512 ones)
    rows = np.isfinite(paper.table["features[gfc]"])
    built = paper.table["features[gfc]"][rows].astype(int)
    assert len(built) == 10 and built[-1] == 40
    before = np.concatenate([[0], built[:-1]])
    quota = np.ceil((40 - before) / (10 - np.arange(10)))
    assert np.all(built - before <= quota)
    assert held.summaries["features_built[gfc]"] < 40
    # the baselines do not depend on the protocol
    assert paper.summaries["error[rff-gaussian]"] == held.summaries["error[rff-gaussian]"]
    again = run_experiment("gfc", {**kw, "protocol": "paper"}, data=data)
    np.testing.assert_array_equal(again.table["error[gfc]"], paper.table["error[gfc]"])


def test_protocol_is_checked_and_absent_without_gfc():
    with pytest.raises(ParameterError, match="protocol"):
        run_experiment("gfc", {"n_features": 5, "protocol": "loose"},
                       data="friedman:n=200,n_test=50")
    r = run_experiment("gfc", {"n_features": 5, "points": 1, "bandwidths": 1,
                               "methods": ["rff-gaussian"]}, data="friedman:n=200,n_test=50")
    assert "protocol" not in r.summaries


@pytest.mark.slow
def test_paper_preset_shows_what_its_text_says():
    """The full gfc-paper preset (about a minute on 2 cores): exactly 100 features,
    about a third below the best random features at 100, below them already at 20,
    and flat from 40 features on."""
    r = run(load_preset("gfc-paper").spec)
    s, t = r.summaries, r.table
    assert s["protocol"] == "paper" and s["features_built[gfc]"] == 100
    best = min(s[f"error[{m}]"] for m in RFF)
    assert 0.6 < s["error[gfc]"] / best < 0.75
    rows = np.isfinite(t["features[gfc]"])
    feats, errs = t["features[gfc]"][rows], t["error[gfc]"][rows]
    assert errs[feats == 20][0] < best
    assert np.ptp(errs[feats >= 40]) < 0.02 * errs[-1]


def test_spectrum_inputs_are_named_by_the_tables_own_columns(tmp_path):
    """A table's inputs are named as the loader names them (a text column by its one-hot
    parts, ``cut=…``), even when it has columns called x and y; the same numbers without
    names fall back to x1 … xp, and both runs pick the same two inputs."""
    from kernel_lab.data.read import load_table

    rng = np.random.default_rng(5)
    n = 300
    cut = rng.choice(["Fair", "Good", "Ideal"], n)
    x, y, z, carat = rng.normal(size=(4, n))
    price = np.sin(2 * x) + y**2 + 0.5 * (cut == "Ideal") + 0.05 * rng.normal(size=n)
    rows = [f"{c:.4f},{k},{a:.4f},{b:.4f},{d:.4f},{p:.4f}"
            for c, k, a, b, d, p in zip(carat, cut, x, y, z, price, strict=True)]
    named = tmp_path / "gems.csv"
    named.write_text("carat,cut,x,y,z,price\n" + "\n".join(rows) + "\n")
    table = load_table(named, target="price")
    assert "cut=Ideal" in table.feature_names and "x" in table.feature_names
    plain = tmp_path / "gems.npy"  # the same encoded numbers, no names
    np.save(plain, np.column_stack([table.X, table.y]))

    params = {"n_features": 8, "n_passes": 2, "points": 2, "bandwidths": 2,
              "methods": "gfc"}
    with_names = run_experiment("gfc", params, data=f"{named}:target=price")
    without = run_experiment("gfc", params, data=str(plain))
    assert with_names.summaries["error[gfc]"] == without.summaries["error[gfc]"]  # same run
    chosen = without.summaries["spectrum_inputs"].split(", ")
    assert all(re.fullmatch(r"x\d+", c) for c in chosen) and len(chosen) == 2
    expected = ", ".join(table.feature_names[int(c[1:]) - 1] for c in chosen)
    assert with_names.summaries["spectrum_inputs"] == expected
