"""The thread runtime: how many threads a fit uses, and epochs that tolerate a busy host.

Every parallel kernel is deterministic for any thread count (each output row is written by
one thread, reductions run in a fixed order), so the count is free to follow the machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from unimap._validation import check_int

__all__ = ["PARALLEL_MIN_ROWS", "resolve_n_jobs", "numba_threads", "AdaptiveThreads",
           "adaptive_threads"]

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

    previous = numba.get_num_threads()
    if n_threads is not None:
        numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(previous)


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
      the gap doubling after each losing probe (epochs 15, 75, 195, 435 on a quiet
      machine: 4 of GDR's 500 epochs on one thread).

    A probe that beats the mean of the last ``history`` threaded epochs by ``win_margin``
    (takes at most 0.9 of it) keeps one thread for ``period`` epochs (doubling, up to 8
    ``period``, while probes keep winning), after which threads are tried again. A change
    probe that loses means the work per epoch may have grown, so the reference is measured
    anew. The measurements behind these rules are in
    ``docs/architecture.md``.
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
        # The epochs claim row blocks dynamically (unimap._kernels.dynamic), so threads beat
        # one thread on a busy host too, on average; but a threaded epoch whose barrier waits
        # for a preempted thread is slow, and such epochs come in runs (GDR, MNIST-70k, a
        # competitor on one of 2 cores: 24 ms threaded, 36-48 ms in runs of up to 7, 32 ms on
        # one thread). Compared with the median of the last 3, probes won during each run and
        # 180 of 200 epochs ran on one thread (optimize 6.6 s, fixed threads 5.4 s): the probe
        # now has to beat the mean of a longer history, by a margin.
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

    def start_epoch(self, epoch: int) -> None:
        self._epoch = epoch
        self._current = 1 if epoch < self._single_until else self._next
        self._numba.set_num_threads(self._current)
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
    import numba

    return AdaptiveThreads(numba.get_num_threads() if n_rows >= PARALLEL_MIN_ROWS else 1)
