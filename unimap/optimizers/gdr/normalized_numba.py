"""GDR's normalized (t-SNE-like) mode: ``gdr_normalized_forces``, one epoch's forces (numba).

The estimates (exact near field, sampled far field, shared samples) are written out in
:mod:`unimap.optimizers.gdr`.
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.lowdim.similarity_numba import ab_kernel, ab_kernel_unit_b
from unimap.optimizers.gdr.common_numba import (
    attract_row_2d,
    attract_row_nd,
    draw_shared_samples,
    row_negative,
    sample_layout,
    shared_sample_count,
)
from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.dynamic_numba import ROW_BLOCK, claim, workers
from unimap.runtime.rng_numba import hash_combine, mix64

_ONE = np.float32(1.0)


@numba.njit(inline="always", cache=True, fastmath=True)
def _normalized_far_2d(Y, y0, y1, k, a, b, marks):
    """``(w, w g d0, w g d1)`` of the pair (i, k), or zeros when k is a neighbour of i."""
    d0 = y0 - Y[k, 0]
    d1 = y1 - Y[k, 1]
    w, g = ab_kernel(d0 * d0 + d1 * d1, a, b)
    w = w * np.float32(1 - marks[k])
    coef = w * g
    return w, coef * d0, coef * d1


@numba.njit(inline="always", cache=True, fastmath=True)
def _store_attraction_2d(Y, A, i, y0, y1, f0, f1, t_indptr, t_indices, t_data, use_t,
                         attr_scale, a, b):
    """``A[i]`` ← ``attr_scale·(f0, f1)`` plus, with symmetric attraction, the pull along the
    edges where i is the tail (row i of Pᵀ)."""
    f0 *= attr_scale
    f1 *= attr_scale
    if use_t:
        g0, g1 = attract_row_2d(Y, y0, y1, t_indptr, t_indices, t_data, i, a, b, False)
        f0 += g0
        f1 += g1
    A[i, 0] = f0
    A[i, 1] = f1


_TILE = 16  # rows per shared-sample tile: the lanes of the vectorized loop

# Fast-math without reassociation: the tile loop's lanes are rows, each summing its samples in
# order, so the result does not depend on the vector width or unrolling LLVM picks. (A sum
# over the samples inside one row vectorizes only by reassociating it, and the in-process JIT
# and the disk cache's copy of a caller reassociated it differently: first and later runs gave
# different embeddings for one seed.)
_LANE_MATH = {"nnan", "ninf", "nsz", "arcp", "contract", "afn"}


@numba.njit(cache=True, fastmath=_LANE_MATH, error_model="numpy")
def _shared_far_tile_2d(tile, positions, a, b):
    """``tile[2:5, t]`` ← ``Σ_s (w, w g d0, w g d1)`` between the point ``tile[0:2, t]`` and
    every shared sample (its own point and its neighbours included: the caller subtracts
    them). ``error_model="numpy"``: Python's zero-division check would stop the vectorizer."""
    ty0 = tile[0]
    ty1 = tile[1]
    tz = tile[2]
    tr0 = tile[3]
    tr1 = tile[4]
    for t in range(_TILE):
        tz[t] = 0.0
        tr0[t] = 0.0
        tr1[t] = 0.0
    p0 = positions[0]
    p1 = positions[1]
    if b == _ONE:  # ab_kernel without its branches: u = 0 needs none (its d is 0)
        for s in range(p0.shape[0]):
            q0 = p0[s]
            q1 = p1[s]
            for t in range(_TILE):
                d0 = ty0[t] - q0
                d1 = ty1[t] - q1
                w, g = ab_kernel_unit_b(d0 * d0 + d1 * d1, a)
                tz[t] += w
                coef = w * g
                tr0[t] += coef * d0
                tr1[t] += coef * d1
    else:
        for s in range(p0.shape[0]):
            q0 = p0[s]
            q1 = p1[s]
            for t in range(_TILE):
                d0 = ty0[t] - q0
                d1 = ty1[t] - q1
                w, g = ab_kernel(d0 * d0 + d1 * d1, a, b)
                tz[t] += w
                coef = w * g
                tr0[t] += coef * d0
                tr1[t] += coef * d1


@numba.njit(inline="always", cache=True, fastmath=True)
def _near_2d(Y, y0, y1, indptr, indices, data, i, a, b, marks, hits, shared, unit_b):
    """Row i's sums over its edges: attraction, exact near-field repulsion and ``Σ w``, and with
    shared samples those that hit the point or a neighbour: ``(f0, f1, n0, n1, z_near, hit_z,
    hit_r0, hit_r1)``. Per-row samples (``shared`` False) mark the neighbours in ``marks``;
    shared ones read their hit counts from ``hits``. ``shared`` and ``unit_b`` are constants
    at each call; ``unit_b`` selects ``1/(1 + a u)`` without ab_kernel's two branches per edge
    (measured: benchmarks/results/library_notes.md, "unimap/optimizers/gdr/normalized_numba.py")."""
    f0 = np.float32(0.0)
    f1 = np.float32(0.0)
    n0 = np.float32(0.0)
    n1 = np.float32(0.0)
    z_near = np.float32(0.0)
    hit_z = np.float32(hits[i]) if shared else np.float32(0.0)
    hit_r0 = np.float32(0.0)
    hit_r1 = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        if j == i:
            continue
        if not shared:
            marks[j] = 1
        d0 = y0 - Y[j, 0]
        d1 = y1 - Y[j, 1]
        if unit_b:  # at u = 0 the direction is 0: g's value there does not matter
            w, g = ab_kernel_unit_b(d0 * d0 + d1 * d1, a)
        else:
            w, g = ab_kernel(d0 * d0 + d1 * d1, a, b)
        pg = data[e] * g
        wg = w * g
        f0 += pg * d0
        f1 += pg * d1
        z_near += w
        n0 += wg * d0
        n1 += wg * d1
        if shared:
            c = np.float32(hits[j])
            hit_z += c * w
            hit_r0 += c * wg * d0
            hit_r1 += c * wg * d1
    return f0, f1, n0, n1, z_near, hit_z, hit_r0, hit_r1


@numba.njit(inline="always", cache=True, fastmath=True)
def normalized_shared_row_2d(Y, A, R, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                             attr_scale, a, b, hits, z_all, r0_all, r1_all, scale):
    """Row i with shared samples whose sums over all samples are ``(z_all, r0_all, r1_all)``:
    ``A[i]`` ← attraction, ``R[i]`` ← repulsion; returns ``z_i``. The samples that hit the
    point itself (w = 1, d = 0) or a neighbour (exact in the near field) are subtracted."""
    y0 = Y[i, 0]
    y1 = Y[i, 1]
    # t-SNE's kernel (b = 1) gets a loop of its own, free of ab_kernel's branches
    if b == _ONE:
        f0, f1, n0, n1, z_near, hit_z, hit_r0, hit_r1 = _near_2d(
            Y, y0, y1, indptr, indices, data, i, a, b, hits, hits, True, True)
    else:
        f0, f1, n0, n1, z_near, hit_z, hit_r0, hit_r1 = _near_2d(
            Y, y0, y1, indptr, indices, data, i, a, b, hits, hits, True, False)
    _store_attraction_2d(Y, A, i, y0, y1, f0, f1, t_indptr, t_indices, t_data, use_t,
                         attr_scale, a, b)
    R[i, 0] = n0 + (r0_all - hit_r0) * scale
    R[i, 1] = n1 + (r1_all - hit_r1) * scale
    return z_near + (z_all - hit_z) * scale


@numba.njit(inline="always", cache=True, fastmath=True)
def _normalized_attract_near_2d(Y, A, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                                attr_scale, a, b, marks):
    """``A[i]`` ← attraction; returns ``(y0, y1, n0, n1, z_near)``: the point, its exact
    near-field repulsion and ``Σ w`` over its neighbours (marked in ``marks``)."""
    y0 = Y[i, 0]
    y1 = Y[i, 1]
    f0, f1, n0, n1, z_near = _near_2d(Y, y0, y1, indptr, indices, data, i, a, b, marks, marks,
                                      False, False)[:5]
    _store_attraction_2d(Y, A, i, y0, y1, f0, f1, t_indptr, t_indices, t_data, use_t,
                         attr_scale, a, b)
    return y0, y1, n0, n1, z_near


@numba.njit(cache=True, fastmath=True)
def _normalized_row_2d(Y, A, R, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                       attr_scale, n_negatives, a, b, epoch_hash, exhaustive, marks):
    n = Y.shape[0]
    y0, y1, n0, n1, z_near = _normalized_attract_near_2d(Y, A, i, indptr, indices, data, t_indptr,
                                                         t_indices, t_data, use_t, attr_scale, a, b,
                                                         marks)
    z = np.float32(0.0)
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    n_full, rest, base, span = sample_layout(indptr, i, n_negatives)
    if exhaustive:
        for k in range(n):
            if k != i:
                w, g0, g1 = _normalized_far_2d(Y, y0, y1, k, a, b, marks)
                z += w
                r0 += g0
                r1 += g1
        scale = np.float32(1.0)
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                k = row_negative(repeat_hash, e, i, n)
                w, g0, g1 = _normalized_far_2d(Y, y0, y1, k, a, b, marks)
                z += w
                r0 += g0
                r1 += g1
        scale = np.float32((n - 1) / (n_full * span + rest))
    R[i, 0] = n0 + r0 * scale
    R[i, 1] = n1 + r1 * scale
    return z_near + z * scale


@numba.njit(inline="always", cache=True, fastmath=True)
def _normalized_repel_nd(Y, R, i, k, a, b, weight):
    w, g = ab_kernel(sq_dist(Y, i, Y, k, np.float32(0.0)), a, b)
    w *= weight
    coef = w * g
    for c in range(Y.shape[1]):
        R[i, c] += coef * (Y[i, c] - Y[k, c])
    return w


@numba.njit(cache=True, fastmath=True)
def _normalized_row_nd(Y, A, R, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                       attr_scale, n_negatives, a, b, epoch_hash, exhaustive, marks, shared_k):
    n, dim = Y.shape
    for c in range(dim):
        A[i, c] = 0.0
        R[i, c] = 0.0
    attract_row_nd(Y, A, i, indptr, indices, data, attr_scale, a, b, False)
    if use_t:
        attract_row_nd(Y, A, i, t_indptr, t_indices, t_data, _ONE, a, b, False)
    z_near = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):  # near field, exact (R is then scaled back)
        j = indices[e]
        if j != i:
            marks[j] = 1
    n_full, rest, base, span = sample_layout(indptr, i, n_negatives)
    n_shared = shared_k.shape[0]
    if exhaustive:
        scale = np.float32(1.0)
    elif n_shared > 0:
        scale = np.float32(n / n_shared)
    else:
        scale = np.float32((n - 1) / (n_full * span + rest))
    inv = _ONE / scale
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        if j != i:
            z_near += _normalized_repel_nd(Y, R, i, j, a, b, inv)
    z = np.float32(0.0)
    if exhaustive:
        for k in range(n):
            if k != i:
                z += _normalized_repel_nd(Y, R, i, k, a, b, np.float32(1 - marks[k]))
    elif n_shared > 0:  # read from Y: only the 2-D loop gains from the contiguous copy
        for s in range(n_shared):
            k = shared_k[s]
            z += _normalized_repel_nd(Y, R, i, k, a, b,
                                      np.float32(1 - marks[k]) * np.float32(k != i))
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                k = row_negative(repeat_hash, e, i, n)
                z += _normalized_repel_nd(Y, R, i, k, a, b, np.float32(1 - marks[k]))
    for c in range(dim):
        R[i, c] *= scale
    return z_near * scale + z * scale


def gdr_normalized_forces(Y, A, R, z_rows, all_marks, edges, transposed, kernel, seed, epoch,
                          exhaustive, shared, n_workers=None):
    """Normalized-mode forces: ``A`` ← attraction, ``R`` ← repulsion estimate, ``z_rows`` ←
    per-row estimates of ``Σ_{k≠i} w_ik`` (see the module docstring); the caller forms
    ``4(E·A − γ·R/Σz)``.

    Parameters
    ----------
    Y, A, R : float32 arrays of shape (n, dim); z_rows : float64 array of shape (n,).
    all_marks : uint8 array of shape (n_rows, n), all zero: one row of neighbour marks per
        worker thread; at most ``n_rows`` workers run (the result does not depend on their
        number). Left zero.
    edges : :class:`~unimap.optimizers.gdr.common_numba.CSR` of P (indices sorted or not).
    transposed : :class:`~unimap.optimizers.gdr.common_numba.TransposedCSR` of Pᵀ, or empty.
    kernel : :class:`~unimap.optimizers.gdr.common_numba.SampledKernel`: ``attr_scale``,
        ``n_negatives`` (float64), ``a``, ``b``.
    seed : uint64; epoch : int64; exhaustive : bool.
    shared : bool
        Draw ``M = shared_sample_count(nnz, n, n_negatives)`` samples for the epoch and use
        them for every row (see the module docstring) instead of each row's own samples.
    n_workers : int or None
        Threads that claim blocks of rows (:mod:`unimap.runtime.dynamic_numba`); None: numba's
        current thread count.
    """
    if n_workers is None:
        n_workers = workers()
    n_workers = np.int64(max(1, min(n_workers, all_marks.shape[0])))
    forces = _normalized_forces_2d if Y.shape[1] == 2 else _normalized_forces_nd
    forces(Y, A, R, z_rows, all_marks, edges, transposed, kernel, seed, epoch, exhaustive,
           shared, n_workers)


@numba.njit(parallel=True, cache=True, fastmath=True)
def _normalized_forces_2d(Y, A, R, z_rows, all_marks, edges, transposed, kernel, seed, epoch,
                          exhaustive, shared, n_workers):
    indptr, indices, data = edges.indptr, edges.indices, edges.data
    t_indptr, t_indices, t_data = transposed.t_indptr, transposed.t_indices, transposed.t_data
    attr_scale, n_negatives, a, b = kernel.attr_scale, kernel.n_negatives, kernel.a, kernel.b
    n = Y.shape[0]
    use_t = t_indptr.shape[0] == n + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    shared = shared and not exhaustive
    n_shared = shared_sample_count(indptr[n], n, n_negatives) if shared else 0
    positions, hits = draw_shared_samples(Y, n_shared, epoch_hash)[1:]
    scale = np.float32(n / max(n_shared, 1))
    # One tile per worker, allocated here: rows 0-4 are used, row 5 keeps workers' tiles 64
    # bytes apart, so two threads never write to one cache line. (Tiles allocated inside the
    # loop sometimes came from one cache line: on 2 threads the far field then ran at half the
    # speed of one, in some processes and not others, depending on where malloc put them.)
    tiles = np.empty((n_workers if shared else 0, 6, _TILE), np.float32)
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, np.int64)
    for worker in numba.prange(n_workers):
        block = claim(next_block)
        while block < n_blocks:
            lo = block * ROW_BLOCK
            hi = min(n, lo + ROW_BLOCK)
            if shared:
                tile = tiles[worker]
                for start in range(lo, hi, _TILE):
                    stop = min(start + _TILE, hi)
                    for t in range(_TILE):  # a short last tile repeats its last row
                        k = min(start + t, stop - 1)
                        tile[0, t] = Y[k, 0]
                        tile[1, t] = Y[k, 1]
                    _shared_far_tile_2d(tile, positions, a, b)
                    for i in range(start, stop):
                        t = i - start
                        z_rows[i] = normalized_shared_row_2d(Y, A, R, i, indptr, indices, data,
                                                             t_indptr, t_indices, t_data, use_t,
                                                             attr_scale, a, b, hits, tile[2, t],
                                                             tile[3, t], tile[4, t], scale)
            else:
                row_marks = all_marks[worker]
                for i in range(lo, hi):
                    z_rows[i] = _normalized_row_2d(Y, A, R, i, indptr, indices, data, t_indptr,
                                                   t_indices, t_data, use_t, attr_scale,
                                                   n_negatives, a, b, epoch_hash, exhaustive,
                                                   row_marks)
                    for e in range(indptr[i], indptr[i + 1]):
                        row_marks[indices[e]] = 0
            block = claim(next_block)


@numba.njit(parallel=True, cache=True, fastmath=True)
def _normalized_forces_nd(Y, A, R, z_rows, all_marks, edges, transposed, kernel, seed, epoch,
                          exhaustive, shared, n_workers):
    indptr, indices, data = edges.indptr, edges.indices, edges.data
    t_indptr, t_indices, t_data = transposed.t_indptr, transposed.t_indices, transposed.t_data
    attr_scale, n_negatives, a, b = kernel.attr_scale, kernel.n_negatives, kernel.a, kernel.b
    n = Y.shape[0]
    use_t = t_indptr.shape[0] == n + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    n_shared = shared_sample_count(indptr[n], n, n_negatives) if shared else 0
    shared_k = draw_shared_samples(Y, n_shared, epoch_hash)[0]
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, np.int64)
    for worker in numba.prange(n_workers):
        row_marks = all_marks[worker]
        block = claim(next_block)
        while block < n_blocks:
            for i in range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK)):
                z_rows[i] = _normalized_row_nd(Y, A, R, i, indptr, indices, data, t_indptr,
                                               t_indices, t_data, use_t, attr_scale, n_negatives, a,
                                               b, epoch_hash, exhaustive, row_marks, shared_k)
                for e in range(indptr[i], indptr[i + 1]):
                    row_marks[indices[e]] = 0
            block = claim(next_block)
