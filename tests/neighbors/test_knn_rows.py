"""The kNN row kernels (unimap.neighbors.rows_numba) against the numpy forms they replaced."""

import numpy as np
import pytest

from unimap.neighbors.geometry import with_self_first
from unimap.neighbors.rows_numba import merge_into_rows, offer_reverse_pairs, self_first_rows


def _numpy_merge(idx_a, dist_a, idx_b, dist_b, k):
    """The replaced form: a stable sort of the two lists side by side."""
    idx = np.concatenate([idx_a, idx_b], axis=1)
    dist = np.concatenate([dist_a, dist_b], axis=1)
    order = np.argsort(dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(dist, order, axis=1)


def _numpy_self_first(idx, dist, k, self_ids):
    """The replaced form: a stable sort of each row on "is self"."""
    out_idx = np.empty((idx.shape[0], k), dtype=np.int32)
    out_dist = np.zeros((idx.shape[0], k), dtype=np.float32)
    out_idx[:, 0] = self_ids
    others = idx != self_ids[:, None]
    order = np.argsort(~others, axis=1, kind="stable")[:, : k - 1]
    out_idx[:, 1:] = np.take_along_axis(idx, order, axis=1)
    out_dist[:, 1:] = np.take_along_axis(dist, order, axis=1)
    return out_idx, out_dist


def _sorted_lists(rng, m, k, ids_from, ties):
    """Rows of k ascending distances (rounded to force ties) with -1 / inf padding."""
    dist = np.sort(rng.random((m, k)).astype(np.float32), axis=1)
    if ties:
        dist = np.round(dist * 4).astype(np.float32) / 4
    idx = ids_from + rng.permutation(m * k)[: m * k].reshape(m, k).astype(np.int64)
    pad = rng.random(m) < 0.2  # a cell smaller than k: the tail is -1 / inf
    idx[pad, k // 2:] = -1
    dist[pad, k // 2:] = np.inf
    return idx, dist


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("k_other", [15, 20])
def test_merge_into_rows_matches_a_stable_sort(ties, k_other):
    rng = np.random.default_rng(0)
    n, k = 300, 15
    idx, dist = _sorted_lists(rng, n, k, 0, ties)
    rows = np.sort(rng.choice(n, 120, replace=False))
    other_idx, other_dist = _sorted_lists(rng, rows.size, k_other, 10_000, ties)
    want_idx, want_dist = idx.copy(), dist.copy()
    want_idx[rows], want_dist[rows] = _numpy_merge(idx[rows], dist[rows], other_idx[:, :k],
                                                   other_dist[:, :k], k)
    if k_other > k:  # the k nearest never come from past the k-th of the other list
        assert np.all(other_dist[:, k - 1:k] <= other_dist[:, k:])
    merge_into_rows(idx, dist, rows, other_idx, other_dist)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)


def test_merge_into_rows_leaves_other_rows_alone():
    rng = np.random.default_rng(1)
    idx, dist = _sorted_lists(rng, 50, 5, 0, False)
    before_idx, before_dist = idx.copy(), dist.copy()
    rows = np.array([3, 17], dtype=np.int64)
    merge_into_rows(idx, dist, rows, np.full((2, 5), -1, np.int64),
                    np.full((2, 5), np.inf, np.float32))
    np.testing.assert_array_equal(idx, before_idx)  # nothing nearer came from the other side
    merge_into_rows(idx, dist, rows, np.zeros((2, 5), np.int64) + 99,
                    np.zeros((2, 5), np.float32))
    keep = np.setdiff1d(np.arange(50), rows)
    np.testing.assert_array_equal(idx[keep], before_idx[keep])
    np.testing.assert_array_equal(dist[keep], before_dist[keep])
    assert np.all(idx[rows] == 99)


@pytest.mark.parametrize("case", ["self_listed", "self_missing", "self_twice", "offset_ids"])
def test_self_first_matches_a_stable_sort(case):
    rng = np.random.default_rng(2)
    n, k = 200, 8
    self_ids = np.arange(n, dtype=np.int64) + (1000 if case == "offset_ids" else 0)
    idx = rng.integers(0, n + 1000, size=(n, k)).astype(np.int64)
    idx[idx == self_ids[:, None]] = -1
    dist = np.sort(rng.random((n, k)).astype(np.float32), axis=1)
    if case in ("self_listed", "offset_ids"):
        idx[np.arange(n), rng.integers(0, k, n)] = self_ids
    elif case == "self_twice":  # fewer than k - 1 others: the row's own entries fill up
        idx[:, 2] = self_ids
        idx[:, 5] = self_ids
    got = self_first_rows(idx, dist, k, self_ids)
    want = _numpy_self_first(idx, dist, k, self_ids)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0].dtype == np.int32 and got[1].dtype == np.float32


def test_with_self_first_refuses_too_few_columns():
    idx = np.zeros((4, 3), np.int64)
    with pytest.raises(ValueError, match="3 neighbours per row, 4 needed"):
        with_self_first(idx, idx.astype(np.float32), 5)


def _plain_reverse_pairs(idx, dist, rows, found_idx, found_dist):
    """The reverse pairs by Python lists: each pair in order, kept if nearer than the found
    point's k-th and not listed there, placed after the entries of equal distance."""
    k = idx.shape[1]
    lists = [list(zip(dist[j].tolist(), idx[j].tolist(), strict=True)) for j in range(len(idx))]
    for r, i in enumerate(rows.tolist()):
        for j, d in zip(found_idx[r].tolist(), found_dist[r].tolist(), strict=True):
            row = lists[j] if j >= 0 else None
            if row is not None and d < row[-1][0] and i not in [e[1] for e in row]:
                at = next(p for p, e in enumerate(row + [(np.inf, -1)]) if e[0] > d)
                lists[j] = (row[:at] + [(d, i)] + row[at:])[:k]
    return (np.array([[e[1] for e in row] for row in lists], np.int64),
            np.array([[e[0] for e in row] for row in lists], np.float32))


@pytest.mark.parametrize("ties", [False, True])
def test_offer_reverse_pairs_matches_a_plain_loop(ties):
    rng = np.random.default_rng(3)
    n, k = 400, 10
    idx, dist = _sorted_lists(rng, n, k, 0, ties)
    idx = idx % n  # ids of points of the same lists, some already listed in the found rows
    rows = np.sort(rng.choice(n, 150, replace=False)).astype(np.int64)
    found_idx, found_dist = _sorted_lists(rng, rows.size, k, 0, ties)
    found_idx = np.where(found_idx >= 0, found_idx % n, -1)
    found_dist = found_dist * np.float32(0.8)  # some nearer than the rows' k-th
    want = _plain_reverse_pairs(idx, dist, rows, found_idx, found_dist)
    added = offer_reverse_pairs(idx, dist, rows, found_idx, found_dist)
    np.testing.assert_array_equal(idx, want[0])
    np.testing.assert_array_equal(dist, want[1])
    assert added > 0
    assert (dist[:, 1:] >= dist[:, :-1]).all()  # inf padding: no diff
