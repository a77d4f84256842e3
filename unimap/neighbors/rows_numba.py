"""Row operations on kNN result lists: ``(m, k)`` arrays of ids and distances, each row sorted
by ascending distance.

The merge and the self-first order replace numpy's row-wise stable ``argsort`` +
``take_along_axis``, which sort what is already sorted and write two temporaries per call, a
part of a large kNN graph's time worth saving (measured: ``benchmarks/results/scale_gdr.md``).
The results are the same, entry for entry, as the numpy forms they replace
(``tests/neighbors/test_knn_rows.py`` keeps those as the oracle, and a plain loop for the reverse
pairs).
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.neighbors.topk_numba import offer_pair


@numba.njit(parallel=True, cache=True)
def merge_into_rows(idx, dist, rows, other_idx, other_dist):
    """Row ``rows[r]`` of ``idx``/``dist`` becomes the ``k`` nearest of itself and row ``r``
    of ``other_idx``/``other_dist``, in place.

    Both lists must be sorted ascending. Ties keep the entry of ``idx`` first, then each
    list's own order: the order of a stable sort of the two lists side by side.
    """
    k = idx.shape[1]
    k_other = other_idx.shape[1]
    for r in numba.prange(rows.size):
        i = rows[r]
        own_idx = idx[i].copy()
        own_dist = dist[i].copy()
        a = 0
        b = 0
        for j in range(k):
            if b >= k_other or (a < k and own_dist[a] <= other_dist[r, b]):
                idx[i, j] = own_idx[a]
                dist[i, j] = own_dist[a]
                a += 1
            else:
                idx[i, j] = other_idx[r, b]
                dist[i, j] = other_dist[r, b]
                b += 1


@numba.njit(parallel=True, cache=True)
def self_first(idx, dist, self_ids, out_idx, out_dist):
    """Each row's own id (``self_ids``) at distance 0 in column 0 of ``out_idx``/``out_dist``,
    then the row's other entries in their order, as many as fit.

    A row with too few other entries (its own id listed more than once) is filled up with
    its own entries, in their order: what a stable sort of the rows on "is self" gives.
    """
    k = out_idx.shape[1]
    for i in numba.prange(idx.shape[0]):
        own = self_ids[i]
        out_idx[i, 0] = own
        out_dist[i, 0] = 0.0
        j = 1
        for c in range(idx.shape[1]):
            if j < k and idx[i, c] != own:
                out_idx[i, j] = idx[i, c]
                out_dist[i, j] = dist[i, c]
                j += 1
        for c in range(idx.shape[1]):
            if j < k and idx[i, c] == own:
                out_idx[i, j] = idx[i, c]
                out_dist[i, j] = dist[i, c]
                j += 1


def self_first_rows(idx: np.ndarray, dist: np.ndarray, k: int,
                    self_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`self_first` into new ``(n, k)`` int32 / float32 arrays, its inputs made
    contiguous int64 / float32 (one compiled specialisation for every backend)."""
    n = idx.shape[0]
    out_idx = np.empty((n, k), dtype=np.int32)
    out_dist = np.empty((n, k), dtype=np.float32)
    self_first(np.ascontiguousarray(idx, dtype=np.int64),
               np.ascontiguousarray(dist, dtype=np.float32),
               np.ascontiguousarray(self_ids, dtype=np.int64), out_idx, out_dist)
    return out_idx, out_dist


@numba.njit(cache=True)
def offer_reverse_pairs(idx, dist, rows, found_idx, found_dist):
    """Offer each pair a search found the other way round: row ``rows[r]`` found point
    ``found_idx[r, m]`` at ``found_dist[r, m]``, so that point's row (``idx``/``dist``,
    updated in place) also takes ``rows[r]`` if nearer than its k-th entry and not listed.

    For a self-join whose searches covered different parts of the data (the sharded graph's
    probes of another cell), the pairs one side found are neighbours the other side's
    search may have missed. One thread, in ``rows`` order (ties keep the earlier entry
    first), so the result is the same for any thread count. Returns the pairs added.
    """
    added = 0
    for r in range(rows.size):
        i = rows[r]
        for m in range(found_idx.shape[1]):
            j = found_idx[r, m]
            if j >= 0 and offer_pair(idx, dist, j, i, found_dist[r, m]):
                added += 1
    return added
