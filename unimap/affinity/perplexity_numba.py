"""Per-point bandwidth calibration of t-SNE's conditional probabilities (numba)."""

from __future__ import annotations

import math

import numba
import numpy as np

ENTROPY_TOLERANCE = 1e-5
N_BISECTION_STEPS = 200


@numba.njit(parallel=True, cache=True)
def conditional_probabilities(sq_distances, perplexity, probabilities, betas):
    """``p_{j|i} = exp(-β_i d_ij²) / Σ_k exp(-β_i d_ik²)`` with β_i = 1/(2σ_i²) found by
    bisection so that the entropy of row i is ``log(perplexity)`` (nats).

    ``sq_distances`` (n, k) are squared distances to the k neighbours (the point itself
    excluded). Distances are shifted by the row minimum before exponentiating: the
    probabilities are unchanged and nothing underflows to an all-zero row, so duplicates and
    far-away points stay well defined.
    """
    target = np.log(perplexity)
    for i in numba.prange(sq_distances.shape[0]):
        perplexity_row(sq_distances[i], target, probabilities, betas, i)


@numba.njit(inline="always", cache=True)
def perplexity_row(row, target, probabilities, betas, i):
    """Row i of :func:`conditional_probabilities` (the GPU's kernel runs it too); ``target``
    is ``log(perplexity)``. ``math``'s functions: CUDA's ufunc table has no ``np.exp``."""
    k = row.shape[0]
    d_min = row[0]
    for j in range(1, k):
        d_min = min(d_min, row[j])
    spread = 0.0
    for j in range(k):
        spread += row[j] - d_min
    # Start at the scale of the data so the bisection needs few halvings or doublings.
    beta = k / spread if spread > 0.0 else 1.0
    lo, hi = 0.0, math.inf
    for _ in range(N_BISECTION_STEPS):
        total, weighted = 0.0, 0.0
        for j in range(k):
            shifted = row[j] - d_min
            p = math.exp(-beta * shifted)
            total += p
            weighted += shifted * p
        entropy = math.log(total) + beta * weighted / total
        if math.fabs(entropy - target) < ENTROPY_TOLERANCE:
            break
        if entropy > target:  # too flat: sharpen
            lo = beta
            beta = beta * 2.0 if hi == math.inf else (lo + hi) / 2.0
        else:
            hi = beta
            beta = (lo + hi) / 2.0
    total = 0.0
    for j in range(k):
        p = math.exp(-beta * (row[j] - d_min))
        probabilities[i, j] = p
        total += p
    for j in range(k):
        probabilities[i, j] /= total
    betas[i] = beta
