"""Objective values of an embedding, exact over all pairs: t-SNE's KL divergence and UMAP's
fuzzy-set cross-entropy.

Both share the same outline: validate the embedding and a square affinity matrix, evaluate the
stored edges in the embedding, and add a sum over all ``n(n-1)/2`` pairs that a parallel numba
kernel computes in ``O(n)`` memory (:func:`_sum_over_pairs`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.metrics import common
from unimap.metrics.checks import check_square_sparse
from unimap.runtime.threads import numba_threads, resolve_n_jobs
from unimap.runtime.validation import check_array, check_float

# Floor of u = a·d^(2b) in the UMAP cross-entropy, so that coincident embedding points give a
# large finite repulsive term (-log(1 - v) ≈ 27.6) instead of infinity.
_UMAP_U_FLOOR = 1e-12


def _check_objective_inputs(M: Any, name: str, embedding: Any):
    """Validate an objective's inputs: the embedding as float64 (at least 2 points) and the
    affinity matrix ``M`` (called ``name`` in messages) as a non-negative, finite, canonical
    float64 COO matrix of shape ``(n_samples, n_samples)``.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components)
    M : scipy.sparse.coo_matrix of shape (n_samples, n_samples)
    """
    embedding = check_array(embedding, "embedding", min_samples=2, dtype=np.float64)
    return embedding, check_square_sparse(M, name, embedding.shape[0])


def _sum_over_pairs(kernel: Callable, embedding: np.ndarray, params: tuple,
                    n_jobs: Any) -> float:
    """Sum of a pair term over all pairs ``i < j`` of embedding rows, by a parallel kernel.

    ``kernel(embedding, *params, out)`` is one of the balanced all-pairs kernels of
    :mod:`unimap.metrics.ranks_numba` (:func:`~unimap.metrics.ranks_numba.student_t_pair_sums`,
    :func:`~unimap.metrics.ranks_numba.umap_repulsion_pair_sums`): it writes ``(n + 1) // 2``
    partial sums into ``out``, which are added up here in a fixed order, so the result does
    not depend on the number of threads (``n_jobs``; -1: all cores).
    """
    pair_sums = np.empty((embedding.shape[0] + 1) // 2, dtype=np.float64)
    with numba_threads(resolve_n_jobs(n_jobs)):
        kernel(embedding, *params, pair_sums)
    return float(pair_sums.sum())


def _edges(M: sp.coo_matrix):
    """Off-diagonal stored entries of a COO matrix: rows, columns, values."""
    off_diagonal = M.row != M.col
    return M.row[off_diagonal], M.col[off_diagonal], M.data[off_diagonal]


def _edge_sq_distances(embedding: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Squared euclidean distances between ``embedding[rows[e]]`` and ``embedding[cols[e]]``,
    by batches."""
    out = np.empty(rows.shape[0], dtype=np.float64)
    batch = max(1, common.BLOCK_BYTES // (8 * embedding.shape[1]))
    for start in range(0, rows.shape[0], batch):
        diff = embedding[rows[start : start + batch]] - embedding[cols[start : start + batch]]
        out[start : start + batch] = np.einsum("ij,ij->i", diff, diff)
    return out


def tsne_kl_divergence(
    P: Any,
    embedding: Any,
    dof: float = 1.0,
    *,
    n_jobs: int = -1,
) -> float:
    r"""t-SNE's objective: the Kullback-Leibler divergence KL(P ‖ Q) of an embedding.

    .. math::

        \mathrm{KL}(P \| Q) = \sum_{i \ne j,\ p_{ij} > 0} p_{ij} \log \frac{p_{ij}}{q_{ij}},
        \qquad q_{ij} = \frac{w_{ij}}{\sum_{k \ne l} w_{kl}},
        \qquad w_{ij} = \left(1 + \frac{\|y_i - y_j\|^2}{\nu}\right)^{-\nu}

    with ``ν = dof`` (1: the Cauchy kernel of standard t-SNE), the heavy-tailed family of
    Kobak et al. (2019) used by :class:`unimap.TSNE` and openTSNE (van der Maaten's
    Student-t exponent ``-(ν + 1)/2`` agrees at ν = 1 only). The normalisation
    :math:`\sum_{k \ne l} w_{kl}` is computed exactly over all ``n(n-1)/2`` pairs, in
    ``O(n²·n_components)`` time and ``O(n)`` memory by a parallel kernel (measured:
    benchmarks/results/architecture_notes.md), so no Barnes-Hut or FFT approximation enters
    the value; beyond a few ten thousand points this exact sum becomes the bottleneck.

    Parameters
    ----------
    P : {sparse matrix, ndarray} of shape (n_samples, n_samples)
        Joint probabilities of the input space: non-negative, summing to 1, zero diagonal
        (t-SNE's symmetric ``(P + Pᵀ) / 2n``).
    embedding : array-like of shape (n_samples, n_components)
    dof : float > 0, default=1.0
        Degrees of freedom of the Student-t kernel.
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    float
        KL(P ‖ Q) in nats, ≥ 0.

    Examples
    --------
    >>> import numpy as np, unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import tsne_kl_divergence
    >>> X, _ = load_digits()
    >>> tsne = unimap.TSNE(random_state=0).fit(X[:500])
    >>> kl = tsne_kl_divergence(tsne.P_, tsne.embedding_)
    >>> bool(abs(kl - tsne.kl_divergence_) < 0.05 * kl)  # the fit's own estimate, nearly
    True
    >>> noise = np.random.default_rng(0).normal(size=tsne.embedding_.shape)
    >>> bool(tsne_kl_divergence(tsne.P_, noise) > kl)
    True
    """
    from unimap.lowdim.similarity_numba import student_t_log_weight
    from unimap.metrics.ranks_numba import student_t_pair_sums
    from unimap.optimizers.gradient_descent.gradient_numba import kl_term, kl_value

    embedding, P = _check_objective_inputs(P, "P", embedding)
    dof = check_float(dof, "dof", 0.0, low_inclusive=False)
    if np.any(P.data[P.row == P.col] != 0):
        raise ValueError("P must have a zero diagonal (a point is not its own neighbour)")
    total = float(P.data.sum())
    if not math.isclose(total, 1.0, rel_tol=1e-4):
        raise ValueError(f"P must sum to 1 (a joint distribution), got a sum of {total}")
    rows, cols, p = _edges(P)
    keep = p > 0
    rows, cols, p = rows[keep], cols[keep], p[keep]
    # The formulas' Python bodies on numpy arrays of edges (numba compiles them for scalars)
    log_w = student_t_log_weight.py_func(_edge_sq_distances(embedding, rows, cols), dof)
    log_z = math.log(2.0 * _sum_over_pairs(student_t_pair_sums, embedding, (dof,), n_jobs))
    return kl_value(np.sum(kl_term.py_func(p, log_w)), log_z, total)


def umap_cross_entropy(
    graph: Any,
    embedding: Any,
    a: float | None = None,
    b: float | None = None,
    min_dist: float = 0.1,
    spread: float = 1.0,
    *,
    n_jobs: int = -1,
) -> float:
    r"""UMAP's objective: the fuzzy-set cross-entropy between the graph and the embedding.

    .. math::

        CE = \sum_{i \ne j} -\left[ w_{ij} \log v_{ij}
            + (1 - w_{ij}) \log (1 - v_{ij}) \right],
        \qquad v_{ij} = \frac{1}{1 + a \|y_i - y_j\|^{2b}}

    summed over **all ordered pairs** ``i ≠ j``: the graph's edges carry their weight
    ``w_ij`` (attraction and repulsion), every other pair has ``w_ij = 0`` and contributes the
    repulsive term ``-log(1 - v_ij)`` alone. For a symmetric graph each unordered pair counts
    twice; the diagonal of ``graph`` is ignored. It is computed as
    ``Σ_{i≠j} -log(1 - v_ij) + Σ_edges w_ij log(a d_ij^{2b})`` (the two forms are equal),
    the first sum exactly over all pairs by a parallel kernel in ``O(n²·n_components)`` time
    and ``O(n)`` memory (measured: benchmarks/results/architecture_notes.md). ``a·d^{2b}`` is
    floored at 1e-12 so that coincident embedding points give a large finite term, not
    infinity.

    Parameters
    ----------
    graph : {sparse matrix, ndarray} of shape (n_samples, n_samples)
        Fuzzy membership strengths ``w_ij`` in [0, 1], e.g. from
        :func:`unimap.affinity.fuzzy.fuzzy_simplicial_set`.
    embedding : array-like of shape (n_samples, n_components)
    a, b : float > 0, optional
        Low-dimensional kernel parameters; both or neither. Default: fitted from
        ``min_dist`` and ``spread`` by :func:`unimap.lowdim.ab_fit.find_ab_params`.
    min_dist : float, default=0.1
    spread : float, default=1.0
    n_jobs : int, default=-1
        Threads (-1: all cores).

    Returns
    -------
    float
        The cross-entropy in nats, ≥ 0.

    Examples
    --------
    >>> import numpy as np, unimap
    >>> from unimap.datasets import load_digits
    >>> from unimap.metrics import umap_cross_entropy
    >>> X, _ = load_digits()
    >>> umap = unimap.UMAP(random_state=0).fit(X[:500])
    >>> fitted = umap_cross_entropy(umap.graph_, umap.embedding_, umap.a_, umap.b_)
    >>> noise = np.random.default_rng(0).normal(size=umap.embedding_.shape)
    >>> bool(fitted < umap_cross_entropy(umap.graph_, noise, umap.a_, umap.b_))
    True
    """
    from unimap.lowdim.ab_fit import check_ab_pair, find_ab_params
    from unimap.lowdim.similarity_numba import ab_term
    from unimap.metrics.ranks_numba import umap_repulsion_pair_sums

    embedding, graph = _check_objective_inputs(graph, "graph", embedding)
    check_ab_pair(a, b)
    if a is None:
        a, b = find_ab_params(spread, min_dist)
    else:
        a = check_float(a, "a", 0.0, low_inclusive=False)
        b = check_float(b, "b", 0.0, low_inclusive=False)
    rows, cols, weights = _edges(graph)
    if (weights > 1).any():
        raise ValueError("graph weights must lie in [0, 1] (fuzzy membership strengths)")
    u = np.maximum(ab_term.py_func(_edge_sq_distances(embedding, rows, cols), a, b),
                   _UMAP_U_FLOOR)
    repulsion = _sum_over_pairs(umap_repulsion_pair_sums, embedding, (a, b, _UMAP_U_FLOOR),
                                n_jobs)
    return float(2.0 * repulsion + np.sum(weights * np.log(u)))
