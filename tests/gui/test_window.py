"""The first window: a run from the generated form streams curves into the plots."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from kernel_lab.gui.app import MainWindow


@pytest.fixture
def window(qtbot):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    return w


def select(window, name):
    window.experiment_box.setCurrentIndex(window.experiment_box.findData(name))
    assert window.experiment.name == name


def test_run_from_the_form_draws_the_curves(window, qtbot, tmp_path):
    select(window, "krr-path")
    window.data_edit.setText("gaussian:n=120,p=5")
    window.form.widgets["n_lams"].setValue(6)
    window.form.widgets["kernel"].setCurrentText("exponential")
    # sigma applies only to shift-invariant kernels: hidden now, alpha shown
    assert not window.form.form.isRowVisible(window.form.widgets["sigma"])
    assert window.form.form.isRowVisible(window.form.widgets["alpha"])
    window.start_run()
    qtbot.waitUntil(lambda: hasattr(window, "last_result"), timeout=30_000)
    window._redraw()
    _spec, item, legend = window.plot_items[0]
    labels = [label.text for _, label in legend.items]
    curve = item.listDataItems()[labels.index("test mse (CKRR)")]
    xs, ys = curve.getData()
    np.testing.assert_allclose(xs, np.log10(window.last_result.table["lam"]))  # log-x view
    np.testing.assert_allclose(ys, np.log10(window.last_result.table["test_mse_ckrr"]))
    assert window.last_result.params["kernel"] == "exponential"
    assert "Done" in window.status.text()
    window.grab().save(str(tmp_path / "window.png"))


def test_bad_parameter_is_shown_and_window_stays_usable(window, qtbot):
    select(window, "krr-path")
    window.form.widgets["lam_min"].setText("-1")
    window.start_run()
    qtbot.waitUntil(lambda: "Cannot run" in window.status.text(), timeout=10_000)
    assert "lam_min must be ≥" in window.status.text()
    assert window.run_button.isEnabled()


def test_cancel_drops_the_run(window, qtbot):
    select(window, "krr-path")
    window.data_edit.setText("gaussian:n=1500,p=20")
    window.start_run()
    window.cancel_run()
    assert window.status.text() == "Cancelled."
    qtbot.wait(200)
    assert not hasattr(window, "last_result")


def test_ckrr_risk_from_the_window_with_two_kernels(window, qtbot):
    select(window, "ckrr-risk")
    boxes = {b.text(): b for b in window.form.widgets["kernels"].boxes}
    assert all(b.isChecked() for b in boxes.values())
    boxes["sigmoid"].setChecked(False)
    boxes["polynomial"].setChecked(False)
    assert not window.form.form.isRowVisible(window.form.widgets["degree"])
    window.form.widgets["trials"].setValue(3)
    window.form.widgets["n_lams"].setValue(8)
    window.data_edit.setText("gaussian:n=80,p=40,cov=toeplitz,rho=0.4,noise=0.5")
    window.start_run()
    qtbot.waitUntil(lambda: hasattr(window, "last_result"), timeout=30_000)
    window._redraw()
    assert window.last_result.params["kernels"] == ["linear", "exponential"]
    _spec, _item, legend = window.plot_items[0]
    labels = {label.text for _, label in legend.items}
    assert {"linear: limit", "exponential: empirical", "exponential: Theorem 2"} <= labels
