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
                 "kernel_lab.data.read", "kernel_lab.data.source",
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
    bypass_import_hook_in_threads()
    collect_garbage_on_the_gui_thread()


#: How often the GUI thread collects garbage (ms) in place of Python's automatic collector.
GC_INTERVAL_MS = 250


def collect_due_generation() -> None:
    """Collect the oldest generation whose count has passed Python's threshold, as the
    automatic collector would (called on the GUI thread, with automatic collection off)."""
    import gc

    if gc.isenabled():  # switched back on behind our back (see below): off again
        gc.disable()
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for generation in (2, 1, 0):
        if counts[generation] > thresholds[generation]:
            gc.collect(generation)
            return


def collect_garbage_on_the_gui_thread() -> None:
    """Collect garbage on the GUI thread only: automatic collection is switched off and a
    timer of the application's collects each generation when its count passes Python's
    own threshold (as the automatic collector would, a little later).

    Python collects cyclic garbage in whichever thread happens to allocate. A closed
    window's Qt objects in a reference cycle were destroyed by the run worker's thread
    (pickling a run for the worker process), and the destructor, holding a Qt lock,
    waited for the GIL held by the GUI thread, which waited for that lock to build a
    menu: a deadlock CI caught twice. Qt objects must die on the GUI thread. Installed
    once per application; automatic collection is switched off again at every call (each
    window's set-up) and every tick of the timer, since libraries switch it back on:
    Dask's ``disable_gc`` decorator (on its array slicing) records whether collection was
    on when Dask was imported and switches it on after every call."""
    import gc

    from PySide6 import QtCore, QtWidgets

    app = QtWidgets.QApplication.instance()
    if app is None:
        return
    if app.property("kernel_lab_gc"):
        gc.disable()
        return
    timer = QtCore.QTimer(app)
    timer.setInterval(GC_INTERVAL_MS)
    timer.timeout.connect(collect_due_generation)
    timer.start()
    app.setProperty("kernel_lab_gc", True)
    gc.disable()


def bypass_import_hook_in_threads() -> None:
    """Let every thread but the main one import around PySide6's ``import`` hook.

    Preloading is not enough: an ``import`` statement runs the hook each time, even for a
    module already loaded, and multiprocessing has them inside functions
    (``Queue()`` runs ``from .synchronize import Lock``). CI caught the relay thread
    restarting the worker process blocked in the hook while the GUI thread, connecting a
    plot's signal, waited for it. Threads now call the plain ``importlib.__import__``
    (what ``import`` does without the hook); the GUI thread keeps PySide6's. Installed
    once; a hook PySide6 installs later would wrap this one."""
    import builtins
    import importlib
    import threading

    hooked = builtins.__import__
    if getattr(hooked, "kernel_lab_bypass", False):
        return
    main = threading.main_thread().ident
    plain = importlib.__import__

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        if threading.get_ident() == main:
            return hooked(name, globals, locals, fromlist, level)
        return plain(name, globals, locals, fromlist, level)

    __import__.kernel_lab_bypass = True  # type: ignore[attr-defined]
    builtins.__import__ = __import__


#: The longest the end of the program waits for a window's threads (its workers: runs
#: and data loading) to finish before it deletes the window (ms).
EXIT_WAIT_MS = 30_000


def top_level_widgets() -> set[int]:
    """Addresses of the application's top-level widgets now (for :func:`tear_down`'s
    ``existing``: what a screenshot made is told from what was there before)."""
    import shiboken6
    from PySide6 import QtWidgets

    if QtWidgets.QApplication.instance() is None:
        return set()
    return {shiboken6.getCppPointer(w)[0] for w in QtWidgets.QApplication.topLevelWidgets()}


def tear_down(*windows: object, existing: set[int] | None = None) -> bool:
    """Close and delete ``windows`` now, while the interpreter is whole (before it exits).

    A window that is only closed lives on: its Python objects hold one another, partly
    through Qt connections Python's collector cannot see. PySide6 then deletes it from
    an ``atexit`` handler that deletes every Qt object Python still owns, in an order set
    by their addresses; a plot's pyqtgraph ``resizeEvent`` may run when a child item is
    already gone, and shiboken6 crashes reporting that error from inside the handler
    (see "Threads and Qt objects" in docs/architecture.md). Here, in order: the windows
    are closed (``closeEvent`` saves the settings, cancels the run and tells the threads
    to stop; a window never shown gets no close event: its workers are closed here);
    their threads (``window.workers``, those of the main windows they made, and
    any ``QThread``) are waited for; the answers already posted are delivered; the windows
    are deleted (deferred deletes sent now, Python's cycles collected on this thread; no
    timer fires, as no event loop runs). Hidden top-level widgets that were not in
    ``existing`` (all, when None) go too: pyqtgraph's context menus have no parent.

    Returns False, deleting nothing, if a thread did not finish within
    :data:`EXIT_WAIT_MS` (deleting a running ``QThread`` aborts the process)."""
    import sys

    import shiboken6
    from PySide6 import QtCore, QtWidgets

    if QtWidgets.QApplication.instance() is None:
        return True
    live = [w for w in windows if isinstance(w, QtWidgets.QWidget) and shiboken6.isValid(w)]
    for window in live:
        if window.isVisible():
            window.close()
    owners = [*live, *(child for window in live  # e.g. the Playground the main window made
                       for child in window.findChildren(QtWidgets.QMainWindow))]
    for owner in owners:  # hidden windows had no closeEvent (closing twice is harmless)
        for worker in getattr(owner, "workers", ()):
            worker.close()
    deadline = QtCore.QDeadlineTimer(EXIT_WAIT_MS)
    finished = all(thread.wait(deadline) for window in live
                   for thread in window.findChildren(QtCore.QThread))
    finished &= all(worker.join(max(0, deadline.remainingTime()) / 1000)
                    for owner in owners for worker in getattr(owner, "workers", ()))
    finished &= QtCore.QThreadPool.globalInstance().waitForDone(
        max(0, deadline.remainingTime()))
    QtCore.QCoreApplication.sendPostedEvents()  # answers on their way, receivers alive
    if not finished:
        print("kernel-lab: a thread did not stop; the window is left to the exit",
              file=sys.stderr)
        return False
    for window in live:
        window.deleteLater()
    _delete_deferred()
    orphans = [w for w in QtWidgets.QApplication.topLevelWidgets()
               if not w.isVisible() and (existing is None
                                         or shiboken6.getCppPointer(w)[0] not in existing)]
    for widget in orphans:
        widget.deleteLater()
    del orphans
    _delete_deferred()
    return True


def _delete_deferred() -> None:
    """Carry out the pending ``deleteLater`` calls now, then collect the Python objects
    they leave (on this thread, the GUI thread)."""
    import gc

    from PySide6 import QtCore

    QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    gc.collect()
