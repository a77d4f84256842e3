"""The symmetrisations of :mod:`unimap.affinity.symmetrize_numba` on a GPU.

The same two steps as the CPU's: Aᵀ by a counting sort on the columns, then row i of the
result as one merge of row i of A with row i of Aᵀ, counted first and written second, each
row by :func:`unimap.affinity.symmetrize_numba.merge_row` itself (one thread per row), so
the values are computed by the same code in the same order.

The counting sort is the only step where threads share memory: each entry of A takes a slot
in its column's row of Aᵀ with an atomic increment, in an order that varies from run to run.
Each row of Aᵀ is then sorted by the entry's position in A, which is the order in which the
CPU's serial sort fills it, so Aᵀ, and everything after it, is the same in every run and
equal to the CPU's. The two prefix sums (row starts of Aᵀ and of the result) are taken on the
host: an (n + 1) array of counts each way (8 bytes a row), against 2·nnz entries that stay on
the device.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from unimap.affinity.symmetrize_numba import DIRECTED, merge_row
from unimap.runtime.common_cuda import as_device, check_device_memory, on_target, rows_launch

__all__ = ["combined_cuda", "device_bytes"]

_merge = on_target(merge_row)

# Shell sort gaps (Ciura's): a row of Aᵀ holds a point's in-degree, a few dozen entries for
# most points but thousands at a hub of high-dimensional data, where an insertion sort's
# d² steps in one thread would stall the kernel.
_GAPS = (701, 301, 132, 57, 23, 10, 4, 1)


@cuda.jit(device=True, inline=True)
def _shell_sort(keys, start, end):
    """Sort ``keys[start:end]`` ascending in place (the keys are distinct)."""
    for gap in _GAPS:
        for a in range(start + gap, end):
            key = keys[a]
            b = a
            while b - gap >= start and keys[b - gap] > key:
                keys[b] = keys[b - gap]
                b -= gap
            keys[b] = key


@cuda.jit(device=True, inline=True)
def _row_of(indptr, p):
    """The row of A holding entry ``p``: the last row starting at or before it."""
    lo, hi = 0, indptr.shape[0] - 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if indptr[mid] <= p:
            lo = mid
        else:
            hi = mid - 1
    return lo


@cuda.jit(cache=True)
def _count_columns(columns, counts):
    p = cuda.grid(1)
    if p < columns.shape[0]:
        cuda.atomic.add(counts, columns[p], 1)


@cuda.jit(cache=True)
def _scatter_positions(columns, fill, positions):
    """Each entry p of A takes a slot of its column's row of Aᵀ (in a varying order)."""
    p = cuda.grid(1)
    if p < columns.shape[0]:
        positions[cuda.atomic.add(fill, columns[p], 1)] = p


@cuda.jit(cache=True)
def _sort_rows(t_indptr, positions):
    """Each row of Aᵀ in the order of A's entries: the CPU's order, whatever the atomics'."""
    j = cuda.grid(1)
    if j < t_indptr.shape[0] - 1:
        _shell_sort(positions, t_indptr[j], t_indptr[j + 1])


@cuda.jit(cache=True)
def _gather_rows(indptr, data, positions, t_columns, t_data):
    q = cuda.grid(1)
    if q < positions.shape[0]:
        p = positions[q]
        t_columns[q] = _row_of(indptr, p)
        t_data[q] = data[p]


@cuda.jit(cache=True)
def _combine_rows(indptr, columns, data, t_indptr, t_columns, t_data, mode, zero, mix, rest,
                  divisor, drop_self, write, out_indptr, out_columns, out_data, order, stored):
    """Row i of the result by the CPU's merge (``order``: one scratch slot per entry of A)."""
    i = cuda.grid(1)
    if i < indptr.shape[0] - 1:
        _merge(i, indptr, columns, data, t_indptr, t_columns, t_data, mode, zero, mix, rest,
               divisor, drop_self, write, out_indptr, out_columns, out_data,
               order[indptr[i]:indptr[i + 1]], stored[i:i + 1])


def device_bytes(m: int, n: int, nnz: int, data_bytes: int) -> int:
    """Device memory of :func:`combined_cuda` at its peak: A, Aᵀ, the sort's positions, the
    merge's scratch and a result of at most 2·nnz entries in float32."""
    a = 8 * (m + 1) + nnz * (4 + data_bytes)
    return 2 * a + 8 * (n + 1) + 2 * 8 * nnz + 4 * m + 8 * (m + 1) + 2 * nnz * 8


def _prefix_sum(counts) -> np.ndarray:
    """``[0, c0, c0 + c1, ...]`` of a device array of counts, on the host (int64)."""
    indptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts.copy_to_host(), out=indptr[1:])
    return indptr


def combined_cuda(indptr: np.ndarray, columns: np.ndarray, data, shape: tuple[int, int],
                  mode: int, zero: np.floating, mix: np.floating, rest: np.floating,
                  divisor: float, drop_self: bool, out: np.dtype):
    """:meth:`unimap.affinity.directed.DirectedRows.combined` on the GPU: the same arguments
    as the CPU kernels (``data`` may already be on the device); returns the result's CSR
    ``(indptr, columns, data)`` as host arrays."""
    m, n = (int(s) for s in shape)
    nnz = int(columns.shape[0])
    check_device_memory(device_bytes(m, n, nnz, np.dtype(data.dtype).itemsize),
                        "the affinities' symmetrisation on the GPU")
    d_indptr, d_columns, d_data = (as_device(a) for a in (indptr, columns, data))
    if mode != DIRECTED:
        counts = cuda.to_device(np.zeros(n, dtype=np.int64))
        _count_columns[rows_launch(nnz)](d_columns, counts)
        t_indptr_host = _prefix_sum(counts)
        t_indptr = cuda.to_device(t_indptr_host)
        positions = cuda.device_array(nnz, dtype=np.int64)
        _scatter_positions[rows_launch(nnz)](d_columns, cuda.to_device(t_indptr_host[:-1]),
                                             positions)
        _sort_rows[rows_launch(n)](t_indptr, positions)
        t_columns = cuda.device_array(nnz, dtype=np.int32)
        t_data = cuda.device_array(nnz, dtype=d_data.dtype)
        _gather_rows[rows_launch(nnz)](d_indptr, d_data, positions, t_columns, t_data)
        del positions
    else:  # the kernels read no Aᵀ
        t_indptr = cuda.to_device(np.zeros(m + 1, dtype=np.int64))
        t_columns = cuda.device_array(0, dtype=np.int32)
        t_data = cuda.device_array(0, dtype=d_data.dtype)
    order = cuda.device_array(nnz, dtype=np.int64)
    stored = cuda.device_array(m, dtype=out)
    scalars = (mode, zero, mix, rest, float(divisor), drop_self)
    arrays = (d_indptr, d_columns, d_data, t_indptr, t_columns, t_data)
    counts = cuda.to_device(np.zeros(m + 1, dtype=np.int64))
    _combine_rows[rows_launch(m)](*arrays, *scalars, False, counts,
                                  cuda.device_array(0, dtype=np.int32),
                                  cuda.device_array(0, dtype=out), order, stored)
    out_indptr = _prefix_sum(counts[1:])
    total = int(out_indptr[-1])  # numba-cuda takes a Python int as a shape, not a NumPy one
    out_columns = cuda.device_array(total, dtype=np.int32)
    out_data = cuda.device_array(total, dtype=out)
    _combine_rows[rows_launch(m)](*arrays, *scalars, True, cuda.to_device(out_indptr),
                                  out_columns, out_data, order, stored)
    return out_indptr, out_columns.copy_to_host(), out_data.copy_to_host()
