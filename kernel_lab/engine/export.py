"""Export what a finished run marks best as a model file: the run's data opened again with
its seed, the experiment's fitted models
(:meth:`~kernel_lab.experiments.base.Experiment.best_models`), each behind the data set's
typing and standardisation
(:func:`~kernel_lab.data.pipeline.model_pipeline`), saved with skops
(:func:`~kernel_lab.engine.model_file.save_model`) with what a user needs to trust it
later: the project's version, the data source, the columns, each model's parameters,
test error and notes.

Used by ``kernel-lab run … --save-model PATH`` and the window's *File → Export model…*."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernel_lab.core.errors import DataError, ParameterError
from kernel_lab.core.progress import Cancelled, Progress
from kernel_lab.data.pipeline import model_pipeline
from kernel_lab.engine.executors import make_executor
from kernel_lab.engine.jsonable import jsonable
from kernel_lab.engine.model_file import SavedModel, save_model
from kernel_lab.engine.runner import RunResult, parts_runner
from kernel_lab.engine.spec import RunSpec
from kernel_lab.experiments import ModelChoice, get_experiment

#: What the reopened data set must share with the run's data summary: else the file
#: changed since the run, and the models would not be the run's.
SAME_DATA = ("n_train", "n_test", "p", "target", "task")


@dataclass
class ExportReport:
    """What an export wrote: the file, the models in it (the first is the default) and,
    per model, its test error and notes."""

    path: Path
    models: list[str]
    test_errors: dict[str, tuple[float | None, str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The report in words, one line each (the default model first)."""
        out = [f"model file {self.path}: {len(self.models)} model"
               f"{'s' if len(self.models) != 1 else ''}"]
        for i, name in enumerate(self.models):
            value, what = self.test_errors.get(name, (None, ""))
            error = "no test error" if value is None else f"{what} {value:.6g}"
            out.append(f"  {name}{' (default)' if i == 0 else ''}: {error}")
            out += [f"    {note}" for note in self.notes.get(name, [])]
        return out


def _as_progress(progress: Progress | Callable[[float, str], None] | None) -> Progress:
    return progress if isinstance(progress, Progress) else Progress(progress)


def _check_same_data(result: RunResult, summary: dict[str, Any], label: str) -> None:
    """Refuse data that no longer are the run's (a file changed since), naming them."""
    changed = [key for key in SAME_DATA
               if key in result.data and result.data[key] != summary.get(key)]
    if changed:
        what = ", ".join(f"{k} {result.data[k]!r} → {summary.get(k)!r}" for k in changed)
        raise DataError(f"the data {label} are not those of the run ({what}): the file "
                        "changed since; run the experiment again and export that run")


def _unique(choices: list[ModelChoice]) -> list[str]:
    """The models' names, made unique by a number where two are the same."""
    names: list[str] = []
    for choice in choices:
        name, k = choice.name, 2
        while name in names:
            name, k = f"{choice.name} ({k})", k + 1
        names.append(name)
    return names


def export_run(spec: RunSpec, result: RunResult, path: str | Path,
               progress: Progress | Callable[[float, str], None] | None = None
               ) -> ExportReport:
    """Write the models ``result`` (a finished run of ``spec``) marks best to ``path``.

    Parameters
    ----------
    spec : RunSpec
        What was run: its data source is opened again with the run's seed (on the run's
        backend: a Parquet folder kept in its partitions stays there).
    result : RunResult
        The run's result: its experiment, resolved parameters, table and summaries.
    path : str or Path
        The model file to write (skops; written whole or not at all).
    progress : Progress or callable, optional
        ``progress(fraction, message)``; may cancel.

    Returns
    -------
    ExportReport

    Raises
    ------
    ParameterError
        The result is of another experiment than ``spec``'s, or the experiment fits no
        model to keep.
    DataError
        The data are no longer the run's.
    """
    progress = _as_progress(progress)
    if result.experiment != spec.experiment:
        raise ParameterError(f"the result is of experiment {result.experiment!r}, the run "
                             f"specification of {spec.experiment!r}: export the run's own")
    experiment = get_experiment(result.experiment)
    source = spec.data_source()
    executor = make_executor(spec.workers, spec.backend, spec.scheduler)
    make_parts = parts_runner(executor)
    try:
        progress(0.0, f"opening {source.label()} with the run's seed {result.seed}")
        data = source.open(result.seed, progress.sub(0.0, 0.05), make_parts=make_parts)
        _check_same_data(result, data.summary(), source.label())
        choices = experiment.best_models(result.params, data, result.table,
                                         result.summaries, progress.sub(0.05, 0.9))
        if not choices:
            raise ParameterError(f"experiment {experiment.name!r} fits no model to export "
                                 "from this run (see its description for what it compares)")
        names = _unique(choices)
        progress(0.9, "the models with the data's typing and standardisation")
        models = {name: model_pipeline(data, c.estimator)
                  for name, c in zip(names, choices, strict=True)}
    finally:
        for used in (make_parts, executor):
            close = getattr(used, "close", None)
            if close is not None:
                close()
    metadata = jsonable({   # save_model adds the version and the columns with their types
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "experiment": result.experiment,
        "seed": result.seed,
        "params": result.params,
        "data": {"source": source.to_dict(), "spec": source.to_spec(),
                 "label": source.label(), "summary": result.data,
                 "features": list(getattr(data, "feature_names", []) or [])},
        "models": {name: {"params": c.params, "test_error": c.test_error,
                          "error_name": c.error_name, "notes": list(c.notes),
                          "estimator": type(c.estimator).__name__}
                   for name, c in zip(names, choices, strict=True)},
    })
    progress(0.95, f"writing {path}")
    written = save_model(SavedModel(models, metadata), path)
    try:
        progress(1.0, f"model file written: {written}")
    except Cancelled:  # too late: the file is written, and the report says so
        pass
    return ExportReport(Path(written), names,
                        {n: (c.test_error, c.error_name) for n, c in zip(names, choices,
                                                                          strict=True)},
                        {n: list(c.notes) for n, c in zip(names, choices, strict=True)})
