"""Distances of a user-defined metric: a numba function of two rows, block by block."""

from __future__ import annotations

import numba

__all__ = ["custom_block"]


# Not cached: numba keys a cached specialisation by the metric's type, not by its code, so a
# function redefined under the same name (a notebook cell run again) could read stale code.
@numba.njit(parallel=True)
def custom_block(A, B, metric, args, out):
    """``out[i, j] = metric(A[i], B[j], *args)`` for every row pair (one row of ``A`` per
    thread; each entry computed on its own, so the bits do not depend on the threads)."""
    for i in numba.prange(A.shape[0]):
        for j in range(B.shape[0]):
            out[i, j] = metric(A[i], B[j], *args)
