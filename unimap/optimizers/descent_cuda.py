"""The gradient step of the full-batch optimizers on a GPU (t-SNE's and GDR's normalized mode):
one thread per row calling the CPU's ``gradient_step_row`` (gains, momentum, clipping), and
the recentring. Shared by :mod:`unimap.optimizers.gdr_normalized_cuda` and
:mod:`unimap.optimizers.tsne_cuda`.
"""

from __future__ import annotations

from numba import cuda

from unimap.optimizers.tsne_gd_numba import gradient_step_row
from unimap.runtime.common_cuda import on_target

__all__ = ["gradient_step_kernel", "subtract_kernel"]

_step_row = on_target(gradient_step_row)


@cuda.jit(cache=True)
def gradient_step_kernel(Y, A, R, inv_z, exaggeration, update, gains, momentum, learning_rate,
                         min_gain, max_grad_norm, max_step_norm):
    """Row i of :func:`unimap.optimizers.tsne_gd_numba.gradient_step` (one Z for all rows)."""
    i = cuda.grid(1)
    if i < Y.shape[0]:
        _step_row(Y, A, R, inv_z, exaggeration, update, gains, momentum, learning_rate,
                  min_gain, max_grad_norm, max_step_norm, i)


@cuda.jit(cache=True)
def subtract_kernel(Y, mean):
    """``Y[i] -= mean`` row by row."""
    i = cuda.grid(1)
    if i < Y.shape[0]:
        for c in range(Y.shape[1]):
            Y[i, c] -= mean[c]
