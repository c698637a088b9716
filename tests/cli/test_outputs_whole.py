"""A run's outputs are written whole (issue 42, item 2): ``--out`` is checked and locked
before any computation, a full disk midway leaves no ``result.json`` and no file cut
short, ``kernel-lab report`` refuses a folder whose run did not complete, and a second
run into a folder another run is writing is refused.

The full disk is simulated by an ``os.write`` that writes half of what it is given to the
chosen file and then fails with ENOSPC, as a real full disk does.
"""

from __future__ import annotations

import errno
import filecmp
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kernel_lab
from kernel_lab.cli import main
from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.atomic import TEMP_SUFFIX, leftover_temporaries, write_atomic
from kernel_lab.engine.output import LOCK, RESULT, claim_out_folder
from tests.faults import fill_disk_at

ROOT = Path(kernel_lab.__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> Path:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 3))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.standard_normal(60)
    path = tmp_path_factory.mktemp("data") / "table.csv"
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", header="price,a,b,c",
               comments="")
    return path


def _argv(table: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "krr-path", "--data", str(table), "--target", "price", "--set",
            "n_lams=4", "--out", str(out), "-q", *extra]


@pytest.fixture(scope="module")
def complete(table, tmp_path_factory) -> Path:
    """A complete run folder (with plot.png) to compare with."""
    out = tmp_path_factory.mktemp("complete") / "run"
    assert main(_argv(table, out)) == 0
    return out


@pytest.fixture
def no_run(monkeypatch):
    """Fail the test if the computation starts."""
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the run started")

    monkeypatch.setattr("kernel_lab.engine.run", refuse)
    return calls


def _whole_png(data: bytes) -> bool:
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data[-12:-4] == b"\x00\x00\x00\x00IEND"


# ---------------------------------------------------------------- --out checked first
def test_an_out_folder_under_a_file_is_refused_before_the_run(table, tmp_path, no_run,
                                                              capsys):
    """Root-proof: no one can create a folder inside a regular file."""
    (tmp_path / "file.txt").write_text("not a folder\n")
    out = tmp_path / "file.txt" / "out"
    assert main(_argv(table, out)) == 2
    err = capsys.readouterr().err
    assert f"--out {out}: cannot create the folder" in err
    assert "choose another folder with --out" in err and "Traceback" not in err
    assert not no_run


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes through mode 0o555 (the folder-under-a-file test "
                           "covers root)")
@pytest.mark.parametrize("sub", ["", "new"], ids=["existing", "to-create"])
def test_a_read_only_out_folder_is_refused_before_the_run(table, tmp_path, no_run, capsys,
                                                          sub):
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    out = locked / sub if sub else locked
    try:
        assert main(_argv(table, out)) == 2
    finally:
        locked.chmod(0o755)
    err = capsys.readouterr().err
    assert f"--out {out}: cannot " in err and "Permission denied" in err
    assert not no_run and os.listdir(locked) == []


# ---------------------------------------------------------------- a full disk midway
@pytest.mark.parametrize("name", ["plot.png", "curves.csv", RESULT])
def test_a_full_disk_leaves_no_result_json_and_no_file_cut_short(table, complete, tmp_path,
                                                                  monkeypatch, capsys, name):
    out = tmp_path / "run"
    shutil.copytree(complete, out)  # an earlier complete run: its result.json must go
    hits = fill_disk_at(monkeypatch, name)
    assert main(_argv(table, out)) == 1
    monkeypatch.undo()
    assert hits, "the write never reached the file"
    err = capsys.readouterr().err
    assert f"cannot write {name} in the folder {out}: " + os.strerror(errno.ENOSPC) in err
    assert "Traceback" not in err and err.count("\n") == 1
    left = sorted(p.name for p in out.iterdir())
    assert RESULT not in left and LOCK not in left, left
    assert not leftover_temporaries(out)
    # what is there is whole: the new run's complete files or the old run's
    for kept in left:
        if kept == "plot.png":
            assert _whole_png((out / kept).read_bytes())
        else:
            assert filecmp.cmp(out / kept, complete / kept, shallow=False), kept
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 2
    assert f"{out} has no {RESULT}: the run there did not complete" in \
        capsys.readouterr().err


def test_a_full_disk_in_a_playground_run_leaves_no_result_json(tmp_path, monkeypatch,
                                                               capsys):
    out = tmp_path / "xor"
    fill_disk_at(monkeypatch, RESULT)
    assert main(["run", "--preset", "playground-xor", "--out", str(out), "-q"]) == 1
    monkeypatch.undo()
    assert f"cannot write {RESULT} in the folder {out}" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["plot.png"]
    assert _whole_png((out / "plot.png").read_bytes())


def test_a_disk_full_before_the_run_is_refused_at_once(table, tmp_path, monkeypatch,
                                                       no_run, capsys):
    """Not even the lock file fits: refused before any computation."""
    real = os.write

    def write(fd: int, data) -> int:
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == LOCK:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to tell which file a write goes to")
    monkeypatch.setattr(os, "write", write)
    out = tmp_path / "run"
    assert main(_argv(table, out)) == 2
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert f"--out {out}: cannot write in the folder: No space left on device" in err
    assert not no_run and not out.exists()  # the folder it created is removed again


def test_a_complete_run_leaves_no_lock_and_no_temporary_file(complete):
    names = sorted(p.name for p in complete.iterdir())
    assert names == ["curves.csv", "plot.png", RESULT]
    assert _whole_png((complete / "plot.png").read_bytes())
    doc = json.loads((complete / RESULT).read_text(encoding="utf-8"))
    assert doc["experiment"] == "krr-path"


def test_write_atomic_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    write_atomic(path, "old\n")
    fill_disk_at(monkeypatch, "a.txt")
    with pytest.raises(OSError) as info:
        write_atomic(path, "new content " * 1000)
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["a.txt"]
    assert write_atomic(path, b"new\n") == path and path.read_bytes() == b"new\n"


# ---------------------------------------------------------------- report on a cut run
def test_report_refuses_a_run_that_stopped_while_writing(table, complete, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(complete, out)
    leftover = out / f".plot.png.4242-00ff00ff{TEMP_SUFFIX}"
    leftover.write_bytes(b"\x89PNG cut")
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"{out}: the run there stopped while writing (it left {leftover.name}" in err
    assert not (tmp_path / "r.html").exists()
    # the next run into the folder removes it and completes the folder
    assert main(_argv(table, out, "--no-plot")) == 0
    assert not leftover_temporaries(out)
    assert main(["report", str(out), "--out", str(tmp_path / "r.html"), "-q"]) == 0


def test_report_refuses_a_curves_csv_cut_mid_row(complete, tmp_path, capsys):
    """Folders written before outputs were whole: a valid result.json beside a cut
    curves.csv."""
    out = tmp_path / "run"
    shutil.copytree(complete, out)
    text = (out / "curves.csv").read_text()
    (out / "curves.csv").write_text(text[: len(text) * 2 // 3])
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'curves.csv'} is incomplete" in err and "of 4 rows" in err


def test_report_of_a_complete_folder_still_works(complete, tmp_path):
    assert main(["report", str(complete), "--out", str(tmp_path / "r.html"), "-q"]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


# ---------------------------------------------------------------- one run per folder
def _holder(out: Path) -> subprocess.Popen:
    """Another process holding ``out`` until its stdin closes."""
    code = ("import sys\nfrom kernel_lab.engine.output import claim_out_folder\n"
            "held = claim_out_folder(sys.argv[1])\nprint('held', flush=True)\n"
            "sys.stdin.read()\nheld.release()\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, str(out)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_into_a_folder_being_written_is_refused(table, tmp_path, monkeypatch,
                                                             capsys):
    out = tmp_path / "run"
    proc = _holder(out)
    try:
        calls: list[object] = []
        monkeypatch.setattr("kernel_lab.engine.run", lambda *a, **k: calls.append(a))
        assert main(_argv(table, out)) == 2
        err = capsys.readouterr().err
        assert f"--out {out}: another run is writing into this folder (process " \
               f"{proc.pid} on {socket.gethostname()}" in err
        assert "wait for it to finish or choose another folder with --out" in err
        assert not calls and (out / LOCK).exists()
        assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 2
        assert f"a run is still writing into this folder (process {proc.pid}" in \
            capsys.readouterr().err
    finally:
        proc.communicate("", timeout=60)
    monkeypatch.undo()
    assert not (out / LOCK).exists()
    assert main(_argv(table, out, "--no-plot")) == 0  # released: the folder is free


def test_a_stale_lock_of_a_dead_process_is_taken_over_with_a_note(table, tmp_path, capsys):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"pid": pid, "host": socket.gethostname(),
                                        "started": "2026-01-01T00:00:00+00:00"}))
    argv = _argv(table, out, "--no-plot")
    argv.remove("-q")
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"note: --out {out}: took over the lock of a run that stopped without " \
           f"finishing (process {pid} on {socket.gethostname()}" in err
    assert sorted(p.name for p in out.iterdir()) == ["curves.csv", RESULT]


@pytest.mark.parametrize("content,fragment", [
    (json.dumps({"pid": 1, "host": "elsewhere.invalid", "started": ""}),
     "(process 1 on elsewhere.invalid); if that run on another computer is gone, delete "),
    ("", "its lock file .kernel-lab.lock was not written by Kernel Lab (empty or edited); "
         "if no run is writing into the folder, delete "),
], ids=["other-host", "empty"])
def test_a_lock_that_cannot_be_judged_here_is_refused_naming_the_file(
        table, tmp_path, no_run, capsys, content, fragment):
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK).write_text(content)
    assert main(_argv(table, out)) == 2
    err = capsys.readouterr().err
    assert fragment in err and str(out / LOCK) in err and not no_run
    assert (out / LOCK).read_text() == content  # not removed


def test_claims_in_one_process_exclude_each_other(tmp_path):
    held = claim_out_folder(tmp_path / "o")
    with pytest.raises(KernelLabError, match="another run"):
        claim_out_folder(tmp_path / "o")
    held.release()
    claim_out_folder(tmp_path / "o").release()
    assert not (tmp_path / "o").exists()  # created by the claims, left empty: removed


def test_a_stale_lock_replaced_meanwhile_by_a_live_one_is_put_back(tmp_path):
    """Two runs taking over one stale lock: the slower one must not remove the lock the
    faster one wrote meanwhile."""
    from kernel_lab.engine.output import LockHolder, _take_over

    lock = tmp_path / LOCK
    stale = LockHolder(999_999_999, socket.gethostname(), "earlier")
    fresh = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": "now"})
    lock.write_text(fresh)  # what the faster run wrote after it removed the stale lock
    assert _take_over(lock, stale) is False
    assert lock.read_text() == fresh and os.listdir(tmp_path) == [LOCK]
    lock.write_text(json.dumps({"pid": stale.pid, "host": stale.host, "started": "earlier"}))
    assert _take_over(lock, stale) is True and os.listdir(tmp_path) == []
