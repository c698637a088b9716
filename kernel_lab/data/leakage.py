"""The leakage warning of a loaded data set: the feature columns whose rank correlation
with the target on the training rows is above :data:`~kernel_lab.core.leakage.LEAKAGE_RHO`
(:func:`~kernel_lab.core.leakage.leaking_columns`), named as the file names them, with the
option that leaves them out. The columns are kept: the user decides."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernel_lab.core.errors import data_option
from kernel_lab.core.leakage import LEAKAGE_RHO, leaking_columns
from kernel_lab.data.columns import join_names


def file_column(feature: str, columns: Sequence[str] | None) -> str:
    """The file's column a feature comes from: itself, or for a one-hot part
    (``region=North``) the text column it encodes."""
    if columns is None or feature in columns:
        return feature
    head = feature.rsplit("=", 1)[0] if "=" in feature else feature
    while head not in columns and "=" in head:
        head = head.rsplit("=", 1)[0]
    return head if head in columns else feature


def leakage_warning(X: np.ndarray, y: np.ndarray, feature_names: Sequence[str],
                    target_name: str, *, columns: Sequence[str] | None = None,
                    rows_said: str | None = None, dropped: Sequence[str] = ()
                    ) -> str | None:
    """The warning for the leaking feature columns of ``X`` (training rows) and ``y``, or
    None when there are none: each feature whose Spearman |ρ| with the target is above
    :data:`~kernel_lab.core.leakage.LEAKAGE_RHO`, and each pair of features the target is
    almost exactly a linear function of (:func:`~kernel_lab.core.leakage.linear_pairs`).

    ``columns``: the file's own columns (to name a text column once, not its one-hot
    parts); ``rows_said``: how the rows were chosen, when not all training rows (a
    sample of a partitioned source); ``dropped``: the columns already left out (the
    option offered keeps them)."""
    found, rho, pairs, rows = leaking_columns(X, y)
    if found.size == 0 and not pairs:
        return None
    said = []
    if found.size:
        said.append("follows " + ", ".join(f"{feature_names[j]!r} (ρ = {r:+.3f})"
                                           for j, r in zip(found, rho, strict=True))
                    + f" almost exactly (Spearman rank correlation above {LEAKAGE_RHO})")
    if pairs:
        said.append("is almost exactly a linear function of " + "; of ".join(
            f"{feature_names[i]!r} and {feature_names[j]!r} together (the fit correlates "
            f"{r:.4f} with it)" for i, j, r in pairs))
    drop: list[str] = []
    for k in [*found.tolist(), *(k for a, b, _ in pairs for k in (a, b))]:
        name = file_column(feature_names[k], columns)
        if name not in drop:
            drop.append(name)
    on = rows_said or (f"the {rows:,} training rows" if rows == X.shape[0] else
                       f"{rows:,} evenly spaced of the {X.shape[0]:,} training rows")
    return (f"possible target leakage: on {on}, the target {target_name!r} "
            f"{' and '.join(said)} — a column derived from the target makes the fit look "
            f"better than it is: leave {'them' if len(drop) > 1 else 'it'} out "
            f"({data_option('drop_columns', join_names([*dropped, *drop]))}) unless "
            f"{'they are' if len(drop) > 1 else 'it is'} known before the target is")
