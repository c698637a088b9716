"""The experiment contract — declared parameters and plots, and a generator of partial
results whose every ``yield`` is a progress report and a cancellation point — and the helpers
experiments share (λ grids, kernel parameters, the CKRR paper's kernels, padding, indefinite
kernels).

Experiment modules import helpers from here (and plots from ``plotspec``), never from one
another: the registry imports the experiments, and nothing below it imports it back."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.executor import SERIAL, TaskExecutor  # experiments import them from here
from kernel_lab.core.kernels import (
    KERNEL_PARAMS,
    KERNELS,
    InnerProductKernel,
    Kernel,
    ShiftInvariantKernel,
    make_kernel,
    median_heuristic,
    resolve_bandwidth,
)
from kernel_lab.core.params import ParamSpec, resolve_params
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.experiments.plotspec import PlotSpec

SEED = ParamSpec("seed", "int", 0, low=0, high=2**32 - 1,
                 help="drives every random choice: data draws, splits, samplers")


@dataclass
class ModelChoice:
    """A fitted model a run marks best (or one of the models it fits), to be kept.

    Attributes
    ----------
    name : str
        Short label, e.g. ``"KRR gaussian σ=1.2 λ=0.01"``.
    estimator : object
        A FITTED scikit-learn estimator on the data set's prepared feature rows (the
        columns of ``data.X_train``).
    test_error : float or None
        The run's own figure for this model (from its table or summaries); None when the
        run has none for this very fit (the notes say why).
    error_name : str
        What ``test_error`` measures ("test MSE", "test error rate", …).
    params : dict
        The model's parameters in plain numbers and words (JSON-able).
    notes : list of str
        What a user should know: a refit on more rows than the run used, which trial of
        several, what the run's figure averages over.
    """

    name: str
    estimator: Any
    test_error: float | None
    error_name: str
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class PartialResult:
    """One step of a run: progress plus, optionally, the results so far.

    Attributes
    ----------
    fraction : float
        Progress in [0, 1].
    message : str
        What the run is doing now.
    table : dict of str to ndarray, optional
        All result columns so far (equal lengths); each partial result replaces the
        previous table, so a viewer simply redraws it. Not-yet-computed entries are NaN.
    summaries : dict, optional
        Scalar results so far (numbers or short strings).
    """

    fraction: float
    message: str = ""
    table: dict[str, np.ndarray] | None = None
    summaries: dict[str, Any] | None = None


class Experiment:
    """Base class of experiments; the built-in ones are listed in the registry
    (:mod:`kernel_lab.experiments.registry`), others added with its ``register``.

    Subclasses set the class attributes and implement :meth:`run`.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    description: ClassVar[str] = ""
    params: ClassVar[tuple[ParamSpec, ...]] = ()
    plots: ClassVar[tuple[PlotSpec, ...]] = ()
    default_data: ClassVar[str] = "gaussian"
    #: The data tasks (``Dataset.task``) the experiment can run on.
    tasks: ClassVar[tuple[str, ...]] = ("regression", "classification")


    @classmethod
    def param_specs(cls) -> tuple[ParamSpec, ...]:
        """The declared parameters followed by the common ``seed``."""
        return (*cls.params, SEED)

    @classmethod
    def resolve(cls, values: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults overlaid with ``values``, checked (raises ParameterError)."""
        return resolve_params(cls.param_specs(), values, owner=f"experiment {cls.name!r}")

    def fit_to_data(self, params: Mapping[str, Any], data: Dataset
                    ) -> tuple[dict[str, Any], list[str]]:
        """Parameters left at their defaults that the data cannot allow (more landmarks
        than training points, …) clamped to what they allow, with a note each; values the
        user changed are left as they are (the run then explains why they are
        impossible)."""
        return dict(params), []

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        """Planned peak memory in bytes and a note, for the window's run planner."""
        return {"memory_bytes": 0, "note": ""}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        """Yield partial results; independent tasks go through ``executor.map``."""
        raise NotImplementedError

    @property
    def keeps_models(self) -> bool:
        """Whether the experiment has models to keep (:meth:`best_models` overridden):
        told before a run, so ``--save-model`` is refused before any computation."""
        return type(self).best_models is not Experiment.best_models

    def best_models(self, params: Mapping[str, Any], data: Dataset,
                    table: Mapping[str, np.ndarray], summaries: Mapping[str, Any],
                    progress: Progress) -> list[ModelChoice]:
        """The fitted models a finished run marks best, the default first: what *Export
        model* and ``--save-model`` keep. ``params`` are the run's resolved parameters,
        ``data`` its data set opened again with the run's seed (in memory or kept in
        partitions), ``table`` and ``summaries`` its result. An experiment that fits no
        model to keep returns an empty list (the default)."""
        return []

    def preview(self, params: Mapping[str, Any], data: Dataset) -> dict[str, np.ndarray] | None:
        """Closed-form curves that cost milliseconds (theory), for the window to redraw as
        parameters change without a run; None when the experiment has none."""
        return None

    @classmethod
    def describe(cls) -> dict[str, Any]:
        """JSON-serialisable description (``kernel-lab describe``)."""
        return {
            "name": cls.name,
            "title": cls.title,
            "description": cls.description,
            "default_data": cls.default_data,
            "tasks": list(cls.tasks),
            "params": [s.to_dict() for s in cls.param_specs()],
            "plots": [p.to_dict() for p in cls.plots],
        }


def pad_columns(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Columns of different lengths padded with NaN to a common length, so results of
    different shapes (a curve over s, a point cloud) can share one table."""
    size = max((np.asarray(v).size for v in columns.values()), default=0)
    out = {}
    for key, v in columns.items():
        v = np.asarray(v, dtype=np.float64).ravel()
        col = np.full(size, np.nan)
        col[: v.size] = v
        out[key] = col
    return out


# -- indefinite kernels ------------------------------------------------------------------
#: An eigenvalue below −INDEFINITE_TOL × the largest is a real one, not rounding.
INDEFINITE_TOL = 1e-8


def indefinite_text(e_min: float, e_max: float, matrix: str = "K") -> str | None:
    """What to say when a kernel matrix has (truly) negative eigenvalues — the sigmoid
    kernel is not positive definite: ``matrix + λI`` is singular at λ = −e for each
    negative eigenvalue e, so results for λ up to |e_min| can explode. None when the
    matrix is positive semi-definite up to rounding."""
    if not np.isfinite(e_min) or e_min >= -INDEFINITE_TOL * max(e_max, 1e-300):
        return None
    return (f"{matrix} has eigenvalues down to {e_min:.3g}: λ near {-e_min:.3g} or below "
            f"makes {matrix} + λI singular (those points are marked)")


def singular_bound(e_min: float, e_max: float) -> float | None:
    """``−e_min`` when :func:`indefinite_text` flags the λ ≤ −e_min (the matrix truly
    indefinite: the matrix + λI is singular somewhere there), else None."""
    return None if indefinite_text(e_min, e_max) is None else -float(e_min)


# -- λ grids (krr-path, ckrr-risk) ---------------------------------------------------------
def lam_grid(lam_min: float, lam_max: float, count: int) -> np.ndarray:
    """A log-spaced λ grid; raises ParameterError if the bounds are out of order."""
    if lam_min >= lam_max:
        raise ParameterError(f"λ min ({lam_min:g}) must be below λ max ({lam_max:g})")
    return np.logspace(np.log10(lam_min), np.log10(lam_max), count)


def lam_specs(lam_min: float = 1e-4, lam_max: float = 1e2, count: int = 40
              ) -> tuple[ParamSpec, ...]:
    """λ grid parameters shared by the path experiments."""
    return (
        ParamSpec("lam_min", "float", lam_min, label="λ min", low=1e-12, high=1e12, log=True,
                  help="smallest regularisation λ on the grid"),
        ParamSpec("lam_max", "float", lam_max, label="λ max", low=1e-12, high=1e12, log=True,
                  help="largest regularisation λ on the grid"),
        ParamSpec("n_lams", "int", count, label="λ values", low=2, high=1000,
                  help="number of log-spaced λ values"),
    )


# -- the CKRR paper's inner-product kernels (ckrr-risk, spectrum) ---------------------------
#: The inner-product kernel families of the CKRR paper.
FAMILIES = ("linear", "polynomial", "sigmoid", "exponential")


def paper_kernels(names: list[str], params: Mapping[str, Any]) -> dict[str, InnerProductKernel]:
    """The chosen inner-product kernels; α, β, d default to the paper's settings."""
    out = {}
    for name in names:
        kp = {k: params.get(k) for k in ("alpha", "beta", "degree")}
        kernel = make_kernel(name, kp)
        assert isinstance(kernel, InnerProductKernel)
        out[name] = kernel
    return out


# -- kernel parameters shared by experiments -------------------------------------------
_SHIFT = tuple(n for n, c in KERNELS.items() if issubclass(c, ShiftInvariantKernel))
_INNER = tuple(n for n in KERNELS if n not in _SHIFT)


def kernel_param_specs(default: str = "gaussian",
                       choices: tuple[str, ...] = tuple(KERNELS)) -> tuple[ParamSpec, ...]:
    """``kernel`` plus its sub-parameters, each shown only for the kernels that use it."""
    shift = tuple(c for c in choices if c in _SHIFT)
    inner = tuple(c for c in choices if c in _INNER)
    specs = [ParamSpec("kernel", "choice", default, choices=choices,
                       help="kernel function; see `kernel-lab describe` for the formulas")]
    if shift:
        specs.append(ParamSpec("sigma", "float", None, label="bandwidth σ", low=1e-12, high=1e12,
                               log=True, allow_auto=True, when={"kernel": shift},
                               help="bandwidth of the shift-invariant kernels; auto = median "
                                    "pairwise distance of the training inputs"))
    if inner:
        specs += [
            ParamSpec("alpha", "float", None, label="α", low=-1e6, high=1e6, allow_auto=True,
                      when={"kernel": inner},
                      help="g(t) = g(α t + β) family scale; auto = the kernel's default (1)"),
            ParamSpec("beta", "float", None, label="β", low=-1e6, high=1e6, allow_auto=True,
                      when={"kernel": inner},
                      help="shift; auto = the paper's value (linear 1, polynomial 1, "
                           "sigmoid −1, exponential 0)"),
        ]
        if "polynomial" in inner:
            specs.append(ParamSpec("degree", "int", 2, label="degree d", low=1, high=20,
                                   when={"kernel": ("polynomial",)},
                                   help="polynomial degree"))
    return tuple(specs)


def build_kernel(params: Mapping[str, Any], X_train: np.ndarray,
                 rows: np.ndarray | None = None) -> Kernel:
    """The kernel described by ``params``; an automatic bandwidth σ is the median
    pairwise distance of ``X_train`` (see :func:`~kernel_lab.core.kernels.median_heuristic`):
    with ``rows`` (the training rows' global indices, :func:`row_index`), on the rows the
    keys of the run's seed choose, wherever the rows are held."""
    name = params["kernel"]
    kparams = {k: params[k] for k in KERNEL_PARAMS[name] if params.get(k) is not None}
    if issubclass(KERNELS[name], ShiftInvariantKernel):
        sigma = params.get("sigma")
        if sigma is None and rows is not None:
            sigma = median_heuristic(X_train, seed=int(params["seed"]), rows=rows)
        kparams["sigma"] = resolve_bandwidth(sigma, X_train)
    return make_kernel(name, kparams)


def row_index(data: Dataset, which: str = "train") -> np.ndarray:
    """The global row indices of the data's training (or test) rows, in the order of
    ``X_train`` (``X_test``): what a keyed choice of rows keys on, so that the same rows
    give the same choice wherever they are held (one array, a CSV, Parquet partitions).

    Every data set carries its row plan (``data.plan``), in memory or kept in
    partitions; a given split (generated data, plain arrays) numbers the training rows
    ``0 … n_train−1`` and the test rows after them."""
    plan = data.plan
    index = np.arange(plan.n)
    return index[plan.which(index, which)]
