"""Predicting with a saved model, and describing one: what ``kernel-lab predict`` and
``kernel-lab describe-model`` do.

New rows are read by the data layer's own readers up to their text cells (a CSV or TSV
table, also compressed: the same delimiter, quoting, comment and header rules as when
the model's table was read; :func:`~kernel_lab.data.text.read_text_cells`) or as stored
(a Parquet file, a folder of Parquet files, a ``.npy`` array), and the model's first
step types each column as its training file's column was typed. The predictions are
written whole or not at all: a CSV through :func:`~kernel_lab.engine.atomic.write_atomic`;
for a Parquet folder, one Parquet file per input file (one task per file on the chosen
backend: by default in this process, one file in memory at a time) in a hidden folder
renamed to the output at the end. Any refusal — a
column missing, a category never seen, a missing value the model cannot fill, a model
file of another version — is a :class:`~kernel_lab.core.errors.KernelLabError` naming
the file (and line), and no output is left.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab import __version__
from kernel_lab.core.errors import DataError, ParameterError
from kernel_lab.engine.atomic import temporary_name, write_atomic
from kernel_lab.engine.model_file import SavedModel, load_model, read_metadata

#: What ``predict`` reads, for messages.
PREDICT_FORMATS = ("a CSV/TSV table (also .gz, .bz2 or .zip), an .xlsx sheet, an ARFF "
                   "file, a Parquet file, a folder of Parquet files, a .npy array of the "
                   "feature columns, or an .npz, .mat or svmlight file of X and y")


#: Output names whose ending promises another format than the comma-separated CSV that
#: :func:`predict_file` writes for a file: refused rather than written as CSV.
NOT_CSV_SUFFIXES = frozenset({".tsv", ".tab", ".npy", ".npz", ".svm", ".svmlight",
                              ".libsvm", ".arff", ".mat", ".xlsx", ".xls", ".parquet",
                              ".gz", ".bz2", ".zip", ".json", ".skops"})


#: Rows predicted at a time.
PREDICT_ROWS = 1 << 15


@dataclass
class PredictReport:
    """What a prediction wrote: the output, the rows predicted, the model used, the
    files written (one for a CSV; one per input file for a Parquet folder)."""

    out: Path
    rows: int
    model: str
    files: int


@dataclass
class NewRows:
    """Rows to predict: ``data`` (a dict of columns, a DataFrame or a 2-D array, as the
    model's :class:`~kernel_lab.core.models.preprocess.TableColumns` takes it), their
    file ``lines`` (None: the format has none) and where they come from."""

    data: Any
    rows: int
    path: Path
    lines: np.ndarray | None = None


def _located(exc: DataError, path: Path, lines: np.ndarray | None) -> DataError:
    """The model's refusal with the data file (and line) named."""
    row = getattr(exc, "row", None)
    if row is None:
        return DataError(exc.problem, exc.fix, path=path)
    said = exc.at_row  # type: ignore[attr-defined]
    if lines is not None:
        return DataError(said, exc.fix, path=path, line=int(lines[row]))
    return DataError(f"row {row + 1}: {said}", exc.fix, path=path)


def _text_rows(path: Path) -> NewRows:
    from kernel_lab.data.raw import expand
    from kernel_lab.data.read import TEXT_SUFFIXES, _packed
    from kernel_lab.data.text import read_text_cells

    raw = expand(path, TEXT_SUFFIXES)[0] if _packed(path) else path.read_bytes()
    if not raw.strip():
        raise DataError("the file is empty", "choose a file with rows to predict", path=path)
    return _cell_rows(path, *read_text_cells(path, raw))


def _cell_rows(path: Path, names: list[str], body: list[list[str]], lines: list[int]
               ) -> NewRows:
    """Rows of text cells as columns by name (names given twice refused)."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataError(f"the column names {', '.join(map(repr, twice))} appear more than "
                        "once", "give every column its own name", path=path)
    cells = np.empty((len(body), len(names)), dtype=object)
    cells[:] = body
    return NewRows({n: cells[:, j] for j, n in enumerate(names)}, len(body), path,
                   np.asarray(lines))


def read_new_rows(path: str | os.PathLike[str], columns: list[str], sheet: str = ""
                  ) -> NewRows:
    """The rows of a file to predict (not a folder: see :func:`predict_file`);
    ``columns``: the training file's columns (a ``.npy`` array as wide is read by
    them, a narrower one as the feature columns in training order); ``sheet``: the
    worksheet of an ``.xlsx`` workbook (default: the first)."""
    from kernel_lab.data.read import FORMATS, _packed

    path = Path(path)
    if not path.exists():
        raise DataError("the file does not exist", "check the path", path=path)
    kind = "csv" if _packed(path) else FORMATS.get(path.suffix.lower())
    if kind == "csv":
        return _text_rows(path)
    if kind == "parquet":
        frame = _parquet_frame(path)
        return NewRows(frame, len(frame), path)
    if kind == "npy":
        A = np.load(path, allow_pickle=False)
        if A.ndim != 2:
            raise DataError(f"the array has shape {A.shape}; rows to predict are a 2-D array",
                            "save the feature columns as a 2-D array", path=path)
        data = ({c: A[:, j] for j, c in enumerate(columns)} if A.shape[1] == len(columns)
                else A)
        return NewRows(data, A.shape[0], path)
    if kind == "xlsx":
        from kernel_lab.data.excel import read_xlsx_cells
        from kernel_lab.data.raw import read_head

        return _cell_rows(path, *read_xlsx_cells(path, read_head(path), sheet))
    if kind == "arff":
        from kernel_lab.data.arff import arff_columns

        names, columns, _ = arff_columns(path, path.read_bytes())
        return NewRows(dict(zip(names, columns, strict=True)), len(columns[0]), path)
    if kind in ("npz", "mat", "svmlight"):  # arrays with their target: the lab's reader
        from kernel_lab.data.read import load_table

        table = load_table(path, nan_policy="fill", fmt=kind)
        return NewRows({n: table.X[:, j] for j, n in enumerate(table.feature_names)},
                       len(table.y), path, table.lines)
    raise DataError(f"predict does not read {path.suffix or 'files without an extension'!r}",
                    f"give {PREDICT_FORMATS}", path=path)


def _parquet_frame(path: Path) -> Any:
    """A Parquet file's rows as a DataFrame, read as the data layer opens the file (its
    page checksums verified; pandas' stored index restored as the index, not a column)."""
    from kernel_lab.data.parquet import open_parquet

    try:
        with open_parquet(path) as f:
            return f.read().to_pandas()
    except Exception as exc:  # a damaged file inside pyarrow: say so, by name
        detail = " ".join(str(exc).split())[:160]
        raise DataError(f"the Parquet file is damaged or unreadable ({type(exc).__name__}: "
                        f"{detail})", "write it again, or choose another file",
                        path=path) from None


def _chosen(saved: SavedModel, model: str | None, path: Path) -> tuple[str, Any]:
    name = model or saved.default
    if name not in saved.models:
        raise ParameterError(f"{path.name} holds no model named {name!r}; it holds "
                             f"{', '.join(map(repr, saved.models))} (the first is the default)")
    return name, saved.models[name]


def _block(data: Any, a: int, b: int) -> Any:
    """Rows ``a … b−1`` of a dict of columns, a DataFrame or an array."""
    if isinstance(data, dict):
        return {k: v[a:b] for k, v in data.items()}
    return data.iloc[a:b] if hasattr(data, "iloc") else data[a:b]


def _block_predicted(pipe: Any, data: Any) -> dict[str, np.ndarray]:
    predicted = np.asarray(pipe.predict(data))
    out = {"prediction": predicted}
    if hasattr(pipe[-1], "classes_") and predicted.dtype == object:
        score = np.asarray(pipe.decision_function(data))
        if score.ndim == 1:
            out["score"] = score
        else:
            for k, c in enumerate(getattr(pipe[-1], "classes_", [])):
                out[f"score={c}"] = score[:, k]
    return out


def _predicted(pipe: Any, rows: NewRows) -> dict[str, np.ndarray]:
    """The prediction columns of ``rows`` (and a class model's scores), predicted
    :data:`PREDICT_ROWS` rows at a time (the typed rows and the estimator's kernel
    blocks of one block at a time in memory)."""
    blocks = []
    for start in range(0, max(rows.rows, 1), PREDICT_ROWS):
        try:
            blocks.append(_block_predicted(pipe, _block(rows.data, start,
                                                        start + PREDICT_ROWS)))
        except DataError as exc:
            if getattr(exc, "row", None) is not None:
                exc.row += start  # type: ignore[attr-defined]
            raise _located(exc, rows.path, rows.lines) from None
    return {k: np.concatenate([b[k] for b in blocks]) for k in blocks[0]}


def _table(rows: NewRows, predicted: dict[str, np.ndarray], first: int = 0) -> Any:
    import pandas as pd

    columns: dict[str, Any] = {"row": np.arange(first + 1, first + rows.rows + 1)}
    if rows.lines is not None:
        columns["line"] = rows.lines
    return pd.DataFrame({**columns, **predicted})


def _predict_part(task: tuple[Any, str, str, int]) -> int:
    """One Parquet file's predictions (``task``: the pipeline, the input file, the
    folder to write in, the global number of its first row), written to a file of the
    same name; the rows predicted. Runs on any backend's worker."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pipe, name, folder, first = task
    part = Path(name)
    frame = _parquet_frame(part)
    rows = NewRows(frame, len(frame), part)
    table = _table(rows, _predicted(pipe, rows), first)
    table.insert(1, "file_row", np.arange(1, rows.rows + 1))
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), Path(folder) / part.name)
    return rows.rows


def _parquet_out(parts: list[Path], pipe: Any, out: Path, executor: Any,
                 progress: Callable[[float, str], None] | None) -> int:
    """Each Parquet file's predictions to a file of the same name in a hidden folder
    beside ``out`` (one task per file on ``executor``), renamed to ``out`` when every one
    is written; the rows predicted."""
    from kernel_lab.data.parquet import open_parquet

    counts = []
    for part in parts:  # the footers only
        with open_parquet(part) as f:
            counts.append(int(f.metadata.num_rows))
    firsts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
    tmp = temporary_name(out)
    tmp.mkdir()
    try:
        tasks = [(pipe, str(part), str(tmp), first) for part, first in zip(parts, firsts,
                                                                           strict=True)]
        total = 0
        for k, rows in enumerate(executor.map(_predict_part, tasks)):
            total += rows
            if progress is not None:
                progress((k + 1) / len(parts), f"predicted {parts[k].name} ({k + 1} of "
                                               f"{len(parts)})")
        _replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return total


def _replace_folder(tmp: Path, out: Path) -> None:
    """``tmp`` renamed to ``out``; an existing folder ``out`` replaced (moved aside, then
    removed)."""
    if out.is_dir():
        old = temporary_name(out)
        os.replace(out, old)
        try:
            os.replace(tmp, out)
        except BaseException:
            os.replace(old, out)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def _said(names: list[str], k: int = 3) -> str:
    return ", ".join(map(repr, names[:k])) + (f" and {len(names) - k} more"
                                              if len(names) > k else "")


def _check_out(out: Path, folder: bool, data: Path) -> None:
    if out.resolve() == data.resolve() or (folder and out.resolve().is_relative_to(
            data.resolve())):
        raise DataError("the predictions would replace the rows to predict"
                        + (" or be written inside their folder" if folder else ""),
                        "choose another output path than --data", path=out)
    if not out.parent.exists():
        raise DataError("the folder to write the predictions in does not exist",
                        "create it, or choose another output path", path=out.parent)
    if folder and out.exists() and not out.is_dir():
        raise DataError("predictions of a Parquet folder are a folder, and this is a file",
                        "choose a folder name for the output", path=out)
    if folder and out.is_dir():
        other = sorted(p.name for p in out.iterdir()
                       if not (p.is_file() and p.suffix.lower() == ".parquet"))
        if other:  # the folder is replaced whole: never one holding anything else
            raise DataError(f"the output folder exists and holds more than Parquet "
                            f"predictions ({_said(other)}); it would be replaced whole",
                            "choose a new or empty folder for the predictions", path=out)
    if not folder and out.is_dir():
        raise DataError("this is a folder; the predictions are a CSV file",
                        "choose a file name for the output (e.g. predictions.csv)", path=out)
    suffix = out.suffix.lower()
    if not folder and suffix in NOT_CSV_SUFFIXES:
        raise DataError(f"the predictions are written as a comma-separated CSV table, and "
                        f"this name ends in {suffix!r}",
                        "name the output .csv (a folder of Parquet files given as --data is "
                        "predicted to a folder of Parquet files)", path=out)


def predict_file(model_path: str | os.PathLike[str], data: str | os.PathLike[str],
                 out: str | os.PathLike[str], *, model: str | None = None,
                 extra_columns: str = "error", sheet: str = "", backend: str = "threads",
                 workers: int | None = 1, scheduler: str | None = None,
                 progress: Callable[[float, str], None] | None = None) -> PredictReport:
    """Predict the rows of ``data`` with the saved model and write them to ``out``.

    Parameters
    ----------
    model_path : path-like
        A model file (:func:`~kernel_lab.engine.model_file.save_model`).
    data : path-like
        Any table the lab reads (:data:`PREDICT_FORMATS`); the target column may be
        absent, except from the array formats that store X and y.
    out : path-like
        A CSV file (``row``, ``line`` where the format has lines, ``prediction``, and a
        class model's ``score``); for a Parquet folder, a folder of Parquet files, one per
        input file (with ``file_row``).
    model : str, optional
        The model's name in the file (default: the first).
    extra_columns : {"error", "ignore"}
        A column the training file never had: refused by name, or ignored.
    sheet : str
        The worksheet of an ``.xlsx`` workbook (name or 1-based number; default: first).
    backend, workers, scheduler
        Where a Parquet folder's files are predicted, one task per file
        (:func:`~kernel_lab.engine.executors.make_executor`; default: in this process,
        one file at a time).
    """
    data, out = Path(data), Path(out)
    saved = load_model(model_path)
    name, pipe = _chosen(saved, model, Path(model_path))
    pipe.set_params(columns__extra_columns=extra_columns)
    if data.is_dir():
        from kernel_lab.data.partitioned import _parquet_files

        parts = _parquet_files(data)
        if not parts:
            raise DataError("the folder holds no .parquet files", f"give {PREDICT_FORMATS}",
                            path=data)
        _check_out(out, folder=True, data=data)
        from kernel_lab.engine.executors import make_executor

        executor = make_executor(workers, backend, scheduler)
        try:
            rows = _parquet_out(parts, pipe, out, executor, progress)
        finally:
            close = getattr(executor, "close", None)
            if close is not None:
                close()
        return PredictReport(out, rows, name, len(parts))
    _check_out(out, folder=False, data=data)
    rows = read_new_rows(data, list(pipe["columns"].encoding["columns"]), sheet)
    table = _table(rows, _predicted(pipe, rows))
    write_atomic(out, table.to_csv(index=False))
    return PredictReport(out, rows.rows, name, 1)


# ---------------------------------------------------------------------------------------
# describe-model


def _data_said(data: Any) -> str:
    if isinstance(data, dict):
        options = ",".join(f"{k}={v}" for k, v in (data.get("options") or {}).items())
        return f"{data.get('spec', '')}{':' + options if options else ''}"
    return str(data or "(not recorded)")


def _column_said(column: dict[str, Any]) -> str:
    if column.get("kind") == "number":
        return "numbers"
    levels = list(column.get("levels", ()))
    shown = ", ".join(levels[:8]) + (", …" if len(levels) > 8 else "")
    missing = " + (missing)" if column.get("missing") else ""
    return f"text, {len(levels)} categories: {shown}{missing}"


def _target_said(target: dict[str, Any] | None) -> str:
    if not target:
        return "(not recorded)"
    if target.get("kind") == "number":
        return f"{target['column']} (numbers)"
    classes = list(target.get("classes", ()))
    if target.get("kind") == "two classes":
        return f"{target['column']} (two classes: {classes[1]} is +1, {classes[0]} is −1)"
    return f"{target['column']} ({len(classes)} classes: {', '.join(classes)})"


def _error_said(entry: dict[str, Any]) -> str:
    error = entry.get("test_error")
    return "" if error is None else f"{entry.get('error_name') or 'test error'} {error:.6g}"


def describe_lines(path: str | os.PathLike[str]) -> Iterator[str]:
    """The metadata of a model file, as lines of text (no object is loaded)."""
    meta = read_metadata(path)
    made = meta.get("kernel_lab_version")
    yield f"model file: {Path(path).name}"
    yield (f"saved by: Kernel Lab {made}, {meta.get('created', '(time not recorded)')}"
           + ("" if made == __version__ else f" — this is Kernel Lab {__version__}, which "
              "does not predict with it; export the model again with this version"))
    yield f"data: {_data_said(meta.get('data'))}"
    for key in ("experiment", "seed"):
        if meta.get(key) is not None:
            yield f"{key}: {meta[key]}"
    yield "models (the first is the default):"
    for name, entry in (meta.get("models") or {}).items():
        said = ", ".join(s for s in (entry.get("estimator", ""), _error_said(entry)) if s)
        yield f"  {name}: {said}"
        params = entry.get("params") or {}
        if params:
            yield "    params: " + ", ".join(f"{k}={v}" for k, v in params.items())
        for note in entry.get("notes") or ():
            yield f"    note: {note}"
    yield f"target: {_target_said(meta.get('target'))}"
    columns = meta.get("columns") or []
    yield f"columns ({len(columns)}, in training order):"
    width = max((len(c["column"]) for c in columns), default=0)
    for column in columns:
        yield f"  {column['column']:<{width}}  {_column_said(column)}"


def describe_model(path: str | os.PathLike[str]) -> str:
    """:func:`describe_lines` as one text."""
    return "\n".join(describe_lines(path))
