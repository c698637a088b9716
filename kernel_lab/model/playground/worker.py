"""The Playground's fits on the one worker primitive (:mod:`kernel_lab.engine.worker`):
what a fit job computes, and the worker that computes them.

The worker computes the latest request only; a long DSG/GFC replay gives way between
chunks (the engine raises :class:`~kernel_lab.core.playground.Superseded` once the job
is superseded); a quick exact answer is completed (the eigendecomposition the λ slider
needs) once no new request came for :data:`FOLLOWUP_DELAY`. Stale answers are dropped
by the request's :class:`~kernel_lab.engine.worker.Ticket`, nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable

from kernel_lab.engine.blas import single_blas_thread
from kernel_lab.engine.playground.fit import Fit, FitEngine
from kernel_lab.engine.worker import Job, Post, Worker

#: Seconds without a new request before a quick exact answer is completed.
FOLLOWUP_DELAY = 0.15

# The fits run on one BLAS thread (single_blas_thread): on a two-core laptop the worker
# then has one core and the GUI thread the other, and numpy's and scipy's separate BLAS
# pools (a fit uses both) do not spin against each other — measured, alternating
# two-thread pools tripled a σ move's Cholesky solve.


def _wants_followup(fit: Fit) -> bool:
    return bool(fit.primary.extra.get("followup")
                or (fit.compare is not None and fit.compare.extra.get("followup")))


def _followup_delay(fit: Fit) -> float:
    """The quiet wait before ``fit``'s follow-up: :data:`FOLLOWUP_DELAY`, or shorter where
    the engine says its follow-up gives way to a newer request (``extra["followup_delay"]``)."""
    return min(float(r.extra.get("followup_delay", FOLLOWUP_DELAY))
               for r in (fit.primary, fit.compare) if r is not None)


def fit_job(engine: FitEngine, paint: Callable[[Fit], None] | None = None
            ) -> Callable[[Job], None]:
    """``compute(job)`` for a :class:`Worker`: the fit of ``job.request`` (a
    :class:`~kernel_lab.engine.playground.fit.Request`) sent as ``("fit", fit)``, then,
    after a quick answer and a quiet :data:`FOLLOWUP_DELAY`, the complete one.
    Above :data:`~kernel_lab.engine.playground.fit.PREVIEW_ABOVE` training points the
    quick answer is a Nyström preview, and the follow-ups come one after another while
    the hand rests: the exact fit, then its eigendecomposition.
    ``paint(fit)``, given by the view, makes what it draws (``Fit.picture``) here,
    off the GUI thread. Once the user has paused, a worker thread also makes what the
    next gesture will need (:meth:`FitEngine.prepare`)."""

    def done(fit: Fit) -> Fit:
        if paint is not None:
            paint(fit)
        return fit

    def compute(job: Job) -> None:
        with single_blas_thread():
            fit = engine.compute(job.request, cancelled=job.superseded)
        job.emit("fit", done(fit))  # not terminal: a follow-up may come
        stage = 0
        while _wants_followup(fit) and job.quiet(_followup_delay(fit)):
            # complete the answer once the user has paused: a σ drag keeps getting
            # quick answers meanwhile (at large n: a preview, the exact fit, its λ curve;
            # a newer request stops this, and its ticket drops what was still computing)
            stage += 1
            with single_blas_thread():
                fit = engine.compute(job.request, followup=stage, cancelled=job.superseded)
            job.emit("fit", done(fit))
        if not job.inline and engine.wants_preparing(job.request) \
                and job.quiet(FOLLOWUP_DELAY):
            # while the hand rests, what the next gesture needs (nothing is sent)
            with single_blas_thread():
                engine.prepare(job.request, cancelled=job.superseded)

    return compute


def fit_worker(engine: FitEngine, *, post: Post | None = None, inline: bool = False,
               paint: Callable[[Fit], None] | None = None) -> Worker:
    """The Playground's worker over ``engine``: a thread named ``playground-fit`` (the
    window passes ``post=gui_poster(window)`` and its view's ``paint``), or ``inline``
    (computed at once in the caller's thread: scripts, tests, a model without a
    window)."""
    return Worker(fit_job(engine, paint), name="playground-fit", post=post, inline=inline)
