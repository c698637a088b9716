"""The Playground's *Export model…*, without Qt: the library estimator that makes the
Playground's current fit, fitted on its training points, saved as a model file.

The Playground computes its fits with its own caches (every λ from one
eigendecomposition, features kept per σ and s or D, DSG and GFC stepped) — the same
numbers as the library's estimators give: exact KRR and CKRR are
:class:`~kernel_lab.core.models.KernelRidge` / ``CenteredKernelRidge``, Nyström and
random-feature ridge are ``NystromRidge`` / ``RFFRidge`` with an unpenalised intercept,
DSG after k iterations is ``DSGRegressor`` (``DSGClassifier`` for two classes) run k
iterations, GFC with k features is :func:`~kernel_lab.core.playground.gfc_model` with k.
:func:`playground_estimator` fits that estimator on the points; :func:`export_playground`
saves it (:func:`kernel_lab.engine.model_file.save_model`) as the file's one model, a
``Pipeline`` of the Playground's typing (:func:`playground_pipeline`: columns ``x``, or
``x1`` and ``x2``, of numbers) and the estimator. The inputs are the Playground's
coordinates as drawn, with no scaling in front: its generated and painted points are
not scaled, and columns sent from a table were mapped onto the view when sent (the model
takes the mapped values, and its notes carry the Playground's note on them).
For two classes the model's ``predict`` is the fitted function, whose sign is the class
(±1), as the Playground draws it; DSG's classifier predicts the class itself and its
``decision_function`` is the function.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline

from kernel_lab.core import playground as pg
from kernel_lab.core.errors import ParameterError
from kernel_lab.core.models import (
    CenteredKernelRidge,
    DSGClassifier,
    DSGRegressor,
    KernelRidge,
    NystromRidge,
    RFFRidge,
)
from kernel_lab.core.models.preprocess import TableColumns
from kernel_lab.data.encoding import numeric_encoding
from kernel_lab.engine.model_file import SavedModel, save_model
from kernel_lab.engine.playground.state import PlaygroundState, shape_of
from kernel_lab.engine.worker import Job

#: Each method's words in a model's name.
METHOD_NAMES = {"krr": "KRR", "ckrr": "CKRR", "nystrom": "Nyström ridge",
                "rff": "RFF ridge", "dsg": "DSG", "gfc": "GFC"}


@dataclass
class PlaygroundExport:
    """What :func:`export_playground` wrote: the file, the model's name (``names``: the
    one model) and notes, as the run export's report has them."""

    path: Path
    names: list[str]
    notes: list[str] = field(default_factory=list)
    test_error: float | None = None


def _training(state: PlaygroundState) -> tuple[np.ndarray, np.ndarray]:
    pts = state.points
    if pts is None:
        raise ParameterError("the Playground state holds no points to fit")
    train = ~pts.test
    X, y = pts.X[train], pts.y[train]
    if len(y) < 2:
        raise ParameterError("the Playground needs at least two training points to export "
                             "a model: paint some, or choose a data set")
    return X, y


def playground_estimator(state: PlaygroundState, steps_done: int | None = None
                         ) -> tuple[str, Any, dict[str, Any]]:
    """The library estimator of ``state``'s method and parameters fitted on its training
    points: ``(name, estimator, params)``. ``steps_done``: GFC's features actually built
    (fewer than asked once GFC is done); default ``state.steps``.

    Raises :class:`ParameterError` with fewer than two training points, or for DSG / GFC
    before their first step."""
    X, y = _training(state)
    p = state.params
    method, kernel = p["method"], p["kernel"]
    sigma, lam, seed = float(p["sigma"]), float(p["lam"]), int(p["seed"])
    _dim, task = shape_of(state.dataset)
    kernel_params = {"sigma": sigma}
    params: dict[str, Any] = {"method": method, "kernel": kernel, "sigma": sigma}
    if method in ("krr", "ckrr"):
        est: Any = (CenteredKernelRidge if method == "ckrr" else KernelRidge)(
            lam, kernel=kernel, kernel_params=kernel_params)
        params["lam"] = lam
        name = f"{METHOD_NAMES[method]} {kernel} σ={sigma:g} λ={lam:g}"
    elif method == "nystrom":
        s = min(int(p["s"]), len(y))
        est = NystromRidge(lam, kernel=kernel, kernel_params=kernel_params, n_components=s,
                           sampler=p["sampler"], centered=True, solver="direct",
                           random_state=seed)
        params.update(lam=lam, s=s, sampler=p["sampler"], seed=seed)
        name = f"{METHOD_NAMES[method]} {p['sampler']} s={s} σ={sigma:g} λ={lam:g}"
    elif method == "rff":
        D = int(p["D"])
        # the Playground's D features: the first D of its one draw per seed
        W, b = pg.rff_frequencies(kernel, sigma, X.shape[1], bool(p["orthogonal"]), seed, D)
        est = RFFRidge(lam, kernel=kernel, sigma=sigma, frequencies=W, phases=b,
                       centered=True)
        params.update(lam=lam, D=D, orthogonal=bool(p["orthogonal"]), seed=seed)
        name = f"{METHOD_NAMES[method]} D={D} σ={sigma:g} λ={lam:g}"
    elif method == "dsg":
        k = int(state.steps)
        if k < 1:
            raise ParameterError("DSG has run no iteration yet: press Step or Play, then "
                                 "export its model")
        classes = task == "classification"
        est = (DSGClassifier if classes else DSGRegressor)(
            "logistic" if classes else "squared", kernel=kernel, sigma=sigma,
            nu=float(p["nu"]), n_iter=k, batch_size=min(8, len(y)),
            n_features_per_iter=8, random_state=seed)
        params.update(nu=float(p["nu"]), iterations=k, seed=seed)
        name = f"{METHOD_NAMES[method]} {kernel} σ={sigma:g} ν={float(p['nu']):g}, " \
            f"{k} iterations"
    else:  # gfc
        k = int(state.steps if steps_done is None else steps_done)
        if k < 1:
            raise ParameterError("GFC has built no feature yet: press Step or Play, then "
                                 "export its model")
        est = pg.gfc_model(k, seed)
        params = {"method": method, "features": k, "seed": seed}
        name = f"{METHOD_NAMES[method]}, {k} features"
    est.fit(X, y)
    return name, est, params


def playground_pipeline(state: PlaygroundState, estimator: Any) -> Pipeline:
    """The fitted ``estimator`` behind the Playground's typing: its inputs ``x`` (1-D) or
    ``x1``, ``x2`` as columns of numbers (:class:`TableColumns`, so a table of new points
    is read by column name and a missing column is refused by name)."""
    dim, _task = shape_of(state.dataset)
    columns = ["x"] if dim == 1 else ["x1", "x2"]
    return Pipeline([("columns", TableColumns(numeric_encoding(columns, "y")).fit()),
                     ("model", estimator)])


def export_playground(state: PlaygroundState, path: str | os.PathLike[str], *,
                      steps_done: int | None = None) -> PlaygroundExport:
    """Save the Playground's current fit (``state``: :meth:`PlaygroundModel.state`) to
    ``path`` as a model file: :func:`playground_estimator` refitted on the training
    points, the test error on its test points in the metadata (the Playground's own
    figure), with the data set, the inputs and the parameters. ``steps_done``: see
    :func:`playground_estimator`. Returns what was written."""
    name, est, params = playground_estimator(state, steps_done)
    dim, task = shape_of(state.dataset)
    pts = state.points
    assert pts is not None
    X_test, y_test = pts.X[pts.test], pts.y[pts.test]
    score = est.decision_function if isinstance(est, DSGClassifier) else est.predict
    test_error = pg.error(score(X_test), y_test, task) if len(y_test) else None
    columns = ["x"] if dim == 1 else ["x1", "x2"]
    notes = [f"fitted on the Playground's {int(np.count_nonzero(~pts.test))} training "
             f"points; inputs {', '.join(columns)} as drawn in the Playground"]
    if task == "classification":
        notes.append("two classes: the sign of the fitted function is the class (+1 or "
                     "−1)" + ("; predict gives the class, decision_function the function"
                              if isinstance(est, DSGClassifier) else
                              "; predict gives the function"))
    if state.note:
        notes.append(f"the Playground's note on its points: {state.note}")
    error_name = "test error rate" if task == "classification" else "test MSE"
    metadata = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "experiment": "playground",
        "seed": int(state.params["seed"]),
        "data": {"playground": state.dataset, "n": state.n, "noise": state.noise,
                 "points": int(pts.n), "test_points": int(np.count_nonzero(pts.test)),
                 "task": task},
        "models": {name: {"params": params, "test_error": test_error,
                          "error_name": error_name, "notes": notes}},
    }  # the columns and their types: save_model reads them off the pipeline
    written = save_model(SavedModel({name: playground_pipeline(state, est)}, metadata),
                         path)
    return PlaygroundExport(Path(written), [name], notes, test_error)


@dataclass(frozen=True)
class PlaygroundExportRequest:
    """One Playground export: its state, the file, GFC's features built."""

    state: PlaygroundState
    path: Path
    steps_done: int | None = None


def playground_export_job(job: Job) -> None:
    """Compute ``job.request`` (a :class:`PlaygroundExportRequest`) on a
    :class:`~kernel_lab.engine.worker.Worker`: ``finished(PlaygroundExport)`` or
    ``failed(message, is_user_error)``."""
    req: PlaygroundExportRequest = job.request
    job.emit("finished", export_playground(req.state, req.path, steps_done=req.steps_done))


def export_request(model: Any, path: str | os.PathLike[str]) -> PlaygroundExportRequest:
    """The export of a :class:`~kernel_lab.model.playground.PlaygroundModel`'s current
    fit to ``path`` (a ``.skops`` suffix added when it has none): its state and, for GFC,
    the features its latest fit built (GFC may stop before the steps asked for)."""
    path = Path(path).expanduser()
    if not path.suffix:
        path = path.with_suffix(".skops")
    latest = model.latest.primary if model.latest is not None else None
    steps_done = None
    if latest is not None and latest.method == "gfc" and model.params["method"] == "gfc" \
            and model.latest.serial == model.serial:
        steps_done = int(latest.extra.get("features", model.steps))
    return PlaygroundExportRequest(model.state(), path, steps_done)
