"""The plot area: the experiment's declared plots as tabs, a crosshair read-out, and the
redraw timer that shows the model's table at a bounded rate."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyqtgraph as pg
import shiboken6
from PySide6 import QtCore, QtWidgets

from kernel_lab.experiments.plotspec import PlotSpec
from kernel_lab.model import LabModel
from kernel_lab.plotting.view import PlotView

REDRAW_MS = 60          # live curves are redrawn at most ~16 times a second
#: A timer redraw creates or changes curve items only for this long, leaving the rest to
#: the next tick, so that one redraw and the repaint after it fit in a frame.
DRAW_BUDGET_S = 0.004
#: … and the next tick comes this soon while the rest waits (the window's other events
#: in between).
HELD_MS = 10
#: A plot repaints this long after its redraw (a timer: the window's events in between).
PAINT_AFTER_MS = 1
#: A plot waits at most this long for a table to be drawn whole before it repaints anyway
#: (tables that come faster than they are drawn would otherwise hold it for the run).
HOLD_MAX_S = 0.25


class PlotWidget(pg.GraphicsLayoutWidget):
    """A plot tab's widget that times its repaint after a redraw (:attr:`paint_seconds`;
    set :attr:`timing` to time the next one — not a crosshair's small repaint): the
    redraw rate counts what a table costs to paint, not only to set up."""

    paint_seconds = 0.0
    timing = False

    def paintEvent(self, ev: Any) -> None:
        t0 = time.perf_counter()
        super().paintEvent(ev)
        if self.timing:
            self.paint_seconds, self.timing = time.perf_counter() - t0, False


class PlotPanel(QtWidgets.QWidget):
    """Draws ``model``'s shown table and pins; only the visible tab is redrawn live."""

    def __init__(self, model: LabModel, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        col = QtWidgets.QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.setDocumentMode(True)
        col.addWidget(self.tabs, 1)
        self.readout = QtWidgets.QLabel(" ")
        self.readout.setStyleSheet("color: #444; padding: 2px 6px;")
        col.addWidget(self.readout)
        self.views: list[PlotView] = []
        self.widgets: list[PlotWidget] = []
        self._proxies: list[Any] = []
        self._cross: dict[int, tuple[Any, Any]] = {}
        self.colors: dict[str, str] = {}
        self.scale = 1.0
        self.log_y = False  # log y axes for risks and errors (View menu)
        self._dirty = False
        self._table: dict[str, Any] | None = None
        self._fresh = False
        self._behind: set[int] = set()
        self._held_since: dict[int, float] = {}  # plots held since (perf_counter), see _hold
        self._holding: set[int] = set()  # plots held now
        #: The plots a staged rebuild has still to build, and whether rebuilds are staged
        #: now (:meth:`staged`).
        self._unbuilt: list[PlotSpec] = []
        self._staging = False
        self._timer = QtCore.QTimer(self, interval=REDRAW_MS,
                                    timeout=lambda: self.redraw(everything=False))
        self.tabs.currentChanged.connect(self._tab_shown)
        self._timer.start()
        model.experiment_changed.connect(lambda exp: self.rebuild(reset_colors=True))
        model.table_changed.connect(self.mark_dirty)
        model.run_started.connect(self._run_started)
        model.pins_changed.connect(self._pins_changed)
        model.summaries_changed.connect(self._summaries_changed)

    # -- building ------------------------------------------------------------------------
    def rebuild(self, reset_colors: bool = False) -> None:
        """New plot widgets for the model's experiment (and the current scale): all at
        once, or one per pass of the event loop while :meth:`staged`."""
        if reset_colors:
            self.colors = {}
        self._release()
        self._behind = set()
        self._held_since = {}
        self._holding = set()
        self._unbuilt = list(self.model.experiment.plots)
        if self._staging:
            QtCore.QTimer.singleShot(0, self, self._build_next)  # not once it is gone
        else:
            self.build_all()

    @contextmanager
    def staged(self) -> Iterator[None]:
        """Rebuilds within the block build their plots one per pass of the event loop:
        a plot costs 40-70 ms of pyqtgraph's making, and a session opened from the menu
        held the window for all of them at once (150-200 ms)."""
        self._staging = True
        try:
            yield
        finally:
            self._staging = False

    @property
    def built(self) -> bool:
        """Whether every plot of the experiment is built (see :meth:`staged`)."""
        return not self._unbuilt

    def build_all(self) -> None:
        """Build the plots a staged rebuild has left, now."""
        while self._unbuilt:
            self._build(self._unbuilt.pop(0))

    def _build_next(self) -> None:
        if self._unbuilt:
            self._build(self._unbuilt.pop(0))
        if self._unbuilt:
            QtCore.QTimer.singleShot(0, self, self._build_next)  # not once it is gone

    def _build(self, spec: PlotSpec) -> None:
        """One plot tab (with the pins), drawn at the next redraw."""
        w = PlotWidget()
        view = PlotView(w.ci, 0, spec, colors=self.colors, scale=self.scale,
                        log_y=self.log_y)
        view.cache_static()
        view.set_summaries(self.model.summaries or None)
        self.views.append(view)
        self.widgets.append(w)
        self.tabs.addTab(w, view.spec.title)
        proxy = pg.SignalProxy(w.scene().sigMouseMoved, rateLimit=30,
                               slot=lambda ev, v=view: self._moved(v, ev[0]))
        self._proxies.append(proxy)
        for pin in self.model.pins:
            view.add_pin(pin.table)
        self.mark_dirty()

    def _release(self) -> None:
        """Delete the plot widgets shown so far, now. ``deleteLater`` alone left them to an
        event loop that scripts and the screenshot path (which call ``processEvents``) never
        return to: every switch of experiment kept its plots, ≈ 4.8 MB each time. Nothing
        of theirs is on the call stack here (a rebuild follows the model or a menu), and
        the mouse proxies and the legends' anchors are disconnected first so that none
        calls into a deleted item."""
        for proxy in self._proxies:
            proxy.disconnect()
        for view in self.views:
            view.detach()
        old = list(self.widgets)
        self.views, self.widgets, self._proxies, self._cross = [], [], [], {}
        self.tabs.clear()  # removes the pages without deleting them
        for w in old:
            shiboken6.delete(w)

    def set_scale(self, scale: float) -> None:
        self.scale = scale
        self.rebuild()
        self.redraw()

    def set_log_y(self, on: bool) -> None:
        """Log y axes for the plots of risks and errors (their values are positive)."""
        self.log_y = bool(on)
        self.rebuild()
        self.redraw()

    def _pins_changed(self) -> None:
        for view in self.views:
            view.clear_pins()
            for pin in self.model.pins:
                view.add_pin(pin.table)
        self.mark_dirty()

    def _summaries_changed(self, summaries: dict[str, Any]) -> None:
        """The plots' texts that name what the run found out (the inputs on an axis,
        the sampler whose landmarks are marked) follow its summaries."""
        changed = False
        for i, view in enumerate(self.views):
            if view.set_summaries(summaries or None):
                self.tabs.setTabText(i, view.spec.title)
                changed = True
        if changed:
            self.mark_dirty()

    # -- drawing -------------------------------------------------------------------------
    def mark_dirty(self) -> None:
        self._dirty = True
        self._table = None  # taken from the model again at the next redraw

    def _run_started(self) -> None:
        for view in self.views:  # emptied now; rebuilt only if the columns change
            view.blank()
        self._fresh = True

    def redraw(self, everything: bool = True) -> None:
        """Redraw when the model's table changed since the last call. The timer redraws
        only the visible tab (the others catch up when shown) and spaces its ticks so
        that drawing a table takes at most ~15 % of the GUI thread, leaving the cores to
        the run; a table drawn in slices (:data:`DRAW_BUDGET_S`) gets its next slice
        :data:`HELD_MS` later."""
        if not self._dirty:
            return
        self._dirty = False
        t0 = time.perf_counter()
        # the same table object while a budgeted redraw finishes it (the views keep
        # what they worked out from it)
        same = self._table is not None
        table = self._table = self._table or self.model.shown_table()
        if self._fresh and self.model.table:
            # first results of a run: keep the plot items when the columns are the same
            # (other kernels or methods than last time: start the plots afresh)
            self._fresh = False
            for view in self.views:
                if view.columns() - set(table):
                    view.clear()
        current = self.tabs.currentIndex()
        budget = None if everything else DRAW_BUDGET_S
        live = self.model.running  # the axes follow the data with slack until the end
        held = False
        for i, view in enumerate(self.views):
            if everything or i == current:
                if self.widgets[i].updatesEnabled():  # painted in a later pass, see _hold
                    self.widgets[i].setUpdatesEnabled(False)
                view.update(table, budget, live=live, same=same)
                # the view's new range applied now, not by the paint (where moving every
                # curve made the scene ask for a second paint right after the first)
                self.widgets[i].scene().prepareForPaint()
                self.widgets[i].timing = True  # the repaint this brings is timed
                self._behind.discard(i)
                self._dirty |= not view.complete  # curves left for the next tick
                held |= self._hold(i, not view.complete)
            else:
                self._behind.add(i)
        # the table's cost to the GUI thread: this redraw and the last repaint of the tab
        cost_ms = 1e3 * (time.perf_counter() - t0 + (
            self.widgets[current].paint_seconds if 0 <= current < len(self.widgets) else 0))
        self._timer.setInterval(HELD_MS if held else
                                int(min(500, max(REDRAW_MS, 6 * cost_ms))))

    def _hold(self, index: int, hold: bool) -> bool:
        """Keep the picture of plot ``index`` on screen (no repaint) while ``hold``: the
        last complete table stays until the next is drawn whole — one repaint per table,
        never a mix of two — but for at most :data:`HOLD_MAX_S`. Whether it is held."""
        widget = self.widgets[index]
        now = time.perf_counter()
        if hold and self._held_since.setdefault(index, now) + HOLD_MAX_S < now:
            hold = False  # tables come faster than they are drawn: show what there is
            self._held_since[index] = now
        elif not hold:
            self._held_since.pop(index, None)
        if hold:
            widget.setUpdatesEnabled(False)
            self._holding.add(index)
        else:
            self._holding.discard(index)
            if not widget.updatesEnabled():
                # repainted once the event loop has had a pass (a timer, an input event)
                # after this redraw: the two together held the window's thread for
                # longer than a frame
                QtCore.QTimer.singleShot(PAINT_AFTER_MS, lambda: self._paint(widget))
        return hold

    def _paint(self, widget: PlotWidget) -> None:
        """Let ``widget`` repaint, unless it was held again or replaced since (by
        identity: a new widget may take a deleted one's address, which is what PySide
        compares)."""
        for index, w in enumerate(self.widgets):
            if w is widget and shiboken6.isValid(w) and index not in self._holding:
                w.setUpdatesEnabled(True)

    def _tab_shown(self, index: int) -> None:
        if index in self._behind:
            self._behind.discard(index)
            self.views[index].update(self.model.shown_table())
        if 0 <= index < len(self.views):
            self._hold(index, not self.views[index].complete)

    def _moved(self, view: PlotView, pos: Any) -> None:
        vb = view.item.vb
        if not view.item.sceneBoundingRect().contains(pos):
            return
        p = vb.mapSceneToView(pos)
        lines = self._cross.get(id(view))
        if lines is None:
            pen = pg.mkPen("#888888", width=1, style=QtCore.Qt.PenStyle.DashLine)
            lines = (pg.InfiniteLine(angle=90, pen=pen), pg.InfiniteLine(angle=0, pen=pen))
            for line in lines:
                view.item.addItem(line, ignoreBounds=True)
            self._cross[id(view)] = lines
        lines[0].setPos(p.x())
        lines[1].setPos(p.y())
        x = 10 ** p.x() if view.spec.logx else p.x()
        y = 10 ** p.y() if view.logy else p.y()
        self.readout.setText(f"{view.spec.xlabel or view.spec.x} = {x:.4g}    "
                             f"{view.spec.ylabel or 'y'} = {y:.4g}")

    def current_view(self) -> PlotView | None:
        i = self.tabs.currentIndex()
        return self.views[i] if 0 <= i < len(self.views) else None
