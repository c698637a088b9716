"""A model file: fitted pipelines saved with skops, and what they are.

A model file is a skops archive (a zip: a JSON schema and NumPy arrays, never a pickle)
holding ``{"models": {name: Pipeline}}`` — the first model the default — with one more
member, :data:`METADATA_MEMBER`: the JSON metadata (the Kernel Lab version that wrote it,
when, the data source, the columns and their types, each model's parameters, test error
and notes). The metadata is read first, without loading any object: a file that is not a
model file, or one written by another Kernel Lab version, is refused before skops reads
it. Loading then asks skops which types the file holds
(:func:`skops.io.get_untrusted_types`) and trusts only scikit-learn's, NumPy's, SciPy's
and Kernel Lab's own classes; any other type, and any function, is refused by name.
Files are written whole (:func:`~kernel_lab.engine.atomic.write_atomic`): a reader sees
the old file or the complete new one.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernel_lab import __version__
from kernel_lab.core.errors import KernelLabError
from kernel_lab.core.models.preprocess import ClassLabels
from kernel_lab.engine.atomic import write_atomic

#: The archive member holding the metadata (JSON).
METADATA_MEMBER = "kernel_lab_model.json"
#: The layout of the metadata and of the saved object.
MODEL_FORMAT = 1
#: Modules whose types a model file may hold (a type's module is one of these or below).
TRUSTED_MODULES = ("sklearn", "numpy", "scipy", "kernel_lab")
#: The usual extension of a model file.
MODEL_SUFFIX = ".skops"


class ModelFileError(KernelLabError):
    """A model file cannot be used: missing, not a model file, written by another Kernel
    Lab version, or holding types outside scikit-learn, NumPy, SciPy and Kernel Lab.
    The message starts with the file's name and says what to do."""

    def __init__(self, path: str | os.PathLike[str], problem: str, fix: str = "") -> None:
        self.path = os.fspath(path)
        self.problem = problem
        self.fix = fix
        text = f"{os.path.basename(self.path)}: {problem.rstrip('.')}."
        if fix:
            text += " " + fix[:1].upper() + fix[1:].rstrip(".") + "."
        super().__init__(text)


@dataclass
class SavedModel:
    """Fitted pipelines and their metadata.

    Attributes
    ----------
    models : dict of str to Pipeline
        By name; the first is the default.
    metadata : dict
        JSON-able: ``kernel_lab_version``, ``created`` (UTC), ``data`` (the data source),
        ``columns`` and ``target`` (the columns a model reads, with their types),
        ``models`` (per name: ``params``, ``test_error``, ``error_name``, ``notes``),
        ``experiment``, ``seed``. :func:`save_model` fills the version, the time, the
        columns and an entry per model when they are missing.
    """

    models: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def default(self) -> str:
        """The name of the default model (the first)."""
        return next(iter(self.models))

    def model(self, name: str | None = None) -> Any:
        """The pipeline ``name`` (None: the default); a :class:`KeyError` naming the
        models there are otherwise."""
        if name is None:
            return self.models[self.default]
        if name not in self.models:
            raise KeyError(f"no model named {name!r}; the file holds "
                           f"{', '.join(map(repr, self.models))}")
        return self.models[name]


def column_types(pipeline: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The columns a pipeline reads, with their types, and its target (from its
    :class:`~kernel_lab.core.models.preprocess.TableColumns` step's encoding; empty and
    None without one)."""
    steps = getattr(pipeline, "named_steps", {})
    encoding = getattr(steps.get("columns"), "encoding", None)
    if not encoding:
        return [], None
    return [dict(f) for f in encoding["features"]], dict(encoding["target"])


def final_estimator(pipeline: Any) -> Any:
    """The estimator at the end of a pipeline (inside its class-name wrapper)."""
    final = pipeline.steps[-1][1] if hasattr(pipeline, "steps") else pipeline
    return final.estimator if isinstance(final, ClassLabels) else final


def _filled(saved: SavedModel) -> dict[str, Any]:
    """The metadata with the version, the time, the columns and an entry per model."""
    if not saved.models:
        raise ValueError("a model file needs at least one model")
    meta = json.loads(json.dumps(saved.metadata))  # a JSON-able copy, or a TypeError now
    meta["format"] = MODEL_FORMAT
    meta["kernel_lab_version"] = __version__
    meta.setdefault("created", datetime.now(UTC).isoformat(timespec="seconds"))
    if "columns" not in meta:
        meta["columns"], meta["target"] = column_types(saved.model())
    per_model = meta.setdefault("models", {})
    for name, pipe in saved.models.items():
        entry = per_model.setdefault(name, {})
        entry.setdefault("estimator", type(final_estimator(pipe)).__name__)
        for key, default in (("params", {}), ("test_error", None), ("error_name", ""),
                             ("notes", [])):
            entry.setdefault(key, default)
    meta["model_names"] = list(saved.models)
    return meta


def model_bytes(saved: SavedModel) -> bytes:
    """The model file's bytes: the skops archive of the models with the metadata added."""
    import skops.io as sio

    meta = _filled(saved)
    raw = io.BytesIO(sio.dumps({"models": dict(saved.models)}))
    with zipfile.ZipFile(raw, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(METADATA_MEMBER, json.dumps(meta, indent=1, ensure_ascii=False))
    return raw.getvalue()


def save_model(saved: SavedModel, path: str | os.PathLike[str]) -> Path:
    """Write ``saved`` to ``path`` whole, and return ``path``.

    Raises
    ------
    ModelFileError
        When the folder does not exist, ``path`` is a folder, or the file cannot be
        written (a full disk, no permission); an existing file is then left as it was.
    """
    path = Path(path)
    if path.is_dir():
        raise ModelFileError(path, "this is a folder", "give a file name for the model "
                             f"(e.g. model{MODEL_SUFFIX})")
    if not path.parent.is_dir():
        raise ModelFileError(path, f"the folder {str(path.parent)!r} does not exist",
                             "create it, or choose another path for the model file")
    data = model_bytes(saved)
    try:
        return write_atomic(path, data)
    except OSError as exc:
        raise ModelFileError(path, f"the model file cannot be written ({exc.strerror})",
                             "check the folder's permissions and the free disk space"
                             ) from None


def _read(path: Path) -> bytes:
    if not path.exists():
        raise ModelFileError(path, "the model file does not exist", "check the path")
    if path.is_dir():
        raise ModelFileError(path, "this is a folder, not a model file",
                             "choose a model file (.skops) saved by Kernel Lab")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ModelFileError(path, f"the model file cannot be read ({exc.strerror})",
                             "check its permissions") from None


def read_metadata(path: str | os.PathLike[str], raw: bytes | None = None) -> dict[str, Any]:
    """The metadata of a model file, read without loading any object; a
    :class:`ModelFileError` when the file is not a Kernel Lab model file."""
    path = Path(path)
    raw = _read(path) if raw is None else raw
    not_model = ("choose a model file saved by Kernel Lab (kernel-lab run … --save-model, "
                 "or File → Export model…)")
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            if METADATA_MEMBER not in archive.namelist():
                what = ("a skops file without Kernel Lab's metadata"
                        if "schema.json" in archive.namelist() else "a zip archive")
                raise ModelFileError(path, f"this is not a Kernel Lab model file ({what})",
                                     not_model)
            meta = json.loads(archive.read(METADATA_MEMBER).decode("utf-8"))
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, ModelFileError):
            raise
        if raw.startswith(b"PK\x03\x04") and isinstance(exc, zipfile.BadZipFile):
            raise ModelFileError(path, "the model file is damaged: a zip archive cut short "
                                 "or altered (a copy or download that did not finish?)",
                                 "copy it again from where it was saved, or export the "
                                 "model again") from None
        raise ModelFileError(path, "this is not a Kernel Lab model file (not a skops "
                             "archive)", not_model) from None
    if not isinstance(meta, dict) or "kernel_lab_version" not in meta:
        raise ModelFileError(path, "this is not a Kernel Lab model file (its metadata has "
                             "no Kernel Lab version)", not_model)
    return meta


def check_version(path: str | os.PathLike[str], meta: dict[str, Any]) -> None:
    """Refuse a model file written by another Kernel Lab version (or a layout this
    version does not know), saying which version wrote it and what to do."""
    made = str(meta.get("kernel_lab_version"))
    if made == __version__ and meta.get("format") != MODEL_FORMAT:
        raise ModelFileError(
            path, f"the model file's layout (format {meta.get('format')!r}) is not the one "
            f"Kernel Lab {__version__} writes (format {MODEL_FORMAT}): it was written by a "
            "development build of this version, or altered",
            "export the model again (from its run: kernel-lab run … --save-model)")
    if made != __version__:
        raise ModelFileError(
            path, f"the model was saved by Kernel Lab {made} and this is Kernel Lab "
            f"{__version__}; a model file is read only by the version that wrote it",
            f"use Kernel Lab {made} to predict with it, or export the model again with this "
            "version (from its run: kernel-lab run … --save-model)")


def _trusted(name: str) -> bool:
    """Whether ``name`` (a type skops lists as untrusted) is a class of one of
    :data:`TRUSTED_MODULES`. Functions are never trusted, not even from those modules:
    Kernel Lab writes none, and a function kept in a model (a ``FunctionTransformer``'s
    ``func``) is called on the rows to predict; some of NumPy's run code
    (``numpy.testing``'s ``runstring`` calls ``exec``)."""
    import importlib

    module, _, attr = name.rpartition(".")
    if not any(module == m or module.startswith(m + ".") for m in TRUSTED_MODULES):
        return False
    try:  # a module of the trusted packages only: nothing from the file runs here
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return False
    return isinstance(found, type)


def load_model(path: str | os.PathLike[str]) -> SavedModel:
    """Read a model file written by :func:`save_model`.

    Raises
    ------
    ModelFileError
        Naming the file: missing, not a Kernel Lab model file, written by another Kernel
        Lab version, holding a type outside scikit-learn, NumPy, SciPy and Kernel Lab or
        any function, or damaged.
    """
    import skops.io as sio

    path = Path(path)
    raw = _read(path)
    meta = read_metadata(path, raw)
    check_version(path, meta)
    try:
        untrusted = sio.get_untrusted_types(data=raw)
    except Exception as exc:  # a damaged schema inside skops
        raise ModelFileError(path, f"the model file is damaged ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:160]})",
                             "export the model again") from None
    refused = sorted(t for t in untrusted if not _trusted(t))
    if refused:
        raise ModelFileError(path, f"the model file holds types Kernel Lab does not load: "
                             f"{', '.join(refused[:6])}{' …' if len(refused) > 6 else ''} "
                             "(only classes of scikit-learn, NumPy, SciPy and Kernel "
                             "Lab are trusted, no functions)",
                             "load only model files Kernel Lab wrote")
    try:
        obj = sio.loads(raw, trusted=untrusted)
    except Exception as exc:
        raise ModelFileError(path, f"the model file cannot be loaded ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:160]})",
                             "export the model again") from None
    models = obj.get("models") if isinstance(obj, dict) else None
    if not isinstance(models, dict) or not models:
        raise ModelFileError(path, "the model file holds no models", "export the model again")
    names = meta.get("model_names")
    if isinstance(names, list) and sorted(names) == sorted(models):  # the saved order
        models = {n: models[n] for n in names}
    return SavedModel(models, meta)
