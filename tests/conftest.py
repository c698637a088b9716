from __future__ import annotations

import gc
import os

import pytest

# Qt tests and plot rendering run without a display.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Under pytest-xdist (the README's command: one process per core), each process gets its
# share of the cores for BLAS, set before numpy loads it (and inherited by the processes a
# test starts), instead of every process spinning a thread per core.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(_share))


def pytest_report_header(config: pytest.Config) -> str:
    """The BLAS kernels in use, as threadpoolctl reports them: OpenBLAS picks them for the
    CPU (``OPENBLAS_CORETYPE`` overrides), they round differently, and ``.ci/run`` runs the
    numerical tests under two of them."""
    import numpy  # noqa: F401  (loads numpy's BLAS)
    import scipy.linalg  # noqa: F401  (and scipy's)
    from threadpoolctl import threadpool_info

    found = sorted({f"{i['internal_api']} {i.get('version')} ({i.get('architecture')} kernels)"
                    for i in threadpool_info() if i.get("user_api") == "blas"})
    return "BLAS: " + ("; ".join(found) or "none found")


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
