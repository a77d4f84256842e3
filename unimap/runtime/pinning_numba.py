"""Set the CPU affinity of each of numba's worker threads (Linux only).

Why: on a host where another program holds one core, Linux's scheduler often wakes both of a
2-thread fit's workers on the other core. It counts 3 runnable tasks on 2 cores as balanced either
way, so it does not separate them, and the fit then runs on one core for much of its time (sampled
from ``/proc``; measured: benchmarks/results/library_notes.md, "unimap/runtime/pinning_numba.py").
One worker per core makes the busy core a half-speed worker, which the dynamically claimed blocks
(:mod:`unimap.runtime.dynamic_numba`) absorb. :func:`unimap.runtime.threads.spread_threads` decides
when to use it and restores the affinity afterwards.

This module compiles only on Linux: ``sched_setaffinity`` is glibc's.
"""

from __future__ import annotations

import numba
from numba import types

__all__ = ["set_thread_affinity"]

# int sched_setaffinity(pid_t pid, size_t cpusetsize, const cpu_set_t *mask); pid 0 is the
# calling thread. Declared by symbol name, so that the kernel stays cacheable.
_sched_setaffinity = types.ExternalFunction(
    "sched_setaffinity", types.intc(types.intc, types.uintp, types.voidptr))


@numba.njit(parallel=True, cache=True)
def set_thread_affinity(masks, status):  # pragma: no cover - compiled
    """Worker thread ``t`` (numba's thread id) takes the CPU set ``masks[t]``.

    ``masks``: uint64 array (n_threads, words), one ``cpu_set_t`` per row; ``status[t]``
    receives thread ``t``'s return code (0 on success) and keeps its initial value if no
    iteration ran on that thread: the caller checks that every thread answered.
    """
    for _ in numba.prange(masks.shape[0]):
        thread = numba.get_thread_id()
        status[thread] = _sched_setaffinity(0, masks.shape[1] * 8, masks[thread].ctypes.data)
