"""A fitted estimator with the data set's typing and standardisation in front of it: the
model a user keeps (:func:`model_pipeline`).

The data set records how its file was typed when it was read (its ``encoding``, see
:mod:`kernel_lab.data.encoding`) and how its rows were prepared (its row plan: the
training means that fill missing cells, the training mean and scale). The pipeline
:class:`~kernel_lab.core.models.preprocess.TableColumns` →
:class:`~kernel_lab.core.models.preprocess.Standardize` → the estimator (wrapped in
:class:`~kernel_lab.core.models.preprocess.ClassLabels` for a text target) applied to rows
of the original file gives the estimator's predictions on the data set's prepared rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.pipeline import Pipeline

from kernel_lab.core.models.preprocess import (
    ClassLabels,
    Standardize,
    TableColumns,
    encoded_names,
)
from kernel_lab.data.encoding import numeric_encoding


def _array(values: Any) -> np.ndarray | None:
    return None if values is None else np.array(values, dtype=np.float64)


def data_encoding(data: Any) -> dict[str, Any]:
    """How the data set's table was typed: its recorded ``encoding``, or (generated data,
    arrays) every feature a number."""
    encoding = getattr(data, "encoding", None)
    if encoding is not None:
        return encoding
    return numeric_encoding(list(data.feature_names), data.target_name,
                            getattr(data, "columns", None), getattr(data, "classes", None))


def model_pipeline(data: Any, estimator: Any, *, extra_columns: str = "error") -> Pipeline:
    """The fitted ``estimator`` behind the data set's typing and standardisation.

    Parameters
    ----------
    data : Dataset or PartitionedData
        The data set the estimator was fitted on (in memory or kept in partitions): its
        ``encoding``, ``plan`` (fill, mean, scale), ``feature_names``.
    estimator : estimator
        Fitted on the data set's prepared feature rows (``data.X_train``'s columns).
    extra_columns : {"error", "ignore"}
        What the pipeline does with a column the training file never had.

    Returns
    -------
    Pipeline
        Steps ``columns`` (:class:`TableColumns`), ``standardize``
        (:class:`Standardize`) and ``model`` (the estimator, or :class:`ClassLabels`
        around it for a text target).

    Raises
    ------
    ValueError
        When the encoding does not give the data set's feature columns.
    """
    encoding = data_encoding(data)
    names = list(data.feature_names)
    if encoded_names(encoding) != names:
        raise ValueError(f"the data set's recorded typing gives the columns "
                         f"{encoded_names(encoding)[:6]}…, not its feature columns "
                         f"{names[:6]}…")
    plan = data.plan
    columns = TableColumns(encoding, allow_missing=plan.fill is not None,
                           extra_columns=extra_columns).fit()
    standardize = Standardize(_array(plan.mean), _array(plan.scale), _array(plan.fill),
                              feature_names=names).fit()
    target = encoding["target"]
    final = (estimator if target["kind"] == "number"
             else ClassLabels(estimator, list(target["classes"])).fit())
    return Pipeline([("columns", columns), ("standardize", standardize), ("model", final)])
