"""What the CUDA kernels share: the simulator's array bridge, the finite guard, the memory
check and the launches."""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from unimap.runtime.device import simulated
from unimap.runtime.floor_numba import floor32

__all__ = ["THREADS_PER_BLOCK", "DeviceGuard", "on_target", "flag_nonfinite",
           "check_device_memory", "launch_cooperative", "rows_launch", "strided_launch",
           "to_device", "as_device"]

THREADS_PER_BLOCK = 256
SIMULATED_THREADS = 8  # the simulator runs each thread as a Python thread: keep blocks small


if not simulated():  # the simulator runs floor32's Python body
    from numba.cuda.extending import overload as cuda_overload

    @cuda_overload(floor32, inline="always")
    def _floor32_cuda(y):
        """``floor32`` in CUDA kernels (see :mod:`unimap.runtime.floor_numba`): math.floor, as
        CUDA's ufunc table lacks np.floor; equal to np.floor for |y| < 2**24."""
        return lambda y: np.float32(math.floor(y))


def on_target(function):
    """``function`` (a CPU ``@jit`` row or edge function) as a kernel calls it: as is on a
    GPU (numba compiles it for CUDA), and with the NumPy arrays behind the simulator's array
    wrappers in the simulator (``@jit`` functions cannot take the wrappers)."""
    if not simulated():
        return function

    def call(*args):
        return function(*(_host_array(arg) for arg in args))

    return call


def _host_array(value):
    wrapped = getattr(value, "__dict__", {}).get("_item")  # FakeWithinKernelCUDAArray
    return value if wrapped is None else wrapped._ary


@cuda.jit(cache=True)
def flag_nonfinite(X, flag):
    """``flag[0] = 1`` if a coordinate of ``X`` is NaN or infinite (every writer writes the
    same value, so the race is harmless)."""
    i = cuda.grid(1)
    if i < X.shape[0]:
        for c in range(X.shape[1]):
            if not math.isfinite(X[i, c]):
                flag[0] = 1


class DeviceGuard:
    """A :class:`unimap.runtime.guards.FiniteGuard` (or None) for device arrays: per epoch a flag
    kernel over each array and one 4-byte copy; only when something is not finite are the
    arrays copied to the host, where the guard names the first bad row and raises."""

    def __init__(self, guard, n: int) -> None:
        self.guard = guard
        self.launch = rows_launch(n)
        self.flag = None if guard is None else cuda.to_device(np.zeros(1, np.int32))

    def check(self, epoch: int, embedding, row_ids=None, **others) -> None:
        """As ``FiniteGuard.check``; host ndarrays among ``others`` are checked on the host."""
        if self.guard is None:
            return
        bad = False
        for array in (embedding, *others.values()):
            if isinstance(array, np.ndarray):
                bad = bad or not np.isfinite(array).all()
            else:
                flag_nonfinite[self.launch](array, self.flag)
        if bad or self.flag.copy_to_host()[0]:
            self.guard.check(epoch, _on_host(embedding), row_ids,
                             **{name: _on_host(value) for name, value in others.items()})
        self.guard.passed(epoch)


def _on_host(array):
    return array if isinstance(array, np.ndarray) else array.copy_to_host()


def check_device_memory(needed: int, what: str) -> None:
    """Refuse before allocating what the GPU cannot hold (a CUDA out-of-memory midway would
    leave the user a driver error instead of a reason)."""
    try:
        free, total = cuda.current_context().get_memory_info()
    except Exception:  # noqa: BLE001 - the simulator has no memory to report
        return
    if needed > free:
        raise MemoryError(f"{what} needs {needed / 2**20:.0f} MiB of device memory; "
                          f"{free / 2**20:.0f} MiB of {total / 2**20:.0f} MiB are free. "
                          "Free GPU memory, or fit with device='cpu'.")


def rows_launch(n: int) -> tuple[int, int]:
    """``(blocks, threads)`` for one thread per row."""
    threads = SIMULATED_THREADS if simulated() else THREADS_PER_BLOCK
    return (n + threads - 1) // threads, threads


MAX_STRIDED_BLOCKS = 65_535


def strided_launch(work: int) -> tuple[int, int]:
    """``(blocks, threads)`` for a kernel whose threads stride over ``work`` items
    (``range(cuda.grid(1), work, cuda.gridsize(1))``): a thread per item on a GPU (up to
    ``MAX_STRIDED_BLOCKS`` blocks), one block in the simulator, where each thread is a Python
    thread and the items' loop bodies are compiled CPU functions."""
    if simulated():
        return 1, SIMULATED_THREADS
    blocks = (work + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    return max(1, min(blocks, MAX_STRIDED_BLOCKS)), THREADS_PER_BLOCK


def launch_cooperative(kernel, work: int, *args) -> None:
    """Launch ``kernel`` (which syncs its whole grid) with as many blocks as can be resident
    at once, at most one thread per item of ``work``; its loops stride over the grid."""
    if simulated():  # the simulator syncs a grid of one block
        kernel[1, SIMULATED_THREADS](*args)
        return
    specialized = kernel.specialize(*args)
    compiled = next(iter(specialized.overloads.values()))
    resident = compiled.max_cooperative_grid_blocks(THREADS_PER_BLOCK)
    blocks = max(1, min(resident, (work + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK))
    specialized[blocks, THREADS_PER_BLOCK](*args)


def to_device(*arrays: np.ndarray) -> list:
    """Contiguous device copies of host arrays."""
    return [cuda.to_device(np.ascontiguousarray(array)) for array in arrays]


def as_device(array):
    """A device array as it is; a host array copied to the device (contiguous)."""
    if hasattr(array, "__cuda_array_interface__") or hasattr(array, "copy_to_host"):
        return array
    return cuda.to_device(np.ascontiguousarray(array))
