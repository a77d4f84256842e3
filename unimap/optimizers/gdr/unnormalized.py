"""GDR's unnormalized (UMAP-like) optimizer: full-batch epochs of UMAP's forces over P's edges.

``gdr_unnormalized`` is the entry point a method calls: it lays the points out for memory
(large inputs relabelled along a Z-order curve of their start, so that a row's neighbours lie
close in memory, with pooled negative samples: :mod:`unimap.optimizers.sampling`), builds the
CSR arrays, and runs the epochs on the device the fit planned: the CPU's numba kernels
(:mod:`unimap.optimizers.gdr.unnormalized_numba`, 2-D several epochs per parallel region in
:mod:`unimap.optimizers.gdr.chunked_epochs_numba`) or the GPU's
(:mod:`unimap.optimizers.gdr.unnormalized_cuda`, the same row code). The losses and gradients are
written out in :mod:`unimap.optimizers.gdr`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.optimizers import sampling
from unimap.optimizers.schedule import linear_decay
from unimap.runtime.ordering import in_input_order, locality_order
from unimap.runtime.threads import adaptive_threads, epoch_threads, numba_threads, spread_threads

__all__ = ["gdr_unnormalized", "gdr_unnormalized_memory", "unnormalized_full_batch",
           "relabels_for_locality", "FULL_BATCH_CLIP", "EPOCH_CHUNK"]

BYTES_PER_EDGE = 16
"""P's CSR arrays as int64/int32/float32, bytes per kNN edge (measured:
benchmarks/results/fit_memory.md)."""
RELABELLED_BYTES_PER_EDGE = 24
"""The relabelled copy of P and its scipy temporaries, above :data:`BYTES_PER_EDGE`."""


def gdr_unnormalized_memory(n_samples: int, n_edges: int, n_components: int) -> int:
    """Bytes :func:`gdr_unnormalized` allocates for a fit of ``n_samples`` points,
    ``n_edges`` kNN edges (n × k) and ``n_components`` dimensions: P's arrays, float32
    positions, velocity and per-thread forces, and the relabelled P where the fit is
    relabelled (:func:`relabels_for_locality`)."""
    arrays = n_edges * BYTES_PER_EDGE + n_samples * n_components * 4 * 8
    if relabels_for_locality(n_samples):
        arrays += n_edges * RELABELLED_BYTES_PER_EDGE
    return arrays


def relabels_for_locality(n_rows: int) -> bool:
    """Whether a fit of ``n_rows`` points is relabelled along a Z-order curve (and pools its
    2-D negatives): from the row count where pooling pays, since both serve the cache."""
    return n_rows >= sampling.POOLED_NEGATIVES_MIN_ROWS


def gdr_unnormalized(init: np.ndarray, P: sp.csr_matrix, *, symmetric_attraction: bool,
                     directed: bool, n_epochs: int, a: float, b: float, seed: int,
                     learning_rate: float, momentum: float, n_negatives: float,
                     repulsion_weight: float, guard: Any = None,
                     device: str = "cpu") -> np.ndarray:
    """Optimize ``init`` (n, dim) over the affinities ``P`` (n, n); returns the embedding in
    the input's row order, float32.

    Below :data:`unimap.optimizers.sampling.POOLED_NEGATIVES_MIN_ROWS` points the labels stay
    as given and every sample reads its own point (the negatives are keyed by row and edge
    position, which a relabelling changes). ``directed``: P is not symmetric (its transpose is
    then built for symmetric attraction). Other arguments: :func:`unnormalized_full_batch`.
    """
    from unimap.optimizers.gdr.forces import gdr_edge_arrays

    order = None
    if relabels_for_locality(init.shape[0]):
        order = locality_order(init)
        init = init[order]
    edges, transposed, scale = gdr_edge_arrays(P, symmetric_attraction, directed, order)
    Y = unnormalized_full_batch(init, edges, transposed, scale, n_epochs, a, b, seed, learning_rate,
                                momentum, n_negatives, repulsion_weight, guard=guard, row_ids=order,
                                device=device,
                                negative_pool=0 if order is None else sampling.NEGATIVE_POOL)
    return Y if order is None else in_input_order(Y, order)


FULL_BATCH_CLIP = 4.0  # per-coordinate clip of a point's summed force (UMAP's clip)


def unnormalized_full_batch(
    init: np.ndarray,
    edges: tuple,
    transposed: tuple,
    attraction_scale: float,
    n_epochs: int,
    a: float,
    b: float,
    seed: int,
    learning_rate: float,
    momentum: float,
    n_negatives: float,
    repulsion_weight: float,
    guard: Any = None,
    row_ids: np.ndarray | None = None,
    device: str = "cpu",
    negative_pool: int = 0,
) -> np.ndarray:
    """GDR's unnormalized optimizer: full-batch epochs of UMAP's forces over the CSR edges.

    Every point sums its attractions and ``n_negatives`` uniform negative samples per edge,
    each of weight ``repulsion_weight``, from the epoch's positions; the clipped sum moves it
    by a heavy-ball step of size ``learning_rate``, decayed linearly to 0
    (:func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch`). ``edges``,
    ``transposed`` and ``attraction_scale`` are
    :func:`unimap.optimizers.gdr.forces.gdr_edge_arrays`'s. ``row_ids[r]`` is the input row of row
    ``r`` when the points were relabelled (named in a guard's error). ``device="cuda"`` runs the
    epochs on the GPU (:mod:`unimap.optimizers.gdr.unnormalized_cuda`, the same row code).
    ``negative_pool`` > 0 draws 2-D negatives from per-block pools of that many points (CPU only;
    :func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch`).

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components), float32
    """
    from unimap.lowdim.similarity_numba import UMAP_EPS
    from unimap.optimizers.gdr.common_numba import CSR, HeavyBall, TransposedCSR, UnnormalizedForces
    from unimap.optimizers.gdr.unnormalized_numba import gdr_unnormalized_epoch

    f32 = np.float32
    rates = linear_decay(learning_rate, n_epochs)
    if device == "cuda":
        from unimap.optimizers.gdr.unnormalized_cuda import unnormalized_full_batch_cuda

        return unnormalized_full_batch_cuda(init, edges, transposed, attraction_scale, n_epochs, a,
                                            b, seed, rates, momentum, n_negatives, repulsion_weight,
                                            FULL_BATCH_CLIP, guard, row_ids)
    edges, transposed = CSR(*edges), TransposedCSR(*transposed)
    forces = UnnormalizedForces(f32(attraction_scale), n_negatives, f32(repulsion_weight), f32(a),
                                f32(b), f32(UMAP_EPS))
    step = HeavyBall(f32(FULL_BATCH_CLIP), f32(momentum))
    if init.shape[1] == 2:  # epoch_buffers copies the start into float32 buffers itself
        return _epochs_2d(init, edges, transposed, forces, step, rates, seed, guard, row_ids,
                          negative_pool)
    Y = np.array(init, dtype=np.float32, order="C")
    Y_next, F, V = np.empty_like(Y), np.empty_like(Y), np.zeros_like(Y)
    threads = adaptive_threads(Y.shape[0])
    with threads.spread():
        for epoch in range(n_epochs):
            threads.start_epoch(epoch)
            gdr_unnormalized_epoch(Y, Y_next, F, V, edges, transposed, forces, step, rates[epoch],
                                   np.uint64(seed), np.int64(epoch), False,
                                   negative_pool=negative_pool)
            threads.end_epoch()
            Y, Y_next = Y_next, Y
            if guard is not None:
                guard.check(epoch, Y, row_ids, **{"the forces": F})
    return Y


# Epochs per call of the 2-D kernel: its threads wait for each other once per call (not once
# per epoch), and the guard checks the embedding after each call.
EPOCH_CHUNK = 10


def _epochs_2d(init: np.ndarray, edges: Any, transposed: Any, forces: Any, step: Any,
               rates: list, seed: int, guard: Any, row_ids: np.ndarray | None,
               negative_pool: int) -> np.ndarray:
    """:func:`unnormalized_full_batch`'s 2-D epochs, ``EPOCH_CHUNK`` at a time in one parallel
    region (:mod:`unimap.optimizers.gdr.chunked_epochs_numba`: an epoch does not wait for a
    descheduled thread). Bitwise the epochs of
    :func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch`."""
    from unimap.optimizers.gdr.chunked_epochs_numba import epoch_buffers, unnormalized_epochs_2d
    from unimap.optimizers.gdr.unnormalized_numba import pooled_sample_weight

    f32 = np.float32
    n, n_epochs = init.shape[0], len(rates)
    n_threads = epoch_threads(n)
    if negative_pool > 0:  # a pool point may be the row's own (gdr_unnormalized_epoch's scaling)
        forces = forces._replace(rep_weight=pooled_sample_weight(forces.rep_weight, n))
    positions, velocities, force_rows = epoch_buffers(init)
    step_sizes = np.asarray(rates, dtype=f32)
    with numba_threads(n_threads), spread_threads(n_threads > 1):
        for start in range(0, n_epochs, EPOCH_CHUNK):
            stop = min(n_epochs, start + EPOCH_CHUNK)
            unnormalized_epochs_2d(positions, force_rows, velocities, edges, transposed, forces,
                                   step, step_sizes[start:stop], np.uint64(seed), np.int64(start),
                                   np.int64(n_threads), np.int64(negative_pool))
            if guard is not None:
                guard.check(stop - 1, positions[stop % 3], row_ids, since=start,
                            **{"the forces": force_rows[(stop - 1) % 3]})
    return positions[n_epochs % 3].copy()
