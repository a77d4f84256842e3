"""GDR's unnormalized (UMAP-like) mode: ``gdr_unnormalized_epoch``, one full-batch epoch (numba).

The forces and the step are written out in :mod:`unimap.optimizers.gdr`.
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.lowdim.similarity_numba import gdr_repulsion_coeff
from unimap.optimizers.gdr.common_numba import (
    attract_row_2d,
    attract_row_nd,
    row_negative,
    sample_layout,
)
from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.dynamic_numba import ROW_BLOCK, claim, workers
from unimap.runtime.rng_numba import bounded, fill_pool, hash_combine, mix64

_ONE = np.float32(1.0)


@numba.njit(inline="always", cache=True, fastmath=True)
def _unnormalized_repel_2d(Y, y0, y1, k, a, b, eps):
    d0 = y0 - Y[k, 0]
    d1 = y1 - Y[k, 1]
    coef = gdr_repulsion_coeff(d0 * d0 + d1 * d1, a, b, eps)
    return coef * d0, coef * d1


@numba.njit(inline="always", cache=True, fastmath=True)
def _unnormalized_pull_2d(Y, y0, y1, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                          attr_scale, a, b, edge0, t_edge0):
    f0, f1 = attract_row_2d(Y, y0, y1, indptr, indices, data, i, a, b, True, edge0)
    f0 *= -attr_scale  # the pull: the sign flips exactly, the bits are those of Σ −c·d
    f1 *= -attr_scale
    if use_t:
        g0, g1 = attract_row_2d(Y, y0, y1, t_indptr, t_indices, t_data, i, a, b, True, t_edge0)
        f0 -= g0
        f1 -= g1
    return f0, f1


@numba.njit(inline="always", cache=True, fastmath=True)
def unnormalized_row_2d(Y, F, out_row, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                        attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, exhaustive,
                        edge0=0, t_edge0=0):
    """Row i's 2-D force into ``F[out_row]`` (``out_row`` = i, or a worker's scratch row when
    the forces are not kept: :mod:`unimap.optimizers.gdr.chunked_epochs_numba`). ``edge0``,
    ``t_edge0``: the edge positions of ``indices[0]`` and ``t_indices[0]`` when they hold a
    range of rows' edges (see :func:`unimap.optimizers.gdr.common_numba.attract_row_2d`)."""
    n = Y.shape[0]
    y0 = Y[i, 0]
    y1 = Y[i, 1]
    f0, f1 = _unnormalized_pull_2d(Y, y0, y1, i, indptr, indices, data, t_indptr, t_indices, t_data,
                                   use_t, attr_scale, a, b, edge0, t_edge0)
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    n_full, rest, base, span = sample_layout(indptr, i, n_negatives)
    if exhaustive:
        for k in range(n):
            if k != i:
                g0, g1 = _unnormalized_repel_2d(Y, y0, y1, k, a, b, eps)
                r0 += g0
                r1 += g1
        rep_weight *= np.float32((n_full * span + rest) / (n - 1))
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                g0, g1 = _unnormalized_repel_2d(Y, y0, y1, row_negative(repeat_hash, e, i, n), a,
                                                b, eps)
                r0 += g0
                r1 += g1
    F[out_row, 0] = f0 + rep_weight * r0
    F[out_row, 1] = f1 + rep_weight * r1


@numba.njit(inline="always", cache=True, fastmath=True)
def unnormalized_row_2d_pooled(Y, F, out_row, i, indptr, indices, data, t_indptr, t_indices, t_data,
                               use_t, attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash,
                               pool, edge0=0, t_edge0=0):
    """:func:`unnormalized_row_2d` with its negative samples drawn from ``pool``, the positions of
    the row block's pool points (see :func:`unimap.runtime.rng_numba.fill_pool`); ``rep_weight``
    is already scaled by n/(n − 1), since a pool point may be the row's own (no force: its
    direction is 0).

    The sampling loop is written out rather than shared with :func:`unnormalized_row_2d` through a
    flag: a branch inside it stops LLVM from vectorising the hash-and-repel loop (measured:
    benchmarks/results/architecture_notes.md)."""
    y0 = Y[i, 0]
    y1 = Y[i, 1]
    f0, f1 = _unnormalized_pull_2d(Y, y0, y1, i, indptr, indices, data, t_indptr, t_indices, t_data,
                                   use_t, attr_scale, a, b, edge0, t_edge0)
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    n_full, rest, base, span = sample_layout(indptr, i, n_negatives)
    for r in range(n_full + 1):
        stop = base + (span if r < n_full else rest)
        repeat_hash = hash_combine(epoch_hash, r)
        for e in range(base, stop):
            slot = bounded(hash_combine(repeat_hash, e), pool.shape[0])
            g0, g1 = _unnormalized_repel_2d(pool, y0, y1, slot, a, b, eps)
            r0 += g0
            r1 += g1
    F[out_row, 0] = f0 + rep_weight * r0
    F[out_row, 1] = f1 + rep_weight * r1


@numba.njit(inline="always", cache=True, fastmath=True)
def _unnormalized_repel_nd(Y, F, i, k, weight, a, b, eps):
    coef = weight * gdr_repulsion_coeff(sq_dist(Y, i, Y, k, np.float32(0.0)), a, b, eps)
    for c in range(Y.shape[1]):
        F[i, c] += coef * (Y[i, c] - Y[k, c])


@numba.njit(inline="always", cache=True, fastmath=True)
def unnormalized_row_nd(Y, F, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                        attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, exhaustive,
                        edge0=0, t_edge0=0):
    n, dim = Y.shape
    for c in range(dim):
        F[i, c] = 0.0
    attract_row_nd(Y, F, i, indptr, indices, data, -attr_scale, a, b, True, edge0)
    if use_t:
        attract_row_nd(Y, F, i, t_indptr, t_indices, t_data, -_ONE, a, b, True, t_edge0)
    n_full, rest, base, span = sample_layout(indptr, i, n_negatives)
    if exhaustive:
        weight = rep_weight * np.float32((n_full * span + rest) / (n - 1))
        for k in range(n):
            if k != i:
                _unnormalized_repel_nd(Y, F, i, k, weight, a, b, eps)
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                _unnormalized_repel_nd(Y, F, i, row_negative(repeat_hash, e, i, n), rep_weight, a,
                                       b, eps)


def pooled_sample_weight(rep_weight, n: int) -> np.float32:
    """The weight of one pooled negative sample: ``rep_weight·n/(n − 1)`` in float32, since a
    pool point may be the row's own and gives no force (see :func:`gdr_unnormalized_epoch`)."""
    return np.float32(np.float32(rep_weight) * np.float32(n / (n - 1)))


def gdr_unnormalized_epoch(Y, Y_out, F, V, edges, transposed, forces, step, lr, seed, epoch,
                           exhaustive, n_workers=None, negative_pool=0, blocks=None,
                           edge_offsets=(0, 0)):
    """One unnormalized epoch: ``F`` ← forces at ``Y`` (module docstring), then with momentum
    μ, ``V ← μ·V + lr·clip(F)`` and ``Y_out ← Y + V`` (row by row, so ``Y_out`` must not be
    ``Y``).

    The optimizer runs this kernel for embeddings of other than 2 dimensions; its 2-D epochs
    run in chunks without a barrier per epoch (:mod:`unimap.optimizers.gdr.chunked_epochs_numba`),
    which tests and ``benchmarks/busy_epochs.py`` hold bitwise to this kernel's 2-D epochs.

    Parameters
    ----------
    Y, Y_out, F, V : float32 arrays of shape (n, dim); ``Y`` is only read.
    edges : :class:`~unimap.optimizers.gdr.common_numba.CSR`, P.
    transposed : :class:`~unimap.optimizers.gdr.common_numba.TransposedCSR`, Pᵀ for
        symmetric attraction; an empty ``t_indptr`` skips that pass.
    forces : :class:`~unimap.optimizers.gdr.common_numba.UnnormalizedForces`: ``attr_scale``, the
        factor on the row attraction (2: symmetric attraction, P = Pᵀ); ``n_negatives``,
        samples per edge (m); ``rep_weight``, one sample's weight; ``a``, ``b``, ``eps``.
    step : :class:`~unimap.optimizers.gdr.common_numba.HeavyBall`: ``clip``, ``momentum``.
    lr : float32, this epoch's step.
    seed : uint64; epoch : int64; exhaustive : bool (see the module docstring).
    n_workers : int or None, threads that claim row blocks (:mod:`unimap.runtime.dynamic_numba`);
        None: numba's current thread count.
    negative_pool : int, 2-D only (ignored otherwise and when ``exhaustive``)
        0: every negative sample reads a uniform point of ``Y``. P > 0: each block of
        ``ROW_BLOCK`` rows first copies P uniform points (one draw each, keyed by the block)
        into a small array, and its rows draw their samples from it. Once ``Y`` outgrows the
        cache the samples' random reads cost more than their forces; from a pool they are
        far fewer (measured: benchmarks/results/library_notes.md,
        "unimap/optimizers/gdr/unnormalized_numba.py"). Each sample is still uniform over the n
        points (the row's own gives no force, hence ``rep_weight·n/(n − 1)``), so the
        repulsion stays unbiased; its noise is shared by a block's rows, which the
        relabelling of large inputs makes neighbours, so it moves them together (measured
        in ``docs/gdr.md``).
    blocks : (first, stop) or None
        Only the rows of ``ROW_BLOCK`` blocks ``first`` to ``stop`` − 1 are computed (every row
        is read from ``Y``); None: all. Each row and pool is keyed by its number in the whole
        ``Y``, so a range computes the same bits as a whole epoch does for those rows.
    edge_offsets : (int, int), default=(0, 0)
        The edge positions of ``edges.indices[0]`` and ``transposed.t_indices[0]`` when they
        hold only the range's edges (the ``indptr`` arrays keep every row's positions in
        the whole graph): :mod:`unimap.dask.epochs`.
    """
    if n_workers is None:
        n_workers = workers()
    n_blocks = (Y.shape[0] + ROW_BLOCK - 1) // ROW_BLOCK
    first, stop = (0, n_blocks) if blocks is None else blocks
    ranges = (np.int64(first), np.int64(min(stop, n_blocks)), np.int64(edge_offsets[0]),
              np.int64(edge_offsets[1]))
    if Y.shape[1] == 2:
        n_pool = 0 if exhaustive else int(negative_pool)
        if n_pool > 0:
            forces = forces._replace(rep_weight=pooled_sample_weight(forces.rep_weight,
                                                                     Y.shape[0]))
        _unnormalized_epoch_2d(Y, Y_out, F, V, edges, transposed, forces, step, lr, seed, epoch,
                               exhaustive, np.int64(n_workers), np.int64(n_pool), *ranges)
        return
    _unnormalized_epoch_nd(Y, Y_out, F, V, edges, transposed, forces, step, lr, seed, epoch,
                           exhaustive, np.int64(n_workers), *ranges)


# The epoch kernels exist for 2-D and for other dimensions, so that a run compiles only the
# row code it uses (a first GDR run compiled both). Passing the row function as an argument
# would also compile per function, but numba's disk cache never hits for such a signature.
# The unnormalized row code is inlined into the parallel kernel: a call per row (numba passes
# each array as ~7 scalars) cost a quarter of the epochs, and the inlined kernel even compiles
# faster. The normalized rows stay calls: with ~120 edges per row the call is amortised, and
# inlining them made the first run compile longer (measured:
# benchmarks/results/library_notes.md, "unimap/optimizers/gdr/unnormalized_numba.py").
@numba.njit(inline="always", cache=True, fastmath=True)
def momentum_step_row(Y, Y_out, F, f_row, V, V_out, i, clip, lr, momentum):
    """GDR's heavy-ball step of row ``i``: ``v ← μ·v + lr·clip(F[f_row], ±clip)``,
    ``y_out ← y + v``, the velocity read from ``V`` and written to ``V_out`` (the same array
    for one epoch; rotating buffers for the chunked epochs of
    :mod:`unimap.optimizers.gdr.chunked_epochs_numba`)."""
    for c in range(Y.shape[1]):
        g = min(max(F[f_row, c], -clip), clip)  # branch-free: a mispredicted clip costs more
        v = momentum * V[i, c] + lr * g
        V_out[i, c] = v
        Y_out[i, c] = Y[i, c] + v


@numba.njit(inline="always", cache=True, fastmath=True)
def momentum_step(Y, Y_out, F, V, i, clip, lr, momentum):
    momentum_step_row(Y, Y_out, F, i, V, V, i, clip, lr, momentum)


@numba.njit(parallel=True, cache=True, fastmath=True)
def _unnormalized_epoch_2d(Y, Y_out, F, V, edges, transposed, forces, step, lr, seed, epoch,
                           exhaustive, n_workers, n_pool, first_block, stop_block, edge0, t_edge0):
    indptr, indices, data = edges.indptr, edges.indices, edges.data
    t_indptr, t_indices, t_data = transposed.t_indptr, transposed.t_indices, transposed.t_data
    attr_scale, n_negatives, rep_weight = forces.attr_scale, forces.n_negatives, forces.rep_weight
    a, b, eps = forces.a, forces.b, forces.eps
    clip, momentum = step.clip, step.momentum
    n = Y.shape[0]
    use_t = t_indptr.shape[0] == n + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    next_block = np.zeros(1, np.int64)
    for _worker in numba.prange(n_workers):
        pool = np.empty((n_pool, 2), np.float32)
        block = first_block + claim(next_block)
        while block < stop_block:
            rows = range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK))
            if n_pool > 0:
                fill_pool(Y, pool, epoch_hash, block)
                for i in rows:
                    unnormalized_row_2d_pooled(Y, F, i, i, indptr, indices, data, t_indptr,
                                               t_indices, t_data, use_t, attr_scale, n_negatives,
                                               rep_weight, a, b, eps, epoch_hash, pool, edge0,
                                               t_edge0)
                    momentum_step(Y, Y_out, F, V, i, clip, lr, momentum)
            else:
                for i in rows:
                    unnormalized_row_2d(Y, F, i, i, indptr, indices, data, t_indptr, t_indices,
                                        t_data, use_t, attr_scale, n_negatives, rep_weight, a, b,
                                        eps, epoch_hash, exhaustive, edge0, t_edge0)
                    momentum_step(Y, Y_out, F, V, i, clip, lr, momentum)
            block = first_block + claim(next_block)


@numba.njit(parallel=True, cache=True, fastmath=True)
def _unnormalized_epoch_nd(Y, Y_out, F, V, edges, transposed, forces, step, lr, seed, epoch,
                           exhaustive, n_workers, first_block, stop_block, edge0, t_edge0):
    indptr, indices, data = edges.indptr, edges.indices, edges.data
    t_indptr, t_indices, t_data = transposed.t_indptr, transposed.t_indices, transposed.t_data
    attr_scale, n_negatives, rep_weight = forces.attr_scale, forces.n_negatives, forces.rep_weight
    a, b, eps = forces.a, forces.b, forces.eps
    clip, momentum = step.clip, step.momentum
    n = Y.shape[0]
    use_t = t_indptr.shape[0] == n + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    next_block = np.zeros(1, np.int64)
    for _worker in numba.prange(n_workers):
        block = first_block + claim(next_block)
        while block < stop_block:
            for i in range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK)):
                unnormalized_row_nd(Y, F, i, indptr, indices, data, t_indptr, t_indices, t_data,
                                    use_t, attr_scale, n_negatives, rep_weight, a, b, eps,
                                    epoch_hash, exhaustive, edge0, t_edge0)
                momentum_step(Y, Y_out, F, V, i, clip, lr, momentum)
            block = first_block + claim(next_block)
