"""High-dimensional affinities P: UMAP's fuzzy simplicial set and t-SNE's perplexity-calibrated,
symmetrised, normalised P.

Each function takes a kNN graph in the convention of :mod:`unimap.neighbors` (column 0 is the
point itself) and returns plain arrays or a scipy CSR matrix, so every method can reuse them.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from unimap._validation import check_float

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
    (m, n) CSR matrix in ``values``' dtype; repeated edges are summed."""
    m, k = indices.shape
    rows = np.repeat(np.arange(m, dtype=np.int64), k)
    directed = sp.csr_matrix((np.asarray(values).ravel(), (rows, np.asarray(indices).ravel())),
                             shape=(m, n))
    directed.sum_duplicates()
    return directed


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
    n = indices.shape[0]
    if kind == "perplexity":
        probabilities, _ = conditional_probabilities(distances[:, 1:], perplexity)
        directed = knn_affinities(indices[:, 1:], probabilities, n)
    else:
        sigmas, rhos = smooth_knn_dist(distances, distances.shape[1])
        weights = membership_weights(indices, distances, sigmas, rhos)
        directed = knn_affinities(indices, weights.astype(np.float64), n)
    if symmetrization == "umap":
        P = fuzzy_union(directed)
    elif symmetrization == "tsne":
        P = (directed + directed.T.tocsr()) * 0.5
    else:
        P = directed
    P = sp.coo_matrix(P, dtype=np.float32)
    keep = (P.row != P.col) & (P.data > 0)
    P = sp.csr_matrix((P.data[keep], (P.row[keep], P.col[keep])), shape=(n, n))
    P.sum_duplicates()
    P.sort_indices()
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
    from unimap._kernels.fuzzy import smooth_knn_dist as _kernel

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
    from unimap._kernels.fuzzy import membership_strengths

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
    transpose = directed.T.tocsr()
    product = directed.multiply(transpose).tocsr()
    union = directed + transpose - product
    if set_op_mix_ratio != 1.0:  # the default 1 skips three passes over the edges
        union = set_op_mix_ratio * union + (1.0 - set_op_mix_ratio) * product
    result = sp.csr_matrix(union, dtype=np.float32)
    result.eliminate_zeros()
    result.sort_indices()
    return result


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
    check_float(set_op_mix_ratio, "set_op_mix_ratio", 0.0, 1.0)
    check_float(local_connectivity, "local_connectivity", 0.0, low_inclusive=True)
    n = indices.shape[0] if n_samples is None else n_samples
    k = indices.shape[1]
    sigmas, rhos = smooth_knn_dist(distances, k, local_connectivity)
    weights = membership_weights(indices, distances, sigmas, rhos)
    directed = knn_affinities(indices, weights, n)
    return fuzzy_union(directed, set_op_mix_ratio), sigmas, rhos


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
    from unimap._kernels.perplexity import conditional_probabilities as _kernel

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
    n = conditional.shape[0]
    P = (conditional + conditional.T.tocsr()) / (2.0 * n)
    P = sp.csr_matrix(P, dtype=np.float32)
    P.eliminate_zeros()
    P.sort_indices()
    return P


def perplexity_affinities(
    indices: np.ndarray, distances: np.ndarray, perplexity: float,
    n_samples: int | None = None,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """t-SNE's joint probabilities P from a kNN graph (the same function serves GDR's t-SNE mode).

    Parameters
    ----------
    indices, distances : ndarrays of shape (n_samples, k + 1)
        kNN graph, column 0 the point itself (convention of :mod:`unimap.neighbors`);
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
    if indices.shape[1] < 2:
        raise ValueError("perplexity_affinities needs at least one neighbour besides the point")
    n = indices.shape[0] if n_samples is None else n_samples
    probabilities, sigmas = conditional_probabilities(distances[:, 1:], perplexity)
    return symmetrize_tsne(knn_affinities(indices[:, 1:], probabilities, n)), sigmas
