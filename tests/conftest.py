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
    while a test waits on Qt: from then on every test's garbage is collected after it, on
    the main thread, so none is left for another thread (or for memory to grow)."""
    yield
    if not gc.isenabled():
        gc.collect()
