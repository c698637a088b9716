"""The Playground window: painting with the mouse, undo/redo, and what is drawn equals the
library's estimators (exact KRR/CKRR, Nyström landmarks, DSG after k steps, GFC with k
features); sessions restore painted data bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore, QtWidgets

from kernel_lab.core import playground as core
from kernel_lab.core.models import (
    CenteredKernelRidge,
    DSGClassifier,
    KernelRidge,
    NystromFeatures,
)
from kernel_lab.engine.presets import playground_preset_names
from kernel_lab.gui.playground import PlaygroundWindow


@pytest.fixture
def window(qtbot):
    w = PlaygroundWindow()
    qtbot.addWidget(w)
    w.resize(1200, 800)
    w.show()
    qtbot.waitExposed(w)
    settle(w, qtbot)
    yield w
    w.close()


def settle(w, qtbot):
    """Wait until the worker has answered the latest request and it is drawn."""
    qtbot.waitUntil(lambda: w.worker.wait_idle(0) and w.model.latest is not None
                    and w.model.latest.serial == w.model._serial, timeout=30_000)
    qtbot.wait(20)


def click(w, qtbot, x, y, button=QtCore.Qt.MouseButton.LeftButton):
    scene = w.box.mapViewToScene(QtCore.QPointF(x, y))
    pos = w.plot.mapFromScene(scene)
    qtbot.mouseClick(w.plot.viewport(), button, pos=pos)


def drawn_heatmap(w):
    """The values the heatmap shows, after checking that the image on screen is exactly
    their colours (the worker colours them: ``Fit.picture``)."""
    from kernel_lab.plotting.function_view import colour_tables, heatmap_colours

    img = w.view.heatmap
    np.testing.assert_array_equal(w.image.image,
                                  heatmap_colours(img, w.model.task, colour_tables()))
    return img


def training(w):
    pts = w.model.points
    return pts.X[~pts.test], pts.y[~pts.test]


def test_painting_1d_adds_points_where_clicked_and_right_click_removes(window, qtbot):
    w = window
    w.model.set_dataset("paint-1d")
    settle_points = w.model.points.n
    assert settle_points == 0
    click(w, qtbot, -1.0, 0.5)
    click(w, qtbot, 1.2, -0.8)
    pts = w.model.points
    assert pts.n == 2
    np.testing.assert_allclose(pts.X[:, 0], [-1.0, 1.2], atol=0.03)  # a pixel or so
    np.testing.assert_allclose(pts.y, [0.5, -0.8], atol=0.03)
    click(w, qtbot, 1.1, -0.7, QtCore.Qt.MouseButton.RightButton)
    assert w.model.points.n == 1 and abs(w.model.points.X[0, 0] + 1.0) < 0.03


def test_painting_2d_classes_and_undo_redo_restore_exactly(window, qtbot):
    w = window
    w.model.set_dataset("moons", n=50)
    before = w.model.points
    click(w, qtbot, 2.0, 2.0)
    w.paint_class.setChecked(True)
    click(w, qtbot, -2.0, -2.0)
    pts = w.model.points
    assert pts.n == before.n + 2
    np.testing.assert_allclose(pts.X[-2:], [[2.0, 2.0], [-2.0, -2.0]], atol=0.03)
    assert list(pts.y[-2:]) == [1.0, -1.0] and not pts.test[-2:].any()
    after = w.model.points
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert w.model.points is before
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier
                   | QtCore.Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(w, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier
                   | QtCore.Qt.KeyboardModifier.ShiftModifier)
    for a, b in ((w.model.points.X, after.X), (w.model.points.y, after.y)):
        assert np.array_equal(a, b)


def test_lambda_slider_redraws_exact_krr_and_ckrr(window, qtbot):
    w = window
    w.model.set_dataset("sine", n=80)
    w.model.set_params(method="krr", sigma=0.6)
    w.lam.slider.setValue(w.lam.slider.value() - 17)  # a drag of the slider
    settle(w, qtbot)
    lam, X, y = w.model.params["lam"], *training(w)
    xs, drawn = w.fit_curve.getData()
    ref = KernelRidge(lam, kernel="gaussian", kernel_params={"sigma": 0.6}).fit(X, y)
    np.testing.assert_allclose(drawn, ref.predict(xs[:, None]), rtol=0, atol=1e-8)
    # 2-D: the heatmap is CKRR's prediction on the grid
    w.model.set_dataset("xor", n=300)
    w.model.set_params(method="ckrr")
    w.lam.slider.setValue(w.lam.slider.value() + 9)
    settle(w, qtbot)
    lam, X, y = w.model.params["lam"], *training(w)
    ref = CenteredKernelRidge(lam, kernel="gaussian", kernel_params={"sigma": 0.6}).fit(X, y)
    res = w.model.params["resolution"]
    img = drawn_heatmap(w)  # drawn as (x₁, x₂) columns
    np.testing.assert_allclose(img.T.ravel(), ref.predict(core.grid(2, res)), atol=1e-8)


def test_drawn_landmarks_are_the_samplers_for_the_seed(window, qtbot):
    w = window
    w.model.set_dataset("blobs", n=300)
    w.model.set_params(method="nystrom", s=12, sigma=1.0, seed=3)
    settle(w, qtbot)
    X, _ = training(w)
    nf = NystromFeatures("gaussian", kernel_params={"sigma": 1.0}, n_components=12,
                         sampler="recursive-rls", random_state=3).fit(X)
    drawn = w.landmark_scatter.getData()
    np.testing.assert_array_equal(np.column_stack(drawn), X[nf.landmark_indices_])


def test_dsg_steps_draw_the_estimator_after_k_iterations(window, qtbot):
    w = window
    w.model.set_dataset("moons", n=200)
    w.model.set_params(method="dsg", sigma=0.5, nu=1e-3, seed=2)
    for _ in range(3):
        w.model.step(7)
    settle(w, qtbot)
    X, y = training(w)
    ref = DSGClassifier(sigma=0.5, nu=1e-3, n_iter=21, batch_size=8, n_features_per_iter=8,
                        random_state=2).fit(X, y)
    res = w.model.params["resolution"]
    np.testing.assert_allclose(drawn_heatmap(w).T.ravel(),
                               ref.decision_function(core.grid(2, res)), atol=1e-10)
    assert "iteration 21" in w.readout.text()


def test_gfc_steps_draw_the_model_with_k_features(window, qtbot):
    w = window
    w.model.set_dataset("sinc", n=80)
    w.model.set_params(method="gfc", seed=1)
    w.model.step(3)
    settle(w, qtbot)
    X, y = training(w)
    ref = core.gfc_model(3, 1).fit(X, y)
    xs, drawn = w.fit_curve.getData()
    np.testing.assert_allclose(drawn, ref.predict(xs[:, None]), atol=1e-10)
    assert ref.n_features_out_ == 3 and "3 features" in w.readout.text()


def test_play_animates_dsg_and_pause_stops(window, qtbot):
    w = window
    w.model.set_dataset("moons", n=200)
    w.model.set_params(method="dsg")
    w.play_button.setChecked(True)
    qtbot.waitUntil(lambda: w.model.steps >= 20, timeout=20_000)
    w.play_button.setChecked(False)
    steps = w.model.steps
    qtbot.wait(150)
    assert w.model.steps == steps


@pytest.mark.parametrize("name", playground_preset_names())
def test_every_playground_preset_draws(window, qtbot, name):
    window.open_preset(name)
    settle(window, qtbot)
    assert window.fits_drawn > 0 and "⚠" not in window.readout.text()
    assert "What you will see" in window.about.text()


def test_session_restores_painted_points_bit_for_bit(qtbot, tmp_path):
    from kernel_lab.gui.app import MainWindow

    main = MainWindow(QtCore.QSettings(str(tmp_path / "s.ini"),
                                       QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(main)
    pg_window = main.open_playground()
    settle(pg_window, qtbot)
    pg_window.model.add_points(np.array([[0.1234567890123, -1.0 / 3.0]]), -1.0)
    pg_window.model.set_params(method="rff", D=77, lam=0.0123)
    saved = pg_window.model.points
    path = main.save_session(tmp_path / "play.json")
    pg_window.model.set_dataset("circles")
    main.open_session(path)
    restored = main.playground.model
    assert restored.params["D"] == 77 and restored.params["lam"] == 0.0123
    for a, b in ((restored.points.X, saved.X), (restored.points.y, saved.y),
                 (restored.points.test, saved.test)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    main.close()


def test_a_playground_session_file_opens_in_the_playground(qtbot, tmp_path):
    """A session holding only the Playground's state (saved by the lab's session code)
    opens the Playground with it and leaves the lab's experiment as it was."""
    from kernel_lab.engine.session import Session, save_session
    from kernel_lab.gui.app import MainWindow
    from kernel_lab.model.playground import PlaygroundModel

    source = PlaygroundModel()
    source.set_dataset("paint-1d")
    source.add_points(np.array([[0.25], [-1.0 / 3.0], [2.0]]), np.array([0.1, 0.2, 0.3]))
    source.set_params(method="ckrr", lam=0.0321)
    path = save_session(Session(None, playground=source.state()), tmp_path / "p.json")
    main = MainWindow(QtCore.QSettings(str(tmp_path / "s.ini"),
                                       QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(main)
    experiment = main.model.experiment.name
    main.open_session(path)
    restored = main.playground.model
    assert restored.params == source.params and restored.dataset == "paint-1d"
    assert np.array_equal(restored.points.X, source.points.X)
    assert np.array_equal(restored.points.y, source.points.y)
    assert main.model.experiment.name == experiment
    main.close()


def test_two_columns_of_a_loaded_table_go_to_the_playground(qtbot, tmp_path):
    from kernel_lab.data.source import DataSource
    from kernel_lab.gui.app import MainWindow

    main = MainWindow(QtCore.QSettings(str(tmp_path / "s.ini"),
                                       QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(main)
    main.model.load_data(DataSource.from_spec("breast-cancer"))
    qtbot.waitUntil(lambda: main.model.dataset is not None
                    and main.model.dataset.name == "breast-cancer", timeout=30_000)
    assert main.send_to_playground((0, 1))
    pg_model = main.playground.model
    assert pg_model.dataset == "paint-2d" and pg_model.points.n == 569
    assert set(np.unique(pg_model.points.y)) == {-1.0, 1.0}
    assert main.send_to_playground((2,))  # one column: the ±1 target on the vertical axis
    assert pg_model.dataset == "paint-1d" and pg_model.undo() and pg_model.dataset == "paint-2d"
    settle(main.playground, qtbot)
    main.close()


def test_regression_heatmap_renders_and_clearing_drops_a_fit_in_flight(window, qtbot):
    w = window
    w.model.set_dataset("surface", n=200)
    settle(w, qtbot)
    w.image.render()  # a float image with levels: raised before for regression
    assert w.image.qimage is not None
    w.model.set_params(method="nystrom", s=15)
    w.model.clear()  # the Nyström request above may still be computing
    qtbot.wait(300)
    assert w.model.latest is None and w.model.points.n == 0


def test_worker_threads_import_nothing_after_the_window_preloads(tmp_path):
    """PySide6 hooks ``import``; a module first imported in a worker thread while the GUI
    thread ran Qt crashed the process, or deadlocked it. In a fresh interpreter that has
    imported the window's modules and run :func:`preload_for_threads` (as both windows
    do), starting the worker process, loading data (examples and a CSV) and fitting every
    Playground method in a thread import nothing new."""
    import subprocess
    import sys

    csv = tmp_path / "t.csv"
    csv.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(30)))
    code = f"""
import sys, threading
import kernel_lab.gui.app, kernel_lab.gui.playground
from kernel_lab.data.source import DataSource
from kernel_lab.engine.process import ProcessRunner
from kernel_lab.gui import preload_for_threads
from kernel_lab.model.playground import PlaygroundModel
preload_for_threads()
before = set(sys.modules)
errors = []
def work():
    try:
        ProcessRunner().close()  # the window (re)starts its worker from a thread
        for spec in ("breast-cancer", "diabetes", {str(csv)!r}):
            DataSource.from_spec(spec).load()
        m = PlaygroundModel()
        m.set_dataset("moons", n=60)
        for method in ("krr", "ckrr", "nystrom", "rff", "dsg", "gfc"):
            m.set_params(method=method, leverage=method == "nystrom")
            m.step(3)
            assert m.latest is not None
    except BaseException as exc:
        errors.append(repr(exc))
t = threading.Thread(target=work)
t.start()
t.join(120)
new = sorted(set(sys.modules) - before)
print("ERRORS", errors)
print("NEW", ",".join(new))
"""
    env = {**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines()
                 if line.startswith(("ERRORS", "NEW")))
    assert lines["ERRORS"] == "[]"
    assert lines.get("NEW", "").strip() == "", lines["NEW"]

def test_threads_import_around_the_gui_threads_import_hook():
    """An ``import`` statement in a thread does not enter PySide6's hook (which deadlocked
    against the GUI thread even for modules already loaded): a stand-in hook sees the main
    thread's imports only. Run in a fresh interpreter (the hook is process-wide)."""
    import subprocess
    import sys

    code = """
import builtins, threading
seen = []
plain = builtins.__import__
def hook(name, *args, **kwargs):  # stands in for PySide6's
    seen.append(threading.current_thread().name)
    return plain(name, *args, **kwargs)
builtins.__import__ = hook
from kernel_lab.gui import bypass_import_hook_in_threads
bypass_import_hook_in_threads()
bypass_import_hook_in_threads()  # once only
def work():
    import json
    from multiprocessing import context
    import email.mime.text  # a first import, too
    ctx = context  # noqa
t = threading.Thread(target=work, name="worker")
t.start(); t.join()
import colorsys
print("SEEN", sorted(set(seen)), "TEXT" if "email.mime.text" in __import__("sys").modules else "")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "SEEN ['MainThread'] TEXT" in out.stdout


def test_moving_one_log_slider_sends_that_value_only(window, qtbot):
    w = window
    w.model.set_dataset("sine", n=60)
    w.model.set_params(sigma=0.123456789, nu=3.33333e-4)  # e.g. from a session
    settle(w, qtbot)
    assert float(w.sigma.text()) == 0.123456789  # the entry shows the exact value
    w.lam.slider.setValue(w.lam.slider.value() + 5)
    settle(w, qtbot)
    assert w.model.params["sigma"] == 0.123456789 and w.model.params["nu"] == 3.33333e-4
    assert w.model.params["lam"] == float(w.lam.text())


def test_play_stops_when_there_is_nothing_to_step(window, qtbot):
    w = window
    w.model.set_dataset("sinc", n=60)
    w.model.set_params(method="gfc")
    w.speed.setValue(1)
    import kernel_lab.core.playground as cp

    w.play_button.setChecked(True)
    qtbot.waitUntil(lambda: not w.play_button.isChecked(), timeout=60_000)  # GFC done
    r = w.model.latest.primary
    assert r.extra["done"] and r.extra["features"] <= cp.gfc_model(60, 0).n_features
    steps = w.model.steps
    qtbot.wait(200)
    assert w.model.steps == steps  # stopped: no more steps asked for
    w.model.set_params(method="dsg")
    w.play_button.setChecked(True)
    qtbot.waitUntil(lambda: w.model.steps >= 10, timeout=20_000)
    w.model.set_params(method="krr")  # not a stepped method: Play stops
    qtbot.waitUntil(lambda: not w.play_button.isChecked(), timeout=5_000)
    w.model.set_params(method="dsg")
    w.model.set_dataset("paint-1d")  # nothing to fit: Play stops at once
    w.play_button.setChecked(True)
    qtbot.waitUntil(lambda: not w.play_button.isChecked(), timeout=5_000)
    assert w.model.steps == 0


def test_n_and_noise_regenerate_once_the_slider_rests_with_one_undo_step(window, qtbot):
    w = window
    w.model.set_dataset("sine", n=60)
    undo = len(w.model._undo)
    for value in (70, 80, 90, 100):  # keyboard steps, no mouse release
        w.n_slider.setValue(value)
    qtbot.waitUntil(lambda: w.model.points.n == 100, timeout=5_000)
    assert len(w.model._undo) == undo + 1
    w.noise_slider.setValue(5)
    qtbot.waitUntil(lambda: w.model.noise == 0.05, timeout=5_000)
    assert len(w.model._undo) == undo + 2 and w.model.points.n == 100


def test_an_n_move_survives_another_control_moved_before_the_slider_rests(window, qtbot):
    """Moving s (or any control that re-syncs the window from the model) while an n or
    noise move waits for the slider to rest must not snap that slider back."""
    w = window
    w.model.set_dataset("sine", n=60)
    w.model.set_params(method="nystrom")
    settle(w, qtbot)
    w.n_slider.setValue(140)
    w.noise_slider.setValue(20)
    w.s_slider.setValue(15)  # a refit and a sync of every control, within the 200 ms
    assert (w.n_slider.value(), w.noise_slider.value()) == (140, 20)
    qtbot.waitUntil(lambda: w.model.points.n == 140, timeout=5_000)
    assert w.model.noise == 0.2 and w.model.params["s"] == 15
    assert (w.n_slider.value(), w.noise_slider.value()) == (140, 20)


def test_a_1d_spray_is_one_undo_step(window, qtbot):
    w = window
    w.model.set_dataset("paint-1d")
    w.paint([(0.1, 0.2), (0.3, 0.4), (0.5, 0.6)])
    assert w.model.points.n == 3
    w.model.undo()
    assert w.model.points.n == 0


def test_a_window_given_a_model_computes_off_the_gui_thread_and_hands_it_back(qtbot):
    import threading

    from kernel_lab.model.playground import FitEngine, PlaygroundModel

    model = PlaygroundModel(engine=FitEngine(quick=True))
    threads = []
    real = model.engine.compute
    model.engine.compute = lambda req, **kw: threads.append(
        threading.current_thread().name) or real(req, **kw)
    w = PlaygroundWindow(model=model)
    qtbot.addWidget(w)
    model.set_params(lam=0.5)
    settle(w, qtbot)
    assert threads and set(threads) == {"playground-fit"}
    w.close()
    model.set_params(lam=0.25)  # the window is gone: the model computes by itself
    assert model.latest.serial == model._serial and threads[-1] == "MainThread"


def test_the_window_fits_on_the_one_worker_and_tear_down_can_join_it(qtbot):
    """The fits go through engine.worker.Worker (named in window.workers for tear_down),
    its answers reach the model on the GUI thread, and closing ends its thread."""
    import threading

    from kernel_lab.engine.worker import Worker

    w = PlaygroundWindow()
    qtbot.addWidget(w)
    assert isinstance(w.worker, Worker) and w.model.worker is w.worker
    assert w.workers == (w.worker,)
    received = []
    w.model.fit_ready.connect(lambda fit: received.append(threading.current_thread().name))
    w.model.set_params(lam=0.5)
    settle(w, qtbot)
    assert received and set(received) == {"MainThread"}
    w.close()
    assert w.worker.closed and w.worker.join(10)


def test_answers_arriving_after_the_window_closed_are_dropped(qtbot):
    w = PlaygroundWindow()
    w.model.set_dataset("moons", n=800)
    w.model.set_params(method="nystrom", s=200, leverage=True)  # still computing …
    w.close()  # … when the window goes
    qtbot.wait(800)  # an answer reaching deleted widgets would fail the test here
    assert not w.worker._thread.is_alive()


def test_a_failing_playground_preset_screenshot_returns_promptly(tmp_path, monkeypatch):
    import time

    from kernel_lab.core.errors import ParameterError
    from kernel_lab.gui.app import playground_screenshot
    from kernel_lab.model.playground import FitEngine

    def broken(self, req, **kw):
        raise ParameterError("a broken fit")

    monkeypatch.setattr(FitEngine, "compute", broken)
    t0 = time.monotonic()
    code = playground_screenshot(tmp_path / "shot.png", "playground-xor", timeout=60)
    assert code == 1 and time.monotonic() - t0 < 10
    assert (tmp_path / "shot.png").exists()


def test_the_drawn_boundary_is_the_zero_contour_as_pyqtgraph_traces_it(window, qtbot):
    import pyqtgraph as pgq

    w = window
    w.model.set_dataset("circles", n=300)
    w.model.set_params(method="krr", compare="rff", D=40)
    settle(w, qtbot)
    res = w.model.params["resolution"]
    values = w.model.latest.primary.grid.reshape(res, res)
    # pyqtgraph's own marching squares on the same image, in pixel units (centres at
    # i + 0.5) → data units
    ref = np.array(pgq.isocurve(values.T, 0.0, connected=False), dtype=float).reshape(-1, 2)
    ref = -core.EXTENT + (ref - 0.5) * (2 * core.EXTENT / (res - 1))
    xs, ys = w.contour.getData()
    drawn = np.column_stack([xs, ys])
    key = lambda P: np.unique(np.round(P, 9), axis=0)  # noqa: E731
    np.testing.assert_allclose(key(drawn), key(ref), atol=1e-9)
    assert len(w.compare_contour.getData()[0]) > 0  # the comparison's boundary, dashed
    # each pixel of the heatmap is centred on its grid point
    rect = w.image.mapRectToParent(w.image.boundingRect())
    h = 2 * core.EXTENT / (res - 1)
    np.testing.assert_allclose([rect.left(), rect.right()], [-core.EXTENT - h / 2,
                                                            core.EXTENT + h / 2])


def test_garbage_is_collected_on_the_gui_thread_only(window, qtbot):
    """Qt objects must be destroyed on the GUI thread: with a window open, automatic
    collection is off and the application's timer collects (see
    collect_garbage_on_the_gui_thread)."""
    import gc

    assert not gc.isenabled()
    app = QtWidgets.QApplication.instance()
    assert app.property("kernel_lab_gc")
    for _ in range(3 * gc.get_threshold()[0]):  # cycles enough for a generation-0 pass
        a = []
        a.append(a)
    before = gc.get_count()[0]
    qtbot.wait(600)
    assert gc.get_count()[0] < before  # collected by the timer, on this thread


def test_the_sliders_show_their_values_as_they_move(window, qtbot):
    """n, noise, s and D show their current value beside the slider, at once while the
    slider moves (the data are regenerated only once it rests)."""
    w = window
    w.open_preset("playground-nystrom")
    settle(w, qtbot)
    m = w.model
    shown = {k: label.text() for k, label in w.slider_values.items()}
    assert shown == {"n": f"{m.n}", "noise": f"{m.noise:.2f}", "s": f"{m.params['s']}",
                     "D": f"{m.params['D']}"}
    w.s_slider.setValue(42)
    w.D_slider.setValue(250)
    w.n_slider.setValue(321)
    w.noise_slider.setValue(7)
    assert [w.slider_values[k].text() for k in ("n", "noise", "s", "D")] == [
        "321", "0.07", "42", "250"]
    assert m.n == 1000  # not regenerated yet: the timer waits for the slider to rest


def _label(plot, side):
    return plot.getAxis(side).labelText


def test_the_small_plots_label_their_axes(window, qtbot):
    w = window
    w.open_preset("playground-bias-variance")  # regression, exact KRR: error against λ
    settle(w, qtbot)
    assert "λ" in _label(w.lam_plot, "bottom")
    assert _label(w.lam_plot, "left") == "MSE"
    assert "x" in _label(w.plot, "bottom") and "y" in _label(w.plot, "left")
    w.open_preset("playground-dsg")  # classification, DSG: error against the iteration
    settle(w, qtbot)
    assert "iteration" in _label(w.step_plot, "bottom")
    assert "misclassified" in _label(w.step_plot, "left")
    assert "x₁" in _label(w.plot, "bottom") and "x₂" in _label(w.plot, "left")
    w.open_preset("playground-gfc")  # regression, GFC: error against the feature count
    settle(w, qtbot)
    assert "features" in _label(w.step_plot, "bottom")
    assert _label(w.step_plot, "left") == "MSE"
    assert "ω" in _label(w.freq_plot, "bottom")


def test_the_gfc_preset_shows_the_test_error_creeping_up(window, qtbot):
    """What its text promises is on the screen: the step plot has a log error axis for a
    regression (the first feature's 0.06 squeezed everything after it into a flat line on
    a linear one) and the test curve drawn rises well above its minimum while the
    training curve falls."""
    w = window
    w.open_preset("playground-gfc")
    settle(w, qtbot)
    assert w.step_plot.getPlotItem().ctrl.logYCheck.isChecked()
    k, train = w.step_train.getData()
    _k, test = w.step_test.getData()
    assert k[-1] == w.model.steps
    assert test[-1] > 1.3 * test.min() and train[-1] < train[1]


def test_painted_points_are_added_to_the_drawn_ones_as_a_fresh_drawing_would(window, qtbot):
    w = window
    w.model.set_dataset("moons", n=60)
    settle(w, qtbot)
    before = {k: item.points() for k, item in w.point_items.items()}
    w.model.add_points(np.array([[0.5, 0.5], [-1.0, 2.0]]), 1.0)
    w.model.add_points(np.array([[1.5, -0.5]]), -1.0)
    settle(w, qtbot)

    def drawn():
        return ({k: np.array([[p.pos().x(), p.pos().y()] for p in item.points()]).reshape(-1, 2)
                 for k, item in w.point_items.items()},
                {k: v.copy() for k, v in w.view.groups.items()})

    added, groups = drawn()
    assert len(added[1.0, False]) == len(before[1.0, False]) + 2
    assert len(added[-1.0, False]) == len(before[-1.0, False]) + 1
    w.view._points = None  # force a drawing from scratch
    w.draw_points()
    fresh, fresh_groups = drawn()
    for k in fresh:
        np.testing.assert_array_equal(added[k], fresh[k])
        np.testing.assert_array_equal(groups[k], fresh_groups[k])


def _argb(image_item) -> np.ndarray:
    """The pixels pyqtgraph hands Qt for ``image_item``, as ARGB32 (whatever its format)."""
    from PySide6 import QtGui

    image_item.render()
    q = image_item.qimage.convertToFormat(QtGui.QImage.Format.Format_ARGB32)
    raw = np.frombuffer(q.constBits(), dtype=np.uint8, count=q.sizeInBytes())
    return raw.reshape(q.height(), q.bytesPerLine())[:, :4 * q.width()].copy()


@pytest.mark.parametrize("dataset, task", [("moons", "classification"),
                                           ("surface", "regression")])
def test_the_worker_colours_the_heatmap_as_the_view_would(qtbot, dataset, task):
    """The heatmap is coloured off the GUI thread (``Fit.picture``): the image Qt gets is
    pixel for pixel the one the view's own colour map and levels make."""
    import pyqtgraph as pg

    from kernel_lab.engine.playground.fit import FitEngine, Request
    from kernel_lab.engine.playground.params import resolve_fit_params
    from kernel_lab.engine.playground.state import Points
    from kernel_lab.plotting.function_view import FunctionView, picture_painter

    X, y, test = core.generate(dataset, 300, 0.2, seed=1)
    fit = FitEngine().compute(Request(1, 1, Points(X, y, test), 2, task,
                                      resolve_fit_params({"method": "krr"}), 0))
    fit.primary.grid[[0, 4321]] = np.nan  # no value there: transparent in both
    picture_painter()(fit)
    assert fit.picture.shape == (100, 100, 4) and fit.picture.dtype == np.uint8
    assert fit.picture[0, 0, 3] == 0 and (fit.picture[..., 3] == 0).sum() == 2
    images = []
    for picture in (None, fit.picture):
        plot = pg.PlotWidget()
        qtbot.addWidget(plot)
        view = FunctionView(plot)
        view.draw_fit(2, task, fit.grid, fit.primary.grid, picture=picture)
        images.append(_argb(view.image))
    np.testing.assert_array_equal(images[0], images[1])


def test_the_window_draws_the_workers_picture(window, qtbot):
    window.model.set_dataset("moons", n=200, noise=0.2)
    settle(window, qtbot)
    drawn = []
    window.model.fit_ready.connect(drawn.append)
    window.model.set_params(sigma=0.8)
    settle(window, qtbot)
    assert drawn and drawn[-1].picture is not None
    np.testing.assert_array_equal(window.view.image.image, drawn[-1].picture)
    res = window.model.params["resolution"]
    np.testing.assert_array_equal(drawn_heatmap(window).T.ravel(), drawn[-1].primary.grid)
    assert drawn_heatmap(window).shape == (res, res)


def test_the_lambda_plot_names_the_method_whose_curve_it_draws(window, qtbot):
    """Under Nyström ridge compared with exact KRR the λ curve is KRR's: the title says it
    is the comparison's; under exact CKRR, CKRR's own. Its axes label their ticks in one
    form each (pyqtgraph's own wrote powers of ten as 10⁻² beside decimals)."""
    from tests.gui.test_plot_axes import drawn_labels

    w = window
    w.model.set_dataset("sine", n=60)
    w.model.set_params(method="nystrom", compare="krr")
    settle(w, qtbot)
    title = w.lam_plot.getPlotItem().titleLabel.text
    assert title.startswith("exact KRR (the comparison)"), title
    w.model.set_params(method="ckrr", compare="")
    settle(w, qtbot)
    title = w.lam_plot.getPlotItem().titleLabel.text
    assert title.startswith("exact CKRR:"), title
    for side in ("bottom", "left"):
        texts = [t for t, _ in drawn_labels(w.lam_plot.getPlotItem().getAxis(side))]
        assert len(texts) >= 2 and not any("+" in t or "⁻" in t for t in texts), texts


def test_collection_switched_back_on_by_a_library_is_switched_off_again(window, qtbot):
    """Dask's ``disable_gc`` decorator (its array slicing) switches automatic collection
    on after every call when it was on at Dask's import; the application's timer switches
    it off again before its next collection, and a new window's set-up at once."""
    import gc

    from kernel_lab.gui import preload_for_threads

    gc.enable()  # what a sliced Dask array does in this process
    qtbot.waitUntil(lambda: not gc.isenabled(), timeout=5_000)
    gc.enable()
    preload_for_threads()  # what every window calls as it is set up
    assert not gc.isenabled()


def test_a_large_n_preview_says_so_until_the_exact_fit_replaces_it(window, qtbot):
    from kernel_lab.engine.playground.fit import PREVIEW_ABOVE, PREVIEW_S

    drawn: list[tuple[str, bool, bool]] = []  # (read-out, a preview?, the exact follows?)
    window.model.fit_ready.connect(lambda fit: drawn.append(
        (window.readout.text(), window.drawn_preview, "preview" in fit.primary.extra)))
    window.model.set_params(method="krr", lam=0.1)
    window.model.set_dataset("moons", n=1600, noise=0.25)
    assert int((~window.model.points.test).sum()) > PREVIEW_ABOVE
    settle(window, qtbot)
    qtbot.waitUntil(lambda: window.drawn_complete, timeout=60_000)
    drawn.clear()
    window.model.set_params(sigma=0.61)
    serial = window.model.serial
    qtbot.waitUntil(lambda: window.drawn_serial == serial and window.drawn_complete,
                    timeout=60_000)
    text, shown_as_preview, was_preview = drawn[0]
    assert was_preview and shown_as_preview
    assert f"preview: Nyström, s = {PREVIEW_S}" in text
    assert all(not p for _, p, _ in drawn[1:])  # then only exact fits
    assert "preview" not in window.readout.text() and not window.drawn_preview
    pts = window.model.points
    est = KernelRidge(0.1, kernel="gaussian", kernel_params={"sigma": 0.61}).fit(
        pts.X[~pts.test], pts.y[~pts.test])
    np.testing.assert_allclose(window.model.latest.primary.grid,
                               est.predict(window.model.latest.grid), atol=1e-10)


def test_the_points_slider_reaches_the_playgrounds_limit(window, qtbot):
    """At the limit (e.g. after Send columns), the slider shows the data's n, not a cap."""
    from kernel_lab.core.playground import MAX_POINTS

    assert window.n_slider.maximum() == MAX_POINTS
    window.model.set_dataset("moons", n=4000, noise=0.25)
    qtbot.waitUntil(lambda: window.n_slider.value() == 4000, timeout=10_000)
