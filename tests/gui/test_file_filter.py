"""The data panel's file dialog offers every format the loaders read (a filter copied
beside the loaders' table had lost .tab and .data)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")


def test_the_file_filter_lists_every_suffix_the_loaders_read():
    from kernel_lab.core.loaders import FORMATS
    from kernel_lab.gui.data_panel import FILE_FILTER

    offered = FILE_FILTER.split(";;")[0]
    for suffix in FORMATS:
        assert f"*{suffix} " in offered or f"*{suffix})" in offered, suffix
