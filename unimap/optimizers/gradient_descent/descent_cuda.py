"""The gradient step of the full-batch optimizers on a GPU (t-SNE's and GDR's normalized mode):
one thread per row calling the CPU's ``gradient_step_row`` (gains, momentum, clipping), and
the per-iteration sums: ``Z = Σ z_i`` and the recentring. Shared by
:mod:`unimap.optimizers.gdr.normalized_cuda` and
:mod:`unimap.optimizers.gradient_descent.tsne_cuda`.

The sums run on the device over fixed chunks of ``REDUCE_CHUNK`` rows (each chunk in row
order, the chunks' sums in chunk order), so they are the same every run. ``Z`` and ``1/Z``
stay on the device too: the step kernel reads ``1/Z`` from a one-element device array, so an
iteration queues its launches without waiting for the host (a blocking copy of the partial
sums per iteration would cost about as much as the iteration's arithmetic at MNIST scale).
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from unimap.optimizers.gradient_descent.gradient_numba import gradient_step_row
from unimap.runtime.common_cuda import (
    flag_nonfinite_row,
    load_coherent,
    on_target,
    rows_launch,
    strided_launch,
)

__all__ = ["gradient_step_kernel", "subtract_kernel", "DeviceSums", "REDUCE_CHUNK"]

REDUCE_CHUNK = 256  # rows one thread of a sum adds, in order

_step_row = on_target(gradient_step_row)


@cuda.jit(cache=True)
def gradient_step_kernel(Y, A, R, inv_z, exaggeration, update, gains, momentum, learning_rate,
                         min_gain, max_grad_norm, max_step_norm, flag):
    """Row i of :func:`unimap.optimizers.gradient_descent.gradient_numba.gradient_step` (one Z
    for all rows: ``inv_z[0]``, a one-element device array), flagging a non-finite force,
    1/Z or position in the guard's ``flag`` (:meth:`DeviceGuard.check_flagged
    <unimap.runtime.common_cuda.DeviceGuard.check_flagged>`: no flag launches)."""
    i = cuda.grid(1)
    if i < Y.shape[0]:
        flag_nonfinite_row(A, i, flag)
        flag_nonfinite_row(R, i, flag)
        if i == 0 and not math.isfinite(inv_z[0]):
            flag[0] = 1
        _step_row(Y, A, R, inv_z[0], exaggeration, update, gains, momentum, learning_rate,
                  min_gain, max_grad_norm, max_step_norm, i)
        flag_nonfinite_row(Y, i, flag)


@cuda.jit(cache=True)
def subtract_kernel(Y, mean):
    """``Y[i] -= mean`` row by row."""
    i = cuda.grid(1)
    if i < Y.shape[0]:
        for c in range(Y.shape[1]):
            Y[i, c] -= mean[c]


@cuda.jit(cache=True)
def _sum_and_inverse(values, chunk, partial, arrived, numerator, total, inverse):
    """``total[0]`` = Σ of ``values``, ``inverse[0]`` = numerator / total (infinity when the
    total is not positive: the guard reports it), in one launch: each chunk of ``chunk`` rows
    summed in row order into ``partial``, then the chunks' sums in chunk order by the block
    that finishes last (counted in ``arrived``, which it resets), so the sum is the same
    whatever order the blocks run in."""
    for q in range(cuda.grid(1), partial.shape[0], cuda.gridsize(1)):
        z = 0.0
        for i in range(q * chunk, min(values.shape[0], (q + 1) * chunk)):
            z += values[i]
        partial[q] = z
    cuda.threadfence()  # this thread's partial sums are visible to every block
    cuda.syncthreads()  # and every thread of the block has written its own
    if cuda.threadIdx.x == 0 and cuda.atomic.add(arrived, 0, 1) == cuda.gridDim.x - 1:
        z = 0.0
        for q in range(partial.shape[0]):
            z += load_coherent(partial, q)  # past the L1, which may hold stale lines
        total[0] = z
        inverse[0] = numerator / z if z > 0.0 else math.inf
        arrived[0] = 0


@cuda.jit(cache=True)
def _chunk_column_sums(Y, chunk, out):
    """``out[q, c]`` = Σ of column c of ``Y`` over the rows of chunk q, in row order."""
    dim = Y.shape[1]
    for t in range(cuda.grid(1), out.shape[0] * dim, cuda.gridsize(1)):
        q, c = t // dim, t % dim
        total = 0.0
        for i in range(q * chunk, min(Y.shape[0], (q + 1) * chunk)):
            total += Y[i, c]
        out[q, c] = total


@cuda.jit(cache=True)
def _column_means(partial, n, mean):
    """``mean[c]`` = Σ over chunks (in order) of ``partial[:, c]``, divided by n."""
    for c in range(cuda.grid(1), mean.shape[0], cuda.gridsize(1)):
        total = 0.0
        for q in range(partial.shape[0]):
            total += partial[q, c]
        mean[c] = total / n


class DeviceSums:
    """The per-iteration sums of an ``(n, dim)`` embedding's descent, with their buffers
    allocated once."""

    def __init__(self, n: int, dim: int) -> None:
        self.n = n
        chunks = (n + REDUCE_CHUNK - 1) // REDUCE_CHUNK
        self._partial = cuda.device_array(chunks, dtype=np.float64)
        self._arrived = cuda.to_device(np.zeros(1, dtype=np.int32))  # _sum_and_inverse's
        self._column_partial = cuda.device_array((chunks, dim), dtype=np.float64)
        self._mean = cuda.device_array(dim, dtype=np.float64)
        self.z = cuda.device_array(1, dtype=np.float64)  # the last inverse_total's sum
        self.inv_z = cuda.device_array(1, dtype=np.float64)  # and its numerator / sum
        self._total = cuda.device_array(1, dtype=np.float64)  # total()'s, apart
        self._total_inverse = cuda.device_array(1, dtype=np.float64)
        self._launch = strided_launch(chunks)
        self._column_launch = strided_launch(chunks * dim)
        self._mean_launch = strided_launch(dim)
        self._rows = rows_launch(n)

    def total(self, values) -> float:
        """Σ of a float64 device vector of length n, on the host (one sync: for the loss and
        the tests, not for the iterations). Its own buffers: the loss runs between a step's
        ``inverse_total`` and the gradient norm that reads :attr:`inv_z`."""
        _sum_and_inverse[self._launch](values, REDUCE_CHUNK, self._partial, self._arrived, 1.0,
                                       self._total, self._total_inverse)
        return float(self._total.copy_to_host()[0])

    def inverse_total(self, values, numerator: float):
        """``numerator / Σ values`` as a one-element device array (:attr:`inv_z`), the sum
        kept in :attr:`z`; nothing crosses to the host."""
        _sum_and_inverse[self._launch](values, REDUCE_CHUNK, self._partial, self._arrived,
                                       float(numerator), self.z, self.inv_z)
        return self.inv_z

    def recentre(self, Y) -> None:
        """Subtract the column means from ``Y``, all on the device (no host sync)."""
        _chunk_column_sums[self._column_launch](Y, REDUCE_CHUNK, self._column_partial)
        _column_means[self._mean_launch](self._column_partial, self.n, self._mean)
        subtract_kernel[self._rows](Y, self._mean)
