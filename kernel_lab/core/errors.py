"""Errors a user can fix: each message names the problem and what to do next."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping


class KernelLabError(Exception):
    """Base class of errors caused by user input (data, parameters, sizes).

    The command line turns these into exit code 2 with the message on one line;
    the window shows the message in the panel that caused it.
    """


class ParameterError(KernelLabError, ValueError):
    """An experiment or estimator parameter is invalid."""


class MemoryBudgetError(KernelLabError, MemoryError):
    """A planned allocation (typically an n×n kernel matrix) exceeds the memory budget."""


class DataError(KernelLabError, ValueError):
    """A data file or data specification cannot be used.

    Parameters
    ----------
    problem : str
        What is wrong, in plain words.
    fix : str, optional
        What the user can do about it.
    path : str or path-like, optional
        The file concerned; its base name starts the message.
    line, column : int, optional
        1-based position in the file where the problem was found. ``column`` is
        the 1-based field number for delimited text.
    """

    def __init__(
        self,
        problem: str,
        fix: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        column: int | str | None = None,
    ) -> None:
        self.problem = problem
        self.fix = fix
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.column = column
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.path is not None:
            where.append(os.path.basename(self.path))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column {self.column}")
        text = self.problem.rstrip(".") + "."
        if where:
            text = ", ".join(where) + ": " + text
        if self.fix:
            fix = self.fix.rstrip(".")
            text += " " + fix[:1].upper() + fix[1:] + "."
        return text


# ------------------------------------------------------------------------------------
# Naming the control a message points to
# ------------------------------------------------------------------------------------
#: The value runs to the first space, ")" or ";" (commas inside it separate column names)
#: and does not end with "," or ".".
_OPTION = re.compile(r"the data option (\w+)=([^\s);]*[^\s),;.])")


def data_option(name: str, value: str) -> str:
    """How a message points to a data option the user can set: ``the data option
    name=value`` (its form in a data specification, a session or a script).

    Each place that shows messages names its own control for it instead, with
    :func:`name_controls`: the command line its flag, the window its widget. The phrase
    stays plain text, so a message keeps it across threads and processes.
    """
    return f"the data option {name}={value}"


def name_controls(message: str, controls: Mapping[str, str]) -> str:
    """``message`` with each :func:`data_option` phrase replaced by the control that
    ``controls`` names for that option where the message is shown (``"{value}"`` in a
    control stands for the phrase's value: ``{"subsample": "--subsample {value}"}``).
    Options ``controls`` does not name keep their plain form."""

    def control(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        shown = controls.get(name)
        return match.group(0) if shown is None else shown.replace("{value}", value)

    return _OPTION.sub(control, message)


# ------------------------------------------------------------------------------------
# Optional packages: what to do without one
# ------------------------------------------------------------------------------------
#: How a Python installation gets the optional packages (Dask, pyarrow, zarr).
EXTRA = "pip install 'kernel-lab[dask]'"


def is_standalone() -> bool:
    """Whether this process is the standalone app (PyInstaller sets ``sys.frozen``), where
    nothing can be installed."""
    return bool(getattr(sys, "frozen", False))


def missing_package(task: str, package: str, standalone: str, *,
                    bundled: ImportError | None = None) -> str:
    """The message refusing ``task`` (``"reading Parquet"``) without ``package``: in a
    Python installation, the command that installs it; in the standalone app, which cannot
    install anything, ``standalone`` — what the app offers instead or where else to go.
    ``bundled``: the standalone app includes the package, and this is why it did not load
    (a damaged copy), which the message quotes."""
    if is_standalone() and bundled is not None:
        return f"{task} needs {package}, which this standalone app includes but could not " \
               f"load ({bundled}): {standalone}"
    if is_standalone():
        return f"{task} needs {package}, which this standalone app does not include: " \
               f"{standalone}"
    return f"{task} needs {package}: {EXTRA}"
