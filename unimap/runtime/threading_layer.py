"""numba's threading layer: TBB, so that a process may fork after a fit and fit in threads.

numba runs parallel kernels on one of three layers, chosen once per process at the first
parallel launch. Its default on Linux is GNU OpenMP, whose thread pool does not survive
``fork``: a child that runs a parallel kernel after its parent did is killed ("fork() called
from a process already using GNU OpenMP"), and a fork-based ``multiprocessing.Pool``, loky,
Dask's process workers or a PyTorch DataLoader then hangs. The workqueue layer survives fork
but aborts when two threads launch kernels at once. TBB does both, and its workers steal
work, so a descheduled thread delays only the block it holds.

The ``tbb`` wheel (a dependency of unimap) puts ``libtbb`` in the environment's ``lib/``,
which the dynamic loader does not search from a virtual environment, so numba would report
"No threading layer could be loaded". :func:`choose_threading_layer` loads the library by
its path first (its soname then resolves numba's import) and selects the layer, unless the
user chose one (``NUMBA_THREADING_LAYER``) or numba's threads already run. Embeddings do not
depend on the layer: every kernel's result is independent of the thread schedule.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path

__all__ = ["choose_threading_layer", "threading_layer_report"]

_LIBRARY_NAMES = {"linux": ("libtbb.so.12",), "darwin": ("libtbb.12.dylib",),
                  "win32": ("tbb12.dll",)}


def _tbb_library_candidates() -> list[Path]:
    """Where the ``tbb`` distribution's shared library may lie: its recorded files, then the
    ``lib`` folders of this environment."""
    names = _LIBRARY_NAMES.get(sys.platform, ())
    candidates: list[Path] = []
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        dist = distribution("tbb")
        for file in dist.files or ():
            if file.name in names:
                candidates.append(Path(dist.locate_file(file)).resolve())
    except PackageNotFoundError:
        pass
    for prefix in {sys.prefix, sys.base_prefix}:
        for folder in ("lib", "Library/bin"):
            candidates.extend(Path(prefix, folder, name) for name in names)
    return candidates


@functools.cache
def _load_tbb() -> bool:
    """Load TBB's shared library into the process (once); True if it is loaded."""
    for path in _tbb_library_candidates():
        if path.is_file():
            try:
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                return True
            except OSError:
                continue
    return False


def _threads_launched() -> bool:
    from numba.np.ufunc import parallel

    return bool(getattr(parallel, "_is_initialized", False))


def choose_threading_layer() -> str:
    """Select TBB as numba's threading layer where the choice is still open; return the
    layer in use or to be used ("tbb", or numba's own choice: "default", "omp", ...).

    Cheap after the first call. A user's ``NUMBA_THREADING_LAYER`` is kept as set.
    """
    import numba

    if _threads_launched():
        return str(numba.threading_layer())
    if "NUMBA_THREADING_LAYER" in os.environ or numba.config.THREADING_LAYER != "default":
        return str(numba.config.THREADING_LAYER)
    if _load_tbb():
        try:
            from numba.np.ufunc import tbbpool  # noqa: F401  (fails if TBB is too old)
        except ImportError:
            return "default"
        numba.config.THREADING_LAYER = "tbb"
        return "tbb"
    return "default"


def threading_layer_report() -> dict[str, object]:
    """The threading layer and what it is safe for (for ``unimap info``); starts numba's
    threads, so that the layer numba settled on is the one reported."""
    import numba

    choose_threading_layer()
    numba.get_num_threads()  # launches the threads on the chosen layer
    layer = str(numba.threading_layer())
    return {"threading_layer": layer,
            "fork_safe": layer in ("tbb", "workqueue"),
            "thread_safe": layer in ("tbb", "omp")}
