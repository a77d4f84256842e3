"""PCA's covariance solver on a GPU: the column means and the centred scatter matrix of the
rows (every ``step``-th, for the kNN's candidate projection) summed on the device, the
d × d eigenproblem on the host (:func:`unimap.decomposition.pca.axes_from_scatter`), and the
projection of the rows computed where they lie.

Each mean and each entry of the scatter is one thread's float64 sum over the rows in order:
no atomics, so the axes are the same bits run after run on one GPU. They differ from the
CPU's in the last bits (the CPU sums float32 products by blocks).
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from unimap.decomposition.moments_numba import centred_product_sum, column_mean, project_row
from unimap.runtime.common_cuda import as_device, check_device_memory, on_target, strided_launch

__all__ = ["fit_pca_cuda", "project_cuda"]


_mean, _product_sum, _project_row = (on_target(f) for f in
                                     (column_mean, centred_product_sum, project_row))


@cuda.jit(cache=True)
def _column_means(X, step, n_rows, mean):
    for j in range(cuda.grid(1), X.shape[1], cuda.gridsize(1)):
        mean[j] = _mean(X, step, n_rows, j)


@cuda.jit(cache=True)
def _centred_scatter(X, step, n_rows, mean, scatter):
    """The scatter's upper triangle and diagonal (the lower is mirrored on the host), one
    entry per thread, the threads striding over the d² entries."""
    d = X.shape[1]
    for t in range(cuda.grid(1), d * d, cuda.gridsize(1)):
        a, b = t // d, t % d
        if a <= b:
            scatter[a, b] = _product_sum(X, step, n_rows, mean, a, b)


@cuda.jit(cache=True)
def _project(X, components, offsets, out):
    for i in range(cuda.grid(1), X.shape[0], cuda.gridsize(1)):
        _project_row(X, i, components, offsets, out)


def fit_pca_cuda(X, n_components: int, step: int = 1, dtype=np.float32):
    """:func:`unimap.decomposition.pca.fit_pca` with the covariance solver, on the GPU, over
    rows ``0, step, 2·step, ...`` of ``X`` (host or device, (n, d) float32 or float64)."""
    from unimap.decomposition.pca import axes_from_scatter

    d = X.shape[1]
    n_rows = (X.shape[0] + step - 1) // step
    check_device_memory(8 * d * (d + 1) + (0 if hasattr(X, "copy_to_host") else X.nbytes),
                        "PCA's covariance on the GPU")
    X = as_device(X)
    mean = cuda.device_array(d, dtype=np.float64)
    _column_means[strided_launch(d)](X, step, n_rows, mean)
    scatter = cuda.to_device(np.zeros((d, d), dtype=np.float64))
    _centred_scatter[strided_launch(d * d)](X, step, n_rows, mean, scatter)
    upper = scatter.copy_to_host()
    full = np.triu(upper) + np.triu(upper, 1).T
    return axes_from_scatter(full, mean.copy_to_host(), n_rows, n_components, np.dtype(dtype))


def project_cuda(X, fit, width: int | None = None):
    """The rows of ``X`` (host or device) on ``fit``'s axes, a device array (n, width)
    float32 whose columns past ``n_components`` are zero (``width``: default
    ``n_components``)."""
    components = np.ascontiguousarray(fit.components, dtype=np.float64)
    offsets = components @ fit.mean.astype(np.float64)
    X = as_device(X)
    out = cuda.device_array((X.shape[0], width or components.shape[0]), dtype=np.float32)
    _project[strided_launch(X.shape[0])](X, cuda.to_device(components), cuda.to_device(offsets),
                                      out)
    return out
