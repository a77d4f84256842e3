"""UMAP's high-dimensional affinities: per-point ρ and σ calibrated on the kNN distances
(:func:`smooth_knn_dist`), the directed fuzzy memberships they give
(:func:`membership_weights`), and their fuzzy union into the symmetric fuzzy simplicial set
(:func:`fuzzy_union`, :func:`fuzzy_simplicial_set`), on a kNN graph in the convention of
:mod:`unimap.neighbors.graph` (column 0 is the point itself). GDR's fuzzy mode
(:mod:`unimap.affinity.joint`) and the placement of new points reuse the first two.
:class:`FuzzyAffinity` is the stage UMAP declares (:mod:`unimap.affinity.stage`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from unimap.affinity.directed import DirectedRows
from unimap.affinity.stage import Affinity
from unimap.runtime.validation import check_float

__all__ = ["FuzzyAffinity", "smooth_knn_dist", "calibration_scale", "brought_to_scale",
           "membership_weights", "directed_memberships", "fuzzy_union", "fuzzy_simplicial_set"]


class FuzzyAffinity(Affinity):
    """UMAP's fuzzy simplicial set as an affinity stage (:mod:`unimap.affinity.stage`).

    Parameters
    ----------
    local_connectivity : float, default=1.0
        Number of nearest neighbours assumed connected at full strength (interpolated).
    set_op_mix_ratio : float in [0, 1], default=1.0
        1 the fuzzy union of the directed memberships, 0 their intersection.

    Attributes
    ----------
    P_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        The symmetric fuzzy graph (:func:`fuzzy_simplicial_set`).
    sigmas_, rhos_ : ndarrays of shape (n_samples,), float32
        Each point's bandwidth and distance to its nearest neighbour (:func:`smooth_knn_dist`).

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.affinity import FuzzyAffinity
    >>> from unimap.neighbors import nearest_neighbors
    >>> X = np.random.default_rng(0).normal(size=(100, 5)).astype(np.float32)
    >>> knn, index = nearest_neighbors(X, 10)
    >>> affinity = FuzzyAffinity().fit(knn.indices, knn.distances)
    >>> affinity.P_.shape, affinity.sigmas_.shape
    ((100, 100), (100,))
    """

    MEMORY_PER_EDGE = (44, 28)

    def __init__(self, local_connectivity: float = 1.0, set_op_mix_ratio: float = 1.0) -> None:
        self.local_connectivity = local_connectivity
        self.set_op_mix_ratio = set_op_mix_ratio

    def _fit(self, indices, distances, n, device):
        P, self.sigmas_, self.rhos_ = fuzzy_simplicial_set(
            indices, distances, n, self.local_connectivity, self.set_op_mix_ratio,
            device=device)
        return P

    def to_new(self, indices: np.ndarray, distances: np.ndarray) -> np.ndarray:
        """The memberships ``exp(-max(d - ρ, 0)/σ)`` of new points to their k nearest training
        points, float32 (m, k), calibrated to ``log2(k)`` with one less local connectivity:
        no neighbour of a new point is itself (umap-learn's ``transform``)."""
        sigmas, rhos = smooth_knn_dist(distances, distances.shape[1],
                                       max(0.0, self.local_connectivity - 1.0))
        return membership_weights(indices, distances, sigmas, rhos, skip_self=False)


def smooth_knn_dist(
    distances: np.ndarray,
    n_target: float | None = None,
    local_connectivity: float = 1.0,
    bandwidth: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Calibrate UMAP's per-point ρ (distance to the nearest neighbour) and σ (bandwidth).

    Parameters
    ----------
    distances : ndarray of shape (n_samples, k)
        kNN distances, column 0 the point itself.
    n_target : float, optional
        σ_i is chosen so that the weights of the k-1 other neighbours sum to ``log2(n_target)``.
        Default: ``k``.
    local_connectivity : float, default=1.0
        Number of nearest neighbours assumed connected at full strength (interpolated).
    bandwidth : float, default=1.0
        Multiplies the target sum.

    Returns
    -------
    sigmas, rhos : ndarrays of shape (n_samples,), float32
    """
    from unimap.affinity.fuzzy_numba import smooth_knn_dist as _kernel

    distances = np.ascontiguousarray(distances, dtype=np.float32)
    n_target = distances.shape[1] if n_target is None else n_target
    rhos = np.zeros(distances.shape[0], dtype=np.float32)
    sigmas = np.zeros(distances.shape[0], dtype=np.float32)
    distances, scale = brought_to_scale(distances)
    _kernel(distances, float(n_target), float(local_connectivity), float(bandwidth), rhos, sigmas)
    if scale != 1.0:
        sigmas *= np.float32(scale)
        rhos *= np.float32(scale)
    return sigmas, rhos


CALIBRATION_RANGE = 2.0 ** 40
"""Largest distances (and inverse of the smallest) that the calibration takes as they are:
its Newton steps start at β = 1 and halve β at most 64 times, so σ stays below 2⁶⁴, and
distances of 1e30 calibrated to that cap gave a wrong graph and a degraded embedding
(measured: benchmarks/results/library_notes.md, "unimap/affinity/fuzzy.py")."""


def brought_to_scale(distances: np.ndarray) -> tuple[np.ndarray, float]:
    """``(distances / scale, scale)`` with :func:`calibration_scale`'s power of two (the
    array itself when the scale is 1); ρ and σ found on the result are multiplied back."""
    scale = calibration_scale(distances)
    return (distances if scale == 1.0 else distances / np.float32(scale)), scale


def calibration_scale(distances: np.ndarray) -> float:
    """The power of two the calibration divides ``distances`` by: 1 when their largest
    finite value lies within ``CALIBRATION_RANGE`` of 1, else the power of two at or below
    it. A power of two scales exactly, and ``exp(-(d − ρ)/σ)`` does not change when d, ρ
    and σ are scaled together, so the memberships are those of the distances brought to
    scale, and ρ and σ are scaled back (bitwise, for distances that stay normal)."""
    finite = distances[np.isfinite(distances)]
    largest = float(finite.max()) if finite.size else 0.0
    if largest == 0.0 or 1.0 / CALIBRATION_RANGE <= largest <= CALIBRATION_RANGE:
        return 1.0
    return math.ldexp(1.0, math.frexp(largest)[1] - 1)


def membership_weights(
    indices: np.ndarray, distances: np.ndarray, sigmas: np.ndarray, rhos: np.ndarray,
    skip_self: bool = True,
) -> np.ndarray:
    """Directed fuzzy membership ``w_{i→j} = exp(-max(d_ij - ρ_i, 0)/σ_i)``, shape (n, k)."""
    from unimap.affinity.fuzzy_numba import membership_strengths

    weights = np.empty(distances.shape, dtype=np.float32)
    membership_strengths(
        np.ascontiguousarray(indices, dtype=np.int32),
        np.ascontiguousarray(distances, dtype=np.float32),
        rhos, sigmas, skip_self, weights,
    )
    return weights


def fuzzy_union(directed: sp.csr_matrix, set_op_mix_ratio: float = 1.0) -> sp.csr_matrix:
    """Symmetrise directed memberships: ``mix·(W + Wᵀ − W∘Wᵀ) + (1 − mix)·(W∘Wᵀ)``.

    ``set_op_mix_ratio=1`` is the fuzzy union (probabilistic t-conorm), 0 the intersection.
    """
    from unimap.affinity.symmetrize_numba import UNION

    rows = DirectedRows.of_csr(directed)
    return rows.combined(UNION, drop_self=False, compute=rows.data.dtype,
                         mix=set_op_mix_ratio)


def fuzzy_simplicial_set(
    indices: np.ndarray,
    distances: np.ndarray,
    n_samples: int | None = None,
    local_connectivity: float = 1.0,
    set_op_mix_ratio: float = 1.0,
    device: str = "cpu",
) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """UMAP's symmetric fuzzy graph from a kNN graph.

    Parameters
    ----------
    indices, distances : ndarrays of shape (n_samples, k)
        kNN graph, column 0 the point itself.
    n_samples : int, optional
        Number of vertices (default: ``indices.shape[0]``).
    local_connectivity : float, default=1.0
    set_op_mix_ratio : float in [0, 1], default=1.0
    device : {"cpu", "cuda"}, default="cpu"
        Where to calibrate and symmetrise (:mod:`unimap.affinity.calibration_cuda`,
        :mod:`unimap.affinity.symmetrize_cuda` on the GPU).

    Returns
    -------
    graph : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32, symmetric
    sigmas, rhos : ndarrays of shape (n_samples,)
    """
    from unimap.affinity.symmetrize_numba import UNION

    check_float(set_op_mix_ratio, "set_op_mix_ratio", 0.0, 1.0)
    check_float(local_connectivity, "local_connectivity", 0.0, low_inclusive=True)
    n = indices.shape[0] if n_samples is None else n_samples
    weights, sigmas, rhos = directed_memberships(indices, distances, local_connectivity,
                                                 device)
    graph = DirectedRows(indices, weights, n).combined(
        UNION, drop_self=False, compute=np.float32, mix=set_op_mix_ratio, device=device)
    return graph, sigmas, rhos


def directed_memberships(indices: np.ndarray, distances: np.ndarray,
                         local_connectivity: float = 1.0, device: str = "cpu"):
    """``(weights, sigmas, rhos)``: :func:`smooth_knn_dist` (target ``k``) and
    :func:`membership_weights`, on the GPU with ``device="cuda"``, where the (n, k) weights
    stay on the device for the symmetrisation."""
    if device == "cuda":
        from unimap.affinity.calibration_cuda import fuzzy_memberships_cuda

        distances = np.ascontiguousarray(distances, dtype=np.float32)
        distances, scale = brought_to_scale(distances)  # as smooth_knn_dist
        weights, sigmas, rhos = fuzzy_memberships_cuda(indices, distances, distances.shape[1],
                                                       local_connectivity)
        return weights, sigmas * np.float32(scale), rhos * np.float32(scale)
    sigmas, rhos = smooth_knn_dist(distances, distances.shape[1], local_connectivity)
    return membership_weights(indices, distances, sigmas, rhos), sigmas, rhos
