"""AnnData input, without importing anndata.

Every estimator accepts an ``AnnData`` object wherever it takes ``X``: the one conversion is
:func:`representation` (called from the estimators' shared input step in
:mod:`unimap.methods._contract`, and by :mod:`unimap.io.read` and :mod:`unimap.tl`). An AnnData is
recognised by its class's module, so ``import unimap`` never loads anndata, which is an
optional dependency (``pip install "unimap[anndata]"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["is_anndata", "representation", "available_representations", "default_rep",
           "json_safe", "fit_record"]

INSTALL_HINT = 'pip install "unimap[anndata]"'


def is_anndata(obj: Any) -> bool:
    """Whether ``obj`` is an ``anndata.AnnData`` (or a subclass), judged without importing
    anndata."""
    return any(cls.__name__ == "AnnData" and cls.__module__.split(".")[0] == "anndata"
               for cls in type(obj).__mro__)


def available_representations(adata: Any) -> list[str]:
    """The names :func:`representation` accepts for ``adata``: ``"X"`` (when it has one) and
    the keys of ``obsm``."""
    names = ["X"] if adata.X is not None else []
    return names + [str(key) for key in adata.obsm]


def default_rep(adata: Any) -> str:
    """``"X_pca"`` when ``adata.obsm`` has it, else ``"X"`` (the rule of every estimator)."""
    return "X_pca" if "X_pca" in adata.obsm else "X"


def representation(adata: Any, use_rep: str | None = None
                   ) -> tuple[Any, np.ndarray | None, str]:
    """The data matrix of an AnnData.

    Parameters
    ----------
    adata : anndata.AnnData
    use_rep : str or None, default=None
        ``"X"`` for ``adata.X`` (dense or sparse), or a key of ``adata.obsm``. None:
        ``obsm["X_pca"]`` when present, else ``X``.

    Returns
    -------
    X : ndarray or scipy.sparse matrix of shape (n_obs, n_features)
    feature_names : ndarray of str or None
        ``adata.var_names`` when ``X`` is used; None for an ``obsm`` representation.
    use_rep : str
        The representation used.

    Raises
    ------
    ValueError
        If the representation does not exist; the message lists those that do.
    """
    rep = default_rep(adata) if use_rep is None else use_rep
    if not isinstance(rep, str):
        raise TypeError(f"use_rep must be a string ('X' or a key of obsm), got {rep!r}")
    if rep == "X" and adata.X is not None:
        X = _in_memory(adata.X)
        largest = raw_count_maximum(X)
        if largest is not None:
            from unimap.runtime.user_warnings import warn_user

            warn_user(f"adata.X looks like raw counts (non-negative integers up to "
                      f"{largest:,.0f}): distances between raw counts follow each cell's "
                      "sequencing depth more than its type. Normalise and log-transform "
                      "first (scanpy: sc.pp.normalize_total, sc.pp.log1p, sc.pp.pca), or "
                      "embed a representation such as X_pca (use_rep, --use-rep)")
        return X, np.asarray(adata.var_names, dtype=object), rep
    if rep != "X" and rep in adata.obsm:
        data = adata.obsm[rep]
        if hasattr(data, "columns"):  # a DataFrame in obsm: its values, no feature names
            data = data.to_numpy()
        return _in_memory(data), None, rep
    available = ", ".join(f"{name!r} ({_shape_text(adata, name)})"
                          for name in available_representations(adata)) or "none"
    raise ValueError(f"the AnnData has no representation {rep!r}; available: {available}")


# Stored values (sparse) or rows (dense) read to tell raw counts: enough to meet a
# non-integer in any normalised matrix, few enough to cost milliseconds at a million cells.
COUNT_CHECK_VALUES = 1_000_000
COUNT_CHECK_ROWS = 2_000
# Integer tables below this are not taken for counts: binary matrices, and pixel intensities
# such as the digits' 0-16, which are no sequencing depth. A cell's most expressed genes pass
# it in raw UMI counts (hundreds to thousands).
COUNT_CHECK_MINIMUM = 100


def raw_count_maximum(X: Any) -> float | None:
    """The largest value of ``X`` if it looks like a matrix of raw counts (every value read
    a non-negative integer, the largest above ``COUNT_CHECK_MINIMUM``), else None. Reads the
    first ``COUNT_CHECK_VALUES`` stored values of a sparse matrix, the first
    ``COUNT_CHECK_ROWS`` rows of a dense one."""
    if sp.issparse(X):
        values = np.asarray(X.data[:COUNT_CHECK_VALUES])
    elif isinstance(X, np.ndarray) and X.ndim == 2:
        values = X[:COUNT_CHECK_ROWS]
    else:
        return None
    if values.size == 0 or values.dtype.kind not in "iuf":
        return None
    if values.dtype.kind == "f" and not (np.isfinite(values).all()
                                         and (values == np.round(values)).all()):
        return None
    largest = float(values.max())
    return largest if values.min() >= 0 and largest > COUNT_CHECK_MINIMUM else None


def _in_memory(data: Any) -> Any:
    """A backed (on-disk) matrix read into memory; arrays and sparse matrices unchanged."""
    if isinstance(data, np.ndarray) or sp.issparse(data):
        return data
    if hasattr(data, "to_memory"):  # anndata's backed sparse datasets
        return data.to_memory()
    return np.asarray(data[()] if hasattr(data, "dtype") and hasattr(data, "id") else data)


def _shape_text(adata: Any, name: str) -> str:
    data = adata.X if name == "X" else adata.obsm[name]
    shape = getattr(data, "shape", None)
    return " × ".join(str(s) for s in shape) if shape is not None else type(data).__name__


def json_safe(params: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``params`` that an ``.h5ad`` file's ``uns`` stores in any anndata
    version: numbers, strings and booleans (NumPy scalars as Python ones), and tuples or lists
    of them as lists; None and arrays are left out."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if isinstance(value, (tuple, list)):
            items = [v.item() if isinstance(v, np.generic) else v for v in value]
            if items and all(isinstance(v, (bool, int, float, str)) for v in items):
                out[name] = items
            continue
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, (bool, int, float, str)):
            out[name] = value
    return out


def fit_record(estimator: Any, method: str, **extra: Any) -> dict[str, Any]:
    """What ``uns[<method>]`` of an ``.h5ad`` holds about a fit (:func:`unimap.tl.embed`,
    ``unimap embed --write-back``): the method, the estimator's class, its parameters (plus
    ``extra``, e.g. ``use_rep``), the settings the fit resolved and its seconds per phase."""
    given = {k: v for k, v in estimator.get_params(deep=False).items()
             if k != "precomputed_knn"}
    resolved = {k: v for k, v in vars(estimator).items()
                if k.endswith("_") and not k.startswith("_")}
    record = {"method": method, "estimator": type(estimator).__name__,
              "params": json_safe({**given, **extra}), "resolved": json_safe(resolved),
              "timings": json_safe(getattr(estimator, "timings_", {}))}
    if hasattr(estimator, "explained_variance_ratio_"):  # a PCA: as scanpy.pp.pca
        record["variance"] = estimator.explained_variance_
        record["variance_ratio"] = estimator.explained_variance_ratio_
    return record
