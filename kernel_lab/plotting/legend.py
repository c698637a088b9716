"""The legend of :class:`~kernel_lab.plotting.view.PlotView`: in the column to the right of
the plot (so it never hides data), its entries added as their lines get points, sized to
what they ask for, and read back for tests and tools."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from kernel_lab.experiments.plotspec import CurveLine, legend_entries
from kernel_lab.plotting.styles import curve_style

#: The legend's column is this wide (pixels, times the view's scale) …
LEGEND_WIDTH = 190
#: … widened up to this for long entries (they ran past the picture's edge).
LEGEND_MAX_WIDTH = 340
#: The legend starts this far below the top of its row (level with the plot's top).
LEGEND_TOP = 28


class LegendParts:
    """The legend half of :class:`~kernel_lab.plotting.view.PlotView` (a mixin: it uses
    the view's curves, spec, scale and colour scale)."""

    def _make_legend(self, layout: object, row: int) -> None:
        """The legend in column 1 of ``row`` of ``layout``, empty, at its narrowest
        (:data:`LEGEND_WIDTH`) and :data:`LEGEND_TOP` below the row's top."""
        import pyqtgraph as pg

        scale = self.scale
        self._holder = holder = layout.addLayout(row=row, col=1)
        holder.setFixedWidth(LEGEND_WIDTH * scale)
        self.legend = pg.LegendItem(verSpacing=-6, labelTextSize=f"{9 * scale:.0f}pt")
        self.legend.setParentItem(holder)
        # at a fixed place in the holder: what pyqtgraph's anchor of the two top-left
        # corners computes, without the anchor — which follows the holder's
        # geometryChanged and, when a deleted window's plots were destroyed later during
        # another's event loop, reached a holder already gone ("Internal C++ object
        # (GraphicsLayout) already deleted")
        self.legend.setPos(0, LEGEND_TOP * scale)
        self._legend_keys: set[str] = set()
        self._legend_samples: list[object] = []
        #: the legend's entries in order (their keys), and the columns of the lines a
        #: colour or style sample stands for
        self._legend_order: list[str] = []
        self._legend_columns: dict[str, list[str]] = {}
        self._note_labels: dict[str, object] = {}  # legend labels that follow the table

    def _sync_legend(self, lines: list[CurveLine], colors: Mapping[str, str],
                     table: Mapping[str, Sequence[float] | np.ndarray],
                     deadline: float | None = None, busy: bool = False) -> None:
        """Add the legend entries that are not there yet and update the texts of notes
        (see :func:`~kernel_lab.experiments.plotspec.legend_entries`); after
        ``deadline`` (a ``perf_counter`` time) new entries wait for the next call, in
        their order, and :attr:`complete` is False — but one is added if the call did
        nothing else (``busy``: it drew curves)."""
        import html

        import pyqtgraph as pg

        entries = legend_entries(self.spec, lines, table)
        keys = [e.key for e in entries]
        if keys[:len(self._legend_order)] != self._legend_order:
            # a line lost its points, or one declared before those listed got some (the
            # floor's line comes first, DSG's later): the legend afresh, in declared order
            self._clear_legend()
        for entry in entries:
            # a label's line breaks are kept (a long one in two lines, not past the edge)
            text = html.escape(entry.text, quote=False).replace("\n", "<br>")
            if entry.key in self._legend_keys:
                label = self._note_labels.get(entry.key)
                if label is not None and label.text != text:
                    label.setText(text)
                continue
            if deadline is not None and busy and time.perf_counter() > deadline:
                self.complete = False
                break
            busy = True
            self._legend_keys.add(entry.key)
            self._legend_order.append(entry.key)
            if entry.column:  # an ungrouped line or a note: its own curve is the sample
                self.legend.addItem(self.curves[entry.column], text)
                if entry.note:
                    self._note_labels[entry.key] = self.legend.items[-1][1]
                continue
            if entry.group:
                style: dict[str, object] = {"pen": pg.mkPen(colors[entry.group], width=6)}
                self._legend_columns[entry.key] = [ln.column for ln in lines
                                                   if ln.group == entry.group]
            else:
                assert entry.curve is not None
                style = curve_style(entry.curve, "#555555")
                self._legend_columns[entry.key] = [ln.column for ln in lines
                                                   if ln.curve.text == entry.curve.text]
            sample = pg.PlotDataItem([], [], **style)
            self._legend_samples.append(sample)
            self.legend.addItem(sample, text)
        self._fit_legend()

    def _fit_legend(self) -> None:
        """The legend at the size its entries ask for. pyqtgraph sums the entries'
        current heights on each new entry, and those are stretched to the legend's
        last size: each entry grew the legend further (13 entries took 500 pixels and
        ran into the next plot's legend)."""
        from PySide6 import QtCore

        hint = self.legend.layout.effectiveSizeHint(QtCore.Qt.SizeHint.PreferredSize)
        if abs(self.legend.height() - hint.height()) > 0.5 or \
                abs(self.legend.width() - hint.width()) > 0.5:
            self.legend.setGeometry(0, 0, hint.width(), hint.height())
        column = float(np.clip(hint.width() + 8, LEGEND_WIDTH * self.scale,
                               LEGEND_MAX_WIDTH * self.scale))
        if abs(self._holder.maximumWidth() - column) > 0.5:
            self._holder.setFixedWidth(column)
        self._place_colorbar()

    def _clear_legend(self) -> None:
        """No legend entry (they are added again by the next update)."""
        self.legend.clear()
        self._legend_keys.clear()
        self._legend_samples.clear()
        self._note_labels.clear()
        self._legend_order.clear()
        self._legend_columns.clear()

    def legend_height(self) -> float:
        """The height the legend takes below the top of its row (pixels)."""
        return LEGEND_TOP * self.scale + self.legend.boundingRect().height()

    def legend_texts(self) -> list[tuple[str, list[object]]]:
        """Each legend entry's text and the plot items it stands for: its own line or
        points, or the lines of its colour group or of its kind of curve (for tests and
        tools that check a legend against the picture)."""
        out = []
        for (sample, label), key in zip(self.legend.items, self._legend_order, strict=True):
            columns = self._legend_columns.get(key)
            if columns is not None:
                items = [self.curves[c] for c in columns if c in self.curves]
            elif sample.item is self.curves.get("points"):  # a scatter plot's points
                items = list(self._levels)
            else:
                items = [sample.item]
            out.append((label.text, items))
        return out

    def detach(self) -> None:
        """Cut what follows ``geometryChanged`` of the holder, the legend and the plot
        before the widget is deleted at once: a signal sent while the C++ items are being
        destroyed would reach an item already gone. (The legend itself has no anchor to
        its holder: see :meth:`_make_legend`.)"""
        for item in (self._holder, self.legend, self.item):
            try:
                item.geometryChanged.disconnect()
            except (RuntimeError, TypeError):  # nothing connected, or already deleted
                pass
