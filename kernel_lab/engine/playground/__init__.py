"""The Playground below its window: its declared parameters (``params``), the checked state
sessions and presets carry (``state``), the fit engine (``fit``: a request in, the fit out,
with its caches) and the headless run of ``kernel-lab run --preset playground-…``
(``run``). The numerics are :mod:`kernel_lab.core.playground`."""
