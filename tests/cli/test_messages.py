"""The command line's refusals, as a new user meets them on a table: what would fit,
every column, each column's own count, and its own flags."""

from __future__ import annotations

import json
import re

import numpy as np

from kernel_lab.cli import main
from kernel_lab.data.source import DataSource
from kernel_lab.engine.handle import InlineLauncher
from kernel_lab.model import LabModel


def _table(tmp_path, n=1500):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + np.sin(X[:, 1]) + 0.1 * rng.normal(size=n)
    path = tmp_path / "big.csv"
    path.write_text("a,b,c,price\n" + "\n".join(",".join(f"{v:.5f}" for v in row)
                                                for row in np.column_stack([X, y])) + "\n")
    return path


def test_too_large_names_the_rows_the_window_offers(tmp_path, capsys, monkeypatch):
    """`--subsample N` with the N the window's 'Use a random N rows' offers for the same
    table, experiment and budget; and a run with it is not refused."""
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "20")  # 1125 training points do not fit
    path = _table(tmp_path)
    code = main(["run", "krr-path", "--data", str(path), "--target", "price",
                 "--out", str(tmp_path / "o"), "-q", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 2 and "memory budget" in err, err
    found = re.findall(r"--subsample (\d+)", err)
    assert len(found) == 1, err
    rows = int(found[0])
    # 886 training points (≤ 1000, which the time cap spares) fit 90 % of 20 MiB
    assert f"The {rows:,} rows are set by the memory budget of 20.0 MiB." in err, err

    window = LabModel(InlineLauncher())
    window.use_default_data = False
    window.set_experiment("krr-path")
    window.load_data(DataSource.from_spec(str(path), {"target": "price"}))
    window.refresh()
    assert window.plan.too_large and window.plan.fitting_rows == rows

    code = main(["run", "krr-path", "--data", str(path), "--target", "price",
                 "--subsample", str(rows), "--set", "n_lams=4",
                 "--out", str(tmp_path / "fits"), "-q", "--no-plot"])
    assert code == 0, capsys.readouterr().err


def test_too_large_says_when_the_time_cap_set_the_rows(tmp_path, capsys, monkeypatch):
    """On a slow machine the rows offered are fewer than the memory budget allows: the
    refusal says the time cap set them, with the rows the budget alone would allow."""
    from kernel_lab.model import plan

    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "40")  # 1500 training points need 51.5 MiB
    monkeypatch.setattr(plan, "probe_flops_per_second", lambda: 1e6)  # 1 Mflop/s
    path = _table(tmp_path, n=2000)
    code = main(["run", "krr-path", "--data", str(path), "--target", "price",
                 "--out", str(tmp_path / "o"), "-q", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 2, err
    rows = int(re.findall(r"--subsample (\d+)", err)[0])
    # the memory alone: n = √(0.9 · 40 MiB / 24 bytes) training points, of 75 % of the rows
    budget_rows = int(int(np.sqrt(0.9 * 40 * 2**20 / 24)) / 0.75)
    # the time: 10 % steps down from there until n ≤ 1000 (any n above takes hours here)
    n = int(np.sqrt(0.9 * 40 * 2**20 / 24))
    while n > 1000:
        n = int(0.9 * n)
    assert rows == int(n / 0.75) < budget_rows
    assert (f"The {rows:,} rows are set by the time cap: more rows would take over about "
            f"2 minutes on this machine; the memory budget of 40.0 MiB alone would allow "
            f"{budget_rows:,}.") in err, err


def test_unknown_target_lists_every_column_on_the_command_line(tmp_path, capsys):
    names = [f"c{j}" for j in range(16)] + ["readscr", "mathscr"]
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + "\n".join(
        ",".join(str(i * j) for j in range(18)) for i in range(1, 5)) + "\n")
    code = main(["run", "krr-path", "--data", str(path), "--target", "math",
                 "--out", str(tmp_path / "o"), "-q", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"Choose one of: {', '.join(names)}, or give a 0-based column index" in err


PENGUINS = ["Adelie,39.1,3750,male", "Adelie,NA,NA,NA", "Gentoo,46.1,4500,female",
            "Gentoo,NA,5000,NA", "Adelie,40.3,3250,NA", "Gentoo,47.5,5100,male",
            "Adelie,38.6,3600,female", "Gentoo,49.0,5300,male"]


def _penguins(tmp_path):
    """A penguins-like table: numbers missing in two columns, a text target missing in
    three rows."""
    path = tmp_path / "penguins.csv"
    path.write_text("species,bill_length_mm,body_mass_g,sex\n" + "\n".join(PENGUINS) + "\n")
    return path


def test_missing_features_are_filled_with_a_warning_naming_them(tmp_path, capsys):
    """Missing feature cells are filled by the training mean: the run goes on, and the
    terminal's warning names each column's own count and the flags that leave out the
    rows or the columns instead."""
    code = main(["run", "krr-path", "--data", str(_penguins(tmp_path)), "--target",
                 "species", "--out", str(tmp_path / "o"), "-q", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("filled 3 missing values with each column's mean over the training rows "
            "('bill_length_mm' 2, 'body_mass_g' 1): to leave out the rows that have them "
            "instead, --drop-nan; to leave out the columns, --drop-columns "
            "bill_length_mm,body_mass_g") in err, err
    saved = json.loads((tmp_path / "o" / "result.json").read_text())
    assert any(w.startswith("filled 3 missing values") for w in saved["data"]["warnings"])


def test_a_missing_target_is_refused_with_the_flag(tmp_path, capsys):
    code = main(["run", "krr-path", "--data", str(_penguins(tmp_path)), "--target", "sex",
                 "--out", str(tmp_path / "o"), "-q", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 2
    assert ("line 3: the target 'sex' is missing or non-finite in 3 of 8 rows (the first "
            "here); a missing feature is filled by its training mean, but these cannot be."
            in err), err
    assert err.rstrip().endswith("choose to drop rows with missing values (--drop-nan)."), err
