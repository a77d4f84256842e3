"""What every kNN backend shares (:class:`unimap.neighbors.graph.NeighborIndex` applies it):
cosine and correlation as euclidean distances between normalised rows, and graphs whose
column 0 is each point itself."""

from __future__ import annotations

import numpy as np

__all__ = ["prepare_rows", "finish_distances", "with_self_first", "pad_self"]


def _normalize_rows(X: np.ndarray, center: bool) -> np.ndarray:
    """Rows scaled to unit norm (after centring for correlation); zero rows stay zero."""
    X = np.array(X, dtype=np.float32, copy=True)
    if center:
        X -= X.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    np.divide(X, norms, out=X, where=norms > 0)
    return X


def prepare_rows(X: np.ndarray, metric: str) -> np.ndarray:
    """Rows in the geometry the index keeps them in (:meth:`NeighborIndex.training_rows`):
    cosine and correlation mapped to euclidean geometry on normalised rows, float32."""
    if metric == "cosine":
        return _normalize_rows(X, center=False)
    if metric == "correlation":
        return _normalize_rows(X, center=True)
    return np.ascontiguousarray(X, dtype=np.float32)


def finish_distances(dist: np.ndarray, metric: str) -> np.ndarray:
    """Convert backend distances (euclidean on prepared rows) into the metric's distances."""
    if metric in ("cosine", "correlation"):
        # |u - v|^2 = 2 - 2 cos(u, v) for unit vectors.
        return np.maximum(dist * dist * np.float32(0.5), np.float32(0.0))
    return dist


def with_self_first(idx: np.ndarray, dist: np.ndarray, k: int,
                    self_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Put each point itself (distance 0) in column 0, followed by its nearest others:
    int32 ids and float32 distances. ``self_ids``: each row's own index (default: the row
    number). Rows hold k-1 "others" after dropping self; when self was missing (exact
    duplicates tie at distance 0) the backend's k-1 nearest are kept."""
    from unimap.neighbors.rows_numba import self_first_rows

    n = idx.shape[0]
    if idx.shape[1] < k - 1:
        raise ValueError(f"{idx.shape[1]} neighbours per row, {k - 1} needed besides self")
    if self_ids is None:
        self_ids = np.arange(n)
    return self_first_rows(idx, dist, k, self_ids)


def pad_self(idx: np.ndarray, dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prepend each point itself at distance 0 to rows computed without it."""
    n = idx.shape[0]
    out_idx = np.concatenate([np.arange(n, dtype=idx.dtype)[:, None], idx], axis=1)
    out_dist = np.concatenate([np.zeros((n, 1), dtype=np.float32), dist], axis=1)
    return out_idx, out_dist
