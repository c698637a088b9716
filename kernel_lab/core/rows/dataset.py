"""The data a run uses in memory: a :class:`Dataset` (train and test arrays, names, notes,
and for synthetic data its :class:`~kernel_lab.core.synthetic.SyntheticSource`).

A data set is one part of the row layer (:attr:`Dataset.parts`: a
:class:`~kernel_lab.core.rows.mapreduce.MemoryPart` that hands out views of its arrays), so
every computation written for parts runs on it. A table's keyed split is made in
:mod:`kernel_lab.data.split`; rows kept in partitions are a
:class:`~kernel_lab.core.rows.partitioned.PartitionedData` with the same interface.
Reading files, the generators and the bundled examples live in :mod:`kernel_lab.data`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from kernel_lab.core.rows.mapreduce import LocalParts, MemoryPart, RowPlan, Rows, split_signature
from kernel_lab.core.synthetic import SyntheticSource


# ======================================================================================
# Dataset
# ======================================================================================
@dataclass
class Dataset:
    """Train and test arrays with their names and, for synthetic data, the truth.

    Attributes
    ----------
    X_train : ndarray, shape (n, p)
    y_train : ndarray, shape (n,)
    X_test : ndarray, shape (m, p)
    y_test : ndarray, shape (m,)
    feature_names : list of str
    target_name : str
    name : str
        The specification the data came from.
    f_train, f_test : ndarray, optional
        Noiseless target values (synthetic data only).
    source : SyntheticSource, optional
        The generating process, for fresh draws and for the theory.
    notes : list of str
        What was done to the data (rows dropped, standardisation, …).
    plan : RowPlan, optional
        The split the rows came from, with the filling and scaling they were prepared
        by; ``i_train``/``i_test`` the sorted global indices of the training and test rows
        (the arrays hold the rows in that order). Without them the arrays are a *given*
        split (:meth:`RowPlan.given`): global rows ``0 … n_train − 1`` train, the next
        ``n_test`` test.

    The data set is one part of the row layer: :attr:`parts` runs every computation
    written for parts on its arrays (views, no copy), with the numbers of the same rows
    kept in files and prepared by the same plan.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]
    target_name: str
    name: str = ""
    f_train: np.ndarray | None = None
    f_test: np.ndarray | None = None
    source: SyntheticSource | None = None
    notes: list[str] = field(default_factory=list)
    #: Class names when the target holds class codes 0 … K−1 (more than two classes).
    classes: list[str] | None = None
    #: A table's own column names before encoding (a text column before one-hot).
    columns: list[str] | None = None
    #: What the user should look at before trusting a result (target leakage, …).
    warnings: list[str] = field(default_factory=list)
    plan: RowPlan = None  # type: ignore[assignment]  # set in __post_init__ when None
    i_train: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    i_test: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    #: How the table's columns were typed when it was read (opaque here: a JSON-able
    #: dict the data layer writes and reads, see ``kernel_lab.data.encoding``); None for
    #: generated data.
    encoding: Any = None

    def __post_init__(self) -> None:
        n_train, n_test = int(self.X_train.shape[0]), int(self.X_test.shape[0])
        if self.plan is None:
            self.plan = RowPlan.given(n_train + n_test, n_test)
        if self.i_train is None or self.i_test is None:
            start = self.plan.given_test_start
            if start is None or start != n_train or self.plan.n_dropped:
                raise ValueError("a data set with a keyed split needs its rows' global "
                                 "indices (i_train, i_test)")
            self.i_train = np.arange(n_train)
            self.i_test = np.arange(n_train, n_train + n_test)
        if (self.i_train.size, self.i_test.size) != (n_train, n_test) or \
                (self.plan.n_train, self.plan.n_test) != (n_train, n_test):
            raise ValueError(f"{n_train} training and {n_test} test rows do not match the "
                             f"plan's {self.plan.n_train} and {self.plan.n_test}")

    @cached_property
    def parts(self) -> LocalParts:
        """The data set as one part (:class:`~kernel_lab.core.rows.mapreduce.MemoryPart`),
        built on first use: the arrays themselves, not copies."""
        return LocalParts([MemoryPart(0, 0, self.plan.n, self.X_train, self.y_train,
                                      self.i_train, self.X_test, self.y_test, self.i_test,
                                      split_signature(self.plan))])

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    @property
    def p(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def task(self) -> str:
        """``"multiclass"`` for a target of class codes (``classes`` set, more than two),
        ``"classification"`` if the target takes exactly two values, else ``"regression"``."""
        if self.classes is not None and len(self.classes) > 2:
            return "multiclass"
        values = np.unique(np.concatenate([self.y_train, self.y_test]))
        return "classification" if values.size == 2 else "regression"

    #: Every row is in this process's memory (data kept in partitions say False): what
    #: reads every training row at once — the window's theory preview — asks this.
    in_memory = True

    def first_rows(self, rows: int = 8) -> Rows:
        """The first ``rows`` training rows as the methods see them (views, no copy), as
        data kept in partitions give theirs; ``index`` is their position among the
        training rows."""
        k = min(rows, self.n_train)
        return Rows(self.X_train[:k], self.y_train[:k], np.arange(k))

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable description (sizes, target range, notes)."""
        y = np.concatenate([self.y_train, self.y_test])
        return {
            "name": self.name,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "p": self.p,
            "partitions": 1,
            "target": self.target_name,
            "target_min": float(y.min()),
            "target_max": float(y.max()),
            "task": self.task,
            "classes": None if self.classes is None else list(self.classes),
            "synthetic": self.source is not None,
            "truth": None if self.source is None else self.source.truth.text,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }
