"""A data set whose rows stay in their partitions (:class:`PartitionedData`), and the
gather of its prepared rows when something needs every row at once (checked against the
memory budget first, :func:`check_gather`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_lab.core.errors import data_option
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.rows.mapreduce import PartMap, RowPlan, Rows, part_rows


@dataclass
class PartitionedData:
    """A data set that stays in its partitions, with the interface of a data set in memory
    (:class:`~kernel_lab.core.rows.dataset.Dataset`): an experiment takes either alike.

    ``parts`` runs computations on the partitions (in this process or on a cluster);
    ``plan`` says which rows train and test and how columns are standardised. What needs
    every row at once reads :attr:`X_train` … : the prepared rows gathered in global row
    order, checked first against the memory budget (refused, with the seeded sample
    offered, when they do not fit)."""

    parts: PartMap
    plan: RowPlan
    feature_names: list[str]
    target_name: str
    name: str = ""
    notes: list[str] = field(default_factory=list)
    #: "regression", "classification" (a target with two values) or "multiclass" (class
    #: codes 0 … K−1 of a text target, named by :attr:`classes`), from the source.
    task: str = "regression"
    #: The class names of a text target with more than two values (codes 0 … K−1).
    classes: list[str] | None = None
    #: The first training rows (for a preview), once :meth:`first_rows` has read them.
    head: Rows | None = None
    #: What the user should look at before trusting a result (target leakage, …).
    warnings: list[str] = field(default_factory=list)
    #: How the source's columns were typed when it was opened (opaque here: a JSON-able
    #: dict of the data layer, see ``kernel_lab.data.encoding``).
    encoding: Any = None

    @property
    def n_train(self) -> int:
        return self.plan.n_train

    @property
    def n_test(self) -> int:
        return self.plan.n_test

    @property
    def p(self) -> int:
        return len(self.feature_names)

    #: The rows stay in their partitions until something reads every training row at
    #: once (:attr:`X_train` …, gathered when they fit in memory).
    in_memory = False
    #: A table's own column names before encoding (a text column before one-hot): the
    #: partitioned readers name the stored columns themselves, so none.
    columns = None
    #: No generating process and no noiseless target: the rows come from files.
    source = None
    f_train = None
    f_test = None
    #: The gathered rows (:meth:`gathered`), by ``"train"`` / ``"test"``.
    _gathered: dict[str, Rows] = field(default_factory=dict, repr=False, compare=False)

    def gathered(self, which: str = "train") -> Rows:
        """Every training (or test) row, prepared as the computations see them (filled,
        standardised), in global row order, read from the partitions once and kept.

        Raises
        ------
        MemoryBudgetError
            When the rows do not fit in the memory budget: the error names the data, the
            size, and the seeded sample (``subsample=N``) that would fit.
        """
        rows = self._gathered.get(which)
        if rows is None:
            check_gather(self, which)
            rows = gather_rows(self.parts, self.plan, which)
            self._gathered[which] = rows
        return rows

    @property
    def X_train(self) -> np.ndarray:
        """The training rows, prepared, in global row order (:meth:`gathered`)."""
        return self.gathered("train").X

    @property
    def y_train(self) -> np.ndarray:
        return self.gathered("train").y

    @property
    def X_test(self) -> np.ndarray:
        """The test rows, prepared, in global row order (:meth:`gathered`)."""
        return self.gathered("test").X

    @property
    def y_test(self) -> np.ndarray:
        return self.gathered("test").y

    def first_rows(self, rows: int = 8) -> Rows:
        """The first ``rows`` training rows (standardised), read from the first partitions
        that have any, and kept in :attr:`head`."""
        if self.head is None or self.head.index.size < rows:
            got: list[Rows] = []
            for part in self.parts.parts:
                got.append(part_rows(part, self.plan))
                if sum(r.index.size for r in got) >= rows:
                    break
            self.head = Rows(np.concatenate([r.X for r in got])[:rows],
                             np.concatenate([r.y for r in got])[:rows],
                             np.concatenate([r.index for r in got])[:rows])
        return self.head

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "n_train": self.n_train, "n_test": self.n_test,
                "p": self.p, "partitions": len(self.parts.parts), "target": self.target_name,
                "task": self.task, "notes": list(self.notes),
                "classes": None if self.classes is None else list(self.classes),
                "synthetic": False, "truth": None, "warnings": list(self.warnings)}


#: How many copies of the gathered rows exist at once while they are joined: each
#: part's rows, then the joined array.
GATHER_COPIES = 2


def gather_bytes(data: PartitionedData, which: str = "train") -> int:
    """Peak bytes of gathering the training (or test) rows of ``data`` into memory
    (float64 features and target, :data:`GATHER_COPIES` copies while they are joined)."""
    n = data.n_train if which == "train" else data.n_test
    return GATHER_COPIES * 8 * n * (data.p + 1)


def check_gather(data: PartitionedData, which: str = "train") -> None:
    """Refuse (:class:`~kernel_lab.core.errors.MemoryBudgetError`) to gather rows that do
    not fit in the memory budget, naming the data, the size and the seeded sample."""
    n = data.n_train if which == "train" else data.n_test
    where = f"of {data.name}" if data.name else "of the data"
    k = len(data.parts.parts)
    check_allocation(
        gather_bytes(data, which),
        f"all {n:,} {'training' if which == 'train' else 'test'} rows {where} "
        f"({n:,} × {data.p} values, kept in {k} partition{'s' if k != 1 else ''}) read "
        "into memory at once",
        f"Use a seeded sample of the rows ({data_option('subsample', 'N')}, e.g. 2000), "
        "or an experiment that works on the rows where they are (nystrom, learning-curve).")


def gather_rows(parts: PartMap, plan: RowPlan, which: str = "train") -> Rows:
    """Every training (or test) row of the parts, prepared by the plan, in global row
    order (the parts are in row order): one map over the parts, each sending back its
    rows. The caller checks the memory first (:func:`check_gather`)."""
    every = parts.map(part_rows, plan, which)
    got = [r for r in every if r.index.size] or every[:1]
    if len(got) == 1:
        return got[0]
    return Rows(np.concatenate([r.X for r in got]), np.concatenate([r.y for r in got]),
                np.concatenate([r.index for r in got]))
