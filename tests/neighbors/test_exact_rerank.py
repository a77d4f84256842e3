"""The exact kNN's re-ranking: BLAS proposes, exact distances decide, and a bound on the
product's error proves the answer or sends the row to a full scan."""

from __future__ import annotations

import numpy as np

from unimap.neighbors.exact import exact_query
from unimap.neighbors.topk_numba import exact_rerank_rows


def _reference(data: np.ndarray, queries: np.ndarray, k: int, offset: int | None):
    """Exact top k by the same float32 sums (column order), ties by index."""
    d = np.zeros((queries.shape[0], data.shape[0]), dtype=np.float32)
    for c in range(data.shape[1]):
        diff = queries[:, None, c] - data[None, :, c]
        d += diff * diff
    if offset is not None:
        d[np.arange(queries.shape[0]), offset + np.arange(queries.shape[0])] = np.inf
    order = np.lexsort((np.broadcast_to(np.arange(data.shape[0]), d.shape), d), axis=1)[:, :k]
    return order, np.take_along_axis(d, order, axis=1)


def test_wrong_candidates_fall_back_to_a_full_scan():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(300, 12)).astype(np.float32)
    queries = np.ascontiguousarray(data[:40])
    k, kc = 5, 9
    # candidates far from the truth, with approximate distances that look plausible: the
    # guard must see that the k-th exact distance is not below the candidates' last by the bound
    cand = np.tile(np.arange(100, 100 + kc, dtype=np.int64), (40, 1))
    cand_d = np.tile(np.linspace(0.1, 0.2, kc, dtype=np.float32), (40, 1))
    bound = np.full(40, 1e-3, dtype=np.float32)
    idx = np.empty((40, k), np.int64)
    dist = np.empty((40, k), np.float32)
    exact_rerank_rows(data, queries, cand, cand_d, bound, 0, True, idx, dist)
    ref_idx, ref_d = _reference(data, queries, k, 0)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_d)


def test_exact_query_is_the_exact_answer_with_ties_by_index():
    rng = np.random.default_rng(1)
    data = rng.integers(0, 3, size=(500, 6)).astype(np.float32)  # many exact ties
    idx, dist = exact_query(data, data, 7, "euclidean", 0)
    ref_idx, ref_d = _reference(data, data, 7, 0)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(dist, np.sqrt(ref_d))
    # a batch of queries gives the rows of the whole
    part_idx, part_d = exact_query(data, data[100:103], 7, "euclidean", None)
    whole_idx, whole_d = exact_query(data, data, 7, "euclidean", None)
    np.testing.assert_array_equal(part_idx, whole_idx[100:103])
    np.testing.assert_array_equal(part_d, whole_d[100:103])
