"""Compile numba's kernels ahead of the first call, into numba's on-disk cache.

The kernels are ``@njit(cache=True)``: numba keys each cached specialisation by a SHA-256 of
the module's source (not its modification time), the numba version, the Python version and
the CPU. Compiled once, they load in milliseconds in every later process. This module runs
the calls a user makes on small synthetic data, so that every kernel of those calls is
compiled and cached with the exact types the estimators pass. It runs

* when a wheel is built (``pip install .`` or from the sdist; ``_build/unimap_build.py``), so
  that the cache ships inside the installed package and the first call after install does
  not compile: the "ahead of time" step; set ``UNIMAP_PRECOMPILE=0`` to skip it;
* on demand, ``python -m unimap.cli.precompile`` (or ``unimap precompile``), where the shipped
  cache did not match: a different CPU, numba or Python version, or a read-only install
  whose cache numba keeps in the user's cache folder instead.

Covered: the 2-D fits of UMAP, TSNE (FFT, Barnes-Hut, exact), GDR (both modes), each with
exact and HNSW neighbours, spectral and PCA initialization (also of a disconnected graph),
``transform`` of each, the quality metrics, the k-means cells of the sharded kNN graph
(500,000+ points) and UMAP's pooled negative samples (50,000+ points); where the gpu extra
and a GPU are present,
also the CUDA kernels of the ``device="cuda"`` fits (kNN graph, affinities, spectral and PCA
starts, UMAP, GDR in both modes, PCA) into numba-cuda's cache. Other cases
(``n_components=3``, other metrics) compile on first use.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
import warnings
from collections.abc import Callable

import numpy as np

# Small enough to run in seconds once compiled, large enough that every phase runs its real
# code path (spectral init on a connected graph, all three t-SNE repulsion methods).
N_POINTS = 600
N_FEATURES = 12


def _blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, N_POINTS)
    centres = rng.normal(scale=6.0, size=(4, N_FEATURES))
    X = centres[labels] + rng.normal(size=(N_POINTS, N_FEATURES))
    return X.astype(np.float32), labels


def _tasks() -> list[tuple[str, Callable[[np.ndarray, np.ndarray], object]]]:
    """The calls to run: each declared method's fits (:mod:`unimap.methods.registry`, its
    ``precompile``), then the kernels no fit of 600 points reaches, then the CUDA fits."""
    from unimap import metrics
    from unimap.methods import registry

    def quality(X, labels):
        Y = X[:, :2]
        metrics.trustworthiness(X, Y, n_neighbors=10)
        metrics.knn_accuracy(Y, labels, n_neighbors=10)
        metrics.knn_recall(X, Y, n_neighbors=10)

    # The fits say device="cpu": where the gpu extra and a GPU are present, "auto" would send
    # them to the GPU and leave the CPU kernels uncompiled; the GPU's get their own tasks.
    fits = [(declared, fit) for declared in registry.declarations()
            for fit in declared.precompile]
    return [(fit.label, _fit_task(declared, fit)) for declared, fit in fits] + [
        ("metrics", quality),
        ("kNN cells", _knn_cells),
        ("UMAP, pooled negatives", _umap_pooled),
        ("thread affinity", _thread_affinity),
    ] + _gpu_tasks()


def _fit_task(declared, fit) -> Callable[[np.ndarray, np.ndarray], object]:
    """Fit the declared configuration and place 40 new points; ``components``: fit 8 groups
    far apart instead (the meta layout of a disconnected graph)."""
    from unimap.methods import registry

    def run(X, _labels):
        est = registry.estimator_class(declared.name)(**fit.params)
        if fit.components:
            return est.fit(X + 1000.0 * (np.arange(X.shape[0]) % 8)[:, None].astype(np.float32))
        est.fit(X)
        return est.transform(X[:40] + 0.01)
    return run


def _knn_cells(X: np.ndarray, _labels: np.ndarray) -> None:
    """Compile the kernels of the kNN graph's k-means cells (fits of 500,000+ points,
    :mod:`unimap.neighbors.sharded`): the k-means, and the cells of the blobs and of new points."""
    from unimap.neighbors.kmeans import kmeans
    from unimap.neighbors.sharded import ShardedHNSWIndex

    kmeans(X, 4, 0)  # its distance kernel, as the fits' k-means (float32 rows) calls it
    index = ShardedHNSWIndex(X, 1, pca=None, centroids=X[:4])
    index.search(index.data, 15)
    index.search(X[:40] + np.float32(0.01), 15)


def _umap_pooled(X: np.ndarray, _labels: np.ndarray) -> None:
    """Compile UMAP's 2-D epoch with pooled negative samples, which fits of 50,000+ points
    run (:data:`unimap.optimizers.sampling.POOLED_NEGATIVES_MIN_ROWS`), with the fit's argument
    types."""
    from unimap import UMAP
    from unimap.optimizers.sampling import NEGATIVE_POOL
    from unimap.optimizers.umap_sgd.fit import umap_sgd_fit

    model = UMAP(n_epochs=5, random_state=0, max_memory=None, device="cpu").fit(X)
    umap_sgd_fit(model.embedding_, model.graph_, n_epochs=5, a=model.a_, b=model.b_, seed=0,
                 negative_pool=NEGATIVE_POOL)


def _thread_affinity(_X: np.ndarray, _labels: np.ndarray) -> None:
    """Compile the kernel that pins threads (spread_threads, on Linux only): every thread of
    numba's pool gets the calling thread's CPU set, which it has anyway."""
    import os
    import sys

    import numba

    if sys.platform.startswith("linux") and hasattr(os, "sched_getaffinity"):
        from unimap.runtime.threads import set_numba_affinity

        set_numba_affinity([os.sched_getaffinity(0)] * numba.get_num_threads())


def _gpu_tasks() -> list:
    """The declared fits that compile the CUDA kernels into numba-cuda's cache (each
    method's ``gpu_precompile``), where a GPU is usable (never in the simulator, whose kernels
    are not compiled)."""
    from unimap.methods import registry
    from unimap.runtime.device import cuda_status, simulated

    if simulated() or importlib.util.find_spec("numba_cuda") is None or not cuda_status()[0]:
        return []
    return [(fit.label, _fit_task(declared, fit)) for declared in registry.declarations()
            for fit in declared.gpu_precompile]


def precompile(*, verbose: bool = False) -> dict[str, float]:
    """Compile, or load from numba's cache, the kernels of the common calls.

    Parameters
    ----------
    verbose : bool, default=False
        Print each call and its time.

    Returns
    -------
    seconds : dict of str to float
        Wall time of each call: compile time on an empty cache, milliseconds on a full one.
    """
    X, labels = _blobs()
    seconds = {}
    for name, run in _tasks():
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            # Tiny data and few epochs draw warnings that mean nothing here.
            warnings.simplefilter("ignore")
            run(X, labels)
        seconds[name] = time.perf_counter() - t0
        if verbose:
            print(f"  {name:<18} {seconds[name]:6.2f} s", flush=True)
    return seconds


def cache_status() -> dict[str, bool] | None:
    """Which kernels numba's disk cache holds, and whether for this machine.

    Returns
    -------
    status : dict of str to bool, or None
        ``"module.function"`` of every kernel with a cache index, True where an entry was
        compiled for this CPU, numba and Python (loaded, not compiled, on first use). None
        where numba's cache internals are not as expected (another numba version).
    """
    import importlib
    from pathlib import Path

    try:
        from numba.core.registry import cpu_target

        machine = cpu_target.target_context.codegen().magic_tuple()
        status = {}
        package = Path(__file__).resolve().parents[1]
        for path in sorted(package.rglob("*_numba.py")):  # numba code lives only in these
            stage = ".".join(path.relative_to(package).with_suffix("").parts)
            module = importlib.import_module(f"unimap.{stage}")
            for name, obj in vars(module).items():
                cache_file = getattr(getattr(obj, "_cache", None), "_cache_file", None)
                if cache_file is None or getattr(obj, "__module__", None) != module.__name__:
                    continue
                overloads = cache_file._load_index()  # numba's own index, {} when stale
                if overloads:
                    status[f"{stage}.{name}"] = any(key[1] == machine for key in overloads)
        return status
    except Exception:  # numba's private cache API moved: say "unknown", never fail
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m unimap.cli.precompile",
        description="Compile unimap's numba kernels into numba's cache, so that later "
                    "processes start without compiling.")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if not args.quiet:
        print("unimap: compiling the numba kernels (once per install)", flush=True)
    precompile(verbose=not args.quiet)
    if not args.quiet:
        print(f"unimap: kernels ready in {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
