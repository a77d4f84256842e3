"""Several unnormalized 2-D GDR epochs in one parallel region, without a barrier per epoch.

Why: :func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch` is one ``prange`` per
epoch, and every epoch ends when its slowest thread does. On a host where another program shares a
core, the thread on that core is descheduled for a time slice every so often, and an epoch that
ends while it holds a row block waits for it, for about as long as the epoch itself (measured:
benchmarks/results/library_notes.md, "unimap/optimizers/gdr/chunked_epochs_numba.py"). Here the
epochs of a chunk run in one region and a thread that runs out of unclaimed blocks computes
the blocks that are claimed but not finished itself, so an epoch finishes without waiting
for a descheduled thread; that thread finishes its now redundant block when it runs again.

Why the result does not change: a block of epoch ``e`` is a function of the epoch's
positions ``Y_e`` and velocities ``V_e`` alone, and its rows are written only by it. Two
threads computing it write the same values. The arrays rotate over three buffers (epoch
``e`` reads ``Y[e % 3]``, ``V[e % 3]`` and writes ``Y[(e + 1) % 3]``, ``V[(e + 1) % 3]`` and its
forces ``F[e % 3]``), so a thread still in epoch ``e − 1`` only rewrites ``Y_e`` with the values
it already holds. Epoch ``e`` starts when every block of ``e − 1`` is finished, and a thread
may work on epoch ``e`` only when no thread is still in epoch ``e − 2`` or earlier (whose
buffers epoch ``e`` overwrites): then a thread waits only for one that is more than an epoch
behind. Each output is bitwise that of
:func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch` (tested), for any thread
count and schedule.

The protocol (``state``: int64, ``[0]`` the chunk's current epoch, ``[1 + w]`` the epoch
worker ``w`` works on or −1): a worker publishes the epoch it read, re-reads the current
epoch and backs off if it moved (so that a worker checking the others never misses one that
is about to work on an old epoch: sequentially consistent atomics,
:mod:`unimap.runtime.dynamic_numba`); it waits while another worker is two epochs behind; it
claims a block from the epoch's counter or, when none is left, takes the first unfinished
one; it marks the block finished (compare-and-swap, so that each block is counted once) and
the worker that finishes an epoch's last block advances the current epoch.
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.optimizers.gdr.unnormalized_numba import (
    momentum_step_row,
    unnormalized_row_2d,
    unnormalized_row_2d_pooled,
)
from unimap.runtime.dynamic_numba import (
    ROW_BLOCK,
    atomic_add,
    atomic_cas,
    atomic_load,
    atomic_store,
    claim,
)
from unimap.runtime.rng_numba import fill_pool, hash_combine, mix64

__all__ = ["unnormalized_epochs_2d", "epoch_buffers"]

_IDLE = np.int64(-1)


def epoch_buffers(init: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rotating ``Y``, ``V`` and ``F`` buffers (3, n, 2) for :func:`unnormalized_epochs_2d`,
    starting at epoch 0 from ``init`` with zero velocity."""
    Y = np.empty((3,) + init.shape, dtype=np.float32)
    Y[0] = init
    V = np.zeros_like(Y)
    return Y, V, np.empty_like(Y)


@numba.njit(inline="always", cache=True)
def _unfinished(finished, epoch, n_blocks):
    """The first block of ``epoch`` not finished yet, or ``n_blocks``."""
    for block in range(n_blocks):
        if atomic_load(finished, epoch * n_blocks + block) == 0:
            return block
    return n_blocks


@numba.njit(inline="always", cache=True)
def _others_caught_up(state, worker, n_workers, epoch):
    """True when no other worker is in an epoch before ``epoch − 1``."""
    for other in range(n_workers):
        if other != worker:
            theirs = atomic_load(state, 1 + other)
            if theirs != _IDLE and theirs < epoch - 1:
                return False
    return True


@numba.njit(parallel=True, cache=True, fastmath=True)
def unnormalized_epochs_2d(Y, F, V, edges, transposed, forces, step, rates, seed, first_epoch,
                           n_workers, n_pool):
    """Epochs ``first_epoch, ..., first_epoch + len(rates) − 1`` of
    :func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch` (2-D, sampled
    negatives), epoch ``e`` with step size ``rates[e − first_epoch]``; the positions after the last
    are ``Y[(first_epoch + len(rates)) % 3]``.

    ``Y``, ``F``, ``V``: float32 (3, n, 2) from :func:`epoch_buffers` (or a previous call);
    ``n_pool``: 0, or the pooled negatives' pool size (``rep_weight`` then already scaled by
    n/(n − 1), as :func:`~unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch` does).
    Other arguments as there.
    """
    indptr, indices, data = edges.indptr, edges.indices, edges.data
    t_indptr, t_indices, t_data = transposed.t_indptr, transposed.t_indices, transposed.t_data
    attr_scale, n_negatives, rep_weight = forces.attr_scale, forces.n_negatives, forces.rep_weight
    a, b, eps = forces.a, forces.b, forces.eps
    clip, momentum = step.clip, step.momentum
    n = Y.shape[1]
    n_epochs = rates.shape[0]
    use_t = t_indptr.shape[0] == n + 1
    seed_hash = mix64(np.uint64(seed))
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    state = np.full(1 + n_workers, _IDLE, dtype=np.int64)
    state[0] = 0
    claims = np.zeros(n_epochs, dtype=np.int64)
    finished = np.zeros(n_epochs * n_blocks, dtype=np.int64)
    finished_count = np.zeros(n_epochs, dtype=np.int64)
    # one cache line per worker, so that no two share one
    scratch = np.empty((16 * n_workers, 2), dtype=np.float32)
    for worker in numba.prange(n_workers):
        pool = np.empty((n_pool, 2), np.float32)
        while True:
            e = atomic_load(state, 0)
            if e >= n_epochs:
                break
            atomic_store(state, 1 + worker, e)
            if atomic_load(state, 0) != e or not _others_caught_up(state, worker, n_workers, e):
                atomic_store(state, 1 + worker, _IDLE)  # moved on, or someone is behind
                continue
            block = claim(claims[e:e + 1])
            if block >= n_blocks:
                block = _unfinished(finished, e, n_blocks)
            if block < n_blocks:
                epoch = first_epoch + e
                src, dst = epoch % 3, (epoch + 1) % 3
                epoch_hash = hash_combine(seed_hash, np.int64(epoch))
                rows = range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK))
                Y_in, Y_out, F_e, V_in, V_out = Y[src], Y[dst], F[src], V[src], V[dst]
                # Forces are kept only for the chunk's last epoch (the caller's guard reads
                # them); the others pass through the worker's own row of ``scratch``, which
                # stays in cache (1M points: 8 MB fewer written per epoch), by the same
                # stores and loads, so the same arithmetic.
                last = e == n_epochs - 1
                forces = F_e if last else scratch
                own = 16 * worker
                if n_pool > 0:
                    fill_pool(Y_in, pool, epoch_hash, block)
                    for i in rows:
                        out_row = i if last else own
                        unnormalized_row_2d_pooled(Y_in, forces, out_row, i, indptr, indices, data,
                                                   t_indptr, t_indices, t_data, use_t, attr_scale,
                                                   n_negatives, rep_weight, a, b, eps, epoch_hash,
                                                   pool)
                        momentum_step_row(Y_in, Y_out, forces, out_row, V_in, V_out, i, clip,
                                          rates[e], momentum)
                else:
                    for i in rows:
                        out_row = i if last else own
                        unnormalized_row_2d(Y_in, forces, out_row, i, indptr, indices, data,
                                            t_indptr, t_indices, t_data, use_t, attr_scale,
                                            n_negatives, rep_weight, a, b, eps, epoch_hash, False)
                        momentum_step_row(Y_in, Y_out, forces, out_row, V_in, V_out, i, clip,
                                          rates[e], momentum)
                # the first to finish a block counts it; the last block's finisher moves on
                if (atomic_cas(finished, e * n_blocks + block, 0, 1)
                        and atomic_add(finished_count, e, 1) == n_blocks - 1):
                    atomic_store(state, 0, e + 1)
            atomic_store(state, 1 + worker, _IDLE)
