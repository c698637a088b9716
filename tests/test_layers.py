"""Layer contract of kernel_lab: imports point downwards only, Qt stays at the top, core
starts no threads, no two modules import each other (directly or round a longer chain), and
no module grows past MAX_LINES.

A static check (``ast``) over every module, lazy imports inside functions included, plus a
subprocess check that importing the Qt-free layers loads no Qt module.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import itertools
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import kernel_lab
from tests.sources import parse

PACKAGE_DIR = Path(kernel_lab.__file__).parent
ANY = "*"
# layer -> layers it may import. A module's layer is the longest key prefixing its dotted name
# below kernel_lab; `from kernel_lab import __version__` is allowed everywhere.
ALLOWED: dict[str, set[str] | str] = {
    "core": {"core"},
    "data": {"core", "data"},  # reading files, generators, DataSource: beside experiments
    "experiments": {"core", "experiments"},
    "engine": {"core", "data", "experiments", "engine"},  # engine.qt is not `engine`
    "engine.qt": {"core", "data", "experiments", "engine", "engine.qt"},
    "model": {"core", "data", "experiments", "engine", "model"},
    "plotting": {"core", "experiments", "engine", "plotting"},  # not engine.qt (architecture.md)
    "gui": {"core", "data", "experiments", "engine", "engine.qt", "model", "plotting", "gui"},
    **dict.fromkeys(("cli", "selftest", "__main__", "__init__"), ANY),  # top-level modules
}
QT = {"PySide6", "shiboken6", "pyqtgraph", "superqt"}
QT_LAYERS = {"engine.qt", "plotting", "gui"}  # may import Qt anywhere
LAZY_QT = {"cli", "selftest", "__main__", "__init__"}  # may load Qt (or QT_LAYERS) in functions
# core is numerics only: threads, pools and queues belong to the engine (BLAS thread limits
# through threadpoolctl are not threads of ours and stay allowed)
THREADS = {"threading", "_thread", "concurrent", "multiprocessing", "queue"}
NO_THREADS = {"core"}
# the experiments' shared modules; every other module in experiments/ is one experiment and
# imports no other module of experiments/ but these (the registry imports the experiments)
EXPERIMENT_HELPERS = {"base", "plotspec"}
# an experiment's modules named by what they hold — its cells (<name>_cells), its nested
# trials (<name>_nested), its result table (<name>_table), its picture (<name>_picture),
# its cost model (<name>_cost), its summaries (<name>_summary), its fits besides the main
# method's (<name>_fits) and its plots' words from a run (<name>_words) — are part of
# experiment <name>
PART_SUFFIXES = ("_cells", "_nested", "_table", "_picture", "_cost", "_summary", "_fits",
                 "_words")
MAX_LINES = 800


def layer_of(module: str, root: str) -> str | None:
    rel = module.removeprefix(root).lstrip(".") or "__init__"
    keys = [k for k in ALLOWED if rel == k or rel.startswith(k + ".")]
    return max(keys, key=len, default=None)


@functools.cache
def _parse(text: str) -> ast.Module:
    return parse(text)


def _imports(tree: ast.Module, module: str, is_pkg: bool, known: set[str]):
    """Yield (line, target module, imported names, inside a function) for every import."""

    def visit(nodes, lazy: bool):  # imports are statements: walk statement bodies only
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield node.lineno, alias.name, (), lazy
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = (module if is_pkg else module.rpartition(".")[0]).split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                rest = []
                for alias in node.names:
                    if f"{base}.{alias.name}" in known:  # `from pkg import submodule`
                        yield node.lineno, f"{base}.{alias.name}", (), lazy
                    else:
                        rest.append(alias.name)
                if rest:
                    yield node.lineno, base, tuple(rest), lazy
            inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                yield from visit(getattr(node, field, ()), inner)

    yield from visit(tree.body, False)


def _is_experiments(module: str, root: str) -> bool:
    return module == f"{root}.experiments" or module.startswith(f"{root}.experiments.")


def _experiment_of(module: str, root: str) -> str | None:
    """The experiment's name for a module of experiments/ that is one experiment (not the
    package, the registry or a shared helper), else None."""
    name = module.removeprefix(f"{root}.experiments.")
    if not _is_experiments(module, root) or name == module or "." in name:
        return None
    if name in EXPERIMENT_HELPERS | {"registry"}:
        return None
    for suffix in PART_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def _modules(package_dir: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__) for every module of the package."""
    files = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        files[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return files


def violations(package_dir: Path) -> list[str]:
    """Readable messages for every import that breaks the contract in ALLOWED/QT_LAYERS/
    THREADS/EXPERIMENT_HELPERS."""
    root = package_dir.name
    files = _modules(package_dir)
    out = []
    for module, (path, is_pkg) in files.items():
        where = path.relative_to(package_dir.parent).as_posix()
        layer = layer_of(module, root)
        if layer is None:
            out.append(f"{where}: module {module} belongs to no layer (add it to ALLOWED)")
            continue
        tree = _parse(path.read_text(encoding="utf-8"))
        for line, target, names, lazy in _imports(tree, module, is_pkg, set(files)):
            rule, top, allowed = None, target.partition(".")[0], ALLOWED[layer]
            if top == root:
                tlayer = layer_of(target, root)
                if tlayer is None:
                    rule = f"{target} belongs to no layer"
                elif tlayer == "__init__" and allowed != ANY and names != ("__version__",):
                    rule = f"{layer} may import only __version__ from {root}"
                elif tlayer != "__init__" and allowed != ANY and tlayer not in allowed:
                    rule = f"{layer} may not import {tlayer}"
                elif layer in LAZY_QT and tlayer in QT_LAYERS and not lazy:
                    rule = f"{layer} may load Qt only inside functions"
                elif (experiment := _experiment_of(module, root)) and _is_experiments(
                        target, root) and target.rpartition(".")[2] not in EXPERIMENT_HELPERS \
                        and _experiment_of(target, root) != experiment:
                    rule = (f"experiment {experiment} may import only "
                            f"{' and '.join(sorted(EXPERIMENT_HELPERS))} from experiments")
            elif top in THREADS and layer in NO_THREADS:
                rule = f"{layer} may not use threads"
            elif top in QT:
                if layer in LAZY_QT and not lazy:
                    rule = f"{layer} may load Qt only inside functions"
                elif layer not in QT_LAYERS | LAZY_QT:
                    rule = f"{layer} may not import Qt"
            if rule:
                out.append(f"{where}:{line} imports {target}: {rule}")
    return out


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (lazy imports included; importing a
    submodule is an edge to it, not to its parent packages)."""
    files = _modules(package_dir)
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, (path, is_pkg) in files.items():
        tree = _parse(path.read_text(encoding="utf-8"))
        for _, target, _, _ in _imports(tree, module, is_pkg, set(files)):
            if target in files and target != module:
                graph[module].add(target)
    return graph


def import_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every import cycle, as a chain of modules that starts and ends at the same one: for
    each edge a → b inside a strongly connected component, a → b and then the shortest way
    from b back to a (so every edge that takes part in a cycle is named), each cycle once."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles, seen = [], set()
    for component in components:
        for a in sorted(component):
            for b in sorted(graph[a] & component):
                path = {b: [b]}  # breadth first from b back to a, inside the component
                frontier = [b]
                while a not in path:
                    nxt = []
                    for u in frontier:
                        for w in sorted(graph[u] & component):
                            if w not in path:
                                path[w] = [*path[u], w]
                                nxt.append(w)
                    frontier = nxt
                chain = [a, *path[a]]
                key = frozenset(itertools.pairwise(chain))
                if key not in seen:
                    seen.add(key)
                    cycles.append(chain)
    return cycles


def test_package_has_no_import_cycles():
    found = import_cycles(import_graph(PACKAGE_DIR))
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


@pytest.mark.parametrize(("target", "source", "chain"), [
    ("core/kernels.py", "def _lazy():\n    from kernel_lab.core.nystrom import common",
     "kernel_lab.core.kernels -> kernel_lab.core.nystrom.common -> kernel_lab.core.kernels"),
    ("core/memory.py", "from kernel_lab.core.ridge import sums as streaming",
     "kernel_lab.core.memory -> kernel_lab.core.ridge.sums -> kernel_lab.core.memory"),
])
def test_cycle_finder_names_a_new_cycle(tmp_path, target, source, chain):
    pkg = tmp_path / PACKAGE_DIR.name
    shutil.copytree(PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = {" -> ".join(c) for c in import_cycles(import_graph(pkg))}
    path = pkg / target
    path.write_text(path.read_text(encoding="utf-8") + source + "\n", encoding="utf-8")
    new = {" -> ".join(c) for c in import_cycles(import_graph(pkg))} - before
    assert new == {chain}


def test_cycle_finder_names_every_cycle_of_a_knot():
    """a ⇄ b and b → c → a: two cycles (each edge in one of them), each named once."""
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"a"}, "d": {"a"}}
    assert sorted(map(tuple, import_cycles(graph))) == [("a", "b", "a"), ("b", "c", "a", "b")]


def test_no_module_is_over_max_lines():
    long = {p.relative_to(PACKAGE_DIR.parent).as_posix(): n
            for p in PACKAGE_DIR.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_package_keeps_the_layer_contract():
    found = violations(PACKAGE_DIR)
    assert not found, "layer contract broken:\n" + "\n".join(found)


FORBIDDEN = [  # (file below the package, appended source, expected rule)
    ("core/kernels.py", "from kernel_lab.gui import app", "core may not import gui"),
    ("core/rows/dataset.py", "from ...experiments import base", "core may not import experiments"),
    ("core/rows/dataset.py", "def _lazy():\n    from kernel_lab.data import read",
     "core may not import data"),
    ("data/read.py", "from kernel_lab.engine import runner", "data may not import engine"),
    ("data/text.py", "def _lazy():\n    import PySide6", "data may not import Qt"),
    ("experiments/base.py", "from kernel_lab.data import source",
     "experiments may not import data"),
    ("core/params.py", "import kernel_lab", "core may import only __version__ from kernel_lab"),
    ("experiments/base.py", "import kernel_lab.engine", "experiments may not import engine"),
    ("engine/runner.py", "def _lazy():\n    import PySide6", "engine may not import Qt"),
    ("engine/session.py", "from . import qt", "engine may not import engine.qt"),
    ("model", "from kernel_lab.engine import qt", "model may not import engine.qt"),
    ("model", "import pyqtgraph", "model may not import Qt"),
    ("plotting", "from kernel_lab.gui import app", "plotting may not import gui"),
    ("plotting", "from kernel_lab.model import LabModel", "plotting may not import model"),
    ("plotting/view.py", "from kernel_lab.engine import qt", "plotting may not import engine.qt"),
    ("core/kernels.py", "import threading", "core may not use threads"),
    ("core/models/krr.py", "def _lazy():\n    from concurrent import futures",
     "core may not use threads"),
    ("core/nystrom/samplers.py", "from multiprocessing import Pool", "core may not use threads"),
    ("core/progress.py", "import queue", "core may not use threads"),
    ("experiments/spectrum.py", "from kernel_lab.experiments import gfc",
     "experiment spectrum may import only base and plotspec from experiments"),
    ("experiments/gfc.py", "def _lazy():\n    from . import registry",
     "experiment gfc may import only base and plotspec from experiments"),
    ("experiments/krr_path.py", "from kernel_lab.experiments import get_experiment",
     "experiment krr_path may import only base and plotspec from experiments"),
    ("experiments/nystrom_cells.py", "from kernel_lab.experiments import gfc",
     "experiment nystrom may import only base and plotspec from experiments"),
    ("experiments/nystrom_nested.py", "from kernel_lab.experiments import learning_curve",
     "experiment nystrom may import only base and plotspec from experiments"),
    ("experiments/gfc.py", "from kernel_lab.experiments import nystrom_cells",
     "experiment gfc may import only base and plotspec from experiments"),
    ("gui/app.py", "import kernel_lab.cli", "gui may not import cli"),
    ("cli.py", "import pyqtgraph", "cli may load Qt only inside functions"),
]


@pytest.mark.parametrize(("target", "source", "rule"), FORBIDDEN)
def test_checker_reports_a_forbidden_import(tmp_path, target, source, rule):
    pkg = tmp_path / PACKAGE_DIR.name
    shutil.copytree(PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    path = pkg / target
    if path.is_dir():
        path = min(path.rglob("*.py"))
    elif not path.exists():
        pytest.skip(f"{PACKAGE_DIR.name}/{target} does not exist (yet)")
    before = set(violations(pkg))
    text = path.read_text(encoding="utf-8").rstrip("\n") + "\n"
    path.write_text(text + source + "\n", encoding="utf-8")
    line = text.count("\n") + 1 + source.count("\n")
    where = f"{path.relative_to(tmp_path).as_posix()}:{line} "
    new = set(violations(pkg)) - before
    assert any(m.startswith(where) and m.endswith(rule) for m in new), (where, rule, new)


# the one worker primitive: no other module starts a thread of its own
THREAD_HOME = "engine/worker.py"
THREAD_CLASSES = {"Thread", "Timer", "QThread", "QRunnable", "start_new_thread", "start_new"}


def _final_name(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else \
        node.id if isinstance(node, ast.Name) else None


def thread_starters(package_dir: Path) -> list[str]:
    """``file:line name`` for every thread started, subclassed or imported by name in a
    module of the package other than :data:`THREAD_HOME`: ``threading.Thread`` / ``Timer``,
    ``_thread.start_new_thread``, ``QThread``, a ``QRunnable`` or anything handed to
    ``QThreadPool…start``. (Waiting for threads, as ``tear_down`` does, is no start.)"""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).as_posix()
        if rel == THREAD_HOME:
            continue
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            names: list[str | None] = []
            if isinstance(node, ast.Call):
                names.append(_final_name(node.func))
                if names[0] == "start" and "QThreadPool" in ast.dump(node.func):
                    names.append("QThreadPool")
            elif isinstance(node, ast.ClassDef):
                names.extend(_final_name(b) for b in node.bases)
            elif isinstance(node, ast.ImportFrom):
                names.extend(a.name for a in node.names)
            for name in names:
                if name in THREAD_CLASSES or name == "QThreadPool":
                    found.append(f"{package_dir.name}/{rel}:{node.lineno} {name}")
    return found


def test_only_the_one_worker_primitive_starts_threads():
    found = thread_starters(PACKAGE_DIR)
    assert not found, (f"threads started outside {THREAD_HOME} (use "
                       "kernel_lab.engine.worker.Worker):\n" + "\n".join(found))


@pytest.mark.parametrize("source", [
    "import threading\nthreading.Thread(target=print).start()",
    "from threading import Thread",
    "def _lazy():\n    from PySide6 import QtCore as Q\n"
    "    Q.QThreadPool.globalInstance().start(print)",
    "class _Load(QtCore.QRunnable):\n    pass",
])
def test_thread_check_names_a_new_thread(tmp_path, source):
    pkg = tmp_path / PACKAGE_DIR.name
    shutil.copytree(PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    path = pkg / "gui" / "forms.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + source + "\n", encoding="utf-8")
    new = set(thread_starters(pkg)) - set(thread_starters(PACKAGE_DIR))
    assert any(m.startswith(f"{pkg.name}/gui/forms.py:") for m in new), new


# type checks on the data's container belong to the data layer: everything above it takes
# any data set of the one interface (X_train …, parts, plan) and decides by size, not type
CONTAINER_TYPES = {"PartitionedData"}
CONTAINER_HOME = "data/"


def container_checks(package_dir: Path) -> list[str]:
    """``file:line`` for every ``isinstance(…, PartitionedData)`` (alone, in a tuple or a
    union) in a module of the package outside :data:`CONTAINER_HOME`."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).as_posix()
        if rel.startswith(CONTAINER_HOME):
            continue
        for node in ast.walk(_parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and _final_name(node.func) == "isinstance"
                    and len(node.args) == 2
                    and any(_final_name(n) in CONTAINER_TYPES
                            for n in ast.walk(node.args[1]))):
                found.append(f"{package_dir.name}/{rel}:{node.lineno}")
    return found


def test_no_container_checks_outside_data():
    found = container_checks(PACKAGE_DIR)
    assert not found, ("isinstance(…, PartitionedData) outside the data layer (decide by "
                       "size — data.in_memory, the memory budget — not by type):\n"
                       + "\n".join(found))


@pytest.mark.parametrize("source", [
    "def _f(d):\n    return isinstance(d, PartitionedData)",
    "def _f(d):\n    return isinstance(d, (Dataset, parts.PartitionedData))",
    "def _f(d):\n    return isinstance(d, Dataset | PartitionedData)",
])
def test_container_check_names_a_new_type_check(tmp_path, source):
    pkg = tmp_path / PACKAGE_DIR.name
    shutil.copytree(PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    path = pkg / "experiments" / "krr_path.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + source + "\n", encoding="utf-8")
    new = set(container_checks(pkg)) - set(container_checks(PACKAGE_DIR))
    assert any(m.startswith(f"{pkg.name}/experiments/krr_path.py:") for m in new), new
    allowed = pkg / "data" / "source.py"
    allowed.write_text(allowed.read_text(encoding="utf-8") + "\n" + source + "\n",
                       encoding="utf-8")
    assert not any("/data/" in m for m in container_checks(pkg))


def test_core_and_experiments_do_not_import_qt():
    extra = ", kernel_lab.model" if importlib.util.find_spec("kernel_lab.model") else ""
    code = (
        "import sys, kernel_lab.core, kernel_lab.data.source, kernel_lab.core.models, "
        f"kernel_lab.experiments, kernel_lab.engine.runner{extra}\n"
        "from kernel_lab.experiments import list_experiments\n"
        "list_experiments()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('PySide6', 'pyqtgraph', 'shiboken6', 'superqt'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
