"""The Data panel's column list, without Qt: a file's columns, each one's role (the
target, a feature, or left out) as the data source's options say, and the source that
uses or leaves out one more column.

The list comes from the data loaded from the file (its own columns, a text column once),
or, while a file loads or when it failed to load, from the file's first line — so a
column that stops the load can be left out from the list.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel_lab.core.errors import DataError
from kernel_lab.core.rows import PartitionedData
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.data.columns import ColumnChoice
from kernel_lab.data.read import peek_rows
from kernel_lab.data.source import DataSource
from kernel_lab.data.table import INDEX_NAMES, pick_target

TARGET, FEATURE, LEFT_OUT = "target", "feature", "left out"


@dataclass(frozen=True)
class ColumnRow:
    """One column of the list: its name as the file writes it, and its role."""

    name: str
    role: str  # TARGET, FEATURE or LEFT_OUT

    @property
    def used(self) -> bool:
        """Whether the column enters the data (as a feature or as the target)."""
        return self.role != LEFT_OUT


def columns_of_data(data: Dataset | PartitionedData, source: DataSource) -> list[str]:
    """The file's columns of loaded data: its own (a text column once), or its features
    and target with the columns the source leaves out (data kept in partitions)."""
    names = list(getattr(data, "columns", None) or [*data.feature_names, data.target_name])
    return names + [d for d in source.columns().drop if d not in names]


def columns_of_file(source: DataSource, rows: int = 2) -> list[str]:
    """The columns named on a file's first line (a row-index first column left out, as
    the load leaves it out), or none when the format has no such line."""
    if source.kind != "file":
        return []
    head = peek_rows(source.name, rows)
    if head is None:
        return []
    names = list(head[0])
    if len(names) > 2 and names[0].strip().lower() in INDEX_NAMES \
            and not source.options.get("keep_index"):
        names = names[1:]
    return names


def column_rows(source: DataSource, names: list[str], target: str | None = None
                ) -> list[ColumnRow]:
    """Each of ``names`` with its role under ``source``'s options; ``target``: the
    target of the data loaded from it (else the target option, else the last column)."""
    if not names:
        return []
    if target not in names:
        try:
            target = names[pick_target(names, source.options.get("target") or None,
                                       source.name, True)]
        except DataError:
            target = names[-1]
    t = names.index(target)
    choice = source.columns()
    try:
        used = set(choice.pick(names, t))
    except DataError:  # a choice the file does not fit: what is plainly left out
        left = set(choice.named(names).drop)
        used = {i for i, n in enumerate(names) if n not in left
                and (not choice.features or n in choice.named(names).features)}
    return [ColumnRow(n, TARGET if i == t else FEATURE if i in used else LEFT_OUT)
            for i, n in enumerate(names)]


def source_using(source: DataSource, names: list[str], name: str, used: bool) -> DataSource:
    """``source`` with the column ``name`` (of ``names``, the file's columns) used as a
    feature or left out."""
    choice: ColumnChoice = source.columns().named(names).using(name, used)
    return source.with_columns(choice)
