"""From a table to a data set: a seeded subsample of a table too large for the exact
methods, and the seeded train/test split (with standardisation)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from kernel_lab.core.dataset import Dataset, train_test_split
from kernel_lab.core.errors import DataError, data_option
from kernel_lab.data.columns import join_names
from kernel_lab.data.leakage import file_column, leakage_warning
from kernel_lab.data.table import Table


def subsample_table(table: Table, n: int, seed: int) -> Table:
    """At most ``n`` rows of the table, a seeded random subset in file order (a note says
    so); the table itself when it is not larger. A class target is sampled class by class
    (each class keeps its share, and at least one row), so no class disappears."""
    total = len(table.y)
    if n <= 0:
        return table
    if total <= n:
        return replace(table, notes=[*table.notes, f"subsample={n}: all {total:,} rows "
                                                   "used (no more in the table)"])
    rng = np.random.default_rng([seed, 0x5AB5])
    values, codes = np.unique(table.y, return_inverse=True)
    if table.classes is not None or values.size == 2:  # classes: stratified
        share = class_shares(np.bincount(codes), n)
        keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(codes == k), s,
                                                  replace=False)
                                       for k, s in enumerate(share)]))
    else:
        keep = np.sort(rng.choice(total, n, replace=False))
    return replace(table, X=table.X[keep], y=table.y[keep],
                   lines=None if table.lines is None else table.lines[keep],
                   notes=[*table.notes, f"used a random {n:,} of {total:,} rows "
                                        f"(subsample={n}, seed {seed})"])


def class_shares(counts: np.ndarray, n: int) -> np.ndarray:
    """Rows of each class in a stratified sample of ``n`` rows: each class keeps its share
    of the ``counts`` (at least one row), the remainder going to the largest fractions;
    refused when ``n`` cannot hold every class."""
    counts = np.asarray(counts)
    total = int(counts.sum())
    if counts.size > n:
        raise DataError(f"subsample={n} rows cannot hold the {counts.size} classes of "
                        "the target", f"use at least {counts.size} rows")
    share = np.maximum(1, np.floor(counts * n / total)).astype(int)
    for k in np.argsort(-(counts * n / total - share))[: max(0, n - share.sum())]:
        share[k] += 1  # the remainder to the largest fractions
    while share.sum() > n:  # minimum-one shares pushed over: trim the largest
        share[np.argmax(share)] -= 1
    return share


def refuse_empty_columns(empty: Sequence[str], dropped: Sequence[str] = ()) -> None:
    """Refuse feature columns (``empty``: their names) that have missing cells and no
    value in any training row: nothing to fill them with."""
    if not empty:
        return
    raise DataError(
        f"the columns {', '.join(map(repr, empty))} have no value in any training row"
        if len(empty) > 1 else f"the column {empty[0]!r} has no value in any training row",
        f"leave {'them' if len(empty) > 1 else 'it'} out "
        f"({data_option('drop_columns', join_names([*dropped, *empty]))})")


def missing_warning(counts: np.ndarray, feature_names: Sequence[str],
                    columns: Sequence[str] | None = None, dropped: Sequence[str] = ()
                    ) -> str | None:
    """The warning that missing cells were filled with the training means: which columns,
    how many cells (``counts``, per column), and the options that leave those rows or
    columns out instead; None when nothing was missing."""
    cols = np.flatnonzero(counts)
    if cols.size == 0:
        return None
    names: list[str] = []
    for j in cols:
        name = file_column(feature_names[j], columns)
        if name not in names:
            names.append(name)
    said = ", ".join(f"{feature_names[j]!r} {int(counts[j])}" for j in cols)
    total = int(np.sum(counts))
    return (f"filled {total} missing value{'s' if total > 1 else ''} with each column's "
            f"mean over the training rows ({said}): to leave out the rows that have them "
            f"instead, {data_option('drop_nan', 'true')}; to leave out the "
            f"column{'s' if len(names) > 1 else ''}, "
            f"{data_option('drop_columns', join_names([*dropped, *names]))}")


def fill_missing(X_train: np.ndarray, X_test: np.ndarray, feature_names: Sequence[str],
                 columns: Sequence[str] | None = None, dropped: Sequence[str] = ()
                 ) -> str | None:
    """Fill the missing (NaN) cells of each feature column, in place, with the column's
    mean over the *training* rows (the test rows never inform it), and return the
    warning that says so — which columns, how many cells, and the options that leave
    those rows or columns out instead; None when nothing was missing. A column with no
    value in any training row is refused by name."""
    step = 1 << 16  # in row blocks: no n × p temporary
    counts = np.zeros(X_train.shape[1], dtype=np.int64)
    for A in (X_train, X_test):
        for start in range(0, A.shape[0], step):
            counts += np.isnan(A[start:start + step]).sum(axis=0)
    cols = np.flatnonzero(counts)
    if cols.size == 0:
        return None
    sums = np.zeros(cols.size)
    seen = np.zeros(cols.size, dtype=np.int64)
    for start in range(0, X_train.shape[0], step):
        block = X_train[start:start + step, cols]
        ok = ~np.isnan(block)
        sums += np.where(ok, block, 0.0).sum(axis=0)
        seen += ok.sum(axis=0)
    refuse_empty_columns([feature_names[j] for j, k in zip(cols, seen, strict=True)
                          if k == 0], dropped)
    means = sums / seen
    for A in (X_train, X_test):
        for start in range(0, A.shape[0], step):
            block = A[start:start + step, cols]
            hole = np.isnan(block)
            if hole.any():
                A[start:start + step, cols] = np.where(hole, means, block)
    return missing_warning(counts, feature_names, columns, dropped)


def dataset_from_table(table: Table, *, name: str, test_fraction: float,
                       rng: np.random.Generator, standardize: bool,
                       dropped: Sequence[str] = ()) -> Dataset:
    """Split (and optionally standardise) a loaded table, and warn about features that
    leak the target (:func:`~kernel_lab.data.leakage.leakage_warning`; ``dropped``: the
    columns already left out, kept in the option it offers)."""
    Xtr, ytr, Xte, yte = train_test_split(table.X, table.y, test_fraction, rng, name)
    filled = fill_missing(Xtr, Xte, table.feature_names, table.columns, dropped)
    ds = Dataset(Xtr, ytr, Xte, yte, list(table.feature_names), table.target_name,
                 name=name, notes=[*([table.target_note] if table.target_note else []),
                                   *table.notes],
                 classes=None if table.classes is None else list(table.classes),
                 columns=None if table.columns is None else list(table.columns))
    if ds.task != "multiclass":  # class codes have no order to rank
        warning = leakage_warning(Xtr, ytr, ds.feature_names, ds.target_name,
                                  columns=ds.columns, dropped=dropped)
        ds.warnings = [] if warning is None else [warning]
    if filled:
        ds.warnings.insert(0, filled)
    # the split made fresh copies: standardised in place
    return ds.standardized(inplace=True) if standardize else ds
