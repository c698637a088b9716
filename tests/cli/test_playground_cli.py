"""The Playground on the lab's rails: its presets in ``kernel-lab list``, a preset run
headless by ``kernel-lab run --preset`` (result.json checked against scikit-learn, the
function view as plot.png), ``kernel-lab report`` of that folder, and Playground
sessions read and written by the lab's session code."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kernel_lab.cli import main

SIX = ("playground-bandwidth", "playground-bias-variance", "playground-dsg",
       "playground-gfc", "playground-nystrom", "playground-xor")


def test_list_shows_the_six_playground_presets_under_their_own_heading(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "Playground presets" in out
    lab, _, playground = out.partition("Playground presets")
    for name in SIX:
        assert name in playground and name not in lab
    assert main(["list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc["playground_presets"]) == sorted(SIX)
    assert not set(SIX) & set(doc["presets"])


@pytest.fixture(scope="module")
def xor_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("xor")
    assert main(["run", "--preset", "playground-xor", "--out", str(out), "-q"]) == 0
    return out


def test_a_playground_preset_runs_headless_and_its_fit_is_exact_krr(xor_run):
    from sklearn.kernel_ridge import KernelRidge

    doc = json.loads((xor_run / "result.json").read_text(encoding="utf-8"))
    fit = doc["fit"]
    assert doc["view"] == "playground" and fit["method"] == "krr"
    params = doc["params"]
    assert (params["kernel"], params["sigma"], params["lam"]) == ("gaussian", 0.7, 0.1)
    assert doc["data"]["dataset"] == "xor" and doc["data"]["n"] == 400
    X = np.array(doc["points"]["X"])
    y = np.array(doc["points"]["y"])
    test = np.array(doc["points"]["test"])
    assert X.shape == (400, 2) and test.dtype == bool and 0 < test.sum() < 400
    ref = KernelRidge(alpha=0.1, kernel="rbf", gamma=1 / (2 * 0.7 ** 2)).fit(X[~test],
                                                                              y[~test])
    ref_train = np.mean(np.sign(ref.predict(X[~test])) != y[~test])
    ref_test = np.mean(np.where(ref.predict(X[test]) >= 0, 1.0, -1.0) != y[test])
    assert fit["train_error"] == pytest.approx(ref_train, abs=1e-12)
    assert fit["test_error"] == pytest.approx(ref_test, abs=1e-12)
    assert 0 < fit["test_error"] < 0.15  # the boundary bends around the quadrants
    grid = np.array(fit["grid"]["values"])
    G = np.array(fit["grid"]["points"])
    np.testing.assert_allclose(grid, ref.predict(G), atol=1e-8)


def test_the_plot_is_the_function_view(xor_run):
    from PySide6 import QtGui

    from kernel_lab.plotting.render import ensure_app

    ensure_app()
    image = QtGui.QImage(str(xor_run / "plot.png"))
    assert image.width() >= 400 and image.height() >= 400
    # a diverging heatmap: both the red and the blue class side appear, and black
    # boundary and point outlines
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 7)
               for y in range(0, image.height(), 7)}
    reds = [c for c in colours if int(c[1:3], 16) > int(c[5:7], 16) + 60]
    blues = [c for c in colours if int(c[5:7], 16) > int(c[1:3], 16) + 60]
    assert len(reds) > 10 and len(blues) > 10



def test_the_plot_says_which_fit_and_which_points(xor_run):
    """plot.png is read without the window: its caption names the method and its errors
    (as result.json has them) and what filled and hollow points are, and the title row is
    tall enough for every line (pyqtgraph fixes it at one line)."""
    from kernel_lab.plotting.function_view import _caption

    doc = json.loads((xor_run / "result.json").read_text(encoding="utf-8"))
    text = _caption(doc, "XOR")
    fit = doc["fit"]
    assert f"krr: train misclassified {fit['train_error']:.3g}" in text
    assert f"test misclassified {fit['test_error']:.3g}" in text
    assert "filled: train points" in text and "hollow: test points" in text
    assert "the class boundary" in text and "landmarks" not in text
    regression = {**doc, "data": {**doc["data"], "task": "regression", "dim": 1,
                                  "dataset": "sine"}}
    assert "train mse" in _caption(regression, "") and "true function" in _caption(
        regression, "")


def test_a_playground_with_only_painted_training_points_reports(tmp_path, capsys):
    """Painted points are training points: no test error, which the report and the plot
    say instead of failing on it (a TypeError before)."""
    from kernel_lab.engine.session import Session, save_session
    from kernel_lab.model.playground import PlaygroundModel

    model = PlaygroundModel()
    model.set_dataset("paint-1d")
    xs = np.linspace(-2, 2, 12)
    model.add_points(xs[:, None], np.sin(xs))
    assert not model.points.test.any()
    path = save_session(Session(None, playground=model.state()), tmp_path / "painted.json")
    html = tmp_path / "painted.html"
    assert main(["report", str(path), "--out", str(html), "-q"]) == 0, capsys.readouterr()
    assert "data:image/png;base64," in html.read_text(encoding="utf-8")


@pytest.mark.parametrize("flags", [["--target", "y"], ["--drop-nan"], ["--subsample", "50"],
                                   ["--test-fraction", "0.5"], ["--backend", "processes"]])
def test_data_and_backend_options_are_refused_for_a_playground_preset(flags, tmp_path,
                                                                      capsys):
    """A Playground preset's data are its own: an option that would change them is
    refused by name, not dropped silently (it exited 0 before)."""
    code = main(["run", "--preset", "playground-xor", *flags, "--out", str(tmp_path / "x"),
                 "-q"])
    assert code == 2
    assert flags[0] in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_report_takes_the_playground_run_folder(xor_run, tmp_path):
    html = tmp_path / "r.html"
    assert main(["report", str(xor_run), "--out", str(html), "-q"]) == 0
    text = html.read_text(encoding="utf-8")
    assert "data:image/png;base64," in text and "XOR" in text and "krr" in text


def test_overrides_are_checked_by_the_parameter_declarations(tmp_path, capsys):
    code = main(["run", "--preset", "playground-xor", "--set", "sigma=-1",
                 "--out", str(tmp_path / "x"), "-q"])
    assert code == 2
    assert "sigma" in capsys.readouterr().err


def test_a_playground_session_round_trips_through_the_lab_session_code(tmp_path):
    from kernel_lab.engine.session import Session, load_session, save_session
    from kernel_lab.model.playground import PlaygroundModel

    model = PlaygroundModel()
    model.set_dataset("paint-2d")
    model.add_points(np.array([[0.1234567890123, -1.0 / 3.0], [1.5, 2.0]]), -1.0)
    model.add_points(np.array([[-2.0, 0.7]]), 1.0)
    model.set_params(method="rff", D=77, lam=0.0123)
    path = save_session(Session(None, playground=model.state()), tmp_path / "p.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["format"] == "kernel-lab-session"
    session = load_session(path)
    assert session.spec is None
    other = PlaygroundModel()
    other.apply(session.playground)
    assert other.params == model.params and other.dataset == "paint-2d"
    for a, b in ((other.points.X, model.points.X), (other.points.y, model.points.y),
                 (other.points.test, model.points.test)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_a_bad_playground_session_names_the_file_and_the_parameter(tmp_path):
    from kernel_lab.engine.session import SessionError, load_session

    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "kernel-lab-session", "version": 1,
                                "playground": {"dataset": "xor",
                                               "params": {"sigma": -1.0}}}))
    with pytest.raises(SessionError, match=r"bad\.json.*sigma"):
        load_session(path)


def test_old_playground_files_still_open(tmp_path):
    """A lab session saved with the Playground open (its state under "playground") and
    a Playground preset file of the old format."""
    from kernel_lab.engine.session import load_session

    state = {"dataset": "sine", "n": 30, "noise": 0.1, "steps": 0, "note": "",
             "params": {"method": "krr", "compare": "", "kernel": "gaussian",
                        "sigma": 0.5, "lam": 0.1, "s": 20, "sampler": "recursive-rls",
                        "D": 50, "orthogonal": False, "nu": 0.001, "leverage": False,
                        "resolution": 100, "seed": 0},
             "points": {"X": [[0.0], [1.0]], "y": [0.5, 0.25], "test": [False, False]}}
    old_session = {"format": "kernel-lab-session", "version": 1,
                   "experiment": "krr-path", "params": {},
                   "data": {"spec": "gaussian:n=50,p=5", "options": {}},
                   "playground": state}
    (tmp_path / "old.json").write_text(json.dumps(old_session))
    session = load_session(tmp_path / "old.json")
    assert session.spec.experiment == "krr-path"
    assert session.playground.points.y.tolist() == [0.5, 0.25]
    old_preset = {"format": "kernel-lab-playground", "version": 1, "title": "T",
                  "about": "A", "playground": {"dataset": "xor", "n": 50}}
    (tmp_path / "preset.json").write_text(json.dumps(old_preset))
    session = load_session(tmp_path / "preset.json")
    assert session.title == "T" and session.playground.dataset == "xor"
    assert session.playground.n == 50
