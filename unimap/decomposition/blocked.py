"""BLAS products over fixed blocks of rows, whose bits do not depend on BLAS's threads.

A multi-threaded BLAS splits a product by its thread count and the array's size, and the
edge tiles of each split round differently, so the last bits of ``X @ M`` follow
``OPENBLAS_NUM_THREADS`` and the machine's core count. Here each block of rows is one
single-threaded BLAS call of a shape fixed by the data (:func:`row_blocks`), the blocks run
in parallel on Python threads (BLAS releases the GIL), and sums over rows add the blocks'
partial products in block order. The result is then the same for any thread count, at
about the speed of BLAS's own threads.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from unimap.runtime.blas import one_blas_thread
from unimap.runtime.threading_layer import choose_threading_layer

__all__ = ["row_blocks", "map_row_blocks", "sum_row_blocks"]

_BLOCK_BYTES = 16 << 20  # input bytes per block: large enough for BLAS's full speed


def row_blocks(n_rows: int, row_bytes: int) -> list[slice]:
    """The blocks of rows: their size depends on the row width only."""
    size = max(64, _BLOCK_BYTES // max(1, row_bytes))
    return [slice(start, min(n_rows, start + size)) for start in range(0, n_rows, size)]


def _threads(n_blocks: int) -> int:
    import numba

    # asking numba for its count starts its threads: on unimap's layer, as in the fits
    choose_threading_layer()
    return max(1, min(n_blocks, numba.get_num_threads()))


def _each_block(X: np.ndarray, work: Callable[[slice], Any]) -> list:
    """``work(rows)`` for each block of rows of ``X``, on one BLAS thread each, the blocks in
    parallel; the results in block order."""
    blocks = row_blocks(X.shape[0], X.shape[1] * X.itemsize)
    with one_blas_thread():
        if len(blocks) == 1:
            return [work(blocks[0])]
        with ThreadPoolExecutor(_threads(len(blocks))) as pool:
            return list(pool.map(work, blocks))


def map_row_blocks(X: np.ndarray, product: Callable[[np.ndarray], np.ndarray], n_cols: int,
                   dtype: np.dtype) -> np.ndarray:
    """``product`` of each block of rows of ``X``, stacked: shape (n, n_cols)."""
    out = np.empty((X.shape[0], n_cols), dtype=dtype)

    def run(rows: slice) -> None:
        out[rows] = product(X[rows])

    _each_block(X, run)
    return out


def sum_row_blocks(X: np.ndarray, partial: Callable[[slice], np.ndarray]) -> np.ndarray:
    """``Σ_blocks partial(rows)`` in float64, added in block order (``partial`` gets the
    slice of rows, so that it can index several arrays)."""
    parts = _each_block(X, partial)
    total = np.asarray(parts[0], dtype=np.float64).copy()
    for part in parts[1:]:
        total += part
    return total
