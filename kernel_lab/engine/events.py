"""A tiny observer: plain callbacks, no Qt, so models and run handles can be tested with
no GUI (the window connects its widgets to them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Event:
    """Something that happens; ``connect`` a callback, ``emit`` calls them in order."""

    __slots__ = ("_slots",)

    def __init__(self) -> None:
        self._slots: list[Callable[..., Any]] = []

    def connect(self, slot: Callable[..., Any]) -> Callable[..., Any]:
        self._slots.append(slot)
        return slot

    def disconnect(self, slot: Callable[..., Any] | None = None) -> None:
        """Remove ``slot`` (every callback when None)."""
        if slot is None:
            self._slots.clear()
        elif slot in self._slots:
            self._slots.remove(slot)

    def emit(self, *args: Any) -> None:
        for slot in list(self._slots):
            slot(*args)
