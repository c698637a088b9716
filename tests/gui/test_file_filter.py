"""The open dialog offers every file the readers read (the filter had drifted: no .tab,
.data or compressed tables)."""

from __future__ import annotations

from kernel_lab.data.raw import COMPRESSED
from kernel_lab.data.read import FORMATS, TEXT_SUFFIXES


def test_the_open_dialog_filter_lists_every_readable_extension():
    from kernel_lab.gui.data_panel import FILE_FILTER

    offered = set(FILE_FILTER.split(";;")[0].split("(")[1].rstrip(")").split())
    expected = {f"*{s}" for s in FORMATS} | {"*.zip"}  # a zip holding one table
    expected |= {f"*{t}{c}" for t in TEXT_SUFFIXES for c in COMPRESSED if c != ".zip"}
    assert expected <= offered, sorted(expected - offered)
