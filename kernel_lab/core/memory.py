"""Memory budget for large allocations (kernel matrices and their factorisations)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from kernel_lab.core.errors import MemoryBudgetError

#: Environment variable that overrides the budget, in MiB.
BUDGET_ENV = "KERNEL_LAB_MEMORY_MB"

#: Bytes of one kernel-matrix block evaluated at a time (see ``Kernel.__call__``).
DEFAULT_BLOCK_BYTES = 64 * 2**20


def rows_per_block(width: int, block_bytes: int = DEFAULT_BLOCK_BYTES) -> int:
    """Rows of a float64 block ``width`` wide that fit in ``block_bytes`` (at least one)."""
    return max(1, int(block_bytes) // (8 * max(int(width), 1)))


#: :func:`available_memory_bytes` never answers less (a best effort that must not block
#: small work), and the budget is this share of it.
AVAILABLE_FLOOR_BYTES = 256 * 2**20
BUDGET_SHARE = 0.6


def available_memory_bytes() -> int:
    """Memory available to this process now, in bytes (best effort, never below 256 MiB)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return max(int(line.split()[1]) * 1024, AVAILABLE_FLOOR_BYTES)
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        return max(int(pages * size), AVAILABLE_FLOOR_BYTES)
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


#: The least :func:`memory_budget_bytes` can be without ``$KERNEL_LAB_MEMORY_MB``: 60 % of the
#: 256 MiB that :func:`available_memory_bytes` never goes below. A smaller request passes
#: :func:`check_allocation` without reading the free memory (``/proc/meminfo``: about 3 % of
#: the nystrom run on a million rows, which checks every block of kernel columns).
FLOOR_BUDGET_BYTES = int(BUDGET_SHARE * AVAILABLE_FLOOR_BYTES)


def memory_budget_bytes() -> int:
    """The budget for one planned computation: ``$KERNEL_LAB_MEMORY_MB`` or 60 % of free memory."""
    env = os.environ.get(BUDGET_ENV)
    if env:
        try:
            return int(float(env) * 2**20)
        except ValueError:
            pass
    return int(BUDGET_SHARE * available_memory_bytes())


def format_bytes(nbytes: float) -> str:
    """Human-readable size, e.g. ``'1.5 GiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(nbytes) < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def check_allocation(nbytes: float, what: str, fix: str, budget: int | None = None) -> None:
    """Raise :class:`MemoryBudgetError` if ``nbytes`` exceeds the budget.

    Parameters
    ----------
    nbytes : float
        Planned peak allocation in bytes.
    what : str
        What would be allocated, e.g. ``"the 40000×40000 kernel matrix"``.
    fix : str
        What to do instead (a smaller sample, an approximate method).
    budget : int, optional
        Budget in bytes; defaults to :func:`memory_budget_bytes`.
    """
    if budget is None and nbytes <= FLOOR_BUDGET_BYTES and not os.environ.get(BUDGET_ENV):
        return  # within any budget the free memory can give: no need to read it
    limit = memory_budget_bytes() if budget is None else budget
    if nbytes > limit:
        raise MemoryBudgetError(
            f"{what} needs {format_bytes(nbytes)}, more than the memory budget of "
            f"{format_bytes(limit)}. {fix}"
        )


@contextmanager
def written_once() -> Iterator[None]:
    """Large arrays made inside on ordinary 4 KiB pages: numpy asks the kernel for
    transparent huge pages (2 MiB) for every array of 4 MiB or more, which pays when an
    array is read again and again, but its first touch can cost far more than the copy
    that writes it — on the virtual machines seen here, a fresh huge page took about 5 ms
    (160 MB of gathered rows: 0.36–0.56 s against 0.10–0.17 s on small pages). For arrays
    filled once by a copy and then read in blocks (the rows an open gathers), where the
    page-table walks the huge pages save are few. numpy's switch is process-wide: another
    thread allocating meanwhile only goes without the hint too. Without the switch (a numpy
    that no longer has it), nothing changes."""
    switch = getattr(getattr(getattr(np, "_core", None), "multiarray", None),
                     "_set_madvise_hugepage", None)
    if switch is None:
        yield
        return
    before = switch(False)
    try:
        yield
    finally:
        switch(before)
