"""What a Dask worker imports to run a learning curve's tasks, and what ``kernel-lab run``
imports before its first task.

A worker unpickles each task: the function (by reference, so its module is imported) and
its arguments (the modules of their classes), plus the engine's wrapper
(:mod:`kernel_lab.engine.dask_parts`). Importing scikit-learn there cost each worker
1–2 s, once per worker whatever their number, so it capped the speed-up of two workers
over one; none of those modules may import it. The modules are taken from a run: every
call of the run on its parts and on its executor goes through pickle here, and the
unpickler lists the modules it needs.
"""

from __future__ import annotations

import ast
import io
import pickle
import subprocess
import sys

import numpy as np

from kernel_lab.core.progress import Progress
from kernel_lab.core.rows import LocalParts, PartitionedData, RowPlan, array_parts, standardize_plan
from kernel_lab.experiments.learning_curve import LearningCurveExperiment

#: Checked in a fresh interpreter: heavy packages a worker's task must not import.
FORBIDDEN = ("sklearn", "kernel_lab.experiments", "kernel_lab.engine.runner")


class _Recorder(pickle.Unpickler):
    def __init__(self, data: bytes, seen: set[str]) -> None:
        super().__init__(io.BytesIO(data))
        self.seen = seen

    def find_class(self, module: str, name: str):
        self.seen.add(module)
        return super().find_class(module, name)


def _through_pickle(value, seen: set[str]):
    return _Recorder(pickle.dumps(value), seen).load()


class _RecordingParts(LocalParts):
    """LocalParts that sends every call through pickle, as a cluster does, noting the
    modules each call needs."""

    def __init__(self, parts, seen: set[str]) -> None:
        super().__init__(parts)
        self.seen = seen

    def map(self, fn, *args, progress=None, message=""):
        fn, args = _through_pickle((fn, args), self.seen)
        return super().map(fn, *args, progress=progress, message=message)


class _RecordingExecutor:
    def __init__(self, seen: set[str]) -> None:
        self.seen = seen

    def map(self, fn, tasks):
        for task in tasks:
            f, t = _through_pickle((fn, task), self.seen)
            yield f(t)


def _task_modules() -> set[str]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=600)
    seen: set[str] = set()
    local = LocalParts(array_parts(X, y, 6))
    plan = standardize_plan(local, RowPlan.split(4, 600, 0.25))
    data = PartitionedData(_RecordingParts(local.parts, seen), plan,
                           [f"x{j}" for j in range(4)], "y", name="generated")
    params = {"kernel": "gaussian", "sigma": None, "loss": "auto", "nu": 1e-3, "theta": None,
              "t0": None, "n_iter": 60, "batch_size": 16, "features_per_iter": 8,
              "points": 4, "rff_max": None, "exact_max": 0, "seed": 4}
    for _ in LearningCurveExperiment().run(params, data, Progress(), _RecordingExecutor(seen)):
        pass
    return {m for m in seen if m.startswith("kernel_lab")}


def test_a_workers_learning_curve_tasks_import_no_sklearn() -> None:
    modules = _task_modules()
    # the run's own tasks: the keyed subsets, DSG's test sums, the baselines' normal sums
    assert {"kernel_lab.core.dsg.stream", "kernel_lab.core.dsg.curve",
            "kernel_lab.core.ridge.normal"} <= modules, modules
    imports = "; ".join(f"import {m}" for m in sorted(modules | {
        "kernel_lab.engine.dask_parts", "kernel_lab.data.partitioned"}))
    code = (f"import sys; {imports}; "
            f"print(' '.join(sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == [], (sorted(modules), out.stdout)


def test_the_models_package_imports_an_estimator_on_first_use() -> None:
    code = ("import sys\n"
            "import kernel_lab.core.models as models\n"
            "before = 'sklearn' in sys.modules\n"
            "from kernel_lab.core.models import KernelRidge\n"
            "from kernel_lab.core.models.krr import KernelRidge as K\n"
            "assert KernelRidge is K\n"
            "assert all(getattr(models, name).__name__ == name for name in models.__all__)\n"
            "assert set(models.__all__) <= set(dir(models))\n"
            "try:\n"
            "    models.NoSuchModel\n"
            "except AttributeError:\n"
            "    pass\n"
            "else:\n"
            "    raise AssertionError('no AttributeError')\n"
            "print(before, 'sklearn' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_engine_package_loads_the_runner_on_first_use() -> None:
    code = ("import sys\n"
            "import kernel_lab.engine.dask_parts\n"
            "before = 'kernel_lab.engine.runner' in sys.modules\n"
            "from kernel_lab.engine import RunResult, RunSpec, run, run_experiment\n"
            "from kernel_lab.engine import runner, spec\n"
            "assert run is runner.run and RunSpec is spec.RunSpec\n"
            "print(before)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False"]


def test_getting_one_experiment_imports_only_its_module() -> None:
    code = ("import sys\n"
            "from kernel_lab.experiments import get_experiment\n"
            "assert get_experiment('learning-curve').name == 'learning-curve'\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith("
            "'kernel_lab.experiments.') and m.split('.')[2] in ('nystrom', 'gfc', "
            "'krr_path', 'ckrr_risk', 'spectrum'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == []


def test_the_registry_names_every_builtin_experiment_by_its_own_name() -> None:
    import importlib

    from kernel_lab.experiments import get_experiment, list_experiments
    from kernel_lab.experiments.registry import BUILTIN

    for name, (module, cls) in BUILTIN.items():
        assert getattr(importlib.import_module(module), cls).name == name
        assert get_experiment(name).name == name
    assert set(BUILTIN) <= {cls.name for cls in list_experiments()}


def test_a_task_limits_every_blas_to_one_thread_even_one_loaded_after_the_first_task() -> None:
    """A worker's first task may come before SciPy is imported (no module of the core's
    tasks imports scikit-learn, which loaded it); SciPy's own OpenBLAS must be limited to
    one thread in a task all the same."""
    code = ("import sys\n"
            "import kernel_lab.engine.dask_parts\n"
            "from kernel_lab.core.executor import call_single_threaded\n"
            "def threads(_):\n"
            "    import scipy.linalg\n"
            "    from threadpoolctl import threadpool_info\n"
            "    return [(i['filepath'], i['num_threads']) for i in threadpool_info()\n"
            "            if i['user_api'] == 'blas']\n"
            "print('scipy.linalg' in sys.modules)\n"
            "print(call_single_threaded(lambda _: None, None))\n"
            "print(call_single_threaded(threads, None))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "False"  # the case this checks: SciPy not loaded before
    libraries = ast.literal_eval(out[2])
    assert libraries and all(n == 1 for _, n in libraries), libraries
