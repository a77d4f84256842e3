"""Per-point bandwidth calibration of UMAP's fuzzy simplicial set (numba).

Serial on purpose: the kernels take a fraction of a second, and their parallel versions would
cost more to compile on a first run than they save
(measured: benchmarks/results/library_notes.md, "unimap/affinity/fuzzy_numba.py").
"""

from __future__ import annotations

import math

import numba
import numpy as np

SMOOTH_K_TOLERANCE = 1e-5
MIN_K_DIST_SCALE = 1e-3
N_NEWTON_STEPS = 64


@numba.njit(inline="always", cache=True)
def _nth_non_zero(row, m):
    """The m-th (0-based) positive entry of ``row``, in row order."""
    seen = 0
    for j in range(row.shape[0]):
        if row[j] > 0.0:
            if seen == m:
                return row[j]
            seen += 1
    return 0.0


@numba.njit(inline="always", cache=True)
def _local_rho(row, local_connectivity):
    """ρ of one row, without the per-row array of its positive entries."""
    count = 0
    largest = 0.0
    for j in range(row.shape[0]):
        if row[j] > 0.0:
            count += 1
            largest = max(largest, row[j])
    if count == 0:
        return 0.0
    if count < local_connectivity:
        return largest
    index = int(math.floor(local_connectivity))
    interpolation = local_connectivity - index
    if index == 0:
        return interpolation * _nth_non_zero(row, 0)
    rho = _nth_non_zero(row, index - 1)
    if interpolation > SMOOTH_K_TOLERANCE:
        rho += interpolation * (_nth_non_zero(row, index) - rho)
    return rho


@numba.njit(cache=True)
def smooth_knn_dist(distances, n_target, local_connectivity, bandwidth, rhos, sigmas):
    """Find ρ_i and σ_i for every row of a kNN distance matrix (column 0 is the point itself).

    ρ_i is the distance to the ``local_connectivity``-th nearest non-zero neighbour
    (interpolated for fractional values); σ_i is found so that
    ``Σ_{j≥1} exp(-max(d_ij - ρ_i, 0) / σ_i) = log2(n_target) · bandwidth`` to within
    ``SMOOTH_K_TOLERANCE``, by Newton's method on β = 1/σ: the sum is convex and decreasing in
    β, so the iterates approach the root monotonically after at most one step past it
    (fewer steps a row than umap-learn's bisection, in half its time; measured:
    benchmarks/results/library_notes.md, "unimap/affinity/fuzzy_numba.py").
    σ_i is floored at ``MIN_K_DIST_SCALE`` times the mean distance, as in umap-learn, so that
    rows of duplicates do not produce a zero bandwidth. Row i is :func:`smooth_row`, which
    the GPU's kernel (:mod:`unimap.affinity.calibration_cuda`) runs too.
    """
    target = np.log2(n_target) * bandwidth
    mean_all = np.mean(distances)
    for i in range(distances.shape[0]):
        smooth_row(distances[i], local_connectivity, target, mean_all, rhos, sigmas, i)


@numba.njit(cache=True)
def array_mean(distances):
    """``np.mean`` as :func:`smooth_knn_dist` takes it (the GPU path calls this on the host)."""
    return np.mean(distances)


@numba.njit(inline="always", cache=True)
def _row_mean(row):
    """``np.mean(row)`` of a float32 row as numba computes it (a float32 sum in row order,
    divided in float64), written out so that CUDA kernels can run it."""
    total = row[0] - row[0]
    for j in range(row.shape[0]):
        total += row[j]
    return np.float32(total / row.shape[0])


@numba.njit(inline="always", cache=True)
def smooth_row(row, local_connectivity, target, mean_all, rhos, sigmas, i):
    """ρ_i and σ_i of one row into ``rhos[i]``, ``sigmas[i]`` (see :func:`smooth_knn_dist`;
    ``target`` is ``log2(n_target)·bandwidth``, ``mean_all`` the mean of all distances).
    ``math``'s functions, not NumPy's: the same on the CPU, and CUDA's ufunc table has no
    ``np.exp``."""
    k = row.shape[0]
    rho = _local_rho(row, local_connectivity)
    beta = 1.0
    sigma = 1.0
    for _ in range(N_NEWTON_STEPS):
        psum = 0.0
        slope = 0.0  # −d psum / dβ
        beyond = False  # a distance past ρ: the sum then grows without bound as β → 0
        for j in range(1, k):
            d = row[j] - rho
            if d > 0:
                beyond = True
                e = math.exp(-(d * beta))
                psum += e
                slope += e * d
            else:
                psum += 1.0
        if math.fabs(psum - target) < SMOOTH_K_TOLERANCE:
            sigma = 1.0 / beta
            break
        if slope <= 0.0:
            if beyond and psum < target:
                # exp underflowed (distances past ρ of ~750/β or more: raw pixel or count
                # data, ρ = 0 when placing new points): a smaller β brings them back
                beta *= 0.5
                sigma = 1.0 / beta
                continue
            # the sum no longer depends on σ (all distances at most ρ): σ → 0 if it is above
            # the target (floored below), else σ → ∞, as bisection
            sigma = 0.0 if psum > target else 2.0**N_NEWTON_STEPS
            break
        step = (psum - target) / slope
        beta = beta + step if beta + step > 0.0 else 0.5 * beta
        sigma = 1.0 / beta
    floor = MIN_K_DIST_SCALE * (_row_mean(row) if rho > 0.0 else mean_all)
    rhos[i] = rho
    sigmas[i] = max(sigma, floor)


@numba.njit(cache=True, fastmath=True)
def membership_strengths(indices, distances, rhos, sigmas, skip_self, weights):
    """``w_ij = exp(-max(d_ij - ρ_i, 0) / σ_i)``; the point itself gets 0 when ``skip_self``."""
    for i in range(distances.shape[0]):
        membership_row(indices, distances, rhos, sigmas, skip_self, weights, i)


@numba.njit(inline="always", cache=True, fastmath=True)
def membership_row(indices, distances, rhos, sigmas, skip_self, weights, i):
    """Row i of :func:`membership_strengths` (the GPU's kernel runs it too)."""
    for j in range(distances.shape[1]):
        if skip_self and indices[i, j] == i:
            weights[i, j] = 0.0
        elif distances[i, j] - rhos[i] <= 0.0 or sigmas[i] == 0.0:
            weights[i, j] = 1.0
        else:
            weights[i, j] = math.exp(-((distances[i, j] - rhos[i]) / sigmas[i]))
