"""The formulas written once and shared by several kernels give each caller the bits of the
form it had written out."""

from __future__ import annotations

import numba
import numpy as np

from unimap.neighbors.cells_numba import wall_distances
from unimap.neighbors.kmeans import centroid_sq_distances
from unimap.neighbors.sharded import within_reach
from unimap.runtime.distance_numba import sq_dist


@numba.njit
def _pairs(A, B, acc):
    out = np.empty((A.shape[0], B.shape[0]), dtype=np.float64)
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            out[i, j] = sq_dist(A, i, B, j, acc)
    return out


def test_sq_dist_sums_in_order_in_the_accumulators_type():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 33)).astype(np.float32)
    B = rng.normal(size=(5, 33)).astype(np.float32)
    in_f32 = np.empty((7, 5), np.float32)
    in_f64 = np.empty((7, 5))
    for i in range(7):
        for j in range(5):
            s32, s64 = np.float32(0.0), 0.0
            for c in range(33):
                diff = A[i, c] - B[j, c]
                s32 = np.float32(s32 + diff * diff)
                s64 += float(diff * diff)
            in_f32[i, j], in_f64[i, j] = s32, s64
    assert np.array_equal(_pairs(A, B, np.float32(0.0)), in_f32)
    assert np.array_equal(_pairs(A, B, 0.0), in_f64)


def test_wall_distances_and_reach_are_the_numpy_forms():
    """The Dask graph's walls, once numpy's: ``(|x − c_s|² − |x − c_h|²) / (2 |c_s − c_h|)``,
    infinite for the home cell and a duplicate of its centroid, and beyond the reach."""
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(2000, 20))
    cents = rng.normal(size=(7, 20))
    cents[4] = cents[2]
    sq = centroid_sq_distances(rows, cents)
    home = np.argmin(sq, axis=1).astype(np.int32)
    kth = np.sqrt(sq.min(axis=1) * rng.uniform(1.0, 6.0, 2000))[:, None]
    gaps = np.sqrt(centroid_sq_distances(cents, cents))
    own = np.take_along_axis(sq, home[:, None].astype(np.int64), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = (sq - own) / (2.0 * gaps[home])
    expected[gaps[home] == 0.0] = np.inf
    expected[expected > kth * (1.0 + 1e-6)] = np.inf
    walls = np.empty_like(sq)
    wall_distances(sq, home, gaps, walls)
    walls[~within_reach(walls, kth)] = np.inf
    assert np.array_equal(walls, expected)
    assert 0.1 < np.isfinite(walls).mean() < 0.9
