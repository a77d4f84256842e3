"""Wide data on Dask: reduce on the cluster, fit every row on one machine (issue 23, item 3).

Usage::

    python benchmarks/dask_reduce.py                       # 1M x 500, 2 workers
    python benchmarks/dask_reduce.py --n 200000 --out benchmarks/results/dask_reduce.md

The data: 30 centres drawn N(0, 0.2²) in ``--dim`` (500) dimensions, each point a centre plus
N(0, 1) noise, float32, generated block by block on the workers from the seed and the
block's number (the N rows never sit in the client). The centres differ by ~40 in squared
distance against ~1000 ± 60 of noise between two points, so the clusters overlap: on 20,000
rows the 50 components' 10-NN accuracy is 0.92, not 1 (a mixture whose accuracy saturates
cannot tell the recipes apart).

Steps, each timed:

1. start a ``LocalCluster`` (``--workers`` processes, ``--threads`` threads each);
2. ``unimap.PCA(50).fit(X)`` on the dask array: one pass over the blocks, the moments merged
   on the workers;
3. ``pca.transform(X).compute()``: the (N, 50) projection gathered in the client;
4. ``unimap.GDR(random_state=0).fit(Z)``: every row, with its own kNN graph;
5. for comparison, the sample recipe on the same Z: ``GDR`` fitted on ``--sample`` rows,
   every row placed by ``transform`` (in memory).

Reported: the times, each worker's peak resident memory (``VmHWM``), the client's peak, and
10-NN accuracy (5-fold, ``unimap.metrics.knn_accuracy``) on the mixture labels of ``--eval``
points: of the full fit, of the placed points, of the sample's own embedding, and of the
50 components themselves (the ceiling a 2-D map is judged against). Plus the machine's state.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
from dask_place import emit, machine_state  # benchmarks/ is the script's directory

CENTRES, SEED, SPREAD = 30, 0, 0.2


def _centres(dim: int) -> np.ndarray:
    return (np.random.default_rng(SEED).standard_normal((CENTRES, dim)) * SPREAD
            ).astype(np.float32)


def _rows(block: int, rows: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([SEED, 2, block])
    labels = rng.integers(0, CENTRES, rows)
    return _centres(dim)[labels] + rng.standard_normal((rows, dim), dtype=np.float32), labels


def _block(dim, block_info=None):
    info = block_info[None]
    return _rows(info["chunk-location"][0], info["chunk-shape"][0], dim)[0]


def _labels_block(dim, block_info=None):
    info = block_info[None]
    return np.random.default_rng([SEED, 2, info["chunk-location"][0]]).integers(
        0, CENTRES, info["chunk-shape"][0])


def _worker_peak() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def run(args: argparse.Namespace) -> dict:
    import dask.array as da
    import distributed

    import unimap

    n, dim, chunk = args.n, args.dim, args.chunk
    res: dict = {"args": vars(args), "state_before": machine_state()}
    chunks = (chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ())
    tic = time.perf_counter()
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=args.threads,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        res["cluster_s"] = time.perf_counter() - tic
        X = da.map_blocks(_block, dim, chunks=(chunks, (dim,)), dtype=np.float32,
                          meta=np.empty((0, dim), np.float32))
        labels = da.map_blocks(_labels_block, dim, chunks=(chunks,), dtype=np.int64,
                               meta=np.empty((0,), np.int64)).compute()
        tic = time.perf_counter()
        pca = unimap.PCA(n_components=50).fit(X)
        res["pca_fit_s"] = time.perf_counter() - tic
        tic = time.perf_counter()
        Z = pca.transform(X).compute()
        res["project_s"] = time.perf_counter() - tic
        res["worker_peak"] = distributed.get_client().run(_worker_peak)
    res["explained"] = float(pca.explained_variance_ratio_.sum())

    tic = time.perf_counter()
    full = unimap.GDR(random_state=0).fit(Z)
    res["fit_all_s"] = time.perf_counter() - tic
    res["fit_all_timings"] = {k: round(v, 1) for k, v in full.timings_.items()}

    rng = np.random.default_rng(1)
    sample = np.sort(rng.choice(n, size=min(args.sample, n), replace=False))
    tic = time.perf_counter()
    part = unimap.GDR(random_state=0).fit(Z[sample])
    res["fit_sample_s"] = time.perf_counter() - tic
    tic = time.perf_counter()
    placed = part.transform(Z)
    res["place_s"] = time.perf_counter() - tic
    res["client_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    res["state_after"] = machine_state()

    ev = np.sort(np.random.default_rng(2).choice(n, size=min(args.eval, n), replace=False))
    own = np.random.default_rng(3).choice(sample.size, size=min(args.eval, sample.size),
                                          replace=False)
    acc = unimap.metrics.knn_accuracy
    res["acc"] = {
        "50 components": acc(Z[ev], labels[ev], 10),
        "GDR on all rows": acc(full.embedding_[ev], labels[ev], 10),
        f"GDR on {sample.size:,} rows, all placed": acc(placed[ev], labels[ev], 10),
        f"GDR on {sample.size:,} rows, its own embedding": acc(part.embedding_[own],
                                                              labels[sample][own], 10),
    }
    return res


def report(res: dict) -> str:
    a = res["args"]
    mib = 1 << 20
    lines = [
        f"## {a['n']:,} x {a['dim']} float32, {a['workers']} workers x {a['threads']} thread(s)"
        " (LocalCluster, processes)",
        "",
        f"`python benchmarks/dask_reduce.py --n {a['n']} --dim {a['dim']}`; machine: "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, python "
        f"{platform.python_version()}",
        f"- before: {res['state_before']}",
        f"- after: {res['state_after']}",
        "",
        "| step | seconds |",
        "|---|---|",
        f"| start the cluster | {res['cluster_s']:.1f} |",
        f"| PCA(50).fit of the dask array (blocks generated and reduced on the workers) | "
        f"{res['pca_fit_s']:.1f} |",
        f"| transform and gather the ({a['n']:,}, 50) projection | {res['project_s']:.1f} |",
        f"| GDR fit of all {a['n']:,} rows (client) {res['fit_all_timings']} | "
        f"{res['fit_all_s']:.1f} |",
        f"| for comparison: GDR fit of a {a['sample']:,}-row sample | {res['fit_sample_s']:.1f} |",
        f"| ... and transform of all rows (client) | {res['place_s']:.1f} |",
        "",
        f"Explained variance of the 50 components: {res['explained']:.3f}. Peak resident "
        "memory: workers " + ", ".join(f"{v / mib:.0f} MiB" for v in res["worker_peak"].values())
        + f"; client {res['client_peak'] / mib:.0f} MiB (the projection, the fits, the "
        "placement).",
        "",
        f"10-NN accuracy on the mixture labels (5-fold, {a['eval']:,} points each):",
        "",
    ]
    lines += [f"- {name}: {value:.4f}" for name, value in res["acc"].items()]
    return "\n".join(lines + [""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=500)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval", type=int, default=20_000)
    parser.add_argument("--out", type=Path, help="append the report to this Markdown file")
    args = parser.parse_args()
    emit(report(run(args)), args.out)


if __name__ == "__main__":
    sys.exit(main())
