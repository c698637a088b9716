"""*File → Export model…*, without Qt: which run can be exported, where its file goes by
default, the export itself on the one worker primitive, and the words the window shows.

The export of a finished run is :func:`kernel_lab.engine.export.export_run` (it opens the
run's data with the run's seed, asks the experiment for the models it marks best, puts
the data set's typing in front of each and saves them with skops). It refits, so it can
take seconds to minutes: :class:`ModelExport` computes it on a
:class:`~kernel_lab.engine.worker.Worker` (a thread in the window, inline in tests and
scripts), reports its progress, and can be cancelled (a cancelled export stops at its
next progress report; the model file is written whole or not at all, so nothing
half-written is left). Only a run that finished in this window can be exported: a
session's pinned curves hold the curves of a run, not the run's result.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_lab.core.progress import Progress
from kernel_lab.engine.events import Event
from kernel_lab.engine.export import export_run
from kernel_lab.engine.runner import RunResult
from kernel_lab.engine.spec import RunSpec
from kernel_lab.engine.worker import Job, Ticket, Worker
from kernel_lab.experiments import get_experiment
from kernel_lab.model.lab import LabModel, RunState

#: The suffix of a model file (skops).
SUFFIX = ".skops"


@dataclass(frozen=True)
class ExportRequest:
    """One export: the run (its spec and result) and the file to write."""

    spec: RunSpec
    result: RunResult
    path: Path


def export_job(job: Job) -> None:
    """Compute ``job.request`` (an :class:`ExportRequest`) with the engine's
    :func:`~kernel_lab.engine.export.export_run` (looked up here when called: tests put a
    stand-in in its place): the compute function of the export
    :class:`~kernel_lab.engine.worker.Worker`. Emits ``progress(fraction,
    message)``, then ``finished(report)`` or ``failed(message, is_user_error)``; a
    cancelled export stops at its next progress report (silently)."""
    req: ExportRequest = job.request
    report = export_run(req.spec, req.result, req.path, progress=Progress(
        lambda f, m: job.emit("progress", f, m), job.superseded))
    job.emit("finished", report)


def report_names(report: Any) -> list[str]:
    """The models an export wrote, the default first (the report's ``models``, or
    ``names``)."""
    return [str(n) for n in (getattr(report, "models", None) or
                             getattr(report, "names", None) or [])]


def describe_report(report: Any, *, short: bool = False) -> str:
    """What an export wrote: the file, the models (with their test errors when the report
    has them) and their notes (``notes``: per model, or one list). ``short`` (the status
    line): the default model's first note only, and how many more there are."""
    names = report_names(report)
    errors = getattr(report, "test_errors", None) or {}
    notes_of = getattr(report, "notes", None) or []

    def label(name: str) -> str:
        value, what = errors.get(name, (None, ""))
        return name if value is None else f"{name} ({what} {value:.4g})"

    def sentence(note: str) -> str:  # "λ = 0.01: …" keeps its λ
        first = note[:1].upper() if note[:1].isascii() else note[:1]
        return first + note[1:] + ("" if note.endswith(".") else ".")

    if isinstance(notes_of, Mapping):
        notes = [(f"{name}: " if len(names) > 1 and not (short and i == 0) else "")
                 + sentence(str(note))
                 for i, name in enumerate(names) for note in notes_of.get(name, [])
                 if str(note)]
    else:
        notes = [sentence(str(n)) for n in notes_of if str(n)]
    path = Path(report.path)
    models = ("model " + label(names[0]) if len(names) == 1 else
              f"{len(names)} models: {'; '.join(map(label, names))} (the first is the "
              "default)" if names else "the model")
    text = f"Exported {models} to {path.name} in {path.parent}."
    if short and len(notes) > 1:
        return f"{text} {notes[0]} ({len(notes) - 1} more note{'s' if len(notes) > 2 else ''}" \
            " in the Log.)"
    return " ".join([text, *notes])


def default_path(spec: RunSpec, folder: str | os.PathLike[str] | None = None) -> Path:
    """Where the model of a run of ``spec`` goes unless the user says otherwise:
    ``<experiment>-model.skops`` beside the data file (a folder of Parquet files or a Zarr
    store: beside that folder) — else in ``folder`` (the window's last folder), else in
    the home folder."""
    name = f"{spec.experiment}-model{SUFFIX}"
    data = spec.data
    if data is not None and data.kind == "file":
        where = Path(data.name).expanduser()
        if where.exists():
            return where.parent / name
    return Path(folder if folder else Path.home()) / name


class ModelExport:
    """The export of the run shown in a :class:`~kernel_lab.model.LabModel`.

    Parameters
    ----------
    lab : LabModel
        The lab whose finished run is exported.
    worker : Worker, optional
        Computes :func:`export_job`; default: inline (in this thread).

    Events: ``available_changed(bool)`` — whether :meth:`start` can export now;
    ``started(path)``, ``progressed(fraction, message)``, ``finished(report, text)``
    (``text``: :func:`describe_report`, short), ``failed(message)``, ``cancelled(text)``.
    """

    def __init__(self, lab: LabModel, worker: Worker | None = None) -> None:
        self.lab = lab
        self.worker = worker or Worker(export_job, inline=True)
        self.available_changed: Event = Event()
        self.started: Event = Event()
        self.progressed: Event = Event()
        self.finished: Event = Event()
        self.failed: Event = Event()
        self.cancelled: Event = Event()
        self.ticket: Ticket | None = None
        #: The finished run that can be exported: its spec and result (None: none).
        self.run: tuple[RunSpec, RunResult] | None = None
        self.last_report: Any = None
        lab.state_changed.connect(self._state_changed)
        self._state_changed(lab.state)

    # -- which run ------------------------------------------------------------------------
    def _state_changed(self, state: RunState) -> None:
        before = self.run is not None
        handle, result = self.lab.handle, self.lab.result
        if state is RunState.DONE and handle is not None and result is not None \
                and get_experiment(handle.spec.experiment).keeps_models:
            self.run = (handle.spec, result)  # the spec the finished run was started with
        else:
            self.run = None  # running, failed, cancelled, or a new experiment chosen
        if (self.run is not None) != before:
            self.available_changed.emit(self.run is not None)

    @property
    def available(self) -> bool:
        """Whether a finished run is shown (and can be exported)."""
        return self.run is not None

    def why_not(self) -> str:
        """Why nothing can be exported now (empty when something can)."""
        if self.run is not None:
            return ""
        if self.lab.running:
            return "A run is in progress: export its model once it has finished."
        handle = self.lab.handle
        if handle is not None and self.lab.result is not None and \
                not get_experiment(handle.spec.experiment).keeps_models:
            return (f"The experiment {handle.spec.experiment!r} fits no model to keep: it "
                    "draws curves of the data (spectra), not a fit.")
        return ("No finished run to export: run the experiment (Ctrl+R) first; a session's "
                "pinned curves hold no model.")

    def default_path(self, folder: str | os.PathLike[str] | None = None) -> Path:
        """The file proposed for the run that can be exported (:func:`default_path`)."""
        spec = self.run[0] if self.run is not None else RunSpec(self.lab.experiment.name)
        return default_path(spec, folder)

    # -- the export -----------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.ticket is not None and self.ticket.active

    def start(self, path: str | os.PathLike[str]) -> Ticket | None:
        """Export the finished run to ``path`` (a ``.skops`` suffix is added when it has
        none) in the background; an export in progress is superseded. None (with a
        ``failed`` message) when no finished run is shown."""
        if self.run is None:
            self.failed.emit(self.why_not())
            return None
        path = Path(path).expanduser()
        if not path.suffix:
            path = path.with_suffix(SUFFIX)
        spec, result = self.run
        self.ticket = self.worker.prepare(
            ExportRequest(spec, result, path),
            receive=lambda kind, *payload: self._message(path, kind, *payload))
        self.started.emit(path)
        self.ticket.start()
        return self.ticket

    def _message(self, path: Path, kind: str, *payload: Any) -> None:
        """A message of the current export (its ticket dropped those of older ones)."""
        if kind == "progress":
            self.progressed.emit(*payload)
        elif kind == "finished":
            self.last_report = payload[0]
            self.finished.emit(payload[0], describe_report(payload[0], short=True))
        elif kind == "failed":
            message, user_error = payload[0], bool(payload[1]) if len(payload) > 1 else True
            self.failed.emit(f"The model was not exported to {path.name}: {message}"
                             if user_error else
                             f"Exporting the model to {path.name} failed: {message}")

    def cancel(self) -> bool:
        """Stop the export in progress (it stops at its next progress report; a model file
        is never left half-written). False when none was in progress."""
        if not self.busy:
            return False
        assert self.ticket is not None
        path = self.ticket.request.path
        self.ticket.cancel()
        self.cancelled.emit(f"Export of the model to {path.name} cancelled (a model "
                            "file is never left half-written: one the export was already "
                            "writing is completed).")
        return True
