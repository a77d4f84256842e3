"""Input checks shared by the metrics of :mod:`unimap.metrics`."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.neighbors.graph import NATIVE_OR_PRECOMPUTED as METRICS
from unimap.runtime.validation import check_array, check_choice, check_int


def float_dtype(X: Any) -> type | None:
    """``None`` (keep) for float32/float64 input, else float64, as scikit-learn converts."""
    return None if getattr(X, "dtype", None) in (np.float32, np.float64) else np.float64


def check_precomputed(D: np.ndarray) -> None:
    if D.shape[0] != D.shape[1]:
        raise ValueError(
            f"metric='precomputed' needs X to be a square distance matrix, got shape {D.shape}"
        )
    if (D < 0).any():
        raise ValueError("metric='precomputed' distances in X must be non-negative")


def check_pair(X: Any, embedding: Any, metric: str, *, accept_sparse: bool = False,
                metrics: tuple = METRICS, min_samples: int = 1):
    """Validate the data and its embedding: finite, 2-D, the same number of rows."""
    check_choice(metric, "metric", metrics)
    X = check_array(X, "X", accept_sparse=accept_sparse and metric != "precomputed",
                    min_samples=min_samples, dtype=float_dtype(X))
    embedding = check_array(embedding, "embedding", min_samples=min_samples,
                            dtype=float_dtype(embedding))
    if metric == "precomputed":
        check_precomputed(X)
    if X.shape[0] != embedding.shape[0]:
        raise ValueError(
            f"X has {X.shape[0]} samples but embedding has {embedding.shape[0]}; "
            "they must correspond row for row"
        )
    return X, embedding


def check_trustworthiness_neighbors(n_neighbors: Any, n_samples: int) -> int:
    k = check_int(n_neighbors, "n_neighbors", 1)
    if k >= n_samples / 2:
        raise ValueError(
            f"n_neighbors must be less than n_samples / 2 = {n_samples / 2} for the "
            f"trustworthiness to lie in [0, 1], got {k}"
        )
    return k


def check_labels(labels: Any, n_samples: int) -> np.ndarray:
    """Labels of any sortable kind, returned as integer codes."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
    if labels.shape[0] != n_samples:
        raise ValueError(
            f"labels has {labels.shape[0]} entries but embedding has {n_samples} samples"
        )
    if labels.dtype.kind in "fc" and not np.isfinite(labels).all():
        raise ValueError("labels contains NaN or infinity")
    return np.unique(labels, return_inverse=True)[1].reshape(-1).astype(np.int64)


def check_square_sparse(M: Any, name: str, n_samples: int) -> sp.coo_matrix:
    """A non-negative finite ``(n_samples, n_samples)`` matrix as canonical float64 COO."""
    if sp.issparse(M):
        M = sp.coo_matrix(M, dtype=np.float64)
    else:
        arr = np.asarray(M)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be a numeric matrix, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D matrix, got shape {arr.shape}")
        M = sp.coo_matrix(arr.astype(np.float64))
    if M.shape != (n_samples, n_samples):
        raise ValueError(
            f"{name} has shape {M.shape}; it must be ({n_samples}, {n_samples}) to match the "
            "rows of embedding"
        )
    M.sum_duplicates()
    if not np.isfinite(M.data).all():
        raise ValueError(f"{name} contains NaN or infinity")
    if (M.data < 0).any():
        raise ValueError(f"{name} must be non-negative")
    return M
