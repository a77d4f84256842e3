"""t-SNE's high-dimensional affinities: the perplexity a data set allows and the neighbours it
needs (:func:`effective_perplexity`, :func:`perplexity_neighbors`), the conditional
probabilities calibrated to it (:func:`conditional_probabilities`), and their symmetrised,
normalised joint P (:func:`symmetrize_tsne`, :func:`perplexity_affinities`), on a kNN graph in
the convention of :mod:`unimap.neighbors.graph` (column 0 is the point itself). GDR's t-SNE
mode (:mod:`unimap.affinity.joint`) and the placement of new points reuse them.
:class:`PerplexityAffinity` is the stage t-SNE declares (:mod:`unimap.affinity.stage`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from unimap.affinity.directed import DirectedRows
from unimap.affinity.stage import Affinity
from unimap.runtime.user_warnings import warn_user
from unimap.runtime.validation import check_float

__all__ = ["PerplexityAffinity", "effective_perplexity", "perplexity_neighbors",
           "conditional_probabilities", "symmetrize_tsne", "perplexity_affinities"]


class PerplexityAffinity(Affinity):
    """t-SNE's perplexity-calibrated joint probabilities as an affinity stage
    (:mod:`unimap.affinity.stage`; openTSNE's ``PerplexityBasedNN``, given the kNN graph).

    Parameters
    ----------
    perplexity : float, default=30.0
        The perplexity ``2^H`` each point's conditional probabilities are calibrated to. The
        graph needs ``⌊3·perplexity⌋`` neighbours besides each point
        (:meth:`n_neighbors_for`); lower it first on small data (:func:`effective_perplexity`).

    Attributes
    ----------
    P_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        ``(p_{j|i} + p_{i|j}) / 2n``, symmetric, summing to 1 (:func:`perplexity_affinities`).
    sigmas_ : ndarray of shape (n_samples,)
        Each point's Gaussian bandwidth.

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.affinity import PerplexityAffinity
    >>> from unimap.neighbors import nearest_neighbors
    >>> X = np.random.default_rng(0).normal(size=(200, 5)).astype(np.float32)
    >>> affinity = PerplexityAffinity(10.0)
    >>> knn, index = nearest_neighbors(X, affinity.n_neighbors_for(200) + 1)
    >>> P = affinity.fit(knn.indices, knn.distances).P_
    >>> P.shape, round(float(P.sum()), 4)
    ((200, 200), 1.0)
    >>> new, distances = index.query(X[:3] + 0.1, affinity.n_neighbors_for(200))
    >>> affinity.to_new(new, distances).sum(axis=1).round(4)
    array([1., 1., 1.])
    """

    MEMORY_PER_EDGE = (48, 14)

    def __init__(self, perplexity: float = 30.0) -> None:
        self.perplexity = perplexity

    def n_neighbors_for(self, n_available: int) -> int:
        """The neighbours each row uses besides the point itself, among ``n_available``
        others (:func:`perplexity_neighbors`)."""
        return perplexity_neighbors(self.perplexity, n_available)

    def _fit(self, indices, distances, n, device):
        P, self.sigmas_ = perplexity_affinities(indices, distances, self.perplexity, n,
                                                device=device)
        return P

    def to_new(self, indices: np.ndarray, distances: np.ndarray) -> np.ndarray:
        """The conditional probabilities ``p_{j|i}`` of new points over their k nearest
        training points, float64 (m, k), rows summing to 1, at the perplexity (at most k:
        openTSNE's ``prepare_partial``)."""
        probabilities, _ = conditional_probabilities(
            distances, min(self.perplexity, distances.shape[1]))
        return probabilities


def effective_perplexity(perplexity: float, n_samples: int) -> float:
    """``perplexity`` lowered to ``(n_samples − 1)/3`` (at least 1) when the data has fewer
    than ``3·perplexity`` other points, with a warning; the caller records the value."""
    limit = max((n_samples - 1) / 3.0, 1.0)
    if perplexity > limit:
        warn_user(
            f"perplexity={perplexity} needs more than {n_samples} samples "
            f"(3·perplexity neighbours); using perplexity={limit:.3g} "
            "(recorded in perplexity_)")
        return limit
    return float(perplexity)


def perplexity_neighbors(perplexity: float, n_available: int) -> int:
    """Neighbours a perplexity-calibrated row uses: ``⌊3·perplexity⌋``, at least 1 and at
    most the ``n_available`` other points (the point itself not counted)."""
    return max(1, min(int(3 * perplexity), n_available))


def conditional_probabilities(
    distances: np.ndarray, perplexity: float
) -> tuple[np.ndarray, np.ndarray]:
    """t-SNE's conditional probabilities ``p_{j|i}`` calibrated to a perplexity.

    Parameters
    ----------
    distances : ndarray of shape (n_samples, k)
        Distances to the k neighbours of each point, the point itself excluded.
    perplexity : float
        Target perplexity ``2^H`` of every row (H the Shannon entropy in bits).

    Returns
    -------
    probabilities : ndarray of shape (n_samples, k), float64
        Rows sum to 1.
    sigmas : ndarray of shape (n_samples,)
        Gaussian bandwidths ``σ_i`` (``exp(-d²/2σ²)``); infinite where the row's distances are
        all equal, so any bandwidth gives uniform probabilities.
    """
    from unimap.affinity.perplexity_numba import conditional_probabilities as _kernel

    check_float(perplexity, "perplexity", 0.0, low_inclusive=False)
    sq = np.square(np.asarray(distances, dtype=np.float64))
    sq = np.ascontiguousarray(sq)
    probabilities = np.empty_like(sq)
    betas = np.empty(sq.shape[0], dtype=np.float64)
    _kernel(sq, float(perplexity), probabilities, betas)
    with np.errstate(divide="ignore"):
        sigmas = np.sqrt(0.5 / betas)
    return probabilities, sigmas


def symmetrize_tsne(conditional: sp.csr_matrix) -> sp.csr_matrix:
    """``p_ij = (p_{j|i} + p_{i|j}) / 2n``: symmetric, summing to 1 (rows of ``conditional``
    sum to 1). Returned as float32 CSR with sorted indices."""
    from unimap.affinity.symmetrize_numba import MEAN

    rows = DirectedRows.of_csr(conditional)
    return rows.combined(MEAN, drop_self=False, compute=rows.data.dtype,
                         divisor=2.0 * conditional.shape[0])


def perplexity_affinities(
    indices: np.ndarray, distances: np.ndarray, perplexity: float,
    n_samples: int | None = None, device: str = "cpu",
) -> tuple[sp.csr_matrix, np.ndarray]:
    """t-SNE's joint probabilities P from a kNN graph (the same function serves GDR's t-SNE mode).

    Parameters
    ----------
    indices, distances : ndarrays of shape (n_samples, k + 1)
        kNN graph, column 0 the point itself (convention of :mod:`unimap.neighbors.graph`);
        ``k = ⌊3·perplexity⌋`` is the usual choice.
    perplexity : float
    n_samples : int, optional
        Number of vertices (default: ``indices.shape[0]``).
    device : {"cpu", "cuda"}, default="cpu"
        Where to calibrate and symmetrise.

    Returns
    -------
    P : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        ``(p_{j|i} + p_{i|j}) / 2n``, symmetric, sums to 1.
    sigmas : ndarray of shape (n_samples,)
    """
    from unimap.affinity.symmetrize_numba import MEAN

    if indices.shape[1] < 2:
        raise ValueError("perplexity_affinities needs at least one neighbour besides the point")
    n = indices.shape[0] if n_samples is None else n_samples
    probabilities, sigmas = calibrated_probabilities(distances[:, 1:], perplexity, device)
    directed = DirectedRows(indices[:, 1:], probabilities, n)
    return directed.combined(MEAN, drop_self=False, divisor=2.0 * n, device=device), sigmas


def calibrated_probabilities(distances: np.ndarray, perplexity: float, device: str = "cpu"):
    """:func:`conditional_probabilities`, on the GPU with ``device="cuda"`` (where the
    probabilities stay on the device for the symmetrisation)."""
    if device == "cuda":
        from unimap.affinity.calibration_cuda import conditional_probabilities_cuda

        check_float(perplexity, "perplexity", 0.0, low_inclusive=False)
        return conditional_probabilities_cuda(distances, perplexity)
    return conditional_probabilities(distances, perplexity)
