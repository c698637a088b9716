"""Which columns of a table are features: the ``features`` and ``drop_columns`` load
options, for every file format.

A :class:`ColumnChoice` is read once from a data source's options (comma-separated names
or 0-based indices, as the target is given) and applied by each reader where the file's
own columns are known, before any column is checked or encoded — so a column left out is
never typed, and its text cells cannot stop the load. Columns are named as the file names
them (a text column once, not its one-hot parts); a number counts the columns as the
target does (after a dropped row-index column). A name the file does not have is refused
with the file's columns listed, the closest matches first.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernel_lab.core.errors import DataError, data_option


def split_names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Column names from an option's value: a comma-separated string or a sequence;
    blanks dropped."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return tuple(v.strip() for v in items if v.strip())


def join_names(names: Sequence[str]) -> str:
    """The option value of a list of column names (the inverse of :func:`split_names`)."""
    return ",".join(names)


@dataclass(frozen=True)
class ColumnChoice:
    """The feature columns to keep (``features``, in that order; empty: all but the
    target) and those to leave out (``drop``), as the user named them."""

    features: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ColumnChoice:
        """From a data source's ``features`` and ``drop_columns`` options."""
        return cls(split_names(options.get("features") or None),
                   split_names(options.get("drop_columns") or None))

    def __bool__(self) -> bool:
        return bool(self.features or self.drop)

    def to_options(self) -> dict[str, str]:
        """The ``features`` and ``drop_columns`` options (empty strings for none)."""
        return {"features": join_names(self.features), "drop_columns": join_names(self.drop)}

    def named(self, names: Sequence[str]) -> ColumnChoice:
        """The same choice with each column given by number named as in ``names`` (the
        file's columns; a reference they do not have is kept as written)."""

        def name(ref: str) -> str:
            try:
                return names[column_position(names, ref, None, "")]
            except DataError:
                return ref

        return ColumnChoice(tuple(map(name, self.features)), tuple(map(name, self.drop)))

    def using(self, name: str, used: bool) -> ColumnChoice:
        """This choice with the column ``name`` used as a feature or left out: added to
        (removed from) the features when they are listed, else removed from (added to)
        the dropped columns."""
        drop = tuple(d for d in self.drop if d != name) + (() if used else (name,))
        if not self.features:
            return ColumnChoice((), drop)
        features = tuple(f for f in self.features if f != name) + ((name,) if used else ())
        return ColumnChoice(features, tuple(d for d in drop if d in features))

    def pick(self, names: Sequence[str], target: int,
             path: str | os.PathLike[str] | None = None) -> list[int]:
        """The positions in ``names`` (the file's columns) of the feature columns, in
        order: ``features`` as listed, or every column but the target (``target``, its
        position), less ``drop``.

        Raises
        ------
        DataError
            A column the file does not have, the target named as a feature or dropped, a
            feature named twice, or no feature column left.
        """
        if not self:
            return [i for i in range(len(names)) if i != target]
        target_name = names[target]
        if self.features:
            chosen = [column_position(names, f, path, "features") for f in self.features]
            twice = sorted({names[i] for i in chosen if chosen.count(i) > 1})
            if twice:
                raise DataError(f"the feature column{'s' if len(twice) > 1 else ''} "
                                f"{_quoted(twice)} {'are' if len(twice) > 1 else 'is'} named "
                                "twice", "name each feature column once", path=path)
            if target in chosen:
                raise DataError(f"the target column {target_name!r} is also named as a "
                                "feature", "leave the target out of the feature columns "
                                f"(or choose another target: {data_option('target', 'NAME')})",
                                path=path)
        else:
            chosen = [i for i in range(len(names)) if i != target]
        dropped = {column_position(names, d, path, "drop_columns") for d in self.drop}
        if target in dropped:
            raise DataError(f"the target column {target_name!r} cannot be dropped",
                            "leave it out of the dropped columns, or choose another target "
                            f"({data_option('target', 'NAME')})", path=path)
        kept = [i for i in chosen if i not in dropped]
        if not kept:
            raise DataError("no feature column is left once the chosen columns are dropped",
                            "keep at least one column besides the target "
                            f"'{target_name}'", path=path)
        return kept

    def left_out(self, names: Sequence[str], target: int, kept: Sequence[int]) -> str | None:
        """A note naming the columns left out by this choice, or None when none were."""
        out = [names[i] for i in range(len(names)) if i != target and i not in set(kept)]
        if not self or not out:
            return None
        how = ("not among the features chosen" if self.features and not self.drop else
               "dropped as asked" if not self.features else "left out as asked")
        return (f"{how}: {len(out)} column{'s' if len(out) > 1 else ''} "
                f"({_quoted(out[:12])}{', …' if len(out) > 12 else ''})")


def column_position(names: Sequence[str], ref: str, path: str | os.PathLike[str] | None,
                    option: str) -> int:
    """The position of the column ``ref`` names: a header name, else a 0-based index
    (negative from the end), as the target is given.

    Raises
    ------
    DataError
        No such column (the message lists the file's columns, the closest first), or a
        name that appears twice.
    """
    hits = [i for i, n in enumerate(names) if n == ref]
    if len(hits) > 1:
        raise DataError(f"the column {ref!r} ({option}) appears more than once "
                        f"(columns {' and '.join(str(i) for i in hits)})",
                        "name it by its 0-based index instead, or rename the duplicates",
                        path=path)
    if hits:
        return hits[0]
    try:
        index = int(ref)
    except ValueError:
        raise DataError(f"there is no column named {ref!r} ({option})",
                        f"choose among: {closest_first(names, ref)}; or give a 0-based "
                        "column index", path=path) from None
    if not -len(names) <= index < len(names):
        raise DataError(f"column index {index} ({option}) is out of range: the data have "
                        f"{len(names)} columns", f"use an index from 0 to {len(names) - 1}",
                        path=path)
    return index % len(names)


def closest_first(names: Sequence[str], ref: str, k: int = 40) -> str:
    """``names`` for a message: the ones closest to ``ref`` first (case ignored), then the
    others in file order, at most ``k``."""
    lower = {n.lower(): n for n in reversed(names)}
    close = [lower[m] for m in difflib.get_close_matches(ref.lower(), list(lower), n=3,
                                                         cutoff=0.6)]
    rest = [n for n in names if n not in close]
    shown = [*close, *rest][:k]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f", … ({more} more)" if more > 0 else "")


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)
