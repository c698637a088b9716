"""The zero level set of a 2-D classifier on the grid (marching squares)."""

from __future__ import annotations

import numpy as np

Array = np.ndarray


def zero_contour(values: Array, ticks: Array) -> Array:
    """The zero level set of ``values`` (res × res on ``ticks`` × ``ticks``, x fastest) by
    marching squares, as segment end points in pairs, shape (2k, 2): computed with the fit
    (off the GUI thread), drawn as lines. Saddle cells are resolved by the cell's mean."""
    Z = np.asarray(values, dtype=np.float64)
    pos = Z >= 0
    a, b, c, d = Z[:-1, :-1], Z[:-1, 1:], Z[1:, 1:], Z[1:, :-1]  # cell corners, anticlockwise
    sa, sb, sc, sd = pos[:-1, :-1], pos[:-1, 1:], pos[1:, 1:], pos[1:, :-1]
    x0, x1 = ticks[None, :-1], ticks[None, 1:]
    y0, y1 = ticks[:-1, None], ticks[1:, None]

    def at(v1: Array, v2: Array) -> Array:  # where the linear interpolant crosses 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(v1 != v2, v1 / (v1 - v2), 0.5)
        return np.clip(t, 0.0, 1.0)

    shape = a.shape
    ones = np.ones(shape)
    # the four edges: bottom (a→b), right (b→c), top (d→c), left (a→d)
    px = np.stack([x0 + at(a, b) * (x1 - x0), x1 * ones, x0 + at(d, c) * (x1 - x0), x0 * ones])
    py = np.stack([y0 * ones, y0 + at(b, c) * (y1 - y0), y1 * ones, y0 + at(a, d) * (y1 - y0)])
    cut = np.stack([sa != sb, sb != sc, sd != sc, sa != sd])
    count = cut.sum(axis=0)
    pairs: list[tuple[Array, Array, Array]] = []  # (cells mask, edge i, edge j)
    two = count == 2
    if two.any():
        order = np.argsort(~cut[:, two], axis=0, kind="stable")
        pairs.append((two, order[0], order[1]))
    four = count == 4
    if four.any():
        centre_pos = ((a + b + c + d) / 4 >= 0)[four]
        same = centre_pos == sa[four]  # a and c joined through the centre: b, d cut off
        e0, e1, e2, e3 = (np.full(int(four.sum()), k) for k in range(4))
        pairs.append((four, np.where(same, e0, e0), np.where(same, e1, e3)))
        pairs.append((four, np.where(same, e2, e1), np.where(same, e3, e2)))
    segs = []
    for mask, i, j in pairs:
        cx, cy = px[:, mask], py[:, mask]
        k = np.arange(int(mask.sum()))
        start = np.column_stack([cx[i, k], cy[i, k]])
        end = np.column_stack([cx[j, k], cy[j, k]])
        segs.append(np.stack([start, end], axis=1).reshape(-1, 2))
    return np.concatenate(segs) if segs else np.zeros((0, 2))
