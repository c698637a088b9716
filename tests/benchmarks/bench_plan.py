"""Benchmark: the plan line's time estimate against the measured run time.

Run: ``python tests/benchmarks/bench_plan.py``.

For every experiment: one warm-up run on a synthetic table (which calibrates the
experiment's time model, as a finished run does in the window), then on two synthetic
tables and one real one (scikit-learn's diabetes data) the estimate shown before Run is
compared with the run's measured time. Target: every ratio estimate / measured within
[1/3, 3], and the measured time inside the shown range or within 3× of it.

The runs go through the same lab model as the window (in-process launcher, so the
measured time is the run's own ``total_s``, data loading included).
"""

from __future__ import annotations

import perfdoc  # this folder, first on the path of a script

from kernel_lab.data.source import DataSource
from kernel_lab.engine.handle import InlineLauncher
from kernel_lab.experiments import list_experiments
from kernel_lab.model import LabModel, RunState

WARM_UP = "gaussian:n=300,p=20,f=sin,noise=0.5"
TABLES = ("gaussian:n=600,p=40,f=sin,noise=0.5", "friedman:n=1200", "diabetes")
#: Smaller settings where an experiment's defaults take more than ~20 s here.
PARAMS = {"learning-curve": {"n_iter": 600}, "ckrr-risk": {"trials": 20}}


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    rows = []
    for exp in list_experiments():
        model = LabModel(InlineLauncher())
        said: list[str] = []
        model.status.connect(said.append)
        model.set_experiment(exp.name, PARAMS.get(exp.name, {}))
        model.load_data(DataSource.from_spec(WARM_UP))
        model.refresh()
        uncalibrated = model.plan.seconds
        model.start_run()
        if model.state is not RunState.DONE:
            rows.append((exp.name, "warm-up", None, None, said[-1] if said else "failed"))
            continue
        warm = model.result.timings["total_s"]
        rows.append((exp.name, f"warm-up {WARM_UP}", uncalibrated, warm, ""))
        for spec in TABLES:
            model.load_data(DataSource.from_spec(spec))
            model.refresh()
            est, span = model.plan.seconds, model.plan.seconds_range
            model.start_run()
            if model.state is not RunState.DONE:
                rows.append((exp.name, spec, est, None, said[-1] if said else "failed"))
                continue
            rows.append((exp.name, spec, est, model.result.timings["total_s"], span))
    print(f"{'experiment':<15} {'data':<40} {'estimate':>9} {'measured':>9} {'ratio':>7}")
    worst = 1.0
    for name, spec, est, got, span in rows:
        if est is None or got is None:
            print(f"{name:<15} {spec:<40} {'':>9} {'':>9} {'':>7}  {span}")
            continue
        ratio = est / got
        if not spec.startswith("warm-up"):
            worst = max(worst, ratio, 1 / ratio)
        flag = "" if spec.startswith("warm-up") or 1 / 3 <= ratio <= 3 else "  ← MISSED"
        print(f"{name:<15} {spec[:40]:<40} {est:9.2f} {got:9.2f} {ratio:7.2f}{flag}")
    print(f"worst ratio after the warm-up: {worst:.2f}× (target ≤ 3×)")
    for name in dict.fromkeys(row[0] for row in rows):
        mine = [r for r in rows if r[0] == name and not r[1].startswith("warm-up")]
        done = [r[2] / r[3] for r in mine if r[2] is not None and r[3] is not None]
        # a table that failed to run counts as a miss (NaN), as the table above shows
        off = max((max(q, 1 / q) for q in done), default=float("nan"))
        rec.figure(f"{name}: worst of estimate ÷ measured and its inverse, "
                   f"{len(done)} of {len(TABLES)} tables",
                   off if len(done) == len(TABLES) else float("nan"), "×", 3)
    rec.save()


if __name__ == "__main__":
    main()
