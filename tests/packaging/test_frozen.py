"""The standalone app built by packaging/build.sh: self-test and a headless run, started
with an empty environment (no Python on the PATH). Runs when KERNEL_LAB_FROZEN names the
built executable (.ci/run builds it and sets it); skipped otherwise."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.packaging

FROZEN = os.environ.get("KERNEL_LAB_FROZEN")
if not FROZEN:
    pytest.skip("set KERNEL_LAB_FROZEN to the built dist/kernel-lab/kernel-lab to run",
                allow_module_level=True)


def frozen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"HOME": str(cwd), "QT_QPA_PLATFORM": "offscreen", "LANG": "C.UTF-8"}
    return subprocess.run([str(Path(FROZEN).resolve()), *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=600)


def test_frozen_self_test_passes(tmp_path):
    proc = frozen("--self-test", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from kernel_lab.engine.presets import playground_preset_names
    from kernel_lab.experiments import list_experiments

    n = len(list_experiments()) + len(playground_preset_names()) + 6
    assert "(frozen " in proc.stdout and f"{n} of {n} checks passed" in proc.stdout
    # pandas ships: numeric CSV files are read by its C parser in the standalone app too
    assert "numbers by pandas" in proc.stdout
    assert proc.stdout.count("PASS  playground") == 7  # the presets ship, the window draws


def test_frozen_run_on_a_csv_writes_the_contract_files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((160, 12))
    y = np.sin(X.sum(axis=1) / np.sqrt(12)) + 0.1 * rng.standard_normal(160)
    np.savetxt(tmp_path / "data.csv", np.column_stack([X, y]), delimiter=",",
               header=",".join([f"x{i}" for i in range(12)] + ["y"]), comments="")
    proc = frozen("run", "ckrr-risk", "--data", "data.csv", "--target", "y", "--set",
                  "trials=3", "--set", "n_lams=6", "--out", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "out" / "result.json").read_text())
    assert doc["experiment"] == "ckrr-risk" and doc["data"]["p"] == 12
    assert doc["summaries"]["mode"] == "real data"
    header = (tmp_path / "out" / "curves.csv").read_text().splitlines()[0].split(",")
    assert header[0] == "lam" and "R_test_emp_mean[linear]" in header
    assert (tmp_path / "out" / "plot.png").read_bytes().startswith(b"\x89PNG")
    # a user error is still one line and exit code 2
    bad = frozen("run", "ckrr-risk", "--data", "missing.csv", "-q", cwd=tmp_path)
    assert bad.returncode == 2 and "missing.csv" in bad.stderr


def test_bundle_size_is_reported_and_within_target():
    root = Path(FROZEN).resolve().parent
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"bundle size: {size / 2**20:.0f} MB")
    assert size <= 300 * 2**20
