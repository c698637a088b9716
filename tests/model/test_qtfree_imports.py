"""Quick, in the default run: every model module, and every model test file, imports with Qt
not importable at all, in one fresh process.

Each model test file's ``test_without_qt`` runs the whole file again in such a process; those
reruns are ``slow`` (CI runs them). This check catches the usual way a model comes to need Qt
(an import at module level, here or in anything it imports) in the default run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.model.qtfree import BLOCK_QT

ROOT = Path(__file__).resolve().parents[2]


def test_models_and_their_tests_import_without_qt():
    files = sorted(str(p.relative_to(ROOT)) for p in Path(__file__).parent.glob("test_*.py"))
    code = (
        BLOCK_QT
        + "import importlib, pkgutil, pytest, kernel_lab.model as m\n"
        "names = [i.name for i in pkgutil.walk_packages(m.__path__, 'kernel_lab.model.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print('IMPORTED', len(names), flush=True)\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--collect-only', *{files!r}]))\n"
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "IMPORTED" in out.stdout and "blocked" not in out.stdout + out.stderr
    assert len(files) >= 2 and " collected" in out.stdout  # the model test files themselves
