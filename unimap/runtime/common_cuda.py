"""What the CUDA kernels share: the simulator's array bridge, the finite guard, the memory
check and the launches."""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from unimap.runtime.device import simulated
from unimap.runtime.fixed_point_numba import FIXED_ONE, add_fixed
from unimap.runtime.floor_numba import floor32

__all__ = ["THREADS_PER_BLOCK", "GUARD_EVERY", "DeviceGuard", "on_target", "flag_nonfinite",
           "flag_nonfinite_row", "load_coherent", "check_device_memory",
           "cooperative_launcher", "rows_launch", "strided_launch", "to_device", "as_device"]

THREADS_PER_BLOCK = 256
SIMULATED_THREADS = 8  # the simulator runs each thread as a Python thread: keep blocks small


if not simulated():  # the simulator runs floor32's Python body
    from numba.cuda.extending import overload as cuda_overload

    @cuda_overload(floor32, inline="always")
    def _floor32_cuda(y):
        """``floor32`` in CUDA kernels (see :mod:`unimap.runtime.floor_numba`): math.floor, as
        CUDA's ufunc table lacks np.floor; equal to np.floor for |y| < 2**24."""
        return lambda y: np.float32(math.floor(y))

    @cuda_overload(add_fixed, inline="always")
    def _add_fixed_cuda(buffer, i, d, value):
        """``add_fixed`` in CUDA kernels (see :mod:`unimap.runtime.fixed_point_numba`): an
        atomic integer addition, exact, so the sum does not depend on the threads' order."""
        def impl(buffer, i, d, value):
            cuda.atomic.add(buffer, (i, d), np.int64(value * FIXED_ONE))

        return impl


def load_coherent(array, i):
    """``array[i]``, read past this SM's L1 cache (``ld.global.cg``): for values other
    blocks of the same launch wrote, which the L1 may hold from an earlier read. The
    simulator (one block, no caches) reads it as is; on a GPU the overload below serves."""
    return array[i]


if not simulated():
    @cuda_overload(load_coherent, inline="always")
    def _load_coherent_cuda(array, i):
        return lambda array, i: cuda.ldcg(array, i)


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
    same value, so the race is harmless; nothing resets it but its owner)."""
    i = cuda.grid(1)
    if i < X.shape[0]:
        for c in range(X.shape[1]):
            if not math.isfinite(X[i, c]):
                flag[0] = 1


@cuda.jit(device=True, inline="always")
def flag_nonfinite_row(X, i, flag):
    """In a kernel that has just written row ``i`` of ``X``: ``flag[0] = 1`` if the row holds
    a NaN or infinity. A kernel that flags what it writes needs no flag launch of its own
    (:meth:`DeviceGuard.check_flagged`)."""
    for c in range(X.shape[1]):
        if not math.isfinite(X[i, c]):
            flag[0] = 1


GUARD_EVERY = 10  # epochs between two reads of the guard's flag on the host


class DeviceGuard:
    """A :class:`unimap.runtime.guards.FiniteGuard` (or None) for device arrays.

    A NaN or infinity sets a sticky device flag, :attr:`flag`: the epoch's own kernels set it
    on what they write (:func:`flag_nonfinite_row`; the epoch then calls
    :meth:`check_flagged`, which launches nothing), or :meth:`check` launches a flag kernel
    over each array; either way the host does not wait. Every ``every`` epochs, and at
    :meth:`close`, the 4-byte flag is read (the only host sync); only when it is set are the
    arrays copied to the host, where the guard names the first bad one and row and the epochs
    since the last read, and raises. A blocking copy per epoch would cost more than GDR's
    whole epoch at MNIST scale, and a flag launch per array per epoch more than the flag.
    """

    def __init__(self, guard, every: int = GUARD_EVERY) -> None:
        self.guard = guard
        self.every = every
        # allocated without a guard too: the kernels that flag their writes take it
        self.flag = cuda.to_device(np.zeros(1, np.int32))
        self.host_bad = False  # a host array among the checked ones was not finite
        self.since = 0  # the first epoch not yet confirmed finite
        self.pending = None  # the last check's (epoch, embedding, row_ids, others)
        self.reads = 0  # host reads of the flag, for the tests counting syncs

    def check(self, epoch: int, embedding, row_ids=None, **others) -> None:
        """Flag ``embedding`` and ``others`` after ``epoch`` (device arrays on the device,
        host ndarrays on the host); read the flag when ``every`` epochs have gone unread."""
        if self.guard is None:
            return
        for array in (embedding, *others.values()):
            if isinstance(array, np.ndarray):
                self.host_bad = self.host_bad or not np.isfinite(array).all()
            else:  # a vector as one column
                rows = array if len(array.shape) == 2 else array.reshape(array.shape[0], 1)
                flag_nonfinite[rows_launch(rows.shape[0])](rows, self.flag)
        self._after(epoch, embedding, row_ids, others)

    def check_flagged(self, epoch: int, embedding, row_ids=None, **others) -> None:
        """As :meth:`check` after an epoch whose kernels flagged ``embedding`` and ``others``
        as they wrote them (:func:`flag_nonfinite_row`): no launch; ``others`` are named when
        the flag is set."""
        if self.guard is None:
            return
        for array in others.values():
            if isinstance(array, np.ndarray):
                self.host_bad = self.host_bad or not np.isfinite(array).all()
        self._after(epoch, embedding, row_ids, others)

    def _after(self, epoch: int, embedding, row_ids, others) -> None:
        self.pending = (epoch, embedding, row_ids, others)
        if self.host_bad or epoch + 1 - self.since >= self.every:
            self._read()

    def close(self) -> None:
        """Read the flag for the epochs checked since the last read (call after the loop)."""
        if self.guard is not None and self.pending is not None \
                and self.pending[0] >= self.since:
            self._read()

    def _read(self) -> None:
        epoch, embedding, row_ids, others = self.pending
        self.reads += 1
        if self.host_bad or self.flag.copy_to_host()[0]:
            since = self.since if self.since < epoch else None
            host = {name: _on_host(value) for name, value in others.items()}
            self.guard.check(epoch, _on_host(embedding), row_ids, since=since, **host)
            # Flagged, but finite now (a value that recovered): still an error.
            self.guard.fail(epoch, "a value", None, row_ids, since)
        self.guard.passed(epoch)
        self.since = epoch + 1


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


def cooperative_launcher(kernel, work: int, *args):
    """``kernel`` (which syncs its whole grid) configured with as many blocks as can be
    resident at once, at most one thread per item of ``work`` (its loops stride over the
    grid), for arguments typed as ``args``: call it with each launch's arguments.

    The kernel is compiled (or loaded from numba-cuda's disk cache) through its own dispatcher,
    once per fit. ``kernel.specialize`` would build a new dispatcher without the disk cache,
    compile it in every process and type every argument again at every launch.
    """
    if simulated():  # the simulator syncs a grid of one block
        return kernel[1, SIMULATED_THREADS]
    compiled = kernel.compile(tuple(kernel.typeof_pyval(arg) for arg in args))
    resident = compiled.max_cooperative_grid_blocks(THREADS_PER_BLOCK)
    blocks = max(1, min(resident, (work + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK))
    return kernel[blocks, THREADS_PER_BLOCK]


def to_device(*arrays: np.ndarray) -> list:
    """Contiguous device copies of host arrays."""
    return [cuda.to_device(np.ascontiguousarray(array)) for array in arrays]


def as_device(array):
    """A device array as it is; a host array copied to the device (contiguous)."""
    if hasattr(array, "__cuda_array_interface__") or hasattr(array, "copy_to_host"):
        return array
    return cuda.to_device(np.ascontiguousarray(array))
