"""Sessions (and presets): one JSON document with the data source, the experiment and its
parameters, and optionally pinned results.

Reading one never executes anything from it: the file is parsed as JSON, checked field by
field, and the parameters are validated by the experiment's own declarations. A malformed
or foreign file is rejected with a :class:`SessionError` naming the problem.

Format (version 1)::

    {"format": "kernel-lab-session", "version": 1,
     "title": "...", "about": "...",                       # optional (presets)
     "experiment": "ckrr-risk",
     "params": {"trials": 50, ...},                        # checked by the experiment
     "data": {"spec": "gaussian:n=200,p=100", "options": {"test_fraction": 0.25}},
     "pinned": [{"label": "...", "table": {"lam": [...], ...}}],   # optional
     "playground": {"dataset": "xor", "n": 400, "noise": 0.2,      # optional: the
                    "params": {"method": "krr", ...}, "steps": 0,  # Playground's state
                    "points": {"X": [...], "y": [...], "test": [...]}}}

A Playground session or preset has ``"playground"`` and no ``"experiment"``; a lab session
saved with the Playground open has both. The Playground's parameters are checked by their
declarations (:mod:`kernel_lab.engine.playground.params`) as an experiment's are. Playground
presets of the first format (``"format": "kernel-lab-playground"``) are read as well.

A session is read only from a regular file of at most :data:`MAX_BYTES` (a pipe, a device
or a folder is refused by name before anything is read: ``/dev/zero`` was read until 5 GB,
a FIFO waited for ever). Pinned curves are kept to :data:`PIN_MAX_POINTS` points each (the
min/max of buckets of rows, :func:`~kernel_lab.experiments.plotspec.thin_table`). Top-level
fields this version does not know are named in :attr:`Session.notes`, not refused.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.params import resolve_params
from kernel_lab.data.generators import GENERATORS
from kernel_lab.data.source import FILE_OPTIONS, LOAD_OPTIONS, DataSource
from kernel_lab.engine.atomic import write_atomic
from kernel_lab.engine.jsonable import jsonable
from kernel_lab.engine.playground.state import PlaygroundState, state_from_dict
from kernel_lab.engine.spec import RunSpec
from kernel_lab.experiments import get_experiment
from kernel_lab.experiments.plotspec import PIN_MAX_POINTS, thin_table

FORMAT = "kernel-lab-session"
#: The format of the Playground's first presets (read, never written).
OLD_PLAYGROUND_FORMAT = "kernel-lab-playground"
VERSION = 1
#: The largest session file read. A session is a few parameters and pinned curves of at
#: most PIN_MAX_POINTS points (well under 1 MB as Kernel Lab writes it); 50 MB leaves room
#: for hand-made ones and still parses in about a second.
MAX_BYTES = 50 * 2**20
#: The fields of a session document (others are named in a note and ignored).
FIELDS = ("format", "version", "title", "about", "experiment", "params", "data", "pinned",
          "playground")
#: Every option a data source can hold (a folder's features and partitions, a subsample, …).
_OPTION_SPECS = {spec.name: spec for spec in FILE_OPTIONS}
_DATA_OPTIONS = set(LOAD_OPTIONS) | set(_OPTION_SPECS)


def _declared_option(name: str, value: Any) -> bool:
    """Whether ``value`` is valid for the data option ``name`` as the option declares it."""
    try:
        _OPTION_SPECS[name].coerce(value)
    except KernelLabError:
        return False
    return True


class SessionError(KernelLabError):
    """A session file that cannot be used; the message says why and what to do."""


class NotASessionError(SessionError):
    """A JSON document that is not a session at all (no session ``"format"``): the
    ``report`` command reads such a file as a run's ``result.json`` instead."""


@dataclass
class Session:
    """A saved state of the lab: what to run, optional title and text (presets), and
    pinned curves (``{"label": str, "table": {column: list of numbers}}``); a Playground
    session (or preset) has no ``spec`` but a ``playground`` state."""

    spec: RunSpec | None
    title: str = ""
    about: str = ""
    pinned: list[dict[str, Any]] = field(default_factory=list)
    #: The Playground's state (data with painted points, method, parameters), if open.
    playground: PlaygroundState | None = None
    #: What reading the document noticed without refusing it (unknown fields, pinned
    #: curves thinned), one sentence each; never written.
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if self.title:
            doc["title"] = self.title
        if self.about:
            doc["about"] = self.about
        if self.spec is not None:
            data = ({"spec": None, "options": {}} if self.spec.data is None
                    else self.spec.data.to_dict())
            doc.update({"experiment": self.spec.experiment,
                        "params": jsonable(self.spec.params), "data": jsonable(data)})
        if self.pinned:
            doc["pinned"] = jsonable(self.pinned)
        if self.playground is not None:
            doc["playground"] = jsonable(self.playground.to_dict())
        return doc


def save_session(session: Session, path: str | os.PathLike[str]) -> Path:
    """Write ``session`` as JSON, whole or not at all
    (:func:`~kernel_lab.engine.atomic.write_atomic`: a temporary file renamed into place;
    a full disk leaves the file as it was, and no temporary file)."""
    text = json.dumps(session.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
    return write_atomic(path, text + "\n")


def load_session(path: str | os.PathLike[str], *, threaded: bool = False) -> Session:
    """Read and check a session file (see the module docstring).

    ``threaded``: parse so that other threads (the window's) keep running meanwhile —
    numbers are converted by Python functions, between which the interpreter can switch
    threads (the C parser holds the interpreter for the whole file: a 40 MB session
    stopped the window for 0.35 s); about three times slower."""
    path = Path(path)
    where = f"session file {path.name}"
    text = read_session_text(path, where)
    hooks: dict[str, Any] = ({"parse_float": _float, "parse_int": _int} if threaded
                             else {})
    try:
        doc = json.loads(text, **hooks)
    except RecursionError:
        raise SessionError(f"{where} is nested too deeply to be a session") from None
    except json.JSONDecodeError as exc:
        raise SessionError(f"{where} is not valid JSON (line {exc.lineno}, column "
                           f"{exc.colno}: {exc.msg}); open a session saved by Kernel Lab"
                           ) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise SessionError(f"{where} holds a number Kernel Lab cannot read ({exc}); open a "
                           "session saved by Kernel Lab") from None
    return session_from_dict(doc, where)


#: Session files larger than this are read by :func:`read_session_apart` in a process of
#: their own; smaller ones parse in a few tens of milliseconds in the caller's thread.
APART_BYTES = 4 * 2**20
#: How often :func:`read_session_apart` asks whether its caller still wants the session.
POLL_S = 0.05


def read_session_apart(path: str | os.PathLike[str],
                       superseded: Callable[[], bool] = lambda: False) -> Session | None:
    """:func:`load_session` for a window's worker thread: a file of more than
    :data:`APART_BYTES` is read, parsed and checked in a child process, so that nothing of
    it holds the window's interpreter (a thread parsing 40 MB holds it in stretches, and
    on a loaded machine the thread is descheduled while holding it: the window stalled
    100-300 ms). Returns None, the child stopped, once ``superseded()`` is true.

    Raises
    ------
    SessionError
        As :func:`load_session`, or when the child process ended without an answer.
    """
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # load_session says what is wrong with it
    if size <= APART_BYTES:
        return load_session(path, threaded=True)
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # as the window's worker process
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_load_in_child, args=(str(path), send),
                        name="kernel-lab-session-reader", daemon=True)
    child.start()
    send.close()
    try:
        while not receive.poll(POLL_S):
            if superseded():
                return None
            if not child.is_alive() and not receive.poll(0):
                raise SessionError(f"session file {Path(path).name} could not be read: "
                                   f"the reading process ended (exit code {child.exitcode})")
        kind, value = receive.recv()
    except EOFError:
        raise SessionError(f"session file {Path(path).name} could not be read: the reading "
                           "process ended without an answer") from None
    finally:
        receive.close()
        if child.is_alive():
            child.terminate()
        child.join(5.0)
    if kind == "error":
        raise SessionError(value)
    return value


def _load_in_child(path: str, send: Any) -> None:
    """The child process of :func:`read_session_apart`: ("session", Session) or
    ("error", message) through ``send``."""
    try:
        send.send(("session", load_session(path)))
    except SessionError as exc:
        send.send(("error", str(exc)))
    except Exception as exc:  # reported as the session's, never a crash of the window
        send.send(("error", f"session file {Path(path).name} could not be read: "
                            f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()


def _float(text: str) -> float:
    return float(text)


def _int(text: str) -> int:
    return int(text)


#: Bytes of a session decoded at a time (see read_session_text).
_SLICE = 2**20


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_session_text(path: Path, where: str) -> str:
    """The text of the session file ``path``: only a regular file is opened (a pipe, a
    device or a folder is refused at once, by its kind), and at most :data:`MAX_BYTES`
    are read (a file that grows past them while it is read is refused too)."""
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise SessionError(f"{where} ({path}) is {file_kind(mode)}, not a file; open "
                               "a .json session saved by Kernel Lab")
        # O_NONBLOCK: should the path become a pipe after the check, opening it does not
        # wait for a writer, and fstat below sees what was opened
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise SessionError(f"{where} ({path}) is {file_kind(st.st_mode)}, not a "
                                   "file; open a .json session saved by Kernel Lab")
            if st.st_size > MAX_BYTES:
                raise SessionError(f"{where} is {st.st_size / 2**20:.0f} MB, more than any "
                                   f"session should be (at most {MAX_BYTES // 2**20} MB); is "
                                   "it the right file?")
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SessionError(f"cannot read {where}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise SessionError(f"{where} grew past {MAX_BYTES // 2**20} MB while it was read; "
                           "is it the right file?")
    try:  # in slices: decoding holds the interpreter (40 MB: 20-70 ms at once)
        decoder = codecs.getincrementaldecoder("utf-8")()
        return "".join([decoder.decode(data[i:i + _SLICE]) for i in range(0, len(data),
                                                                          _SLICE)]
                       + [decoder.decode(b"", final=True)])
    except UnicodeDecodeError:
        raise SessionError(f"{where} is not a text file; open a .json session saved by "
                           "Kernel Lab") from None


def session_from_dict(doc: Any, where: str = "session") -> Session:
    """Check a parsed session document field by field."""
    if isinstance(doc, dict) and doc.get("format") == OLD_PLAYGROUND_FORMAT:
        doc = {**doc, "format": FORMAT}
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise NotASessionError(f"{where} is not a Kernel Lab session (no \"format\": "
                               f"\"{FORMAT}\" field); open a file saved with File → Save "
                               "session")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > VERSION \
            or version < 1:
        raise SessionError(f"{where} has format version {version!r}; this Kernel Lab reads "
                           f"version {VERSION} — update Kernel Lab to open it")
    title, about = doc.get("title", ""), doc.get("about", "")
    if not isinstance(title, str) or not isinstance(about, str):
        raise SessionError(f"{where}: \"title\" and \"about\" must be text")
    unknown = [str(k) for k in doc if k not in FIELDS]
    notes = [f"{where}: ignored the field{'s' if len(unknown) > 1 else ''} "
             f"{', '.join(repr(k) for k in unknown)}, which this version of Kernel Lab "
             f"does not know (a session has: {', '.join(FIELDS)})"] if unknown else []
    playground = _playground(doc, where)
    name = doc.get("experiment")
    if name is None and playground is not None:
        return Session(None, title, about, [], playground, notes)
    if not isinstance(name, str):
        raise SessionError(f"{where} names no experiment (field \"experiment\")")
    try:
        experiment = get_experiment(name)
    except KernelLabError as exc:
        raise SessionError(f"{where}: {exc}") from None
    params = doc.get("params", {})
    if not isinstance(params, dict) or not all(
            isinstance(v, str | int | float | bool | list | type(None)) for v in params.values()):
        raise SessionError(f"{where}: \"params\" must map names to numbers, text or lists")
    try:
        resolved = experiment.resolve(params)
    except KernelLabError as exc:
        raise SessionError(f"{where}: {exc}") from None
    data = doc.get("data", {}) or {}
    if not isinstance(data, dict):
        raise SessionError(f"{where}: \"data\" must be an object with \"spec\" and "
                           "\"options\"")
    spec = data.get("spec")
    if spec is not None and not isinstance(spec, str):
        raise SessionError(f"{where}: the data \"spec\" must be text (a file, example or "
                           "generator)")
    options = data.get("options", {}) or {}
    if not isinstance(options, dict) or set(options) - _DATA_OPTIONS:
        bad = sorted(set(options) - _DATA_OPTIONS) if isinstance(options, dict) else options
        raise SessionError(f"{where}: unknown data options {bad}; allowed: "
                           f"{', '.join(sorted(_DATA_OPTIONS))}")
    checks = {"target": lambda v: isinstance(v, str | int) and not isinstance(v, bool),
              "test_fraction": lambda v: isinstance(v, int | float) and not isinstance(v, bool)
              and 0.0 <= v <= 0.95,
              "standardize": lambda v: isinstance(v, bool),
              "drop_nan": lambda v: isinstance(v, bool),
              "format": lambda v: isinstance(v, str)}
    for key, value in options.items():
        if not checks.get(key, lambda v, k=key: _declared_option(k, v))(value):
            raise SessionError(f"{where}: data option {key} = {value!r} is not valid "
                               "(test_fraction: a number in [0, 0.95]; standardize, "
                               "drop_nan: true/false; target, format: text; "
                               f"{key}: {_OPTION_SPECS[key].help})")
    pinned = _pinned(doc.get("pinned", []), where, notes)
    kind = data.get("kind")
    if kind is not None and kind not in ("generator", "example", "file"):
        raise SessionError(f"{where}: the data \"kind\" must be generator, example or file")
    try:  # no spec: the experiment's own data (options alone have nothing to apply to)
        source = DataSource.from_dict({"kind": kind, "spec": spec, "options": options}) \
            if spec else None
        if source is not None and source.kind == "generator":  # as drawing it would
            resolve_params(GENERATORS[source.name].params, source.params,
                           owner=f"the {source.name} generator")
    except KernelLabError as exc:
        raise SessionError(f"{where}: {exc}") from None
    return Session(RunSpec(name, resolved, source), title, about, pinned, playground, notes)


#: Rows of a pinned column converted at a time (see :func:`_numbers`).
_CHUNK = 65536


def _numbers(col: list[Any], where: str, key: str) -> Any:
    """A pinned column as floats (None → NaN); refuses anything but numbers and null
    (``true`` is no number here, although Python counts it as one). Converted in chunks:
    each holds the interpreter, and a window reading a session in a thread stays live."""
    import numpy as np

    allowed = {int, float, type(None)}
    parts = []
    for i in range(0, len(col), _CHUNK):
        chunk = col[i:i + _CHUNK]
        if not set(map(type, chunk)) <= allowed:
            raise SessionError(f"{where}: pinned column {key!r} must be a list of numbers "
                               "(or null)")
        try:
            parts.append(np.array(chunk, dtype=np.float64))
        except OverflowError:
            raise SessionError(f"{where}: pinned column {key!r} holds a number too large "
                               "for a float") from None
    return np.concatenate(parts) if parts else np.zeros(0)


def _pinned(pinned: Any, where: str, notes: list[str]) -> list[dict[str, Any]]:
    """The checked pinned curves, each column a list of numbers (null for a missing
    value), longer ones thinned to :data:`PIN_MAX_POINTS` rows (said in ``notes``)."""
    if not isinstance(pinned, list) or not all(
            isinstance(p, dict) and isinstance(p.get("table"), dict) for p in pinned):
        raise SessionError(f"{where}: \"pinned\" must be a list of {{\"label\", \"table\"}}")
    out = []
    for p in pinned:
        table = p["table"]
        for key, col in table.items():
            if not isinstance(col, list):
                raise SessionError(f"{where}: pinned column {key!r} must be a list of "
                                   "numbers")
        longest = max((len(col) for col in table.values()), default=0)
        if longest > PIN_MAX_POINTS:
            table = thin_table({k: _numbers(col, where, k) for k, col in table.items()})
            kept = max(v.size for v in table.values())
            notes.append(f"{where}: the pinned curves {str(p.get('label', ''))!r} keep "
                         f"{kept:,} of their {longest:,} points (at most {PIN_MAX_POINTS:,}: "
                         "the first, last, smallest and largest of each stretch)")
            table = {k: jsonable(v) for k, v in table.items()}
        else:
            for key, col in table.items():
                _numbers(col, where, key)
        out.append({**p, "table": table})
    return out


def _playground(doc: dict[str, Any], where: str) -> PlaygroundState | None:
    """The document's Playground state, checked (None when it has none)."""
    playground = doc.get("playground")
    if playground is None:
        return None
    if not (isinstance(playground, dict) and isinstance(playground.get("points", {}), dict)):
        raise SessionError(f"{where}: \"playground\" must be an object (data set, "
                           "parameters, points)")
    try:
        return state_from_dict(playground, where)
    except KernelLabError as exc:
        raise SessionError(str(exc)) from None
