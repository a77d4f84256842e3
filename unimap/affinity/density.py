"""Local radii for densMAP (``UMAP(densmap=True)``, ``output_dens=True``): how spread out
each point's neighbourhood is, in the data and in the embedding.

umap-learn's definition (``simplicial_set_embedding``): over the edges of the fuzzy graph,
``r_i = log(ε + Σ_j μ_ij d²_ij / Σ_j μ_ij)``, with ``d_ij`` the larger of the two kNN
distances between ``i`` and ``j`` (0 for an edge that neither kNN list holds, as after a
supervised intersection). Vectorised: sparse lookups and bincounts.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from unimap.affinity.edge_keys import knn_edge_lengths

__all__ = ["log_radii", "standardized"]

LOG_EPSILON = 1e-8


def log_radii(graph: sp.csr_matrix, knn_indices: np.ndarray,
              knn_dists: np.ndarray) -> np.ndarray:
    """Each point's log local radius (float32, n) over the edges of ``graph`` (symmetric,
    weights μ) with distances from the kNN graph ``(knn_indices, knn_dists)``."""
    n = graph.shape[0]
    coo, d = knn_edge_lengths(graph, knn_indices, knn_dists)
    mu = coo.data.astype(np.float64)
    weighted = np.bincount(coo.row, mu * d * d, n) + np.bincount(coo.col, mu * d * d, n)
    totals = np.bincount(coo.row, mu, n) + np.bincount(coo.col, mu, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(totals > 0, weighted / totals, 0.0)
    return np.log(LOG_EPSILON + ratio).astype(np.float32)


def standardized(values: np.ndarray) -> np.ndarray:
    """``(v − mean) / std`` (float32; zeros when all values are equal)."""
    std = float(np.std(values))
    centred = values - np.mean(values)
    return (centred / std if std > 0 else np.zeros_like(centred)).astype(np.float32)
