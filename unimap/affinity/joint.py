"""High-dimensional affinities P: UMAP's fuzzy simplicial set and t-SNE's perplexity-calibrated,
symmetrised, normalised P.

Each function takes a kNN graph in the convention of :mod:`unimap.neighbors.graph` (column 0 is the
point itself) and returns plain arrays or a scipy CSR matrix, so every method can reuse them.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from numpy.typing import DTypeLike

from unimap.runtime.validation import check_float

__all__ = [
    "effective_perplexity",
    "perplexity_neighbors",
    "knn_affinities",
    "joint_affinities",
    "smooth_knn_dist",
    "fuzzy_simplicial_set",
    "membership_weights",
    "fuzzy_union",
    "conditional_probabilities",
    "perplexity_affinities",
    "symmetrize_tsne",
]


def effective_perplexity(perplexity: float, n_samples: int, stacklevel: int = 4) -> float:
    """``perplexity`` lowered to ``(n_samples − 1)/3`` (at least 1) when the data has fewer
    than ``3·perplexity`` other points, with a warning; the caller records the value."""
    limit = max((n_samples - 1) / 3.0, 1.0)
    if perplexity > limit:
        warnings.warn(
            f"perplexity={perplexity} needs more than {n_samples} samples "
            f"(3·perplexity neighbours); using perplexity={limit:.3g} "
            "(recorded in perplexity_)", stacklevel=stacklevel,
        )
        return limit
    return float(perplexity)


def perplexity_neighbors(perplexity: float, n_available: int) -> int:
    """Neighbours a perplexity-calibrated row uses: ``⌊3·perplexity⌋``, at least 1 and at
    most the ``n_available`` other points (the point itself not counted)."""
    return max(1, min(int(3 * perplexity), n_available))


def knn_affinities(indices: np.ndarray, values: np.ndarray, n: int) -> sp.csr_matrix:
    """Directed affinities ``values[i, c]`` on the edges ``(i, indices[i, c])`` as an
    (m, n) CSR matrix in ``values``' dtype (float32 or float64, other dtypes become float64),
    with sorted rows; repeated edges are summed, zeros left out."""
    from unimap.affinity.symmetrize_numba import DIRECTED

    graph = _DirectedRows(indices, values, n)
    return graph.combined(DIRECTED, drop_self=False, compute=graph.data.dtype,
                          out=graph.data.dtype)


class _DirectedRows:
    """A directed affinity matrix as CSR arrays whose rows may be unsorted and may repeat a
    column: a kNN graph's (m, k) arrays without a copy (rows of k entries), or a CSR
    matrix's. :meth:`combined` builds every affinity matrix of this module from it."""

    def __init__(self, indices: np.ndarray, values: np.ndarray, n: int) -> None:
        indices = np.ascontiguousarray(indices, dtype=np.int32)
        values = np.ascontiguousarray(values)
        if values.dtype not in (np.float32, np.float64):
            values = values.astype(np.float64)
        if values.shape != indices.shape:
            raise ValueError(f"values of shape {values.shape} do not match the neighbour "
                             f"indices of shape {indices.shape}")
        m, k = indices.shape
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            raise ValueError(f"neighbour indices must lie in [0, {n}); found "
                             f"{indices.min()} to {indices.max()}")
        self.shape = (m, n)
        self.indptr = np.arange(m + 1, dtype=np.int64) * k
        self.columns = indices.reshape(-1)
        self.data = values.reshape(-1)

    @classmethod
    def of_csr(cls, matrix: sp.csr_matrix) -> _DirectedRows:
        """The arrays of a CSR matrix, its rows sorted first where they were not (the
        merge sorts each row by insertion, quadratic in a long unsorted row)."""
        matrix = sp.csr_matrix(matrix)
        if not matrix.has_sorted_indices:
            matrix = matrix.sorted_indices()
        rows = cls.__new__(cls)
        rows.shape = matrix.shape
        rows.indptr = matrix.indptr.astype(np.int64, copy=False)
        rows.columns = matrix.indices.astype(np.int32, copy=False)
        data = matrix.data
        rows.data = data if data.dtype in (np.float32, np.float64) else data.astype(np.float64)
        return rows

    def combined(self, mode: int, *, drop_self: bool, compute: DTypeLike = np.float64,
                 out: DTypeLike = np.float32, mix: float = 1.0, divisor: float = 2.0,
                 ) -> sp.csr_matrix:
        """The matrix combined entry by entry with its transpose (``mode`` of
        :mod:`unimap.affinity.symmetrize_numba`), computed in ``compute`` and stored in ``out``,
        as CSR with sorted rows, without zeros (and without the diagonal where
        ``drop_self``)."""
        from unimap.affinity import symmetrize_numba as kernels
        from unimap.runtime.dynamic_numba import workers

        compute = np.dtype(compute).type
        m, n = self.shape
        transposed = mode != kernels.DIRECTED
        if transposed and m != n:
            raise ValueError(f"affinities must be square to symmetrise, got {self.shape}")
        nnz = self.columns.shape[0] if transposed else 0
        t_indptr = np.zeros(n + 1 if transposed else m + 1, dtype=np.int64)
        t_columns = np.empty(nnz, dtype=np.int32)
        t_data = np.empty(nnz, dtype=self.data.dtype)
        if transposed:
            kernels.transpose_rows(self.indptr, self.columns, self.data, t_indptr, t_columns,
                                   t_data)
        # mix and 1 − mix in the computing dtype, as scipy multiplied a matrix by a float
        scalars = (mode, compute(0), compute(mix), compute(1.0 - mix), float(divisor),
                   drop_self, workers())
        arrays = (self.indptr, self.columns, self.data, t_indptr, t_columns, t_data)
        indptr = np.zeros(m + 1, dtype=np.int64)
        kernels.combine_rows(*arrays, *scalars, indptr, np.empty(0, dtype=np.int32),
                             np.empty(0, dtype=out))
        np.cumsum(indptr, out=indptr)
        columns = np.empty(indptr[-1], dtype=np.int32)
        data = np.empty(indptr[-1], dtype=out)
        kernels.combine_rows(*arrays, *scalars, indptr, columns, data)
        matrix = sp.csr_matrix((data, columns, indptr), shape=self.shape)
        matrix.has_sorted_indices = True
        matrix.has_canonical_format = True
        return matrix


def joint_affinities(
    indices: np.ndarray,
    distances: np.ndarray,
    kind: str,
    symmetrization: str,
    normalize: bool,
    perplexity: float | None = None,
) -> sp.csr_matrix:
    """P of GDR, any combination of the directed affinities and the symmetrisations.

    Parameters
    ----------
    indices, distances : ndarrays of shape (n_samples, k)
        kNN graph, column 0 the point itself.
    kind : {"fuzzy", "perplexity"}
        UMAP's memberships ``exp(-(d − ρ)/σ)`` or t-SNE's conditional probabilities.
    symmetrization : {"umap", "tsne", "none"}
        Fuzzy union ``A + Aᵀ − A∘Aᵀ``, ``(A + Aᵀ)/2``, or kept directed.
    normalize : bool
        Scale P to sum 1.
    perplexity : float
        For ``kind="perplexity"``.

    Returns
    -------
    P : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        Without self-loops (duplicates can put a point among its own neighbours).
    """
    from unimap.affinity.symmetrize_numba import DIRECTED, MEAN, UNION

    n = indices.shape[0]
    if kind == "perplexity":
        probabilities, _ = conditional_probabilities(distances[:, 1:], perplexity)
        directed = _DirectedRows(indices[:, 1:], probabilities, n)
    else:
        sigmas, rhos = smooth_knn_dist(distances, distances.shape[1])
        directed = _DirectedRows(indices, membership_weights(indices, distances, sigmas, rhos), n)
    # in float64 whatever the memberships' dtype: P's bits as they were (scipy's float64)
    mode = {"umap": UNION, "tsne": MEAN}.get(symmetrization, DIRECTED)
    P = directed.combined(mode, drop_self=True, compute=np.float64)
    if normalize and P.nnz:
        P.data /= np.float32(P.data.sum(dtype=np.float64))
    return P


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
    _kernel(distances, float(n_target), float(local_connectivity), float(bandwidth), rhos, sigmas)
    return sigmas, rhos


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

    rows = _DirectedRows.of_csr(directed)
    return rows.combined(UNION, drop_self=False, compute=rows.data.dtype,
                         mix=set_op_mix_ratio)


def fuzzy_simplicial_set(
    indices: np.ndarray,
    distances: np.ndarray,
    n_samples: int | None = None,
    local_connectivity: float = 1.0,
    set_op_mix_ratio: float = 1.0,
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

    Returns
    -------
    graph : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32, symmetric
    sigmas, rhos : ndarrays of shape (n_samples,)
    """
    from unimap.affinity.symmetrize_numba import UNION

    check_float(set_op_mix_ratio, "set_op_mix_ratio", 0.0, 1.0)
    check_float(local_connectivity, "local_connectivity", 0.0, low_inclusive=True)
    n = indices.shape[0] if n_samples is None else n_samples
    k = indices.shape[1]
    sigmas, rhos = smooth_knn_dist(distances, k, local_connectivity)
    directed = _DirectedRows(indices, membership_weights(indices, distances, sigmas, rhos), n)
    graph = directed.combined(UNION, drop_self=False, compute=np.float32,
                              mix=set_op_mix_ratio)
    return graph, sigmas, rhos


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

    rows = _DirectedRows.of_csr(conditional)
    return rows.combined(MEAN, drop_self=False, compute=rows.data.dtype,
                         divisor=2.0 * conditional.shape[0])


def perplexity_affinities(
    indices: np.ndarray, distances: np.ndarray, perplexity: float,
    n_samples: int | None = None,
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
    probabilities, sigmas = conditional_probabilities(distances[:, 1:], perplexity)
    directed = _DirectedRows(indices[:, 1:], probabilities, n)
    return directed.combined(MEAN, drop_self=False, divisor=2.0 * n), sigmas
