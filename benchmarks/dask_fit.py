"""GDR fitted on a dask cluster against one machine and against "fit a sample, place the rest"
(issue 55).

Usage::

    python benchmarks/dask_fit.py --n 1000000 [--data mixture sheets] \\
        [--configs memory cluster2 cluster4 sample2] [--out benchmarks/results/dask_fit.md]

Each configuration runs in a fresh process (``--run``), so that its peak memory and CPU time
are its own:

- ``memory``: ``GDR(random_state=0).fit(X)`` of the rows in this process (the single-machine
  fit, its own kNN search);
- ``clusterW``: ``GDR(random_state=0).fit(X)`` of the dask array on a ``LocalCluster`` of W
  single-thread worker processes (:mod:`unimap.dask.fit`: the kNN graph and the epochs on the
  workers; the affinities and the start in the client);
- ``sampleW``: ``unimap.dask.fit_sample_transform`` with a 100,000-row sample on W workers.

The rows are generated block by block on the workers from the seed and the block's number
(100,000-row blocks), so the cluster configurations never hold them in the client; ``memory``
generates the same blocks in the process. The data: ``mixture``, the 30-centre Gaussian
mixture in 50-D of ``dask_place.py``; ``sheets``, 20 curved 2-D sheets in 50-D (each a random
plane through a random centre, bent along a third direction, with 0.01 noise), whose fine
neighbourhoods matter.

Reported per configuration: wall time (and the fit's phases), CPU seconds (the client's and
every worker's), each worker's peak resident memory (``VmHWM``) and the client's, the bytes
each worker received per epoch from other workers (``transfer_incoming_log``: the positions
the epochs read), and the quality of the embedding: 10-NN accuracy on the labels (5-fold, on
20,000 random points), trustworthiness (k = 15, 1,000 sampled points, among all rows) and
recall@15 (2,000 sampled queries, exact neighbours among all rows). Plus the machine's state
before and after (``top``'s steal ``st``, the load average).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dask_place import machine_state  # noqa: E402

D, SEED, CHUNK, SAMPLE = 50, 0, 100_000, 100_000
CENTRES, SHEETS = 30, 20


def _mixture_centres() -> np.ndarray:
    return (np.random.default_rng(SEED).standard_normal((CENTRES, D)) * 5).astype(np.float32)


def _sheet_frames() -> tuple[np.ndarray, np.ndarray]:
    """Each sheet's centre (SHEETS, D) and three orthonormal directions (SHEETS, 3, D)."""
    rng = np.random.default_rng([SEED, 3])
    centres = rng.standard_normal((SHEETS, D)) * 4
    frames = np.linalg.qr(rng.standard_normal((SHEETS, D, 3)))[0].transpose(0, 2, 1)
    return centres, frames


def block_rows(data: str, block: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and labels of block ``block``: deterministic from the seed and its number."""
    if data == "mixture":
        rng = np.random.default_rng([SEED, 1, block])
        labels = rng.integers(0, CENTRES, rows)
        X = _mixture_centres()[labels] + rng.standard_normal((rows, D), dtype=np.float32)
        return X.astype(np.float32), labels
    rng = np.random.default_rng([SEED, 2, block])
    labels = rng.integers(0, SHEETS, rows)
    u = rng.uniform(-3.0, 3.0, (rows, 2))
    bend = np.sin(1.5 * u[:, 0]) * np.cos(1.0 * u[:, 1])
    centres, frames = _sheet_frames()
    coords = np.column_stack([u, bend])  # (rows, 3) in the sheet's frame
    X = centres[labels] + np.einsum("rc,rcd->rd", coords, frames[labels])
    X += rng.normal(scale=0.01, size=X.shape)
    return X.astype(np.float32), labels


def _row_chunks(n: int) -> tuple[int, ...]:
    return (CHUNK,) * (n // CHUNK) + ((n % CHUNK,) if n % CHUNK else ())


def _dask_rows(data: str, n: int):
    import dask.array as da

    def make(block_info=None):
        info = block_info[None]
        return block_rows(data, info["chunk-location"][0], info["chunk-shape"][0])[0]

    return da.map_blocks(make, chunks=(_row_chunks(n), (D,)), dtype=np.float32,
                         meta=np.empty((0, D), np.float32))


def in_memory(data: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    pieces = [block_rows(data, b, rows) for b, rows in enumerate(_row_chunks(n))]
    return (np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]))


def _worker_stats(dask_worker) -> dict:
    """On a worker: its CPU seconds, peak and current memory, bytes received from others
    for the epochs' positions, and how many such transfers."""
    out = {"cpu_s": time.process_time()}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0]) * 1024
    moved = [entry for entry in dask_worker.transfer_incoming_log
             if any(str(key).startswith("unimap-gdr-positions") for key in entry["keys"])]
    out["positions_bytes"] = int(sum(entry["total"] for entry in moved))
    out["all_incoming_bytes"] = int(sum(entry["total"]
                                        for entry in dask_worker.transfer_incoming_log))
    return out


def run_config(config: str, data: str, n: int, out: Path) -> dict:
    """One configuration, in this (fresh) process; its embedding saved to ``out``."""
    import unimap

    res: dict = {"config": config, "data": data, "n": n, "state_before": machine_state()}
    wall = time.perf_counter()
    if config == "memory":
        X, _ = in_memory(data, n)
        tic = time.perf_counter()
        est = unimap.GDR(random_state=0).fit(X)
        res["fit_s"] = time.perf_counter() - tic
        res["timings"] = {k: round(v, 1) for k, v in est.timings_.items()}
        res["n_epochs"] = est.n_epochs_
        Y = est.embedding_
    else:
        import distributed

        workers = int(config[-1])
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                      processes=True, dashboard_address=None,
                                      memory_limit=0) as cluster, \
                distributed.Client(cluster) as client:
            X = _dask_rows(data, n)
            tic = time.perf_counter()
            if config.startswith("cluster"):
                est = unimap.GDR(random_state=0).fit(X)
                Y = est.embedding_
                res["timings"] = {k: round(v, 1) for k, v in est.timings_.items()}
                res["n_epochs"] = est.n_epochs_
            else:
                from unimap.dask import fit_sample_transform

                est = unimap.GDR(random_state=0)
                placed = fit_sample_transform(est, X, SAMPLE, random_state=0)
                Y = client.compute(placed.embedding).result()
                res["timings"] = {k: round(v, 1) for k, v in est.timings_.items()}
            res["fit_s"] = time.perf_counter() - tic
            res["workers"] = client.run(_worker_stats)
    res["wall_s"] = time.perf_counter() - wall
    usage = resource.getrusage(resource.RUSAGE_SELF)
    res["client_cpu_s"] = usage.ru_utime + usage.ru_stime
    res["client_peak_bytes"] = usage.ru_maxrss * 1024
    res["state_after"] = machine_state()
    assert Y.shape == (n, 2) and np.isfinite(Y).all()
    np.save(out, Y)
    return res


def evaluate(data: str, n: int, Y: np.ndarray, X: np.ndarray, labels: np.ndarray) -> dict:
    import unimap

    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(n, min(20_000, n), replace=False))
    return {
        "acc10": unimap.metrics.knn_accuracy(Y[rows], labels[rows], 10),
        "trust15": float(unimap.metrics.trustworthiness_sampled(
            X, Y, 15, n_samples=1_000, random_state=2).value),
        "recall15": unimap.metrics.knn_recall(X, Y, 15, sample_size=2_000, random_state=3),
    }


def report(rows: list[dict]) -> str:
    mib = 1 << 20
    head = rows[0]
    lines = [f"## {head['n']:,} points, {head['data']} (50-D)", "",
             f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} "
             f"cores, python {platform.python_version()}"]
    for r in rows:
        lines.append(f"- {r['config']}: before {r['state_before']}; after {r['state_after']}")
    lines += ["", "| configuration | fit s | phases (s) | CPU s client + workers | peak client "
              "/ worker MiB | received per epoch per worker | 10-NN acc | trust@15 | "
              "recall@15 |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        workers = r.get("workers", {})
        cpu = r["client_cpu_s"] + sum(w["cpu_s"] for w in workers.values())
        peak_w = max((w["VmHWM"] for w in workers.values()), default=0) / mib
        epochs = r.get("n_epochs") if r["config"].startswith("cluster") else None
        moved = ("" if not epochs else " / ".join(
            f"{w['positions_bytes'] / epochs / mib:.1f} MiB" for w in workers.values()))
        lines.append(
            f"| {r['config']} | {r['fit_s']:.1f} | {r['timings']} | "
            f"{r['client_cpu_s']:.0f} + {cpu - r['client_cpu_s']:.0f} | "
            f"{r['client_peak_bytes'] / mib:.0f} / {peak_w:.0f} | {moved} | "
            f"{r['acc10']:.4f} | {r['trust15']:.4f} | {r['recall15']:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--data", nargs="+", default=["mixture", "sheets"])
    parser.add_argument("--configs", nargs="+",
                        default=["memory", "cluster2", "cluster4", "sample2"])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--run", nargs=3, metavar=("CONFIG", "DATA", "NPY"),
                        help=argparse.SUPPRESS)  # one configuration, in a fresh process
    args = parser.parse_args()
    if args.run:
        config, data, npy = args.run
        print(json.dumps(run_config(config, data, args.n, Path(npy))))
        return
    for data in args.data:
        X, labels = in_memory(data, args.n)
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for config in args.configs:
                npy = Path(tmp) / f"{config}.npy"
                done = subprocess.run([sys.executable, __file__, "--n", str(args.n), "--run",
                                       config, data, str(npy)], capture_output=True,
                                      text=True)
                if done.returncode:
                    print(done.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"{config} on {data} failed")
                res = json.loads(done.stdout.strip().splitlines()[-1])
                res.update(evaluate(data, args.n, np.load(npy), X, labels))
                print(json.dumps({k: v for k, v in res.items() if k != "workers"}),
                      flush=True)
                rows.append(res)
        text = report(rows)
        print(text, flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(text + "\n")


if __name__ == "__main__":
    main()
