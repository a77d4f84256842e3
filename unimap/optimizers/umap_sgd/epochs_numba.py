"""UMAP's edge-sampled SGD epochs: threaded, and deterministic for any thread count.

umap-learn's threaded SGD moves both ends of an edge in place while other threads read and
write the same points, so its threaded runs are not reproducible (it forces one thread when
seeded). Two kernels here avoid any shared write:

``sgd_epoch_edges_2d`` and ``sgd_epoch_edges_nd`` (fit): the directed edges are split by a
greedy edge colouring into classes in which no two edges share a point. Classes run one after
the other, edges of a class in parallel; each sampled edge moves both ends (umap-learn's
``move_other``) and its head takes the negative samples. A class that runs in parallel reads
them from the epoch's start ``snapshot`` (other threads write while they are read); a class
below ``SERIAL_CLASS_SIZE`` edges runs on one thread and reads live positions, as umap-learn's
serial SGD does. The stale snapshot spreads classes apart (on supervised digits, same graph and
start, the nearest other class centroid lay farther than with live reads and umap-learn's),
and held-out points then needed more epochs to reach a class (measured:
``benchmarks/results/sgd_geometry.md``; benchmarks/results/library_notes.md,
"unimap/optimizers/umap_sgd/epochs_numba.py"). Which classes run serially depends on their
sizes, not on the thread count, and every point is written by one thread at a time in a fixed
order, so the result does not depend on the thread count.
(Moving only the head of each edge, row by row, is simpler but measurably worse: on digits,
clusters fragment; measured: library_notes.md as above.)

``sgd_epoch_rows`` (transform): the tail embedding is fixed, so each new point (row) is
independent; rows run in parallel.

Negative samples come from a counter-based hash of (seed, edge key, epoch, sample index). The
gradient coefficients are :mod:`unimap.lowdim.similarity_numba`'s (UMAP's SGD's evaluation order).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from unimap.lowdim.similarity_numba import sgd_attraction_coeff, sgd_repulsion_coeff
from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.dynamic_numba import claim
from unimap.runtime.rng_numba import bounded, fill_pool, hash_combine, mix64

CLIP = 4.0


class EdgeClasses(NamedTuple):
    """A fit's directed edges sorted into colour classes: heads, tails (int32) and the
    classes' bounds (int64; class ``c`` is ``[class_ptr[c], class_ptr[c + 1])``). The epoch
    kernels read their argument groups by name, so one passed in another's place does not
    compile."""

    heads: np.ndarray
    tails: np.ndarray
    class_ptr: np.ndarray


class EdgeRows(NamedTuple):
    """``transform``'s edges as CSR rows: new point ``i`` has edges ``indptr[i]:indptr[i+1]``
    to the training points ``indices``."""

    indptr: np.ndarray
    indices: np.ndarray


class Schedule(NamedTuple):
    """Each edge's sampling period and next epoch, for the edge and for its negative samples
    (float64)."""

    epochs_per_sample: np.ndarray
    next_sample: np.ndarray
    epochs_per_negative: np.ndarray
    next_negative: np.ndarray


class SGDKernel(NamedTuple):
    """The low-dimensional kernel's a, b and the repulsion strength γ (float32)."""

    a: np.float32
    b: np.float32
    gamma: np.float32
SERIAL_CLASS_SIZE = 2048  # edge classes smaller than this run without waking the threads
EDGE_BLOCK = 512  # edges per block that a worker claims (unimap.runtime.dynamic_numba)


@numba.njit(cache=True)
def sampling_periods(weights, n_epochs, max_weight):
    """Epochs between two samples of each edge, ``n_epochs / (n_epochs · w / max_weight)``
    (umap-learn's expression, evaluated in the same order), or -1 where that is not
    positive. One pass: the numpy form's temporaries cost seconds at a large fit, most of it
    the host's zeroing of fresh pages (measured: ``benchmarks/results/scale_umap.md``)."""
    out = np.empty(weights.shape[0], dtype=np.float64)
    for e in range(weights.shape[0]):
        n_samples = n_epochs * (weights[e] / max_weight)
        out[e] = n_epochs / n_samples if n_samples > 0 else -1.0
    return out


@numba.njit(inline="always", cache=True)
def clip_grad(x):
    # Branch-free: a mispredicted clip branch was a large share of the SGD's time, and
    # numba's min/max with float32 bounds ran slower than with these float64 bounds
    # (measured: benchmarks/results/library_notes.md, "unimap/optimizers/umap_sgd/epochs_numba.py").
    return min(max(x, -CLIP), CLIP)


@numba.njit(inline="always", cache=True)
def clip_rare(x):
    """Clip for values that rarely exceed the bound (attraction): a well-predicted branch
    is cheaper than the float64 round trip of :func:`clip_grad` (measured: library_notes.md as
    in the module docstring)."""
    if x > CLIP:
        return np.float32(CLIP)
    if x < -CLIP:
        return np.float32(-CLIP)
    return x


@numba.njit(inline="always", cache=True)
def draw_negative(key, s, n_draw, self_index, skip):
    """Row of the ``s``-th negative sample: uniform over the pool without ``self_index``
    (when ``skip``): drawn from n_pool - 1 rows, stepping over it arithmetically."""
    k = bounded(hash_combine(key, s), n_draw)
    return k + np.int64(skip and k >= self_index)


@numba.njit(inline="always", cache=True)
def negatives_2d(y, self_index, pool, n_neg, key, a, b, gamma, alpha):
    """Push ``y`` (2-D) away from ``n_neg`` rows of ``pool`` drawn uniformly among all but
    ``self_index`` (all rows when it is negative).

    The samples' forces are all computed from ``y``'s position before them and applied
    together: this breaks the serial dependency from one sample to the next (faster; measured:
    library_notes.md as in the module docstring) and changes each step by far less than the
    sampling noise.
    """
    skip = self_index >= 0
    n_draw = pool.shape[0] - np.int64(skip)
    y0, y1 = y[0], y[1]
    g0 = np.float32(0.0)
    g1 = np.float32(0.0)
    for s in range(n_neg):
        k = draw_negative(key, s, n_draw, self_index, skip)
        dx = y0 - pool[k, 0]
        dy = y1 - pool[k, 1]
        # No test for d2 = 0: the coefficient stays finite (ε in its denominator) and
        # multiplies a zero difference.
        coeff = sgd_repulsion_coeff(dx * dx + dy * dy, a, b, gamma)
        g0 += clip_grad(coeff * dx)
        g1 += clip_grad(coeff * dy)
    y[0] = y0 + g0 * alpha
    y[1] = y1 + g1 * alpha


@numba.njit(inline="always", cache=True)
def negatives_nd(emb, row, self_index, pool, n_neg, key, a, b, gamma, alpha):
    """As :func:`negatives_2d` for ``y = emb[row]`` in any dimension, the samples applied
    one after the other (as umap-learn does)."""
    y = emb[row]
    skip = self_index >= 0
    n_draw = pool.shape[0] - np.int64(skip)
    for s in range(n_neg):
        k = draw_negative(key, s, n_draw, self_index, skip)
        other = pool[k]
        coeff = sgd_repulsion_coeff(sq_dist(emb, row, pool, k, np.float32(0.0)), a, b, gamma)
        for d in range(y.shape[0]):
            y[d] += clip_grad(coeff * (y[d] - other[d])) * alpha


@numba.njit(inline="always", cache=True)
def _attract_edge(e, emb, heads, tails, epochs_per_sample, next_sample, epochs_per_negative,
                  next_negative, seed_hash, epoch, a, b, alpha):
    """Edge ``e``'s attraction if it is due this epoch (both ends move), and its schedule.

    Returns ``(head, n_neg, key)``: the negative samples the head takes and their stream;
    ``n_neg = -1`` when the edge is not due.
    """
    if next_sample[e] > epoch:
        return np.int64(-1), np.int64(-1), np.uint64(0)
    i = heads[e]
    j = tails[e]
    current = emb[i]
    other = emb[j]
    coeff = sgd_attraction_coeff(sq_dist(emb, i, emb, j, np.float32(0.0)), a, b)
    for d in range(current.shape[0]):
        g = clip_rare(coeff * (current[d] - other[d])) * alpha
        current[d] += g
        other[d] -= g
    return advance_schedule(e, i, epochs_per_sample, next_sample, epochs_per_negative,
                            next_negative, seed_hash, epoch)


@numba.njit(inline="always", cache=True)
def advance_schedule(e, head, epochs_per_sample, next_sample, epochs_per_negative,
                     next_negative, seed_hash, epoch):
    """After edge ``e`` was sampled: its next epoch, the negative samples its ``head`` takes
    now and their stream, ``(head, n_neg, key)`` (shared by densMAP's attraction)."""
    next_sample[e] += epochs_per_sample[e]
    n_neg = np.int64((epoch - next_negative[e]) / epochs_per_negative[e])
    next_negative[e] += n_neg * epochs_per_negative[e]
    return np.int64(head), n_neg, hash_combine(hash_combine(seed_hash, e), epoch)


@numba.njit(inline="always", cache=True)
def edge_2d(e, emb, snapshot, heads, tails, epochs_per_sample, next_sample,
             epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha):
    i, n_neg, key = _attract_edge(e, emb, heads, tails, epochs_per_sample, next_sample,
                                  epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                                  alpha)
    if n_neg >= 0:
        negatives_2d(emb[i], i, snapshot, n_neg, key, a, b, gamma, alpha)


@numba.njit(inline="always", cache=True)
def _edge_2d_pooled(e, emb, pool, heads, tails, epochs_per_sample, next_sample,
                    epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha):
    """:func:`edge_2d` with the negative samples drawn from ``pool`` (see
    :func:`_pooled_block`), uniformly over all its rows. A pool row may be the head itself (1
    draw in n, n >= 50,000): its position at the epoch's start, near its current one, then
    pushes it once, clipped, as any point that close would (the per-sample path skips the
    head by its index, which a pool row does not carry)."""
    i, n_neg, key = _attract_edge(e, emb, heads, tails, epochs_per_sample, next_sample,
                                  epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                                  alpha)
    if n_neg >= 0:
        negatives_2d(emb[i], np.int64(-1), pool, n_neg, key, a, b, gamma, alpha)


@numba.njit(inline="always", cache=True)
def _pooled_block(first, stop, pool, emb, snapshot, heads, tails, epochs_per_sample,
                  next_sample, epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                  gamma, alpha):
    """The edges ``first .. stop - 1`` (at most one block), their negatives from one pool of
    positions at the epoch's start, uniform over all n points."""
    # keyed by the epoch, then the block's first edge position (negative in the key)
    fill_pool(snapshot, pool, hash_combine(seed_hash, epoch), first)
    for e in range(first, stop):
        _edge_2d_pooled(e, emb, pool, heads, tails, epochs_per_sample, next_sample,
                        epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma,
                        alpha)


@numba.njit(inline="always", cache=True)
def edge_nd(e, emb, snapshot, heads, tails, epochs_per_sample, next_sample,
             epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha):
    i, n_neg, key = _attract_edge(e, emb, heads, tails, epochs_per_sample, next_sample,
                                  epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                                  alpha)
    if n_neg >= 0:
        negatives_nd(emb, i, i, snapshot, n_neg, key, a, b, gamma, alpha)


# The fit epoch exists twice, for 2-D and for other dimensions, so that a run compiles only
# the path it uses: one kernel with both paths took longer to compile (measured:
# library_notes.md as in the module docstring).
# (One kernel taking the per-edge function as an argument would compile per function too,
# but numba's disk cache never hits for such a signature: every run would recompile.)
@numba.njit(parallel=True, cache=True, fastmath=True)
def sgd_epoch_edges_2d(emb, snapshot, edges, schedule, kernel, seed, epoch, alpha, n_workers):
    """One fit epoch over the colour classes of ``edges`` (:class:`EdgeClasses`), with the
    sampling ``schedule`` (:class:`Schedule`, updated in place) and ``kernel``
    (:class:`SGDKernel`); ``alpha`` is the epoch's step.

    ``emb`` (n, 2) float32 is updated in place; ``snapshot`` is its copy from the start of
    the epoch, the pool of negative samples. ``n_workers`` threads claim blocks of a class's
    edges (:mod:`unimap.runtime.dynamic_numba`).
    """
    heads, tails, class_ptr = edges.heads, edges.tails, edges.class_ptr
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = kernel.a, kernel.b, kernel.gamma
    seed_hash = mix64(np.uint64(seed))
    for c in range(class_ptr.shape[0] - 1):
        start, stop = class_ptr[c], class_ptr[c + 1]
        if stop - start < SERIAL_CLASS_SIZE:  # one thread: negatives from live positions
            for e in range(start, stop):
                edge_2d(e, emb, emb, heads, tails, epochs_per_sample, next_sample,
                         epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma,
                         alpha)
        else:
            n_blocks = (stop - start + EDGE_BLOCK - 1) // EDGE_BLOCK
            next_block = np.zeros(1, np.int64)
            for _worker in numba.prange(n_workers):
                block = claim(next_block)
                while block < n_blocks:
                    first = start + block * EDGE_BLOCK
                    for e in range(first, min(stop, first + EDGE_BLOCK)):
                        edge_2d(e, emb, snapshot, heads, tails, epochs_per_sample,
                                 next_sample, epochs_per_negative, next_negative, seed_hash,
                                 epoch, a, b, gamma, alpha)
                    block = claim(next_block)


# Its own kernel, not a flag of the one above, so that a fit compiles only the path it runs
# (both paths in one kernel took nearly twice as long to compile; measured: as above).
@numba.njit(parallel=True, cache=True, fastmath=True)
def sgd_epoch_edges_2d_pooled(emb, snapshot, edges, schedule, kernel, seed, epoch, alpha,
                              n_workers, n_pool):
    """:func:`sgd_epoch_edges_2d` with pooled negative samples: each block of ``EDGE_BLOCK``
    edges (counted from its class's start, in every class, so the blocks do not depend on
    the thread count) draws its negative samples from a pool of ``n_pool`` points of
    ``snapshot`` (:func:`unimap.runtime.rng_numba.fill_pool`) instead of from all of it.
    """
    heads, tails, class_ptr = edges.heads, edges.tails, edges.class_ptr
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = kernel.a, kernel.b, kernel.gamma
    seed_hash = mix64(np.uint64(seed))
    serial_pool = np.empty((n_pool, 2), np.float32)
    for c in range(class_ptr.shape[0] - 1):
        start, stop = class_ptr[c], class_ptr[c + 1]
        n_blocks = (stop - start + EDGE_BLOCK - 1) // EDGE_BLOCK
        if stop - start < SERIAL_CLASS_SIZE:
            for block in range(n_blocks):  # the same blocks and pools as threads would take
                first = start + block * EDGE_BLOCK
                _pooled_block(first, min(stop, first + EDGE_BLOCK), serial_pool, emb,
                              snapshot, heads, tails, epochs_per_sample, next_sample,
                              epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                              gamma, alpha)
        else:
            next_block = np.zeros(1, np.int64)
            for _worker in numba.prange(n_workers):
                pool = np.empty((n_pool, 2), np.float32)
                block = claim(next_block)
                while block < n_blocks:
                    first = start + block * EDGE_BLOCK
                    _pooled_block(first, min(stop, first + EDGE_BLOCK), pool, emb, snapshot,
                                  heads, tails, epochs_per_sample, next_sample,
                                  epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                                  gamma, alpha)
                    block = claim(next_block)


@numba.njit(parallel=True, cache=True, fastmath=True)
def sgd_epoch_edges_nd(emb, snapshot, edges, schedule, kernel, seed, epoch, alpha, n_workers):
    """:func:`sgd_epoch_edges_2d` for an embedding of any dimension."""
    heads, tails, class_ptr = edges.heads, edges.tails, edges.class_ptr
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = kernel.a, kernel.b, kernel.gamma
    seed_hash = mix64(np.uint64(seed))
    for c in range(class_ptr.shape[0] - 1):
        start, stop = class_ptr[c], class_ptr[c + 1]
        if stop - start < SERIAL_CLASS_SIZE:  # one thread: negatives from live positions
            for e in range(start, stop):
                edge_nd(e, emb, emb, heads, tails, epochs_per_sample, next_sample,
                         epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma,
                         alpha)
        else:
            n_blocks = (stop - start + EDGE_BLOCK - 1) // EDGE_BLOCK
            next_block = np.zeros(1, np.int64)
            for _worker in numba.prange(n_workers):
                block = claim(next_block)
                while block < n_blocks:
                    first = start + block * EDGE_BLOCK
                    for e in range(first, min(stop, first + EDGE_BLOCK)):
                        edge_nd(e, emb, snapshot, heads, tails, epochs_per_sample,
                                 next_sample, epochs_per_negative, next_negative, seed_hash,
                                 epoch, a, b, gamma, alpha)
                    block = claim(next_block)


@numba.njit(parallel=True, cache=True, fastmath=True)
def sgd_epoch_rows(head, tail, rows, schedule, kernel, row_keys, seed, epoch, alpha):
    """One transform epoch: move each row of ``head`` against the fixed ``tail`` embedding
    along ``rows`` (:class:`EdgeRows`), with ``schedule`` and ``kernel`` as in
    :func:`sgd_epoch_edges_2d`.

    ``row_keys`` identify rows in the random stream independently of their batch position.
    """
    indptr, indices = rows.indptr, rows.indices
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = kernel.a, kernel.b, kernel.gamma
    seed_hash = mix64(np.uint64(seed))
    for i in numba.prange(indptr.shape[0] - 1):
        place_row(i, head, tail, indptr, indices, epochs_per_sample, next_sample,
                  epochs_per_negative, next_negative, hash_combine(seed_hash, row_keys[i]),
                  epoch, a, b, gamma, alpha)


@numba.njit(inline="always", cache=True)
def place_row(i, head, tail, indptr, indices, epochs_per_sample, next_sample,
              epochs_per_negative, next_negative, row_hash, epoch, a, b, gamma, alpha):
    """One epoch of new point ``i`` (row ``i`` of ``head``) against the fixed ``tail``: its
    due edges ``indptr[i]:indptr[i + 1]`` and their negative samples, drawn from the stream
    ``row_hash`` (the row's key, so that a point's draws do not depend on its batch). Shared
    by the CPU's :func:`sgd_epoch_rows` and the GPU's rows kernel
    (:mod:`unimap.optimizers.umap_sgd.epochs_cuda`)."""
    y = head[i]
    for e in range(indptr[i], indptr[i + 1]):
        if next_sample[e] > epoch:
            continue
        j = indices[e]
        other = tail[j]
        coeff = sgd_attraction_coeff(sq_dist(head, i, tail, j, np.float32(0.0)), a, b)
        for d in range(y.shape[0]):
            y[d] += clip_grad(coeff * (y[d] - other[d])) * alpha
        next_sample[e] += epochs_per_sample[e]
        n_neg = int((epoch - next_negative[e]) / epochs_per_negative[e])
        key = hash_combine(hash_combine(row_hash, e - indptr[i]), epoch)
        if y.shape[0] == 2:
            negatives_2d(y, -1, tail, n_neg, key, a, b, gamma, alpha)
        else:
            negatives_nd(head, i, -1, tail, n_neg, key, a, b, gamma, alpha)
        next_negative[e] += n_neg * epochs_per_negative[e]
