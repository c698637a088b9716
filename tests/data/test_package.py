"""The data package's shape: no module imports Qt, threads or per-thread state (the
progress callback travels with the read options), no import cycle inside it (lazy imports
included), no module over 800 lines, and nothing of it is left in core."""

from __future__ import annotations

import ast
from pathlib import Path

import kernel_lab
import kernel_lab.data
from tests.sources import parse

DATA = Path(kernel_lab.data.__file__).parent
CORE = Path(kernel_lab.__file__).parent / "core"
FORBIDDEN = {"threading", "concurrent", "contextvars", "multiprocessing", "queue",
             "PySide6", "shiboken6", "pyqtgraph", "superqt"}


def _imports(path: Path) -> set[str]:
    """Every module an import statement in the file names, inside functions too."""
    out = set()
    for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_no_qt_no_threads_no_context_variables():
    for path in sorted(DATA.glob("*.py")):
        bad = {m for m in _imports(path) if m.split(".")[0] in FORBIDDEN}
        assert not bad, (path.name, bad)


def test_no_import_cycle_and_no_module_over_800_lines():
    names = {p.stem for p in DATA.glob("*.py")} - {"__init__"}
    graph = {}
    for name in names:
        path = DATA / f"{name}.py"
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 800, name
        graph[name] = {m.rsplit(".", 1)[-1] for m in _imports(path)
                       if m.startswith("kernel_lab.data.")} & names
    done: set[str] = set()

    def visit(node: str, stack: tuple[str, ...]) -> None:
        assert node not in stack, " -> ".join((*stack, node))
        if node in done:
            return
        for nxt in graph[node]:
            visit(nxt, (*stack, node))
        done.add(node)

    for name in sorted(names):
        visit(name, ())


def test_core_holds_no_reader_and_no_data_source():
    assert not any((CORE / f).exists() for f in ("loaders.py", "data.py", "source.py"))
    for path in CORE.rglob("*.py"):
        assert not any(m.startswith("kernel_lab.data") for m in _imports(path)), path
