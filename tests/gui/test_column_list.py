"""The Data panel's column list (Orange's Select Columns): the file's columns beside the
preview, ticked when used; unticking one leaves it out through the model's data source
(``drop_columns``), also when it is the column that stopped the load; the target is
marked and cannot be unticked; a session keeps the choice and opening it restores the
ticks; a leaking column is warned in the panel and the log."""

from __future__ import annotations

import html
import json

import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore

from kernel_lab.gui.app import MainWindow

Checked, Unchecked = QtCore.Qt.CheckState.Checked, QtCore.Qt.CheckState.Unchecked
Flag = QtCore.Qt.ItemFlag

#: R's export: row names, a text column, a column of many numbers with one text cell (a
#: typo that stops the load), a feature derived from the target, the target last.
ROWS = [(1.5, "x", 10, "0.5", 3), (2.5, "y", 20, "1.5", 5), (3.5, "x", 30, "oops", 7),
        (4.5, "y", 40, "3.25", 9), (5.5, "x", 55, "4.75", 12), (6.5, "y", 61, "5.5", 13),
        (7.5, "x", 72, "6.25", 15), (8.5, "y", 80, "7.5", 17), (9.5, "x", 93, "8.75", 19),
        (10.5, "y", 99, "9.5", 21), (11.5, "x", 12, "10.25", 2), (12.5, "y", 25, "11.5", 4),
        (13.5, "x", 31, "12.75", 6), (14.5, "y", 44, "13.5", 8), (0.5, "x", 17, "2.5", 10),
        (1.0, "y", 23, "7.0", 11)]
TEXT = '"","a","note","b","bad","twice","y"\n' + "".join(
    f'"{i}",{a},"{n}",{b},{bad},{2 * y + 1},{y}\n' for i, (a, n, b, bad, y)
    in enumerate(ROWS, start=1))


@pytest.fixture
def window(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"),
                                QtCore.QSettings.Format.IniFormat)
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()


def rows(panel):
    """(name, text, checked, user-checkable) of each item of the column list."""
    out = []
    for k in range(panel.column_list.count()):
        item = panel.column_list.item(k)
        out.append((item.data(QtCore.Qt.ItemDataRole.UserRole), item.text(),
                    item.checkState() == Checked, bool(item.flags() & Flag.ItemIsUserCheckable)))
    return out


def untick(panel, qtbot, name):
    for k in range(panel.column_list.count()):
        item = panel.column_list.item(k)
        if item.data(QtCore.Qt.ItemDataRole.UserRole) == name:
            item.setCheckState(Unchecked)
            qtbot.waitUntil(lambda: not panel.loading, timeout=30_000)
            return
    raise AssertionError(f"no column {name!r} in the list")


def test_the_column_list_drops_columns_and_a_session_keeps_them(window, qtbot, tmp_path):
    panel = window.data_panel
    path = tmp_path / "r.csv"
    path.write_text(TEXT)
    panel.set_spec(str(path))
    qtbot.waitUntil(lambda: not panel.loading, timeout=30_000)
    # the load stops at the typo, naming the list as the fix; the list is already there
    # (from the file's first line, the row names left out)
    shown = html.unescape(panel.status.text())
    assert "Could not load the data" in shown
    assert "untick bad in the Data panel's column list" in shown
    assert "--drop-columns" not in shown
    assert rows(panel) == [("a", "a", True, True), ("note", "note", True, True),
                           ("b", "b", True, True), ("bad", "bad", True, True),
                           ("twice", "twice", True, True), ("y", "y (target)", True, False)]

    untick(panel, qtbot, "bad")
    ds = window.model.dataset
    assert ds is not None and window.model.loaded_source.name == str(path)
    assert window.model.source.options["drop_columns"] == "bad"
    assert ds.feature_names == ["a", "note=x", "note=y", "b", "twice"]
    assert [r[2] for r in rows(panel)] == [True, True, True, False, True, True]
    # the leaking column is warned, naming the list as the fix, in the panel and the log
    status = html.unescape(panel.status.text())
    assert "warning:" in status and "'twice' (ρ = +1.000)" in status
    assert "untick bad,twice in the Data panel's column list" in status
    assert "possible target leakage" in window.log_view.toPlainText()

    untick(panel, qtbot, "twice")
    assert window.model.source.options["drop_columns"] == "bad,twice"
    assert window.model.dataset.feature_names == ["a", "note=x", "note=y", "b"]
    assert window.model.dataset.warnings == []
    assert "warning:" not in panel.status.text()
    # the target cannot be unticked (not user-checkable); the model refuses it too
    window.model.use_column("y", False)
    assert window.model.source.options["drop_columns"] == "bad,twice"

    session = window.save_session(tmp_path / "s.json")
    saved = json.loads(session.read_text())["data"]
    assert saved["options"]["drop_columns"] == "bad,twice"

    fresh = MainWindow(QtCore.QSettings(str(tmp_path / "other.ini"),
                                        QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(fresh)
    fresh.open_session(session)
    qtbot.waitUntil(lambda: not fresh.data_panel.loading, timeout=30_000)
    assert fresh.model.loaded_source.to_dict() == saved
    assert fresh.model.dataset.feature_names == ["a", "note=x", "note=y", "b"]
    assert [(r[0], r[2]) for r in rows(fresh.data_panel)] == [
        ("a", True), ("note", True), ("b", True), ("bad", False), ("twice", False),
        ("y", True)]
    # ticking one again brings it back
    item = fresh.data_panel.column_list.item(4)
    item.setCheckState(Checked)
    qtbot.waitUntil(lambda: not fresh.data_panel.loading, timeout=30_000)
    assert fresh.model.source.options["drop_columns"] == "bad"
    assert "twice" in fresh.model.dataset.feature_names
    fresh.close()


def test_the_load_button_keeps_the_columns_chosen(window, qtbot, tmp_path):
    panel = window.data_panel
    path = tmp_path / "r.csv"
    path.write_text(TEXT)
    panel.set_spec(str(path), {"drop_columns": "bad,note"})
    qtbot.waitUntil(lambda: not panel.loading, timeout=30_000)
    assert window.model.dataset.feature_names == ["a", "b", "twice"]
    panel.load()  # the widgets describe the same source, columns included
    qtbot.waitUntil(lambda: not panel.loading, timeout=30_000)
    assert panel.current_source().options["drop_columns"] == "bad,note"
    assert window.model.dataset.feature_names == ["a", "b", "twice"]


def test_an_xlsx_sheet_that_fails_to_load_lists_its_columns_to_untick(window, qtbot, tmp_path):
    from openpyxl import Workbook

    from kernel_lab.data.read import peek_rows

    book = Workbook()
    sheet = book.active
    sheet.append(["a", "b", "bad", "y"])
    for i, (a, b, _, bad, y) in enumerate(ROWS):
        sheet.append([a, b, "oops" if i == 2 else float(bad), y])
    path = tmp_path / "r.xlsx"
    book.save(path)
    names, head = peek_rows(path, 2)
    assert names == ["a", "b", "bad", "y"] and head[0] == ["1.5", "x", "0.5", "3"]
    panel = window.data_panel
    panel.set_spec(str(path))
    qtbot.waitUntil(lambda: not panel.loading, timeout=30_000)
    assert "untick bad in the Data panel's column list" in html.unescape(panel.status.text())
    assert [r[0] for r in rows(panel)] == ["a", "b", "bad", "y"]
    untick(panel, qtbot, "bad")
    assert window.model.dataset.feature_names == ["a", "b=x", "b=y"]
