"""Autosave, Qt-free: where the file lives, how it is written (whole or not at all), the
mark of a clean exit, the one-instance lock and when to write (the debounce policy).

The window (:mod:`kernel_lab.gui.autosave`) keeps its state — the lab's session (experiment,
parameters, data source, pins), the Playground's (painted points included) and the
window's layout — in one JSON file next to its settings file, a few seconds after each
change. The file says whether it was written by a clean close (``"clean": true``): the
next start restores the Playground's points from it silently; a file that is not clean
means the program ended without closing (killed, crashed, the machine stopped) and the
next start offers to restore everything in it.

Format (version 1)::

    {"format": "kernel-lab-autosave", "version": 1,
     "clean": false, "saved_at": "2026-12-05T12:03:11+00:00", "pid": 1234,
     "session": {...},          # a session document (kernel_lab.engine.session)
     "window": {"geometry": "<base64>", "state": "<base64>", "playground_visible": true,
                "log_y": false, "presentation": false, "use_default_data": true}}

Files, for a settings file ``<folder>/<stem>.<ext>`` (``~/.config/KernelLab/Kernel
Lab.conf`` on Linux): ``<stem>.autosave.json`` (the state), ``<stem>.autosave.lock`` (held
by the running window: a second window on the same settings does not autosave over the
first one's file) and ``<stem>.autosave-discarded.json`` (the last state the user chose
not to restore, kept once in case of a wrong click).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine import atomic
from kernel_lab.engine.session import MAX_BYTES, Session, session_from_dict

FORMAT = "kernel-lab-autosave"
VERSION = 1
#: Seconds of quiet after a change before the state is written.
DELAY_S = 3.0
#: However often changes come (a drag that paints, a slider moved on and on), the state is
#: written at most this many seconds after the first change not yet written.
MAX_WAIT_S = 15.0
#: Items of a list encoded by one call of the JSON encoder (which holds the interpreter's
#: lock while it runs): between two calls the window's thread gets its turn.
CHUNK = 2048
#: The window's settings kept in the file, with their types.
WINDOW_KEYS: dict[str, type] = {"geometry": str, "state": str, "playground_visible": bool,
                                "log_y": bool, "presentation": bool,
                                "use_default_data": bool}


class AutosaveError(KernelLabError):
    """An autosave file that cannot be read or written; the message names it."""


@dataclass(frozen=True)
class AutosavePaths:
    """The autosave's files for one settings file (see the module docstring)."""

    file: Path
    lock: Path
    discarded: Path

    def remove_temporaries(self) -> int:
        """Delete the temporary files a write cut short left (the process was killed
        between writing and renaming); call it holding the lock. Returns how many."""
        removed = 0
        for tmp in atomic.leftover_temporaries(self.file.parent):
            if not tmp.name.startswith(f".{self.file.name}."):
                continue
            with contextlib.suppress(OSError):
                tmp.unlink()
                removed += 1
        return removed

    @classmethod
    def beside(cls, settings_file: str | os.PathLike[str]) -> AutosavePaths:
        """The files next to ``settings_file`` (the QSettings file), named after it."""
        settings = Path(settings_file)
        folder, stem = settings.parent, settings.stem or "kernel-lab"
        return cls(folder / f"{stem}.autosave.json", folder / f"{stem}.autosave.lock",
                   folder / f"{stem}.autosave-discarded.json")


# -- writing ------------------------------------------------------------------------------
def write_atomic(path: str | os.PathLike[str], text: str) -> int:
    """Write ``text`` to ``path`` whole or not at all (the engine's
    :func:`~kernel_lab.engine.atomic.write_atomic`: a temporary file of the same folder,
    flushed, renamed over ``path``, the folder flushed). A failure (a full disk) leaves
    ``path`` as it was and no temporary file; it raises :class:`AutosaveError` naming the
    folder. Returns the number of bytes written."""
    path = Path(path)
    data = text.encode("utf-8")
    try:
        atomic.write_atomic(path, data)
    except OSError as exc:
        raise AutosaveError(f"cannot write the autosave file {path.name} in {path.parent}: "
                            f"{exc.strerror or exc}; free some space or make the folder "
                            "writable") from None
    return len(data)


def encode(value: Any) -> str:
    """Compact JSON of ``value`` (as ``json.dumps(value, ensure_ascii=False,
    allow_nan=False, separators=(",", ":"))``), made piece by piece: mappings and lists
    of containers item by item, a long list (painted points, a pinned curve) :data:`CHUNK`
    items at a time, so the thread that writes never holds the interpreter for long —
    json.dumps of 200,000 pinned numbers in one call stalled another thread 125 ms."""
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _encode(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"keys must be text, not {key!r}")
            out.append(("," if i else "") + _dumps(key) + ":")
            _encode(item, out)
        out.append("}")
    elif isinstance(value, list | tuple) and len(value) > CHUNK:  # numbers, or rows
        out.append("[")
        for start in range(0, len(value), CHUNK):
            out.append(("," if start else "") + _dumps(value[start:start + CHUNK])[1:-1])
        out.append("]")
    elif isinstance(value, list | tuple) and any(isinstance(v, dict | list | tuple)
                                                 for v in value):
        out.append("[")  # e.g. the pinned sets: each may hold long lists
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        out.append(_dumps(value))


@dataclass
class Snapshot:
    """The state to keep, taken on the window's thread (cheap: references to values that
    are never changed in place — a session, Playground points); turned into JSON on the
    writer's thread."""

    session: Session
    window: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        window = {k: v for k, v in self.window.items()
                  if k in WINDOW_KEYS and isinstance(v, WINDOW_KEYS[k])}
        return {"session": self.session.to_dict(), "window": window}


def document(payload: dict[str, Any], *, clean: bool, saved_at: float | None = None,
             pid: int | None = None) -> dict[str, Any]:
    """The autosave document of a payload (:meth:`Snapshot.payload`)."""
    when = datetime.fromtimestamp(time.time() if saved_at is None else saved_at, UTC)
    return {"format": FORMAT, "version": VERSION, "clean": bool(clean),
            "saved_at": when.isoformat(timespec="seconds"),
            "pid": os.getpid() if pid is None else pid, **payload}


@dataclass(frozen=True)
class Written:
    """What one write did: bytes and seconds (serialising, writing)."""

    path: Path
    size: int
    serialise_s: float
    write_s: float
    clean: bool


class AutosaveWriter:
    """Writes snapshots to one file; a snapshot equal to the last one written (or to the
    :meth:`baseline`) is not written again, unless it marks a clean exit. The last state is
    kept as its JSON text — one string, which Python's garbage collector never walks (the
    nested lists of a few thousand points, kept between writes, made every full collection
    on the window's thread slower). Used by one thread at a time (the window's autosave
    thread, then the window's at its close)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.last: str | None = None  # the JSON of the last payload written

    def baseline(self, snapshot: Snapshot) -> None:
        """The state the program started in: nothing to write while it stays so."""
        self.last = encode(snapshot.payload())

    def write(self, snapshot: Snapshot | None, *, clean: bool = False) -> Written | None:
        """Write ``snapshot`` (None: the last payload again, e.g. marked clean) when it
        changed or ``clean``; None when nothing was written."""
        t0 = time.perf_counter()
        text = encode(snapshot.payload()) if snapshot is not None else self.last
        if text is None or (text == self.last and not clean):
            return None
        head = encode(document({}, clean=clean))  # {"format": …, "pid": …}: the payload after
        whole = f"{head[:-1]},{text[1:]}" if text != "{}" else head
        t1 = time.perf_counter()
        size = write_atomic(self.path, whole)
        self.last = text
        return Written(self.path, size, t1 - t0, time.perf_counter() - t1, clean)


# -- reading ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recovered:
    """An autosave file read back and checked."""

    session: Session
    window: dict[str, Any]
    clean: bool
    saved_at: str

    def summary(self) -> str:
        """One sentence on what it holds (for the restore question)."""
        parts = []
        spec = self.session.spec
        if spec is not None:
            data = spec.data.label() if spec.data is not None else "its own data"
            parts.append(f"experiment {spec.experiment} with its parameters, data {data}")
        if self.session.pinned:
            parts.append(f"{len(self.session.pinned)} pinned curve set"
                         f"{'s' if len(self.session.pinned) > 1 else ''}")
        play = self.session.playground
        if play is not None:
            n = play.points.n if play.points is not None else play.n
            parts.append(f"the Playground ({play.dataset}, {n} points)")
        return "; ".join(parts) or "the window's layout"


def read_autosave(path: str | os.PathLike[str]) -> Recovered | None:
    """Read the autosave file at ``path``; None when there is none. A damaged or foreign
    file raises :class:`AutosaveError` naming it (its session is checked as a session
    file is, :func:`~kernel_lab.engine.session.session_from_dict`)."""
    path = Path(path)
    where = f"autosave file {path}"
    try:
        with _open_regular(path) as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AutosaveError(f"cannot read the {where}: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise AutosaveError(f"the {where} is larger than {MAX_BYTES // 2**20} MB; it is "
                            "not one Kernel Lab wrote")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise AutosaveError(f"the {where} is damaged ({type(exc).__name__}); it is set "
                            "aside and the window starts from its settings") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise AutosaveError(f"the {where} is not a Kernel Lab autosave (no \"format\": "
                            f"\"{FORMAT}\")")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= VERSION:
        raise AutosaveError(f"the {where} has version {version!r}; this Kernel Lab reads "
                            f"version {VERSION}")
    session = session_from_dict(doc.get("session"), where)
    window = doc.get("window", {})
    window = {k: v for k, v in window.items() if k in WINDOW_KEYS
              and isinstance(v, WINDOW_KEYS[k])} if isinstance(window, dict) else {}
    saved_at = doc.get("saved_at")
    return Recovered(session, window, doc.get("clean") is True,
                     saved_at if isinstance(saved_at, str) else "")


def _open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file (a FIFO or device would block
    or never end); FileNotFoundError when absent."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def set_aside(paths: AutosavePaths) -> Path | None:
    """Move the autosave file to the discarded name (replacing the one before); None when
    there was none."""
    try:
        os.replace(paths.file, paths.discarded)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AutosaveError(f"cannot move the autosave file {paths.file} aside: "
                            f"{exc.strerror or exc}") from None
    return paths.discarded


# -- one window per settings file ---------------------------------------------------------
class InstanceLock:
    """An advisory lock on a file, held while a window autosaves to its folder. The
    operating system releases it when the process ends, however it ends, so a lock left
    by a killed window never blocks the next start; a second window (of this process or
    another) does not get it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> bool:
        """Take the lock without waiting; False when another holder has it."""
        if self._file is not None:
            return True
        try:
            f = open(self.path, "a+b")  # held open while the lock is
        except OSError:
            return False
        try:
            _lock(f)
        except OSError:
            f.close()
            return False
        self._file = f
        return True

    def release(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                _unlock(self._file)
            self._file.close()
            self._file = None


if sys.platform.startswith("win"):
    import msvcrt

    def _lock(f: IO[bytes]) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(f: IO[bytes]) -> None:
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock(f: IO[bytes]) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(f: IO[bytes]) -> None:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# -- when to write ------------------------------------------------------------------------
class Debounce:
    """When a write is due: ``delay`` seconds after the last change, but no later than
    ``max_wait`` seconds after the first change not yet written (changes that never stop
    still get written). Times are ``time.monotonic()`` values passed in."""

    def __init__(self, delay: float = DELAY_S, max_wait: float = MAX_WAIT_S) -> None:
        if not 0 <= delay <= max_wait:
            raise ValueError("need 0 <= delay <= max_wait")
        self.delay, self.max_wait = float(delay), float(max_wait)
        self.first: float | None = None  # the first change not written yet
        self.last: float | None = None

    @property
    def pending(self) -> bool:
        return self.first is not None

    def changed(self, now: float) -> float:
        """A change at ``now``; returns the seconds until the write is due."""
        if self.first is None:
            self.first = now
        self.last = now
        return self.due_in(now)

    def due_in(self, now: float) -> float:
        """Seconds until the write is due (0: now); ``inf`` when nothing changed."""
        if self.first is None or self.last is None:
            return float("inf")
        due = min(self.last + self.delay, self.first + self.max_wait)
        return max(0.0, due - now)

    def written(self) -> None:
        """The state was handed to the writer: nothing pending."""
        self.first = self.last = None
