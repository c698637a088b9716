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
    view = window.plot_views[0]
    labels = [label.text for _, label in view.legend.items]
    assert "test mse (CKRR)" in labels
    xs, ys = view.curves["test_mse_ckrr"].getData()
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
    labels = {label.text for _, label in window.plot_views[0].legend.items}
    # one legend line per kernel (colour) and per kind of curve (style)
    assert labels == {"linear", "exponential", "limit", "empirical", "Theorem 2"}
    assert set(window.plot_views[0].curves) == {
        f"{kind}[{k}]" for kind in ("R_test_limit", "R_test_emp_mean", "R_test_thm2_mean")
        for k in ("linear", "exponential")}
    shown = {window.results.item(r, 0).text() for r in range(window.results.rowCount())}
    assert "lam_star_limit[linear]" in shown


def test_gfc_from_the_window_streams_passes(window, qtbot, tmp_path):
    """A new experiment appears with its generated form and no GUI code of its own."""
    select(window, "gfc")
    boxes = {b.text(): b for b in window.form.widgets["methods"].boxes}
    boxes["nystrom"].setChecked(False)
    window.form.widgets["n_features"].setValue(15)
    window.form.widgets["n_passes"].setValue(3)
    window.form.widgets["points"].setValue(3)
    window.data_edit.setText("breiman:n=600,n_test=300")
    window.start_run()
    qtbot.waitUntil(lambda: hasattr(window, "last_result"), timeout=60_000)
    window._redraw()
    assert "nystrom" not in window.last_result.params["methods"]
    assert window.last_result.params["subset_size"] is None  # the spin box's "auto"
    assert set(window.plot_views[0].curves) == {
        f"error[{m}]" for m in ("gfc", "rff-gaussian", "rff-laplace", "rff-cauchy")}
    xs, _ = window.plot_views[0].curves["error[gfc]"].getData()
    assert len(xs) == np.isfinite(window.last_result.table["error[gfc]"]).sum() >= 1
    window.grab().save(str(tmp_path / "gfc.png"))
