"""One epoch of UMAP's edge-sampled SGD, parallel over rows and deterministic for any thread count.

umap-learn moves both ends of an edge in place while other threads read and write the same
points, so its threaded runs are not reproducible. Here each row (head point) is owned by one
thread: it starts from the epoch's snapshot ``head_old[i]``, applies its sampled attractions and
negative samples sequentially to its own position (so the moves stay self-limiting, as in the
sequential algorithm), reads every other point from the snapshot, and writes ``head_new[i]``.
The graph is symmetric, so edge (j, i) moves j as edge (i, j) moves i: applying the attraction
``n_attract=2`` times per sample reproduces umap-learn's ``move_other`` balance of two
attractions per neighbour per sampling period against the negative samples of one.
Negative samples come from a counter-based hash of (seed, row key, edge, epoch, sample).
"""

from __future__ import annotations

import numba
import numpy as np

from unimap._kernels.rng import bounded, hash_combine, mix64

CLIP = 4.0


@numba.njit(inline="always", cache=True)
def _clip(x):
    if x > CLIP:
        return CLIP
    if x < -CLIP:
        return -CLIP
    return x


@numba.njit(parallel=True, cache=True, fastmath=True)
def sgd_epoch(head_old, head_new, tail, indptr, indices, epochs_per_sample, next_sample,
              epochs_per_negative, next_negative, row_keys, seed, epoch, a, b, gamma, alpha,
              n_attract, tail_is_head):
    """Run epoch ``epoch`` for every row; see the module docstring.

    ``head_old``/``head_new``: (n_rows, dim) float32 snapshot and output; ``tail``: the points
    edges and negative samples point to (``head_old`` itself when fitting, the fixed training
    embedding when transforming). ``next_sample``/``next_negative`` are per-edge schedules
    (float64), updated in place by the thread owning the row.
    """
    n_rows = indptr.shape[0] - 1
    dim = head_old.shape[1]
    n_tail = tail.shape[0]
    seed_hash = mix64(np.uint64(seed))
    for i in numba.prange(n_rows):
        y = head_new[i]
        for d in range(dim):
            y[d] = head_old[i, d]
        row_hash = hash_combine(seed_hash, row_keys[i])
        for e in range(indptr[i], indptr[i + 1]):
            if next_sample[e] > epoch:
                continue
            j = indices[e]
            other = tail[j]
            for _ in range(n_attract):
                d2 = np.float32(0.0)
                for d in range(dim):
                    diff = y[d] - other[d]
                    d2 += diff * diff
                if d2 > 0.0:
                    pb = d2**b
                    coeff = (-2.0 * a * b * pb / d2) / (a * pb + 1.0)
                    for d in range(dim):
                        y[d] += _clip(coeff * (y[d] - other[d])) * alpha
            next_sample[e] += epochs_per_sample[e]

            n_neg = int((epoch - next_negative[e]) / epochs_per_negative[e])
            edge_hash = hash_combine(hash_combine(row_hash, e - indptr[i]), epoch)
            for s in range(n_neg):
                k = bounded(hash_combine(edge_hash, s), n_tail)
                if tail_is_head and k == i:
                    continue
                other = tail[k]
                d2 = np.float32(0.0)
                for d in range(dim):
                    diff = y[d] - other[d]
                    d2 += diff * diff
                if d2 > 0.0:
                    coeff = 2.0 * gamma * b / ((0.001 + d2) * (a * d2**b + 1.0))
                    for d in range(dim):
                        y[d] += _clip(coeff * (y[d] - other[d])) * alpha
            next_negative[e] += n_neg * epochs_per_negative[e]
