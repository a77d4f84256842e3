"""``inverse_transform`` of UMAP and GDR: points of the embedding mapped back to data space.

umap-learn's construction without its last step: the training points nearest to the new
position in the embedding, weighted by the embedding's kernel ``1/(1 + a·d^(2b))`` and
normalised to sum 1, average their data rows (umap-learn's ``init_transform``). umap-learn
then moves each point by SGD in data space; the average alone reconstructs held-out points
better than umap-learn's whole procedure on iris, digits and MNIST, so that step is left out
(measured, with the choice of the fit's 15 neighbours: ``benchmarks/results/dropin.md``). A
point far outside the embedding gets the mean of its nearest training rows, not an
extrapolation.

Points farther than ``FAR_RADII`` times the embedding's radius from its centre are searched
in float64 by a key that leaves out their own squared norm (:func:`far_neighbors`): in
float32 their squared distances overflow from about 1e19 on (NaN rows), and well
before that the norm swamps the differences that rank the training points.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["inverse_positions", "far_neighbors", "FAR_RADII"]

FAR_RADII = 100.0  # float32's squared distances still rank neighbours 1e4 radii² out
BLOCK_BYTES = 128 << 20  # the far search's float64 keys, per block of query rows


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
    centre = embedding.mean(axis=0, dtype=np.float64)
    radius = float(np.sqrt(((embedding - centre) ** 2).sum(axis=1).max()))
    far = np.sqrt(((Y.astype(np.float64) - centre) ** 2).sum(axis=1)) > FAR_RADII * max(radius, 1.0)
    idx = np.empty((Y.shape[0], k), dtype=np.int64)
    dist = np.empty((Y.shape[0], k), dtype=np.float64)
    if not far.all():
        index = NeighborIndex("euclidean", "exact", n_jobs).build(embedding)
        near_idx, near_dist = index.query(np.ascontiguousarray(Y[~far], dtype=np.float32), k)
        idx[~far], dist[~far] = near_idx, near_dist
    if far.any():
        idx[far], dist[far] = far_neighbors(embedding, Y[far], k)
    weights = 1.0 / (1.0 + a * np.power(dist, 2.0 * b))
    weights /= weights.sum(axis=1, keepdims=True)
    if sp.issparse(data):  # the weights as an (m, n) sparse matrix: no dense training rows
        m = idx.shape[0]
        W = sp.csr_matrix((weights.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)),
                          shape=(m, data.shape[0]))
        return (W @ data.astype(np.float64)).toarray().astype(np.float32)
    return np.einsum("ik,ikd->id", weights, data[idx].astype(np.float64)).astype(np.float32)


def far_neighbors(embedding: np.ndarray, Y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``embedding`` to each row of ``Y`` and their distances
    (float64), for points far outside the embedding (any finite float32 position).

    Ranked by ``|e|² − 2 y·e`` about the embedding's centre, which is ``|y − e|² − |y|²``:
    float64 holds it for any float32 ``y``, where ``|y − e|²`` itself would lose the
    differences in ``|y|²``. Written per component (no BLAS), so the choice does not depend
    on threads; ties go to the lower index.
    """
    centre = embedding.mean(axis=0, dtype=np.float64)
    E = embedding.astype(np.float64) - centre
    norms = (E * E).sum(axis=1)
    n = E.shape[0]
    idx = np.empty((Y.shape[0], k), dtype=np.int64)
    dist = np.empty((Y.shape[0], k), dtype=np.float64)
    rows = max(1, BLOCK_BYTES // (8 * n))
    for start in range(0, Y.shape[0], rows):
        Q = Y[start:start + rows].astype(np.float64) - centre
        key = np.broadcast_to(norms, (Q.shape[0], n)).copy()
        for c in range(E.shape[1]):
            key -= 2.0 * Q[:, c:c + 1] * E[:, c]
        order = np.argsort(key, axis=1, kind="stable")[:, :k]
        nearest = np.take_along_axis(key, order, axis=1)
        idx[start:start + rows] = order
        dist[start:start + rows] = np.sqrt(np.maximum((Q * Q).sum(axis=1)[:, None] + nearest, 0.0))
    return idx, dist
