"""The picture of the ``nystrom`` experiment: the training points in two dimensions (their
first two features or principal components, :class:`View`), coloured by their leverage
scores with the landmarks marked, as columns beside the result table (:func:`with_view`).
Shared by the run in memory and the run on partitions."""

from __future__ import annotations

import numpy as np

from kernel_lab.core.nystrom.common import BLOCK_ENTRIES
from kernel_lab.experiments.base import pad_columns

#: The picture shows at most this many training points (a seeded subset) with their scores.
VIEW_MAX = 5_000


def view_coordinates(X: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """2-D coordinates for the picture: the first two features or principal components."""
    if X.shape[1] == 1:
        return X[:, 0], np.zeros(X.shape[0])
    if how == "features" or X.shape[1] == 2:
        return X[:, 0], X[:, 1]
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = Xc @ Vt[:2].T
    return P[:, 0], P[:, 1]


class View:
    """The picture's points: every training point (``rows=None``, coordinates by
    :func:`view_coordinates`), or the seeded subset ``rows`` — then the principal axes come
    from the covariance of all of X accumulated over row blocks (no centred copy of X),
    each axis signed so that its largest component is positive."""

    def __init__(self, X: np.ndarray, how: str, rows: np.ndarray | None) -> None:
        self.X, self.rows = X, rows
        self.axes: np.ndarray | None = None
        if rows is None:
            self.x, self.y = view_coordinates(X, how)
            return
        p = X.shape[1]
        if p > 2 and how != "features":
            self.mean, self.axes = _principal_axes(X)
        self.x, self.y = self.coordinates(rows)

    def coordinates(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates of the training points ``idx`` (the landmarks, say)."""
        if self.rows is None:
            return self.x[idx], self.y[idx]
        return self.project(self.X[idx])

    def project(self, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates of any rows A (on the principal axes when the view has them)."""
        if A.shape[1] == 1:
            return A[:, 0], np.zeros(A.shape[0])
        if self.axes is None:
            return A[:, 0], A[:, 1]
        P = (A - self.mean) @ self.axes
        return P[:, 0], P[:, 1]


def _principal_axes(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mean of X and its first two principal axes (p × 2), from ``X_cᵀX_c`` summed over
    row blocks of at most ``BLOCK_ENTRIES`` entries with every column shifted by its mean
    over the first block."""
    n, p = X.shape
    rows = max(1, BLOCK_ENTRIES // p)
    shift = X[:rows].mean(axis=0)
    C, f = np.zeros((p, p)), np.zeros(p)
    for start in range(0, n, rows):
        B = X[start:start + rows] - shift
        C += B.T @ B
        f += B.sum(axis=0)
    delta = f / n
    _, V = np.linalg.eigh(C - n * np.outer(delta, delta))
    axes = V[:, ::-1][:, :2]
    axes = axes * np.sign(axes[np.argmax(np.abs(axes), axis=0), [0, 1]])
    return shift + delta, axes


def with_view(table: dict[str, np.ndarray], view: View, scores: np.ndarray | None,
              marks: np.ndarray | None, total: int | None = None,
              mark_rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The result table plus the 2-D picture's columns (its points' coordinates and scores,
    the landmarks' coordinates — of the training points ``marks``, or of the rows
    ``mark_rows``), padded to one length; ``total``: the points the drawn ones are of
    (default all of the view's X)."""
    columns = dict(table)
    columns["view_x"], columns["view_y"] = view.x, view.y
    columns["view_total"] = np.array([float(view.X.shape[0] if total is None else total)])
    columns["view_score"] = np.full(view.x.size, np.nan) if scores is None else scores
    lx, ly = (view.coordinates(marks) if marks is not None
              else view.project(mark_rows) if mark_rows is not None
              else (np.zeros(0), np.zeros(0)))
    columns["landmark_x"], columns["landmark_y"] = lx, ly
    return pad_columns(columns)
