"""A directed affinity matrix as CSR rows, and its combinations with its transpose.

:class:`DirectedRows` holds a kNN graph's (m, k) arrays without a copy, or a CSR matrix's;
:meth:`DirectedRows.combined` builds every affinity matrix of :mod:`unimap.affinity` from it
(directed, fuzzy union, mean) with the kernels of :mod:`unimap.affinity.symmetrize_numba`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import DTypeLike

__all__ = ["DirectedRows"]


class DirectedRows:
    """A directed affinity matrix as CSR arrays whose rows may be unsorted and may repeat a
    column: a kNN graph's (m, k) arrays without a copy (rows of k entries), or a CSR
    matrix's. :meth:`combined` builds every affinity matrix of :mod:`unimap.affinity` from it."""

    def __init__(self, indices: np.ndarray, values: np.ndarray, n: int) -> None:
        indices = np.ascontiguousarray(indices, dtype=np.int32)
        if not hasattr(values, "__cuda_array_interface__"):  # device values stay there
            values = np.ascontiguousarray(values)
            if values.dtype not in (np.float32, np.float64):
                values = values.astype(np.float64)
        if values.shape != indices.shape:
            raise ValueError(f"values of shape {values.shape} do not match the neighbour "
                             f"indices of shape {indices.shape}")
        m, k = indices.shape
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            raise ValueError(f"neighbour indices must lie in [0, {n}); found "
                             f"{indices.min()} to {indices.max()}")
        self.shape = (m, n)
        self.indptr = np.arange(m + 1, dtype=np.int64) * k
        self.columns = indices.reshape(-1)
        self.data = values.reshape(-1)

    @classmethod
    def of_csr(cls, matrix: sp.csr_matrix) -> DirectedRows:
        """The arrays of a CSR matrix, its rows sorted first where they were not (the
        merge sorts each row by insertion, quadratic in a long unsorted row)."""
        matrix = sp.csr_matrix(matrix)
        if not matrix.has_sorted_indices:
            matrix = matrix.sorted_indices()
        rows = cls.__new__(cls)
        rows.shape = matrix.shape
        rows.indptr = matrix.indptr.astype(np.int64, copy=False)
        rows.columns = matrix.indices.astype(np.int32, copy=False)
        data = matrix.data
        rows.data = data if data.dtype in (np.float32, np.float64) else data.astype(np.float64)
        return rows

    def combined(self, mode: int, *, drop_self: bool, compute: DTypeLike = np.float64,
                 out: DTypeLike = np.float32, mix: float = 1.0, divisor: float = 2.0,
                 device: str = "cpu") -> sp.csr_matrix:
        """The matrix combined entry by entry with its transpose (``mode`` of
        :mod:`unimap.affinity.symmetrize_numba`), computed in ``compute`` and stored in ``out``,
        as CSR with sorted rows, without zeros (and without the diagonal where
        ``drop_self``); on the GPU with ``device="cuda"``
        (:mod:`unimap.affinity.symmetrize_cuda`, the same values)."""
        from unimap.affinity import symmetrize_numba as kernels
        from unimap.runtime.dynamic_numba import workers

        compute = np.dtype(compute).type
        m, n = self.shape
        transposed = mode != kernels.DIRECTED
        if transposed and m != n:
            raise ValueError(f"affinities must be square to symmetrise, got {self.shape}")
        if device == "cuda":
            from unimap.affinity.symmetrize_cuda import combined_cuda

            arrays = combined_cuda(self.indptr, self.columns, self.data, self.shape, mode,
                                   compute(0), compute(mix), compute(1.0 - mix), divisor,
                                   drop_self, np.dtype(out))
            return _sorted_csr(*arrays, self.shape)
        nnz = self.columns.shape[0] if transposed else 0
        t_indptr = np.zeros(n + 1 if transposed else m + 1, dtype=np.int64)
        t_columns = np.empty(nnz, dtype=np.int32)
        t_data = np.empty(nnz, dtype=self.data.dtype)
        if transposed:
            kernels.transpose_rows(self.indptr, self.columns, self.data, t_indptr, t_columns,
                                   t_data)
        # mix and 1 − mix in the computing dtype, as scipy multiplied a matrix by a float
        scalars = (mode, compute(0), compute(mix), compute(1.0 - mix), float(divisor),
                   drop_self, workers())
        arrays = (self.indptr, self.columns, self.data, t_indptr, t_columns, t_data)
        indptr = np.zeros(m + 1, dtype=np.int64)
        kernels.combine_rows(*arrays, *scalars, indptr, np.empty(0, dtype=np.int32),
                             np.empty(0, dtype=out))
        np.cumsum(indptr, out=indptr)
        columns = np.empty(indptr[-1], dtype=np.int32)
        data = np.empty(indptr[-1], dtype=out)
        kernels.combine_rows(*arrays, *scalars, indptr, columns, data)
        return _sorted_csr(indptr, columns, data, self.shape)


def _sorted_csr(indptr: np.ndarray, columns: np.ndarray, data: np.ndarray,
                shape: tuple[int, int]) -> sp.csr_matrix:
    """A CSR matrix of rows already sorted and free of repeats (scipy is told, not asked)."""
    matrix = sp.csr_matrix((data, columns, indptr), shape=shape)
    matrix.has_sorted_indices = True
    matrix.has_canonical_format = True
    return matrix
