"""The heap of the processes that run experiments: reused during a run, returned after it.

glibc's ``malloc`` gives every block above its mmap threshold (at most 32 MiB by default)
fresh pages from the kernel and hands them back when the block is freed. Numerical code
allocates such blocks over and over (kernel matrices, feature blocks), so each one is
paid in page faults, and on a virtual machine with free-page reporting (virtio-balloon)
the guest kernel also reports the freed pages to the host, which discards them and must
fault them in again on the next use — time the host counts as *steal*, during which it
holds the virtual CPUs, the window's included. Measured on a 2-core virtual machine
(``learning-curve`` with its defaults, 20 s, two runs each): the host stole 24–31 clock
ticks during a run and the window's timer stalled up to 25–29 ms; with blocks up to 1 GiB
kept on the heap, 4–13 ticks and at most 8.8–11.8 ms (a 64 MiB threshold, as for Dask
workers, left 21–22 ticks and 25–28 ms).

So the processes that run experiments (the window's worker process, local process pools)
start with glibc's ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` at
:data:`KEEP_BYTES`, and give their free heap back to the system with ``malloc_trim`` when a
run (or a pool's task) ends, so an idle process does not sit on its peak. Elsewhere than
glibc the variables are ignored and the release does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Any

#: Blocks up to this size come from (and return to) the heap of a process that runs
#: experiments, and up to this much free memory stays at its top during a run.
KEEP_BYTES = 2**30

#: The environment that asks glibc for that, set for the processes started afterwards.
HEAP_ENVIRONMENT = {"MALLOC_MMAP_THRESHOLD_": str(KEEP_BYTES),
                    "MALLOC_TRIM_THRESHOLD_": str(KEEP_BYTES)}


#: The names of the settings :func:`keep_heap_in_children` put in the environment (not the
#: user's), kept in the environment too, so that processes started with them know.
SET_HERE = "KERNEL_LAB_HEAP_SETTINGS"


def keep_heap_in_children() -> None:
    """Make the processes this one starts from now on keep their heap (see the module
    docstring). Settings already in the environment (the user's) are left alone; this
    process's own allocator read its settings when it started and is not affected."""
    ours = {name for name in os.environ.get(SET_HERE, "").split(",") if name}
    for name, value in HEAP_ENVIRONMENT.items():
        if name not in os.environ:
            os.environ[name] = value
            ours.add(name)
    if ours:
        os.environ[SET_HERE] = ",".join(sorted(ours))


def drop_heap_settings() -> None:
    """Take the settings :func:`keep_heap_in_children` made (here or in a parent) out of the
    environment, for processes that bring their own: a local Dask cluster's workers get
    theirs from its configuration, which the environment would override
    (:data:`kernel_lab.engine.cluster.DASK_QUIET`; their memory limits watch the resident
    memory a kept heap would hold). The user's own settings stay: a variable named in
    :data:`SET_HERE` whose value is no longer the one set there (the user changed it since)
    is left alone."""
    for name in os.environ.pop(SET_HERE, "").split(","):
        if name and os.environ.get(name) == HEAP_ENVIRONMENT.get(name):
            os.environ.pop(name, None)


@functools.cache
def linux_libc() -> Any:
    """The C library on Linux (loaded once), None elsewhere or when it cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return None


def release_heap() -> bool:
    """Return the free memory of this process's heap to the system (glibc's
    ``malloc_trim(0)``); False where that is not available."""
    trim = getattr(linux_libc(), "malloc_trim", None)  # musl has no malloc_trim
    if trim is None:
        return False
    trim(0)
    return True
