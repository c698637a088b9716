"""The lab model, driven with no widget at all (and, in ``test_without_qt``, with Qt not
importable): start, partial results, cancel, stale runs dropped, pins, sessions."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_lab.data.source import DataSource
from kernel_lab.engine import RunSpec, run
from kernel_lab.engine.handle import InlineLauncher, RunHandle
from kernel_lab.engine.session import Session, load_session, save_session
from kernel_lab.engine.worker import Worker
from kernel_lab.experiments import PartialResult
from kernel_lab.model import LabModel, RunState
from tests.model.qtfree import run_without_qt
from tests.sources import parse

DATA = "gaussian:n=60,p=30,cov=toeplitz,rho=0.4,noise=0.5"
SMALL = {"kernels": ["linear", "exponential"], "trials": 3, "n_lams": 6, "seed": 5}


class ManualLauncher:
    """Hands out handles and lets the test deliver their messages, in any order."""

    def __init__(self) -> None:
        self.handles: list[RunHandle] = []
        self.cancelled: list[int] = []

    def __call__(self, spec: RunSpec) -> RunHandle:
        handle = RunHandle(len(self.handles) + 1, spec, submit=lambda h: None,
                           cancel=lambda h: self.cancelled.append(h.run_id))
        self.handles.append(handle)
        return handle


def recorder(model: LabModel) -> dict[str, list]:
    seen: dict[str, list] = {"state": [], "status": [], "log": [], "table": []}
    model.state_changed.connect(seen["state"].append)
    model.status.connect(seen["status"].append)
    model.logged.connect(seen["log"].append)
    model.table_changed.connect(lambda: seen["table"].append(dict(model.shown_table())))
    return seen


@pytest.fixture
def model():
    m = LabModel(InlineLauncher())
    m.set_experiment("ckrr-risk", SMALL)
    m.load_data(DataSource.from_spec(DATA))
    return m


def test_a_run_goes_idle_running_done_and_equals_the_engine(model):
    seen = recorder(model)
    assert model.state is RunState.IDLE and model.dataset is not None
    model.start_run()
    assert seen["state"] == [RunState.RUNNING, RunState.DONE]
    assert model.state is RunState.DONE and model.result is not None
    # partial tables arrived before the final one (theory first, then trial by trial)
    assert len(seen["table"]) >= 3
    direct = run(RunSpec("ckrr-risk", SMALL, DataSource.from_spec(DATA)))
    assert list(model.table) == list(direct.table)
    for key, col in direct.table.items():
        np.testing.assert_array_equal(model.table[key], col)
    assert seen["status"][-1].startswith("Done in")


def test_preview_and_plan_follow_the_parameters_without_a_run(model):
    model.refresh()
    assert model.preview is not None and model.plan.memory_bytes > 0
    assert model.plan.seconds is not None and not model.plan.error
    lam_max = model.preview["lam"][-1]
    model.set_params({**SMALL, "lam_max": 10.0})
    model.refresh()
    assert model.preview["lam"][-1] == pytest.approx(10.0) != lam_max
    assert model.state is RunState.IDLE and model.result is None
    model.set_params({**SMALL, "lam_min": -1})
    model.refresh()
    assert "lam_min" in model.plan.error


def test_cancel_and_late_messages_of_a_superseded_run_are_dropped():
    launcher = ManualLauncher()
    model = LabModel(launcher)
    model.set_experiment("krr-path", {"n_lams": 4})
    seen = recorder(model)
    first = model.start_run()
    first.deliver("partial", PartialResult(0.5, "half", {"lam": np.ones(4)}))
    assert model.table["lam"].tolist() == [1, 1, 1, 1]
    second = model.start_run()  # a new run cancels the first
    assert launcher.cancelled == [1] and not first.active and second.active
    first.deliver("partial", PartialResult(0.9, "late", {"lam": np.zeros(4)}))
    first.deliver("finished", object())
    assert model.table == {} and model.state is RunState.RUNNING
    model.cancel_run()
    assert model.state is RunState.CANCELLED and seen["status"][-1] == "Cancelled."
    second.deliver("partial", PartialResult(0.9, "late", {"lam": np.zeros(4)}))
    assert model.table == {}
    second.deliver("cancelled", True)  # the worker had to be killed: said once, in the log
    assert "worker restarted" in seen["log"][-1]


def test_failure_is_a_state_with_a_message():
    launcher = ManualLauncher()
    model = LabModel(launcher)
    model.set_experiment("krr-path", {})
    seen = recorder(model)
    handle = model.start_run()
    handle.deliver("failed", "out of memory", False)
    assert model.state is RunState.FAILED
    assert seen["status"][-1] == "The run failed: out of memory"
    model.set_params({"lam_min": -1})
    assert model.start_run() is None and "Cannot run" in seen["status"][-1]
    assert len(launcher.handles) == 1


def test_a_run_refused_before_it_starts_is_a_failure_too(model):
    """Run with invalid parameters after a finished run: refused before any worker is
    asked, and the state says so (the window's bar and buttons follow the state; it
    stayed DONE, the bar at 100 % of a run that was not made)."""
    model.start_run()
    first = model.result
    assert model.state is RunState.DONE
    seen = recorder(model)
    model.set_params({**SMALL, "lam_min": -1})
    assert model.start_run() is None and "Cannot run" in seen["status"][-1]
    assert seen["state"] == [RunState.FAILED] and model.fresh_result is None
    assert model.result is first  # the last finished result stays for exports


def test_parameters_changed_after_a_run_make_it_stale(model):
    model.start_run()
    assert not model.stale
    seen = recorder(model)
    model.set_params({**SMALL, "n_lams": 7})
    assert model.stale and "Parameters changed" in seen["status"][-1]
    model.set_params(SMALL)
    assert not model.stale


def test_pins_and_a_session_round_trip(model, tmp_path):
    assert model.pin() is None  # nothing to pin before a run
    model.start_run()
    first = model.result
    pin = model.pin()
    assert pin is not None and len(model.pins) == 1
    np.testing.assert_array_equal(pin.table["lam"], first.table["lam"])
    path = save_session(model.to_session(), tmp_path / "s.json")

    other = LabModel(InlineLauncher())
    other.set_experiment("krr-path", {})
    applied = []
    other.session_applied.connect(applied.append)
    other.apply_session(load_session(path))
    assert applied and other.experiment.name == "ckrr-risk"
    assert other.resolved_params() == first.params
    assert other.loaded_source == DataSource.from_spec(DATA)
    assert len(other.pins) == 1 and other.pins[0].label == pin.label
    other.start_run()
    for key, col in first.table.items():
        np.testing.assert_array_equal(other.result.table[key], col)


def test_default_data_follow_the_experiment_unless_the_user_chose():
    model = LabModel(InlineLauncher())
    model.set_experiment("spectrum", {})
    assert model.loaded_source.to_spec() == model.experiment.default_data
    model.use_default_data = False
    model.load_data(DataSource.from_spec("diabetes"))
    model.set_experiment("krr-path", {})
    assert model.loaded_source.name == "diabetes"


def test_a_failed_load_keeps_the_data_in_use(tmp_path):
    model = LabModel(InlineLauncher())
    model.set_experiment("krr-path", {})
    before = model.loaded_source
    failures = []
    model.data_failed.connect(failures.append)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,y\n1,2,3\n4,oops,6\n")
    model.load_data(DataSource.from_spec(str(bad)))
    assert failures and "line 3" in failures[0]
    assert model.loaded_source == before and model.dataset is not None
    assert model.run_source() == before


def test_an_observer_that_raises_reaches_the_caller_of_load_data_and_run():
    """With the inline loader and launcher, an observer's failure (a test's assertion, a
    bug in a view) is raised where the load or the run was asked for, not dropped as a
    late message of a load or run that has already ended."""
    model = LabModel(InlineLauncher())
    model.set_experiment("krr-path", {"n_lams": 4})

    def loaded(dataset):
        raise AssertionError("observer of data_loaded")

    model.data_loaded.connect(loaded)
    with pytest.raises(AssertionError, match="observer of data_loaded"):
        model.load_data(DataSource.from_spec("diabetes"))
    model.data_loaded.disconnect(loaded)
    model.load_data(DataSource.from_spec("diabetes"))

    def finished(state):
        if state is RunState.DONE:
            raise AssertionError("observer of the finished run")

    model.state_changed.connect(finished)
    with pytest.raises(AssertionError, match="observer of the finished run"):
        model.start_run()


def test_session_without_data_uses_the_experiments_own():
    session = Session(RunSpec("spectrum", {"seed": 2}))
    model = LabModel(InlineLauncher())
    model.apply_session(session)
    assert model.use_default_data
    assert model.loaded_source.to_spec() == "gaussian:n=800,p=400,cov=identity"


@pytest.mark.slow  # quick import check in the default run: test_qtfree_imports.py
def test_without_qt():
    """The model and this file's tests run with Qt not importable at all."""
    run_without_qt(__file__)


def test_a_failed_load_with_nothing_loaded_is_what_runs(tmp_path):
    """No data silently swapped in: the run uses the file that failed, and says why."""
    model = LabModel(InlineLauncher())
    model.use_default_data = False
    model.set_experiment("krr-path", {"n_lams": 4})
    missing = DataSource.from_spec(str(tmp_path / "gone.csv"))
    model.load_data(missing)
    assert model.dataset is None and model.run_source() == missing
    seen = recorder(model)
    model.start_run()
    assert model.state is RunState.FAILED and "gone.csv" in seen["status"][-1]


def test_the_last_finished_result_stays_for_exports_until_the_next_one(model):
    launcher = ManualLauncher()
    model.start_run()
    first = model.result
    model._launch = launcher  # the next run is delivered by hand
    handle = model.start_run()
    assert model.result is first and model.fresh_result is None  # running
    handle.deliver("failed", "boom", False)
    assert model.result is first and model.fresh_result is None  # failed: no fresh one


def test_an_unexpected_error_in_an_inline_run_is_a_failure(monkeypatch):
    import kernel_lab.engine.runner as runner

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runner, "run", broken)
    model = LabModel(InlineLauncher())
    model.set_experiment("krr-path", {})
    seen = recorder(model)
    model.start_run()
    assert model.state is RunState.FAILED and "disk on fire" in seen["status"][-1]


def test_a_load_answered_after_the_window_closed_is_dropped():
    pending = []  # the loads in flight, answered by hand
    model = LabModel(InlineLauncher(), loader=Worker(pending.append, inline=True))
    seen = recorder(model)
    loaded = []
    model.data_loaded.connect(loaded.append)
    model.load_data(DataSource.from_spec(DATA))
    assert model.loading
    model.drop_pending_load()  # the window closes with the load in flight
    job = pending[-1]
    job.emit("finished", job.request.load())  # its answer arrives afterwards
    assert not model.loading and loaded == [] and seen["log"] == []


def test_a_table_too_large_for_the_exact_method_is_offered_the_rows_that_fit(
        tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 4))
    path = tmp_path / "big.csv"
    path.write_text("a,b,c,d,y\n" + "".join(",".join(f"{v:.6f}" for v in (*r, r.sum())) + "\n"
                                            for r in X))
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "40")
    model = LabModel(InlineLauncher())
    model.set_experiment("krr-path", {})
    model.load_data(DataSource.from_spec(str(path)))
    model.refresh()
    plan = model.plan
    assert plan.too_large and plan.fitting_rows > 100
    assert f"e.g. a random {plan.fitting_rows:,} rows" in plan.advice
    assert "set by the" in plan.advice  # which limit: checked on a fast and a slow machine
    model.use_rows(plan.fitting_rows)
    ds = model.dataset
    assert ds.n_train + ds.n_test == plan.fitting_rows
    assert f"used a random {plan.fitting_rows:,} of 3,000 rows" in " ".join(ds.notes)
    model.refresh()
    assert not model.plan.too_large  # it fits now
    assert model.loaded_source.options["subsample"] == plan.fitting_rows  # kept in sessions
    gen = LabModel(InlineLauncher())  # generated data: no rows to offer
    gen.set_experiment("krr-path", {})
    gen.load_data(DataSource.from_spec("gaussian:n=3000,p=4"))
    gen.refresh()
    assert gen.plan.too_large and gen.plan.fitting_rows == 0


@pytest.mark.parametrize(("speed", "rows", "why"), [
    # √(0.9 · 40 MiB / 24 B) = 1,254 training points of 75 % of the rows fit the budget
    (1e12, 1672, "set by the memory budget of 40.0 MiB"),
    # at 1 Mflop/s every n above 1000 takes hours: 10 % steps 1254 → 1128 → 1015 → 913
    (1e6, 1217, "set by the time cap: more rows would take over about 2 minutes on this "
                "machine; the memory budget of 40.0 MiB alone would allow 1,672"),
])
def test_the_rows_offered_say_which_limit_set_them(tmp_path, monkeypatch, speed, rows, why):
    from kernel_lab.model import plan

    monkeypatch.setattr(plan, "probe_flops_per_second", lambda: speed)
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "40")
    X = np.random.default_rng(1).normal(size=(3000, 4))
    path = tmp_path / "big.csv"
    path.write_text("a,b,c,d,y\n" + "".join(",".join(f"{v:.6f}" for v in (*r, r.sum()))
                                            + "\n" for r in X))
    model = LabModel(InlineLauncher())
    model.set_experiment("krr-path", {})
    model.load_data(DataSource.from_spec(str(path)))
    model.refresh()
    assert model.plan.fitting_rows == rows
    assert f"e.g. a random {rows:,} rows ({why})," in model.plan.advice


def test_time_model_through_finished_runs():
    from kernel_lab.model.plan import fit_time

    runs = [(1e9, 0.3 + 2e-9 * 1e9), (4e9, 0.3 + 2e-9 * 4e9), (2e10, 0.3 + 2e-9 * 2e10)]
    a, b = fit_time(runs)
    assert a == pytest.approx(0.3) and b == pytest.approx(2e-9)
    a, b = fit_time([(1e9, 2.0)])  # one run: a quarter fixed, the rest proportional
    assert (a, b) == (pytest.approx(0.5), pytest.approx(1.5e-9))
    a, b = fit_time([(1e9, 5.0), (5e9, 1.0)])  # noise that would give b < 0: one-point rule
    assert a >= 0 and b > 0


def test_the_estimate_is_calibrated_by_the_experiments_own_runs(model):
    model.refresh()
    before = model.plan.seconds_range
    lo, hi = before
    assert hi / lo == pytest.approx(9.0)  # uncalibrated: ×/÷ 3
    model.start_run()
    measured = model.result.timings["total_s"]
    model.refresh()
    lo, hi = model.plan.seconds_range
    assert hi / lo == pytest.approx(2.25)  # calibrated: ×/÷ 1.5
    assert model.plan.seconds == pytest.approx(measured, rel=1e-9)  # the same work
    model.set_params({**SMALL, "trials": 6})  # twice the work
    model.refresh()
    assert model.plan.seconds == pytest.approx(0.25 * measured + 0.75 * measured * 2,
                                               rel=1e-6)


def _table_with_text(path, rows):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(rows, 3))
    kinds = np.array(["red", "green", "blue"])[rng.integers(0, 3, rows)]
    path.write_text("a,b,c,colour,y\n" + "".join(
        f"{r[0]:.5f},{r[1]:.5f},{r[2]:.5f},{k},{r.sum():.5f}\n"
        for r, k in zip(X, kinds, strict=True)))
    return path


def test_loading_reports_progress_and_a_cancelled_load_keeps_the_data(tmp_path):
    """A load in flight reports how far it is; cancelling it stops the reader at its next
    report, ignores its answer and keeps the data loaded before."""
    pending = []  # the loads in flight, answered by hand
    model = LabModel(InlineLauncher(), loader=Worker(pending.append, inline=True))
    model.set_experiment("krr-path", {})
    job = pending[-1]
    job.emit("finished", job.request.load())  # the experiment's own data, loaded
    before = model.loaded_source
    seen = {"progress": [], "cancelled": [], "loaded": []}
    model.data_progress.connect(lambda f, m: seen["progress"].append((f, m)))
    model.load_cancelled.connect(seen["cancelled"].append)
    model.data_loaded.connect(seen["loaded"].append)
    path = _table_with_text(tmp_path / "colours.csv", 200_000)  # the strict reader
    model.load_data(DataSource.from_spec(str(path)))
    job = pending[-1]
    reports = []

    def report(fraction, message):
        reports.append(fraction)
        job.emit("progress", fraction, message)
        if fraction > 0.2:
            model.cancel_load()  # the user presses Cancel while it reads

    from kernel_lab.core.progress import Cancelled, Progress

    with pytest.raises(Cancelled):
        job.request.load(progress=Progress(report, job.superseded))
    assert reports == sorted(reports) and 0.2 < reports[-1] < 0.85  # stopped while reading
    assert seen["progress"] and all(0 <= f <= 1 for f, _ in seen["progress"])
    assert seen["cancelled"] and "still using" in seen["cancelled"][0]
    assert not model.loading and model.loaded_source == before
    assert model.run_source() == before and model.dataset is not None
    job.emit("finished", DataSource.from_spec(DATA).load())  # a late answer is ignored
    job.emit("failed", "loading cancelled", True)
    assert seen["loaded"] == [] and model.loaded_source == before


def test_the_inline_loader_reports_progress_to_the_end(tmp_path):
    model = LabModel(InlineLauncher())
    fractions = []
    model.data_progress.connect(lambda f, m: fractions.append(f))
    model.load_data(DataSource.from_spec(str(_table_with_text(tmp_path / "c.csv", 70_000))))
    assert model.dataset is not None and model.dataset.n_train == 52_500
    assert fractions == sorted(fractions) and fractions[0] == 0 and fractions[-1] == 0.85
    assert len(fractions) >= 5


def test_a_speed_probe_taken_during_a_load_is_taken_again_after_it():
    """A large file parsed next to the matrix-product probe makes the machine look slow;
    such a probe is not kept as the only one."""
    from kernel_lab.model.plan import Planner

    planner = Planner()
    planner.machine_rate(loading=True)
    first = planner._probed
    planner.machine_rate(loading=True)
    assert planner._probed > first  # still loading: probed again
    planner.machine_rate(loading=False)
    settled = planner._probed
    planner.machine_rate(loading=False)
    assert planner._probed == settled  # a quiet probe stands for 3 s


def test_the_plan_and_time_estimate_live_in_their_own_module():
    """Plan, the time model and the rows offered are model/plan.py's; the lab model holds
    one :class:`Planner` and asks it for the plan line."""
    from kernel_lab.model import plan

    model = LabModel(InlineLauncher())
    assert isinstance(model.planner, plan.Planner)
    for name in ("Plan", "fit_time", "rows_that_fit", "uncalibrated_seconds",
                 "probe_flops_per_second"):
        assert getattr(plan, name).__module__ == "kernel_lab.model.plan"


def test_the_models_events_are_declared_with_their_type():
    """Each event is an attribute assigned with a type annotation in ``__init__`` (what
    IDEs and type checkers see), not made by a loop of ``setattr``."""
    import ast
    import inspect
    import textwrap

    from kernel_lab.engine.events import Event

    model = LabModel(InlineLauncher())
    events = {k for k, v in vars(model).items() if isinstance(v, Event)}
    assert {"experiment_changed", "data_loaded", "state_changed", "logged"} <= events
    tree = parse(textwrap.dedent(inspect.getsource(LabModel.__init__)))
    annotated = {node.target.attr for node in ast.walk(tree)
                 if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute)
                 and ast.unparse(node.annotation) == "Event"}
    assert events <= annotated
    assert not any(isinstance(n, ast.Call) and ast.unparse(n.func) == "setattr"
                   for n in ast.walk(tree))
