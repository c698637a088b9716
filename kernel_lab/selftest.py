"""``kernel-lab --self-test``: a quick check that an installation — frozen or not — works.

Runs every registered experiment with tiny settings headless, reads the table formats (CSV,
xlsx, svmlight, a Parquet file and a folder of Parquet files), writes and re-reads a session,
an export and a model file (skops), renders a plot and a report, then opens the main window
on the offscreen platform and runs one experiment through the same worker process the window
always uses (the multiprocessing-under-PyInstaller trap), and closes it. One line per check,
a summary, exit code 0 only if everything passed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: Tiny settings per experiment (data, parameters).
TINY = {
    "krr-path": ("gaussian:n=60,p=3", {"n_lams": 4}),
    "ckrr-risk": ("gaussian:n=40,p=20", {"trials": 2, "n_lams": 4, "kernels": ["linear"]}),
    "spectrum": ("gaussian:n=60,p=20", {}),
    "learning-curve": ("friedman:n=120,n_test=60", {"n_iter": 20, "points": 3, "rff_max": 40,
                                                    "exact_max": 200}),
    "nystrom": ("clusters:n=150", {"sizes": "5,10", "trials": 1, "eval_points": 150,
                                   "samplers": ["uniform", "recursive-rls"]}),
    "gfc": ("breiman:n=150,n_test=80", {"n_features": 4, "n_passes": 1, "points": 1,
                                        "bandwidths": 2, "methods": ["gfc", "rff-gaussian"]}),
}


def run_self_test(out: Callable[[str], None] = print) -> int:
    """Run the checks; returns the process exit code."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    results: list[bool] = []
    tmp = Path(tempfile.mkdtemp(prefix="kernel-lab-selftest-"))

    def check(name: str, fn: Callable[[], str | None]) -> None:
        t0 = time.perf_counter()
        try:
            detail = fn() or ""
        except Exception as exc:  # a failed check is reported, and the others still run
            detail = f"{type(exc).__name__}: {exc}"
            if os.environ.get("KERNEL_LAB_DEBUG"):
                traceback.print_exc()
            ok = False
        else:
            ok = True
        results.append(ok)
        out(f"{'PASS' if ok else 'FAIL'}  {name:<34} {time.perf_counter() - t0:6.2f} s  "
            f"{detail}")

    from kernel_lab import __version__
    from kernel_lab.engine import run_experiment
    from kernel_lab.experiments import list_experiments

    kind = "frozen" if getattr(sys, "frozen", False) else "Python"
    out(f"Kernel Lab {__version__} self-test ({kind} {sys.version.split()[0]}, {sys.platform})")
    last: dict = {}
    for cls in list_experiments():
        data, params = TINY.get(cls.name, (cls.default_data, {}))

        def one(cls=cls, data=data, params=params) -> str:
            r = run_experiment(cls.name, params, data=data)
            if not r.table:
                raise RuntimeError("empty result table")
            last["result"] = r
            return f"{len(r.table)} columns"

        check(f"experiment {cls.name}", one)

    def session_round_trip() -> str:
        from kernel_lab.data.source import DataSource
        from kernel_lab.engine import RunSpec
        from kernel_lab.engine.session import Session, load_session, save_session

        s = Session(RunSpec("krr-path", {"n_lams": 4, "kernel": "laplace"},
                            DataSource.from_spec("gaussian:n=60,p=3")))
        path = save_session(s, tmp / "session.json")
        back = load_session(path)
        if back.spec.params["kernel"] != "laplace" or back.spec.data != s.spec.data:
            raise RuntimeError("the session read back differs")
        return path.name

    def export_round_trip() -> str:
        from kernel_lab.engine.output import write_run

        files = write_run(last["result"], tmp / "run")
        doc = json.loads(files["result"].read_text(encoding="utf-8"))
        header = files["curves"].read_text(encoding="utf-8").splitlines()[0].split(",")
        if doc["experiment"] != last["result"].experiment or header != list(doc["columns"]):
            raise RuntimeError("result.json and curves.csv do not agree")
        return "result.json, curves.csv"

    def plot_and_report() -> str:
        from kernel_lab.plotting.render import ensure_app, render_plots
        from kernel_lab.plotting.report import write_report

        ensure_app()
        from kernel_lab.experiments import get_experiment

        r = last["result"]
        png = render_plots(r.table, get_experiment(r.experiment).plots, tmp / "plot.png",
                           summaries=r.summaries)
        page = write_report(r.to_dict(), tmp / "report.html")
        if not png.read_bytes().startswith(b"\x89PNG") or "base64," not in page.read_text():
            raise RuntimeError("plot or report incomplete")
        return "plot.png, report.html"

    def window_run() -> str:
        from PySide6 import QtCore

        from kernel_lab.gui.app import MainWindow
        from kernel_lab.plotting.render import ensure_app

        ensure_app()
        settings = QtCore.QSettings(str(tmp / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        window = MainWindow(settings)
        try:
            window.show()
            window.experiment_box.setCurrentIndex(window.experiment_box.findData("ckrr-risk"))
            window.data_panel.set_spec("gaussian:n=40,p=20")
            window.form.set_values({"trials": 2, "n_lams": 4})
            if window.run_blocking(120) is None:
                raise RuntimeError(f"no result from the worker process: "
                                   f"{window.status.text()}")
            pid = window.runs.worker_pid
        finally:
            window.close()
        return f"worker process {pid}"

    from kernel_lab.engine.presets import load_preset, playground_preset_names
    from kernel_lab.model.playground import PlaygroundModel

    for name in playground_preset_names():
        def playground(name: str = name) -> str:
            model = PlaygroundModel()
            fits: list = []
            model.fit_ready.connect(fits.append)
            model.failed.connect(lambda msg: fits.append(RuntimeError(msg)))
            model.apply(load_preset(name).playground, points=False)
            if not fits or isinstance(fits[-1], Exception):
                raise RuntimeError(f"no fit: {fits[-1] if fits else 'nothing computed'}")
            grid = fits[-1].primary.grid
            if not np.isfinite(grid).all():
                raise RuntimeError("the fitted function is not finite")
            return f"{model.points.n} points, {grid.size} grid values"
        check(f"playground {name}", playground)

    def playground_window() -> str:
        from kernel_lab.gui.app import playground_screenshot
        from kernel_lab.plotting.render import ensure_app

        ensure_app()
        png = tmp / "playground.png"
        if playground_screenshot(png, "playground-xor", 120) != 0:
            raise RuntimeError("the Playground window did not draw its fit")
        return f"{png.stat().st_size // 1024} KiB PNG"

    def csv_tables() -> str:
        import gzip

        import numpy as np

        from kernel_lab.data.read import load_table

        path = tmp / "numbers.csv"
        rows = np.arange(3000.0).reshape(1000, 3) / 7
        np.savetxt(path, rows, delimiter=",", fmt="%.17g", header="a,b,y", comments="")
        fast = load_table(path)
        text = tmp / "text.csv.gz"
        text.write_bytes(gzip.compress("a,kind,y\n1,röd,2\n3,blå,4\n5,röd,6\n"
                                       .encode("cp1252")))
        strict = load_table(text)
        if not (np.array_equal(fast.X, rows[:, :2]) and strict.X.shape == (3, 3)):
            raise RuntimeError("a numeric or a text table was read wrongly")
        from openpyxl import Workbook
        from sklearn.datasets import dump_svmlight_file

        book = Workbook()
        for row in (["a", "b", "y"], [1.5, "x", 2], [2.5, "z", 3], [3.5, "x", 4]):
            book.active.append(row)
        book.save(tmp / "t.xlsx")
        sheet = load_table(tmp / "t.xlsx")
        X = np.arange(6.0).reshape(3, 2)
        dump_svmlight_file(X, np.array([1.0, -1.0, 1.0]), str(tmp / "t.svm"))
        sparse = load_table(tmp / "t.svm")
        if not (sheet.X.shape == (3, 3) and np.array_equal(sparse.X, X)):
            raise RuntimeError("an .xlsx or svmlight file was read wrongly")
        return ("numbers by pandas, a gzipped Windows-1252 text table one-hot, xlsx by "
                "openpyxl, svmlight by scikit-learn")

    def parquet_tables() -> str:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from kernel_lab.data.read import load_table
        from kernel_lab.engine import run_experiment

        rng = np.random.default_rng(5)
        X = rng.uniform(-1, 1, size=(600, 3))
        y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.standard_normal(600)
        columns = {"x1": X[:, 0], "x2": X[:, 1], "x3": X[:, 2], "y": y}
        file = tmp / "rows.parquet"
        kind = np.where(X[:, 2] > 0, "up", "down")
        pq.write_table(pa.table({**columns, "kind": kind}), file, row_group_size=250)
        table = load_table(file, target="y")
        up = table.feature_names.index("kind=up") if "kind=up" in table.feature_names else 0
        if not (np.array_equal(table.X[:, :3], X) and np.array_equal(table.y, y)
                and table.feature_names[:3] == ["x1", "x2", "x3"]
                and np.array_equal(table.X[:, up], (kind == "up").astype(float))):
            raise RuntimeError("the Parquet file was read wrongly")
        folder = tmp / "rows"
        folder.mkdir()
        for k, (a, b) in enumerate(((0, 130), (130, 420), (420, 600))):
            pq.write_table(pa.table({n: c[a:b] for n, c in columns.items()}),
                           folder / f"part-{k}.parquet")
        from kernel_lab.core.rows import (
            LocalParts,
            PartitionedData,
            RowPlan,
            array_parts,
            standardize_plan,
        )

        # the same rows as one piece in memory: the same split and numbers, bit for bit
        parts = LocalParts(array_parts(X, y, 1))
        memory = PartitionedData(parts, standardize_plan(parts, RowPlan.split(3, 600, 0.25)),
                                 ["x1", "x2", "x3"], "y", name="memory")
        params = {"samplers": ["uniform", "rp-cholesky"], "sizes": "5,15", "trials": 1,
                  "eval_points": 200, "lam": 0.1, "sigma": 1.5, "seed": 3}
        kept = run_experiment("nystrom", params, data=f"{folder}:partitions=keep")
        same = run_experiment("nystrom", params, data=memory)
        key = "spectral_median[rp-cholesky]"
        a, b = np.asarray(kept.table[key]), np.asarray(same.table[key])
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if not (a.size == 2 and np.allclose(a, b, rtol=1e-8, atol=1e-12) and a[1] < a[0]):
            raise RuntimeError(f"Nyström on a Parquet folder: spectral errors {a} at s = 5, "
                               f"15; {b} on the same rows in memory")
        return (f"a file by pyarrow {pa.__version__}; nystrom on a folder of 3 files (spectral "
                f"error {a[0]:.3g} → {a[1]:.3g}, as on the same rows in memory)")

    def model_round_trip() -> str:
        import pandas as pd

        from kernel_lab.core.models import NystromRidge
        from kernel_lab.data.pipeline import model_pipeline
        from kernel_lab.data.source import DataSource
        from kernel_lab.engine.model_file import SavedModel, load_model, save_model

        rng = np.random.default_rng(11)
        X = rng.uniform(-1, 1, size=(200, 2))
        kind = np.where(X[:, 0] + 0.3 * rng.standard_normal(200) > 0, "up", "down")
        frame = pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "kind": kind,
                              "y": np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + (kind == "up")})
        csv = tmp / "model-rows.csv"
        frame.to_csv(csv, index=False)
        data = DataSource.from_spec(str(csv), {"target": "y"}).open(seed=2)
        fitted = NystromRidge(0.01, kernel_params={"sigma": 1.0}, n_components=20,
                              random_state=2).fit(data.X_train, data.y_train)
        pipeline = model_pipeline(data, fitted)
        rows = frame.drop(columns="y")
        path = save_model(SavedModel({"nystrom": pipeline}, {"experiment": "self-test"}),
                          tmp / "model.skops")
        back = load_model(path).models["nystrom"]
        before, after = pipeline.predict(rows), back.predict(rows)
        if not (np.array_equal(before, after) and np.isfinite(after).all()):
            raise RuntimeError(f"the model read back predicts differently (largest "
                               f"difference {np.max(np.abs(after - before)):.3g})")
        return (f"{path.name}: Nyström ridge with the table's typing, "
                f"{path.stat().st_size // 1024} KiB, the same {len(rows)} predictions read back")

    check("read CSV tables (also .gz, .xlsx, svmlight)", csv_tables)
    check("read Parquet files and folders", parquet_tables)
    check("playground window", playground_window)
    check("session save and open", session_round_trip)
    check("export result.json and curves.csv", export_round_trip)
    check("model file save, load and predict", model_round_trip)
    check("plot PNG and HTML report", plot_and_report)
    check("window run via the worker process", window_run)
    passed = sum(results)
    out(f"{passed} of {len(results)} checks passed" + ("" if passed == len(results)
                                                        else " — see FAIL lines above"))
    return 0 if passed == len(results) else 1
