"""Place millions of points through a dask LocalCluster (issue 23, item 3).

Usage::

    python benchmarks/dask_place.py                  # 10M points, 2 workers
    python benchmarks/dask_place.py --n 1000000 [--out benchmarks/results/dask_place.md]

The data is the issue's Gaussian mixture (the one of ``fit_memory.py``: 30 centres drawn
N(0, 25) in 50-D, each point a centre plus N(0, 1) noise, float32), generated block by block
on the workers from the seed and the block's number, so the N points never sit in the client.
Steps, each timed:

1. start a ``LocalCluster`` (``--workers`` processes, ``--threads`` threads each);
2. draw a uniform sample of ``--sample`` rows (``unimap.dask.transform.sample_rows``, seeded): the
   workers generate every block and send the sampled rows;
3. fit ``GDR(random_state=0)`` on the sample in the client;
4. place all N rows with the distributed ``transform`` and gather the (N, 2) result.

Reported: the times, time per million placed points, each worker's peak resident memory
(``VmHWM`` of the worker process, read on the worker at the end: its high-water mark since it
started) and its memory after the run, the model's pickled size and how many copies the
workers held, and the quality: 10-NN accuracy (5-fold, ``unimap.metrics.knn_accuracy``) on
the mixture labels of ``--eval`` placed points, against that of ``--eval`` points of the
fitted sample's own embedding. Plus the machine's state (``top``'s steal ``st``, the load
average) before and after.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

D, CENTRES, SEED = 50, 30, 0


def _centres() -> np.ndarray:
    return (np.random.default_rng(SEED).standard_normal((CENTRES, D)) * 5).astype(np.float32)


def mixture_block(block_id: tuple[int, ...], rows: int) -> np.ndarray:
    """Rows of block ``block_id[0]``: deterministic from the seed and the block's number."""
    rng = np.random.default_rng([SEED, 1, block_id[0]])
    labels = rng.integers(0, CENTRES, rows)
    return _centres()[labels] + rng.standard_normal((rows, D), dtype=np.float32)


def mixture_labels(block_id: tuple[int, ...], rows: int) -> np.ndarray:
    """The labels of :func:`mixture_block` (the same first draw of the same stream)."""
    return np.random.default_rng([SEED, 1, block_id[0]]).integers(0, CENTRES, rows)


def _block(block_info=None):
    info = block_info[None]
    return mixture_block(info["chunk-location"], info["chunk-shape"][0])


def _labels_block(block_info=None):
    info = block_info[None]
    return mixture_labels(info["chunk-location"], info["chunk-shape"][0])


def machine_state() -> str:
    load = os.getloadavg()
    try:
        # two samples a second apart: top's first one averages since boot
        top = subprocess.run(["top", "-bn2", "-d1"], capture_output=True, text=True,
                             timeout=10)
        cpu = [line for line in top.stdout.splitlines() if "Cpu(s)" in line][-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        cpu = "top unavailable"
    return f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {cpu.strip()}"


def _worker_memory() -> dict:
    """On a worker: its peak and current resident memory (bytes)."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0]) * 1024
    return out


def _held_models(dask_worker) -> int:
    return sum(type(v).__name__ == "GDR" for v in dask_worker.data.values())


def _model_transfers(dask_worker) -> int:
    """How many times this worker received the scattered model from another worker."""
    return sum(str(key).startswith("GDR-") for entry in dask_worker.transfer_incoming_log
               for key in entry["keys"])


def run(n: int, sample: int, chunk: int, workers: int, threads: int, n_eval: int) -> dict:
    import dask.array as da
    import distributed

    import unimap
    from unimap.dask.sample import sample_rows
    from unimap.dask.transform import _without_graph

    res: dict = {"n": n, "sample": sample, "chunk": chunk, "workers": workers,
                 "threads": threads, "state_before": machine_state()}
    chunks = ((chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ()),)
    tic = time.perf_counter()
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=threads,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        res["cluster_s"] = time.perf_counter() - tic
        X = da.map_blocks(_block, chunks=(chunks[0], (D,)), dtype=np.float32,
                          meta=np.empty((0, D), np.float32))
        labels = da.map_blocks(_labels_block, chunks=chunks, dtype=np.int64,
                               meta=np.empty((0,), np.int64))
        tic = time.perf_counter()
        indices, rows = sample_rows(X, sample, random_state=0)
        sample_labels = labels[indices].compute()
        res["sample_s"] = time.perf_counter() - tic

        tic = time.perf_counter()
        est = unimap.GDR(random_state=0).fit(rows)
        res["fit_s"] = time.perf_counter() - tic
        res["fit_timings"] = {k: round(v, 2) for k, v in est.timings_.items()}
        shipped = _without_graph(est)
        tic = time.perf_counter()
        res["model_bytes"] = len(pickle.dumps(shipped, protocol=5))
        res["pickle_s"] = time.perf_counter() - tic
        res["full_model_bytes"] = len(pickle.dumps(est, protocol=5))

        tic = time.perf_counter()
        Y = est.transform(X)
        res["graph_s"] = time.perf_counter() - tic
        res["blocks"] = Y.numblocks[0]
        tic = time.perf_counter()
        placed = client.compute(Y).result()
        res["place_s"] = time.perf_counter() - tic
        res["models_held"] = client.run(_held_models)
        res["model_transfers"] = client.run(_model_transfers)
        res["worker_memory"] = client.run(_worker_memory)
        rng = np.random.default_rng(1)
        eval_rows = np.sort(rng.choice(n, size=min(n_eval, n), replace=False))
        eval_labels = labels[eval_rows].compute()
    res["state_after"] = machine_state()
    assert placed.shape == (n, 2) and np.isfinite(placed).all()
    tic = time.perf_counter()
    res["acc_placed"] = unimap.metrics.knn_accuracy(placed[eval_rows], eval_labels, 10)
    fit_rows = np.random.default_rng(2).choice(sample, size=min(n_eval, sample), replace=False)
    res["acc_sample_fit"] = unimap.metrics.knn_accuracy(est.embedding_[fit_rows],
                                                        sample_labels[fit_rows], 10)
    res["eval_s"] = time.perf_counter() - tic
    res["n_eval"] = min(n_eval, n)
    return res


def report(res: dict) -> str:
    mib = 1 << 20
    per_m = res["place_s"] / (res["n"] / 1e6)
    lines = [
        f"## {res['n']:,} points, {res['workers']} workers x {res['threads']} thread"
        f"{'s' if res['threads'] > 1 else ''} (LocalCluster, processes)",
        "",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}",
        f"- before: {res['state_before']}",
        f"- after: {res['state_after']}",
        "",
        "| step | seconds |",
        "|---|---|",
        f"| start the cluster | {res['cluster_s']:.1f} |",
        f"| draw the {res['sample']:,}-row sample (every block generated on the workers) | "
        f"{res['sample_s']:.1f} |",
        f"| fit GDR on the sample (client) | {res['fit_s']:.1f} |",
        f"| build the lazy transform (scatter the model) | {res['graph_s']:.2f} |",
        f"| place {res['n']:,} points in {res['blocks']} blocks of {res['chunk']:,} and gather "
        f"| {res['place_s']:.1f} |",
        f"| **placement per million points** | **{per_m:.1f}** |",
        "",
        f"GDR fit phases: {res['fit_timings']}.",
        "",
        "| worker | peak RSS (VmHWM) | RSS at the end | model copies held at the end | "
        "model received from another worker |",
        "|---|---|---|---|---|",
    ]
    for address, memory in sorted(res["worker_memory"].items()):
        lines.append(f"| {address} | {memory['VmHWM'] / mib:.0f} MiB | "
                     f"{memory['VmRSS'] / mib:.0f} MiB | {res['models_held'][address]} | "
                     f"{res['model_transfers'][address]} |")
    lines += [
        "",
        f"Shipped model (without graph_ and the kNN graph): {res['model_bytes'] / mib:.1f} MiB "
        f"pickled in {res['pickle_s']:.2f} s (the fitted estimator: "
        f"{res['full_model_bytes'] / mib:.1f} MiB). Scattered once; a per-task copy would "
        f"have moved {res['blocks'] * res['model_bytes'] / mib:.0f} MiB.",
        "",
        f"10-NN accuracy on the mixture labels (5-fold, {res['n_eval']:,} points each): "
        f"placed points {res['acc_placed']:.4f}; the fitted sample's own embedding "
        f"{res['acc_sample_fit']:.4f}.",
        "",
    ]
    return "\n".join(lines)


def emit(text: str, out: Path | None) -> None:
    """Print a Markdown report, and append it to ``out`` when given (the Dask benchmarks)."""
    print(text)
    if out is not None:
        with open(out, "a") as fh:
            fh.write(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--eval", type=int, default=20_000)
    parser.add_argument("--out", type=Path, help="append the report to this Markdown file")
    args = parser.parse_args()
    res = run(args.n, args.sample, args.chunk, args.workers, args.threads, args.eval)
    emit(report(res), args.out)
    print(res, file=sys.stderr)


if __name__ == "__main__":
    main()
