"""umap-learn's ``disconnection_distance``: edges of the neighbour graph at or beyond a distance
are removed, so that points with nothing near them are not tied to the far points that happen
to be their nearest. Defaults to the largest value of the bounded metrics (two opposite
vectors for cosine and correlation; disjoint sets for jaccard and dice; hellinger's maximum),
where an edge at that distance links points with nothing in common; infinite (no cut) for the
others, as umap-learn.

Unlike umap-learn, each point's scale (``sigma``, ``rho``) is still calibrated on all of its
``n_neighbors`` nearest neighbours, and only then are the cut edges dropped: umap-learn
calibrates such a row with infinite distances, whose mean makes its ``sigma`` infinite and
every remaining membership 1.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from unimap.affinity.edge_keys import knn_edge_lengths
from unimap.runtime.user_warnings import warn_user

__all__ = ["DISCONNECTION_DISTANCES", "resolve_disconnection_distance", "cut_graph",
           "cut_new_rows"]

DISCONNECTION_DISTANCES = {"cosine": 2.0, "correlation": 2.0, "hellinger": 1.0,
                           "jaccard": 1.0, "dice": 1.0}


def resolve_disconnection_distance(value: float | None, metric: str) -> float:
    """The distance at which edges are cut: ``value``, or the metric's default (infinite
    for unbounded metrics and ``"precomputed"``)."""
    if value is not None:
        return float(value)
    return DISCONNECTION_DISTANCES.get(metric, math.inf) if isinstance(metric, str) \
        else math.inf


def cut_graph(graph: sp.csr_matrix, knn_indices: np.ndarray, knn_dists: np.ndarray,
              at: float) -> sp.csr_matrix:
    """``graph`` (symmetric, built from the kNN graph) without its edges whose distance,
    read from ``(knn_indices, knn_dists)``, is at least ``at``; warns when points are left
    without any edge."""
    if not math.isfinite(at) or not (knn_dists[:, 1:] >= at).any():
        return graph
    n = graph.shape[0]
    coo, lengths = knn_edge_lengths(graph, knn_indices, knn_dists)
    keep = lengths < at  # (an edge no kNN list holds reads 0 and is kept)
    cut = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=graph.shape)
    off_diagonal = coo.row != coo.col
    before = np.bincount(coo.row[off_diagonal], minlength=n)
    after = np.bincount(coo.row[off_diagonal & keep], minlength=n)
    isolated = int(np.count_nonzero((after == 0) & (before > 0)))
    if isolated:  # as umap-learn, a cut that leaves every point an edge is not worth a warning
        warn_user(f"disconnection_distance={at:g} removed {int((~keep).sum()) // 2} "
                  f"edges of the neighbour graph and left {isolated} points without "
                  "neighbours: they are laid out apart")
    return cut.astype(graph.dtype)


def cut_new_rows(weights: np.ndarray, dists: np.ndarray, at: float) -> np.ndarray:
    """New points' weights (m, k) over their training neighbours (distances ``dists``,
    nearest first) with those at least ``at`` away set to 0. A point left with none keeps its
    nearest neighbour (weight 1), so that it is still placed, beside it; a warning counts
    them."""
    if not math.isfinite(at):
        return weights
    beyond = dists >= at
    if not beyond.any():
        return weights
    weights = np.where(beyond, 0.0, weights).astype(weights.dtype)
    alone = ~(weights > 0).any(axis=1)
    if alone.any():
        weights[alone, 0] = 1.0
        warn_user(f"{int(alone.sum())} new points have no training point closer than "
                  f"disconnection_distance={at:g}; each is placed by its nearest one")
    return weights
