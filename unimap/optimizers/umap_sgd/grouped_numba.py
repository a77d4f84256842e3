"""UMAP's fit epoch as the GPU runs it: edges in a few groups, each reading the positions at
its start, every point's moves summed in fixed point and applied at the group's end.

The CPU's epoch (:mod:`unimap.optimizers.umap_sgd.epochs_numba`) runs vertex-disjoint colour
classes one after the other, so that no two threads write a point at once. On a GPU that is
one grid-wide barrier per class, and a graph has at least as many classes as its largest
degree (hundreds on MNIST, thousands at a million points): the barriers, not the arithmetic,
set an epoch's time. Here an epoch is ``EPOCH_GROUPS`` groups of edges instead: within a
group every edge reads the group's start positions, adds its attraction to both ends and its
negative samples' repulsion to its head in a buffer of moves (2^-32 fixed point,
:mod:`unimap.runtime.fixed_point_numba`: the sums are exact, so their order does not matter
and the fit is bitwise the same run after run), and the moves are applied when the group
ends. Two barriers per group, whatever the graph.

One group per epoch (all moves from the epoch's start) lost 0.018 of 10-NN accuracy and 0.016
of trustworthiness on MNIST-70k; with 16 groups, each every 16th edge of the head-sorted
list, both are at the CPU's (0.9687 and 0.9473 against 0.9691 and 0.9481; measured:
``benchmarks/results/umap_epoch_sync.md``).

:func:`sgd_epoch_groups` is the serial CPU reference of the GPU's kernel
(:mod:`unimap.optimizers.umap_sgd.epochs_cuda`), which calls the same edge and row functions.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from unimap.lowdim.similarity_numba import sgd_attraction_coeff, sgd_repulsion_coeff
from unimap.optimizers.umap_sgd.epochs_numba import (
    advance_schedule,
    clip_grad,
    clip_rare,
    draw_negative,
)
from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.fixed_point_numba import FIXED_STEP, add_fixed
from unimap.runtime.rng_numba import mix64

__all__ = ["EPOCH_GROUPS", "EdgeGroups", "grouped_edge_2d", "grouped_edge_nd", "apply_moves",
           "sgd_epoch_groups"]

EPOCH_GROUPS = 16


class EdgeGroups(NamedTuple):
    """A fit's directed edges in groups: heads, tails (int32) and the groups' bounds (int64;
    group ``g`` is ``[group_ptr[g], group_ptr[g + 1])``)."""

    heads: np.ndarray
    tails: np.ndarray
    group_ptr: np.ndarray


@numba.njit(inline="always", cache=True)
def grouped_edge_2d(e, emb, moves, heads, tails, epochs_per_sample, next_sample,
                    epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha):
    """Edge ``e``'s moves, if it is due this epoch, added to ``moves`` (n, 2) int64: its
    attraction to both ends, its negative samples' repulsion to its head, all from the
    positions ``emb`` (not written); then its schedule advances. The moves are those of the
    CPU's edge (:func:`unimap.optimizers.umap_sgd.epochs_numba.edge_2d`), from fixed
    positions."""
    if next_sample[e] > epoch:
        return
    i = heads[e]
    j = tails[e]
    dx = emb[i, 0] - emb[j, 0]
    dy = emb[i, 1] - emb[j, 1]
    coeff = sgd_attraction_coeff(dx * dx + dy * dy, a, b)
    g0 = clip_rare(coeff * dx) * alpha
    g1 = clip_rare(coeff * dy) * alpha
    add_fixed(moves, i, 0, g0)
    add_fixed(moves, i, 1, g1)
    add_fixed(moves, j, 0, -g0)
    add_fixed(moves, j, 1, -g1)
    head, n_neg, key = advance_schedule(e, i, epochs_per_sample, next_sample,
                                        epochs_per_negative, next_negative, seed_hash, epoch)
    n_draw = emb.shape[0] - 1
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    for s in range(n_neg):
        k = draw_negative(key, s, n_draw, head, True)
        ex = emb[head, 0] - emb[k, 0]
        ey = emb[head, 1] - emb[k, 1]
        c = sgd_repulsion_coeff(ex * ex + ey * ey, a, b, gamma)
        r0 += clip_grad(c * ex)
        r1 += clip_grad(c * ey)
    add_fixed(moves, head, 0, r0 * alpha)
    add_fixed(moves, head, 1, r1 * alpha)


@numba.njit(inline="always", cache=True)
def grouped_edge_nd(e, emb, moves, heads, tails, epochs_per_sample, next_sample,
                    epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha):
    """:func:`grouped_edge_2d` in any dimension."""
    if next_sample[e] > epoch:
        return
    i = heads[e]
    j = tails[e]
    coeff = sgd_attraction_coeff(sq_dist(emb, i, emb, j, np.float32(0.0)), a, b)
    for d in range(emb.shape[1]):
        g = clip_rare(coeff * (emb[i, d] - emb[j, d])) * alpha
        add_fixed(moves, i, d, g)
        add_fixed(moves, j, d, -g)
    head, n_neg, key = advance_schedule(e, i, epochs_per_sample, next_sample,
                                        epochs_per_negative, next_negative, seed_hash, epoch)
    n_draw = emb.shape[0] - 1
    for s in range(n_neg):
        k = draw_negative(key, s, n_draw, head, True)
        c = sgd_repulsion_coeff(sq_dist(emb, head, emb, k, np.float32(0.0)), a, b, gamma)
        for d in range(emb.shape[1]):
            add_fixed(moves, head, d, clip_grad(c * (emb[head, d] - emb[k, d])) * alpha)


@numba.njit(inline="always", cache=True)
def apply_moves(i, emb, moves):
    """Point ``i``'s summed moves added to its position, and its buffer emptied."""
    for d in range(emb.shape[1]):
        emb[i, d] = emb[i, d] + np.float32(moves[i, d] * FIXED_STEP)
        moves[i, d] = 0


# Without fastmath: the simulator runs the edge functions as compiled on their own (without
# it), and the reference must equal that bitwise (tests/device/test_cuda.py).
@numba.njit(cache=True)
def sgd_epoch_groups(emb, moves, edges, schedule, kernel, seed, epoch, alpha):
    """One fit epoch over the groups of ``edges`` (:class:`EdgeGroups`), serially: the CPU
    reference of the GPU's epoch. ``emb`` (n, dim) float32 is updated in place, ``moves``
    (n, dim) int64 is zero before and after; ``schedule`` (updated) and ``kernel`` are
    :mod:`unimap.optimizers.umap_sgd.epochs_numba`'s ``Schedule`` and ``SGDKernel``."""
    heads, tails, group_ptr = edges.heads, edges.tails, edges.group_ptr
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = kernel.a, kernel.b, kernel.gamma
    seed_hash = mix64(np.uint64(seed))
    for g in range(group_ptr.shape[0] - 1):
        for e in range(group_ptr[g], group_ptr[g + 1]):
            if emb.shape[1] == 2:
                grouped_edge_2d(e, emb, moves, heads, tails, epochs_per_sample, next_sample,
                                epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                                gamma, alpha)
            else:
                grouped_edge_nd(e, emb, moves, heads, tails, epochs_per_sample, next_sample,
                                epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                                gamma, alpha)
        for i in range(emb.shape[0]):
            apply_moves(i, emb, moves)
