"""The kNN graph of millions of points built on a dask LocalCluster (issue 23, item 3).

Usage::

    python benchmarks/dask_knn.py --n 1000000 --in-memory --fit   # against one process
    python benchmarks/dask_knn.py --n 10000000 [--out benchmarks/results/dask_knn.md]

The data is the issue's Gaussian mixture (``dask_place.py``: 30 centres in 50-D, float32),
generated block by block on the workers, so the N points never sit in the client. Steps:

1. start a ``LocalCluster`` (``--workers`` processes, ``--threads`` threads each);
2. ``unimap.dask.knn_graph(X, 15, random_state=0)`` (default shards and probes) and its
   ``compute()``: the (N, 15) indices and distances gathered in the client;
3. the exact 15 neighbours of ``--queries`` sampled rows, computed on the cluster (every block
   against the queries), and the graph's recall@15 on them;
4. with ``--in-memory``: the same points generated in this process and the in-memory graph
   (``unimap.neighbors.graph.nearest_neighbors``, all cores), timed, and its recall on the same
   rows;
5. with ``--fit``: ``GDR(precomputed_knn=graph)`` fitted on all N rows in this process, and
   ``GDR()``'s own fit (its own kNN), with the 10-NN accuracy of ``--eval`` embedded points on
   the mixture labels;
6. with ``--probes 1,2,4`` (and ``--shards``): the graph again for each further ``n_probe``
   over the same shards, and its recall on the same rows (``knn_graph``'s sharding loss).

Reported: times, each worker's peak resident memory (``VmHWM``), the client's peak, recall,
and the machine's state (``top``'s steal ``st``, the load average) before and after.
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
from dask_place import (
    D,
    _block,
    _worker_memory,
    emit,
    machine_state,
    mixture_block,
    mixture_labels,
)

K = 15


def _block_top(block: np.ndarray, first_row: int, queries: np.ndarray) -> tuple:
    """The K nearest rows of one block for every query (exact, float64 distances)."""
    block = block.astype(np.float64)
    d2 = ((queries ** 2).sum(1)[:, None] - 2.0 * queries @ block.T
          + (block ** 2).sum(1)[None, :])
    k = min(K, block.shape[0])
    part = np.argpartition(d2, k - 1, axis=1)[:, :k]
    return first_row + part, np.take_along_axis(d2, part, axis=1)


def _worker_cpu_seconds() -> float:
    """This worker process's CPU seconds so far (user + system): the graph step's share per
    worker is the difference around it, which shows how the shards balance."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def exact_neighbors(X, rows: np.ndarray) -> np.ndarray:
    """(len(rows), K) exact neighbours (the row itself included) of some rows of X."""
    import dask

    queries = X[rows].compute().astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])])
    parts = dask.compute(*[dask.delayed(_block_top)(b, int(starts[i]), queries)
                           for i, b in enumerate(X.to_delayed().ravel())])
    ids = np.concatenate([p[0] for p in parts], axis=1)
    d2 = np.concatenate([p[1] for p in parts], axis=1)
    return np.take_along_axis(ids, np.argsort(d2, axis=1, kind="stable")[:, :K], axis=1)


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Recall@15 of the others (the row itself left out of both)."""
    hits = [np.intersect1d(a[1:], b[b != r]).size
            for r, a, b in zip(range(len(found)), found, exact, strict=True)]
    return float(np.mean(hits)) / (K - 1)


def run(args: argparse.Namespace) -> dict:
    import dask.array as da
    import distributed

    from unimap.dask.knn import knn_graph

    n, chunk = args.n, args.chunk
    res: dict = {"n": n, "chunk": chunk, "workers": args.workers, "threads": args.threads,
                 "queries": min(args.queries, n), "probes": args.probes,
                 "state_before": machine_state()}
    chunks = (chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ())
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(n, size=min(args.queries, n), replace=False))
    tic = time.perf_counter()
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=args.threads,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res["cluster_s"] = time.perf_counter() - tic
        X = da.map_blocks(_block, chunks=(chunks, (D,)), dtype=np.float32,
                          meta=np.empty((0, D), np.float32))
        tic = time.perf_counter()
        graph = knn_graph(X, K, n_shards=args.shards, n_probe=args.probes[0], random_state=0)
        res["plan_s"] = time.perf_counter() - tic  # the k-means sample and centroids
        res["shards"] = graph.centroids.shape[0]
        tic = time.perf_counter()
        cpu_before = client.run(_worker_cpu_seconds)
        indices, distances = graph.compute()
        res["knn_s"] = time.perf_counter() - tic
        cpu_after = client.run(_worker_cpu_seconds)
        res["worker_knn_cpu_s"] = {w: cpu_after[w] - cpu_before[w] for w in cpu_after}
        res["worker_memory"] = client.run(_worker_memory)
        tic = time.perf_counter()
        exact = exact_neighbors(X, rows)
        res["exact_s"] = time.perf_counter() - tic
        res["recall"] = recall(indices[rows], exact)
        # more probes over the same shards (same seed, same centroids): recall against n_probe
        res["probe_sweep"] = []
        for probes in args.probes[1:]:
            tic = time.perf_counter()
            swept = knn_graph(X, K, n_shards=args.shards, n_probe=probes, random_state=0)
            swept_indices = swept.compute()[0]
            res["probe_sweep"].append((probes, time.perf_counter() - tic,
                                       recall(swept_indices[rows], exact)))
            del swept_indices
    res["state_after"] = machine_state()
    assert indices.shape == (n, K) and np.isfinite(distances).all()
    if args.in_memory or args.fit:
        data = np.concatenate([mixture_block((b,), c) for b, c in enumerate(chunks)])
    if args.in_memory:
        from unimap.neighbors.graph import nearest_neighbors

        tic = time.perf_counter()
        memory = nearest_neighbors(data, K)[0]
        res["memory_knn_s"] = time.perf_counter() - tic
        res["memory_recall"] = recall(memory.indices[rows], exact)
        del memory
    if args.fit:
        import unimap

        labels = np.concatenate([mixture_labels((b,), c) for b, c in enumerate(chunks)])
        evaluated = np.sort(np.random.default_rng(4).choice(n, min(args.eval, n), replace=False))
        for name, knn in (("dask graph", (indices, distances)), ("own kNN", None)):
            tic = time.perf_counter()
            est = unimap.GDR(precomputed_knn=knn, random_state=0).fit(data)
            res[f"fit {name} s"] = time.perf_counter() - tic
            res[f"fit {name} timings"] = {k: round(v, 1) for k, v in est.timings_.items()}
            res[f"fit {name} acc"] = unimap.metrics.knn_accuracy(
                est.embedding_[evaluated], labels[evaluated], 10)
    res["client_peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def report(res: dict) -> str:
    mib = 1 << 20
    lines = [
        f"## {res['n']:,} points, {res['workers']} workers x {res['threads']} thread"
        f"{'s' if res['threads'] > 1 else ''} (LocalCluster, processes), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}",
        f"- before: {res['state_before']}",
        f"- after: {res['state_after']}",
        f"- command: `python benchmarks/{' '.join(sys.argv)}`".replace(
            "benchmarks/benchmarks/", "benchmarks/"),
        "",
        "| step | seconds |",
        "|---|---:|",
        f"| start the cluster | {res['cluster_s']:.1f} |",
        f"| k-means sample and centroids ({res['shards']} shards; the client) | "
        f"{res['plan_s']:.1f} |",
        f"| build, search and gather the (N, {K}) graph (blocks of {res['chunk']:,}) | "
        f"{res['knn_s']:.1f} |",
        f"| exact neighbours of the evaluated rows (for recall) | {res['exact_s']:.1f} |",
    ]
    if "memory_knn_s" in res:
        lines.append(f"| in-memory graph, one process (`nearest_neighbors`) | "
                     f"{res['memory_knn_s']:.1f} |")
    for name in ("dask graph", "own kNN"):
        if f"fit {name} s" in res:
            lines.append(f"| GDR fit of all rows, {name} | {res[f'fit {name} s']:.1f} |")
    lines += ["", "| worker | peak RSS (VmHWM) | RSS at the end | graph step CPU s |",
              "|---|---:|---:|---:|"]
    for address, memory in sorted(res["worker_memory"].items()):
        cpu = res.get("worker_knn_cpu_s", {}).get(address, float("nan"))
        lines.append(f"| {address} | {memory['VmHWM'] / mib:.0f} MiB | "
                     f"{memory['VmRSS'] / mib:.0f} MiB | {cpu:.1f} |")
    lines += ["", f"This process's peak RSS (the in-memory and fit steps included): "
              f"{res['client_peak_mib']:.0f} MiB.",
              f"Recall@15 on {res['queries']:,} sampled rows: dask graph "
              f"{res['recall']:.4f}"
              + (f", in-memory graph {res['memory_recall']:.4f}" if "memory_recall" in res
                 else "") + "."]
    if res["probe_sweep"]:
        first = _probe_label(res)
        lines += ["", f"Recall@15 against the shards searched per row (same {res['shards']} "
                  "shards, same rows):", "", "| n_probe | graph s | recall@15 |",
                  "|---:|---:|---:|", f"| {first} | {res['knn_s']:.1f} | {res['recall']:.4f} |"]
        lines += [f"| {p} | {s:.1f} | {r:.4f} |" for p, s, r in res["probe_sweep"]]
    for name in ("dask graph", "own kNN"):
        if f"fit {name} acc" in res:
            lines.append(f"GDR on the {name}: 10-NN accuracy {res[f'fit {name} acc']:.4f}, "
                         f"phases {res[f'fit {name} timings']}.")
    return "\n".join(lines) + "\n"


def _probe_label(res: dict) -> str:
    return "default" if res["probes"][0] is None else str(res["probes"][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--eval", type=int, default=20_000)
    parser.add_argument("--in-memory", action="store_true")
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--shards", type=int, help="n_shards (default: knn_graph's)")
    parser.add_argument("--probes", type=lambda s: [int(p) for p in s.split(",")],
                        default=[None], help="n_probe, or a comma-separated sweep (1,2,4): "
                        "the first is timed with memory, the others add recall rows")
    parser.add_argument("--out", type=Path, help="append the report to this Markdown file")
    args = parser.parse_args()
    emit(report(run(args)), args.out)


if __name__ == "__main__":
    main()
