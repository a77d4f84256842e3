"""One BLAS thread for the steps whose bits would otherwise follow BLAS's thread count.

BLAS's thread count is a setting of the whole process (OpenBLAS, MKL), and threadpoolctl's
``threadpool_limits`` saves it on entry and restores it on exit. Two fits in two threads
then race: the second saves the first one's limit of 1 and restores it last, and the
process stays on one BLAS thread, slower, for every later fit. :func:`one_blas_thread`
counts the holders instead: the first sets the limit, the last restores the count found
before, and the ones in between change nothing.

threadpoolctl 3.8 lets only one "controlling" thread change OpenBLAS's pthreads pool (the
first that set a limit, until it clears itself), and a call from any other thread does
nothing, silently. The holder that sets the limit and the one that restores it may be
different threads (a fit in a dask worker after one in the main thread, two fits in two
threads), so each takes control explicitly first and hands it back after: otherwise a limit
asked for from a worker thread is ignored, and the products whose bits follow BLAS's thread
count (``unimap.decomposition.blocked``) change with it.

The limit is process state, so the counter that guards it is too (the one module-level
object of the runtime, with a lock).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["one_blas_thread"]


class _SharedLimit:
    """The holders of the process's one-thread BLAS limit, and what to restore after them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._limiter: Any = None

    def enter(self) -> None:
        with self._lock:
            if self._holders == 0:
                from threadpoolctl import threadpool_limits

                _release_openblas_control()
                self._limiter = threadpool_limits(1, user_api="blas")
                _release_openblas_control()
            self._holders += 1

    def exit(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                limiter, self._limiter = self._limiter, None
                _release_openblas_control()
                limiter.restore_original_limits()
                _release_openblas_control()


def _release_openblas_control() -> None:
    """Let the next thread that asks change OpenBLAS's thread count (threadpoolctl ≥ 3.8;
    earlier versions let any thread change it)."""
    from threadpoolctl import OpenBLASController

    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


_LIMIT = _SharedLimit()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread for the body; the count before is restored when the last of the
    concurrent bodies (in any thread) ends."""
    _LIMIT.enter()
    try:
        yield
    finally:
        _LIMIT.exit()
