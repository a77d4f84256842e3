"""UMAP's edge-sampled SGD on a GPU: the grouped epoch's edge code, one edge per thread (fit),
and the CPU's row code, one new point per thread (``transform``).

A fit's epoch is one cooperative kernel launch over the edge groups of
:mod:`unimap.optimizers.umap_sgd.grouped_numba`: each group's edges, one per thread, add their
moves from the group's start positions to a buffer with integer atomics (exact, so in any
order), a grid-wide barrier, every point applies its moves, another barrier. Two barriers per
group (32 per epoch) whatever the graph's degrees, where colour classes took one per class
(at least the largest degree). The negative samples come from a counter-based hash, so the
same seed gives bitwise the same embedding run after run; :func:`sgd_epoch_groups
<unimap.optimizers.umap_sgd.grouped_numba.sgd_epoch_groups>` is the CPU reference.

``transform`` moves new points against the fixed training embedding: rows never interact, so
one launch runs every epoch of every row (:func:`umap_sgd_place_cuda`), each thread calling the
CPU's :func:`~unimap.optimizers.umap_sgd.epochs_numba.place_row` epoch after epoch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from unimap.optimizers.umap_sgd.epochs_numba import place_row
from unimap.optimizers.umap_sgd.grouped_numba import apply_moves, grouped_edge_2d, grouped_edge_nd
from unimap.runtime.common_cuda import (
    DeviceGuard,
    check_device_memory,
    cooperative_launcher,
    flag_nonfinite_row,
    on_target,
    rows_launch,
    to_device,
)
from unimap.runtime.rng_numba import hash_combine, mix64

__all__ = ["umap_sgd_fit_cuda", "umap_sgd_place_cuda", "device_bytes", "supports"]


def supports(n_components: int) -> bool:
    """Whether these kernels run a fit, and ``transform``: any dimension (a 2-D and an n-D
    edge kernel; one rows kernel)."""
    return n_components >= 1


# Written out per dimension, not made by a factory, so that numba-cuda caches them on disk
# (see unimap.optimizers.gdr.unnormalized_cuda).
_edge_on_2d, _edge_on_nd = on_target(grouped_edge_2d), on_target(grouped_edge_nd)
_apply_moves, _place_row = on_target(apply_moves), on_target(place_row)
_hash_combine = on_target(hash_combine)


@cuda.jit(fastmath=True, cache=True)
def _sgd_epoch_2d(emb, moves, heads, tails, group_ptr, epochs_per_sample, next_sample,
                  epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha,
                  flag):
    """One epoch: each group's edges add their moves, a grid barrier, the points apply them
    (flagging a non-finite position in the guard's ``flag``), a barrier before the next
    group (none after the last: the next launch waits anyway)."""
    grid = cuda.cg.this_grid()
    first, stride = cuda.grid(1), cuda.gridsize(1)
    last = group_ptr.shape[0] - 2
    for g in range(last + 1):
        for e in range(group_ptr[g] + first, group_ptr[g + 1], stride):
            _edge_on_2d(e, emb, moves, heads, tails, epochs_per_sample, next_sample,
                        epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma,
                        alpha)
        grid.sync()
        for i in range(first, emb.shape[0], stride):
            _apply_moves(i, emb, moves)
            flag_nonfinite_row(emb, i, flag)
        if g < last:
            grid.sync()


@cuda.jit(fastmath=True, cache=True)
def _sgd_epoch_nd(emb, moves, heads, tails, group_ptr, epochs_per_sample, next_sample,
                  epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha,
                  flag):
    """:func:`_sgd_epoch_2d` in any dimension."""
    grid = cuda.cg.this_grid()
    first, stride = cuda.grid(1), cuda.gridsize(1)
    last = group_ptr.shape[0] - 2
    for g in range(last + 1):
        for e in range(group_ptr[g] + first, group_ptr[g + 1], stride):
            _edge_on_nd(e, emb, moves, heads, tails, epochs_per_sample, next_sample,
                        epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma,
                        alpha)
        grid.sync()
        for i in range(first, emb.shape[0], stride):
            _apply_moves(i, emb, moves)
            flag_nonfinite_row(emb, i, flag)
        if g < last:
            grid.sync()


def device_bytes(n: int, dim: int, n_edges: int, n_groups: int) -> int:
    """Device memory of :func:`umap_sgd_fit_cuda`: the embedding (float32) and its moves
    (int64), the edges' ends and schedules, the group offsets."""
    return (4 + 8) * n * dim + n_edges * (2 * 4 + 4 * 8) + 8 * (n_groups + 1) + 8


def umap_sgd_fit_cuda(emb: np.ndarray, edges: tuple, schedule: tuple, n_epochs: int, a, b,
                      gamma, seed: np.uint64, alphas: list, guard: Any = None,
                      relabel: np.ndarray | None = None, callback: Any = None) -> np.ndarray:
    """The epochs of :func:`unimap.optimizers.umap_sgd.fit.umap_sgd_fit` on the GPU.

    ``edges`` = (heads, tails, group_ptr) and ``schedule`` = (epochs_per_sample, next_sample,
    epochs_per_negative, next_negative) are the grouped epoch's arrays
    (:func:`unimap.optimizers.umap_sgd.common.grouped_sampling_plan`); ``a``, ``b``, ``gamma``
    float32;
    ``alphas`` each epoch's float32 step. Returns the
    embedding on the host (float32); ``callback(epoch, embedding)`` gets a host copy.
    """
    n, dim = emb.shape
    heads, tails, group_ptr = edges
    check_device_memory(device_bytes(n, dim, heads.shape[0], group_ptr.shape[0] - 1),
                        "UMAP's epochs on the GPU")
    d_emb, d_moves, d_heads, d_tails, d_group_ptr = to_device(
        emb, np.zeros(emb.shape, np.int64), heads, tails, group_ptr)
    d_schedule = to_device(*schedule)  # the next_* arrays advance on the device
    device_guard = DeviceGuard(guard)
    kernel = _sgd_epoch_2d if dim == 2 else _sgd_epoch_nd
    seed_hash = np.uint64(mix64(np.uint64(seed)))  # numba returns a uint64 as a Python int
    arrays = (d_emb, d_moves, d_heads, d_tails, d_group_ptr, *d_schedule, seed_hash)
    launch = None
    for epoch in range(n_epochs):
        args = (*arrays, np.int64(epoch), a, b, gamma, alphas[epoch], device_guard.flag)
        if launch is None:  # one compile (or cache load) and occupancy query per fit
            launch = cooperative_launcher(kernel, heads.shape[0], *args)
        launch(*args)
        device_guard.check_flagged(epoch, d_emb, relabel)
        if callback is not None:
            callback(epoch, d_emb.copy_to_host())
    device_guard.close()
    return d_emb.copy_to_host()


@cuda.jit(fastmath=True, cache=True)
def _place_rows(head, tail, indptr, indices, epochs_per_sample, next_sample,
                epochs_per_negative, next_negative, row_keys, seed_hash, alphas, a, b, gamma):
    """Every epoch of new point ``i = cuda.grid(1)`` (its row of ``head``)."""
    i = cuda.grid(1)
    if i < head.shape[0]:
        row_hash = np.uint64(_hash_combine(seed_hash, row_keys[i]))  # the simulator: an int
        for epoch in range(alphas.shape[0]):
            _place_row(i, head, tail, indptr, indices, epochs_per_sample, next_sample,
                       epochs_per_negative, next_negative, row_hash, epoch, a, b, gamma,
                       alphas[epoch])


def rows_device_bytes(m: int, n: int, dim: int, n_edges: int) -> int:
    """Device memory of :func:`umap_sgd_place_cuda`: the new and the training positions, the
    rows' offsets, keys and edges, the edges' schedules."""
    return 4 * (m + n) * dim + 8 * (m + 1) + 8 * m + n_edges * (4 + 4 * 8) + 8


def umap_sgd_place_cuda(head: np.ndarray, tail: np.ndarray, rows: tuple, schedule: tuple, a,
                        b, gamma, seed: np.uint64, alphas: list, row_keys: np.ndarray,
                        guard: Any = None) -> np.ndarray:
    """The epochs of :func:`unimap.optimizers.umap_sgd.place.umap_sgd_place` on the GPU, in
    one launch: ``head`` (m, dim) float32, the new points' start, moved against the fixed
    ``tail`` (n, dim) along ``rows`` = (indptr, indices); ``schedule`` and the rest as in
    :func:`umap_sgd_fit_cuda`; ``row_keys`` (m,) uint64. The same row code as the CPU's, so the
    same placement up to the GPU's rounding, and bitwise the same run after run; a point's
    result does not depend on its batch. ``guard`` checks the result once, after the last
    epoch (no epoch ends on the host). Returns the placed points on the host (float32).
    """
    m, dim = head.shape
    if m == 0:
        return head.copy()
    indptr, indices = rows
    check_device_memory(rows_device_bytes(m, tail.shape[0], dim, indices.shape[0]),
                        "transform on the GPU")
    d_head, d_tail, d_indptr, d_indices, d_keys = to_device(
        head, np.ascontiguousarray(tail, dtype=np.float32), indptr, indices,
        np.ascontiguousarray(row_keys, dtype=np.uint64))
    d_schedule = to_device(*schedule)
    d_alphas = cuda.to_device(np.asarray(alphas, dtype=np.float32))
    seed_hash = np.uint64(mix64(np.uint64(seed)))
    blocks, threads = rows_launch(m)
    _place_rows[blocks, threads](d_head, d_tail, d_indptr, d_indices, *d_schedule, d_keys,
                                 seed_hash, d_alphas, a, b, gamma)
    device_guard = DeviceGuard(guard)
    device_guard.check(len(alphas) - 1, d_head)
    device_guard.close()
    return d_head.copy_to_host()
