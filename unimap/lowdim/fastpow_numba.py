"""A fast float32 ``x ** b`` for x > 0, for the low-dimensional kernel ``1 / (1 + a d^(2b))``.

``powf`` is a libm call that LLVM cannot vectorise or pipeline well, and the SGD's kernels
evaluate it for every sample (measured: benchmarks/results/architecture_notes.md). This
version splits the float into exponent and mantissa, evaluates polynomials for log2 of the
mantissa and for 2^frac, and rebuilds the float: ~15 flops, no branch. Its relative error is
below 5e-5 for x in [1e-8, 1e6] (tested: ``tests/lowdim/test_kernels.py``), far below the noise of
stochastic gradient steps.

The kernels that call it also compile for CUDA (the ``*_cuda.py`` modules): its one
target-specific primitive, :func:`unimap.runtime.floor_numba.floor32`, is written per target.
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.runtime.floor_numba import floor32


@numba.njit(inline="always", cache=True, fastmath=True)
def fast_pow(x, b):
    """``x ** b`` for float32 ``x > 0`` (normal numbers) and float32 ``b``."""
    bits = np.float32(x).view(np.int32)
    exponent = np.float32(((bits >> 23) & 0xFF) - 127)
    mantissa = np.int32((bits & 0x007FFFFF) | 0x3F800000)
    t = np.int32(mantissa).view(np.float32) - np.float32(1.0)
    # log2(1 + t) for t in [0, 1)
    log2_m = t * (np.float32(1.4425449) + t * (np.float32(-0.7181452) + t * (
        np.float32(0.4575485) + t * (np.float32(-0.2779042) + t * (
            np.float32(0.121797) + t * np.float32(-0.02587373))))))
    y = b * (exponent + log2_m)
    whole = floor32(y)
    f = y - whole
    # 2 ** f for f in [0, 1)
    p = np.float32(1.0) + f * (np.float32(0.6931472) + f * (np.float32(0.2402265) + f * (
        np.float32(0.05550411) + f * (np.float32(0.009618129) + f * (
            np.float32(0.001333355) + f * np.float32(0.0001540353))))))
    return np.int32(np.float32(p).view(np.int32) + (np.int32(whole) << np.int32(23))).view(
        np.float32)
