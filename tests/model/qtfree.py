"""Run a test file in a subprocess where importing Qt raises: the models must not need it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: the start of a program in which importing Qt (or anything built on it) raises
BLOCK_QT = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph', 'superqt'):\n"
    "            raise ImportError(f'{name} blocked: the model must not need Qt')\n"
    "sys.meta_path.insert(0, Block())\n"
)


def run_without_qt(test_file: str) -> None:
    code = (
        BLOCK_QT
        + "import pytest\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {test_file!r}, "
        "'-k', 'not without_qt']))\n"
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parents[2], env=env, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " passed" in out.stdout and "failed" not in out.stdout
