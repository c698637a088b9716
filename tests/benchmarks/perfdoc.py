"""``docs/performance.md``: every benchmark's latest run, written by the benchmark itself.

A benchmark calls :func:`start` first (it prints the machine probe, as every benchmark does,
and copies what the benchmark prints from then on), states each figure it judges with
:meth:`Recording.figure` and ends with :meth:`Recording.save`, which replaces that
benchmark's own section of the page — between the lines ``<!-- begin bench_x.py -->`` and
``<!-- end bench_x.py -->`` — and keeps every other benchmark's section as it was. The page
is written to a temporary file beside it and renamed over it, so a reader (or a second
benchmark finishing at the same moment) never sees half a page. A run that fails before
:meth:`Recording.save` writes nothing.

Every run records, unless started with ``--no-record`` (for a run with other settings, tried
while working on the code): the page then always holds the last run of each benchmark, with
its date, machine and exact command, and no figure can be older than what the code does now
without the page saying when it was measured.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from timing import REFERENCE_EIGH_MS, Machine, probe

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: The page the benchmarks write.
DOC = ROOT / "docs" / "performance.md"
#: The option that runs a benchmark without writing the page.
NO_RECORD = "--no-record"
#: The first line of the body of a benchmark that has not been run since the page exists.
NO_RUN = "_No recorded run yet._"
#: Environment variables that change what a benchmark measures; recorded with the command.
ENVIRONMENT = ("QT_QPA_PLATFORM", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
               "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_",
               "MALLOC_MMAP_THRESHOLD_")

_BEGIN = re.compile(r"^<!-- begin (bench_[\w.-]+\.py) -->$")
_END = re.compile(r"^<!-- end (bench_[\w.-]+\.py) -->$")

HEADER = """# Performance

Written by the benchmarks in `tests/benchmarks/` — do not edit by hand: each benchmark,
when run, replaces its own section below with its latest run (date, the machine probe, the
exact command, every figure it judges with its target, and what it printed) and keeps the
others' sections. Run one with `python tests/benchmarks/bench_NAME.py` from the repository
root with the package importable (`pip install -e .`); `--no-record` runs it without
writing this page.

Targets are stated for a reference machine whose fastest `eigh` of a 1000 × 1000 symmetric
matrix takes {reference:.0f} ms. Every benchmark first probes the machine it runs on (matrix
product GFLOPS, exponentials per second, that `eigh`); on a machine where `eigh` takes t ms
a latency or run-time target is multiplied by t / {reference:.0f} (a stall target never below
8 ms, a gesture's never below 16 ms) and a frame-rate floor divided by it (at most 60 per
second). Ratios against a reference measured in the same run (scikit-learn, a bare
eigendecomposition, the literal algorithm) are not scaled. The probe is a rough proxy: on a
shared machine it moves by tens of per cent within the hour, so compare a section's figures
with the probe printed in the same section. A probe taken while other work held the CPUs
(a load average above their number) measures that work too, and the targets scaled by it
are lenient: judge such a run by the reference machine's target printed beside each one.

{status}
"""


@dataclass(frozen=True)
class Figure:
    """One measured figure and, if the benchmark judges it, its target.

    Parameters
    ----------
    what : str
        What was measured, in the benchmark's words.
    value : float
        The measurement.
    unit : str
        Its unit (``"ms"``, ``"s"``, ``"×"``, ``"fps"`` …).
    target : float or None
        The target on this machine (already scaled by the probe where it is scaled), or None
        for a figure printed for information.
    at_most : bool
        True if the value must not exceed the target, False if it must reach it.
    reference : float or None
        The reference machine's target, when ``target`` is it scaled to this machine.
    """

    what: str
    value: float
    unit: str
    target: float | None = None
    at_most: bool = True
    reference: float | None = None

    @property
    def met(self) -> bool | None:
        """Whether the target was met (None without a target; a NaN value misses it)."""
        if self.target is None:
            return None
        if self.value != self.value:  # NaN: nothing was measured
            return False
        return self.value <= self.target if self.at_most else self.value >= self.target

    def row(self) -> str:
        """The figure as a row of the section's Markdown table."""
        target = ""
        if self.target is not None:
            target = f"{'≤' if self.at_most else '≥'} {_number(self.target)} {self.unit}"
            if self.reference is not None:
                target += f" (reference machine: {_number(self.reference)} {self.unit})"
        verdict = {None: "information", True: "met", False: "**missed**"}[self.met]
        cells = [self.what, f"{_number(self.value)} {self.unit}".strip(), target, verdict]
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _number(x: float) -> str:
    if x != x:
        return "—"
    a = abs(x)
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 0.01 or a == 0:
        return f"{x:.3g}" if a < 1 else f"{x:.2f}"
    return f"{x:.1e}"


# --- the page: sections between markers --------------------------------------------------


def split_sections(text: str) -> dict[str, str]:
    """The sections of a page, by benchmark file name, each the text between its markers.

    Raises
    ------
    ValueError
        If a marker is unmatched, nested, or a benchmark has two sections (the line is
        named): such a page was edited by hand and is not overwritten.
    """
    sections: dict[str, str] = {}
    current: str | None = None
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin:
            if current is not None:
                raise ValueError(f"{DOC.name} line {number}: section {begin.group(1)} begins "
                                 f"inside {current}; restore the page from git")
            current, body = begin.group(1), []
            if current in sections:
                raise ValueError(f"{DOC.name} line {number}: a second section for {current}; "
                                 "restore the page from git")
        elif end:
            if end.group(1) != current:
                raise ValueError(f"{DOC.name} line {number}: end of {end.group(1)} without "
                                 "its beginning; restore the page from git")
            sections[current] = "\n".join(body).strip("\n")
            current = None
        elif current is not None:
            body.append(line)
    if current is not None:
        raise ValueError(f"{DOC.name}: section {current} has no end marker; restore the page "
                         "from git")
    return sections


def placeholder(name: str) -> str:
    """The body of a benchmark's section before its first recorded run."""
    return f"## {name}\n\n{NO_RUN} Run: `python tests/benchmarks/{name}`."


def render(sections: Mapping[str, str], benches: Iterable[str]) -> str:
    """The whole page: the header, then one section per benchmark in name order (a
    benchmark without a recorded run gets a placeholder that says so)."""
    names = sorted(set(benches) | set(sections))
    bodies = {name: sections.get(name) or placeholder(name) for name in names}
    missing = [name for name in names if bodies[name].split("\n\n", 1)[-1].startswith(NO_RUN)]
    recorded = [name for name in names if name not in missing]
    status = (f"Recorded: {', '.join(f'`{n}`' for n in recorded) or 'none yet'}.")
    if missing:
        status += f" No recorded run yet: {', '.join(f'`{n}`' for n in missing)}."
    parts = [HEADER.format(reference=REFERENCE_EIGH_MS, status=status).rstrip("\n")]
    for name in names:
        parts.append(f"<!-- begin {name} -->\n{bodies[name]}\n<!-- end {name} -->")
    return "\n\n".join(parts) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder renamed over
    it (``os.replace``), so the file is at every moment either the old page or the new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def replace_section(path: Path, name: str, body: str, benches: Iterable[str]) -> None:
    """Replace benchmark ``name``'s section of the page at ``path`` by ``body`` (create the
    page if there is none), keeping every other section as it is.

    The read, the change and the rename happen under an exclusive lock on the page's folder
    (where the system has ``flock``), so two benchmarks finishing together both keep their
    sections."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent):
        sections = split_sections(path.read_text(encoding="utf-8")) if path.exists() else {}
        sections[name] = body.strip("\n")
        write_atomic(path, render(sections, benches))


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: no flock; the rename still keeps the page whole
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def all_benches() -> list[str]:
    """The benchmark scripts of this folder."""
    return sorted(p.name for p in HERE.glob("bench_*.py"))


# --- one run ------------------------------------------------------------------------------


class _Tee(io.TextIOBase):
    """Standard output that is also kept (what the benchmark printed, for its section)."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.kept = out, io.StringIO()

    def write(self, s: str) -> int:
        self.kept.write(s)
        return self.out.write(s)

    def flush(self) -> None:
        self.out.flush()


def _verdict(judged: list[Figure]) -> str:
    """How many targets were met, naming the missed ones when there are few."""
    if not judged:
        return "none: every figure is for information"
    missed = [f.what for f in judged if not f.met]
    line = f"{len(judged) - len(missed)} of {len(judged)} met"
    if not missed:
        return line
    return line + (": missed " + "; ".join(missed) if len(missed) <= 3 else
                   f"; {len(missed)} missed (the table marks them)")


def _command(script: str, argv: list[str]) -> str:
    env = [f"{k}={shlex.quote(os.environ[k])}" for k in ENVIRONMENT if k in os.environ]
    return " ".join([*env, "python", f"tests/benchmarks/{script}", *map(shlex.quote, argv)])


def _cpu() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model})"


def _blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS unknown"
    names = sorted({f"{i.get('internal_api')} {i.get('version')} "
                    f"({i.get('architecture', '?')} kernels)"
                    for i in threadpool_info() if i.get("user_api") == "blas"})
    return ", ".join(names) or "BLAS unknown"


class Recording:
    """One run of a benchmark: its probe, its figures and what it printed.

    Made by :func:`start`; not written anywhere until :meth:`save`.
    """

    def __init__(self, script: str, title: str, machine: Machine, argv: list[str],
                 record: bool, tee: _Tee | None) -> None:
        self.script, self.title, self.machine = script, title, machine
        self.command = _command(script, argv)
        self.record = record
        self.figures: list[Figure] = []
        self._tee = tee
        self._started = time.time()
        self._probe_line = machine.line()
        self._load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    def figure(self, what: str, value: float, unit: str, target: float | None = None, *,
               at_most: bool = True, reference: float | None = None) -> Figure:
        """State a figure (and its target on this machine); returns it."""
        fig = Figure(what, float(value), unit, None if target is None else float(target),
                     at_most, None if reference is None else float(reference))
        self.figures.append(fig)
        return fig

    def latency(self, what: str, value_ms: float, reference_ms: float,
                kind: str = "gesture", unit: str = "ms") -> Figure:
        """A latency figure whose target is the reference machine's, scaled by the probe."""
        return self.figure(what, value_ms, unit, self.machine.latency(reference_ms, kind),
                           reference=reference_ms)

    def body(self, finished: float | None = None) -> str:
        """The Markdown of this run's section."""
        finished = time.time() if finished is None else finished
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self._started))
        took = finished - self._started
        judged = [f for f in self.figures if f.met is not None]
        lines = [f"## {self.script}", "", self.title, "",
                 f"- **Run** {when}, took {took / 60:.1f} min: `{self.command}`",
                 f"- **Machine** {_cpu()}, {_blas()}, Python {platform.python_version()}"
                 + ("" if self._load is None else
                    f"; load average {self._load:.1f} when it started"
                    + (" (above the number of CPUs: other work competed for them)"
                       if self._load > (os.cpu_count() or 1) else "")),
                 f"- **Probe** {self._probe_line}",
                 f"- **Targets** {_verdict(judged)}", ""]
        if self.figures:
            lines += ["| figure | measured | target on this machine | |", "|---|---|---|---|"]
            lines += [f.row() for f in self.figures]
            lines.append("")
        printed = self._tee.kept.getvalue().strip("\n") if self._tee else ""
        if printed:
            lines += ["<details><summary>What it printed</summary>", "", "```text",
                      printed.replace("```", "'''"), "```", "", "</details>"]
        return "\n".join(lines)

    def save(self, path: Path = DOC) -> None:
        """Replace this benchmark's section of the page (unless run with ``--no-record``)
        and stop copying standard output."""
        if self._tee is not None and sys.stdout is self._tee:
            sys.stdout = self._tee.out
        if not self.record:
            return
        replace_section(path, self.script, self.body(), all_benches())
        print(f"recorded in {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
              f" (section {self.script})", flush=True)


def start(script_file: str, doc: str | None) -> Recording:
    """Begin a benchmark's run: take ``--no-record`` off the command line (before the
    benchmark parses it), keep what it prints from now on, probe the machine and print the
    probe's line.

    Parameters
    ----------
    script_file : str
        The benchmark's ``__file__``.
    doc : str or None
        Its module docstring; the first line is the section's title.
    """
    argv = sys.argv[1:]
    record = NO_RECORD not in argv
    sys.argv[1:] = [a for a in argv if a != NO_RECORD]
    tee: _Tee | None = None
    if record:
        tee = _Tee(sys.stdout)
        sys.stdout = tee  # type: ignore[assignment]
    machine = probe()
    # the docstring's first paragraph (its summary, which may wrap over lines)
    title = " ".join((doc or "").strip().split("\n\n", 1)[0].split()) or Path(script_file).stem
    return Recording(Path(script_file).name, title, machine, sys.argv[1:], record, tee)

