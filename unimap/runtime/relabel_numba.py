"""A sparse matrix with its points relabelled, ``M[order][:, order]``, in one pass (numba).

scipy's fancy indexing makes it in two (rows, then columns) with int64 temporaries and a
third pass sorts the rows, seconds of a large fit (measured: benchmarks/results/library_notes.md,
"unimap/runtime/relabel_numba.py").
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.runtime.dynamic_numba import ROW_BLOCK, claim

# Rows up to this long are sorted by insertion; longer ones by numpy's argsort.
_INSERTION_MAX = 32


@numba.njit(inline="always", cache=True)
def _sort_by_column(columns, values, start, end, scratch_columns, scratch_values):
    """Sort ``columns[start:end]`` (distinct) with ``values`` alongside."""
    length = end - start
    if length <= _INSERTION_MAX:
        for c in range(start + 1, end):
            column, value = columns[c], values[c]
            d = c - 1
            while d >= start and columns[d] > column:
                columns[d + 1] = columns[d]
                values[d + 1] = values[d]
                d -= 1
            columns[d + 1] = column
            values[d + 1] = value
        return
    order = np.argsort(columns[start:end])
    for c in range(length):
        scratch_columns[c] = columns[start + order[c]]
        scratch_values[c] = values[start + order[c]]
    for c in range(length):
        columns[start + c] = scratch_columns[c]
        values[start + c] = scratch_values[c]


@numba.njit(parallel=True, cache=True)
def permute_rows(indptr, indices, data, order, sort_rows, n_workers, out_indptr,
                 out_indices, out_data):
    """Row r of the output is row ``order[r]`` of the input, its columns j renamed to the
    position of j in ``order``: ``M[order][:, order]`` for a permutation ``order``. Entries
    keep their order in the row, as scipy's indexing keeps them, unless ``sort_rows``.
    ``out_indptr`` (n + 1) is filled here; the other outputs have the input's size.
    Rows are claimed in blocks by ``n_workers`` threads; each is written by one."""
    n = order.shape[0]
    position = np.empty(n, dtype=np.int64)
    out_indptr[0] = 0
    widest = 0
    for r in range(n):
        position[order[r]] = r
        length = indptr[order[r] + 1] - indptr[order[r]]
        out_indptr[r + 1] = out_indptr[r] + length
        widest = max(widest, length)
    scratch_columns = np.empty((n_workers, widest), dtype=out_indices.dtype)
    scratch_values = np.empty((n_workers, widest), dtype=out_data.dtype)
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, dtype=np.int64)
    for worker in numba.prange(n_workers):
        block = claim(next_block)
        while block < n_blocks:
            for r in range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK)):
                source = indptr[order[r]]
                start, end = out_indptr[r], out_indptr[r + 1]
                for c in range(end - start):
                    out_indices[start + c] = position[indices[source + c]]
                    out_data[start + c] = data[source + c]
                if sort_rows:
                    _sort_by_column(out_indices, out_data, start, end,
                                    scratch_columns[worker], scratch_values[worker])
            block = claim(next_block)
