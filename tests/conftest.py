from __future__ import annotations

import gc
import os

import pytest

# Qt tests and plot rendering run without a display.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def _collect_garbage_here():
    """The windows switch Python's automatic garbage collection off in favour of a timer on
    the GUI thread (``kernel_lab.gui.collect_garbage_on_the_gui_thread``), which only runs
    while a test waits on Qt: from then on, after each test, the main thread collects what
    the automatic collector would have (the generation whose count passed its threshold),
    so no garbage is left for another thread and memory does not grow. Not a full
    collection after every test: with Qt, pyqtgraph and the experiments loaded, each one
    traverses about 200,000 objects (0.1 - 0.6 s, after hundreds of tests)."""
    yield
    if not gc.isenabled():
        from kernel_lab.gui import collect_due_generation

        collect_due_generation()
