"""Bundled examples: scikit-learn's small data sets (inside its wheel: no download) and
the tables shipped in ``kernel_lab/resources/data/``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernel_lab.data.table import Table


def _sklearn_example(loader_name: str, target: str) -> Callable[[], Table]:
    """``target``: ``"value"`` (regression), ``"pm1"`` (two classes as ±1) or ``"classes"``
    (class codes 0 … K−1 with their names)."""
    def load() -> Table:
        from sklearn import datasets

        bunch = getattr(datasets, loader_name)()
        y = np.asarray(bunch.target, dtype=np.float64)
        if target == "pm1":
            y = 2.0 * y - 1.0
        classes = [str(c) for c in bunch.target_names] if target == "classes" else None
        names = [str(n) for n in bunch.feature_names]
        return Table(np.asarray(bunch.data, dtype=np.float64), y, names, "target",
                     classes=classes)

    return load


def _bundled_example(filename: str) -> Callable[[], Table]:
    """A table shipped in ``kernel_lab/resources/data/``: gzip-compressed CSV, a header
    row of names, the target in the last column (provenance and licence in the README
    there)."""
    def load() -> Table:
        import gzip
        import io
        from importlib import resources

        raw = resources.files("kernel_lab").joinpath("resources", "data", filename).read_bytes()
        header, _, body = gzip.decompress(raw).decode("ascii").partition("\n")
        names = header.strip().split(",")
        M = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2)
        return Table(M[:, :-1], M[:, -1].copy(), names[:-1], names[-1])

    return load


EXAMPLES: dict[str, tuple[str, Callable[[], Table]]] = {
    "diabetes": ("Diabetes progression (442 × 10, regression; scikit-learn)",
                 _sklearn_example("load_diabetes", "value")),
    "breast-cancer": ("Breast cancer Wisconsin (569 × 30, classes ±1; scikit-learn)",
                      _sklearn_example("load_breast_cancer", "pm1")),
    "digits": ("Handwritten digits 8 × 8 (1797 × 64, 10 classes; scikit-learn)",
               _sklearn_example("load_digits", "classes")),
    "communities": ("Communities and crime (1994 × 99, violent crime rate in [0, 1]; "
                    "UCI, CC BY 4.0)", _bundled_example("communities.csv.gz")),
}
