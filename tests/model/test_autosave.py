"""The autosave's rules without Qt (and, in ``test_without_qt``, with Qt not importable):
files beside the settings, whole-or-nothing writes, the clean mark, what is read back, the
lock a killed process leaves free, and when a write is due."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from kernel_lab.data.source import DataSource
from kernel_lab.engine import RunSpec
from kernel_lab.engine.atomic import temporary_name
from kernel_lab.engine.playground.state import PlaygroundState, Points
from kernel_lab.engine.session import Session
from kernel_lab.experiments import get_experiment
from kernel_lab.model import autosave as a
from kernel_lab.model.autosave import (
    AutosaveError,
    AutosavePaths,
    AutosaveWriter,
    Debounce,
    InstanceLock,
    Snapshot,
    read_autosave,
    set_aside,
    write_atomic,
)
from tests.model.qtfree import run_without_qt


def _session(n_points: int = 50, seed: int = 0) -> Session:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.5, 2.5, size=(n_points, 2))
    y = np.where(rng.random(n_points) < 0.5, -1.0, 1.0)
    points = Points(X, y, np.zeros(n_points, dtype=bool))
    params = get_experiment("krr-path").resolve({"n_lams": 7})  # as a session holds them
    spec = RunSpec("krr-path", params, DataSource.from_spec("gaussian:n=120,p=5"))
    pinned = [{"label": "run 1", "table": {"lam": np.array([0.1, 1.0]),
                                           "risk": np.array([0.5, np.nan])}}]
    return Session(spec, pinned=pinned,
                   playground=PlaygroundState("paint-2d", 60, 0.3, points=points))


def test_files_sit_beside_the_settings_file_named_after_it(tmp_path):
    paths = AutosavePaths.beside(tmp_path / "Kernel Lab.conf")
    assert paths.file == tmp_path / "Kernel Lab.autosave.json"
    assert paths.lock == tmp_path / "Kernel Lab.autosave.lock"
    assert paths.discarded == tmp_path / "Kernel Lab.autosave-discarded.json"


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    assert write_atomic(path, "new é") == len("new é".encode())
    assert path.read_text(encoding="utf-8") == "new é"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_temporaries_of_a_write_cut_short_are_removed(tmp_path):
    paths = AutosavePaths.beside(tmp_path / "s.ini")
    # what write_atomic leaves when the process is killed before its rename: a temporary
    # named as it names them; another file's temporary in the folder is not ours
    name = temporary_name(paths.file)
    name.write_text("cut")
    (tmp_path / "other.tmp").write_text("not ours")
    temporary_name(tmp_path / "result.json").write_text("another writer's")
    write_atomic(paths.file, "{}")
    assert paths.remove_temporaries() == 1
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".result")
                  ) == ["other.tmp", paths.file.name]
    assert not os.path.exists(name)


def test_a_full_disk_keeps_the_previous_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    path.write_text('{"kept": true}')

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(a.os, "fsync", full)
    with pytest.raises(AutosaveError, match=r"state\.json.*No space left.*free some space"):
        write_atomic(path, "x" * 10_000)
    assert json.loads(path.read_text()) == {"kept": True}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary left


def test_piecewise_json_is_the_json_of_one_call():
    rng = np.random.default_rng(3)
    long = rng.normal(size=a.CHUNK * 2 + 7).tolist()
    value = {"é": [1, 2.5, None, True, "x\"y"], "long": long, "rows": rng.normal(
        size=(a.CHUNK + 1, 2)).tolist(), "exact": [a.CHUNK * [0.1]], "tiny": [],
        "nested": {"k": [{"a": long[:a.CHUNK + 1]}, [long[:3], []], 7]}}
    expected = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    assert a.encode(value) == expected
    assert json.loads(a.encode(value))["long"] == long  # every float back bit for bit
    with pytest.raises(ValueError):
        a.encode({"x": [float("nan")]})


def test_writer_round_trip_with_the_session_reader(tmp_path):
    path = tmp_path / "s.autosave.json"
    session = _session()
    window = {"geometry": "AAEC", "state": "AAED", "playground_visible": True,
              "log_y": True, "presentation": False, "use_default_data": False,
              "unknown": 1, "log_y_bad": "yes"}
    written = AutosaveWriter(path).write(Snapshot(session, window))
    assert written is not None and written.size == path.stat().st_size and not written.clean
    back = read_autosave(path)
    assert back is not None and back.clean is False and back.saved_at
    assert back.window == {k: window[k] for k in a.WINDOW_KEYS}
    assert back.session.to_dict() == session.to_dict()
    pts = back.session.playground.points
    np.testing.assert_array_equal(pts.X, session.playground.points.X)  # exact, not close
    np.testing.assert_array_equal(pts.y, session.playground.points.y)
    assert back.session.spec.params["n_lams"] == 7
    assert "krr-path" in back.summary() and "50 points" in back.summary()


def test_writer_skips_an_unchanged_state_but_always_writes_the_clean_mark(tmp_path):
    path = tmp_path / "s.autosave.json"
    writer = AutosaveWriter(path)
    writer.baseline(Snapshot(_session(seed=1)))
    assert writer.write(Snapshot(_session(seed=1))) is None  # as the program started
    assert not path.exists()
    assert writer.write(Snapshot(_session(seed=2))) is not None
    stamp = path.stat().st_mtime_ns
    assert writer.write(Snapshot(_session(seed=2))) is None
    assert path.stat().st_mtime_ns == stamp
    done = writer.write(None, clean=True)  # the last state again, marked clean
    assert done is not None and done.clean
    back = read_autosave(path)
    assert back.clean is True
    assert back.session.to_dict() == _session(seed=2).to_dict()


def test_reading_refuses_damaged_foreign_and_special_files_at_once(tmp_path):
    assert read_autosave(tmp_path / "none.json") is None
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"format": "kernel-lab-autosave", "version": 1, "sess')
    with pytest.raises(AutosaveError, match=r"bad\.json is damaged"):
        read_autosave(bad)
    bad.write_text(json.dumps({"format": "kernel-lab-session", "version": 1}))
    with pytest.raises(AutosaveError, match="not a Kernel Lab autosave"):
        read_autosave(bad)
    bad.write_text(json.dumps({"format": a.FORMAT, "version": 99}))
    with pytest.raises(AutosaveError, match="version 99"):
        read_autosave(bad)
    doc = a.document(Snapshot(_session()).payload(), clean=False)
    doc["session"]["params"]["n_lams"] = "many"  # checked as a session file is
    bad.write_text(json.dumps(doc))
    with pytest.raises(a.KernelLabError, match=r"bad\.json"):
        read_autosave(bad)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.json"
        os.mkfifo(fifo)
        outcome: list[object] = []
        t = threading.Thread(target=lambda: outcome.append(_raised(read_autosave, fifo)),
                             daemon=True)
        t.start()
        t.join(5.0)
        assert not t.is_alive(), "reading a FIFO blocked"
        assert isinstance(outcome[0], AutosaveError) and "not a regular file" in str(
            outcome[0])


def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as exc:  # the test looks at it
        return exc
    return None


def test_set_aside_keeps_one_discarded_state(tmp_path):
    paths = AutosavePaths.beside(tmp_path / "s.ini")
    assert set_aside(paths) is None
    paths.file.write_text("first")
    assert set_aside(paths) == paths.discarded
    paths.file.write_text("second")
    set_aside(paths)
    assert not paths.file.exists() and paths.discarded.read_text() == "second"


def test_one_lock_holder_at_a_time_and_a_killed_holder_frees_it(tmp_path):
    path = tmp_path / "s.autosave.lock"
    first, second = InstanceLock(path), InstanceLock(path)
    assert first.acquire() and first.held
    assert not second.acquire()  # in this process too (one window per settings file)
    first.release()
    assert second.acquire()
    second.release()
    code = textwrap.dedent(f"""
        import sys, time
        from kernel_lab.model.autosave import InstanceLock
        lock = InstanceLock({str(path)!r})
        assert lock.acquire()
        print("locked", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert proc.stdout.readline().strip() == "locked"
        assert not first.acquire()  # another process holds it
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
        proc.stdout.close()
    assert first.acquire()  # the system released the killed process's lock
    first.release()


def test_debounce_waits_for_quiet_but_never_longer_than_max_wait():
    policy = Debounce(delay=3.0, max_wait=10.0)
    assert not policy.pending and policy.due_in(0.0) == float("inf")
    assert policy.changed(100.0) == 3.0
    assert policy.changed(102.0) == 3.0  # restarted by each change
    for t in (104.0, 106.0, 108.0):  # changes keep coming every 2 s
        policy.changed(t)
    assert policy.due_in(108.0) == pytest.approx(2.0)  # 110 = first change + max_wait
    assert policy.due_in(111.0) == 0.0
    policy.written()
    assert not policy.pending
    assert policy.changed(200.0) == 3.0  # a new first change
    with pytest.raises(ValueError):
        Debounce(delay=5.0, max_wait=1.0)


@pytest.mark.slow  # quick import check in the default run: test_qtfree_imports.py
def test_without_qt():
    """The autosave's rules and this file's tests run with Qt not importable at all."""
    run_without_qt(__file__)
