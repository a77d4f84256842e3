"""Sums of float32 moves that do not depend on the order of their terms: 2^-32 fixed point.

Many GPU threads add moves to one point at once. Float atomics would round each partial sum,
so the result would depend on the order in which the threads arrive; integer additions are
exact, so a sum of moves scaled by 2^32 and truncated to int64 is the same in any order, and
a fit is bitwise the same run after run. The scale keeps a float32 move's bits down to 2^-32
(far below a float32 ulp at an embedding's scale) and sums up to 2^31 in magnitude.

:func:`add_fixed` is written once per target, as :func:`unimap.runtime.floor_numba.floor32`
is: on the CPU a plain addition, on a GPU an atomic one (registered by
:mod:`unimap.runtime.common_cuda`, imported only with the GPU path). Kernels that run on both
(:mod:`unimap.optimizers.umap_sgd.grouped_numba`) call it and get the right one.
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload

__all__ = ["FIXED_ONE", "FIXED_STEP", "add_fixed"]

FIXED_ONE = np.float32(2.0 ** 32)  # a power of two: scaling a float32 by it is exact
FIXED_STEP = 2.0 ** -32  # float64: an int64 sum below 2^53 converts exactly, then scales


def add_fixed(buffer, i, d, value):
    """``buffer[i, d] += value`` for a float32 ``value``, in 2^-32 fixed point: the value
    scaled by 2^32 and truncated towards zero to an int64 (the same conversion on the CPU and
    on a GPU). The Python fallback of the overloads."""
    buffer[i, d] += np.int64(np.float32(value) * FIXED_ONE)


@overload(add_fixed, target="cpu", inline="always")
def _add_fixed_cpu(buffer, i, d, value):
    def impl(buffer, i, d, value):
        buffer[i, d] += np.int64(value * FIXED_ONE)

    return impl
