"""Faults the tests inject: a disk that fills up while a file is written."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from kernel_lab.engine.atomic import TEMP_SUFFIX


def fill_disk_at(monkeypatch, name: str) -> list[str]:
    """``os.write`` to the temporary file of ``name`` (as
    :func:`~kernel_lab.engine.atomic.write_atomic` names it) writes half of its first
    buffer, then fails with ENOSPC, as a real full disk does; returns the names hit."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to tell which file a write goes to")
    real = os.write
    hits: list[str] = []

    def write(fd: int, data) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        base = os.path.basename(target)
        if base.startswith(f".{name}.") and base.endswith(TEMP_SUFFIX):
            if not hits:
                hits.append(base)
                return real(fd, bytes(data[: max(1, len(data) // 2)]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    return hits
