"""The per-thread sums of PCA's moments on the GPU (:mod:`unimap.decomposition.pca_cuda`),
written as CPU ``@jit`` functions: numba-cuda compiles them into the kernels, and numba's CUDA
simulator runs them compiled instead of interpreting a Python loop per thread (MNIST's 784²
scatter entries would take minutes there)."""

from __future__ import annotations

import numba


@numba.njit(inline="always", cache=True)
def column_mean(X, step, n_rows, j):
    """The mean of column j over rows ``0, step, 2·step, ...`` (float64, in row order)."""
    total = 0.0
    for r in range(n_rows):
        total += X[r * step, j]
    return total / n_rows


@numba.njit(inline="always", cache=True)
def centred_product_sum(X, step, n_rows, mean, a, b):
    """``Σ_r (X[r·step, a] − mean[a]) (X[r·step, b] − mean[b])`` in float64, in row order."""
    total = 0.0
    for r in range(n_rows):
        total += (X[r * step, a] - mean[a]) * (X[r * step, b] - mean[b])
    return total


@numba.njit(inline="always", cache=True)
def project_row(X, i, components, offsets, out):
    """Row i's coordinates on the axes into ``out[i, :k]`` (``out``'s other columns: 0)."""
    for c in range(out.shape[1]):
        if c < components.shape[0]:
            total = 0.0
            for j in range(X.shape[1]):
                total += X[i, j] * components[c, j]
            out[i, c] = total - offsets[c]
        else:
            out[i, c] = 0.0
