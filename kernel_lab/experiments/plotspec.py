"""Declarative plots: what an experiment draws, and what each curve *is*.

An experiment declares its plots as :class:`PlotSpec` values; each names its curves as
:class:`Curve` values with a **role** (``limit``, ``empirical``, ``estimate``,
``reference``, ``baseline``, ``measured``, ``choice``), a legend label, whether its
minimum gets a star, which series holds its spread and a legend note read from the table.
Viewers (the window, the headless renderer, the HTML report) style by role and never parse
column names: :func:`resolve_curves` turns a spec and a result table into the concrete lines
to draw, and :func:`legend_entries` into the legend, both without Qt.

Result tables stay keyed by plain column names (they are written to CSV and JSON); a
column is a *series*, optionally of a *group* (a kernel, a method, a sampler), written
``series[group]``. :class:`SeriesKey` is the one place that reads and writes that form.

Texts of a plot (title, axis labels, legend labels) may name what only the run knows — the
table's column on an axis, the sampler whose landmarks are marked — as ``{name|default}``
fields: the run's summary ``name``, else ``default`` (:func:`fill`, :meth:`PlotSpec.filled`).
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: What a curve is; viewers map each role to a line style. A ``choice`` is a point picked
#: by a rule (a λ chosen by an estimator), drawn as a marker alone; a ``flag`` marks points
#: not to be trusted (e.g. where K + λI is near singular), drawn as crosses over them.
ROLES = ("measured", "empirical", "limit", "estimate", "reference", "baseline", "choice",
         "flag")
#: Line dash overrides a curve may declare (else its role decides).
DASHES = ("", "solid", "dash", "dot")
#: The group that stands for "the curve's own group" in an x series (``features[*]``).
ANY_GROUP = "*"


@dataclass(frozen=True, order=True)
class SeriesKey:
    """A result column as a typed key: ``series`` and optional ``group``."""

    series: str
    group: str = ""

    @classmethod
    def parse(cls, column: str) -> SeriesKey:
        """``"R_test_limit[linear]"`` → ``SeriesKey("R_test_limit", "linear")``."""
        if column.endswith("]") and "[" in column:
            head, group = column[:-1].split("[", 1)
            return cls(head, group)
        return cls(column)

    @property
    def column(self) -> str:
        """The column name in a result table."""
        return f"{self.series}[{self.group}]" if self.group else self.series

    def with_group(self, group: str) -> SeriesKey:
        return SeriesKey(self.series, group)


def column(series: str, group: str = "") -> str:
    """The column name of ``series`` in ``group`` (``series[group]``)."""
    return SeriesKey(series, group).column


def fill(text: str, summaries: Mapping[str, Any] | None) -> str:
    """``text`` with each ``{name|default}`` field replaced by the summary ``name`` of
    ``summaries`` (with the field's format spec, ``{n|n:,}``), else by ``default`` (the
    text after ``|``, empty without one): ``"w along {input_a|input a}"`` reads
    "w along CAtBat" once the run says so."""
    if "{" not in text:
        return text
    out = []
    for literal, field, spec, _ in string.Formatter().parse(text):
        out.append(literal)
        if field is None:
            continue
        name, _, default = field.partition("|")
        value = None if summaries is None else summaries.get(name.strip())
        if value is None or value == "":
            out.append(default)
            continue
        try:
            out.append(format(value, spec or ""))
        except (TypeError, ValueError):
            out.append(str(value))
    return "".join(out)


@dataclass(frozen=True)
class Curve:
    """One declared curve (or family of curves, one per group) of a plot.

    Parameters
    ----------
    series : str
        The result series drawn: the column ``series`` itself or every ``series[group]``.
    role : str
        One of :data:`ROLES`; decides the line style.
    label : str
        Legend text. For grouped series the legend shows one entry per group (its colour)
        and one per label (its line style); default: the series name, readable.
    star : bool
        Mark the curve's minimum with a star (λ* of a risk curve).
    spread : str
        A series holding the curve's ± spread (drawn as a shaded band on linear y axes).
    dash : str
        Override the role's dash: ``"solid"``, ``"dash"`` or ``"dot"``.
    note : str
        A legend text per line, read from the table at the line's first finite point: a
        format string over ``group`` and series of the table (taken in the line's group),
        e.g. ``"{group}: {cost_pct:+.1f} %"``. The legend shows the curve's style and
        label, then an entry per line with its marker as the sample.
    color : str
        For an ungrouped series, the colour group it shares with the curves of the same
        method in other plots (``"KRR"`` for test and training error alike); default: the
        series itself. Grouped series take their group's colour.
    """

    series: str
    role: str = "measured"
    label: str = ""
    star: bool = False
    spread: str = ""
    dash: str = ""
    note: str = ""
    color: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"curve {self.series!r}: role {self.role!r} is not one of {ROLES}")
        if self.dash not in DASHES:
            raise ValueError(f"curve {self.series!r}: dash {self.dash!r} is not one of {DASHES}")
        try:
            _ = self.note_fields
        except ValueError as exc:
            raise ValueError(f"curve {self.series!r}: note {self.note!r}: {exc}") from None

    @property
    def note_fields(self) -> tuple[str, ...]:
        """The series a note reads (its format fields other than ``group``)."""
        fields = (f for _, f, _, _ in string.Formatter().parse(self.note) if f is not None)
        return tuple(f for f in fields if f != "group")

    @property
    def text(self) -> str:
        return self.label or self.series.replace("_", " ")

    def to_dict(self) -> dict[str, Any]:
        return {"series": self.series, "role": self.role, "label": self.text,
                "star": self.star, "spread": self.spread, "dash": self.dash,
                "note": self.note, "color": self.color}


@dataclass(frozen=True)
class PlotSpec:
    """A plot an experiment produces.

    ``kind="lines"``: each curve of ``curves`` against the column ``x``; an ``x`` of the
    form ``name[*]`` takes each curve's own group (``time[uniform]`` for
    ``error[uniform]``). A series missing from the table (e.g. the noiseless risk on real
    data) is skipped.

    ``kind="scatter"``: points (``x``, ``curves[0].series``) coloured by the column
    ``color`` on a scale shown beside the plot and labelled ``color_label``, with the
    points ``overlay`` = (x column, y column) marked on top and labelled
    ``overlay_label``. When the column ``total`` holds more points than are drawn (a
    subset of a large data set), the legend says "k of N".

    ``empty``: what a plot with nothing to draw says inside it once the run is over (why
    there is nothing: no exact floor for this loss, say).

    Titles, labels and ``empty`` may hold ``{summary|default}`` fields (:func:`fill`).
    """

    title: str
    x: str
    curves: tuple[Curve, ...]
    xlabel: str = ""
    ylabel: str = ""
    logx: bool = False
    logy: bool = False
    #: Fix the y range to that of these series, without their isolated spikes (for curves
    #: that can blow up); the view says how many points of the others it leaves out.
    y_range_from: tuple[str, ...] = ()
    #: The y values are risks or errors (positive): the window offers a log y axis, and
    #: isolated spikes (an exploding curve) are left off the scale
    #: (:func:`robust_range`). Spectra and histograms keep their peaks.
    positive: bool = False
    kind: str = "lines"
    color: str = ""
    overlay: tuple[str, str] | tuple[()] = ()
    overlay_label: str = ""
    total: str = ""
    color_label: str = ""
    empty: str = ""
    #: The legend shows the kind of curve (its style and label) of grouped lines even
    #: when there is one kind: its label says something the groups do not (that the
    #: error is a subset's, a lower bound).
    legend_kinds: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("lines", "scatter"):
            raise ValueError(f"plot {self.title!r}: kind must be 'lines' or 'scatter'")
        if not self.curves:
            raise ValueError(f"plot {self.title!r} declares no curve")

    @property
    def series(self) -> tuple[str, ...]:
        return tuple(c.series for c in self.curves)

    def filled(self, summaries: Mapping[str, Any] | None) -> PlotSpec:
        """The plot with its texts filled from a run's ``summaries`` (:func:`fill`);
        before a run (None) every field reads its default."""
        curves = tuple(replace(c, label=fill(c.label, summaries)) if "{" in c.label else c
                       for c in self.curves)
        return replace(self, title=fill(self.title, summaries),
                       xlabel=fill(self.xlabel, summaries),
                       ylabel=fill(self.ylabel, summaries),
                       overlay_label=fill(self.overlay_label, summaries),
                       color_label=fill(self.color_label, summaries),
                       empty=fill(self.empty, summaries), curves=curves)

    @property
    def stars(self) -> bool:
        """Whether any curve of the plot gets a star at its minimum."""
        return any(c.star for c in self.curves)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "x": self.x, "curves": [c.to_dict() for c in self.curves],
                "xlabel": self.xlabel, "ylabel": self.ylabel, "logx": self.logx,
                "logy": self.logy, "y_range_from": list(self.y_range_from),
                "positive": self.positive,
                "kind": self.kind, "color": self.color, "overlay": list(self.overlay),
                "overlay_label": self.overlay_label, "color_label": self.color_label,
                "empty": self.empty, "legend_kinds": self.legend_kinds}


@dataclass(frozen=True)
class CurveLine:
    """One line to draw: a table column, its x column, its declaration and colour group."""

    key: SeriesKey
    x: str
    curve: Curve
    spread: str | None

    @property
    def column(self) -> str:
        return self.key.column

    @property
    def group(self) -> str:
        """Lines of one group share a colour: the group (a kernel), else the curve's
        declared colour group (a method), else the column."""
        return self.key.group or self.curve.color or self.key.column

    @property
    def grouped(self) -> bool:
        return bool(self.key.group)


def _x_column(spec: PlotSpec, key: SeriesKey) -> str:
    x = SeriesKey.parse(spec.x)
    return x.with_group(key.group).column if x.group == ANY_GROUP else spec.x


def resolve_curves(spec: PlotSpec, columns: Iterable[str]) -> list[CurveLine]:
    """The lines ``spec`` draws from a table with ``columns``: for each declared curve in
    turn, the matching columns in table order, each with its x column and spread column
    (when present in the table)."""
    keys = [SeriesKey.parse(c) for c in columns]
    present = {k.column for k in keys}
    out: list[CurveLine] = []
    seen: set[str] = set()
    for curve in spec.curves:
        for key in keys:
            if key.series != curve.series or key.column in seen:
                continue
            x = _x_column(spec, key)
            if x not in present:
                continue
            spread = SeriesKey(curve.spread, key.group).column if curve.spread else None
            seen.add(key.column)
            out.append(CurveLine(key, x, curve, spread if spread in present else None))
    return out


@dataclass(frozen=True)
class LegendEntry:
    """A legend line: ``column`` (an ungrouped line or a ``note``: its own item is the
    sample), or a ``group`` colour sample, or a ``curve`` style sample (role and dash,
    neutral colour). A note's text follows the table (see :func:`note_text`)."""

    key: str
    text: str
    column: str = ""
    group: str = ""
    curve: Curve | None = None
    note: bool = False


def note_text(line: CurveLine, table: Mapping[str, Any] | None) -> str:
    """The legend text of a line of a curve with a ``note``, formatted from the table at
    the line's first finite point; the group (else the curve's label) until there is one
    or when a series the note reads is missing."""
    fallback = line.key.group or line.curve.text
    column = table.get(line.column, ()) if table is not None else ()
    row = next((i for i, v in enumerate(column) if v is not None and math.isfinite(v)), None)
    if row is None:
        return fallback
    values: dict[str, Any] = {"group": line.key.group}
    for name in line.curve.note_fields:
        col = table.get(SeriesKey(name, line.key.group).column)
        if col is None or row >= len(col) or col[row] is None or not math.isfinite(col[row]):
            return fallback
        values[name] = float(col[row])
    return line.curve.note.format_map(values)


def legend_entries(spec: PlotSpec, lines: list[CurveLine],
                   table: Mapping[str, Any] | None = None) -> list[LegendEntry]:
    """Per-line entries for ungrouped lines; for grouped ones one entry per group (its
    colour) then one per kind of curve (its line style) when there are several kinds, so
    four kernels × three kinds need seven lines, not twelve. A curve with a ``note``
    comes last: its style and label, then an entry per line with the text read from
    ``table`` (:func:`note_text`)."""
    entries: list[LegendEntry] = []
    notes: list[LegendEntry] = []
    kinds: list[LegendEntry] = []
    keys: set[str] = set()
    for line in lines:
        if line.curve.note:  # its style under its label, then one entry per line
            head = LegendEntry(f"kind:{line.curve.text}", line.curve.text, curve=line.curve)
            if head.key not in {k.key for k in notes}:
                notes.append(head)
            notes.append(LegendEntry(f"note:{line.column}", note_text(line, table),
                                     column=line.column, note=True))
            continue
        if not line.grouped:
            entry = LegendEntry(f"col:{line.column}", line.curve.text, column=line.column)
        else:
            entry = LegendEntry(f"group:{line.group}", line.group, group=line.group)
            kind = LegendEntry(f"kind:{line.curve.text}", line.curve.text, curve=line.curve)
            if kind.key not in {k.key for k in kinds}:
                kinds.append(kind)
        if entry.key not in keys:
            keys.add(entry.key)
            entries.append(entry)
    shown = len(kinds) > 1 or (kinds and spec.legend_kinds)
    return entries + (kinds if shown else []) + notes


@dataclass(frozen=True)
class OffScale:
    """A y range that leaves out isolated spikes, and what it leaves out."""

    low: float          # the range, in data units
    high: float
    above: int          # values above the range
    below: int          # values below it (log axes, or a fixed range)
    worst: float        # the value farthest above (else below) the range

    @property
    def text(self) -> str:
        parts = []
        if self.above:
            parts.append(f"▲ {self.above} point{'s' if self.above > 1 else ''} above the "
                         f"scale (up to {self.worst:.3g})")
        if self.below and self.above:
            parts.append(f"▼ {self.below} below it")
        elif self.below:
            parts.append(f"▼ {self.below} point{'s' if self.below > 1 else ''} below the "
                         f"scale (down to {self.worst:.3g})")
        return ", ".join(parts)


#: Spikes are values beyond the quartiles by this many interquartile ranges …
SPIKE_IQR = 3.0
#: … and, for positive values, by at least this factor on a log axis (a decade) …
SPIKE_FACTOR = 10.0
#: … or this one on a linear axis, where a point ten times higher leaves the others a
#: tenth of the plot.
SPIKE_FACTOR_LINEAR = 3.0
#: A stretch of a line beyond the range is a spike only when it is *isolated*: the line
#: jumps into it, out of it or inside it by more than this factor (or, for values of
#: both signs, by more than the spike width); a line that walks out of the range in
#: smaller steps — the start of a learning curve, a risk rising at large λ — is drawn.
JUMP_FACTOR = 10.0


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The maximal stretches ``[start, stop)`` where ``mask`` is true."""
    import numpy as np

    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def robust_range(columns: Iterable[Any], logy: bool = False,
                 untrusted: Iterable[Any] | None = None) -> OffScale | None:
    """The y range of a plot's lines without isolated spikes, or None when there are
    none. One exploding curve (an indefinite kernel's risk) then no longer flattens the
    others; the viewer says how many points lie off the scale.

    ``columns`` are the plot's lines, each in the order of its x. Candidates are values
    beyond the quartiles of all points by :data:`SPIKE_IQR` interquartile ranges (and,
    for positive values, by a factor :data:`SPIKE_FACTOR` on log axes,
    :data:`SPIKE_FACTOR_LINEAR` on linear ones; ratios measured on a log scale); below
    the range only on log axes (on a linear one small values are in view anyway). Of
    these, a stretch of consecutive candidates of one line is left out only when it is
    isolated: a step of the line from its neighbours in range, or within it, exceeds
    :data:`JUMP_FACTOR`. A curve that falls or rises steadily is never a spike.

    ``untrusted`` (one boolean mask per column) marks points a plot flags as not to be
    trusted (K + λI near singular): they do not set the range, and those beyond it are
    off the scale too (below it on linear axes they widen it)."""
    import numpy as np

    lines, doubts = [], []
    masks = list(untrusted) if untrusted is not None else None
    for i, c in enumerate(columns):
        c = np.asarray(c, dtype=np.float64).ravel()
        ok = np.isfinite(c) & (c > 0) if logy else np.isfinite(c)
        u = np.zeros(c.shape, bool) if masks is None else np.asarray(masks[i], bool).ravel()
        lines.append(c[ok & ~u])
        doubts.append(c[ok & u])
    v = np.concatenate(lines or [np.zeros(0)])
    doubt = np.concatenate(doubts or [np.zeros(0)])
    if v.size < 8:
        return None
    positive = bool((v > 0).all())
    t = np.log10(v) if positive else v
    q25, q75 = np.percentile(t, [25, 75])
    width = SPIKE_IQR * (q75 - q25)
    if positive:
        width = max(width, math.log10(SPIKE_FACTOR if logy else SPIKE_FACTOR_LINEAR))
    elif width == 0:
        return None
    high, low = q75 + width, (q25 - width if logy else -math.inf)
    jump = math.log10(JUMP_FACTOR) if positive else width
    up_parts, down_parts = [], []
    for line in lines:
        tl = np.log10(line) if positive else line
        up, down = tl > high, tl < low
        for side, parts in ((up, up_parts), (down, down_parts)):
            keep = side.copy()
            for a, b in _runs(side):
                chain = tl[max(a - 1, 0):b + 1]  # the stretch and its neighbours
                if chain.size < 2 or np.abs(np.diff(chain)).max() <= jump:
                    keep[a:b] = False  # the line walks there: part of the curve
            parts.append(keep)
    up = np.concatenate(up_parts) if up_parts else np.zeros(0, bool)
    down = np.concatenate(down_parts) if down_parts else np.zeros(0, bool)
    inside = v[~(up | down)]
    lo, hi = float(inside.min()), float(inside.max())
    if not logy and doubt.size:  # small values are in view on a linear axis
        lo = min(lo, float(doubt.min()))
    # a spike inside the range of the other points (a steadily rising curve may pass it)
    # is drawn: only what lies beyond the range is off the scale
    over, under = v[up & (v > hi)].tolist() + doubt[doubt > hi].tolist(), \
        v[down & (v < lo)].tolist() + doubt[doubt < lo].tolist()
    if not (over or under):
        return None
    worst = max(over) if over else min(under)
    return OffScale(lo, hi, len(over), len(under), float(worst))


#: The most points a pinned curve keeps and draws (:func:`thin_table`,
#: :func:`peak_rows`). A pin is a faint overlay to compare with: a thousand buckets,
#: about one per pixel column of a plot, keep its shape. Drawn whole, 10,000 points of a
#: noisy curve took a second of the window's paint and 1.16 million more than 150 s.
PIN_MAX_POINTS = 2000


def peak_rows(columns: Iterable[Any], max_rows: int = PIN_MAX_POINTS) -> np.ndarray:
    """At most ``max_rows`` row indices (ascending) that keep the shape of ``columns``
    (equally long, in the order the line is drawn): the rows are cut into buckets of
    consecutive rows, and of each bucket the first and last rows are kept and, for each
    column, the rows of its smallest and largest finite values — the min/max
    ("peak") decimation of plots, so that spikes survive. All rows when there are no
    more than ``max_rows``; fewer buckets are taken until the rows kept fit."""
    import numpy as np

    cols = [np.asarray(c, dtype=np.float64).ravel() for c in columns]
    n = cols[0].size if cols else 0
    if n <= max_rows:
        return np.arange(n)
    if max_rows < 2:
        return np.arange(min(n, max(max_rows, 0)))
    buckets = max_rows // 2
    while True:
        size = -(-n // buckets)
        starts = np.arange(0, n, size)
        kept = [starts, np.minimum(starts + size - 1, n - 1)]
        pad = starts.size * size - n
        for c in cols:
            block = np.r_[c, np.full(pad, np.nan)].reshape(starts.size, size)
            finite = np.isfinite(block)
            some = finite.any(axis=1)
            lo = np.where(finite, block, np.inf).argmin(axis=1)
            hi = np.where(finite, block, -np.inf).argmax(axis=1)
            kept += [(starts + lo)[some], (starts + hi)[some]]
        rows = np.unique(np.concatenate(kept))
        if rows.size <= max_rows or buckets == 1:
            return rows[:max_rows]
        buckets = max(1, buckets * max_rows // rows.size - 1)


def thin_table(table: Mapping[str, Any], max_rows: int = PIN_MAX_POINTS
               ) -> dict[str, np.ndarray]:
    """``table`` as float arrays, its longer columns cut to at most ``max_rows`` rows by
    :func:`peak_rows`: columns of one length (a curve and its x) keep the same rows, so
    every line drawn from them keeps its shape. How pinned curves are stored."""
    import numpy as np

    out = {k: np.array(v, dtype=np.float64).ravel() for k, v in table.items()}  # copies
    lengths = {v.size for v in out.values() if v.size > max_rows}
    for length in lengths:
        names = [k for k, v in out.items() if v.size == length]
        rows = peak_rows([out[k] for k in names], max_rows)
        out.update({k: out[k][rows] for k in names})
    return out
