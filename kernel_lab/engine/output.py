"""Writing a run's files: ``result.json`` and ``curves.csv`` (``plot.png`` is drawn by
:mod:`kernel_lab.plotting.render`), each written whole, and ``result.json`` last.

Every file goes to a temporary name in the run folder and is renamed when complete
(:func:`~kernel_lab.engine.atomic.write_atomic`). A new run first removes the folder's
``result.json``, so that file exists only beside a complete set of outputs: a run cut
short by a full disk or a crash leaves a folder without it, which
:func:`check_run_folder` (``kernel-lab report``) refuses. A run holds the folder with a
lock file (:func:`claim_out_folder`), so a second run into the same folder is refused
instead of mixing its files with the first one's.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.atomic import leftover_temporaries, write_atomic
from kernel_lab.engine.runner import RunResult

#: The file whose presence says a run's outputs are complete: written last.
RESULT = "result.json"

#: The lock file a run holds in its output folder (its pid, host and start time).
LOCK = ".kernel-lab.lock"


class OutputError(Exception):
    """An output file could not be written whole (a full disk, a folder gone read-only).

    ``str()`` names the file, the folder and the reason; the folder holds no
    ``result.json`` afterwards.
    """

    def __init__(self, name: str, folder: Path, reason: str) -> None:
        super().__init__(f"cannot write {name} in the folder {folder}: {reason}")
        self.name, self.folder, self.reason = name, folder, reason


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def curves_csv_text(result: RunResult) -> str:
    """``curves.csv``'s text: one column per curve, one row per grid point; missing values
    are empty cells."""
    columns = list(result.table)
    arrays = [np.asarray(result.table[c], dtype=np.float64).ravel() for c in columns]
    rows = max((a.size for a in arrays), default=0)
    # each column as text at once (repr of Python floats: exact), padded with empty cells
    cells = [[repr(v) if math.isfinite(v) else "" for v in a.tolist()] + [""] * (rows - a.size)
             for a in arrays]
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(columns)
    writer.writerows(zip(*cells, strict=True))
    return text.getvalue()


def write_curves_csv(result: RunResult, path: str | os.PathLike[str]) -> Path:
    """:func:`curves_csv_text` written whole to ``path``."""
    return write_atomic(path, curves_csv_text(result))


def write_result_json(result: RunResult, path: str | os.PathLike[str]) -> Path:
    """The run's document (:meth:`RunResult.to_json`) written whole to ``path``."""
    return write_atomic(path, result.to_json() + "\n")


def discard_result(out_dir: str | os.PathLike[str]) -> None:
    """Remove ``out_dir``'s ``result.json`` (if any) before new outputs replace the old
    ones: until the new ``result.json`` is written the folder claims no complete run."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(Path(out_dir) / RESULT)


def write_outputs(out_dir: str | os.PathLike[str],
                  writers: list[tuple[str, Callable[[Path], Path]]]) -> dict[str, Path]:
    """Write a run's files into ``out_dir`` (created if needed) in the order given, the
    last one being ``result.json``, after removing the folder's old ``result.json``.

    Parameters
    ----------
    out_dir : path-like
        The run folder.
    writers : list of (file name, writer)
        Each writer writes the file at the path it is given (whole) and returns it.

    Returns
    -------
    dict
        File name -> path.

    Raises
    ------
    OutputError
        When a file cannot be written; it names the file and the folder.
    """
    out = Path(out_dir)
    assert writers and writers[-1][0] == RESULT, "result.json is written last"
    files: dict[str, Path] = {}
    name = writers[0][0]
    try:
        out.mkdir(parents=True, exist_ok=True)
        discard_result(out)
        for name, writer in writers:
            files[name] = writer(out / name)
    except OSError as exc:
        raise OutputError(name, out, _reason(exc)) from exc
    return files


def write_run(result: RunResult, out_dir: str | os.PathLike[str], *,
              plot: Callable[[Path], Path] | None = None) -> dict[str, Path]:
    """Write ``curves.csv`` (and ``plot.png`` with ``plot``, a function drawing it to the
    path it is given), then ``result.json``, into ``out_dir`` (created if needed); see
    :func:`write_outputs`. Returns ``{"result": …, "curves": …[, "plot": …]}``."""
    writers: list[tuple[str, Callable[[Path], Path]]] = []
    if plot is not None:
        writers.append(("plot.png", plot))
    writers += [("curves.csv", lambda p: write_curves_csv(result, p)),
                (RESULT, lambda p: write_result_json(result, p))]
    files = write_outputs(out_dir, writers)
    return {{"plot.png": "plot", "curves.csv": "curves", RESULT: "result"}[k]: v
            for k, v in files.items()}


# ---------------------------------------------------------------- the folder's lock
def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (True when it cannot be told)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill(pid, 0) would send Ctrl+C there
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # QUERY_LIMITED_INFORMATION
        if not handle:
            return kernel32.GetLastError() == 5  # access denied: it exists
        code = ctypes.c_ulong()
        try:
            ok = kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        finally:
            kernel32.CloseHandle(handle)
        return not ok or code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's process
        return True
    return True


@dataclass
class LockHolder:
    """What a lock file says about the run holding the folder."""

    pid: int
    host: str
    started: str

    @classmethod
    def read(cls, path: Path) -> LockHolder | None:
        """The holder written in ``path``; None when the file is not one of ours (empty,
        cut short, edited)."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            return cls(int(doc["pid"]), str(doc["host"]), str(doc.get("started", "")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def here(self) -> bool:
        return self.host == socket.gethostname()

    def alive(self) -> bool:
        """False only when the holder is known to be gone: a process of this host that
        no longer runs."""
        return not self.here() or _pid_alive(self.pid)

    def describe(self) -> str:
        since = f", started {self.started}" if self.started else ""
        return f"process {self.pid} on {self.host}{since}"


@dataclass
class OutFolder:
    """An output folder this process holds for one run (see :func:`claim_out_folder`)."""

    path: Path
    created: bool
    #: What the user should know (a stale lock taken over).
    notes: list[str] = field(default_factory=list)
    held: bool = True

    def release(self) -> None:
        """Remove the lock; remove the folder too when this run created it and left
        nothing in it (a run that failed before writing)."""
        if not self.held:
            return
        self.held = False
        with contextlib.suppress(OSError):
            os.unlink(self.path / LOCK)
        if self.created:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when empty

    def remove_leftovers(self) -> None:
        """Remove temporary files that killed runs left here (none of them can be
        writing: this run holds the folder)."""
        for tmp in leftover_temporaries(self.path):
            with contextlib.suppress(OSError):
                tmp.unlink()


def _refuse(folder: Path, what: str, exc: OSError | None = None, *,
            first: str = "") -> KernelLabError:
    reason = f": {_reason(exc)}" if exc is not None else ""
    return KernelLabError(f"--out {folder}: {what}{reason}; {first}choose another folder "
                          "with --out")


def _create_lock(path: Path) -> None:
    """Create the lock file ``path`` atomically (O_CREAT|O_EXCL), holding this process's
    pid, host and start time. Raises FileExistsError when it exists."""
    doc = {"pid": os.getpid(), "host": socket.gethostname(),
           "started": datetime.now().astimezone().isoformat(timespec="seconds")}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.write(fd, (json.dumps(doc) + "\n").encode("utf-8"))
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def _take_over(lock: Path, stale: LockHolder) -> bool:
    """Remove the stale lock ``lock`` if it still holds ``stale``: moved aside first, so
    that of two runs taking it over at once only one removes it, and a fresh lock
    written meanwhile is put back. True when the stale lock is gone."""
    aside = lock.with_name(f"{LOCK}.{os.getpid()}.stale")
    try:
        os.replace(lock, aside)
    except FileNotFoundError:
        return True  # another run removed it first
    moved = LockHolder.read(aside)
    if moved == stale:
        aside.unlink()
        return True
    with contextlib.suppress(OSError):  # someone's fresh lock: put it back
        os.link(aside, lock)
    aside.unlink()
    return False


def claim_out_folder(folder: str | os.PathLike[str]) -> OutFolder:
    """Check, create and lock a run's output folder, before any computation.

    Parameters
    ----------
    folder : path-like
        The ``--out`` folder (created with its parents when missing).

    Returns
    -------
    OutFolder
        Release it (``release()``, or use it as a context manager) when the run's
        outputs are written or the run failed.

    Raises
    ------
    KernelLabError
        With a message naming the folder, when it exists as a file, cannot be created,
        cannot be written in (a read-only file system, no permission), or is held by
        another run (a lock file whose process still runs, or runs on another host).
    """
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise _refuse(out, "exists and is not a folder")
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _refuse(out, "cannot create the folder", exc) from None
    lock = out / LOCK
    notes: list[str] = []
    for _ in range(3):  # a lock taken over by a concurrent run is read again
        try:
            _create_lock(lock)
            break
        except FileExistsError:
            pass
        except OSError as exc:
            if created:
                with contextlib.suppress(OSError):
                    out.rmdir()
            raise _refuse(out, "cannot write in the folder", exc) from None
        holder = LockHolder.read(lock)
        if holder is None:
            raise _refuse(out, f"its lock file {LOCK} was not written by Kernel Lab "
                               "(empty or edited)",
                          first=f"if no run is writing into the folder, delete {lock}, or ")
        if holder.alive():
            first = "wait for it to finish or " if holder.here() else \
                f"if that run on another computer is gone, delete {lock}, or "
            raise _refuse(out, f"another run is writing into this folder "
                               f"({holder.describe()})", first=first)
        if _take_over(lock, holder):
            notes.append(f"took over the lock of a run that stopped without finishing "
                         f"({holder.describe()}); its outputs there are replaced")
    else:
        raise _refuse(out, "other runs keep taking this folder")
    return OutFolder(out, created, notes)


@contextlib.contextmanager
def out_folder(folder: str | os.PathLike[str]) -> Iterator[OutFolder]:
    """:func:`claim_out_folder` for a ``with`` block: released when the block ends."""
    held = claim_out_folder(folder)
    try:
        yield held
    finally:
        held.release()


# ---------------------------------------------------------------- reading a run folder
def check_run_folder(folder: str | os.PathLike[str]) -> Path:
    """The ``result.json`` of a run folder whose outputs are complete.

    Raises
    ------
    KernelLabError
        Naming the folder and what is wrong: a run is still writing into it, a file was
        left cut short by a run that stopped while writing, there is no ``result.json``
        (the run did not complete), or ``curves.csv`` does not hold the result's table.
    """
    out = Path(folder)
    holder = LockHolder.read(out / LOCK)
    if holder is not None and holder.alive():
        raise KernelLabError(f"{out}: a run is still writing into this folder "
                             f"({holder.describe()}); report on it when it has finished")
    leftovers = leftover_temporaries(out)
    result = out / RESULT
    if leftovers:
        raise KernelLabError(
            f"{out}: the run there stopped while writing (it left {leftovers[0].name}, a "
            "file cut short): its outputs are incomplete; run it again into this folder")
    if not result.is_file():
        raise KernelLabError(
            f"{out} has no {RESULT}: the run there did not complete (or this is not a run "
            "folder); run it again into this folder")
    _check_curves(out)
    return result


def _check_curves(out: Path) -> None:
    """``curves.csv`` (when present) has the header and the row count of the table in
    ``result.json``: a file cut short (by an older Kernel Lab, or copied in part) is
    refused by name."""
    path = out / "curves.csv"
    try:
        doc: dict[str, Any] = json.loads((out / RESULT).read_text(encoding="utf-8"))
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, ValueError):
        return  # no curves.csv, or a result.json the report itself reads and refuses
    table = doc.get("table")
    if not isinstance(table, dict):
        return
    expected = max((len(c) for c in table.values() if isinstance(c, list)), default=0)
    body = rows[1:]
    whole = bool(rows) and rows[0] == list(table) and len(body) == expected and all(
        len(r) == len(table) for r in body)
    if not whole:
        raise KernelLabError(
            f"{path} is incomplete: it has {len(body)} of {expected} rows of {RESULT}'s "
            f"table{'' if not rows or rows[0] == list(table) else ' and another header'}; "
            "run it again into this folder")
