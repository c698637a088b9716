"""Where data come from, as one value: a generator with its parameters, a bundled
example, or a file, with the options that load it.

A :class:`DataSource` is what the window's data panel, the command line, sessions and the
worker pass around; its text form (``gaussian:n=200,p=100``, ``data.csv:target=price``)
is what a user types after ``--data``, and :meth:`DataSource.from_spec` /
:meth:`DataSource.to_spec` are the only places that read and write it.

A data *specification* is one string, used by the command line and stored in sessions:

- a file path, optionally followed by options: ``data/housing.csv``,
  ``data/housing.csv:target=price,test_fraction=0.2``;
- a bundled example: ``diabetes``, ``breast-cancer``, ``digits``;
- a generator with parameters: ``gaussian:n=200,p=100,cov=toeplitz,rho=0.4``,
  ``friedman:n=2000``, ``gaussian:p=5,f="sin(x1) + x2^2"``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kernel_lab.core.errors import DataError, ParameterError, data_option
from kernel_lab.core.params import ParamSpec, parse_assignments, resolve_params
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import PartitionedData
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.data.columns import ColumnChoice
from kernel_lab.data.examples import EXAMPLES
from kernel_lab.data.generators import GENERATORS, generate
from kernel_lab.data.lazy import MakeParts, is_partitioned_path, open_run_data
from kernel_lab.data.read import load_table, select_columns
from kernel_lab.data.split import dataset_from_table, subsample_table

Kind = Literal["generator", "example", "file"]
#: Options of examples and files (generators take parameters instead).
LOAD_OPTIONS = ("target", "test_fraction", "standardize", "drop_nan", "format")


FILE_OPTIONS = (
    ParamSpec("target", "str", "", help="target column: header name or 0-based index "
                                        "(default: the last column)"),
    ParamSpec("test_fraction", "float", 0.25, low=0.0, high=0.95,
              help="fraction of rows held out for testing"),
    ParamSpec("standardize", "bool", True, help="scale features to zero mean, unit variance"),
    ParamSpec("drop_nan", "bool", False, help="drop rows with missing or non-finite values "
                                              "instead of filling a missing feature with "
                                              "its training mean"),
    ParamSpec("format", "choice", "auto",
              choices=("auto", "csv", "xlsx", "npy", "npz", "svmlight", "arff", "mat",
                       "parquet"),
              help="file format (default: from the extension)"),
    ParamSpec("text_features", "choice", "onehot", choices=("onehot", "drop"),
              help="text (category) columns: one 0/1 column per value, or dropped; text "
                   "with more than 50 values or one per row is dropped either way"),
    ParamSpec("keep_index", "bool", False,
              help="keep a first column that is a row index (R's row names, pandas' "
                   "'Unnamed: 0', an id of 1 … n); dropped by default"),
    ParamSpec("sheet", "str", "", help="worksheet of an .xlsx file: name or number "
                                       "(default: the first)"),
    ParamSpec("subsample", "int", 0, low=0,
              help="use this many random rows (seeded; 0: all) — a way to run the exact "
                   "methods on a table too large for them"),
    ParamSpec("features", "str", "", help="the feature columns to use, in this order: "
                                          "names or 0-based indices, comma-separated "
                                          "(default: all but the target)"),
    ParamSpec("drop_columns", "str", "", help="columns to leave out (e.g. one derived from "
                                              "the target, or text): names or 0-based "
                                              "indices, comma-separated; left out before "
                                              "any check"),
    ParamSpec("partitions", "choice", "auto", choices=("auto", "keep", "load"),
              help="a Parquet folder or Zarr store: keep the rows in their partitions "
                   "(keep), read them into one table (load), or read them whole when they "
                   "take at most 256 MiB and else keep them, by size alone, on any backend "
                   "(auto)"),
)


def split_spec(spec: str) -> tuple[str, str]:
    """Split ``name:options``; a Windows drive letter or an existing path is not split."""
    if os.path.exists(spec):
        return spec, ""
    head, sep, tail = spec.rpartition(":")
    if sep and head and not (len(head) == 1 and head.isalpha()) and "=" in tail:
        return head, tail
    name, sep, rest = spec.partition(":")
    if sep and len(name) == 1 and name.isalpha():  # C:\path
        return spec, ""
    if sep and "=" not in rest:  # a path with a colon, not name:key=value options
        return spec, ""
    return name, rest


def _quote(value: Any) -> str:
    text = f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, bool):
        text = "true" if value else "false"
    return f'"{text}"' if any(c in text for c in ',=:" ') else text


def _typed_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """Load options converted to their declared types where they parse (``"false"`` →
    False); what does not parse is kept as written, for loading to name the problem."""
    specs = {s.name: s for s in FILE_OPTIONS}
    out = {}
    for key, value in values.items():
        try:
            out[key] = specs[key].coerce(value) if key in specs else value
        except ParameterError:
            out[key] = value
    return out


@dataclass(frozen=True)
class DataSource:
    """A data source and how to load it.

    Parameters
    ----------
    kind : {"generator", "example", "file"}
    name : str
        Generator or example key (lower case), or the file's path.
    params : mapping
        A generator's parameters (values as given: numbers or text).
    options : mapping
        How an example or file is loaded: ``target``, ``test_fraction``, ``standardize``,
        ``drop_nan``, ``format``.
    """

    kind: Kind
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_spec(cls, spec: str, options: Mapping[str, Any] | None = None) -> DataSource:
        """Read a specification; ``options`` (None values ignored) take precedence over
        those written in ``spec``.

        Raises
        ------
        DataError
            Empty specification.
        ParameterError
            Malformed ``key=value`` list.
        """
        if not isinstance(spec, str) or not spec.strip():
            raise DataError("no data given", "name a file, an example "
                            f"({', '.join(EXAMPLES)}) or a generator ({', '.join(GENERATORS)})")
        spec = spec.strip()
        name, rest = split_spec(spec)
        values: dict[str, Any] = parse_assignments(rest, what=f"data specification {spec!r}")
        values.update({k: v for k, v in (options or {}).items() if v is not None})
        key = name.strip().lower()
        if key in GENERATORS and not os.path.exists(name):
            return cls("generator", key, values)
        values = _typed_options(values)
        if key in EXAMPLES and not os.path.exists(name):
            return cls("example", key, {}, values)
        return cls("file", name, {}, values)

    def to_spec(self) -> str:
        """The text form: ``name`` or ``name:key=value,…`` (values quoted when needed)."""
        values = self.params if self.kind == "generator" else self.options
        parts = [f"{k}={_quote(v)}" for k, v in values.items()]
        return f"{self.name}:{','.join(parts)}" if parts else self.name

    def label(self) -> str:
        """A short name for titles and results: the specification without the load
        options that have their default values (``diabetes``, ``data.csv:target=price``)."""
        if self.kind == "generator":
            return self.to_spec()
        defaults = {s.name: s.default for s in FILE_OPTIONS}
        kept = {k: v for k, v in self.options.items() if defaults.get(k, object()) != v}
        return DataSource(self.kind, self.name, {}, kept).to_spec()

    def to_dict(self) -> dict[str, Any]:
        """The session form: the kind, the specification (with a generator's
        parameters) and the load options apart."""
        if self.kind == "generator":
            return {"kind": self.kind, "spec": self.to_spec(), "options": {}}
        return {"kind": self.kind, "spec": self.name, "options": dict(self.options)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> DataSource:
        """Read :meth:`to_dict`'s form; a file's name is taken as it is (never parsed
        for options), so any path round-trips."""
        if doc.get("kind") in ("example", "file") and doc.get("spec"):
            return cls(doc["kind"], str(doc["spec"]), {},
                       _typed_options(dict(doc.get("options") or {})))
        return cls.from_spec(str(doc.get("spec") or ""), doc.get("options") or {})

    def with_options(self, **options: Any) -> DataSource:
        """A copy with more load options (or, for a generator, parameters)."""
        if self.kind == "generator":
            return DataSource(self.kind, self.name, {**self.params, **options})
        return DataSource(self.kind, self.name, {}, {**self.options, **options})

    def columns(self) -> ColumnChoice:
        """The feature columns chosen or left out (``features``, ``drop_columns``)."""
        return ColumnChoice.from_options(self.options)

    def with_columns(self, choice: ColumnChoice) -> DataSource:
        """A copy with ``choice`` as its ``features`` and ``drop_columns`` options (an
        empty one removed)."""
        options = {k: v for k, v in self.options.items()
                   if k not in ("features", "drop_columns")}
        options.update({k: v for k, v in choice.to_options().items() if v})
        return DataSource(self.kind, self.name, {}, options)

    def partitioned(self) -> bool:
        """Whether this is a Parquet folder or a Zarr store (see :mod:`kernel_lab.data.lazy`)."""
        return self.kind == "file" and is_partitioned_path(self.name)

    def open(self, seed: int = 0, progress: Callable[[float, str], None] | None = None, *,
             make_parts: MakeParts | None = None) -> Dataset | PartitionedData:
        """:meth:`load`, except that a Parquet folder or Zarr store too large to read whole
        (see :mod:`kernel_lab.data.lazy`) stays in its partitions: a
        :class:`~kernel_lab.core.rows.PartitionedData` whose computations run on
        ``make_parts(parts)`` (default: this process, one partition at a time)."""
        if not self.partitioned():
            return self.load(seed, progress)
        opts = resolve_params(FILE_OPTIONS, self.options, owner=f"data source {self.name!r}")
        return open_run_data(self.name, opts, seed=seed, name=self.label(),
                             make_parts=make_parts,
                             progress=progress if isinstance(progress, Progress) or progress is None
                             else Progress(progress))

    def load(self, seed: int = 0, progress: Callable[[float, str], None] | None = None
             ) -> Dataset:
        """Draw or read the data set (a :class:`~kernel_lab.core.rows.dataset.Dataset`).

        ``seed`` drives a generator's draws or the train/test split of a table.
        ``progress(fraction, message)`` is told how reading a file goes; it may raise
        :class:`~kernel_lab.core.progress.Cancelled` to stop it.

        Raises
        ------
        DataError
            Unknown source, unreadable or invalid file.
        ParameterError
            Invalid generator parameter or load option.
        """
        if self.partitioned():
            data = self.open(seed, progress)
            if not data.in_memory:
                raise DataError(
                    f"the {data.n_train + data.n_test:,} rows stay in their "
                    f"{len(data.parts.parts)} partitions (too large to read whole, or "
                    f"{data_option('partitions', 'keep')}), and this needs them in memory",
                    f"run an experiment on them, or use a seeded sample "
                    f"({data_option('subsample', 'N')})", path=self.name)
            return data
        if self.kind == "generator":
            ds = generate(self.name, self.params, seed=seed)
            ds.name = self.label()
            return ds
        if self.kind == "file" and not (os.path.exists(self.name) or Path(self.name).suffix):
            raise DataError(
                f"{self.name!r} is neither a file nor a known data source",
                f"give a file path, an example ({', '.join(EXAMPLES)}) or a generator "
                f"({', '.join(GENERATORS)}), e.g. gaussian:n=200,p=100")
        opts = resolve_params(FILE_OPTIONS, self.options, owner=f"data source {self.name!r}")
        if self.options.get("partitions") not in (None, "", "auto"):
            raise ParameterError("the data option partitions= applies to a folder of Parquet "
                                 f"files or a Zarr store, not to {self.name!r}")
        choice = ColumnChoice.from_options(opts)  # as resolved: checked types
        if self.kind == "example":
            if opts["target"]:
                raise ParameterError(f"the example {self.name!r} has a fixed target; "
                                     "the target option applies to files")
            table = select_columns(Path(self.name), EXAMPLES[self.name][1](), choice)
        else:
            reading = None if progress is None else Progress(progress).sub(0.0, 0.85)
            table = load_table(self.name, target=opts["target"] or None,
                               nan_policy="drop" if opts["drop_nan"] else "fill",
                               fmt=None if opts["format"] == "auto" else opts["format"],
                               text_features=opts["text_features"],
                               keep_index=opts["keep_index"], sheet=opts["sheet"],
                               columns=choice, progress=reading)
        table = subsample_table(table, int(opts["subsample"]), seed)
        if progress is not None:
            progress(0.85, f"splitting {len(table.y):,} rows into training and test sets"
                     + (" and standardising" if opts["standardize"] else ""))
        return dataset_from_table(table, name=self.label(), dropped=choice.drop,
                                  test_fraction=opts["test_fraction"], seed=seed,
                                  standardize=opts["standardize"])


def load_data(
    spec: str,
    *,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
) -> Dataset:
    """Build a :class:`Dataset` from a specification (see the module docstring).

    Parameters
    ----------
    spec : str
        File path, bundled example name, or generator, each optionally with
        ``:key=value,…`` options (see :class:`DataSource`).
    seed : int
        Seed of the generator draws or of the train/test split.
    overrides : mapping, optional
        Options that take precedence over those in ``spec`` (e.g. ``target`` from a
        command-line flag).

    Raises
    ------
    DataError
        Unknown source, unreadable or invalid file.
    ParameterError
        Invalid generator or file option.
    """
    return DataSource.from_spec(spec, overrides).load(seed)


def data_sources() -> dict[str, Any]:
    """Examples, generators and file options, for ``kernel-lab list`` and the window."""
    return {
        "examples": {k: v[0] for k, v in EXAMPLES.items()},
        "generators": {g.name: {"title": g.title, "description": g.description,
                                "params": [s.to_dict() for s in g.params]}
                       for g in GENERATORS.values()},
        "file_options": [s.to_dict() for s in FILE_OPTIONS],
    }
