"""*File → Export model…* without widgets: which run can be exported, the request handed to
the engine's export (a stand-in here: the test's own function, with the engine's
signature), its progress, its failure and its cancellation on a worker thread."""

from __future__ import annotations

import json
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernel_lab.core.errors import KernelLabError
from kernel_lab.data.source import DataSource
from kernel_lab.engine import RunSpec
from kernel_lab.engine.atomic import write_atomic
from kernel_lab.engine.handle import InlineLauncher, RunHandle
from kernel_lab.engine.worker import Worker
from kernel_lab.model import LabModel, RunState
from kernel_lab.model import export as model_export
from kernel_lab.model.export import ModelExport, default_path, describe_report, export_job
from tests.model.qtfree import run_without_qt

DATA = "gaussian:n=60,p=30,cov=toeplitz,rho=0.4,noise=0.5"
SMALL = {"kernels": ["linear", "exponential"], "trials": 3, "n_lams": 6, "seed": 5}


@dataclass
class Report:
    """What the engine's export reports: the file, the models (the default first), per
    model its test error and notes."""

    path: Path
    models: list[str]
    test_errors: dict[str, tuple[float | None, str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)


class FakeExport:
    """Writes a small JSON file naming the run it was given (whole, as the engine's does),
    after reporting progress in ``steps`` steps; records its calls."""

    def __init__(self, steps: int = 3, fail: Exception | None = None,
                 gate: threading.Event | None = None) -> None:
        self.calls: list[tuple[RunSpec, object, Path]] = []
        self.steps, self.fail, self.gate = steps, fail, gate
        self.reached = threading.Event()

    def __call__(self, spec, result, path, progress=None):
        self.calls.append((spec, result, Path(path)))
        for i in range(self.steps):
            if progress is not None:
                progress(i / self.steps, f"refitting {i + 1} of {self.steps}")
            self.reached.set()
            if self.gate is not None:
                self.gate.wait(5)
        if progress is not None:
            progress(1.0, "saving")  # a cancelled export stops here, before the file
        if self.fail is not None:
            raise self.fail
        write_atomic(path, json.dumps({"experiment": spec.experiment,
                                       "seed": spec.seed}))
        best = f"{spec.experiment} best"
        return Report(Path(path), [best, "baseline"],
                      {best: (0.125, "test MSE"), "baseline": (None, "")},
                      {best: ["refitted on all 45 training rows (the run used 30)"],
                       "baseline": ["λ = 0.5: the run's"]})


@pytest.fixture
def fake(monkeypatch):
    f = FakeExport()
    monkeypatch.setattr(model_export, "export_run", f)
    return f


@pytest.fixture
def lab():
    m = LabModel(InlineLauncher())
    m.set_experiment("ckrr-risk", SMALL)
    m.load_data(DataSource.from_spec(DATA))
    return m


def test_only_a_finished_run_can_be_exported(lab):
    export = ModelExport(lab)
    seen: list[bool] = []
    export.available_changed.connect(seen.append)
    assert not export.available and "run the experiment" in export.why_not()
    lab.start_run()
    assert export.available and seen == [True]
    spec, result = export.run
    assert result is lab.result and spec.experiment == "ckrr-risk"
    assert dict(spec.params) == result.params  # the spec the run was started with
    lab.set_experiment("krr-path")  # its results are dropped
    assert not export.available and seen == [True, False]


def test_a_finished_run_of_an_experiment_without_models_is_not_exportable():
    """spectrum draws curves of the data, no fit: its finished run offers no export, and
    the reason says so (the CLI refuses --save-model for it before the run)."""
    lab = LabModel(InlineLauncher())
    lab.set_experiment("spectrum")
    export = ModelExport(lab)
    lab.start_run()
    assert lab.state is RunState.DONE and lab.result is not None
    assert not export.available
    assert "fits no model" in export.why_not()


def test_a_run_in_progress_cancelled_or_failed_is_not_exportable():
    handles: list[RunHandle] = []

    def launch(spec):
        handles.append(RunHandle(len(handles) + 1, spec, submit=lambda h: None,
                                 cancel=lambda h: None))
        return handles[-1]

    lab = LabModel(launch)
    lab.set_experiment("ckrr-risk", SMALL)
    export = ModelExport(lab)
    lab.start_run()
    assert lab.state is RunState.RUNNING and not export.available
    assert "in progress" in export.why_not()
    lab.cancel_run()
    assert not export.available
    lab.start_run()
    handles[-1].deliver("failed", "bad", True)
    assert lab.state is RunState.FAILED and not export.available


def test_the_export_gets_the_runs_spec_and_result_and_says_what_it_wrote(
        lab, fake, tmp_path):
    lab.start_run()
    export = ModelExport(lab)
    seen: dict[str, list] = {"started": [], "progress": [], "finished": [], "failed": []}
    export.started.connect(seen["started"].append)
    export.progressed.connect(lambda f, m: seen["progress"].append((f, m)))
    export.finished.connect(lambda report, text: seen["finished"].append((report, text)))
    export.failed.connect(seen["failed"].append)
    lab.set_params({**lab.values, "n_lams": 7})  # stale now: the shown run is exported
    export.start(tmp_path / "model")  # no suffix: .skops added
    path = tmp_path / "model.skops"
    assert seen["started"] == [path]
    (spec, result, written), = fake.calls
    assert result is lab.result and written == path and spec.params["n_lams"] == 6
    assert json.loads(path.read_text()) == {"experiment": "ckrr-risk", "seed": 5}
    fractions = [f for f, _ in seen["progress"]]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    (report, text), = seen["finished"]
    assert report.path == path and not seen["failed"]
    # the status line: the default model's first note, the others in the Log
    assert text == (f"Exported 2 models: ckrr-risk best (test MSE 0.125); baseline (the "
                    f"first is the default) to model.skops in {tmp_path}. Refitted on all "
                    "45 training rows (the run used 30). (1 more note in the Log.)")
    assert describe_report(report) == (
        f"Exported 2 models: ckrr-risk best (test MSE 0.125); baseline (the first is the "
        f"default) to model.skops in {tmp_path}. ckrr-risk best: Refitted on all 45 "
        "training rows (the run used 30). baseline: λ = 0.5: the run's.")
    assert not export.busy


def test_a_failed_export_is_said_naming_the_file_and_the_next_one_works(
        lab, monkeypatch, tmp_path):
    lab.start_run()
    export = ModelExport(lab)
    failed: list[str] = []
    export.failed.connect(failed.append)
    monkeypatch.setattr(model_export, "export_run",
                        FakeExport(fail=KernelLabError("column 'x3' has text")))
    export.start(tmp_path / "a.skops")
    assert failed == ["The model was not exported to a.skops: column 'x3' has text"]
    assert not (tmp_path / "a.skops").exists() and export.available
    monkeypatch.setattr(model_export, "export_run", FakeExport(fail=ValueError("boom")))
    export.start(tmp_path / "b.skops")
    assert failed[-1] == "Exporting the model to b.skops failed: ValueError: boom"
    good = FakeExport()
    monkeypatch.setattr(model_export, "export_run", good)
    done: list[str] = []
    export.finished.connect(lambda report, text: done.append(text))
    export.start(tmp_path / "c.skops")
    assert (tmp_path / "c.skops").exists() and done and len(failed) == 2


def test_without_a_finished_run_start_says_why(lab, fake, tmp_path):
    export = ModelExport(lab)
    failed: list[str] = []
    export.failed.connect(failed.append)
    assert export.start(tmp_path / "m.skops") is None
    assert failed == [export.why_not()] and not fake.calls


def test_a_cancelled_export_stops_at_its_next_report_and_writes_nothing(
        lab, monkeypatch, tmp_path):
    lab.start_run()
    gate = threading.Event()
    slow = FakeExport(steps=50, gate=gate)
    monkeypatch.setattr(model_export, "export_run", slow)
    posted: list = []
    lock = threading.Lock()

    def post(fn):  # the receiver's thread is the test's: messages wait here
        with lock:
            posted.append(fn)

    worker = Worker(export_job, name="model-export", post=post)
    try:
        export = ModelExport(lab, worker)
        cancelled: list[str] = []
        finished: list = []
        export.cancelled.connect(cancelled.append)
        export.finished.connect(lambda *a: finished.append(a))
        export.start(tmp_path / "m.skops")
        assert slow.reached.wait(5) and export.busy
        assert export.cancel()
        gate.set()
        assert worker.wait_idle(10)
        with lock:
            for fn in posted:
                fn()  # delivered late: dropped by the ticket
        assert cancelled == ["Export of the model to m.skops cancelled (a model file is "
                             "never left half-written: one the export was already writing "
                             "is completed)."]
        assert not finished and not (tmp_path / "m.skops").exists()
        assert not export.cancel()  # nothing in progress any more
    finally:
        worker.close()
        worker.join(5)


def test_the_default_file_is_beside_the_data_file_or_in_the_given_folder(tmp_path):
    csv = tmp_path / "data" / "cars.csv"
    csv.parent.mkdir()
    csv.write_text("a,b\n1,2\n")
    spec = RunSpec("krr-path", {}, DataSource.from_spec(str(csv)))
    assert default_path(spec, tmp_path / "elsewhere") == csv.parent / "krr-path-model.skops"
    generated = RunSpec("nystrom", {}, DataSource.from_spec(DATA))
    assert default_path(generated, tmp_path) == tmp_path / "nystrom-model.skops"
    assert default_path(generated) == Path.home() / "nystrom-model.skops"


def test_one_model_is_named_as_such():
    text = describe_report(Report(Path("/x/m.skops"), ["DSG at iteration 40"],
                                  {"DSG at iteration 40": (0.03, "test error rate")},
                                  {"DSG at iteration 40": ["refitted on all rows"]}))
    assert text == ("Exported model DSG at iteration 40 (test error rate 0.03) to m.skops "
                    "in /x. Refitted on all rows.")
    # a report naming its models ``names`` with one list of notes (the Playground's)
    plain = types.SimpleNamespace(path=Path("/x/p.skops"), names=["KRR"], notes=["as drawn"])
    assert describe_report(plain) == "Exported model KRR to p.skops in /x. As drawn."


def test_without_qt():
    """The export model and this file's tests run with Qt not importable at all."""
    run_without_qt(__file__)
