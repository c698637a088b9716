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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_lab.core.errors import KernelLabError
from kernel_lab.data.source import FILE_OPTIONS, LOAD_OPTIONS, DataSource
from kernel_lab.engine.jsonable import jsonable
from kernel_lab.engine.playground.state import PlaygroundState, state_from_dict
from kernel_lab.engine.spec import RunSpec
from kernel_lab.experiments import get_experiment

FORMAT = "kernel-lab-session"
#: The format of the Playground's first presets (read, never written).
OLD_PLAYGROUND_FORMAT = "kernel-lab-playground"
VERSION = 1
MAX_BYTES = 50 * 2**20
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
    """Write ``session`` as JSON (atomically: a temporary file renamed into place)."""
    path = Path(path)
    text = json.dumps(session.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_session(path: str | os.PathLike[str]) -> Session:
    """Read and check a session file (see the module docstring)."""
    path = Path(path)
    where = f"session file {path.name}"
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SessionError(f"cannot open {where}: {exc.strerror or exc}") from None
    if size > MAX_BYTES:
        raise SessionError(f"{where} is {size / 2**20:.0f} MB, more than any session "
                           "should be; is it the right file?")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SessionError(f"cannot read {where}: {exc.strerror or exc}") from None
    except RecursionError:
        raise SessionError(f"{where} is nested too deeply to be a session") from None
    except UnicodeDecodeError:
        raise SessionError(f"{where} is not a text file; open a .json session saved by "
                           "Kernel Lab") from None
    except json.JSONDecodeError as exc:
        raise SessionError(f"{where} is not valid JSON (line {exc.lineno}, column "
                           f"{exc.colno}: {exc.msg}); open a session saved by Kernel Lab"
                           ) from None
    return session_from_dict(doc, where)


def session_from_dict(doc: Any, where: str = "session") -> Session:
    """Check a parsed session document field by field."""
    if isinstance(doc, dict) and doc.get("format") == OLD_PLAYGROUND_FORMAT:
        doc = {**doc, "format": FORMAT}
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SessionError(f"{where} is not a Kernel Lab session (no \"format\": "
                           f"\"{FORMAT}\" field); open a file saved with File → Save session")
    version = doc.get("version")
    if not isinstance(version, int) or version > VERSION or version < 1:
        raise SessionError(f"{where} has format version {version!r}; this Kernel Lab reads "
                           f"version {VERSION} — update Kernel Lab to open it")
    title, about = doc.get("title", ""), doc.get("about", "")
    if not isinstance(title, str) or not isinstance(about, str):
        raise SessionError(f"{where}: \"title\" and \"about\" must be text")
    playground = _playground(doc, where)
    name = doc.get("experiment")
    if name is None and playground is not None:
        return Session(None, title, about, [], playground)
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
    pinned = doc.get("pinned", [])
    if not isinstance(pinned, list) or not all(
            isinstance(p, dict) and isinstance(p.get("table"), dict) for p in pinned):
        raise SessionError(f"{where}: \"pinned\" must be a list of {{\"label\", \"table\"}}")
    for p in pinned:
        for key, col in p["table"].items():
            if not isinstance(col, list) or not all(
                    isinstance(v, int | float | type(None)) and not isinstance(v, bool)
                    for v in col):
                raise SessionError(f"{where}: pinned column {key!r} must be a list of "
                                   "numbers")
    kind = data.get("kind")
    if kind is not None and kind not in ("generator", "example", "file"):
        raise SessionError(f"{where}: the data \"kind\" must be generator, example or file")
    try:  # no spec: the experiment's own data (options alone have nothing to apply to)
        source = DataSource.from_dict({"kind": kind, "spec": spec, "options": options}) \
            if spec else None
    except KernelLabError as exc:
        raise SessionError(f"{where}: {exc}") from None
    return Session(RunSpec(name, resolved, source), title, about, pinned, playground)


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
