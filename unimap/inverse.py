"""``inverse_transform`` of UMAP and GDR: points of the embedding mapped back to data space.

umap-learn's construction without its last step: the training points nearest to the new
position in the embedding, weighted by the embedding's kernel ``1/(1 + a·d^(2b))`` and
normalised to sum 1, average their data rows (umap-learn's ``init_transform``). umap-learn
then moves each point by SGD in data space; the average alone reconstructs held-out points
better than umap-learn's whole procedure on iris, digits and MNIST, so that step is left out
(measured, with the choice of the fit's 15 neighbours: ``benchmarks/results/dropin.md``). A
point far outside the embedding gets the mean of its nearest training rows, not an
extrapolation.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["inverse_positions"]


def inverse_positions(embedding: np.ndarray, data: np.ndarray, Y: np.ndarray, a: float,
                      b: float, n_neighbors: int, n_jobs: int) -> np.ndarray:
    """Data-space rows (float32, shape (m, n_features)) of the embedded points ``Y``.

    Parameters
    ----------
    embedding : ndarray of shape (n, n_components)
        The training embedding.
    data : ndarray or sparse matrix of shape (n, n_features)
        The training rows, in the order of ``embedding``.
    Y : ndarray of shape (m, n_components)
    a, b : float
        The embedding's kernel.
    n_neighbors : int
        Training points averaged per row of ``Y`` (at most ``n``).
    n_jobs : int
        Threads of the neighbour search in the embedding.
    """
    from unimap.neighbors.graph import NeighborIndex

    k = min(n_neighbors, embedding.shape[0])
    index = NeighborIndex("euclidean", "exact", n_jobs).build(embedding)
    idx, dist = index.query(np.ascontiguousarray(Y, dtype=np.float32), k)
    weights = 1.0 / (1.0 + a * np.power(dist.astype(np.float64), 2.0 * b))
    weights /= weights.sum(axis=1, keepdims=True)
    if sp.issparse(data):  # the weights as an (m, n) sparse matrix: no dense training rows
        m = idx.shape[0]
        W = sp.csr_matrix((weights.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)),
                          shape=(m, data.shape[0]))
        return (W @ data.astype(np.float64)).toarray().astype(np.float32)
    return np.einsum("ik,ikd->id", weights, data[idx].astype(np.float64)).astype(np.float32)
