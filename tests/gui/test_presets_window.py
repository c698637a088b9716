"""A preset determines its run completely: the window (whatever was open before) and
``kernel-lab run --preset`` resolve the same experiment, parameters and data, and give
the same numbers."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore

from kernel_lab.cli import _build_parser, _run_spec
from kernel_lab.engine.presets import preset_names
from kernel_lab.experiments import get_experiment
from kernel_lab.gui.app import MainWindow


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def open_preset(window, qtbot, name):
    window.open_preset(name)
    qtbot.waitUntil(lambda: not window.data_panel.loading, timeout=60_000)


def test_every_preset_resolves_the_same_run_in_the_window_and_the_cli(window, qtbot):
    names = preset_names()
    for before, name in zip(names[1:] + names[:1], names, strict=True):
        open_preset(window, qtbot, before)  # leftovers of another preset must not matter
        open_preset(window, qtbot, name)
        ours = window.model.run_spec()
        cli = _run_spec(_build_parser().parse_args(["run", "--preset", name]))
        assert ours.experiment == cli.experiment, name
        assert ours.params == get_experiment(cli.experiment).resolve(cli.params), name
        assert ours.data == cli.data, name
        assert window.model.loaded_source == cli.data, name


def test_mp_preset_after_another_equals_the_cli_bit_for_bit(window, qtbot, tmp_path):
    open_preset(window, qtbot, "ckrr-fig1")  # Toeplitz data in the panel before
    open_preset(window, qtbot, "mp-spectrum")
    result = window.run_blocking(120)
    assert result is not None, window.status.text()
    out = tmp_path / "cli"
    # the command as a user runs it: a process of its own, like the window's worker (this
    # test process's heap, shaped by earlier tests, can move BLAS sums in the last bit)
    subprocess.run([sys.executable, "-m", "kernel_lab.cli", "run", "--preset", "mp-spectrum",
                    "--out", str(out), "--no-plot", "-q"], check=True, timeout=300)
    with open(out / "curves.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(result.table)
    for j, name in enumerate(rows[0]):
        cli = np.array([float(r[j]) if r[j] else np.nan for r in rows[1:]])
        np.testing.assert_array_equal(result.table[name], cli)
    # the text's claim: the spectrum spreads over the Marchenko–Pastur support (Σ = I)
    s = result.summaries
    assert abs(s["eig_min"] / s["mp_edge_low"] - 1) < 0.03
    assert abs(s["eig_max"] / s["mp_edge_high"] - 1) < 0.03
