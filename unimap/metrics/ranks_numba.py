"""Numba kernels of :mod:`unimap.metrics`: rank counting and exact all-pairs sums.

None of these kernels uses ``fastmath``: rank counting compares distances for exact equality
and skips infinities, and the all-pairs sums should not depend on how the compiler reorders
them. Inputs are C-contiguous float64 (rank counting also takes float32 distance rows, to
compare the very values scikit-learn sorts).
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.lowdim.similarity_numba import ab_term, student_t_pair
from unimap.neighbors.topk_numba import insert_sorted
from unimap.runtime.distance_numba import sq_dist


@numba.njit(cache=True)
def _count_row(products, scale, row_term, col_terms, col_offset, skip, thresholds,
               neighbor_ids, less, equal, ties_before, own):
    """:func:`rank_counts` for one row."""
    n_cols = products.shape[0]
    k = thresholds.shape[0]
    largest = thresholds[k - 1]
    at_most = np.zeros(k + 1, dtype=np.int64)  # at_most[r]: columns with r thresholds <= d
    for c in range(n_cols):
        d = scale * products[c] + row_term + col_terms[c]
        if not d <= largest or c == skip:  # also skips NaN and +inf
            continue
        # A full linear count vectorises; it beats a branchy binary search even for k = 150.
        below = 0
        for m in range(k):
            below += thresholds[m] < d
        last = below
        while last < k and thresholds[last] == d:
            equal[last] += 1
            if col_offset + c < neighbor_ids[last]:
                ties_before[last] += 1
            last += 1
        at_most[last] += 1
    # d < thresholds[m]  <=>  at most m thresholds are <= d.
    cumulative = 0
    for m in range(k):
        cumulative += at_most[m]
        less[m] += cumulative
        local = neighbor_ids[m] - col_offset
        if 0 <= local < n_cols:
            own[m] = scale * products[local] + row_term + col_terms[local]


@numba.njit(parallel=True, cache=True)
def rank_counts(products, scale, row_terms, col_terms, col_offset, skip_ids, thresholds,
                neighbor_ids, less, equal, ties_before, own):
    """Accumulate, for each row, how many columns lie below or at each of its thresholds.

    The distance from query ``i`` to point ``col_offset + c`` is
    ``d = scale * products[i, c] + row_terms[i] + col_terms[c]`` (squared euclidean distances
    from dot products; ``scale=1`` and zero terms give ``products`` itself, bit for bit). The
    rows of ``thresholds`` (shape ``(m, k)``) are sorted ascending and ``neighbor_ids[i, m]``
    is the point whose distance ``thresholds[i, m]`` is. Column ``skip_ids[i]`` (the query
    itself) is ignored. For every row ``i`` and threshold ``m`` this adds to

    - ``less[i, m]``: the number of columns with ``d < thresholds[i, m]``;
    - ``equal[i, m]``: the number with ``d == thresholds[i, m]``;
    - ``ties_before[i, m]``: the number of those equal columns whose point id is smaller than
      ``neighbor_ids[i, m]`` (the rank a stable sort would give within a tie);

    and stores in ``own[i, m]`` the distance to ``neighbor_ids[i, m]`` when that column lies
    in this block. Calling it block after block of columns gives the counts over all columns.
    A column beyond the largest threshold costs one comparison, any other ``k`` (vectorised).
    Rows run in parallel, each in :func:`_count_row`.
    """
    for i in numba.prange(products.shape[0]):
        _count_row(products[i], scale, row_terms[i], col_terms, col_offset,
                   skip_ids[i] - col_offset, thresholds[i], neighbor_ids[i], less[i],
                   equal[i], ties_before[i], own[i])


@numba.njit(parallel=True, cache=True)
def knn_brute_force(data, query_ids, k, out_idx, out_dist):
    """Exact ``k`` nearest other rows of ``data`` for each query row ``data[query_ids[i]]``,
    by squared euclidean distance summed coordinate by coordinate in float64 (no
    cancellation-prone expansion).

    Row ``query_ids[i]`` itself is skipped; equal distances keep the smaller index first. Rows
    of ``out_dist`` hold squared distances, sorted ascending. The k-best lists are float64 and
    kept by :func:`unimap.neighbors.topk_numba.insert_sorted` (generic in the dtype; inlined, so
    compiled here without ``fastmath``).
    """
    n = data.shape[0]
    for i in numba.prange(query_ids.shape[0]):
        best_d = np.full(k, np.inf)
        best_i = np.full(k, -1, dtype=np.int64)
        worst = np.inf
        self_id = query_ids[i]
        for j in range(n):
            if j == self_id:
                continue
            acc = sq_dist(data, self_id, data, j, 0.0)
            if acc < worst:
                worst = insert_sorted(best_d, best_i, acc, j)
        out_idx[i] = best_i
        out_dist[i] = best_d


@numba.njit(cache=True)
def _student_t_row(embedding, i, start, dof):
    """Σ_{j ≥ start} w_ij, ``w = (1 + d_ij² / dof)^-dof``."""
    acc = 0.0
    for j in range(start, embedding.shape[0]):
        acc += student_t_pair(sq_dist(embedding, i, embedding, j, 0.0), dof)[0]
    return acc


@numba.njit(parallel=True, cache=True)
def student_t_pair_sums(embedding, dof, out):
    """Sum of Student-t weights ``(1 + d²/dof)^(-dof)`` over all pairs ``i < j``.

    Iteration ``t`` handles rows ``t`` and ``n - 1 - t`` (each against the rows after it),
    so every parallel iteration does the same ``n - 1`` pair evaluations; ``out[t]`` receives
    their sum (the caller adds ``out`` up, in a fixed order).
    """
    n = embedding.shape[0]
    for t in numba.prange(out.shape[0]):
        acc = _student_t_row(embedding, t, t + 1, dof)
        mirror = n - 1 - t
        if mirror != t:
            acc += _student_t_row(embedding, mirror, mirror + 1, dof)
        out[t] = acc


@numba.njit(cache=True)
def _umap_repulsion_row(embedding, i, start, a, b, u_floor):
    """Σ_{j ≥ start} -log(1 - v_ij) = log1p(u) - log(u), with u = max(a·d^(2b), u_floor)."""
    acc = 0.0
    for j in range(start, embedding.shape[0]):
        u = ab_term(sq_dist(embedding, i, embedding, j, 0.0), a, b)
        if u < u_floor:
            u = u_floor
        acc += np.log1p(u) - np.log(u)
    return acc


@numba.njit(parallel=True, cache=True)
def umap_repulsion_pair_sums(embedding, a, b, u_floor, out):
    """Sum of ``-log(1 - v_ij)`` over all pairs ``i < j``, ``v = 1 / (1 + a·d^(2b))``.

    Rows are paired as in :func:`student_t_pair_sums` to balance the parallel iterations.
    """
    n = embedding.shape[0]
    for t in numba.prange(out.shape[0]):
        acc = _umap_repulsion_row(embedding, t, t + 1, a, b, u_floor)
        mirror = n - 1 - t
        if mirror != t:
            acc += _umap_repulsion_row(embedding, mirror, mirror + 1, a, b, u_floor)
        out[t] = acc
