"""Lloyd's k-means with k-means++ seeding, deterministic (numpy): the cells of the sharded kNN
graphs, in memory (:mod:`unimap.neighbors.sharded`) and on Dask (:mod:`unimap.dask.knn_cells`)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["kmeans", "nearest_centroids", "centroid_sq_distances"]

KMEANS_ITERATIONS = 25
_ROWS_PER_STEP = 16_384  # rows per step of the centroid distances (bounds the temporaries)


def kmeans(points: np.ndarray, n_clusters: int, seed: int,
           iterations: int = KMEANS_ITERATIONS, assign: Any = None) -> np.ndarray:
    """Lloyd's k-means of ``points`` (float32), k-means++ seeding from ``seed``.

    Deterministic (no threads, distances row by row); an emptied cluster keeps its centroid.
    ``assign(centroids)``, if given, computes each point's nearest centroid in the iterations
    (the GPU's cells: :mod:`unimap.neighbors.cells_cuda`). Returns the (n_clusters, n_features)
    float32 centroids.
    """
    rng = np.random.default_rng(seed)
    n = points.shape[0]
    centroids = np.empty((n_clusters, points.shape[1]), dtype=np.float32)
    centroids[0] = points[rng.integers(n)]
    nearest = centroid_sq_distances(points, centroids[:1])[:, 0]
    for c in range(1, n_clusters):  # k-means++: far points are likelier centroids
        total = float(nearest.sum(dtype=np.float64))
        pick = (rng.integers(n) if total <= 0.0
                else int(np.searchsorted(np.cumsum(nearest, dtype=np.float64),
                                         rng.random() * total, side="right")))
        centroids[c] = points[min(pick, n - 1)]
        np.minimum(nearest, centroid_sq_distances(points, centroids[c:c + 1])[:, 0], out=nearest)
    labels = None
    for _ in range(iterations):
        new_labels = (nearest_centroids(points, centroids) if assign is None
                      else assign(centroids))
        if labels is not None and np.array_equal(labels, new_labels):
            break
        labels = new_labels
        counts = np.bincount(labels, minlength=n_clusters)
        filled = counts > 0  # an emptied cluster keeps its centroid
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[filled]
        grouped = points[np.argsort(labels, kind="stable")].astype(np.float64)
        sums = np.add.reduceat(grouped, starts, axis=0)
        centroids[filled] = (sums / counts[filled, None]).astype(np.float32)
    return centroids


def nearest_centroids(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """(n,) int32: each row's nearest centroid (ties: the lower index)."""
    out = np.empty(points.shape[0], dtype=np.int32)
    for start in range(0, points.shape[0], _ROWS_PER_STEP):
        dist = centroid_sq_distances(points[start:start + _ROWS_PER_STEP], centroids)
        out[start:start + dist.shape[0]] = np.argmin(dist, axis=1)
    return out


def centroid_sq_distances(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """(n, c) squared distances in ``points``' dtype, each row's summed on its own in
    float64 (the same bits in any block)."""
    from unimap.neighbors.cells_numba import sq_distances

    out = np.empty((points.shape[0], centroids.shape[0]), dtype=points.dtype)
    sq_distances(points, np.ascontiguousarray(centroids.T, dtype=np.float64), out)
    return out
