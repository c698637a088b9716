"""The headless command line: list, describe, run, and its exit codes."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from kernel_lab.cli import main


def test_run_krr_path_writes_the_three_files(tmp_path):
    """The real console entry point, as a user runs it."""
    exe = shutil.which("kernel-lab") or None
    cmd = [exe] if exe else [sys.executable, "-m", "kernel_lab"]
    out = tmp_path / "run"
    proc = subprocess.run([*cmd, "run", "krr-path", "--out", str(out), "--set", "n_lams=6"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "loading data" in proc.stderr and "%" in proc.stderr  # progress on stderr
    doc = json.loads((out / "result.json").read_text())
    assert doc["experiment"] == "krr-path" and doc["seed"] == 0
    assert doc["params"]["n_lams"] == 6 and "lam_best_ckrr" in doc["summaries"]
    with open(out / "curves.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][0] == "lam" and "test_mse_ckrr" in rows[0] and len(rows) == 7
    np.testing.assert_allclose([float(r[0]) for r in rows[1:]], np.logspace(-4, 2, 6))
    png = (out / "plot.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_run_with_data_file_target_and_sets(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = X[:, 0] - 2 * X[:, 2]
    path = tmp_path / "table.csv"
    np.savetxt(path, np.column_stack([y, X]), delimiter=",", header="price,a,b,c", comments="")
    out = tmp_path / "o"
    code = main(["run", "krr-path", "--data", str(path), "--target", "price", "--set",
                 "kernel=linear", "--set", "n_lams=3", "--seed", "5", "--out", str(out),
                 "--no-plot", "-q"])
    assert code == 0
    doc = json.loads((out / "result.json").read_text())
    assert doc["data"]["target"] == "price" and doc["data"]["p"] == 3
    assert doc["data"]["n_train"] == 60 and doc["seed"] == 5
    assert doc["summaries"]["kernel"] == "linear:alpha=1,beta=1"
    assert capsys.readouterr().out.strip() == str(out)


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["run", "no-such-exp"], "unknown experiment 'no-such-exp'"),
        (["run", "krr-path", "--set", "lam_min=-3"], "lam_min must be ≥"),
        (["run", "krr-path", "--set", "kernel=foo"], "kernel must be one of"),
        (["run", "krr-path", "--set", "bogus=1"], "has no parameter 'bogus'"),
        (["run", "krr-path", "--set", "lam_min"], "NAME=VALUE"),
        (["run", "krr-path", "--data", "missing.csv"], "missing.csv: the file does not exist"),
        (["run", "krr-path", "--data", "gaussian:n=1"], "n must be ≥ 2"),
        (["run", "krr-path", "--data", "gaussian:n=x"], "n must be a whole number"),
        (["frobnicate"], "invalid choice"),
        (["run"], "name an experiment"),
        (["describe", "nope"], "unknown experiment"),
    ],
)
def test_user_errors_exit_2_with_one_line(tmp_path, capsys, argv, fragment):
    code = main([*argv, "--out", str(tmp_path / "o")] if argv[0] == "run" and len(argv) > 1
                else argv)
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if not line.startswith("[")]
    assert len(lines) == 1 and lines[0].startswith("kernel-lab: error:"), err
    assert fragment in lines[0]
    assert "Traceback" not in err


def test_memory_budget_is_a_user_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_MEMORY_MB", "0.5")
    code = main(["run", "krr-path", "--out", str(tmp_path / "o"), "-q", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 2 and "memory budget" in err and "Nyström" in err


def test_runtime_failure_exits_1_without_traceback(tmp_path, capsys, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("LAPACK exploded")

    # the λ path's eigendecomposition (KernelRidge.fit_path) fails
    monkeypatch.setattr("kernel_lab.core.models.krr.np.linalg.eigh", boom)
    code = main(["run", "krr-path", "--out", str(tmp_path / "o"), "-q", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 1 and "LAPACK exploded" in err and "Traceback" not in err


def test_list_and_describe(capsys):
    assert main(["list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "krr-path" in doc["experiments"] and "gaussian" in doc["generators"]
    assert "diabetes" in doc["examples"] and "matern52" in doc["kernels"]
    assert main(["describe", "krr-path", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {p["name"] for p in info["params"]} >= {"kernel", "sigma", "lam_min", "seed"}
    assert main(["describe", "krr-path"]) == 0
    assert "lam_min" in capsys.readouterr().out


def test_no_display_prints_headless_help(capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert main([]) == 0
    assert "kernel-lab run krr-path" in capsys.readouterr().out


def test_self_test_passes_and_reports_each_check(capsys):
    pytest.importorskip("pytestqt")
    assert main(["--self-test"]) == 0
    from kernel_lab.engine.presets import playground_preset_names
    from kernel_lab.experiments import list_experiments

    lines = capsys.readouterr().out.splitlines()
    # one per experiment and Playground preset, the Playground window, CSV tables, Parquet,
    # the model file, four more
    n = len(list_experiments()) + len(playground_preset_names()) + 8
    assert lines[-1].startswith(f"{n} of {n} checks passed")
    assert sum(line.startswith("PASS") for line in lines) == n
    assert any("window run via the worker process" in line for line in lines)
    assert any("PASS  read CSV tables" in line for line in lines)
    assert any("PASS  read Parquet files and folders" in line for line in lines)
    assert any("PASS  model file save, load and predict" in line for line in lines)
    assert sum(line.startswith("PASS  playground") for line in lines) == 7


def test_partitions_help_says_what_auto_does():
    """`auto` reads a folder whole up to WHOLE_BYTES and decides on that size alone (not the
    backend): the option's help in `run --help` and in the data options says so."""
    from kernel_lab.cli import _build_parser
    from kernel_lab.core.memory import format_bytes
    from kernel_lab.data.lazy import WHOLE_BYTES
    from kernel_lab.data.source import FILE_OPTIONS

    run = next(a for a in _build_parser()._subparsers._group_actions[0].choices["run"]._actions
               if "--partitions" in a.option_strings)
    spec = next(s for s in FILE_OPTIONS if s.name == "partitions")
    size = format_bytes(WHOLE_BYTES).replace(".0 ", " ")  # "256 MiB"
    for text in (run.help, spec.help):
        assert f"at most {size}" in text and "by size alone" in text, text
        assert "not dask" not in text and "not on a Dask" not in text, text


def test_a_closed_stdout_ends_the_command_quietly(monkeypatch, tmp_path, capsys):
    """`kernel-lab describe-model M | head`: the reader of stdout stops, a write raises
    BrokenPipeError — the command stops with 128 + SIGPIPE, no 'failed' line, and stdout is
    pointed at /dev/null so the interpreter's last flush cannot fail again."""
    import os
    import sys

    from kernel_lab import cli

    def closed_pipe(args):
        raise BrokenPipeError(32, "Broken pipe")

    out = open(tmp_path / "stdout", "w")  # a real file descriptor, replaced by /dev/null
    saved = os.dup(1)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(cli, "_cmd_list", closed_pipe)
    try:
        os.dup2(out.fileno(), 1)
        assert cli.main(["list"]) == 141
        assert os.path.samefile(f"/proc/self/fd/{out.fileno()}", os.devnull)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        out.close()
    assert "failed" not in capsys.readouterr().err


def test_help_lists_every_subcommand_and_run_loads_only_its_experiment():
    """``kernel-lab --help`` names every subcommand; ``kernel-lab run`` imports the
    experiment it runs, not the others, and no preset or Playground module without
    ``--preset`` (a client's imports delay a cluster's first task)."""
    from kernel_lab.cli import _build_parser

    out = subprocess.run([sys.executable, "-m", "kernel_lab", "--help"], capture_output=True,
                         text=True, check=True).stdout
    commands = next(a for a in _build_parser()._actions
                    if a.__class__.__name__ == "_SubParsersAction").choices
    assert set(commands) == {"list", "describe", "run", "report", "predict", "describe-model"}
    for name in commands:
        assert name in out, name
    code = ("import sys\n"
            "from kernel_lab.cli import main\n"
            "try:\n"
            "    main(['run', 'learning-curve', '--set', 'no_such=1', '--quiet'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(("
            "'kernel_lab.experiments.nystrom', 'kernel_lab.experiments.gfc', "
            "'kernel_lab.experiments.krr_path', 'kernel_lab.experiments.ckrr_risk', "
            "'kernel_lab.experiments.spectrum', 'kernel_lab.engine.presets', "
            "'kernel_lab.engine.playground')))))\n"
            "print('kernel_lab.experiments.learning_curve' in sys.modules)\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert got[0] == "" and got[1] == "True", got
