"""Sessions that cannot hang or mislead: only regular files are read, and at most the
size cap; values are checked as the experiment, the generator and the Playground declare
them (``true`` is no number); unknown fields are named in a note; pinned curves are kept
to a bounded number of points with their shape; ``kernel-lab report`` gives the messages
the window gives."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kernel_lab.cli import main
from kernel_lab.engine import session as session_module
from kernel_lab.engine.session import (
    NotASessionError,
    Session,
    SessionError,
    load_session,
    save_session,
    session_from_dict,
)
from kernel_lab.experiments.plotspec import PIN_MAX_POINTS, peak_rows, thin_table
from tests.faults import fill_disk_at

HEAD = {"format": "kernel-lab-session", "version": 1}


def _write(tmp_path: Path, doc: dict | str, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def _load_in_child(path: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """load_session(path) in a fresh process with 2 GB of address space and 60 s: reading
    /dev/zero whole fails there with MemoryError, a FIFO with the timeout, instead of
    taking this test process down."""
    script = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
        from kernel_lab.engine.session import SessionError, load_session
        try:
            load_session({path!r})
        except SessionError as exc:
            print(exc)
            sys.exit(3)
        """)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]),
                                          os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_is_refused_by_name_before_it_is_read(tmp_path):
    proc = _load_in_child("/dev/zero", tmp_path)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "/dev/zero" in proc.stdout and "is a device, not a file" in proc.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "session.json"
    os.mkfifo(fifo)
    proc = _load_in_child(str(fifo), tmp_path)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "session.json" in proc.stdout and "is a pipe (FIFO), not a file" in proc.stdout


def test_a_folder_is_refused_by_name(tmp_path):
    with pytest.raises(SessionError, match=r"is a folder, not a file"):
        load_session(tmp_path)


def test_a_file_over_the_size_cap_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(session_module, "MAX_BYTES", 1000)
    path = _write(tmp_path, {**HEAD, "experiment": "krr-path", "about": "x" * 2000})
    with pytest.raises(SessionError, match=r"s\.json .*more than any session should be"):
        load_session(path)


def test_too_deep_nesting_is_named(tmp_path):
    path = _write(tmp_path, '{"format": "kernel-lab-session", "x": ' + "[" * 100_000
                  + "]" * 100_000 + "}")
    with pytest.raises(SessionError, match="nested too deeply"):
        load_session(path)
    with pytest.raises(SessionError, match="nested too deeply"):
        load_session(path, threaded=True)


def test_report_on_a_deeply_nested_file_says_so(tmp_path, capsys):
    """It fell through to reading the file as a result and died of RecursionError."""
    path = _write(tmp_path, "[" * 100_000 + "]" * 100_000, "deep.json")
    assert main(["report", str(path), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "deep.json is nested too deeply to be a session" in err
    assert "RecursionError" not in err


@pytest.mark.parametrize("n, said", [(1e12, "parameter n must be ≤ 1e+07, got 1e+12"),
                                     (1e308, "parameter n must be ≤ 1e+07, got 1e+308")])
def test_a_generator_parameter_out_of_range_is_refused_when_read(n, said):
    doc = {**HEAD, "experiment": "krr-path",
           "data": {"spec": f"gaussian:n={n:g},p=5", "options": {}}}
    with pytest.raises(SessionError, match=re.escape(f"session: {said}")):
        session_from_dict(doc)


def test_true_is_no_integer(tmp_path):
    """Python counts ``true`` as 1: n_lams = true read as 1 (then "must be ≥ 2")."""
    with pytest.raises(SessionError, match="parameter n_lams must be a whole number, "
                                           "got true"):
        session_from_dict({**HEAD, "experiment": "krr-path", "params": {"n_lams": True}})
    with pytest.raises(SessionError, match="parameter seed must be a whole number"):
        session_from_dict({**HEAD, "experiment": "krr-path", "params": {"seed": False}})
    with pytest.raises(SessionError, match="must be a number, got true"):
        session_from_dict({**HEAD, "experiment": "ckrr-risk", "params": {"noise": True}})
    with pytest.raises(SessionError, match="format version True"):
        session_from_dict({"format": "kernel-lab-session", "version": True,
                           "experiment": "krr-path"})
    with pytest.raises(SessionError, match="parameter n must be a whole number, got true"):
        session_from_dict({**HEAD, "playground": {"dataset": "xor", "n": True}})


def test_unknown_top_level_fields_are_named_in_a_note(tmp_path):
    doc = {**HEAD, "experiment": "krr-path", "colour": "red", "pinnned": []}
    session = session_from_dict(doc, "session file s.json")
    assert len(session.notes) == 1
    assert "'colour', 'pinnned'" in session.notes[0]
    assert session.notes[0].startswith("session file s.json: ignored the fields")
    assert session_from_dict({**HEAD, "experiment": "krr-path"}).notes == []
    # a note is no field of the document written back
    assert "notes" not in session.to_dict()


def test_report_prints_the_note_and_runs(tmp_path, capsys):
    doc = {**HEAD, "experiment": "krr-path", "params": {"n_lams": 3},
           "data": {"spec": "gaussian:n=40,p=3"}, "colour": "red"}
    path = _write(tmp_path, doc)
    assert main(["report", "-q", str(path), "--out", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "note: session file s.json: ignored the field 'colour'" in err
    assert (tmp_path / "r.html").stat().st_size > 0


def test_a_result_json_is_still_reported(tmp_path):
    """Only a document that is no session at all falls through to a result."""
    with pytest.raises(NotASessionError):
        session_from_dict({"table": {}})
    with pytest.raises(SessionError) as info:
        session_from_dict({**HEAD, "experiment": "nope"})
    assert not isinstance(info.value, NotASessionError)


def _noisy_curve(n: int, spikes: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = np.logspace(-6, 2, n)
    y = 1.0 + 0.5 * np.sin(np.log(x)) + 0.05 * rng.standard_normal(n)
    for row, value in spikes.items():
        y[row] = value
    return x, y


def test_peak_rows_keep_every_spike_and_the_ends():
    spikes = {1234: 40.0, 500_000: -30.0, 777_777: 25.0, 999_998: 9.0}
    x, y = _noisy_curve(1_000_000, spikes)
    rows = peak_rows([x, y], PIN_MAX_POINTS)
    assert rows.size <= PIN_MAX_POINTS
    assert np.all(np.diff(rows) > 0)
    assert rows[0] == 0 and rows[-1] == x.size - 1
    assert set(spikes) <= set(rows.tolist())


def test_peak_rows_keep_a_smooth_curve():
    x = np.linspace(0.0, 10.0, 300_001)
    y = np.sin(x) * np.exp(-0.1 * x)
    rows = peak_rows([x, y], 500)
    assert rows.size <= 500
    back = np.interp(x, x[rows], y[rows])  # the thinned line, where every point was
    assert np.abs(back - y).max() < 1e-3


def test_peak_rows_take_every_row_of_a_short_table_and_skip_nan():
    assert peak_rows([np.arange(5.0)], 10).tolist() == [0, 1, 2, 3, 4]
    y = np.full(10_000, np.nan)
    y[4321] = 3.0
    assert 4321 in peak_rows([y], 100).tolist()


def test_thin_table_keeps_columns_of_a_length_together():
    x, y = _noisy_curve(50_000, {10_000: 9.0})
    table = {"lam": x, "risk": y, "short": np.arange(3.0)}
    thin = thin_table(table, 1000)
    assert thin["lam"].size == thin["risk"].size <= 1000
    assert thin["short"].tolist() == [0.0, 1.0, 2.0]
    # each kept row is a row of the table: x and y still belong together
    where = np.searchsorted(x, thin["lam"])
    np.testing.assert_array_equal(y[where], thin["risk"])
    assert thin["risk"].max() == 9.0
    thin["short"][0] = 7.0
    assert table["short"][0] == 0.0  # a copy: a live table is not shared


def test_a_million_pinned_points_are_read_as_a_bounded_pin(tmp_path):
    x, y = _noisy_curve(1_000_000, {654_321: 12.0})
    y[5] = np.nan
    table = {"lam": x.tolist(), "test_mse_krr": [None if np.isnan(v) else v for v in y]}
    doc = {**HEAD, "experiment": "krr-path", "pinned": [{"label": "big", "table": table}]}
    path = _write(tmp_path, doc)
    for threaded in (False, True):
        session = load_session(path, threaded=threaded)
        pin = session.pinned[0]
        assert pin["label"] == "big"
        kept = pin["table"]
        assert len(kept["lam"]) == len(kept["test_mse_krr"]) <= PIN_MAX_POINTS
        assert max(v for v in kept["test_mse_krr"] if v is not None) == 12.0
        assert f"keep {len(kept['lam']):,} of their 1,000,000 points (at most 2,000" \
            in session.notes[0]
    # written back: small, and read again without a note
    again = load_session(save_session(session, tmp_path / "again.json"))
    assert again.pinned[0]["table"] == kept and again.notes == []


@pytest.mark.parametrize("column, said", [
    ([1.0, True, 2.0], "must be a list of numbers"),
    ([1.0, "2"], "must be a list of numbers"),
    ("1, 2", "must be a list of numbers"),
])
def test_pinned_values_are_numbers_only(column, said):
    doc = {**HEAD, "experiment": "krr-path", "pinned": [{"label": "a",
                                                         "table": {"lam": column}}]}
    with pytest.raises(SessionError, match=said):
        session_from_dict(doc)


def test_a_session_of_the_window_still_round_trips(tmp_path):
    from kernel_lab.engine.spec import RunSpec
    from kernel_lab.experiments import get_experiment

    spec = RunSpec("krr-path", get_experiment("krr-path").resolve({"n_lams": 5}), None)
    pins = [{"label": "run 1", "table": {"lam": [0.1, 1.0], "test_mse_krr": [None, 2.0]}}]
    path = save_session(Session(spec, "t", "a", pins), tmp_path / "w.json")
    back = load_session(path)
    assert back.spec == spec and back.pinned == pins and back.notes == []


def test_saving_on_a_full_disk_keeps_the_previous_session_whole(tmp_path, monkeypatch):
    """A session is written whole or not at all: the write fails half-way (ENOSPC), the
    file saved before stays as it was and no temporary file is left."""
    from kernel_lab.engine.session import Session, load_session, save_session
    from kernel_lab.engine.spec import RunSpec

    path = tmp_path / "mine.json"
    first = Session(RunSpec("krr-path", {"n_lams": 7}), title="first")
    save_session(first, path)
    before = path.read_bytes()
    fill_disk_at(monkeypatch, "mine.json")
    with pytest.raises(OSError, match="No space left"):
        save_session(Session(RunSpec("nystrom", {}), title="second"), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    kept = load_session(path)
    assert kept.title == "first" and kept.spec.experiment == "krr-path"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json"]


@pytest.mark.skipif(not (os.path.exists("/dev/zero") and hasattr(os, "mkfifo")),
                    reason="needs /dev/zero and FIFOs")
def test_report_names_a_device_or_a_pipe_without_opening_it(tmp_path, capsys):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # opening it to read would wait for a writer for ever
    for path, kind in (("/dev/zero", "a device"), (str(fifo), "a pipe (FIFO)")):
        assert main(["report", "-q", path, "--out", str(tmp_path / "r.html")]) == 2
        err = capsys.readouterr().err
        assert f"'{path}' is {kind}, not a run folder, a file or a preset" in err
    assert not (tmp_path / "r.html").exists()
