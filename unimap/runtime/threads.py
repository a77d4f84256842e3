"""The thread runtime: how many threads a fit uses, and epochs that tolerate a busy host.

Every parallel kernel is deterministic for any thread count (each output row is written by
one thread, reductions run in a fixed order), so the count is free to follow the machine.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

from unimap.runtime.threading_layer import choose_threading_layer
from unimap.runtime.user_warnings import warn_user
from unimap.runtime.validation import check_int

__all__ = ["PARALLEL_MIN_ROWS", "resolve_n_jobs", "numba_threads", "spread_threads",
           "ThreadSpread", "pinned_pool", "AdaptiveThreads", "adaptive_threads",
           "epoch_threads", "set_numba_affinity"]

PARALLEL_MIN_ROWS = 512  # below this many rows a serial epoch beats waking the thread pool


def resolve_n_jobs(n_jobs: Any) -> int:
    """Number of threads for ``n_jobs`` (None or -1: all cores; -2: all but one; ...)."""
    n_cpus = os.cpu_count() or 1
    if n_jobs is None:
        return n_cpus
    n_jobs = check_int(n_jobs, "n_jobs")
    if n_jobs == 0:
        raise ValueError("n_jobs must be a positive integer or negative (-1 = all cores), got 0")
    if n_jobs < 0:
        return max(1, n_cpus + 1 + n_jobs)
    return n_jobs


@contextmanager
def numba_threads(n_threads: int | None) -> Iterator[int]:
    """Run numba parallel kernels with ``n_threads`` threads (None: keep the current count);
    on exit, restore the count found on entry, whatever the body set in between."""
    import numba

    choose_threading_layer()
    previous = numba.get_num_threads()
    if n_threads is not None:
        numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(previous)


def _spread_cpus(n_threads: int, numba_workers: bool = True) -> list[int] | None:
    """The CPUs to pin ``n_threads`` threads to, one each, or None to leave them alone.

    Pinning is only for threads that use every CPU this process may run on (on numba's
    OpenMP layer: :func:`_threads_have_ids`): then no CPU is left for the scheduler to move a
    thread to, and pinning cannot stack two of our threads on one CPU. Fewer threads than
    CPUs (``n_jobs=2`` on 4 cores, or two processes sharing a machine) stay unpinned, and
    ``UNIMAP_PIN_THREADS=0`` turns pinning off. ``numba_workers=False``: Python threads
    (:func:`pinned_pool`), pinned on any threading layer.
    """
    if (n_threads < 2 or not sys.platform.startswith("linux")
            or not hasattr(os, "sched_getaffinity")
            or os.environ.get("UNIMAP_PIN_THREADS", "1") == "0"
            or (numba_workers and not _threads_have_ids())):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus if len(cpus) == n_threads else None


def _threads_have_ids() -> bool:
    """Whether numba's thread ``t`` is one fixed OS thread that runs iteration ``t`` of a
    ``prange`` over the thread count (OpenMP's static schedule), which pinning relies on.
    TBB's workers steal iterations, so pinning is off there; its stealing also moves work
    off a descheduled thread, the problem pinning solves."""
    import numba

    try:
        return numba.threading_layer() == "omp"
    except ValueError:  # numba's threads not launched yet
        return False


def _cpu_masks(cpu_sets: list[Any]) -> np.ndarray:
    """One ``cpu_set_t`` (1024 bits as 16 uint64 words) per row, from sets of CPU numbers."""
    masks = np.zeros((len(cpu_sets), 16), dtype=np.uint64)
    for row, cpus in enumerate(cpu_sets):
        for cpu in cpus:
            masks[row, cpu // 64] |= np.uint64(1) << np.uint64(cpu % 64)
    return masks


def set_numba_affinity(cpu_sets: list[Any]) -> bool:
    """Give numba's worker thread ``t`` the CPUs ``cpu_sets[t]``; True if every thread did."""
    from unimap.runtime.pinning_numba import set_thread_affinity

    status = np.full(len(cpu_sets), -1, dtype=np.int32)
    set_thread_affinity(_cpu_masks(cpu_sets), status)
    return bool(np.all(status == 0))


class ThreadSpread:
    """numba's worker threads pinned one per CPU (made by :func:`spread_threads`).

    :meth:`follow` keeps the pinning right when the thread count changes: a one-thread epoch
    runs on numba's thread 0 (OpenMP's calling thread), which is pinned to the first CPU, and
    if another program holds that CPU the epoch would run at its speed. So thread 0 gets the
    process's CPUs back while the count is 1, and every worker its own CPU again after.
    """

    def __init__(self, cpus: list[int], previous: set[int]) -> None:
        self.cpus = cpus
        self.previous = previous
        self.spread = set_numba_affinity([[cpu] for cpu in cpus])

    def __bool__(self) -> bool:
        return self.spread

    def follow(self, n_threads: int) -> None:
        """Call after changing numba's thread count to ``n_threads``."""
        spread = n_threads == len(self.cpus)
        if spread != self.spread:
            self.spread = spread and set_numba_affinity([[cpu] for cpu in self.cpus])
            if not spread:
                set_numba_affinity([self.previous] * n_threads)


@contextmanager
def spread_threads(when: bool = True) -> Iterator[ThreadSpread | None]:
    """Pin numba's worker threads one per CPU for the body; restore their affinity after.

    Yields the :class:`ThreadSpread` (truthy while the threads are pinned), or None where
    they are left alone: ``when`` false (a caller's serial epochs), or see
    :func:`_spread_cpus`. Why: with another program on one of 2 cores, Linux often runs both
    of a fit's threads on the other core (3 runnable tasks on 2 cores look balanced to it
    either way), and the fit runs on one core. Pinned, the thread on the busy core runs at
    about half speed and the dynamically claimed blocks give the other one more work
    (measured: benchmarks/results/architecture_notes.md). The affinity does not change any
    result.
    """
    import numba

    n_threads = numba.get_num_threads()
    cpus = _spread_cpus(n_threads) if when else None
    if cpus is None:
        yield None
        return
    previous = os.sched_getaffinity(0)
    spread = ThreadSpread(cpus, previous)
    try:
        yield spread
    finally:
        # every worker of the team that was pinned, whatever the body set the count to
        with numba_threads(n_threads):
            restored = set_numba_affinity([previous] * n_threads)
        os.sched_setaffinity(0, previous)  # the calling thread, in any case
        if not restored:
            warn_user("unimap could not restore the CPU affinity of numba's worker "
                      "threads; set UNIMAP_PIN_THREADS=0 to turn pinning off",
                      RuntimeWarning)


def pinned_pool(n_threads: int) -> ThreadPoolExecutor:
    """A thread pool of ``n_threads`` workers, each pinned to its own CPU when they use every
    CPU of the process (see :func:`spread_threads`); its threads die with the pool."""
    cpus = _spread_cpus(n_threads, numba_workers=False)
    if cpus is None:
        return ThreadPoolExecutor(max_workers=n_threads)
    free = list(cpus)
    lock = threading.Lock()

    def pin() -> None:
        with lock:
            cpu = free.pop()
        os.sched_setaffinity(0, {cpu})

    return ThreadPoolExecutor(max_workers=n_threads, initializer=pin)


class AdaptiveThreads:
    """Run epochs on ``max_threads``, or on one thread while that is faster.

    An epoch is one or many parallel steps, each ending in a barrier; when other programs
    keep a core busy, a descheduled thread stalls every barrier and threads can be slower
    than one. The embedding does not depend on the thread count, so the count can follow the
    machine. Two triggers time one epoch on one thread (a probe):

    - a change: the median of the last ``confirm`` threaded epochs takes ``slow_factor``
      times the reference, the lowest median of ``window`` consecutive threaded epochs seen
      after the first ``warmup`` epochs (a median, so that one odd epoch is no reference);
    - a schedule, for load that was there from the start (then the reference itself is
      slow and the first trigger never fires): a probe ``probe_gap`` epochs after warmup,
      the gap doubling after each losing probe, so a quiet machine runs few epochs on one
      thread.

    A probe that beats the mean of the last ``history`` threaded epochs by ``win_margin``
    (takes at most 0.9 of it) keeps one thread for ``period`` epochs (doubling, up to 8
    ``period``, while probes keep winning), after which threads are tried again. A change
    probe that loses means the work per epoch may have grown, so the reference is measured
    anew. The measurements behind these rules are in
    ``benchmarks/results/architecture_notes.md``.
    """

    def __init__(self, max_threads: int, period: int = 20, slow_factor: float = 1.5,
                 warmup: int = 10, window: int = 5, confirm: int = 3, probe_gap: int = 30,
                 win_margin: float = 0.9, history: int = 12,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        import numba

        self._numba = numba
        self.max_threads = max(1, max_threads)
        self.period = period
        self.slow_factor = slow_factor
        self.warmup = warmup
        self.window = window
        self.confirm = min(confirm, window)
        # The epochs claim row blocks dynamically (unimap.runtime.dynamic_numba), so threads beat
        # one thread on a busy host too, on average; but a threaded epoch whose barrier waits
        # for a preempted thread is slow, and such epochs come in runs, which a short median
        # mistakes for a slower machine. So a probe has to beat the mean of a longer history,
        # by a margin (measured: benchmarks/results/architecture_notes.md).
        self.win_margin = win_margin
        self.history = max(history, window)
        self._history: list[float] = []
        self._clock = clock
        self._recent: list[float] = []
        self._reference = np.inf
        self._next = self.max_threads
        self._single_until = -1
        self._gap = probe_gap
        self._next_probe = warmup + window
        self._scheduled = False
        self._wins = 0
        self.single_epochs = 0
        """Number of epochs run on one thread (for diagnostics)."""
        self._spread: ThreadSpread | None = None

    @contextmanager
    def spread(self) -> Iterator[ThreadSpread | None]:
        """Pin the workers one per CPU while the epochs run (:func:`spread_threads`); the
        one-thread epochs run unpinned."""
        with spread_threads(self.max_threads > 1) as spread:
            self._spread = spread
            try:
                yield spread
            finally:
                self._spread = None

    def start_epoch(self, epoch: int) -> None:
        self._epoch = epoch
        self._current = 1 if epoch < self._single_until else self._next
        self._numba.set_num_threads(self._current)
        if self._spread is not None:
            self._spread.follow(self._current)
        self._start = self._clock()

    def end_epoch(self) -> None:
        elapsed = self._clock() - self._start
        self._next = self.max_threads
        if self._current == 1 and self.max_threads > 1:
            self.single_epochs += 1
        if self.max_threads == 1 or self._epoch < self._single_until:
            return
        if self._current > 1:
            self._after_threaded(elapsed)
            return
        scheduled, self._scheduled = self._scheduled, False
        if self._history and elapsed < self.win_margin * float(np.mean(self._history)):
            self._wins += 1
            self._single_until = self._epoch + 1 + self.period * 2 ** min(self._wins - 1, 3)
            self._next_probe = self._single_until + self.confirm
        else:  # threads won
            self._wins = 0
            if scheduled:
                self._gap *= 2
                self._next_probe = self._epoch + self._gap
            else:  # their epochs may be longer because the work grew: measure anew
                self._recent, self._history = [], []
                self._reference = np.inf

    def _after_threaded(self, elapsed: float) -> None:
        self._recent = (self._recent + [elapsed])[-self.window:]
        self._history = (self._history + [elapsed])[-self.history:]
        if self._epoch < self.warmup or len(self._recent) < self.window:
            return
        self._reference = min(self._reference, float(np.median(self._recent)))
        if self._recent_median() > self.slow_factor * self._reference:
            self._next = 1  # a change: probe one thread next epoch
        elif self._epoch + 1 >= self._next_probe:
            self._next, self._scheduled = 1, True

    def _recent_median(self) -> float:
        """Median of the last ``confirm`` threaded epochs."""
        return float(np.median(self._recent[-self.confirm:]))


def adaptive_threads(n_rows: int) -> AdaptiveThreads:
    """Adaptive epochs on the current thread setting; one thread for fewer than
    ``PARALLEL_MIN_ROWS`` rows."""
    return AdaptiveThreads(epoch_threads(n_rows))


def epoch_threads(n_rows: int) -> int:
    """Threads for the epochs over ``n_rows`` rows: numba's current count, or one below
    ``PARALLEL_MIN_ROWS``."""
    import numba

    return numba.get_num_threads() if n_rows >= PARALLEL_MIN_ROWS else 1
