"""core.memory.written_once: large arrays made inside go without numpy's huge-page advice."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kernel_lab.core.memory import written_once

SWITCH = getattr(getattr(getattr(np, "_core", None), "multiarray", None),
                 "_set_madvise_hugepage", None)


def _vm_flags(address: int) -> list[str] | None:
    """The VmFlags of this process's mapping that holds ``address`` (Linux), or None."""
    try:
        with open("/proc/self/smaps", encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        head = line.split()[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith("VmFlags:"):
            return line.split()[1:]
    return None


@pytest.mark.skipif(SWITCH is None, reason="this numpy has no huge-page switch")
@pytest.mark.parametrize("setting", [True, False])
def test_the_switch_is_restored_after_the_block_and_after_an_error(setting):
    before = SWITCH(setting)
    try:
        with written_once():
            assert SWITCH(False) is False  # off inside (reading it sets it: keep it off)
        assert SWITCH(setting) is setting
        with pytest.raises(ZeroDivisionError), written_once():
            1 / 0  # noqa: B018
        assert SWITCH(setting) is setting
    finally:
        SWITCH(before)


@pytest.mark.skipif(SWITCH is None or not sys.platform.startswith("linux"),
                    reason="huge-page advice is numpy's on Linux")
def test_an_array_made_inside_is_not_advised_huge_pages_one_made_outside_is():
    before = SWITCH(True)
    try:
        outside = np.empty(8 * 2**20)  # 64 MiB: numpy advises huge pages
        with written_once():
            inside = np.empty(8 * 2**20)
        middle = 4 * 2**20 * 8
        flags_out = _vm_flags(outside.ctypes.data + middle)
        flags_in = _vm_flags(inside.ctypes.data + middle)
        if flags_out is None or "hg" not in flags_out:
            pytest.skip("this kernel does not take numpy's huge-page advice")
        assert flags_in is not None and "hg" not in flags_in
        inside[:] = 1.0  # an ordinary array all the same
        assert inside.sum() == inside.size
    finally:
        SWITCH(before)
