"""Input and parameter checks shared by every estimator.

Every check raises ``TypeError`` (wrong kind of object) or ``ValueError`` (right kind, bad
value) with a message that names the offending input or parameter and what is allowed.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.runtime.user_warnings import warn_user

__all__ = [
    "check_array",
    "check_int",
    "check_float",
    "check_choice",
    "check_bool",
    "check_embedding_finite",
    "refuse_dask_fit",
    "did_you_mean",
]


def is_dask_collection(X: Any) -> bool:
    """Whether ``X`` is a dask object (array, DataFrame, ...), judged by the module of its
    type, so that dask is not imported to ask.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from unimap.dask import is_dask_collection
    >>> is_dask_collection(da.zeros((4, 2), chunks=2)), is_dask_collection(np.zeros((4, 2)))
    (True, False)
    """
    return type(X).__module__.split(".")[0] == "dask"


def check_array(
    X: Any,
    name: str = "X",
    *,
    accept_sparse: bool = False,
    min_samples: int = 1,
    min_features: int = 1,
    dtype: type | None = np.float32,
) -> np.ndarray | sp.csr_matrix:
    """Validate a 2-D data matrix and return it as a C-contiguous float array.

    Integer, boolean and float16 input are converted to ``dtype`` (float32 by default);
    float64 input is kept as float64 when ``dtype`` is None.

    Raises
    ------
    TypeError
        Object, string or complex dtype; sparse input where it is not accepted.
    ValueError
        Not 2-D, empty, fewer than ``min_samples`` rows or ``min_features`` columns, NaN or inf.
    """
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError(f"{name} is a sparse matrix, which this method does not accept")
        X = sp.csr_matrix(X)
        try:  # scipy's constructor checks no index bounds: a column past n_features was lost
            X.check_format(full_check=True)
        except ValueError as exc:
            raise ValueError(f"{name} is a malformed sparse matrix: {exc}") from None
        _check_dtype(X.dtype, name)
        _check_shape(X.shape, name, min_samples, min_features)
        if not _all_finite(X.data):
            raise ValueError(f"{name} contains NaN or infinity")
        target = dtype or (X.dtype if X.dtype in (np.float32, np.float64) else np.float32)
        X = X.astype(target)
        X.sort_indices()
        return X
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be a 2-D array of numbers, got a string")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype.kind == "O":
        arr = _numeric_from_object(arr, name)
    _check_dtype(arr.dtype, name)
    if arr.ndim != 2:
        hint = ("; Reshape your data with X.reshape(-1, 1) for a single feature or "
                "X.reshape(1, -1) for a single sample") if arr.ndim == 1 else ""
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {arr.shape}{hint}")
    _check_shape(arr.shape, name, min_samples, min_features)
    if dtype is None:
        target = arr.dtype if arr.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    else:
        target = np.dtype(dtype)
    arr = np.ascontiguousarray(arr, dtype=target)
    if not _all_finite(arr):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} contains NaN or infinity (first at row {bad[0]}, column {bad[1]})"
        )
    return arr


def check_finite_block(block: np.ndarray, first_row: int) -> None:
    """Raise if a block of the rows of ``X`` (its first row is row ``first_row`` of ``X``)
    holds a NaN or infinity, naming the first such row and the block."""
    if block.dtype.kind != "f" or _all_finite(block):
        return
    bad = first_row + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
    raise ValueError(f"X contains NaN or infinity (row {bad}, in the block of rows "
                     f"{first_row}-{first_row + block.shape[0] - 1})")


def _all_finite(values: np.ndarray) -> bool:
    """Whether every entry is finite. A finite sum proves it without np.isfinite's temporary of one
    bool per entry, many times faster in a fresh process, where that temporary's page faults
    dominate (measured: benchmarks/results/library_notes.md, "unimap/runtime/validation.py"); an
    infinite sum may be an overflow, so the exact check decides."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(values.sum()):
            return True
    return bool(np.isfinite(values).all())


def _numeric_from_object(arr: np.ndarray, name: str) -> np.ndarray:
    """An object array of numbers as float64; anything else is a TypeError naming it."""
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} has dtype object with an entry that is not a number: "
                        f"{exc}") from None


def _check_dtype(dtype: np.dtype, name: str) -> None:
    if dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {dtype}; only real "
                         "numbers are accepted")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} has dtype {dtype}; expected a numeric (int, bool or float) array")


def _check_shape(shape: tuple, name: str, min_samples: int, min_features: int) -> None:
    n, d = shape
    if n == 0 or n < min_samples:
        raise ValueError(f"{name} is empty or too small: found {n} sample(s) (shape={shape}) "
                         f"while a minimum of {max(min_samples, 1)} is required.")
    if d == 0 or d < min_features:
        raise ValueError(f"{name} is empty or too narrow: found {d} feature(s) "
                         f"(shape={shape}) while a minimum of {max(min_features, 1)} is "
                         "required.")


def check_int(
    value: Any, name: str, low: int | None = None, high: int | None = None
) -> int:
    """Check that ``value`` is an integer in ``[low, high]`` and return it as ``int``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be in {_range_text(low, high)}, got {value}")
    return int(value)


def check_float(
    value: Any,
    name: str,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Check that ``value`` is a finite real number within the given bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    too_low = low is not None and (value < low or (not low_inclusive and value == low))
    too_high = high is not None and (value > high or (not high_inclusive and value == high))
    if not np.isfinite(value) or too_low or too_high:
        text = _range_text(low, high, low_inclusive, high_inclusive)
        raise ValueError(f"{name} must be a finite number in {text}, got {value}")
    return value


def check_choice(value: Any, name: str, choices: tuple) -> Any:
    """Check that ``value`` is one of ``choices`` (the closest ones suggested)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}"
                         + did_you_mean(value, choices))
    return value


def did_you_mean(value: Any, choices: Any) -> str:
    """``"; did you mean 'x'?"`` for the choices closest to a mistyped ``value`` (difflib's
    ratio of at least 0.6), else ``""``."""
    import difflib

    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, [str(c) for c in choices], n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _range_text(low, high, low_inclusive=True, high_inclusive=True) -> str:
    left = "[" if low_inclusive and low is not None else "("
    right = "]" if high_inclusive and high is not None else ")"
    lo = "-inf" if low is None else low
    hi = "inf" if high is None else high
    return f"{left}{lo}, {hi}{right}"


def check_embedding_finite(embedding: np.ndarray, method: str) -> np.ndarray:
    """Fail loudly rather than return an embedding with NaN or infinity."""
    if not _all_finite(embedding):
        raise FloatingPointError(
            f"{method} produced a non-finite embedding; this is a bug or a numerically "
            "degenerate input: please report it with the data shape and parameters"
        )
    return embedding


MAX_DENSE_BYTES = 4 << 30
"""Largest sparse input (as float32) a method densifies for its neighbour search; larger, it
stays sparse (:func:`unimap.neighbors.sparse_rows.keeps_sparse`)."""


MAX_FEATURE_MAGNITUDE = 1e15
"""Largest absolute feature value of a neighbour embedding's input: the float32 squared
distances of D features, up to 4·D·1e30, stay finite for D below 8·10^7."""


def _column_ranges(X: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each column's smallest and largest value (a sparse column's zeros included), float64,
    in one pass each and without the copy ``abs(X)`` would make (220 MB for MNIST-70k)."""
    if sp.issparse(X):
        low = np.minimum(X.min(axis=0).toarray().ravel(), 0.0)
        high = np.maximum(X.max(axis=0).toarray().ravel(), 0.0)
    else:
        low, high = X.min(axis=0), X.max(axis=0)
    return low.astype(np.float64), high.astype(np.float64)


def _largest_magnitude(low: np.ndarray, high: np.ndarray) -> float:
    """max |x| from the column ranges."""
    return float(max(np.max(-low, initial=0.0), np.max(high, initial=0.0)))


MAX_OFFSET_TO_SPREAD = 2.0 ** 12
"""Largest ratio of a column's magnitude to the data's spread: float32 keeps 24 bits of each
value, so an offset 2¹² times the spread leaves fewer than 12 bits for the differences that
decide the neighbours (with an offset far beyond it the 10-NN accuracy fell well below the
centred data's; measured: benchmarks/results/library_notes.md, "unimap/runtime/validation.py")."""

MIN_SPREAD = 1e-12
"""Smallest spread (largest column range) of a neighbour embedding's input: below it the
float32 squared distances between neighbours fall under float32's normal range and lose
their bits (data at a far smaller scale: the 10-NN accuracy fell well below the rescaled
data's; measured: as above)."""


def check_float32_resolution(X: Any, low: np.ndarray, high: np.ndarray) -> None:
    """Refuse data that the float32 neighbour search would resolve badly: a spread below
    :data:`MIN_SPREAD`, or float64 columns offset by more than :data:`MAX_OFFSET_TO_SPREAD`
    times the spread (``low``/``high``: the column ranges, :func:`_column_ranges`). Both are
    fixed by the user in one line, and silently they gave finite, wrong embeddings."""
    if X.shape[0] < 2 or X.shape[1] == 0 or (sp.issparse(X) and X.nnz == 0):
        return
    spread = float(np.max(high - low))
    if spread == 0.0:
        return  # constant data: the methods' own checks say what they do with it
    if spread < MIN_SPREAD:
        raise ValueError(
            f"X spans at most {spread:.3g} in any column: squared distances at this scale "
            "underflow the float32 neighbour search and the neighbours would be wrong; "
            "multiply X by a constant first (e.g. X / X.std()), which changes no embedding")
    offset = float(np.max(np.maximum(np.abs(low), np.abs(high))))
    if X.dtype == np.float64 and offset > MAX_OFFSET_TO_SPREAD * spread:
        raise ValueError(
            f"X has values up to {offset:.3g} but spans only {spread:.3g}: in the float32 "
            "neighbour search the offset would leave too few bits for the differences "
            "between points; subtract the column means first (X - X.mean(axis=0)), which "
            "changes no euclidean distance")


def check_method_input(X: Any, metric: str, square: bool) -> Any:
    """Check the ``X`` of a neighbour-embedding method (UMAP, TSNE, GDR).

    Sparse features are checked by the neighbour search (larger than :data:`MAX_DENSE_BYTES`
    once densified, they stay sparse: :func:`unimap.neighbors.sparse_rows.keeps_sparse`). With
    ``metric="precomputed"`` the distances must be non-negative, and square when ``square``
    (fit; transform takes an (m, n_train) block); a sparse matrix of distances is never
    densified (its stored entries are the only candidates, missing ones are infinitely far).
    """
    X = check_array(X, accept_sparse=True, min_samples=1, dtype=None)
    if metric != "precomputed":
        # the ranges before the float32 cast, which loses what these checks look at
        low, high = _column_ranges(X)
        check_float32_resolution(X, low, high)
        largest = _largest_magnitude(low, high)
        if largest > MAX_FEATURE_MAGNITUDE:
            raise ValueError(
                f"X has values up to {largest:.3g}: squared distances between such points "
                f"overflow the float32 neighbour search (values must stay below "
                f"{MAX_FEATURE_MAGNITUDE:.0e}); rescale the data first, e.g. with "
                "sklearn.preprocessing.StandardScaler")
    X = X.astype(np.float32, copy=False)
    if metric == "precomputed":
        if square and X.shape[0] != X.shape[1]:
            raise ValueError(
                f"metric='precomputed' needs a square distance matrix, got shape {X.shape}"
            )
        if ((X.data if sp.issparse(X) else X) < 0).any():
            raise ValueError("metric='precomputed' distances must be non-negative")
    return X


def check_knn_graph(knn: Any, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate a user's kNN graph ``(indices, distances)`` of ``n`` points with at least
    ``k`` columns (column 0 the point itself); return its first ``k`` columns as int32 and
    float32. umap-learn's ``(indices, distances, search_index)`` is taken too; its index is
    not used (``transform`` is unavailable with ``precomputed_knn``)."""
    try:
        idx, dist = knn[:2] if isinstance(knn, (tuple, list)) and len(knn) == 3 else knn
    except (TypeError, ValueError):
        raise TypeError("precomputed_knn must be a tuple (indices, distances)") from None
    idx, dist = np.asarray(idx), np.asarray(dist)
    if idx.dtype.kind not in "iu":  # booleans, floats, objects: not neighbour indices
        raise TypeError(f"precomputed_knn indices must be integers, got dtype {idx.dtype}")
    if dist.dtype.kind not in "iuf":
        raise TypeError(f"precomputed_knn distances must be numbers, got dtype {dist.dtype}")
    if idx.shape != dist.shape or idx.ndim != 2 or idx.shape[0] != n or idx.shape[1] < k:
        raise ValueError(f"precomputed_knn arrays must both have shape ({n}, >= {k}); got "
                         f"{idx.shape} and {dist.shape}")
    if idx.min() < 0 or idx.max() >= n:
        raise ValueError(f"precomputed_knn indices must lie in [0, {n - 1}]")
    if not np.isfinite(dist).all() or (dist < 0).any():
        raise ValueError("precomputed_knn distances must be finite and non-negative")
    idx, dist = _self_first_by_distance(idx, dist)
    return (np.ascontiguousarray(idx[:, :k], dtype=np.int32),
            np.ascontiguousarray(dist[:, :k], dtype=np.float32))


def _self_first_by_distance(idx: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A kNN graph in unimap's convention: each row sorted by distance (sorted, with a
    warning, where it was not), the point itself in column 0 (moved there where a tie put it
    later; added with distance 0, dropping the row's farthest neighbour, where it was missing,
    with a warning)."""

    rows = np.arange(idx.shape[0])[:, None]
    if (np.diff(dist, axis=1) < 0).any():
        warn_user("precomputed_knn rows were not sorted by distance; they were sorted",
                  UserWarning)
        order = np.argsort(dist, axis=1, kind="stable")
        idx, dist = np.take_along_axis(idx, order, 1), np.take_along_axis(dist, order, 1)
    is_self = idx == rows
    first_self = is_self & (np.cumsum(is_self, axis=1) == 1)
    positions = np.arange(idx.shape[1])[None, :]
    order = np.argsort(np.where(first_self, -1, positions), axis=1, kind="stable")
    idx, dist = np.take_along_axis(idx, order, 1), np.take_along_axis(dist, order, 1)
    lacking = ~is_self.any(axis=1)
    if lacking.any():
        warn_user(f"{int(lacking.sum())} row(s) of precomputed_knn do not contain the "
                  "point itself; it was added as column 0 (distance 0) and each such "
                  "row's farthest neighbour dropped (unimap's kNN graphs include the "
                  "point itself, as umap-learn's)", UserWarning)
        idx, dist = idx.copy(), dist.copy()
        idx[lacking] = np.hstack([rows[lacking], idx[lacking, :-1]])
        dist[lacking] = np.hstack([np.zeros((int(lacking.sum()), 1), dist.dtype),
                                   dist[lacking, :-1]])
    return idx, dist


def refuse_dask_fit(name: str, X: Any, y: Any = None) -> None:
    """A ValueError naming the recipes where ``fit`` (or ``update``) is given a dask
    collection: the fit runs in this process, and gathering the array here silently is what
    a cluster's user least expects; the recipes of docs/dask.md keep the rows on
    the workers."""
    if not (is_dask_collection(X) or is_dask_collection(y)):
        return
    shape = getattr(X, "shape", None)
    size = f" of shape {tuple(shape)}" if shape is not None else ""
    raise ValueError(
        f"{name} fits in this process and does not gather a dask collection{size} into it "
        "(GDR(normalized=False) fits one on its cluster): "
        "for data that fit in memory, pass X.compute() (and y.compute()); for more, fit a "
        "sample and place every row on the workers, model.fit(X[::step].compute()) then "
        "model.transform(X) (docs/dask.md, 'Data that does not fit one machine'), or build "
        "the kNN graph on the cluster (unimap.dask.knn_graph) and fit on precomputed_knn")
