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


def test_run_from_the_form_draws_the_curves(window, qtbot, tmp_path):
    assert window.experiment.name == "krr-path"
    window.data_edit.setText("gaussian:n=120,p=5")
    window.form.widgets["n_lams"].setValue(6)
    window.form.widgets["kernel"].setCurrentText("exponential")
    # sigma applies only to shift-invariant kernels: hidden now, alpha shown
    assert not window.form.form.isRowVisible(window.form.widgets["sigma"])
    assert window.form.form.isRowVisible(window.form.widgets["alpha"])
    window.start_run()
    qtbot.waitUntil(lambda: hasattr(window, "last_result"), timeout=30_000)
    window._redraw()
    _spec, curves = window.plot_items[0]
    xs, ys = curves["test_mse_ckrr"].getData()
    np.testing.assert_allclose(xs, np.log10(window.last_result.table["lam"]))  # log-x view
    np.testing.assert_allclose(ys, np.log10(window.last_result.table["test_mse_ckrr"]))
    assert window.last_result.params["kernel"] == "exponential"
    assert "Done" in window.status.text()
    window.grab().save(str(tmp_path / "window.png"))


def test_bad_parameter_is_shown_and_window_stays_usable(window, qtbot):
    window.form.widgets["lam_min"].setText("-1")
    window.start_run()
    qtbot.waitUntil(lambda: "Cannot run" in window.status.text(), timeout=10_000)
    assert "lam_min must be ≥" in window.status.text()
    assert window.run_button.isEnabled()


def test_cancel_drops_the_run(window, qtbot):
    window.data_edit.setText("gaussian:n=1500,p=20")
    window.start_run()
    window.cancel_run()
    assert window.status.text() == "Cancelled."
    qtbot.wait(200)
    assert not hasattr(window, "last_result")
