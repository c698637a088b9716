"""Dask's own log goes to a file, not the terminal; the warnings and errors a run on a
cluster adds to that file are shown in the window's Log when the run ends."""

from __future__ import annotations

import logging

import pytest

from kernel_lab.engine.dask_log import DASK_LOGGERS, LogTail, route_dask_log
from kernel_lab.engine.handle import InlineLauncher
from kernel_lab.model import LabModel


@pytest.fixture(autouse=True)
def _dask_loggers_restored():
    """These tests route Dask's loggers to their own files: put them back afterwards."""
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in DASK_LOGGERS]
    names = sorted(set(names) | set(DASK_LOGGERS))
    kept = {n: (list(logging.getLogger(n).handlers), logging.getLogger(n).propagate)
            for n in names}
    yield
    for n, (handlers, propagate) in kept.items():
        logger = logging.getLogger(n)
        for h in list(logger.handlers):
            if h not in handlers:
                logger.removeHandler(h)
                h.close()
        for h in handlers:
            if h not in logger.handlers:
                logger.addHandler(h)
        logger.propagate = propagate


def _record(path, level, text):
    logger = logging.getLogger("distributed.test_tail")
    route_dask_log(path, rotate=False)
    logger.log(level, text)
    for handler in logging.getLogger("distributed").handlers:
        handler.flush()


def test_the_tail_sees_only_new_warnings_and_errors(tmp_path):
    log = tmp_path / "dask.log"
    _record(log, logging.ERROR, "before the run")
    tail = LogTail(log)
    _record(log, logging.INFO, "a worker joined")
    _record(log, logging.WARNING, "Worker is at 83% memory usage. Pausing worker")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("distributed.client").exception("Failed to reconnect")
    for handler in logging.getLogger("distributed").handlers:
        handler.flush()
    lines, more = tail.new_records()
    assert more == 0 and len(lines) == 2, lines
    assert "WARNING - Worker is at 83% memory usage" in lines[0]
    assert "distributed.client - ERROR - Failed to reconnect" in lines[1]
    assert not any("before the run" in x or "joined" in x or "Traceback" in x for x in lines)


def test_the_tail_counts_what_it_leaves_out(tmp_path):
    log = tmp_path / "dask.log"
    tail = LogTail(log)  # no file yet
    for k in range(25):
        _record(log, logging.WARNING, f"warning {k}")
    lines, more = tail.new_records(limit=20)
    assert [x.rsplit(" ", 1)[-1] for x in lines] == [str(k) for k in range(20)] and more == 5


def test_a_run_on_dask_shows_the_new_records_in_the_log(tmp_path, monkeypatch):
    log = tmp_path / "dask.log"
    monkeypatch.setenv("KERNEL_LAB_DASK_LOG", str(log))
    model = LabModel(InlineLauncher())
    said: list[str] = []
    model.logged.connect(said.append)
    model.backend = ("dask", None)
    model.set_experiment("krr-path")
    # a record Dask writes while the run goes on: the inline run is synchronous, so it is
    # written by a hook the run passes through (loading its data)
    from kernel_lab.data import source as source_module

    load = source_module.DataSource.load

    def load_and_log(self, *args, **kwargs):
        _record(log, logging.WARNING, "Worker is at 83% memory usage. Pausing worker")
        return load(self, *args, **kwargs)

    monkeypatch.setattr(source_module.DataSource, "load", load_and_log)
    model.start_run()
    shown = [s for s in said if ": dask: " in s]
    assert len(shown) == 1 and "Pausing worker" in shown[0], said

    said.clear()
    model.backend = ("threads", None)  # not on Dask: the file is not read
    model.start_run()
    assert not any(": dask: " in s for s in said), said
