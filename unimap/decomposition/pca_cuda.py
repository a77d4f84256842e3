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

from unimap.runtime.common_cuda import as_device, check_device_memory, rows_launch

__all__ = ["fit_pca_cuda", "project_cuda"]


@cuda.jit(cache=True)
def _column_means(X, step, n_rows, mean):
    j = cuda.grid(1)
    if j < X.shape[1]:
        total = 0.0
        for r in range(n_rows):
            total += X[r * step, j]
        mean[j] = total / n_rows


@cuda.jit(cache=True)
def _centred_scatter(X, step, n_rows, mean, scatter):
    """``scatter[a, b] = Σ_r (X[r·step, a] − mean[a]) (X[r·step, b] − mean[b])``, the upper
    triangle and diagonal (the lower is mirrored on the host)."""
    t = cuda.grid(1)
    d = X.shape[1]
    a, b = t // d, t % d
    if a < d and a <= b:
        total = 0.0
        for r in range(n_rows):
            total += (X[r * step, a] - mean[a]) * (X[r * step, b] - mean[b])
        scatter[a, b] = total


@cuda.jit(cache=True)
def _project(X, components, offsets, out):
    """Row i's coordinates on the axes into ``out[i, :k]`` (``out``'s other columns: 0)."""
    i = cuda.grid(1)
    if i < X.shape[0]:
        for c in range(out.shape[1]):
            if c < components.shape[0]:
                total = 0.0
                for j in range(X.shape[1]):
                    total += X[i, j] * components[c, j]
                out[i, c] = total - offsets[c]
            else:
                out[i, c] = 0.0


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
    _column_means[rows_launch(d)](X, step, n_rows, mean)
    scatter = cuda.to_device(np.zeros((d, d), dtype=np.float64))
    _centred_scatter[rows_launch(d * d)](X, step, n_rows, mean, scatter)
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
    _project[rows_launch(X.shape[0])](X, cuda.to_device(components), cuda.to_device(offsets),
                                      out)
    return out
