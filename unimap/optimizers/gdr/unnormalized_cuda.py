"""GDR's unnormalized epochs on a GPU: one thread per row, the CPU kernels' row code.

Each thread computes its row's forces from the epoch's positions (attraction over its CSR
edges, its counter-based negative samples) and takes its momentum step, exactly as one row of
:func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch`: no thread writes another's
row and no reduction crosses threads, so the same seed gives bitwise the same embedding on the same
GPU run after run (no atomics), and the embedding matches the CPU's up to the GPU's float rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from unimap.lowdim.similarity_numba import UMAP_EPS
from unimap.optimizers.gdr.unnormalized_numba import (
    momentum_step,
    unnormalized_row_2d,
    unnormalized_row_nd,
)
from unimap.runtime.common_cuda import (
    DeviceGuard,
    check_device_memory,
    flag_nonfinite_row,
    on_target,
    rows_launch,
    to_device,
)
from unimap.runtime.rng_numba import hash_combine, mix64

__all__ = ["unnormalized_full_batch_cuda", "device_bytes", "supports"]


def supports(n_components: int) -> bool:
    """Whether these kernels run a fit: any dimension (a 2-D and an n-D row kernel)."""
    return n_components >= 1


# The kernels are written out per dimension (not made by a factory) so that numba-cuda can
# cache them on disk: a closure's code is not cacheable, and a fresh process would compile
# them again. on_target: see unimap.runtime.common_cuda.
_row_2d, _row_nd, _step = (on_target(f) for f in (unnormalized_row_2d, unnormalized_row_nd,
                                                   momentum_step))


@cuda.jit(fastmath=True, cache=True)
def _unnormalized_epoch_2d(Y, Y_out, F, V, indptr, indices, data, t_indptr, t_indices, t_data,
                           use_t, attr_scale, n_negatives, rep_weight, a, b, eps, clip, lr,
                           momentum, epoch_hash, flag):
    """One epoch, thread i computing row i's forces and step (see the module docstring),
    flagging a non-finite force or position (the flag of
    :class:`~unimap.runtime.common_cuda.DeviceGuard`)."""
    i = cuda.grid(1)
    if i < Y.shape[0]:
        _row_2d(Y, F, i, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, False)
        _step(Y, Y_out, F, V, i, clip, lr, momentum)
        flag_nonfinite_row(F, i, flag)
        flag_nonfinite_row(Y_out, i, flag)


@cuda.jit(fastmath=True, cache=True)
def _unnormalized_epoch_nd(Y, Y_out, F, V, indptr, indices, data, t_indptr, t_indices, t_data,
                           use_t, attr_scale, n_negatives, rep_weight, a, b, eps, clip, lr,
                           momentum, epoch_hash, flag):
    """:func:`_unnormalized_epoch_2d` in any dimension."""
    i = cuda.grid(1)
    if i < Y.shape[0]:
        _row_nd(Y, F, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, False)
        _step(Y, Y_out, F, V, i, clip, lr, momentum)
        flag_nonfinite_row(F, i, flag)
        flag_nonfinite_row(Y_out, i, flag)


def device_bytes(n: int, dim: int, nnz: int, transposed_nnz: int) -> int:
    """Device memory of :func:`unnormalized_full_batch_cuda`: Y, Y_out, F, V and the CSR arrays."""
    rows = 2 if transposed_nnz else 1
    return 4 * 4 * n * dim + rows * 8 * (n + 1) + 8 * (nnz + transposed_nnz) + 8


def unnormalized_full_batch_cuda(init: np.ndarray, edges: tuple, transposed: tuple,
                                 attraction_scale: float, n_epochs: int, a: float, b: float,
                                 seed: int, learning_rates: list, momentum: float,
                                 n_negatives: float, repulsion_weight: float, clip: float,
                                 guard: Any = None,
                                 row_ids: np.ndarray | None = None) -> np.ndarray:
    """:func:`unimap.optimizers.gdr.unnormalized.unnormalized_full_batch` on the GPU (same
    arguments; ``learning_rates`` holds each epoch's float32 step size). Returns the embedding on
    the host, float32."""
    f32 = np.float32
    n, dim = init.shape
    check_device_memory(device_bytes(n, dim, edges[1].shape[0], transposed[1].shape[0]),
                        "GDR's epochs on the GPU")
    Y = cuda.to_device(np.ascontiguousarray(init, dtype=np.float32))
    Y_next = cuda.device_array_like(Y)
    F = cuda.device_array_like(Y)
    V = cuda.to_device(np.zeros_like(init, dtype=np.float32))
    csr = to_device(*edges, *transposed)
    use_t = transposed[0].shape[0] == n + 1
    device_guard = DeviceGuard(guard)
    blocks, threads = rows_launch(n)
    kernel = (_unnormalized_epoch_2d if dim == 2 else _unnormalized_epoch_nd)[blocks, threads]
    seed_hash = np.uint64(mix64(np.uint64(seed)))  # numba returns a uint64 as a Python int
    for epoch in range(n_epochs):
        kernel(Y, Y_next, F, V, *csr, use_t, f32(attraction_scale), float(n_negatives),
               f32(repulsion_weight), f32(a), f32(b), f32(UMAP_EPS), f32(clip),
               learning_rates[epoch], f32(momentum),
               np.uint64(hash_combine(seed_hash, np.int64(epoch))), device_guard.flag)
        Y, Y_next = Y_next, Y
        device_guard.check_flagged(epoch, Y, row_ids, **{"the forces": F})
    device_guard.close()
    return Y.copy_to_host()
