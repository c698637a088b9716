"""A missing optional package — pyarrow, zarr, Dask — is refused with what to do: in a
Python installation the command that installs it; in the standalone app (``sys.frozen``),
which cannot install anything, what the app offers instead and never ``pip install``."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kernel_lab.core.errors import DataError, KernelLabError, ParameterError


def _hide(monkeypatch, *packages: str) -> None:
    """Make ``import package`` (and its submodules) fail, as where it is not installed."""
    for name in [m for m in sys.modules if m.split(".")[0] in packages]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in packages:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def parquet(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"a": np.arange(6.0), "y": np.arange(6.0) ** 2})
    frame.to_parquet(tmp_path / "rows.parquet", index=False)
    (tmp_path / "parts").mkdir()
    frame.to_parquet(tmp_path / "parts" / "part-0.parquet", index=False)
    return tmp_path


def _refusals(folder) -> list[str]:
    """The messages of reading a Parquet file, a Parquet folder and a Zarr store, and of
    the dask backend, with the packages hidden."""
    from kernel_lab.data.partitioned import open_partitioned
    from kernel_lab.data.read import load_table
    from kernel_lab.engine.cluster import connect

    (folder / "rows.zarr").mkdir()
    (folder / "rows.zarr" / "zarr.json").write_text('{"node_type": "group"}')
    messages = []
    for attempt in (lambda: load_table(folder / "rows.parquet"),
                    lambda: open_partitioned(folder / "parts"),
                    lambda: open_partitioned(folder / "rows.zarr"),
                    lambda: connect()):
        with pytest.raises(KernelLabError) as info:
            attempt()
        assert isinstance(info.value, DataError | ParameterError)
        messages.append(str(info.value))
    return messages


def test_a_python_installation_is_told_the_extra_to_install(parquet, monkeypatch):
    monkeypatch.delattr(sys, "frozen", raising=False)
    _hide(monkeypatch, "pyarrow", "zarr", "dask", "distributed")
    file, folder, store, dask = _refusals(parquet)
    install = "pip install 'kernel-lab[dask]'"
    assert file == f"rows.parquet: reading Parquet needs pyarrow: {install}."
    assert folder.endswith(f"reading Parquet needs pyarrow: {install}.")
    assert store == f"rows.zarr: reading a Zarr store needs zarr: {install}."
    assert dask == f"the dask backend needs Dask: {install}"


def test_the_standalone_app_never_says_pip_install(parquet, monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    _hide(monkeypatch, "pyarrow", "zarr", "dask", "distributed")
    file, folder, store, dask = _refusals(parquet)
    for message in (file, folder, store, dask):
        assert "pip" not in message and "standalone app" in message, message
    # what the app offers instead, by name
    assert "save the table as CSV" in file and "--self-test" in file
    assert "includes but could not load (import of pyarrow halted" in file  # why, quoted
    assert "Parquet files and folders" in store
    assert "--backend threads or processes" in dask and "Compute backend" in dask
