"""Progress reporting and cooperative cancellation.

Long computations take a ``progress`` callable and call
``progress(fraction, message)`` now and then. The callable raises
:class:`Cancelled` when the run was cancelled, so inner loops stop promptly
without knowing about threads or processes.
"""

from __future__ import annotations

from collections.abc import Callable


class Cancelled(Exception):
    """Raised inside a computation when its run was cancelled."""


class Progress:
    """A progress callback with a cancellation check and sub-ranges.

    Parameters
    ----------
    report : callable, optional
        ``report(fraction, message)`` receives every report, with ``fraction``
        mapped into the overall range ``[0, 1]``.
    is_cancelled : callable, optional
        Returns True once the run should stop; checked on every report.
    start, stop : float
        The overall range this object covers (see :meth:`sub`).
    """

    def __init__(
        self,
        report: Callable[[float, str], None] | None = None,
        is_cancelled: Callable[[], bool] | None = None,
        *,
        start: float = 0.0,
        stop: float = 1.0,
    ) -> None:
        self._report = report
        self._is_cancelled = is_cancelled
        self.start = float(start)
        self.stop = float(stop)

    def check(self) -> None:
        """Raise :class:`Cancelled` if the run was cancelled."""
        if self._is_cancelled is not None and self._is_cancelled():
            raise Cancelled("the run was cancelled")

    def __call__(self, fraction: float, message: str = "") -> None:
        self.check()
        if self._report is not None:
            f = min(max(float(fraction), 0.0), 1.0)
            self._report(self.start + f * (self.stop - self.start), message)

    def sub(self, start: float, stop: float) -> Progress:
        """A child covering the part ``[start, stop]`` of this one's range."""
        width = self.stop - self.start
        return Progress(
            self._report,
            self._is_cancelled,
            start=self.start + start * width,
            stop=self.start + stop * width,
        )
