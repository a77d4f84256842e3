"""Placing new points into a fitted embedding (``transform``), shared by UMAP, TSNE and GDR.

The fitted embedding stays fixed; every new point is optimized on its own against it, so a
point lands in the same place whether it comes alone or in a batch.

- :func:`fuzzy_placement`: UMAP's way. Fuzzy membership of each new point to its nearest
  training points, start at the membership-weighted mean of their positions, then UMAP's
  edge-sampled SGD with the training points fixed (the loss of ``UMAP`` and of ``GDR``'s
  unnormalized mode).
- :func:`perplexity_placement`: openTSNE's way. Conditional probabilities at a (small)
  perplexity, start at the median of the nearest neighbours' positions, then gradient
  descent on each point's KL(P_i‖Q_i) with its own Z over the training points.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from unimap.affinity.disconnect import cut_new_rows
from unimap.neighbors.graph import NeighborIndex
from unimap.runtime.guards import UMAP_CAUSES, FiniteGuard

__all__ = ["fuzzy_memberships", "fuzzy_placement", "perplexity_placement", "strongest_edge_first",
           "transform_epochs"]

# openTSNE's transform defaults (TSNE.transform exposes them; GDR's normalized mode uses them).
PLACEMENT_PERPLEXITY = 5.0  # smaller than in fit: a new point should sit with its closest
PLACEMENT_N_ITER = 250
PLACEMENT_LEARNING_RATE = 0.1
PLACEMENT_EXAGGERATION = 1.5
PLACEMENT_MOMENTUM = 0.8
PLACEMENT_MAX_GRAD_NORM = 1.0  # keeps points that start on top of training points in place


def transform_epochs(n_train: int, fit_epochs: int | None) -> int:
    """Epochs of UMAP-style placement: a third of the fit's ``n_epochs`` when it was set, else
    umap-learn's default, 100 for up to 10,000 training points and 30 above."""
    if fit_epochs is not None:
        return max(fit_epochs // 3, 1)
    return 100 if n_train <= 10_000 else 30


def fuzzy_memberships(index: NeighborIndex, X: np.ndarray, n_neighbors: int,
                      local_connectivity: float,
                      disconnection_distance: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """New points' ``n_neighbors`` nearest training points and their fuzzy memberships to
    them, both (m, k): calibrated with one less local connectivity (no neighbour of a new
    point is itself), neighbours at least ``disconnection_distance`` away set to 0. What
    :func:`fuzzy_placement` starts from, and what ``UMAP(transform_mode="graph")`` returns."""
    from unimap.affinity.fuzzy import FuzzyAffinity

    idx, dist = index.query(X, n_neighbors)
    weights = FuzzyAffinity(local_connectivity).to_new(idx, dist)
    return idx, cut_new_rows(weights, dist, disconnection_distance)


def fuzzy_placement(
    index: NeighborIndex,
    X: np.ndarray,
    reference: np.ndarray,
    n_neighbors: int,
    local_connectivity: float,
    a: float,
    b: float,
    seed: int,
    n_epochs: int,
    learning_rate: float,
    repulsion_strength: float,
    negative_sample_rate: float,
    disconnection_distance: float = math.inf,
    output_metric: str = "euclidean",
    device: str = "cpu",
) -> np.ndarray:
    """UMAP-style placement of the rows of ``X`` into ``reference`` (see module docstring).

    Parameters
    ----------
    index : NeighborIndex
        Index of the training points.
    X : ndarray of shape (m, n_features), or (m, n_train) distances if precomputed
    reference : ndarray of shape (n_train, n_components), float32
        The fitted embedding.
    n_neighbors : int
        Neighbours per new point (the fit's ``n_neighbors_``).
    local_connectivity : float
        The fit's value: lowered by one here, since no neighbour of a new point is itself.
    a, b : float
        Low-dimensional kernel ``1 / (1 + a d^(2b))``.
    seed : int
    n_epochs : int
    learning_rate, repulsion_strength, negative_sample_rate : float
        As in :func:`unimap.optimizers.umap_sgd.place.umap_sgd_place`.
    disconnection_distance : float, default=inf
        Neighbours at least this far get no weight
        (:func:`unimap.affinity.disconnect.cut_new_rows`).
    output_metric : str, default="euclidean"
        The embedding's space, as in :func:`unimap.optimizers.umap_sgd.place.umap_sgd_place`.
    device : {"cpu", "cuda"}, default="cpu"
        Where the SGD runs (:func:`unimap.optimizers.umap_sgd.place.umap_sgd_place`); the
        neighbours and
        memberships are found on the CPU.

    Returns
    -------
    embedding : ndarray of shape (m, n_components), float32
    """
    from unimap.optimizers.umap_sgd.common import prune_graph
    from unimap.optimizers.umap_sgd.place import umap_sgd_place

    idx, weights = fuzzy_memberships(index, X, n_neighbors, local_connectivity,
                                     disconnection_distance)
    init = weighted_mean_positions(reference, idx, weights)
    m, k = idx.shape
    rows = np.repeat(np.arange(m), k)
    weights = strongest_edge_first(weights)
    graph = sp.csr_matrix((weights.ravel(), (rows, idx.ravel())), shape=(m, reference.shape[0]))
    graph = prune_graph(graph, n_epochs, max_weight=1.0)
    return umap_sgd_place(init, reference, graph, n_epochs=n_epochs, a=a, b=b, seed=seed,
                          learning_rate=learning_rate, repulsion_strength=repulsion_strength,
                          negative_sample_rate=negative_sample_rate, row_keys=row_keys(idx),
                          max_weight=1.0, guard=FiniteGuard("transform", UMAP_CAUSES),
                          output_metric=output_metric, device=device)


def perplexity_placement(
    index: NeighborIndex,
    X: np.ndarray,
    reference: np.ndarray,
    params,
    perplexity: float = PLACEMENT_PERPLEXITY,
    n_iter: int = PLACEMENT_N_ITER,
    learning_rate: float = PLACEMENT_LEARNING_RATE,
    exaggeration: float = PLACEMENT_EXAGGERATION,
    momentum: float = PLACEMENT_MOMENTUM,
    max_grad_norm: float | None = PLACEMENT_MAX_GRAD_NORM,
    disconnection_distance: float = math.inf,
) -> np.ndarray:
    """openTSNE-style placement of the rows of ``X`` into ``reference`` (module docstring).

    Each new point gets conditional probabilities over its ``⌊3·perplexity⌋`` nearest training
    points and starts at the median of its 10 nearest neighbours' positions (at most the
    ``⌊3·perplexity⌋`` found). ``params`` is a
    :class:`unimap.optimizers.gradient_descent.descent.RepulsionParams`; the other parameters are
    those of :func:`unimap.optimizers.gradient_descent.descent.place_points`. Neighbours at least
    ``disconnection_distance`` away get no probability (the rest renormalised).

    Returns
    -------
    embedding : ndarray of shape (m, n_components), float32
    """
    from unimap.affinity.perplexity import PerplexityAffinity
    from unimap.optimizers.gradient_descent.descent import place_points

    n_train = reference.shape[0]
    affinity = PerplexityAffinity(perplexity)
    k = affinity.n_neighbors_for(n_train)
    idx, dist = index.query(X, k)
    probabilities = affinity.to_new(idx, dist)
    if math.isfinite(disconnection_distance):
        probabilities = cut_new_rows(probabilities, dist, disconnection_distance)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
    m = X.shape[0]
    P = sp.csr_matrix((probabilities.ravel(), idx.ravel().astype(np.int64),
                       np.arange(0, m * k + 1, k)), shape=(m, n_train))
    init = np.median(reference[idx[:, :min(10, k)]], axis=1)
    if math.isfinite(disconnection_distance):
        # a point with no neighbour within reach is attracted by its nearest alone: it starts
        # there, not at the median of neighbours that may lie across the map (from which
        # its 250 steps did not always bring it back: 1 seed in 12 ended over a map's width
        # away)
        alone = dist[:, 0] >= disconnection_distance
        init[alone] = reference[idx[alone, 0]]
    Y = place_points(init, P, reference, n_iter, learning_rate, exaggeration, momentum, params,
                     max_grad_norm)
    return Y.astype(np.float32)


def strongest_edge_first(weights: np.ndarray) -> np.ndarray:
    """Each row of ``weights`` (m, k) divided by its largest entry (rows of zeros kept).

    The SGD samples an edge ``w / max_weight`` times per epoch. A new point's memberships,
    calibrated with one less local connectivity, never reach 1, so sampling them relative to 1
    ran each point's optimization at a fraction of the fit's pace; umap-learn samples relative
    to the batch's heaviest edge, which makes a point's result depend on its batch. Relative to
    the row's own heaviest edge, each new point's nearest neighbour is sampled every epoch, as
    every training point's is in the fit (its local connectivity gives it weight 1), and batches
    do not matter. The row gave the best held-out 10-NN accuracy of the three, supervised and
    not (measured: ``benchmarks/results/dropin_seeds.md``; benchmarks/results/library_notes.md,
    "unimap/placement.py").
    """
    top = weights.max(axis=1, keepdims=True)
    return np.divide(weights, top, out=np.zeros_like(weights), where=top > 0)


def weighted_mean_positions(reference: np.ndarray, idx: np.ndarray,
                            weights: np.ndarray) -> np.ndarray:
    """Each row's weight-averaged neighbour position (plain mean where all weights are 0)."""
    totals = weights.sum(axis=1, keepdims=True)
    norm = np.where(totals > 0, weights / np.where(totals > 0, totals, 1.0), 1.0 / idx.shape[1])
    return np.einsum("ik,ikd->id", norm, reference[idx]).astype(np.float32)


def row_keys(idx: np.ndarray) -> np.ndarray:
    """A key per new point derived from its neighbour list, so its random stream does not
    depend on its position in the batch."""
    keys = np.zeros(idx.shape[0], dtype=np.uint64)
    mult = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for col in range(idx.shape[1]):
            keys = (keys ^ idx[:, col].astype(np.uint64)) * mult
    return keys
