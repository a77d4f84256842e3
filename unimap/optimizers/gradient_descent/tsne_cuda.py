"""t-SNE's optimizer on a GPU: the exact gradient in 2-D, every pair, no approximation.

The CPU approximates the repulsion (Barnes-Hut, FFT interpolation) because all n² pairs cost
too much there; a GPU sums them directly, as an N-body code does. An iteration, as
:func:`unimap.optimizers.gradient_descent.descent.gradient_descent` with exact repulsion on the CPU:

1. ``_exact_forces_2d``: one thread per row i; the block stages ``TILE`` positions at a time
   in shared memory and each thread sums, over every j ≠ i in index order, the kernel
   ``w_ij`` (into ``z_i``) and the repulsion ``w_ij t_ij (y_i − y_j)``, each tile in float32
   and the tiles' sums in float64; then the row's attraction over P's row by the CPU's row
   function;
2. ``Z = Σ z_i``, ``1/Z`` and the gradient step
   (:mod:`unimap.optimizers.gradient_descent.descent_cuda`: fixed-order sums on the device,
   nothing to the host);
3. the mean is subtracted every ``center_every`` iterations, on the device.

Each thread sums in a fixed order and nothing is atomic, so the same start gives bitwise the
same embedding run after run. Cost: n² kernel evaluations per iteration (4.9e9 for
MNIST-70k); above ``EXACT_MAX_SAMPLES`` points, and for a kernel other than Cauchy's
(``dof != 1``, whose powers would dominate), the optimizer stays on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import cuda, float32

from unimap.optimizers.gradient_descent.descent import Checkpoints, iterations
from unimap.optimizers.gradient_descent.descent_cuda import DeviceSums, gradient_step_kernel
from unimap.optimizers.gradient_descent.forces import kl_divergence
from unimap.optimizers.gradient_descent.gradient_numba import attraction_row_2d
from unimap.optimizers.gradient_descent.stopping import gradient_norm
from unimap.runtime.common_cuda import DeviceGuard, check_device_memory, on_target, rows_launch

__all__ = ["gradient_descent_cuda", "device_bytes", "supports", "EXACT_MAX_SAMPLES"]

# n² pairs per iteration: 200k points are 4e10 a step, 4e13 a fit of 1,000 iterations
EXACT_MAX_SAMPLES = 200_000
TILE = 1024  # positions staged in shared memory at a time (8 KiB in 2-D)

_attraction_row = on_target(attraction_row_2d)


def supports(n: int, n_components: int, dof: float) -> bool:
    """Whether these kernels run a fit (see the module docstring)."""
    return n_components == 2 and dof == 1.0 and n <= EXACT_MAX_SAMPLES


@cuda.jit(fastmath=True, cache=True)
def _exact_forces_2d(Y, A, R, z_rows, indptr, indices, data):
    """Row i's attraction ``A[i]``, repulsion ``R[i]`` and ``z_rows[i]`` (Cauchy kernel)."""
    tile = cuda.shared.array((2, TILE), float32)
    n = Y.shape[0]
    i = cuda.grid(1)
    active = i < n
    y0 = Y[i, 0] if active else np.float32(0.0)
    y1 = Y[i, 1] if active else np.float32(0.0)
    z, r0, r1 = 0.0, 0.0, 0.0
    one = np.float32(1.0)
    for base in range(0, n, TILE):
        count = min(TILE, n - base)
        for t in range(cuda.threadIdx.x, count, cuda.blockDim.x):
            tile[0, t] = Y[base + t, 0]
            tile[1, t] = Y[base + t, 1]
        cuda.syncthreads()
        if active:
            tile_z = np.float32(0.0)
            tile_r0 = np.float32(0.0)
            tile_r1 = np.float32(0.0)
            for t in range(count):  # in index order: the same sums every run
                d0 = y0 - tile[0, t]
                d1 = y1 - tile[1, t]
                w = one / (one + d0 * d0 + d1 * d1)
                if base + t == i:
                    w = np.float32(0.0)  # the pair (i, i) is not one
                tile_z += w
                force = w * w
                tile_r0 += force * d0
                tile_r1 += force * d1
            z += tile_z
            r0 += tile_r0
            r1 += tile_r1
        cuda.syncthreads()
    if active:
        R[i, 0] = r0
        R[i, 1] = r1
        z_rows[i] = z
        _attraction_row(indptr, indices, data, Y, Y, 1.0, A, i)


def device_bytes(n: int, nnz: int) -> int:
    """Y, attraction, repulsion, update, gains and the loss's scratch pair (float32, 2-D), two
    z rows (float64), P's CSR."""
    return 7 * 4 * 2 * n + 2 * 8 * n + 8 * (n + 1) + 8 * nnz


class _DeviceState:
    """The arrays of one descent on the device, and the forces and loss over them."""

    def __init__(self, Y: np.ndarray, P: sp.csr_matrix) -> None:
        n = Y.shape[0]
        self.launch = rows_launch(n)
        self.Y = cuda.to_device(np.ascontiguousarray(Y, dtype=np.float32))
        self.A, self.R = cuda.device_array_like(self.Y), cuda.device_array_like(self.Y)
        self.scratch = cuda.device_array_like(self.Y), cuda.device_array_like(self.Y)
        self.update = cuda.to_device(np.zeros((n, 2), dtype=np.float32))
        self.gains = cuda.to_device(np.ones((n, 2), dtype=np.float32))
        self.z_rows = cuda.device_array(n, np.float64)
        self.scratch_z = cuda.device_array(n, np.float64)
        self.sums = DeviceSums(n, 2)
        self.P = P
        self.csr = tuple(cuda.to_device(np.ascontiguousarray(a)) for a in (
            P.indptr.astype(np.int64), P.indices.astype(np.int32),
            P.data.astype(np.float32)))

    def restart(self) -> None:
        """A fresh momentum and gains (see ``iterations``): one copy each, once per fit."""
        self.update.copy_to_device(np.zeros(self.update.shape, dtype=np.float32))
        self.gains.copy_to_device(np.ones(self.gains.shape, dtype=np.float32))

    def forces(self):
        """Fill A, R and the z rows at the current Y; returns ``1/Z`` as a one-element device
        array (no host sync)."""
        _exact_forces_2d[self.launch](self.Y, self.A, self.R, self.z_rows, *self.csr)
        return self.sums.inverse_total(self.z_rows, 1.0)

    def loss(self) -> float:
        """KL(P‖Q) of the current Y with the exact Z (A, R untouched: scratch arrays)."""
        _exact_forces_2d[self.launch](self.Y, *self.scratch, self.scratch_z, *self.csr)
        z = self.sums.total(self.scratch_z)
        return kl_divergence(self.P, self.host_embedding(), z, 1.0)

    def host_embedding(self) -> np.ndarray:
        """A float64 copy of Y on the host (the loss's and the callback's)."""
        return self.Y.copy_to_host().astype(np.float64)

    def gradient_norm(self, inv_z, exaggeration: float) -> float:
        """The gradient's norm at the last forces (``inv_z``: their device ``1/Z``), on the
        host: called at the stopping rule's checkpoints only."""
        return gradient_norm(self.A.copy_to_host(), self.R.copy_to_host(),
                             float(inv_z.copy_to_host()[0]), exaggeration)


def gradient_descent_cuda(Y: np.ndarray, P: sp.csr_matrix, phases: list, min_gain: float,
                          max_grad_norm: float | None, max_step_norm: float | None,
                          center_every: int = 1, guard: Any = None,
                          row_ids: np.ndarray | None = None, stopping: Any = None,
                          callback: Callable | None = None, callback_every: int = 50,
                          log: Callable[[str], None] | None = None,
                          ) -> tuple[np.ndarray, int, float]:
    """:func:`unimap.optimizers.gradient_descent.descent.gradient_descent` of a 2-D ``Y`` with
    t-SNE's exact forces (Cauchy kernel) on the GPU: the same phases, clipping, guard, stopping
    rule, callback and log lines. Returns the embedding on the host (float32), the iterations run
    and the final KL(P‖Q) with the exact Z."""
    P = sp.csr_matrix(P)
    n = Y.shape[0]
    check_device_memory(device_bytes(n, P.nnz), "TSNE's optimizer on the GPU")
    state = _DeviceState(Y, P)
    device_guard = DeviceGuard(guard)
    grad_clip = -1.0 if max_grad_norm is None else float(max_grad_norm)
    step_clip = -1.0 if max_step_norm is None else float(max_step_norm)
    checkpoints = Checkpoints(phases, log, callback, callback_every, stopping)
    done = 0
    for iteration, phase, rate, restart in iterations(phases):
        if restart:
            state.restart()
        inv_z = state.forces()  # infinite when Z is not positive: the guard reports it
        gradient_step_kernel[state.launch](state.Y, state.A, state.R, inv_z,
                                           phase.exaggeration, state.update, state.gains,
                                           phase.momentum, rate, min_gain, grad_clip, step_clip,
                                           device_guard.flag)
        device_guard.check_flagged(iteration, state.Y, row_ids, **{
            "the attraction": state.A, "the repulsion": state.R, "1/Z": inv_z})
        if iteration % center_every == 0:
            state.sums.recentre(state.Y)
        done = iteration + 1
        if checkpoints.stop_after(done, phase, state.loss, state.host_embedding,
                                  partial(state.gradient_norm, inv_z, phase.exaggeration)):
            break
    device_guard.close()
    return state.Y.copy_to_host(), done, state.loss()
