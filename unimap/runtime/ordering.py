"""Orderings of points that keep neighbours close in memory."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["morton_order", "locality_order", "in_input_order", "relabelled"]


def morton_order(points: np.ndarray, n_dims: int = 3, bits: int = 10) -> np.ndarray:
    """Row order along the Z-order curve of the first ``n_dims`` columns of ``points``
    (each quantised to ``bits`` bits): rows close in the order are close in space."""
    if bits * min(n_dims, points.shape[1]) > 64:
        raise ValueError(f"a Morton code of {n_dims} x {bits} bits does not fit in 64 bits")
    coords = np.asarray(points[:, :n_dims], dtype=np.float64)
    low = coords.min(axis=0) if len(coords) else 0.0
    span = np.ptp(coords, axis=0) if len(coords) else 1.0
    span = np.where(span > 0, span, 1.0)
    levels = ((coords - low) / span * ((1 << bits) - 1)).astype(np.uint64)
    code = np.zeros(coords.shape[0], dtype=np.uint64)
    for bit in range(bits):
        for dim in range(coords.shape[1]):
            code |= ((levels[:, dim] >> np.uint64(bit)) & np.uint64(1)) << np.uint64(
                bit * coords.shape[1] + dim)
    return np.argsort(code, kind="stable")


def locality_order(layout: np.ndarray) -> np.ndarray:
    """The optimizers' relabelling: rows along the Z-order curve of a layout's first (up to
    three) coordinates at 16 bits, so that points close in the layout sit close in memory."""
    return morton_order(layout, n_dims=min(3, layout.shape[1]), bits=16)


def in_input_order(rows: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``rows`` whose row ``r`` belongs to input point ``order[r]``, put back in input order
    (the inverse of ``rows = data[order]``)."""
    unordered = np.empty_like(rows)
    unordered[order] = rows
    return unordered


# Up to this many entries scipy's indexing relabels (milliseconds), so that a small fit's first
# run does not compile the numba pass, a tenth of what `unimap embed digits` compiled in a fresh
# process (measured: benchmarks/results/library_notes.md, "unimap/runtime/ordering.py").
SCIPY_MAX_ENTRIES = 1 << 20


def relabelled(matrix: sp.csr_matrix, order: np.ndarray, sort_rows: bool = False,
               dtype: np.dtype | None = None) -> sp.csr_matrix:
    """``matrix[order][:, order]`` for a permutation ``order`` of its points: the same
    entries in the same order as scipy's indexing gives (sorted by column within each row
    with ``sort_rows``), in one parallel pass above ``SCIPY_MAX_ENTRIES`` entries (by scipy's
    indexing below); data in ``dtype`` (default: the matrix's), and the index dtypes scipy's
    constructor chooses, the same for both."""
    from unimap.runtime.dynamic_numba import workers
    from unimap.runtime.relabel_numba import permute_rows

    matrix = sp.csr_matrix(matrix)
    n = matrix.shape[0]
    order = np.asarray(order, dtype=np.int64)
    if matrix.shape != (n, n) or order.shape != (n,):
        raise ValueError(f"relabelling needs a square matrix and one label per point, got "
                         f"{matrix.shape} and {order.shape}")
    # the kernel indexes with it unchecked: a repeated or out-of-range label would read
    # outside the arrays
    if n and (order.min() < 0 or order.max() >= n
              or np.bincount(order, minlength=n).max() > 1):
        raise ValueError("relabelling needs a permutation of the points' indices")
    if matrix.nnz <= SCIPY_MAX_ENTRIES:
        out = matrix[order][:, order]
        if sort_rows:
            out.sort_indices()
        out = sp.csr_matrix((out.data.astype(matrix.dtype if dtype is None else dtype,
                                             copy=False),
                             out.indices.astype(np.int32, copy=False),
                             out.indptr.astype(np.int64, copy=False)), shape=(n, n))
        out.has_sorted_indices = sort_rows
        return out
    indptr = np.empty(n + 1, dtype=np.int64)
    indices = np.empty(matrix.nnz, dtype=np.int32)
    data = np.empty(matrix.nnz, dtype=matrix.dtype if dtype is None else dtype)
    permute_rows(matrix.indptr, matrix.indices, matrix.data, order, sort_rows, workers(), indptr,
                 indices, data)
    out = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    if sort_rows:
        out.has_sorted_indices = True
    return out
