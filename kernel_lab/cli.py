"""The ``kernel-lab`` command: the window by default, ``list`` / ``describe`` / ``run``
headless.

Exit codes: 0 success; 2 bad usage, parameters or data (one line on stderr, no
traceback); 1 a failure at run time; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import textwrap
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from kernel_lab import __version__
from kernel_lab.core.errors import (
    KernelLabError,
    MemoryBudgetError,
    is_standalone,
    name_controls,
)
from kernel_lab.core.progress import Cancelled

if TYPE_CHECKING:
    from kernel_lab.engine import RunSpec
    from kernel_lab.engine.output import OutFolder

HEADLESS_HINT = """\
Kernel Lab is installed, but there is no display to open its window on.
Run an experiment headless instead, for example:

    kernel-lab list                                  # experiments, data sets, generators
    kernel-lab describe krr-path                     # an experiment's parameters
    kernel-lab run krr-path --out runs/first         # writes result.json, curves.csv, plot.png
    kernel-lab run krr-path --data diabetes --set kernel=laplace --seed 1 --out runs/diabetes

(To open the window on a server, run it under a virtual display: xvfb-run kernel-lab.)
"""

#: The flag of each data option a message may point to (see
#: :func:`~kernel_lab.core.errors.name_controls`): messages here name these, not the
#: window's widgets.
CLI_CONTROLS = {"drop_nan": "--drop-nan", "subsample": "--subsample {value}",
                "features": "--features {value}", "partitions": "--partitions {value}",
                "drop_columns": "--drop-columns {value}",
                "target": "--target {value}", "text_features": "--text-features {value}",
                "sheet": "--sheet {value}", "keep_index": "--keep-index",
                "test_fraction": "--test-fraction {value}"}


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class RunFailed(Exception):
    """A failure at run time whose message says it all (exit code 1, no traceback)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _build_parser() -> argparse.ArgumentParser:
    from kernel_lab.engine.executors import BACKENDS

    parser = _Parser(prog="kernel-lab", description="Kernel Lab: a laboratory for scalable "
                     "kernel methods. Without a command, opens the window.")
    parser.add_argument("--version", action="version", version=f"kernel-lab {__version__}")
    parser.add_argument("--self-test", action="store_true",
                        help="check this installation: run every experiment tiny, sessions, "
                             "exports, and one run from the window through its worker process")
    parser.add_argument("--screenshot", metavar="PNG",
                        help="open the window offscreen, run (the --session, or the default "
                             "experiment), wait for the result and save a PNG of the window")
    parser.add_argument("--session", metavar="FILE", help="with --screenshot: the session "
                                                          "to open first")
    parser.add_argument("--preset", metavar="NAME", dest="screenshot_preset",
                        help="with --screenshot: the teaching preset to open first")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p_list = sub.add_parser("list", help="list experiments, bundled examples and generators")
    p_list.add_argument("--json", action="store_true", help="machine-readable output")

    p_desc = sub.add_parser("describe", help="show an experiment's parameters and plots")
    p_desc.add_argument("experiment")
    p_desc.add_argument("--json", action="store_true", help="machine-readable output")

    p_run = sub.add_parser(
        "run", help="run an experiment headless and write result.json, curves.csv, plot.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent("""\
            data SPEC: a file (data.csv, data.csv:target=price), a bundled example
            (diabetes, breast-cancer) or a generator with parameters
            (gaussian:n=200,p=100,cov=toeplitz,rho=0.4; friedman:n=2000).
            """))
    p_rep = sub.add_parser(
        "report", help="write one self-contained HTML report (plots, tables, versions) of a "
                       "run folder, a result.json, a session file or a preset")
    p_rep.add_argument("source", help="run folder, result.json, session .json or preset name")
    p_rep.add_argument("--out", metavar="HTML", default=None,
                       help="the report file (default: report.html in the run folder, or "
                            "beside the result.json; SESSION.html beside a session file; "
                            "PRESET.html in the working folder for a preset)")
    p_rep.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p_rep.add_argument("--debug", action="store_true", help="show tracebacks of failures")

    p_run.add_argument("experiment", nargs="?",
                       help="experiment name (optional with --preset)")
    p_run.add_argument("--preset", metavar="NAME",
                       help="start from a teaching preset (see 'kernel-lab list'); --data, "
                            "--set and --seed override it")
    p_run.add_argument("--data", metavar="SPEC", help="data source (default: the experiment's)")
    p_run.add_argument("--target", metavar="COLUMN",
                       help="target column of a data file: name or 0-based index")
    p_run.add_argument("--test-fraction", type=float, metavar="F",
                       help="fraction of a data file held out for testing (default 0.25)")
    std = p_run.add_mutually_exclusive_group()
    std.add_argument("--standardize", dest="standardize", action="store_true", default=None,
                     help="standardise the features of a data file (the default)")
    std.add_argument("--no-standardize", dest="standardize", action="store_false",
                     help="keep the features of a data file as they are")
    p_run.add_argument("--drop-nan", action="store_true", default=None,
                       help="drop rows with missing/non-finite values instead of failing")
    p_run.add_argument("--text-features", choices=("onehot", "drop"), default=None,
                       help="text (category) columns of a data file: one 0/1 column per "
                            "value (the default) or dropped")
    p_run.add_argument("--keep-index", action="store_true", default=None,
                       help="keep a first column that is a row index (dropped by default)")
    p_run.add_argument("--sheet", metavar="NAME", default=None,
                       help="worksheet of an .xlsx file (name or number; default: the first)")
    p_run.add_argument("--subsample", type=int, metavar="N", default=None,
                       help="use N random rows of a data file (seeded), e.g. when the exact "
                            "methods need too much memory for all of them")
    p_run.add_argument("--features", metavar="NAMES", default=None,
                       help="the feature columns to use, in this order: names or 0-based "
                            "indices as for --target, comma-separated (default: all but "
                            "the target)")
    p_run.add_argument("--drop-columns", metavar="NAMES", default=None,
                       help="columns of a data file to leave out (names or 0-based indices, "
                            "comma-separated), e.g. a column derived from the target or a "
                            "text column; left out before any check")
    p_run.add_argument("--partitions", choices=("auto", "keep", "load"), default=None,
                       help="a Parquet folder or Zarr store: keep the rows in their "
                            "partitions, read them into memory, or (auto, the default) read "
                            "them whole when they take at most 256 MiB (rows × (columns + 1) "
                            "× 8 bytes), else keep them: by size alone, whatever --backend "
                            "or the free memory")
    p_run.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                       help="set an experiment parameter (repeatable)")
    p_run.add_argument("--seed", type=int, help="random seed (default 0)")
    p_run.add_argument("--workers", type=int, default=None, metavar="N",
                       help="threads for independent tasks such as Monte Carlo trials "
                            "(default: one per core; results do not depend on it)")
    p_run.add_argument("--backend", choices=BACKENDS,
                       default="threads",
                       help="where independent tasks run: threads (default), a local "
                            "process pool, or Dask ("
                            + ("not in the standalone app" if is_standalone()
                               else "needs kernel-lab[dask]")
                            + "); the numbers are the same on every backend")
    p_run.add_argument("--scheduler", metavar="ADDRESS",
                       help="with --backend dask: a scheduler address (tcp://host:8786); "
                            "default: a local cluster of --workers processes")
    p_run.add_argument("--out", metavar="DIR",
                       help="output folder (default: runs/EXPERIMENT-TIMESTAMP)")
    p_run.add_argument("--no-plot", action="store_true", help="do not render plot.png")
    p_run.add_argument("--save-model", metavar="PATH", default=None,
                       help="after the run, save the model(s) it marks best, with the "
                            "data's typing and standardisation, to this skops file (see "
                            "'kernel-lab predict' and 'describe-model')")
    p_run.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p_run.add_argument("--debug", action="store_true", help="show tracebacks of failures")

    p_pred = sub.add_parser(
        "predict", help="predict new rows with a saved model file and write the predictions")
    p_pred.add_argument("model", metavar="MODEL", help="a model file (.skops) Kernel Lab saved")
    p_pred.add_argument("--data", metavar="FILE", required=True,
                        help="the rows to predict: any table the lab reads (CSV/TSV, .xlsx, "
                             "ARFF, Parquet file or folder, .npy …; the target column may be "
                             "absent)")
    p_pred.add_argument("--out", metavar="OUT", required=True,
                        help="the predictions: a CSV file (row, line, prediction); for a "
                             "Parquet folder, a folder with one Parquet file per input file")
    p_pred.add_argument("--model", dest="model_name", metavar="NAME",
                        help="which model of the file (default: the first)")
    p_pred.add_argument("--ignore-extra-columns", action="store_true",
                        help="ignore columns the training file did not have (refused by "
                             "default, naming them)")
    p_pred.add_argument("--backend", choices=BACKENDS, default="threads",
                        help="where the files of a Parquet folder are predicted, one task per "
                             "file: threads, processes or dask (default: this process, one "
                             "file at a time)")
    p_pred.add_argument("--workers", type=int, default=1, metavar="N",
                        help="with --backend: tasks at a time (default 1)")
    p_pred.add_argument("--scheduler", metavar="ADDRESS",
                        help="with --backend dask: a scheduler address (default: a local "
                             "cluster of --workers processes)")
    p_pred.add_argument("--sheet", metavar="NAME", default="",
                        help="worksheet of an .xlsx file (name or number; default: the first)")
    p_pred.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    p_dm = sub.add_parser("describe-model",
                          help="show what a model file holds: version, data, models, columns")
    p_dm.add_argument("model", metavar="MODEL", help="a model file (.skops)")
    p_dm.add_argument("--json", action="store_true", help="the metadata as JSON")
    return parser


# ------------------------------------------------------------------------------------
def _cmd_list(args: argparse.Namespace) -> int:
    from kernel_lab.core.kernels import KERNELS
    from kernel_lab.data.source import data_sources
    from kernel_lab.engine.presets import load_preset, playground_preset_names, preset_names
    from kernel_lab.experiments import list_experiments

    exps = list_experiments()
    sources = data_sources()
    if args.json:
        print(json.dumps({"experiments": {e.name: e.title for e in exps},
                          "presets": {n: load_preset(n).title for n in preset_names()},
                          "playground_presets": {n: load_preset(n).title
                                                 for n in playground_preset_names()},
                          "examples": sources["examples"],
                          "generators": {k: v["description"]
                                         for k, v in sources["generators"].items()},
                          "kernels": list(KERNELS)}, indent=2, ensure_ascii=False))
        return 0
    print("Experiments:")
    for e in exps:
        print(f"  {e.name:<16} {e.title}")
    print("\nBundled examples (--data NAME):")
    for name, text in sources["examples"].items():
        print(f"  {name:<16} {text}")
    print("\nGenerators (--data NAME:key=value,...):")
    for name, g in sources["generators"].items():
        keys = ", ".join(p["name"] for p in g["params"])
        print(f"  {name:<16} {g['description']}\n  {'':<16} parameters: {keys}")
    print(f"\nKernels: {', '.join(KERNELS)}")
    print("\nTeaching presets (run --preset NAME):")
    for name in preset_names():
        print(f"  {name:<20} {load_preset(name).title}")
    print("\nPlayground presets (run --preset NAME: the fit and its function view):")
    for name in playground_preset_names():
        print(f"  {name:<26} {load_preset(name).title}")
    return 0


def _cmd_predict(args: argparse.Namespace) -> int:
    from kernel_lab.engine.predict import predict_file

    report = predict_file(args.model, args.data, args.out, model=args.model_name,
                          extra_columns="ignore" if args.ignore_extra_columns else "error",
                          sheet=args.sheet, backend=args.backend, workers=args.workers,
                          scheduler=args.scheduler)
    if not args.quiet:
        files = f" ({report.files} files)" if report.files > 1 else ""
        print(f"kernel-lab: predicted {report.rows:,} rows with model {report.model!r}: "
              f"{report.out}{files}", file=sys.stderr)
    return 0


def _cmd_describe_model(args: argparse.Namespace) -> int:
    from kernel_lab.engine.model_file import read_metadata
    from kernel_lab.engine.predict import describe_model

    if args.json:
        print(json.dumps(read_metadata(args.model), indent=2, ensure_ascii=False))
    else:
        print(describe_model(args.model))
    return 0


def _cmd_describe(args: argparse.Namespace) -> int:
    from kernel_lab.experiments import get_experiment

    exp = get_experiment(args.experiment)
    info = exp.describe()
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 0
    print(f"{info['name']}: {info['title']}\n")
    print(textwrap.fill(info["description"], 88) + "\n")
    print(f"Default data: {info['default_data']}\n\nParameters (--set NAME=VALUE):")
    for p in info["params"]:
        default = "auto" if p["default"] is None else p["default"]
        rng = ""
        if "choices" in p:
            rng = " one of " + "|".join(p["choices"])
        elif "low" in p or "high" in p:
            rng = f" in [{p.get('low', -math.inf):g}, {p.get('high', math.inf):g}]"
        when = "".join(f" (when {k} is {'/'.join(v)})" for k, v in p.get("when", {}).items())
        print(f"  {p['name']:<12} {p['kind']:<7} default {default}{rng}{when}")
        if p.get("help"):
            print(textwrap.indent(textwrap.fill(p["help"], 72), " " * 15))
    from kernel_lab.experiments.plotspec import fill

    print("\nPlots:")
    for plot in info["plots"]:
        curves = ', '.join(f"{c['series']} ({c['role']})" for c in plot['curves'])
        # a title's {summary|default} fields read their defaults before a run
        print(f"  {fill(plot['title'], None)}: {curves} against {plot['x']}")
    return 0


def _parse_sets(items: Sequence[str]) -> dict[str, str]:
    from kernel_lab.core.params import parse_assignment

    return dict(parse_assignment(item, what="--set") for item in items)


class _StderrProgress:
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.last = ""
        self.shown = -1.0
        self.t0 = time.perf_counter()

    def __call__(self, fraction: float, message: str) -> None:
        """A line when the message changes or the bar has moved by 1 % (a long stage
        reports the same message many times)."""
        if self.quiet:
            return
        message = name_controls(message, CLI_CONTROLS)
        line = f"[{100 * fraction:5.1f}% {time.perf_counter() - self.t0:6.1f}s] {message}"
        if message == self.last and fraction - self.shown < 0.01:
            return
        self.last, self.shown = message, fraction
        if message.startswith(("target:", "warning:")):  # a line of its own, kept
            sys.stderr.write(("\r\033[K" if self.tty else "") + line + "\n")
        elif self.tty:
            sys.stderr.write("\r\033[K" + line)
            if fraction >= 1.0:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _cmd_report(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from kernel_lab.engine import run
    from kernel_lab.engine.presets import load_preset, playground_preset_names, preset_names
    from kernel_lab.engine.session import NotASessionError, Session, load_session
    from kernel_lab.plotting.render import ensure_app
    from kernel_lab.plotting.report import load_result, write_report

    source = Path(args.source)
    session: Session | None = None
    doc: dict[str, Any] | None = None
    if not source.exists() and args.source in playground_preset_names():
        session = load_preset(args.source)
    if session is not None and session.spec is None:
        from kernel_lab.engine.playground.run import run_playground

        assert session.playground is not None
        doc = run_playground(session.playground, title=session.title, about=session.about)
    elif source.is_dir():
        from kernel_lab.engine.output import check_run_folder

        doc = load_result(check_run_folder(source))
    elif source.is_file():
        try:  # a file that cannot be read as JSON at all is no result either
            session = load_session(source)
        except NotASessionError as exc:
            doc = load_result(source)
            if "table" not in doc and "fit" not in doc:
                raise exc from None
        for note in session.notes if session is not None else ():
            print(f"kernel-lab: note: {note}", file=sys.stderr)
        if session is not None and session.spec is None:
            from kernel_lab.engine.playground.run import run_playground

            assert session.playground is not None
            doc = run_playground(session.playground, title=session.title,
                                 about=session.about)
    elif args.source in preset_names():
        session = load_preset(args.source)
    elif source.exists():  # a pipe, a device, a socket: never opened (it could block)
        from kernel_lab.engine.session import file_kind

        raise UsageError(f"{args.source!r} is {file_kind(source.stat().st_mode)}, not a run "
                         "folder, a file or a preset")
    else:
        raise UsageError(f"{args.source!r} is neither a run folder, a file nor a preset")
    if session is not None and session.spec is not None:
        result = run(replace(session.spec, workers=None),
                     on_progress=_StderrProgress(args.quiet))
        doc = result.to_dict()
    assert doc is not None
    out = Path(args.out) if args.out else _report_path(source, session is not None)
    ensure_app()
    try:
        if doc.get("view") == "playground":
            from kernel_lab.plotting.report import write_playground_report

            path = write_playground_report(doc, out)
        else:
            path = write_report(doc, out, title=session.title if session else "",
                                about=session.about if session else "")
    except OSError as exc:
        raise UsageError(f"cannot write the report {out}: {exc.strerror or exc}; choose "
                         "another file with --out") from None
    print(path)
    return 0


def _report_path(source: Path, is_session: bool) -> Path:
    """Where ``kernel-lab report SOURCE`` writes without ``--out``: beside what it reports
    on, where the user looks for it — ``report.html`` in a run folder (or beside its
    ``result.json``), ``NAME.html`` beside a session file ``NAME.json``, and ``PRESET.html``
    in the working folder for a preset (which has no folder of its own)."""
    if source.is_dir():
        return source / "report.html"
    if source.is_file() and not is_session:
        return source.parent / "report.html"
    if source.is_file():
        page = source.with_suffix(".html")
        return page if page != source else source.with_name(f"{source.name}.html")
    return Path(f"{source.name}.html")


def _run_spec(args: argparse.Namespace) -> RunSpec:
    """The run the command line describes: a preset (optional), overridden by --data, the
    data options, --set and --seed."""
    from kernel_lab.data.source import DataSource
    from kernel_lab.engine import RunSpec

    params: dict[str, Any] = _parse_sets(args.sets)
    if args.seed is not None:
        params["seed"] = args.seed
    options = {"target": args.target, "test_fraction": args.test_fraction,
               "standardize": args.standardize, "drop_nan": args.drop_nan,
               "text_features": args.text_features, "keep_index": args.keep_index,
               "sheet": args.sheet, "subsample": args.subsample,
               "features": args.features, "drop_columns": args.drop_columns,
               "partitions": args.partitions}
    source = DataSource.from_spec(args.data, options) if args.data else None
    name = args.experiment
    if args.preset:
        from kernel_lab.engine.presets import load_preset

        preset = load_preset(args.preset).spec
        if name and name != preset.experiment:
            raise UsageError(f"preset {args.preset!r} runs {preset.experiment!r}, not "
                             f"{name!r}; leave the experiment out")
        name, params = preset.experiment, {**preset.params, **params}
        if source is None and preset.data is not None:
            source = preset.data.with_options(
                **{k: v for k, v in options.items() if v is not None})
    if not name:
        raise UsageError("name an experiment (see 'kernel-lab list') or give --preset NAME")
    if source is None and any(v is not None for v in options.values()):
        from kernel_lab.experiments import get_experiment

        source = DataSource.from_spec(get_experiment(name).default_data, options)
    return RunSpec(name, params, source, args.workers, args.backend, args.scheduler)


def _number(value: float | None) -> str:
    """An error of a Playground fit; None when there are no such points (no test points
    among painted ones)."""
    return "– (no points)" if value is None else f"{value:.4g}"


@contextmanager
def _claim(out: Path, quiet: bool) -> Iterator[OutFolder]:
    """The run folder ``out``, checked, created and locked before the run
    (:func:`~kernel_lab.engine.output.claim_out_folder`), released when the block ends."""
    from kernel_lab.engine.output import RESULT, OutputError, out_folder

    with out_folder(out) as folder:
        if not quiet:
            for note in folder.notes:
                sys.stderr.write(f"  note: --out {out}: {note}\n")
        try:
            yield folder
        except OutputError as exc:  # a full disk while writing
            raise RunFailed(f"{exc}; the folder holds no {RESULT} (the run's outputs are "
                            "not complete): free space there or choose another folder "
                            "with --out, and run again") from None


def _cmd_run_playground(args: argparse.Namespace) -> int:
    """A Playground preset, headless: its fit (``--set``, ``--seed`` override its
    parameters, checked by their declarations) as result.json and the function view as
    plot.png."""
    from dataclasses import replace

    from kernel_lab.engine.playground.params import resolve_fit_params
    from kernel_lab.engine.playground.run import run_playground, write_playground_result
    from kernel_lab.engine.presets import load_preset

    if args.experiment:
        raise UsageError(f"preset {args.preset!r} is a Playground preset: it has no "
                         "experiment (leave it out)")
    # the Playground's data are its own: an option that would change a data file or where
    # tasks run is refused, not silently dropped
    given = [flag for flag, value in (
        ("--data", args.data), ("--target", args.target),
        ("--test-fraction", args.test_fraction),
        ("--standardize/--no-standardize", args.standardize), ("--drop-nan", args.drop_nan),
        ("--text-features", args.text_features), ("--keep-index", args.keep_index),
        ("--sheet", args.sheet), ("--subsample", args.subsample),
        ("--features", args.features), ("--drop-columns", args.drop_columns),
        ("--partitions", args.partitions), ("--save-model", args.save_model),
        ("--workers", args.workers), ("--scheduler", args.scheduler),
        ("--backend", None if args.backend == "threads" else args.backend))
        if value is not None]
    if given:
        raise UsageError(f"preset {args.preset!r} is a Playground preset: its data are its "
                         f"own and it runs in this process (leave out {', '.join(given)}; "
                         "--set, --seed, --out, --no-plot and --quiet apply)")
    session = load_preset(args.preset)
    assert session.playground is not None
    params = _parse_sets(args.sets)
    if args.seed is not None:
        params["seed"] = args.seed
    state = replace(session.playground,
                    params=resolve_fit_params(params, session.playground.params))
    out = Path(args.out or Path("runs") /
               f"{args.preset}-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
    with _claim(out, args.quiet) as folder:
        doc = run_playground(state, title=session.title, about=session.about)
        folder.remove_leftovers()

        def plot(path: Path) -> Path:
            from kernel_lab.plotting.function_view import render_function_view

            return render_function_view(doc, path, title=session.title)
        write_playground_result(doc, out, plot=None if args.no_plot else plot)
    if not args.quiet:
        fit = doc["fit"]
        sys.stderr.write(f"  {fit['method']}: train error {_number(fit['train_error'])}, "
                         f"test error {_number(fit['test_error'])}\n")
    print(out)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from kernel_lab.engine import run

    if args.preset:  # the presets load the Playground's modules: only when one is named
        from kernel_lab.engine.presets import playground_preset_names

        if args.preset in playground_preset_names():
            return _cmd_run_playground(args)
    from kernel_lab.engine.output import write_run
    from kernel_lab.experiments import get_experiment

    spec = _run_spec(args)
    exp = get_experiment(spec.experiment)
    out = Path(args.out or Path("runs") /
               f"{exp.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
    model_path = None if args.save_model is None else Path(args.save_model)
    if model_path is not None and not model_path.parent.is_dir():  # before any computation
        raise UsageError(f"--save-model {args.save_model}: the folder {model_path.parent} "
                         "does not exist; create it or give another path")
    if model_path is not None and model_path.is_dir():
        raise UsageError(f"--save-model {args.save_model}: this is a folder; give a file "
                         "name for the model (e.g. model.skops)")
    if model_path is not None and not exp.keeps_models:
        raise UsageError(f"--save-model: experiment {exp.name!r} fits no model to keep "
                         "(krr-path, ckrr-risk, nystrom, learning-curve and gfc do); leave "
                         "--save-model out")
    with _claim(out, args.quiet) as folder:  # before any computation
        try:
            result = run(spec, on_progress=_StderrProgress(args.quiet))
        except MemoryBudgetError as exc:
            raise MemoryBudgetError(_with_rows_that_fit(str(exc), spec)) from None
        folder.remove_leftovers()

        def plot(path: Path) -> Path:
            from kernel_lab.plotting.render import render_plots

            return render_plots(result.table, exp.plots, path,
                                title=f"{exp.title} — {result.data['name']}",
                                summaries=result.summaries)
        write_run(result, out, plot=None if args.no_plot else plot)
    if not args.quiet:
        for note in result.data.get("notes", []):  # what was encoded, dropped, mapped
            sys.stderr.write(f"  data: {name_controls(note, CLI_CONTROLS)}\n")
        for key, value in result.summaries.items():
            shown = f"{value:.6g}" if isinstance(value, float) else value
            sys.stderr.write(f"  {key}: {shown}\n")
    for warning in result.data.get("warnings", []):  # even with --quiet: read before trusting
        sys.stderr.write(f"  warning: {name_controls(warning, CLI_CONTROLS)}\n")
    if model_path is not None:
        from kernel_lab.engine.export import export_run

        report = export_run(spec, result, model_path, _StderrProgress(args.quiet))
        if not args.quiet:
            sys.stderr.write("".join(f"  {line}\n" for line in report.lines()))
    print(out)
    return 0


def _with_rows_that_fit(message: str, spec: RunSpec) -> str:
    """A too-large refusal on a table, with the rows that would fit (as many as the
    window offers in 'Use a random N rows'): ``--subsample N`` where the message points
    to subsampling, else added at its end, and which limit set N (the memory budget, or
    the time cap with the rows the budget alone would allow). Unchanged for generated
    data."""
    from kernel_lab.core.errors import data_option
    from kernel_lab.core.memory import memory_budget_bytes
    from kernel_lab.experiments import get_experiment
    from kernel_lab.model.plan import probe_flops_per_second, rows_that_fit, uncalibrated_seconds

    source = spec.data_source()
    if source.kind == "generator" or source.partitioned():
        return message  # a folder: reading it here to count rows would be a whole pass
    experiment = get_experiment(spec.experiment)
    params = experiment.resolve(spec.params)
    try:
        dataset = source.load(int(params["seed"]))
    except KernelLabError:
        return message
    rate = probe_flops_per_second()
    fitting = rows_that_fit(experiment, params, dataset, float(memory_budget_bytes()),
                            lambda est, n: uncalibrated_seconds(est, rate))
    rows = fitting.rows
    if not rows:
        return message
    why = f"The {rows:,} rows are {fitting.why()}."
    if data_option("subsample", "N") in message:
        return f"{name_controls(message, {'subsample': f'--subsample {rows}'})} {why}"
    return f"{message.rstrip('.')}. A random {rows:,} rows of this table fit: " \
           f"--subsample {rows}. {why}"


def _cmd_gui() -> int:
    from kernel_lab.plotting.render import has_display

    if not has_display() and os.environ.get("QT_QPA_PLATFORM") != "offscreen":
        print(HEADLESS_HINT, end="")
        return 0
    from kernel_lab.gui.app import main as gui_main

    return gui_main()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kernel-lab`` command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    import multiprocessing

    multiprocessing.freeze_support()  # the window's worker process, in a frozen app too
    debug = "--debug" in argv
    try:
        args = _build_parser().parse_args(argv)
        if args.command is None and args.self_test:
            from kernel_lab.selftest import run_self_test

            return run_self_test()
        if args.command is None and args.screenshot:
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
            from kernel_lab.gui.app import screenshot

            return screenshot(args.screenshot, args.session, preset=args.screenshot_preset)
        if args.command is None:
            return _cmd_gui()
        handler = {"list": _cmd_list, "describe": _cmd_describe, "run": _cmd_run,
                   "report": _cmd_report, "predict": _cmd_predict,
                   "describe-model": _cmd_describe_model}
        return handler[args.command](args)
    except (UsageError, KernelLabError) as exc:
        message = name_controls(" ".join(str(exc).split()), CLI_CONTROLS)
        print(f"kernel-lab: error: {message}", file=sys.stderr)
        return 2
    except RunFailed as exc:
        print(f"kernel-lab: failed: {exc}", file=sys.stderr)
        return 1
    except Cancelled:
        print("kernel-lab: cancelled", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("\nkernel-lab: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("kernel-lab: failed: out of memory; use fewer points or an approximate method",
              file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader of stdout stopped (`kernel-lab describe-model M | head`): as a Unix
        # tool does, stop quietly; stdout goes to /dev/null so the exit flush cannot fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped this way
    except Exception as exc:  # a failure at run time: one line unless --debug
        if debug:
            traceback.print_exc()
        print(f"kernel-lab: failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
              + ("" if debug else " (run with --debug for details)"), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
