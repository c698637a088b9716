"""Opening a session from the window's menu never freezes it: the file is read, parsed and
checked on a worker thread, applied on the GUI thread with its plots built one per pass of
the event loop, and pinned curves are kept and drawn as a bounded number of points. A bad
session gets the message ``kernel-lab report`` gives for it."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore, QtWidgets

from kernel_lab.cli import main
from kernel_lab.experiments.plotspec import PIN_MAX_POINTS
from kernel_lab.gui.app import MainWindow

HEAD = {"format": "kernel-lab-session", "version": 1}


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    warnings: list[str] = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "warning",
                        lambda parent, title, text, *a, **k: warnings.append(text))
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"),
                                QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: not w.model.loading, timeout=30_000)
    w.warnings = warnings
    yield w
    w.close()


def _open(window, qtbot, path, timeout=60_000):
    """Open ``path`` as File > Open session does; wait until it is applied or refused."""
    window.files.read_in_background(path)
    qtbot.waitUntil(lambda: window.files.reader.current is None
                    or not window.files.reader.current.active, timeout=timeout)


def _refusal(window, qtbot, path):
    before = (window.experiment.name, window.form.values())
    _open(window, qtbot, path)
    assert len(window.warnings) == 1, window.warnings
    assert (window.experiment.name, window.form.values()) == before
    return window.warnings.pop()


def _report_error(path, tmp_path, capsys) -> str:
    """What ``kernel-lab report`` says of ``path`` (its one error line, without the
    prefix)."""
    capsys.readouterr()
    assert main(["report", "-q", str(path), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("kernel-lab: error: ")
    return err.removeprefix("kernel-lab: error: ")


def test_a_million_pinned_points_open_thinned_with_every_plot_built(window, qtbot, tmp_path):
    n = 1_000_000
    rng = np.random.default_rng(3)
    lam = np.logspace(-6, 2, n)
    risk = 1.0 + 0.5 * np.sin(np.log(lam)) + 0.05 * rng.standard_normal(n)
    risk[400_000] = 30.0  # a spike the thinned pin must keep
    doc = {**HEAD, "experiment": "krr-path",
           "pinned": [{"label": "big", "table": {"lam": lam.tolist(),
                                                 "test_mse_krr": risk.tolist()}}]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    assert window.experiment.name != "krr-path"  # its plots are built anew too

    # how long the GUI thread may stall while it opens is a latency: bench_session_open.py
    window.files.read_in_background(path)
    qtbot.waitUntil(lambda: window.plot_panel.built and bool(window.model.pins)
                    and bool(window.plot_views) and bool(window.plot_views[0].pins),
                    timeout=120_000)
    qtbot.wait(500)  # the redraw and repaints that follow
    assert window.warnings == []
    assert window.experiment.name == "krr-path"
    assert [v.spec.title for v in window.plot_views] == \
        [window.plot_panel.tabs.tabText(i) for i in range(window.plot_panel.tabs.count())] \
        == [p.filled(None).title for p in window.experiment.plots]  # built one by one, all
    pin = window.model.pins[0]
    assert pin.table["lam"].size == pin.table["test_mse_krr"].size <= PIN_MAX_POINTS
    view = window.plot_views[0]
    x, y = view.pins[0].getData()
    assert 2 < x.size <= PIN_MAX_POINTS
    assert np.isclose(np.nanmax(y), np.log10(30.0) if view.logy else 30.0)
    assert f"keep {pin.table['lam'].size:,} of their 1,000,000 points" in \
        window.log_view.toPlainText()


@pytest.mark.parametrize("spec", ["gaussian:n=1e12,p=5", "gaussian:n=1e308,p=5"])
def test_a_generator_out_of_range_gets_reports_message(window, qtbot, tmp_path, capsys,
                                                       spec):
    path = tmp_path / "gen.json"
    path.write_text(json.dumps({**HEAD, "experiment": "krr-path",
                                "data": {"spec": spec, "options": {}}}))
    said = _refusal(window, qtbot, path)
    assert said == _report_error(path, tmp_path, capsys)
    assert said.startswith("session file gen.json: parameter n must be ≤ 1e+07")


def test_true_for_an_integer_gets_reports_message(window, qtbot, tmp_path, capsys):
    path = tmp_path / "flag.json"
    path.write_text(json.dumps({**HEAD, "experiment": "krr-path",
                                "params": {"n_lams": True}}))
    said = _refusal(window, qtbot, path)
    assert said == _report_error(path, tmp_path, capsys)
    assert said == "session file flag.json: parameter n_lams must be a whole number, got true"


def test_deep_nesting_gets_reports_message(window, qtbot, tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    said = _refusal(window, qtbot, path)
    assert said == _report_error(path, tmp_path, capsys)
    assert said == "session file deep.json is nested too deeply to be a session"


@pytest.mark.skipif(not (os.path.exists("/dev/zero") and hasattr(os, "mkfifo")),
                    reason="needs /dev/zero and FIFOs")
def test_a_device_and_a_fifo_are_refused_at_once(window, qtbot, tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "a device"), (fifo, "a pipe (FIFO)")):
        said = _refusal(window, qtbot, path)
        assert f"({path}) is {kind}, not a file" in said


def test_unknown_fields_are_noted_in_the_log(window, qtbot, tmp_path):
    path = tmp_path / "extra.json"
    path.write_text(json.dumps({**HEAD, "experiment": "krr-path", "colour": "red"}))
    _open(window, qtbot, path)
    assert window.warnings == [] and window.experiment.name == "krr-path"
    assert window.log_view.toPlainText().count("ignored the field 'colour'") == 1
    assert "1 note(s) in the Log" in window.status.text()


def test_a_seed_beyond_a_spin_box_opens_and_runs_with_it(window, qtbot, tmp_path):
    """Seeds go up to 2³² − 1, past Qt's spin box (a C int): a session with one opened
    half-applied with an OverflowError. The seed is a field the experiment checks."""
    path = tmp_path / "seed.json"
    path.write_text(json.dumps({**HEAD, "experiment": "krr-path",
                                "params": {"n_lams": 5, "seed": 3_000_000_000},
                                "data": {"spec": "gaussian:n=60,p=3", "options": {}}}))
    _open(window, qtbot, path)
    assert window.warnings == [] and window.experiment.name == "krr-path"
    assert window.form.values()["seed"] == "3000000000" and window.form.values()["n_lams"] == 5
    spec = window.model.run_spec()
    assert spec.seed == 3_000_000_000
    window.form.widgets["seed"].setText(str(2**32))  # past the declared range: refused
    with pytest.raises(Exception, match="seed"):
        window.model.run_spec()
