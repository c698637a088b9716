"""The window's autosave: a few seconds after each change the lab's session, the
Playground's state (painted points included) and the layout are written next to the
settings file, on a thread of their own; a clean close writes them one last time marked
clean; the next start after an unclean end offers to restore them.

The rules (file names, atomic writes, the clean mark, the lock, the debounce policy) are
:mod:`kernel_lab.model.autosave`'s; here they are bound to the window's events, a
``QTimer`` and a question box. The question is :func:`ask_restore` (tests replace it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtWidgets

from kernel_lab.core.errors import KernelLabError
from kernel_lab.engine.qt import gui_poster
from kernel_lab.engine.worker import Job, Worker
from kernel_lab.model.autosave import (
    AutosavePaths,
    AutosaveWriter,
    Debounce,
    InstanceLock,
    Recovered,
    Snapshot,
    Written,
    read_autosave,
    set_aside,
)


def ask_restore(parent: QtWidgets.QWidget, recovered: Recovered, path: Path) -> bool:
    """Ask whether to restore the state an unclean end left (True: Restore)."""
    box = QtWidgets.QMessageBox(parent)
    box.setIcon(QtWidgets.QMessageBox.Icon.Question)
    box.setWindowTitle("Restore the last session?")
    when = recovered.saved_at.replace("T", " ").replace("+00:00", " UTC")
    box.setText("Kernel Lab did not close normally last time. Restore the state it "
                f"autosaved at {when or 'its last change'}?")
    box.setInformativeText(f"It holds {recovered.summary()}.\n\nDiscard starts from the "
                           f"settings of the last normal close; the discarded state is "
                           f"kept once as {path.name} in {path.parent}.")
    restore = box.addButton("Restore", QtWidgets.QMessageBox.ButtonRole.AcceptRole)
    box.addButton("Discard", QtWidgets.QMessageBox.ButtonRole.DestructiveRole)
    box.setDefaultButton(restore)
    box.exec()
    return box.clickedButton() is restore


def autosave_paths(settings: QtCore.QSettings) -> AutosavePaths:
    """The autosave's files for ``settings``: beside their file, named after it (INI
    files, and the native format on Linux: ``~/.config/KernelLab/Kernel
    Lab.autosave.json``); where the native settings are no file of ours (the Windows
    registry, a macOS preferences list), in the application's configuration folder."""
    if settings.format() == QtCore.QSettings.Format.NativeFormat and \
            not sys.platform.startswith("linux"):
        folder = QtCore.QStandardPaths.writableLocation(
            QtCore.QStandardPaths.StandardLocation.AppConfigLocation)
        return AutosavePaths.beside(Path(folder) / f"{settings.applicationName()}.ini")
    return AutosavePaths.beside(settings.fileName())


def _write(job: Job) -> None:
    """The autosave thread's work: serialise and write one snapshot."""
    writer, snapshot = job.request
    try:
        written = writer.write(snapshot)
    except KernelLabError as exc:
        job.emit("failed", str(exc), True)
    else:
        job.emit("finished", written)


class Autosave:
    """Binds a :class:`~kernel_lab.gui.app.MainWindow` to its autosave file.

    Parameters
    ----------
    window : MainWindow
        Its model, Playground, docks and view actions are watched and captured.
    on : bool
        False: nothing is read, watched or written (no thread either).

    When to write is :attr:`policy` (a :class:`~kernel_lab.model.autosave.Debounce`: 3 s
    after the last change, 15 s after the first at the latest; tests set a shorter one).
    """

    def __init__(self, window: Any, *, on: bool = True) -> None:
        self.window = window
        self.paths = autosave_paths(window.settings)
        self.policy = Debounce()
        self.writer = AutosaveWriter(self.paths.file)
        self.lock = InstanceLock(self.paths.lock)
        self.on = on
        self.worker = Worker(_write, name="autosave", post=gui_poster(window), inline=not on)
        self.timer = QtCore.QTimer(window, singleShot=True)
        self.timer.timeout.connect(self._tick)
        self.writes = 0  # files written since the start (tests and scripts wait on it)
        self.last: Written | None = None
        self.enabled = False
        self._watched_playground: Any = None

    # -- start ----------------------------------------------------------------------------
    def start(self) -> Recovered | None:
        """At the window's start (its settings applied): take the lock, read what the last
        run left, offer to restore it if that run did not end cleanly (or restore the
        Playground's points silently if it did), then watch for changes. Returns what
        was restored, if anything."""
        if not self.on:
            return None
        try:
            self.paths.file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.window.log(f"autosave off: cannot create {self.paths.file.parent} "
                            f"({exc.strerror or exc})")
            return None
        if not self.lock.acquire():
            self.window.log(f"autosave off: another Kernel Lab window uses the settings in "
                            f"{self.paths.file.parent} and autosaves there")
            return None
        self.paths.remove_temporaries()
        restored = self._recover()
        self.enabled = True
        self._watch()
        snapshot = self.snapshot()  # what the file (if any) holds, or the settings gave
        if snapshot is not None:
            self.writer.baseline(snapshot)
        return restored

    def _recover(self) -> Recovered | None:
        w = self.window
        try:
            recovered = read_autosave(self.paths.file)
        except KernelLabError as exc:
            w.log(f"autosave not restored: {exc}")
            self._set_aside()
            return None
        if recovered is None:
            return None
        if recovered.clean:  # the lab came back from the settings: the Playground too
            if recovered.session.playground is not None:
                w.open_playground(show=False).model.apply(recovered.session.playground)
                w.log(f"Playground restored from {self.paths.file.name}")
            return recovered
        if not ask_restore(w, recovered, self.paths.discarded):
            self._set_aside()
            w.log(f"autosaved state discarded (kept as {self.paths.discarded})")
            return None
        try:
            w.apply_session(recovered.session)
        except KernelLabError as exc:
            w.log(f"autosave not restored: {exc}")
            return None
        self._apply_window(recovered.window)
        w.log(f"restored the state autosaved at {recovered.saved_at} from {self.paths.file}")
        return recovered

    def _set_aside(self) -> None:
        try:
            set_aside(self.paths)
        except KernelLabError as exc:
            self.window.log(str(exc))

    def _apply_window(self, saved: dict[str, Any]) -> None:
        w = self.window
        for key, restore in (("geometry", w.restoreGeometry), ("state", w.restoreState)):
            if key in saved:
                restore(QtCore.QByteArray.fromBase64(saved[key].encode("ascii")))
        for key, action in (("log_y", w.log_y_action),
                            ("presentation", w.presentation_action)):
            if key in saved and action.isChecked() != saved[key]:
                action.trigger()
        if saved.get("use_default_data"):
            w.model.use_default_data = True
            w.data_panel.use_default.setChecked(True)
        if w.playground is not None and not saved.get("playground_visible", True):
            w.playground.hide()

    # -- watching -------------------------------------------------------------------------
    def _watch(self) -> None:
        w, m = self.window, self.window.model
        for event in (m.inputs_changed, m.experiment_changed, m.pins_changed,
                      m.session_applied):
            event.connect(self.changed)
        for dock in w._docks():
            dock.dockLocationChanged.connect(self.changed)
            dock.topLevelChanged.connect(self.changed)
            dock.visibilityChanged.connect(self.changed)
        for action in (w.log_y_action, w.presentation_action):
            action.toggled.connect(self.changed)
        self.watch_playground()

    def watch_playground(self) -> None:
        """Watch the Playground's model too (once it exists)."""
        pg = self.window.playground
        if pg is None or pg is self._watched_playground or not self.enabled:
            return
        self._watched_playground = pg
        pg.model.data_changed.connect(self.changed)
        pg.model.params_changed.connect(self.changed)

    def changed(self, *_args: Any) -> None:
        """Something worth keeping changed: (re)start the timer of the policy."""
        if not self.enabled:
            return
        self.timer.start(round(1000 * self.policy.changed(time.monotonic())))

    # -- writing --------------------------------------------------------------------------
    def snapshot(self) -> Snapshot | None:
        """The state now, or None when the form holds values no session can keep (the
        file keeps the last valid state; the next valid change is written)."""
        w = self.window
        try:
            session = w.model.to_session()
        except KernelLabError:
            return None
        pg = w.playground
        if pg is not None:
            session.playground = pg.model.state()
        return Snapshot(session, {
            "geometry": bytes(w.saveGeometry().toBase64()).decode("ascii"),
            "state": bytes(w.saveState().toBase64()).decode("ascii"),
            "playground_visible": bool(pg is not None and pg.isVisible()),
            "log_y": w.log_y_action.isChecked(),
            "presentation": w.presentation_action.isChecked(),
            "use_default_data": bool(w.model.use_default_data)})

    def _tick(self) -> None:
        if not self.enabled or self.worker.closed:
            return
        self.watch_playground()
        self.policy.written()
        snapshot = self.snapshot()
        if snapshot is not None:
            self.worker.submit((self.writer, snapshot), self._written)

    def _written(self, kind: str, *payload: Any) -> None:
        if kind == "failed":
            self.window.log(f"autosave failed: {payload[0]}")
        elif kind == "finished" and payload[0] is not None:
            self.last = payload[0]
            self.writes += 1

    def flush(self, timeout: float = 10.0) -> bool:
        """Write a pending change now and wait for it (scripts and tests)."""
        if self.timer.isActive():
            self.timer.stop()
            self._tick()
        ok = self.worker.wait_idle(timeout)
        QtCore.QCoreApplication.sendPostedEvents()
        return ok

    def close(self) -> None:
        """At a clean close: the state written one last time, marked clean, and the lock
        released. The thread is stopped first (a write in progress finishes)."""
        self.timer.stop()
        self.worker.close()
        if not self.enabled:
            return
        self.enabled = False
        self.worker.join(10.0)
        try:
            written = self.writer.write(self.snapshot(), clean=True)
        except KernelLabError as exc:
            self.window.log(f"autosave failed: {exc}")
        else:
            self.last = written or self.last
        self.lock.release()
