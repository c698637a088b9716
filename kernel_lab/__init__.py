"""Kernel Lab: a laboratory for scalable kernel methods.

The numerical core (:mod:`kernel_lab.core`) and the experiments
(:mod:`kernel_lab.experiments`) are plain numpy/scipy and can be used from
scripts; the window (:mod:`kernel_lab.gui`) and the command line
(:mod:`kernel_lab.cli`) sit on top of them.
"""

from __future__ import annotations

__version__ = "0.1.0"
