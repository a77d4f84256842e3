"""``floor`` of a float32 inside numba kernels, written once per target.

On the CPU it is ``np.floor``, which LLVM vectorises. CUDA's ufunc table lacks ``np.floor``, so
:mod:`unimap.runtime.common_cuda` registers ``math.floor`` for CUDA (imported only with the
GPU path). Kernels that compile for both targets (the fast power of
:mod:`unimap.lowdim.fastpow_numba`) call :func:`floor32` and get the right one.
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload

__all__ = ["floor32"]


def floor32(y):
    """``floor(y)`` of a float32, as a float32 (the Python fallback of the overloads)."""
    return np.float32(np.floor(y))


# np.floor on the CPU: LLVM vectorises it, where math.floor or a truncation through an integer
# slow the epochs down (measured: benchmarks/results/architecture_notes.md). CUDA's ufunc
# table lacks np.floor: unimap.runtime.common_cuda registers math.floor for CUDA with
# numba-cuda's own `overload`, since through numba's a CUDA kernel compiled after a CPU caller
# fails (measured: benchmarks/results/gpu.md).
@overload(floor32, target="cpu", inline="always")
def _floor32_cpu(y):
    return lambda y: np.floor(y)
