"""The steps in front of a fitted estimator that type raw table rows as the lab did.

A model kept from a run is a scikit-learn :class:`~sklearn.pipeline.Pipeline`:

1. :class:`TableColumns` — raw columns (a pandas DataFrame with the file's column names, a
   dict of columns, or a 2-D array of the feature columns in training order) → the feature
   matrix as the lab built it when it read the file: numbers as numbers, text one-hot with
   the training levels (and the ``(missing)`` column where the file had empty cells);
2. :class:`Standardize` — missing cells filled with the training means (when the run
   filled), then ``(x − mean) / scale`` with the training statistics;
3. the estimator, wrapped in :class:`ClassLabels` when the target was text: its ±1 or class
   codes mapped back to the class names.

How the table was typed is a plain dict the data layer records when it reads a file (its
``encoding``: the columns used, the kind of each, the levels, the target's classes); these
steps hold only plain attributes (lists, dicts, arrays, floats), so a model file saved
with skops needs no type beyond kernel_lab's own classes. Every refusal is a
:class:`~kernel_lab.core.errors.DataError` naming the column: a column missing (with the
closest unknown column as a possible rename), a column the training file never had, an
unseen category, a column of another type, a missing value where the run filled none.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from kernel_lab.core.errors import DataError
from kernel_lab.core.models.dask_rows import is_dask

#: What :class:`TableColumns` does with a column the training file never had.
EXTRA_COLUMNS = ("error", "ignore")
#: The name pandas gives a column whose header cell is empty (``Unnamed: 3``).
_UNNAMED = re.compile(r"^Unnamed: (\d+)$")
#: Values named in a message at most.
_SHOWN = 8


def _shown(values: Sequence[Any], k: int = _SHOWN) -> str:
    said = ", ".join(repr(v) for v in list(values)[:k])
    return said + (", …" if len(values) > k else "")


def row_error(row: int, problem: str, fix: str) -> DataError:
    """A refusal at a row (0-based ``row``: said 1-based; kept as the error's ``row`` and
    the problem alone as its ``at_row``, for a caller that names the file's line)."""
    exc = DataError(f"row {row + 1}: {problem}", fix)
    exc.row = row  # type: ignore[attr-defined]
    exc.at_row = problem  # type: ignore[attr-defined]
    return exc


def _empty(cell: Any) -> bool:
    """A missing cell as a DataFrame or an array holds one: None, a float NaN, pandas'
    ``NA`` or ``NaT``."""
    return (cell is None or (isinstance(cell, float | np.floating) and np.isnan(cell))
            or type(cell).__name__ in ("NAType", "NaTType"))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def encoded_names(encoding: Mapping[str, Any]) -> list[str]:
    """The prepared rows' column names a table's encoding gives: a number column's name,
    ``name=level`` for each level of a one-hot column, then ``name=(missing)``."""
    names: list[str] = []
    for f in encoding["features"]:
        if f["kind"] == "number":
            names.append(f["column"])
        else:
            names.extend(f"{f['column']}={v}" for v in f["levels"])
            if f["missing"]:
                names.append(f"{f['column']}=(missing)")
    return names


class TableColumns(TransformerMixin, BaseEstimator):
    """Raw table columns → the feature matrix the lab built when it read the file.

    Parameters
    ----------
    encoding : dict
        How the training file was typed (the data layer's ``encoding``): its column names,
        the feature columns in order with their kind (``number``, or ``onehot`` with the
        levels and whether it had a ``(missing)`` column), the target.
    allow_missing : bool
        Whether a missing number may pass (as NaN, for :class:`Standardize` to fill: the
        run filled missing cells); refused, naming the column, otherwise.
    extra_columns : {"error", "ignore"}
        A column the training file never had: refused by name, or ignored. The file's
        own other columns (the target, a dropped row index, columns left out) are always
        ignored.

    The input is a pandas DataFrame (by column name), a mapping of column names to
    sequences, or a 2-D array whose columns are the feature columns in training order
    (:attr:`feature_columns_`). Cells may be numbers or text as read from a file: a text
    cell in a column of numbers is read as a number (or as missing, by the file reader's
    rule), a number in a text column as the category of that value.
    """

    def __init__(self, encoding: dict[str, Any] | None = None, *,
                 allow_missing: bool = False, extra_columns: str = "error") -> None:
        self.encoding = encoding
        self.allow_missing = allow_missing
        self.extra_columns = extra_columns

    # -- scikit-learn ---------------------------------------------------------------------
    def fit(self, X: Any = None, y: Any = None) -> TableColumns:
        """Check the encoding (the step learns nothing from rows: the file's typing is
        given)."""
        if not isinstance(self.encoding, Mapping) or "features" not in self.encoding:
            raise ValueError("TableColumns needs the encoding recorded when the table was "
                             "read (a dict with 'features')")
        if self.extra_columns not in EXTRA_COLUMNS:
            raise ValueError(f"extra_columns must be one of {EXTRA_COLUMNS}, not "
                             f"{self.extra_columns!r}")
        self.feature_columns_ = [f["column"] for f in self.encoding["features"]]
        self.feature_names_out_ = np.asarray(encoded_names(self.encoding), dtype=object)
        self.n_features_out_ = len(self.feature_names_out_)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "feature_columns_")

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self)
        return self.feature_names_out_.copy()

    # -- the columns ----------------------------------------------------------------------
    def _known(self) -> set[str]:
        """Every column of the training file (features, target, dropped index, columns
        left out or dropped)."""
        return {str(c) for c in self.encoding["columns"]}  # type: ignore[index]

    def _columns(self, X: Any) -> tuple[list[Any], int]:
        """The raw feature columns of ``X``, in training order, and the number of rows."""
        wanted = self.feature_columns_
        if hasattr(X, "columns") and hasattr(X, "__getitem__") and not isinstance(X, Mapping):
            names = [str(c) for c in X.columns]
            if len(set(names)) != len(names):
                twice = sorted({n for n in names if names.count(n) > 1})
                raise DataError(f"the column {'names' if len(twice) > 1 else 'name'} "
                                f"{_shown(twice)} appear{'' if len(twice) > 1 else 's'} "
                                "more than once", "give every column its own name")
            names = self._lab_names(names)
            by_name = dict(zip(names, X.columns, strict=True))
            self._check_names(names)
            return [X[by_name[c]].to_numpy() for c in wanted], len(X)
        if isinstance(X, Mapping):
            names = self._lab_names([str(c) for c in X])
            by_name = dict(zip(names, X, strict=True))
            self._check_names(names)
            cols = [np.asarray(X[by_name[c]], dtype=object if not hasattr(X[by_name[c]],
                                                                          "dtype")
                               else None) for c in wanted]
            sizes = {len(c) for c in cols}
            if len(sizes) > 1:
                raise DataError(f"the columns have different lengths ({sorted(sizes)})",
                                "give every column one value per row")
            return cols, sizes.pop() if sizes else 0
        A = np.asarray(X)
        if A.ndim != 2:
            raise DataError(f"an array of shape {A.shape} is not a table of rows",
                            "pass a pandas DataFrame with the file's column names, or a 2-D "
                            "array of the feature columns in training order")
        if A.shape[1] != len(wanted):
            hint = (" — it has as many as the prepared rows: those go to the pipeline's "
                    "last step itself" if A.shape[1] == self.n_features_out_ else "")
            raise DataError(f"the array has {A.shape[1]} columns, the model's feature "
                            f"columns are {len(wanted)}{hint}",
                            f"pass the columns {_shown(wanted)} in this order, or a "
                            "DataFrame with the file's column names")
        return [A[:, j] for j in range(A.shape[1])], A.shape[0]

    def _lab_names(self, names: list[str]) -> list[str]:
        """Column names as the lab's readers give them: a column without a header cell is
        ``column k`` (1-based), which pandas names ``Unnamed: k−1``."""
        known = self._known()
        out = []
        for i, name in enumerate(names):
            found = _UNNAMED.match(name)
            unnamed = found is not None or not name.strip()
            lab = f"column {int(found.group(1)) + 1 if found else i + 1}"
            out.append(lab if unnamed and name not in known and lab in known else name)
        return out

    def _check_names(self, names: list[str]) -> None:
        """Refuse a feature column that is missing (naming the closest unknown column as a
        possible rename) and, unless told to ignore them, the columns the training file
        never had."""
        known = self._known()
        extra = [n for n in names if n not in known]
        present = set(names)
        for c in self.feature_columns_:
            if c in present:
                continue
            close = difflib.get_close_matches(c, extra, n=1, cutoff=0.5)
            guess = close[0] if close else (extra[0] if len(extra) == 1 else None)
            fix = (f"the data have the column {guess!r}, which the model does not know: if "
                   f"it is {c!r} renamed, give it its name {c!r} again" if guess is not None
                   else "add the column, with the name it had in the training file")
            raise DataError(f"the column {c!r} the model was trained on is missing from the "
                            "data", fix)
        if extra and self.extra_columns == "error":
            raise DataError(
                f"the data have {'columns' if len(extra) > 1 else 'a column'} "
                f"{_shown(extra)} the training file did not have",
                f"leave {'them' if len(extra) > 1 else 'it'} out of the data, or let the "
                "model ignore columns it does not know (kernel-lab predict "
                "--ignore-extra-columns; the pipeline's columns__extra_columns='ignore')")

    # -- typing ---------------------------------------------------------------------------
    def _missing_cells(self) -> set[str]:
        return set(self.encoding.get("missing_cells", ()))  # type: ignore[union-attr]

    def _numbers(self, name: str, col: np.ndarray) -> np.ndarray:
        """A feature column of numbers as float64 (text cells read by the file reader's
        rule; one that is not a number refused: a column of another type)."""
        if col.dtype.kind in "fiub":
            values = col.astype(np.float64)
            values[np.isinf(values)] = np.nan  # read as missing, as the reader does
            return values
        missing = self._missing_cells()
        values = np.empty(len(col))
        for r, cell in enumerate(col):
            if _empty(cell):
                values[r] = np.nan
                continue
            if isinstance(cell, int | float | np.number) and not isinstance(cell, bool):
                values[r] = float(cell)
                continue
            text = str(cell).strip()
            if text.lower() in missing:
                values[r] = np.nan
                continue
            try:
                values[r] = float(text)
            except ValueError:
                raise row_error(r, f"{text!r} in column {name!r} is not a number; the "
                                "model was trained on numbers in this column",
                                "give the column numbers (a missing value may be left "
                                "empty)") from None
        values[np.isinf(values)] = np.nan
        return values

    def _text(self, name: str, col: np.ndarray, levels: list[str]) -> list[str | None]:
        """A text feature column as stripped strings (None: missing); a number matched to
        the level it equals (``4`` and ``4.0`` are the level ``'4'``)."""
        missing = self._missing_cells()
        numeric = {float(v): v for v in levels if _is_number(v)}
        out: list[str | None] = []
        for r, cell in enumerate(col):
            if _empty(cell):
                out.append(None)
            elif isinstance(cell, int | float | np.number) and not isinstance(cell, bool):
                value = float(cell)
                if value in numeric:
                    out.append(numeric[value])
                elif not numeric:
                    raise row_error(r, f"column {name!r} holds the number {cell!r}; the "
                                    f"model was trained on text in this column "
                                    f"({_shown(levels)})", "give the column its text values")
                else:  # refused below as a category never seen, written as a number
                    out.append(f"{value:g}")
            else:
                text = str(cell).strip()
                out.append(None if text.lower() in missing else text)
        return out

    def transform(self, X: Any) -> np.ndarray:
        """The feature matrix (float64, one column per number, one per level of a text
        column, then its ``(missing)`` column)."""
        check_is_fitted(self)
        if is_dask(X):  # its columns would each be computed, whole, into this process
            raise DataError(
                "a kept model types rows in memory, and these are a Dask collection",
                "predict it partition by partition (frame.map_partitions(model.predict)), "
                "or a Parquet folder with kernel-lab predict, which writes one file of "
                "predictions per file")
        columns, n = self._columns(X)
        out = np.empty((n, self.n_features_out_))
        j = 0
        for f, col in zip(self.encoding["features"], columns, strict=True):  # type: ignore[index]
            name = f["column"]
            col = np.asarray(col)
            if f["kind"] == "number":
                values = self._numbers(name, col)
                if not self.allow_missing:
                    holes = np.flatnonzero(np.isnan(values))
                    if holes.size:
                        raise row_error(
                            int(holes[0]), f"a missing value in column {name!r}; the run "
                            "that made the model had no missing values to fill, so it has "
                            "no value to fill them with",
                            "fill the cells, or leave those rows out")
                out[:, j] = values
                j += 1
                continue
            levels = list(f["levels"])
            cells = self._text(name, col, levels)
            position = {v: k for k, v in enumerate(levels)}
            block = np.zeros((n, len(levels) + bool(f["missing"])))
            for r, v in enumerate(cells):
                if v is None:
                    if not f["missing"]:
                        raise row_error(
                            r, f"a missing value in the text column {name!r} (an empty "
                            "cell or a missing-value mark such as NA), which had none in the "
                            "training file (the model has no '(missing)' column for it)",
                            f"fill the cell with one of {_shown(levels)}")
                    block[r, -1] = 1.0
                    continue
                k = position.get(v)
                if k is None:
                    raise row_error(
                        r, f"{v!r} in column {name!r} is a category the model never saw; "
                        f"it knows {_shown(levels, 12)}", "use one of those values (or "
                        "retrain the model on data that have this one)")
                block[r, k] = 1.0
            out[:, j:j + block.shape[1]] = block
            j += block.shape[1]
        return out


class Standardize(TransformerMixin, BaseEstimator):
    """Missing cells filled, then ``(x − mean) / scale``, with the training statistics
    (the run's row plan: the same operations element by element, so the same bits).

    Parameters
    ----------
    mean, scale : array-like or None
        Per column; None keeps the values as they are (a run without standardisation).
    fill : array-like or None
        Per column, the value a missing cell takes (the training mean); None: the run had
        nothing to fill and a missing cell is refused.
    feature_names : list of str or None
        The columns' names, for messages and :meth:`get_feature_names_out`.
    """

    def __init__(self, mean: Any = None, scale: Any = None, fill: Any = None, *,
                 feature_names: Sequence[str] | None = None) -> None:
        self.mean = mean
        self.scale = scale
        self.fill = fill
        self.feature_names = feature_names

    def fit(self, X: Any = None, y: Any = None) -> Standardize:
        """Check the statistics (nothing is learnt from rows: they are the run's)."""
        sizes = {len(np.asarray(v)) for v in (self.mean, self.scale, self.fill,
                                              self.feature_names) if v is not None}
        if len(sizes) > 1:
            raise ValueError(f"mean, scale, fill and feature_names differ in length ({sizes})")
        if (self.mean is None) != (self.scale is None):
            raise ValueError("give both mean and scale, or neither")
        self.n_features_in_ = sizes.pop() if sizes else None
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "n_features_in_")

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self)
        if self.feature_names is not None:
            return np.asarray(list(self.feature_names), dtype=object)
        return np.asarray([f"x{j}" for j in range(self.n_features_in_ or 0)], dtype=object)

    def _name(self, j: int) -> str:
        return (str(self.feature_names[j]) if self.feature_names is not None
                else f"column {j + 1}")

    def transform(self, X: Any) -> np.ndarray:
        """The prepared rows (a new float64 array, C order)."""
        check_is_fitted(self)
        A = np.array(X, dtype=np.float64, order="C", copy=True)
        if A.ndim != 2 or (self.n_features_in_ is not None
                           and A.shape[1] != self.n_features_in_):
            raise DataError(f"rows of shape {A.shape} given to a standardisation of "
                            f"{self.n_features_in_} columns", "pass the table's columns")
        holes = np.isnan(A)
        if holes.any():
            if self.fill is None:
                r, j = (int(v[0]) for v in np.nonzero(holes))
                raise row_error(r, f"a missing value in column {self._name(j)!r}; "
                                "the run that made the model had no missing values to fill",
                                "fill the cells, or leave those rows out")
            np.copyto(A, np.broadcast_to(np.asarray(self.fill, dtype=np.float64), A.shape),
                      where=holes)
        if self.mean is not None and self.scale is not None:
            A -= np.asarray(self.mean, dtype=np.float64)
            A /= np.asarray(self.scale, dtype=np.float64)
        return A


class ClassLabels(BaseEstimator):
    """A fitted estimator of a text target, predicting its class names.

    The lab fits a two-class text target as −1/+1 (``classes[1]`` is +1) and more classes
    as codes 0 … K−1; this maps the estimator's output back: a score (a regressor's
    prediction, a classifier's decision function) ≥ 0 is ``classes[1]``; one score per
    class takes the largest (through the estimator's ``classes_`` when it has them); a
    single code per row is rounded to the nearest class. The estimator's own numbers stay
    available through :meth:`decision_function`.

    Parameters
    ----------
    estimator : estimator
        Fitted on the lab's prepared rows and coded target.
    classes : list of str
        Two: the −1 and the +1 class; more: the names of codes 0 … K−1.
    """

    def __init__(self, estimator: Any = None, classes: Sequence[str] | None = None) -> None:
        self.estimator = estimator
        self.classes = classes

    def fit(self, X: Any = None, y: Any = None) -> ClassLabels:
        """Nothing to learn: the estimator comes fitted (this checks it)."""
        check_is_fitted(self.estimator)
        if self.classes is None or len(self.classes) < 2:
            raise ValueError("ClassLabels needs at least two class names")
        return self

    def __sklearn_is_fitted__(self) -> bool:
        try:
            check_is_fitted(self.estimator)
        except Exception:
            return False
        return self.classes is not None

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(list(self.classes or ()), dtype=object)

    def decision_function(self, X: Any) -> np.ndarray:
        """The estimator's own numbers: its decision function, or its prediction."""
        own = getattr(self.estimator, "decision_function", None)
        return np.asarray(own(X) if own is not None else self.estimator.predict(X))

    def codes(self, X: Any) -> np.ndarray:
        """The predicted codes as the lab codes the target: ±1 (two classes) or 0 … K−1."""
        score = self.decision_function(X)
        names = list(self.classes or ())
        two = len(names) == 2
        if score.ndim == 2:
            pick = np.argmax(score, axis=1)
            labels = getattr(self.estimator, "classes_", None)
            code = (np.asarray(labels, dtype=np.float64)[pick] if labels is not None
                    else pick.astype(np.float64))
            if two and labels is None:
                code = 2.0 * code - 1.0  # columns for −1 and +1
            return code
        if two:
            return np.where(score >= 0, 1.0, -1.0)
        return np.clip(np.rint(score), 0, len(names) - 1)

    @available_if(lambda self: hasattr(self.estimator, "predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """The estimator's class probabilities (columns in the order of its
        ``classes_``: the lab's codes, −1/+1 or 0 … K−1)."""
        return np.asarray(self.estimator.predict_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """The class names."""
        code = self.codes(X)
        names = np.asarray(list(self.classes or ()), dtype=object)
        if len(names) == 2:
            return names[(code > 0).astype(np.intp)]
        return names[code.astype(np.intp)]
