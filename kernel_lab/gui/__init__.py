"""The Qt layer: the main window, panels, plot views and offscreen rendering.

Only draws and dispatches; every computation goes through :mod:`kernel_lab.engine`.
"""


def preload_for_threads() -> None:
    """Import, on the GUI thread, every module the window's worker threads would otherwise
    import lazily (scikit-learn's bundled data, the file readers, the experiments, the
    optimisers the models use). PySide6 hooks ``import`` to inspect each new module; an
    import in a worker thread while the GUI thread runs Qt crashed the process
    (intermittently, a segmentation fault while loading scikit-learn's breast-cancer data)
    or deadlocked (the thread that restarts the worker process importing
    ``multiprocessing.synchronize`` while the GUI thread built a plot).
    With everything imported here first, threads only look modules up. Cheap after the
    first call (≈ 0.15 s the first time)."""
    import importlib

    for name in ("sklearn.datasets", "sklearn.datasets.data", "sklearn.datasets.descr",
                 "encodings.ascii", "encodings.utf_8_sig", "importlib.readers",
                 "importlib.resources.readers",
                 "sklearn.svm", "scipy.io", "scipy.io.arff",
                 "scipy.io.matlab", "scipy.optimize", "kernel_lab.core.models",
                 "kernel_lab.core.loaders", "kernel_lab.core.source",
                 "kernel_lab.core.playground", "kernel_lab.experiments",
                 # the worker process is (re)started from a thread: a queue, an event
                 # and a spawned process import these on first use
                 "multiprocessing.synchronize", "multiprocessing.queues",
                 "multiprocessing.connection", "multiprocessing.reduction",
                 "multiprocessing.spawn", "multiprocessing.resource_tracker",
                 "multiprocessing.popen_spawn_posix", "multiprocessing.popen_spawn_win32"):
        try:
            importlib.import_module(name)
        except ImportError:  # the other operating system's module
            pass
