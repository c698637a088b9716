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

    n = len(list_experiments()) + len(playground_preset_names()) + 8
    assert "(frozen " in proc.stdout and f"{n} of {n} checks passed" in proc.stdout
    # pandas ships: numeric CSV files are read by its C parser in the standalone app too
    assert "numbers by pandas" in proc.stdout
    # pyarrow ships: the self-test writes a Parquet file and a folder and runs on them
    assert "PASS  read Parquet files and folders" in proc.stdout
    assert proc.stdout.count("PASS  playground") == 7  # the presets ship, the window draws
    # skops ships: a fitted model with its table typing is saved, read back and predicts
    assert "PASS  model file save, load and predict" in proc.stdout


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


def test_frozen_run_on_parquet_file_and_folder(tmp_path):
    """The standalone app reads Parquet (pyarrow is bundled): a file gives the numbers a
    CSV file of the same rows gives, a text column is one-hot encoded, and nystrom runs on
    a folder of Parquet files kept in its partitions as on the CSV file."""
    import pandas as pd

    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(300, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["y"] = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.standard_normal(300)
    frame.to_csv(tmp_path / "rows.csv", index=False)
    frame.to_parquet(tmp_path / "rows.parquet", index=False)
    with_text = frame.assign(kind=np.where(X[:, 2] > 0, "up", "down"))
    with_text.to_parquet(tmp_path / "text.parquet", index=False)
    args = ["--target", "y", "--set", "n_lams=5", "--no-plot", "-q"]
    docs = {}
    for name in ("rows.csv", "rows.parquet", "text.parquet"):
        proc = frozen("run", "krr-path", "--data", name, *args, "--out", name + ".out",
                      cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        docs[name] = json.loads((tmp_path / (name + ".out") / "result.json").read_text())
    csv_doc, pq_doc, text_doc = docs.values()
    # the same rows in a CSV and a Parquet file: the same numbers
    assert csv_doc["data"]["p"] == pq_doc["data"]["p"] == 3
    for key, values in csv_doc["table"].items():
        if "time" not in key:
            np.testing.assert_allclose(pq_doc["table"][key], values, rtol=1e-12, err_msg=key)
    assert text_doc["data"]["p"] == 5  # the text column one-hot: two more
    assert text_doc["data"]["n_train"] + text_doc["data"]["n_test"] == 300
    folder = tmp_path / "parts"
    folder.mkdir()
    for k, (a, b) in enumerate(((0, 90), (90, 230), (230, 300))):
        frame.iloc[a:b].to_parquet(folder / f"part-{k}.parquet", index=False)
    params = ["--set", "samplers=uniform,rp-cholesky", "--set", "sizes=5,15", "--set",
              "trials=1", "--set", "eval_points=150", "--no-plot", "-q"]
    proc = frozen("run", "nystrom", "--data", "parts", "--partitions", "keep", *params,
                  "--out", "kept", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = frozen("run", "nystrom", "--data", "rows.csv", *params, "--out", "flat",
                  cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    kept = json.loads((tmp_path / "kept" / "result.json").read_text())
    assert any("partition" in note for note in kept["data"]["notes"])
    flat = json.loads((tmp_path / "flat" / "result.json").read_text())
    assert kept["data"]["n_train"] + kept["data"]["n_test"] == 300
    for doc in (kept, flat):
        errors = np.array(doc["table"]["spectral_median[rp-cholesky]"], dtype=float)
        errors = errors[np.isfinite(errors)]
        assert errors.size == 2 and errors[1] < errors[0]  # more landmarks, smaller error


def test_frozen_app_saves_a_model_and_predicts_with_it(tmp_path):
    """The standalone app keeps a run's model (skops) and predicts new rows with it: the
    predictions are those of the same file loaded in this Python installation, and an
    unseen category is refused (exit 2, naming the column, no output)."""
    import pandas as pd

    from kernel_lab.engine.model_file import load_model

    rng = np.random.default_rng(8)
    n = 120
    x = rng.normal(size=(n, 2))
    kind = rng.choice(["north", "south"], size=n)
    frame = pd.DataFrame({"": [f"r{i}" for i in range(n)], "x1": x[:, 0], "x2": x[:, 1],
                          "kind": kind, "price": 3 + np.sin(x[:, 0]) + x[:, 1]
                          + (kind == "south") + 0.1 * rng.normal(size=n)})
    frame.to_csv(tmp_path / "prices.csv", index=False)
    proc = frozen("run", "krr-path", "--data", "prices.csv", "--target", "price", "--set",
                  "n_lams=8", "--save-model", "m.skops", "--no-plot", "-q", "--out", "r",
                  cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    new = frame.drop(columns=["price"]).iloc[:20]
    new.to_csv(tmp_path / "new.csv", index=False)
    proc = frozen("predict", "m.skops", "--data", "new.csv", "--out", "pred.csv", "-q",
                  cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(tmp_path / "pred.csv")["prediction"].to_numpy()
    want = load_model(tmp_path / "m.skops").model().predict(new)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    described = frozen("describe-model", "m.skops", cwd=tmp_path)
    assert described.returncode == 0 and "krr-path" in described.stdout
    new.assign(kind=["east"] * len(new)).to_csv(tmp_path / "bad.csv", index=False)
    bad = frozen("predict", "m.skops", "--data", "bad.csv", "--out", "bad-pred.csv",
                 cwd=tmp_path)
    assert bad.returncode == 2 and "kind" in bad.stderr, bad.stderr
    assert not (tmp_path / "bad-pred.csv").exists()


def test_frozen_app_never_says_pip_install(tmp_path):
    """What the standalone app leaves out (Dask, Zarr) is refused with what it offers
    instead — a frozen app cannot pip install anything."""
    # a Zarr store as the app recognises one (its group marker): refused before any reading
    (tmp_path / "rows.zarr").mkdir()
    (tmp_path / "rows.zarr" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    dask = frozen("run", "krr-path", "--backend", "dask", "-q", "--out", "o", cwd=tmp_path)
    store = frozen("run", "krr-path", "--data", "rows.zarr", "-q", "--out", "z",
                   cwd=tmp_path)
    for proc in (dask, store):
        assert proc.returncode == 2 and "pip" not in proc.stderr, proc.stderr
        assert "standalone app" in proc.stderr
    assert "--backend threads or processes" in dask.stderr
    assert "Parquet" in store.stderr
    help_text = frozen("run", "--help", cwd=tmp_path).stdout
    assert "pip" not in help_text and "kernel-lab[dask]" not in help_text


def _disk_usage(root: Path) -> int:
    """Bytes on disk as ``du -s`` counts them: allocated blocks, each file once."""
    seen: set[int] = set()
    total = 0
    for p in [root, *root.rglob("*")]:
        st = p.lstat()
        if st.st_ino not in seen:
            seen.add(st.st_ino)
            total += st.st_blocks * 512
    return total


def test_bundle_size_is_reported_and_within_target():
    """At most 350 MiB on disk (``du -sh``), pyarrow included."""
    root = Path(FROZEN).resolve().parent
    apparent = sum(p.stat().st_size for p in root.rglob("*")
                   if p.is_file() and not p.is_symlink())
    disk = _disk_usage(root)
    print(f"bundle size: {disk / 2**20:.0f} MiB on disk, {apparent / 2**20:.0f} MiB apparent")
    assert disk <= 350 * 2**20
