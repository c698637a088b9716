"""Benchmark: Nyström ridge by conjugate gradients against the direct solve.

Run: ``python tests/benchmarks/bench_nystrom_cg.py [--rows 200000] [--landmarks 2000]
[--lam 1e-3] [--solvers cg,direct] [--data FILE.npz]``.

The data are drawn here (X uniform in [0, 1]²⁰, y a Friedman-like function of five inputs
plus noise, as in ``bench_scale.py``), or are the first ``--rows`` rows of an ``.npz``
archive with arrays X and y given by ``--data``. Each solver runs in a child process
so its peak resident memory (VmHWM from ``/proc/self/status``) is its own:
``NystromRidge(lam, n_components=s, sampler=..., solver=..., random_state=0)`` (Gaussian
kernel, median-heuristic σ; uniform landmarks by default — the recursive RLS sampler holds
an n × s block itself). Reported: the time of the landmarks (W and its eigendecomposition),
of the whole fit, of predicting on the n training points (in row blocks) and on 10,000
fresh points, CG iterations and residual, peak memory, and the largest difference between
the solvers' predictions relative to the largest prediction.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import perfdoc  # this folder, first on the path of a script

CHILD = r"""
import json, sys, time
import numpy as np
from kernel_lab.core.models.nystrom import NystromFeatures, NystromRidge

def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1

solver, path, rows, s, lam, sampler, out = sys.argv[1:8]
rows, s, lam = int(rows), int(s), float(lam)
if path != "-":
    with np.load(path) as data:
        X = np.ascontiguousarray(data["X"][:rows])
        y = np.ascontiguousarray(data["y"][:rows])
else:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(rows, 20))
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4] + rng.normal(size=rows))
Xt = np.random.default_rng(1).uniform(size=(10_000, X.shape[1]))
base_kb = status("VmRSS")
result = {"solver": solver, "base_kb": base_kb}
t0 = time.perf_counter()
NystromFeatures(n_components=s, sampler=sampler, random_state=0).fit(X)
result["landmarks_s"] = time.perf_counter() - t0
est = NystromRidge(lam, n_components=s, sampler=sampler, solver=solver, random_state=0)
t0 = time.perf_counter()
try:
    est.fit(X, y)
except MemoryError as exc:  # the direct solve refused by the memory budget
    result.update(error=f"{type(exc).__name__}: {exc}", peak_kb=status("VmHWM"))
    print(json.dumps(result))
    sys.exit(0)
result["fit_s"] = time.perf_counter() - t0
t0 = time.perf_counter()
train = est.predict(X)
result["predict_train_s"] = time.perf_counter() - t0
test = est.predict(Xt)
result.update(peak_kb=status("VmHWM"), r=int(est.coef_.size),
              sigma=est.features_.kernel_.sigma, n_iter=est.n_iter_,
              converged=bool(est.converged_),
              residual=None if est.cg_info_ is None else est.cg_info_.residual,
              train_rmse=float(np.sqrt(np.mean((train - y) ** 2))))
np.save(out + ".train.npy", train)
np.save(out + ".test.npy", test)
print(json.dumps(result))
"""


def child(solver: str, data: str, rows: int, s: int, lam: float, sampler: str,
          out: Path) -> dict:
    run = subprocess.run([sys.executable, "-c", CHILD, solver, data, str(rows), str(s),
                          str(lam), sampler, str(out)], capture_output=True, text=True,
                         check=False)
    if run.returncode != 0:
        lines = run.stderr.strip().splitlines()
        return {"solver": solver, "error": lines[-1] if lines else "failed"}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--landmarks", type=int, default=2000)
    parser.add_argument("--lam", type=float, default=1e-3)
    parser.add_argument("--sampler", default="uniform")
    parser.add_argument("--solvers", default="cg,direct")
    parser.add_argument("--data", default="")
    args = parser.parse_args()
    data = args.data if args.data and Path(args.data).exists() else "-"
    print(f"n = {args.rows:,}, p = 20, s = {args.landmarks:,}, λ = {args.lam:g}, Gaussian "
          f"kernel, {args.sampler} landmarks; data: {data if data != '-' else 'drawn here'}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for solver in args.solvers.split(","):
            out = Path(tmp) / solver
            res = child(solver, data, args.rows, args.landmarks, args.lam, args.sampler, out)
            results[solver] = res
            if "error" in res:
                peak = (f", peak {res['peak_kb'] / 2**20:.2f} GiB" if "peak_kb" in res else "")
                print(f"{solver:<7} failed: {res['error']}{peak}")
                rec.figure(f"{solver}: fit (failed: {res['error']})", float("nan"), "s")
                continue
            res["train"] = np.load(str(out) + ".train.npy")
            res["test"] = np.load(str(out) + ".test.npy")
            iters = (f"{res['n_iter']} iterations, residual {res['residual']:.1e}"
                     + ("" if res["converged"] else " NOT CONVERGED")
                     if res["n_iter"] is not None else "")
            print(f"{solver:<7} landmarks {res['landmarks_s']:6.1f} s, fit {res['fit_s']:7.1f} s "
                  f"(solve ≈ {res['fit_s'] - res['landmarks_s']:.1f} s), predict n "
                  f"{res['predict_train_s']:5.1f} s; peak memory "
                  f"{res['peak_kb'] / 2**20:.2f} GiB ({res['base_kb'] / 2**20:.2f} GiB "
                  f"before the fit); r = {res['r']}, σ = {res['sigma']:.3f}, train RMSE "
                  f"{res['train_rmse']:.4f}  {iters}")
            rec.figure(f"{solver}: fit, n = {args.rows:,}, s = {args.landmarks:,}", res["fit_s"],
                       "s")
            rec.figure(f"{solver}: peak memory", res["peak_kb"] / 2**20, "GiB")
    ok = [r for r in results.values() if "train" in r]
    if len(ok) == 2:
        for part in ("train", "test"):
            a, b = ok[0][part], ok[1][part]
            gap = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
            print(f"max |{ok[0]['solver']} − {ok[1]['solver']}| / max |prediction| on the "
                  f"{part} points: {gap:.2e}")
            rec.figure(f"max |{ok[0]['solver']} − {ok[1]['solver']}| / max |prediction|, "
                       f"{part} points", gap, "")
    rec.save()


if __name__ == "__main__":
    main()
