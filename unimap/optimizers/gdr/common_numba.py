"""What GDR's two modes share (numba): the samples (per-row negatives, the epoch's shared
samples) and the attraction loops.

The layout of the samples and why their estimates are unbiased: :mod:`unimap.optimizers.gdr`.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from unimap.lowdim.similarity_numba import ab_kernel, gdr_attraction_coeff
from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.rng_numba import bounded, hash_combine


class CSR(NamedTuple):
    """P's CSR arrays as the epoch kernels take them: int64 row pointers, int32 columns,
    float32 values. The kernels read them by name, so a group passed in another's place
    does not compile."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


class TransposedCSR(NamedTuple):
    """Pᵀ's CSR arrays (symmetric attraction; empty arrays skip that pass), named apart from
    :class:`CSR` so that P and Pᵀ cannot be swapped."""

    t_indptr: np.ndarray
    t_indices: np.ndarray
    t_data: np.ndarray


class UnnormalizedForces(NamedTuple):
    """The parameters of GDR's unnormalized forces (:mod:`unimap.optimizers.gdr`):
    the row attraction's factor, negative samples per edge (float64), one sample's weight,
    the kernel's a, b and the repulsion's ε (float32)."""

    attr_scale: np.float32
    n_negatives: float
    rep_weight: np.float32
    a: np.float32
    b: np.float32
    eps: np.float32


class SampledKernel(NamedTuple):
    """The parameters of GDR's normalized forces (:mod:`unimap.optimizers.gdr`): the
    row attraction's factor, negative samples per edge (float64) and the kernel's a, b
    (float32)."""

    attr_scale: np.float32
    n_negatives: float
    a: np.float32
    b: np.float32


class HeavyBall(NamedTuple):
    """The momentum step's per-coordinate clip of the force and its momentum (float32)."""

    clip: np.float32
    momentum: np.float32


@numba.njit(inline="always", cache=True)
def n_samples_of_row(deg, n_negatives):
    """``S_i = max(1, round(m·deg_i))``."""
    s = np.int64(n_negatives * deg + 0.5)
    return s if s > 0 else np.int64(1)


@numba.njit(inline="always", cache=True)
def sample_layout(indptr, i, n_negatives):
    """``(n_full, rest, base, span)``: row i's ``S_i`` samples are ``n_full`` passes over the
    edge keys ``[base, base + span)`` and one pass over ``[base, base + rest)``."""
    n = indptr.shape[0] - 1
    base = indptr[i]
    span = indptr[i + 1] - base
    count = n_samples_of_row(span, n_negatives)
    if span == 0:  # no edges: keys past the edge range, one per row
        base = indptr[n] + i
        span = np.int64(1)
    n_full = count // span
    return n_full, count - n_full * span, base, span


@numba.njit(inline="always", cache=True)
def row_negative(repeat_hash, e, i, n):
    """The negative of edge key e in a repeat: uniform over the n − 1 points other than i."""
    k = bounded(hash_combine(repeat_hash, e), n - 1)
    return k + np.int64(k >= i)  # arithmetic, not a branch: k ≥ i is a coin flip


_SHARED_KEY = np.uint64(0x5AD5)  # separates the shared samples' keys from the per-row ones


@numba.njit(inline="always", cache=True)
def shared_sample_count(nnz, n, n_negatives):
    """``M = max(1, round(m·nnz/n))``: as many as a row draws on average with per-row samples."""
    s = np.int64(n_negatives * nnz / n + 0.5)
    return s if s > 0 else np.int64(1)


@numba.njit(inline="always", cache=True)
def shared_sample_index(epoch_hash, s, n):
    """The point of the epoch's shared sample ``s`` (see :func:`draw_shared_samples`)."""
    return bounded(hash_combine(hash_combine(epoch_hash, _SHARED_KEY), s), n)


@numba.njit(cache=True)
def draw_shared_samples(Y, n_samples, epoch_hash):
    """The epoch's shared samples: indices ``k_s = bounded(hash(hash(epoch_hash, key), s), n)``
    (uniform over all n points), their positions, shape (dim, M), one row per coordinate so
    that the loop over samples runs over contiguous memory, and ``hits``, shape (n,): how
    often each point was drawn."""
    n, dim = Y.shape
    ks = np.empty(n_samples, np.int64)
    positions = np.empty((dim, n_samples), np.float32)
    hits = np.zeros(n, np.int32)
    for s in range(n_samples):
        k = shared_sample_index(epoch_hash, s, n)
        ks[s] = k
        hits[k] += 1
        for c in range(dim):
            positions[c, s] = Y[k, c]
    return ks, positions, hits


@numba.njit(inline="always", cache=True, fastmath=True)
def _attraction(u, a, b, unnormalized):
    """The attraction's coefficient: the unnormalized mode's ``2ab u^(b−1)/(1 + a u^b)``
    (``unnormalized``) or the normalized mode's ``g``."""
    if unnormalized:
        return gdr_attraction_coeff(u, a, b)
    return ab_kernel(u, a, b)[1]


@numba.njit(inline="always", cache=True, fastmath=True)
def attract_row_2d(Y, y0, y1, indptr, indices, data, i, a, b, unnormalized, edge0=0):
    """``Σ_j p_ij c_ij (y_i − y_j)`` over row i's edges (pairs at u = 0 left out), with ``c``
    from :func:`_attraction`; ``unnormalized`` is a constant at each call. ``edge0``: the
    edge position of ``indices[0]`` when they hold only some rows' edges (``indptr`` keeps
    every row's positions in the whole graph: :mod:`unimap.dask.epochs`)."""
    f0 = np.float32(0.0)
    f1 = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e - edge0]
        d0 = y0 - Y[j, 0]
        d1 = y1 - Y[j, 1]
        u = d0 * d0 + d1 * d1
        if u > 0.0:
            coef = data[e - edge0] * _attraction(u, a, b, unnormalized)
            f0 += coef * d0
            f1 += coef * d1
    return f0, f1


@numba.njit(inline="always", cache=True, fastmath=True)
def attract_row_nd(Y, F, i, indptr, indices, data, scale, a, b, unnormalized, edge0=0):
    """``F[i] += scale · Σ_j p_ij c_ij (y_i − y_j)``, as :func:`attract_row_2d` in any dimension
    (a negative ``scale`` pulls)."""
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e - edge0]
        u = sq_dist(Y, i, Y, j, np.float32(0.0))
        if u > 0.0:
            coef = scale * data[e - edge0] * _attraction(u, a, b, unnormalized)
            for c in range(Y.shape[1]):
                F[i, c] += coef * (Y[i, c] - Y[j, c])
