"""The numerical core and the experiments never load Qt."""

from __future__ import annotations

import subprocess
import sys


def test_core_and_experiments_do_not_import_qt():
    code = (
        "import sys, kernel_lab.core, kernel_lab.core.data, kernel_lab.core.models, "
        "kernel_lab.experiments, kernel_lab.engine.runner\n"
        "from kernel_lab.experiments import list_experiments\n"
        "list_experiments()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('PySide6', 'pyqtgraph', 'shiboken6', 'superqt'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
