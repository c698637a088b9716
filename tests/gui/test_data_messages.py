"""A message pointing to a data option names the control of the place it is shown in:
the window names its widgets (never a command-line flag), in the Data panel and when a run
is refused for the same reason."""

from __future__ import annotations

import html

import pytest

pytest.importorskip("pytestqt")

from kernel_lab.engine.handle import InlineLauncher
from kernel_lab.gui.data_panel import DataPanel
from kernel_lab.model import LabModel

HOLES = "a,b,c,t\n5,,7,8\n9,10,11,\n" + "".join(f"{i},{i + 1},{i % 3},{i % 5}\n"
                                                  for i in range(8))


@pytest.fixture
def panel(qtbot):
    model = LabModel(InlineLauncher())  # loads and runs inline: the answer is there at once
    model.use_default_data = False
    panel = DataPanel(model)
    qtbot.addWidget(panel)
    return panel


def test_missing_values_point_to_the_checkbox_in_the_window(panel, tmp_path):
    path = tmp_path / "holes.csv"
    path.write_text(HOLES)
    panel.set_spec(str(path))
    shown = html.unescape(panel.status.text())
    label = panel.drop_nan.text()
    # the missing feature cell ('b') could be filled; the missing target cannot
    assert "Could not load the data" in shown
    assert "the target 't' is missing or non-finite in 1 of 10 rows" in shown
    assert f"(tick '{label}' in the Data panel)" in shown
    assert "--drop-nan" not in shown and "data option" not in shown

    # a run on the data that failed to load is refused with the same message and control
    said: list[str] = []
    panel.model.status.connect(said.append)
    panel.model.set_experiment("krr-path")
    panel.model.load_data(panel.current_source())
    panel.model.start_run()
    refused = [s for s in said if s.startswith("Cannot run")]
    assert refused and f"(tick '{label}' in the Data panel)" in refused[-1], said
    assert "--drop-nan" not in refused[-1] and "data option" not in refused[-1]


def test_a_filled_feature_is_a_warning_naming_the_window_controls(panel, tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("a,b,c,t\n5,,7,8\n" + "".join(f"{i},{i + 1},{i % 3},{i % 5}\n"
                                                for i in range(9)))
    panel.set_spec(str(path))
    shown = html.unescape(panel.status.text())
    assert panel.dataset is not None
    assert "warning:" in shown and "filled 1 missing value with each column's mean" in shown
    assert f"tick '{panel.drop_nan.text()}' in the Data panel" in shown
    assert "--drop-nan" not in shown and "data option" not in shown


def test_ticking_the_named_checkbox_loads_the_table(panel, tmp_path):
    path = tmp_path / "holes.csv"
    path.write_text(HOLES)
    panel.path.setText(str(path))
    panel.source.setCurrentText("File")
    panel.drop_nan.setChecked(True)
    panel.load()
    assert panel.dataset is not None
    assert panel.dataset.n_train + panel.dataset.n_test == 8
