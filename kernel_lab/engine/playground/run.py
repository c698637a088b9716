"""A Playground state fitted headless — ``kernel-lab run --preset playground-…`` — into the
document ``result.json`` holds: the parameters, the data (and its points), the fit's errors
and its values on the view's grid (from which ``plot.png``, the function view, is drawn)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from kernel_lab.core.playground import FitResult
from kernel_lab.engine.atomic import write_atomic
from kernel_lab.engine.jsonable import jsonable
from kernel_lab.engine.output import RESULT, write_outputs
from kernel_lab.engine.playground.fit import FitEngine, Request
from kernel_lab.engine.playground.state import PlaygroundState
from kernel_lab.engine.runner import versions

#: ``result.json``'s ``view`` field for a Playground run (a lab run has ``experiment``).
VIEW = "playground"


def run_playground(state: PlaygroundState, *, title: str = "", about: str = ""
                   ) -> dict[str, Any]:
    """Fit ``state`` as the window would (its complete answer, not the quick one) and
    return the result document."""
    started = datetime.now().isoformat(timespec="seconds")
    points = state.make_points()
    req = Request(1, 1, points, state.dim, state.task, dict(state.params), state.steps)
    fit = FitEngine().compute(req)
    doc: dict[str, Any] = {
        "view": VIEW, "title": title, "about": about, "started": started,
        "seed": int(state.params["seed"]), "params": dict(state.params),
        "steps": state.steps,
        "data": {"dataset": state.dataset, "n": points.n, "noise": state.noise,
                 "dim": state.dim, "task": state.task,
                 "train": int(np.count_nonzero(~points.test)),
                 "test": int(np.count_nonzero(points.test)), "note": state.note},
        "points": points.to_dict(),
        "fit": _fit_dict(fit.primary, fit.grid),
        "versions": versions(),
    }
    if fit.compare is not None:
        doc["compare"] = _fit_dict(fit.compare, fit.grid)
    return jsonable(doc)


def _fit_dict(r: FitResult, G: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {"method": r.method, "train_error": r.train_error,
                           "test_error": r.test_error, "seconds": r.seconds,
                           "n_features": r.n_features, "dof": r.dof,
                           "grid": {"points": G, "values": r.grid},
                           "train_predictions": r.train, "test_predictions": r.test}
    if r.landmarks is not None:
        out["landmarks"] = r.landmarks
    if r.curve is not None:
        out["lam_curve"] = r.curve
    history = r.extra.get("history")
    if history is not None:
        out["history"] = {"step": history[:, 0], "train": history[:, 1],
                          "test": history[:, 2]}
    for key in ("iterations", "features", "done"):
        if key in r.extra:
            out[key] = r.extra[key]
    return out


def write_playground_result(doc: dict[str, Any], out_dir: str | os.PathLike[str], *,
                            plot: Callable[[Path], Path] | None = None) -> Path:
    """``result.json`` in ``out_dir`` (created if needed), written whole and last, after
    ``plot.png`` when ``plot`` (a function drawing it to the path it is given) is given;
    see :func:`~kernel_lab.engine.output.write_outputs`."""
    text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    writers: list[tuple[str, Callable[[Path], Path]]] = [] if plot is None else \
        [("plot.png", plot)]
    writers.append((RESULT, lambda p: write_atomic(p, text)))
    return write_outputs(out_dir, writers)[RESULT]
