"""Sparse affinity matrices from a kNN graph, and their symmetrisations (numba).

scipy's general sparse operations built these before: ``A + Aᵀ − A∘Aᵀ`` made five
intermediate matrices, with float64 data and int64 indices, gigabytes of fresh pages at a
million points for O(n·k) arithmetic, so that the phase's time depended on how fast the host
hands out new memory. Here A is read where it lies, in the kNN graph's (n, k) arrays; Aᵀ is
one counting sort; each row of the result is one merge of row i of A (sorted on the fly)
with row i of Aᵀ, counted first, then written into arrays of the exact size (measured:
benchmarks/results/library_notes.md, "unimap/affinity/symmetrize_numba.py").

Every value is computed with the operations, in the order and dtype, that scipy used, so
that the matrices are bitwise the same (``tests/affinity/test_symmetrize.py`` keeps scipy's code as
the oracle).
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.runtime.dynamic_numba import ROW_BLOCK, claim

# How an entry of A and the matching entry of Aᵀ combine (``combine_rows``'s ``mode``).
DIRECTED = 0  # a: A itself
UNION = 1  # mix·(a + b − a·b) + rest·(a·b): UMAP's fuzzy union (mix 1) or intersection (mix 0)
MEAN = 2  # (a + b) / divisor: t-SNE's symmetrisation


@numba.njit(cache=True)
def transpose_rows(indptr, columns, data, t_indptr, t_columns, t_data):
    """Aᵀ of a CSR matrix by a counting sort on the columns: each row of Aᵀ comes out
    sorted, since the rows of A are visited in order; A's rows need not be sorted, and a
    column repeated in a row of A gives adjacent entries in Aᵀ. ``t_indptr`` (n_columns + 1
    entries) must hold zeros."""
    n_rows = indptr.shape[0] - 1
    n_columns = t_indptr.shape[0] - 1
    for p in range(indptr[n_rows]):
        t_indptr[columns[p] + 1] += 1
    for j in range(n_columns):
        t_indptr[j + 1] += t_indptr[j]
    fill = t_indptr[:-1].copy()
    for i in range(n_rows):
        for p in range(indptr[i], indptr[i + 1]):
            q = fill[columns[p]]
            t_columns[q] = i
            t_data[q] = data[p]
            fill[columns[p]] = q + 1


@numba.njit(inline="always", cache=True)
def _combined(a, b, matched, mode, mix, rest, divisor):
    """One entry of the result, as scipy computed it: an entry absent from one side enters
    its sum as a zero and is absent from the elementwise product."""
    if mode == UNION:
        if not matched:
            return mix * (a + b) if mix != 1 else a + b
        product = a * b
        union = (a + b) - product
        return mix * union + rest * product if mix != 1 else union
    if mode == MEAN:
        return (a + b) / divisor
    return a


@numba.njit(inline="always", cache=True)
def _sort_row(columns, start, end, order):
    """Positions start..end-1 of ``columns`` in ``order[:end - start]``, by column; stable."""
    for c in range(end - start):
        column = columns[start + c]
        d = c - 1
        while d >= 0 and columns[order[d]] > column:
            order[d + 1] = order[d]
            d -= 1
        order[d + 1] = start + c


@numba.njit(inline="always", cache=True)
def merge_row(i, indptr, columns, data, t_indptr, t_columns, t_data, mode, zero, mix, rest,
               divisor, drop_self, write, out_indptr, out_columns, out_data, order, stored):
    """Row i of :func:`combine_rows`; ``order`` and ``stored`` are the worker's scratch."""
    p, p_end = 0, indptr[i + 1] - indptr[i]
    _sort_row(columns, indptr[i], indptr[i + 1], order)
    q, q_end = t_indptr[i], t_indptr[i + 1]
    if mode == DIRECTED:
        q = q_end
    count = 0
    position = out_indptr[i] if write else 0
    while p < p_end or q < q_end:
        column_a = columns[order[p]] if p < p_end else -1
        column_b = t_columns[q] if q < q_end else -1
        column = column_a if column_b < 0 or 0 <= column_a <= column_b else column_b
        a = zero
        in_a = column == column_a
        while p < p_end and columns[order[p]] == column:
            a += data[order[p]]
            p += 1
        b = zero
        in_b = column == column_b
        while q < q_end and t_columns[q] == column:
            b += t_data[q]
            q += 1
        stored[0] = _combined(a, b, in_a and in_b, mode, mix, rest, divisor)
        if stored[0] == 0 or (drop_self and column == i):
            continue
        if write:
            out_columns[position + count] = column
            out_data[position + count] = stored[0]
        count += 1
    if not write:
        out_indptr[i + 1] = count


@numba.njit(parallel=True, cache=True)
def combine_rows(indptr, columns, data, t_indptr, t_columns, t_data, mode, zero, mix, rest,
                 divisor, drop_self, n_workers, out_indptr, out_columns, out_data):
    """Merge row i of A with row i of Aᵀ into row i of the result.

    A's rows may be unsorted and may repeat a column (a kNN graph's rows are): each is
    sorted on the fly, and repeated columns are summed in row order, on either side. Values
    are widened to ``zero``'s dtype before any arithmetic (float64 for float32 memberships
    whose sums scipy took in float64). Entries that are zero in ``out_data``'s dtype, and
    the diagonal where ``drop_self``, are left out. With ``out_columns`` of size 0 it only
    counts: ``out_indptr[i + 1]`` then holds row i's number of entries, which the caller
    sums before calling again to write. Rows are claimed in blocks by ``n_workers`` threads
    (:mod:`unimap.runtime.dynamic_numba`); each row is computed alone, so the result does not
    depend on the schedule.
    """
    n = indptr.shape[0] - 1
    write = out_columns.shape[0] > 0
    widest = 0
    for i in range(n):
        widest = max(widest, indptr[i + 1] - indptr[i])
    order = np.empty((n_workers, widest), dtype=np.int64)
    stored = np.empty((n_workers, 1), dtype=out_data.dtype)  # a value as it will be stored
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, dtype=np.int64)
    for worker in numba.prange(n_workers):
        block = claim(next_block)
        while block < n_blocks:
            for i in range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK)):
                merge_row(i, indptr, columns, data, t_indptr, t_columns, t_data, mode, zero,
                           mix, rest, divisor, drop_self, write, out_indptr, out_columns,
                           out_data, order[worker], stored[worker])
            block = claim(next_block)
