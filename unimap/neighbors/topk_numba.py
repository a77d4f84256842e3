"""Row-wise k-smallest selection and small distance kernels for the exact kNN backend."""

from __future__ import annotations

import numba
import numpy as np

from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.dynamic_numba import ROW_BLOCK, claim


@numba.njit(inline="always", cache=True)
def insert_sorted(best_d, best_i, d, j):
    """Insert candidate ``j`` at distance ``d`` into the sorted k-best lists (dropping the
    worst); return the new k-th best distance."""
    pos = best_d.shape[0] - 1
    while pos > 0 and best_d[pos - 1] > d:
        best_d[pos] = best_d[pos - 1]
        best_i[pos] = best_i[pos - 1]
        pos -= 1
    best_d[pos] = d
    best_i[pos] = j
    return best_d[best_d.shape[0] - 1]


@numba.njit(parallel=True, cache=True, fastmath=True)
def rows_k_smallest(dist, k, row_offset, exclude_self, out_idx, out_dist):
    """Write the ``k`` smallest entries of each row of ``dist`` (sorted) into the outputs.

    A bounded insertion sort per row: each row costs O(n) comparisons against the current
    k-th best plus O(k) per accepted candidate, which beats ``np.argpartition`` several-fold
    and runs rows in parallel. With ``exclude_self``, column ``row_offset + i`` of row ``i``
    is skipped (the caller puts the point itself in front).
    """
    n_rows, n_cols = dist.shape
    for i in numba.prange(n_rows):
        best_d = np.full(k, np.inf, dtype=np.float32)
        best_i = np.full(k, -1, dtype=np.int64)
        worst = np.float32(np.inf)
        self_col = row_offset + i if exclude_self else -1
        for j in range(n_cols):
            d = dist[i, j]
            if d < worst and j != self_col:
                worst = insert_sorted(best_d, best_i, d, j)
        for m in range(k):
            out_idx[i, m] = best_i[m]
            out_dist[i, m] = best_d[m]


@numba.njit(parallel=True, cache=True, fastmath=True)
def manhattan_block(A, B, out):
    """``out[i, j] = sum_d |A[i, d] - B[j, d]|`` for dense float32 blocks."""
    for i in numba.prange(A.shape[0]):
        for j in range(B.shape[0]):
            acc = np.float32(0.0)
            for d in range(A.shape[1]):
                acc += abs(A[i, d] - B[j, d])
            out[i, j] = acc


@numba.njit(parallel=True, cache=True, fastmath=True)
def rerank_candidates(data, queries, query_rows, candidates, id_map, k, out_idx, out_dist,
                      out_rows, cand_dist, n_workers):
    """Exact squared euclidean distances from queries to their candidate rows of ``data``;
    write the ``k`` nearest (sorted).

    ``candidates`` has shape (n_parts, n_queries, n_cand): the ids found in each of
    ``n_parts`` interleaved parts of the data. Row ``r`` belongs to query ``query_rows[r]``,
    whose results go to row ``out_rows[r]`` of the outputs; candidate ``c`` of part ``p`` is
    row ``id_map[c * n_parts + p]`` of ``data`` (its *slot* is ``c * n_parts + p``), and
    ``c < 0`` (missing) is skipped. The indirections let the caller pass the raw per-part
    search results and process queries in any order without copying them. A non-empty
    ``cand_dist``, shape (n_queries, n_parts * n_cand), receives every candidate's distance
    in row ``r`` (``inf`` where missing), for :func:`add_reverse_candidates`. ``n_workers``
    threads claim blocks of rows (:mod:`unimap.runtime.dynamic_numba`).
    """
    n_parts, n_queries, n_cand = candidates.shape
    keep = cand_dist.shape[0] > 0
    if keep:
        cand_dist[:] = np.inf
    n_blocks = (n_queries + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, np.int64)
    for _worker in numba.prange(n_workers):
        best_d = np.empty(k, dtype=np.float32)
        best_i = np.empty(k, dtype=np.int64)
        block = claim(next_block)
        while block < n_blocks:
            for r in range(block * ROW_BLOCK, min(n_queries, (block + 1) * ROW_BLOCK)):
                q = query_rows[r]
                best_d[:] = np.inf
                best_i[:] = -1
                worst = np.float32(np.inf)
                for p in range(n_parts):
                    for c in range(n_cand):
                        local = candidates[p, r, c]
                        if local < 0:
                            continue
                        j = id_map[local * n_parts + p]
                        acc = sq_dist(queries, q, data, j, np.float32(0.0))
                        if keep:
                            cand_dist[r, p * n_cand + c] = acc
                        if acc < worst:
                            worst = insert_sorted(best_d, best_i, acc, j)
                row = out_rows[r]
                for m in range(k):
                    out_idx[row, m] = best_i[m]
                    out_dist[row, m] = best_d[m]
            block = claim(next_block)


@numba.njit(parallel=True, cache=True)
def add_reverse_candidates(candidates, id_map, cand_dist, out_idx, out_dist):
    """Offer every pair found by one point's search to the other point's list too.

    For a self-join, the search of ``i`` finding ``j`` at exact distance ``d`` also tells
    ``j`` that ``i`` lies at ``d``: an approximate search misses some true neighbours of
    ``j`` that the searches of those neighbours found. No distance is recomputed.

    The rows are slots (see :func:`rerank_candidates`): row ``r`` of ``out_idx``/``out_dist``
    (sorted results, updated in place) and of ``cand_dist`` (per-candidate distances) belong
    to point ``id_map[r]``, and the entries are point ids. A candidate's slot is then its
    row, and as slots follow a space-filling curve, the rows touched lie close to the row
    read. Few of the candidates closer than their target's k-th neighbour are new to it: the
    binary search in :func:`_is_new` keeps the rest cheap (measured:
    benchmarks/results/library_notes.md, "unimap/neighbors/topk_numba.py").

    Deterministic for any thread count: the rows find their offers in parallel against the
    lists as they came from the searches, then one thread inserts the offers in row order
    (ties keep the earlier entry first).
    """
    n_parts, n_rows, n_cand = candidates.shape
    width = n_parts * n_cand
    offered = np.empty((n_rows, width), np.int32)  # target row per candidate, -1: no offer
    for r in numba.prange(n_rows):
        for m in range(width):
            target = _offer_target(candidates, cand_dist, out_dist, r, m)
            if target >= 0 and not _is_new(out_idx, out_dist, target, id_map[r],
                                           cand_dist[r, m]):
                target = -1
            offered[r, m] = np.int32(target)
    # Few offers survive (measured: see the docstring): insert them on one thread, in row
    # order.
    for r in range(n_rows):
        for m in range(width):
            target = offered[r, m]
            if target >= 0:
                offer_pair(out_idx, out_dist, target, id_map[r], cand_dist[r, m])


@numba.njit(inline="always", cache=True)
def offer_pair(idx, dist, row, i, d):
    """Row ``row`` of the sorted lists ``idx``/``dist`` takes point ``i`` at distance ``d``
    if that is nearer than its k-th entry and ``i`` is not listed yet (ties keep the earlier
    entry first); returns whether it did. The step of every reverse-pair offer: the search
    of ``i`` found the row's point at ``d``, so the row learns of ``i``."""
    if d < dist[row, dist.shape[1] - 1] and not _listed(idx, row, i):
        insert_sorted(dist[row], idx[row], d, i)
        return True
    return False


@numba.njit(inline="always", cache=True)
def _offer_target(candidates, cand_dist, out_dist, r, m):
    """The row that candidate ``m`` of row ``r`` is offered to, or -1: missing, the row
    itself, or not closer than that row's k-th neighbour."""
    n_parts, _, n_cand = candidates.shape
    p = m // n_cand
    local = candidates[p, r, m - p * n_cand]
    if local < 0:
        return -1
    target = local * n_parts + p
    if target == r or not cand_dist[r, m] < out_dist[target, out_dist.shape[1] - 1]:
        return -1
    return target


@numba.njit(inline="always", cache=True)
def _is_new(out_idx, out_dist, row, i, d):
    """Whether point ``i`` at distance ``d`` (below the row's k-th) is not yet in ``row``.

    The row's own search computed the same distance bit for bit if it found ``i``, so a
    listed ``i`` sits among the entries equal to ``d``: a binary search finds them. (The
    insertion scans the whole row again, so an unequal rounding could not list a point
    twice.)"""
    k = out_dist.shape[1]
    lo = 0
    hi = k - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if out_dist[row, mid] < d:
            lo = mid + 1
        else:
            hi = mid
    while lo < k and out_dist[row, lo] == d:
        if out_idx[row, lo] == i:
            return False
        lo += 1
    return True


@numba.njit(inline="always", cache=True)
def _listed(out_idx, row, i):
    for m in range(out_idx.shape[1]):  # noqa: SIM110 (numba compiles no generator in any())
        if out_idx[row, m] == i:
            return True
    return False


@numba.njit(inline="always", cache=True)
def _insert_keyed(best_d, best_i, d, j):
    """Insert ``(d, j)`` into the k-best lists ordered by distance, then index (dropping the
    last); the order of equal distances is then the same whatever order rows come in."""
    k = best_d.shape[0]
    if d > best_d[k - 1] or (d == best_d[k - 1] and j >= best_i[k - 1] >= 0):
        return
    pos = k - 1
    while pos > 0 and (best_d[pos - 1] > d or (best_d[pos - 1] == d and best_i[pos - 1] > j)):
        best_d[pos] = best_d[pos - 1]
        best_i[pos] = best_i[pos - 1]
        pos -= 1
    best_d[pos] = d
    best_i[pos] = j


@numba.njit(parallel=True, cache=True)
def exact_rerank_rows(data, queries, cand_idx, cand_approx, bound, row_offset, exclude_self,
                      out_idx, out_dist):
    """The ``k`` nearest rows of ``data`` to each query by exact squared distances (summed in
    column order, float32), given candidates ranked by a faster approximation.

    ``cand_idx``/``cand_approx`` (m, kc): each query's ``kc`` nearest rows by the approximate
    distances (sorted), which may err by ``bound[i]`` at most. Every row outside the
    candidates is then at least ``cand_approx[i, -1] - bound[i]`` away, so if the k-th exact
    distance is below that, the exact k nearest are among the candidates; otherwise the row
    is scanned in full. The output is so the exact top k (ties by index) whatever the
    approximation's last bits, which depend on BLAS's threads and the block of queries.
    """
    m, kc = cand_idx.shape
    k = out_idx.shape[1]
    n = data.shape[0]
    for i in numba.prange(m):
        best_d = np.full(k, np.inf, dtype=np.float32)
        best_i = np.full(k, -1, dtype=np.int64)
        self_col = row_offset + i if exclude_self else -1
        for c in range(kc):
            j = cand_idx[i, c]
            if j >= 0:
                _insert_keyed(best_d, best_i, sq_dist(queries, i, data, j, np.float32(0.0)), j)
        available = n - (1 if exclude_self else 0)
        if kc < available and not best_d[k - 1] < cand_approx[i, kc - 1] - bound[i]:
            best_d[:] = np.inf
            best_i[:] = -1
            for j in range(n):
                if j != self_col:
                    _insert_keyed(best_d, best_i, sq_dist(queries, i, data, j, np.float32(0.0)), j)
        for t in range(k):
            out_idx[i, t] = best_i[t]
            out_dist[i, t] = best_d[t]
