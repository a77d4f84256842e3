"""Each worker's peak memory during GDR's epochs on a Dask cluster, against the estimate that
:func:`unimap.dask.epochs.worker_epoch_bytes` gives before the epochs start (issue 55).

Usage::

    python benchmarks/dask_epoch_memory.py [--n 1000000] [--workers 2] [--parts 2 8]

On a ``LocalCluster`` of single-thread worker processes: the ``sheets`` rows of
``dask_fit.py`` as a dask array, their kNN graph built on the cluster
(:func:`unimap.dask.knn_graph`); then, on a fresh cluster for each number of parts, a small
fit (so that the workers have loaded unimap's kernels), every worker's peak resident memory
reset (``/proc/self/clear_refs``) and ``GDR(precomputed_knn=graph, init="random")`` fitted to
the dask array. With the graph given and a random start the workers run only the epochs, so
their peak (``VmHWM``) is the epochs' peak. It prints, per number of parts, each worker's
resident memory before the epochs (the interpreter, the kernels, dask, its blocks of rows),
its peak during them, the growth, and the estimate (``worker_memory_estimate_``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dask_fit import _dask_rows  # noqa: E402
from dask_place import machine_state  # noqa: E402


def _reset_peak() -> int:
    """On a worker: reset its peak resident memory to the current; returns the current."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return _status("VmRSS")


def _status(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            name, _, value = line.partition(":")
            if name == key:
                return int(value.split()[0]) * 1024
    raise KeyError(key)


def _peak() -> int:
    return _status("VmHWM")


def main() -> None:
    import dask.array as da
    import distributed

    import unimap
    from unimap.runtime.memory import format_bytes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--parts", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    print(f"# {args.n:,} sheets rows, {args.workers} single-thread workers, "
          f"{args.epochs} epochs; {machine_state()}")
    def local_cluster():
        return distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                        processes=True, dashboard_address=None,
                                        memory_limit=0)

    with local_cluster() as cluster, distributed.Client(cluster) as client:
        start = client.run(_reset_peak)
        tic = time.perf_counter()
        graph = unimap.dask.knn_graph(_dask_rows("sheets", args.n), n_neighbors=15,
                                      random_state=0).compute()
        peaks = client.run(_peak)
        print(f"kNN graph on the cluster: {time.perf_counter() - tic:.1f} s; per worker: "
              f"{' / '.join(format_bytes(start[w]) for w in sorted(start))} at the start, "
              f"peak {' / '.join(format_bytes(peaks[w]) for w in sorted(peaks))}")
    print("| parts | epochs s | baseline per worker | peak per worker | growth | estimate |")
    print("|---|---|---|---|---|---|")
    for n_parts in args.parts:  # a fresh cluster each: a worker's allocator keeps its peak
        with local_cluster() as cluster, distributed.Client(cluster) as client:
            X = _dask_rows("sheets", args.n).persist()
            distributed.wait(X)
            # a small fit first, so that the workers have imported unimap and loaded its
            # kernels: the growth measured below is the epochs' alone
            warm = da.random.default_rng(0).standard_normal((3_000, 8), chunks=1_000)
            unimap.dask.fit_on_cluster(unimap.GDR(n_epochs=5, random_state=0), warm,
                                       client=client, n_parts=n_parts)
            before = client.run(_reset_peak)
            est = unimap.GDR(precomputed_knn=graph, init="random", n_epochs=args.epochs,
                             random_state=0)
            tic = time.perf_counter()
            unimap.dask.fit_on_cluster(est, X, client=client, n_parts=n_parts)
            seconds = time.perf_counter() - tic
            peaks = client.run(_peak)
        growth = {w: peaks[w] - before[w] for w in peaks}
        estimate = getattr(est, "worker_memory_estimate_", 0) or 0
        print(f"| {n_parts} | {seconds:.1f} | "
              f"{' / '.join(format_bytes(before[w]) for w in sorted(before))} | "
              f"{' / '.join(format_bytes(peaks[w]) for w in sorted(peaks))} | "
              f"{' / '.join(format_bytes(growth[w]) for w in sorted(growth))} | "
              f"{format_bytes(estimate)} |", flush=True)
    print(f"# after: {machine_state()}")
    assert np.isfinite(est.embedding_).all()


if __name__ == "__main__":
    main()
