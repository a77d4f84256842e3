"""GDR's normalized (t-SNE-like) mode on a GPU, 2-D with shared samples (the default).

An iteration, as :func:`unimap.optimizers.gradient_descent.descent.gradient_descent` with
:class:`unimap.optimizers.gdr.forces.SampledForces` on the CPU:

1. ``_draw_shared``: one thread per shared sample draws its point from the counter-based
   hash and counts the hit (integer atomics: the counts do not depend on their order);
2. ``_shared_forces_2d``: one thread per row sums the kernel over all samples (staged in
   shared memory), then calls the CPU kernel's row function ``normalized_shared_row_2d``, which
   adds the attraction and the exact near field and takes out the samples that hit the point
   or a neighbour; it writes the row's attraction, repulsion and ``z_i``;
3. ``Z = Σ z_i`` and ``γ/Z`` (fixed-order sums on the device: the same every run, read by
   the step kernel on the device), then the gradient
   step (:mod:`unimap.optimizers.gradient_descent.descent_cuda`): one thread per row calling the
   CPU's ``gradient_step_row`` (gains, momentum, clipping);
4. every ``center_every`` iterations the mean is subtracted, on the device.

No float atomics: the same seed gives bitwise the same embedding run after run. The per-row
samples of ``shared_negatives=False`` need a neighbour mark per point and thread, which does
not fit a GPU; that mode (and other dimensions) stays on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda, float32

from unimap.lowdim.similarity_numba import ab_kernel
from unimap.optimizers.gdr.common_numba import shared_sample_count, shared_sample_index
from unimap.optimizers.gdr.normalized_numba import normalized_shared_row_2d
from unimap.optimizers.gradient_descent.descent import iterations
from unimap.optimizers.gradient_descent.descent_cuda import DeviceSums, gradient_step_kernel
from unimap.runtime.common_cuda import (
    DeviceGuard,
    check_device_memory,
    on_target,
    rows_launch,
    to_device,
)
from unimap.runtime.rng_numba import hash_combine, mix64

__all__ = ["gradient_descent_cuda", "device_bytes", "supports"]


def supports(n_components: int, shared_negatives: bool) -> bool:
    """Whether these kernels run a fit: 2-D with shared samples (see the module docstring)."""
    return n_components == 2 and shared_negatives

SAMPLE_TILE = 1024  # shared samples staged in shared memory at a time (8 KiB in 2-D)

_shared_row = on_target(normalized_shared_row_2d)
_ab_kernel, _sample_index = on_target(ab_kernel), on_target(shared_sample_index)


@cuda.jit(cache=True)
def _draw_shared(Y, n_samples, epoch_hash, positions, hits):
    """Sample s: ``k = bounded(hash(hash(epoch_hash, key), s), n)``, its position, its hit
    (as :func:`unimap.optimizers.gdr.common_numba.draw_shared_samples`; ``hits`` zeroed before)."""
    s = cuda.grid(1)
    if s < n_samples:
        k = _sample_index(epoch_hash, s, Y.shape[0])
        positions[0, s] = Y[k, 0]
        positions[1, s] = Y[k, 1]
        cuda.atomic.add(hits, k, 1)


@cuda.jit(fastmath=True, cache=True)
def _shared_forces_2d(Y, A, R, z_rows, indptr, indices, data, t_indptr, t_indices, t_data,
                      use_t, attr_scale, a, b, hits, positions, n_samples, scale, next_hits):
    """Row i's attraction ``A[i]``, repulsion ``R[i]`` and ``z_rows[i]``; ``next_hits[i]``
    zeroed for the next iteration's draws (the hits alternate between two buffers, since
    other rows read row i's hits here: a zeroing launch per iteration saved)."""
    tile = cuda.shared.array((2, SAMPLE_TILE), float32)
    i = cuda.grid(1)
    active = i < Y.shape[0]
    y0 = Y[i, 0] if active else np.float32(0.0)
    y1 = Y[i, 1] if active else np.float32(0.0)
    z = np.float32(0.0)
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    for base in range(0, n_samples, SAMPLE_TILE):
        count = min(SAMPLE_TILE, n_samples - base)
        for t in range(cuda.threadIdx.x, count, cuda.blockDim.x):
            tile[0, t] = positions[0, base + t]
            tile[1, t] = positions[1, base + t]
        cuda.syncthreads()
        if active:
            for t in range(count):  # in sample order, as the CPU's tiles
                d0 = y0 - tile[0, t]
                d1 = y1 - tile[1, t]
                w, g = _ab_kernel(d0 * d0 + d1 * d1, a, b)
                z += w
                coef = w * g
                r0 += coef * d0
                r1 += coef * d1
        cuda.syncthreads()
    if active:
        z_rows[i] = _shared_row(Y, A, R, i, indptr, indices, data, t_indptr, t_indices, t_data,
                                use_t, attr_scale, a, b, hits, z, r0, r1, scale)
        next_hits[i] = 0


def device_bytes(n: int, nnz: int, transposed_nnz: int, max_samples: int) -> int:
    """Y, attraction, repulsion, update, gains (float32, 2-D), z rows (float64), two hit
    counts, the CSR arrays and the samples' positions."""
    rows = 2 if transposed_nnz else 1
    return (5 * 4 * 2 * n + 8 * n + 2 * 4 * n + rows * 8 * (n + 1)
            + 8 * (nnz + transposed_nnz) + 8 * max_samples)


def gradient_descent_cuda(Y: np.ndarray, forces: Any, phases: list, min_gain: float,
                          max_step_norm: float, center_every: int, guard: Any = None,
                          row_ids: np.ndarray | None = None) -> np.ndarray:
    """:func:`unimap.optimizers.gradient_descent.descent.gradient_descent` of a 2-D float32 ``Y``
    under :class:`unimap.optimizers.gdr.forces.SampledForces` with shared samples, on the GPU (no
    gradient clip, as GDR calls it). Sets ``forces.z``; returns the embedding on the host."""
    n = Y.shape[0]
    indptr, indices, data = forces.edges
    nnz = indptr[n]
    n_shared = {m: shared_sample_count(nnz, n, m) for m in (forces.early_negatives,
                                                           forces.negatives)}
    check_device_memory(device_bytes(n, indices.shape[0], forces.transposed[1].shape[0],
                                     max(n_shared.values())), "GDR(normalized=True) on the GPU")
    d_Y = cuda.to_device(np.ascontiguousarray(Y, dtype=np.float32))
    A, R = cuda.device_array_like(d_Y), cuda.device_array_like(d_Y)
    update = cuda.to_device(np.zeros_like(Y, dtype=np.float32))
    gains = cuda.to_device(np.ones_like(Y, dtype=np.float32))
    z_rows = cuda.device_array(n, np.float64)
    hits, next_hits = (cuda.to_device(np.zeros(n, np.int32)) for _ in range(2))
    positions = cuda.device_array((2, max(n_shared.values())), np.float32)
    csr = to_device(*forces.edges, *forces.transposed)
    use_t = forces.transposed[0].shape[0] == n + 1
    device_guard = DeviceGuard(guard)
    blocks, threads = rows_launch(n)
    seed_hash = np.uint64(mix64(np.uint64(forces.seed)))  # a uint64 comes back as a Python int
    sums = DeviceSums(n, 2)
    for iteration, phase, rate, restart in iterations(phases):
        if restart:  # as the CPU's loop: a fresh momentum and gains (one copy each, once)
            update.copy_to_device(np.zeros_like(Y, dtype=np.float32))
            gains.copy_to_device(np.ones_like(Y, dtype=np.float32))
        m = n_shared[forces.negatives_at(iteration)]
        epoch_hash = np.uint64(hash_combine(seed_hash, np.int64(iteration)))
        sample_blocks = (m + threads - 1) // threads
        _draw_shared[sample_blocks, threads](d_Y, m, epoch_hash, positions, hits)
        _shared_forces_2d[blocks, threads](
            d_Y, A, R, z_rows, *csr, use_t, forces.scale, forces.a, forces.b, hits,
            positions, m, np.float32(n / max(m, 1)), next_hits)
        hits, next_hits = next_hits, hits  # zeroed by the forces kernel
        inv_z = sums.inverse_total(z_rows, forces.gamma)  # γ / Z, on the device
        gradient_step_kernel[blocks, threads](d_Y, A, R, inv_z, phase.exaggeration, update,
                                              gains, phase.momentum, rate, min_gain, -1.0,
                                              float(max_step_norm), device_guard.flag)
        device_guard.check_flagged(iteration, d_Y, row_ids, **{
            "the attraction": A, "the repulsion": R, "1/Z": inv_z})
        if iteration % center_every == 0:
            sums.recentre(d_Y)
    device_guard.close()
    forces.inverse_z(float(sums.z.copy_to_host()[0]))  # the last Z, as the CPU leaves it
    return d_Y.copy_to_host()
