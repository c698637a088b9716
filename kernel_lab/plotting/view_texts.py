"""The texts of :class:`~kernel_lab.plotting.view.PlotView`: the title fitted to the plot,
the note of a plot with nothing to draw, the note of what its y range leaves off the scale,
and the texts filled from a run's summaries (its legend is
:mod:`~kernel_lab.plotting.legend`'s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class TextParts:
    """The text half of :class:`~kernel_lab.plotting.view.PlotView` (a mixin: it uses the
    view's items and legend)."""

    def _say_empty(self, empty: bool) -> None:
        """Inside a plot that has nothing to draw once the run is over, why (the spec's
        ``empty`` text, else which curves have no value); gone when it has."""
        import pyqtgraph as pg

        if self._empty_label is not None and self._empty_label.isVisible() != empty:
            # an empty plot's made-up range (1 to 10) is no reading: no values, no grid
            self.grid.setVisible(not empty)
            for side in ("left", "bottom"):
                self.item.getAxis(side).setStyle(showValues=not empty)
        if not empty:
            if self._empty_label is not None:
                self._empty_label.hide()
            return
        text = self.spec.empty or ("Nothing to draw: no value of "
                                   + ", ".join(c.text for c in self.spec.curves)
                                   + " in this run.")
        if self._empty_label is None:
            self._empty_label = pg.TextItem(color="#333333", anchor=(0.5, 0.5),
                                            fill=pg.mkBrush(255, 255, 255, 230))
            self._empty_label.setParentItem(self.item.vb)
            self.item.vb.sigResized.connect(self._place_empty_label)
            self.grid.hide()
            for side in ("left", "bottom"):
                self.item.getAxis(side).setStyle(showValues=False)
        if self._empty_label.toPlainText() != text:
            self._empty_label.setText(text)
        self._empty_label.show()
        self._place_empty_label()

    def _say_off_scale(self, text: str) -> None:
        """The note of what the y range leaves out (``text``; "": none), inside the view
        at its top right: no relayout."""
        import pyqtgraph as pg

        if text and self._off_label is None:
            self._off_label = pg.TextItem(color="#B00020", anchor=(1, 0),
                                          fill=pg.mkBrush(255, 255, 255, 215))
            self._off_label.setParentItem(self.item.vb)
            self.item.vb.sigResized.connect(self._place_off_label)
            self._place_off_label()
        if self._off_label is not None and self._off_label.toPlainText() != text:
            self._off_label.setText(text)
            self._place_off_label()

    def _place_off_label(self) -> None:
        """The off-scale note at the top right inside the view, wrapped to its width."""
        label = self._off_label
        if label is None:
            return
        room = max(self.item.vb.width() - 8, 40.0)
        label.setTextWidth(-1)
        if label.textItem.boundingRect().width() > room:
            label.setTextWidth(room)
        label.setPos(self.item.vb.width() - 4, 2)

    def _fit_title(self, *_args: object) -> None:
        """The title cut short ("…") where it is wider than the plot: its whole width
        was the plot's minimum width, and in a docked window the plot and the legend
        beside it ran past the edge (the tab's text has the whole title)."""
        label = self.item.titleLabel
        room = self.item.width() - 12
        if self._title_fit == (self.spec.title, room):
            return
        self._title_fit = (self.spec.title, room)
        text = self.spec.title
        label.setText(text)
        while room > 40 and len(text) > 4 and label.item.boundingRect().width() > room:
            text = text[:-max(1, len(text) // 12)].rstrip(" ,:;")
            label.setText(text + "…")
        label.setMinimumWidth(0)  # set again by each setText

    @property
    def empty_text(self) -> str:
        """What the plot says about having nothing to draw ("" when it does not)."""
        label = self._empty_label
        return label.toPlainText() if label is not None and label.isVisible() else ""

    def _place_empty_label(self) -> None:
        """The empty plot's note in the middle of the view, wrapped to its width."""
        label = self._empty_label
        if label is None:
            return
        vb = self.item.vb
        label.setTextWidth(max(min(vb.width() - 24, 520.0), 60.0))
        label.setPos(vb.width() / 2, vb.height() / 2)

    def set_summaries(self, summaries: Mapping[str, Any] | None) -> bool:
        """Fill the plot's texts from a run's summaries (:meth:`PlotSpec.filled`): the
        title, the axes' labels, the legend's and the colour scale's. Whether a text
        changed (then the legend is made again at the next :meth:`update`)."""
        spec = self.declared.filled(summaries)
        if spec == self.spec:
            return False
        old, self.spec = self.spec, spec
        if spec.title != old.title:
            self._fit_title()
        if spec.xlabel != old.xlabel:
            self.item.setLabel("bottom", spec.xlabel or spec.x)
        if spec.ylabel != old.ylabel:
            self.item.setLabel("left", spec.ylabel)
        if self.colorbar is not None and spec.color_label != old.color_label:
            self.colorbar.setLabel("right", spec.color_label)
        self._clear_legend()
        self._scatter_legend = []
        self._planned = None  # its lines carry the old labels
        return True
