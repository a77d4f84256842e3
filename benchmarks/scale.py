"""Cost of one fit as n grows: time per phase and peak memory (issue 23).

Usage::

    python benchmarks/scale.py                          # GDR and UMAP at 100k, 300k, 1M
    python benchmarks/scale.py --methods GDR --sizes 100000,1000000 --source gauss
    python benchmarks/scale.py --methods GDR --sizes 100000,1000000 --rounds 2  # interleaved
    python benchmarks/scale.py --out benchmarks/results/scale.md

Data: ``gauss``, a mixture of 30 Gaussians in 50-D (float32, the issue's), or ``mnist``,
MNIST-70k upsampled with small jitter (each copy of a digit moved by N(0, 0.05²) per pixel on
the [0, 1] scale) to n rows. Each fit runs in its own process (numba kernels loaded by a
3,000-point fit first): seconds per phase from ``timings_``, peak resident memory over the
process before the fit (VmHWM after resetting it), the estimate the fit made
(``memory_estimate_``), and the machine's load average and steal at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

MiB = 2**20


def _status(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise RuntimeError(key)


def data(n: int, source: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    if source == "gauss":
        centers = rng.standard_normal((30, 50)).astype(np.float32) * 5
        return centers[rng.integers(0, 30, n)] + rng.standard_normal((n, 50)).astype(np.float32)
    from unimap.datasets import load_mnist

    X = load_mnist()[0]
    rows = np.resize(np.arange(X.shape[0]), n)
    out = X[rows]
    out[X.shape[0]:] += rng.normal(0, 0.05, out[X.shape[0]:].shape).astype(np.float32)
    return out


def fit_one(method: str, n: int, source: str, device: str = "cpu") -> dict:
    import unimap

    X = data(n, source)
    make = {"GDR": unimap.GDR, "UMAP": unimap.UMAP, "TSNE": unimap.TSNE}[method]
    make(random_state=0, device=device).fit(X[:3000])
    base = _status("VmRSS:")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    with _DeviceMemoryPeak(device) as gpu:
        model = make(random_state=0, device=device).fit(X)
    return {"method": method, "n": n, "source": source, "device": device,
            "timings": {k: round(v, 1) for k, v in model.timings_.items()},
            "peak_mb": round((_status("VmHWM:") - base) / MiB),
            "device_peak_mb": gpu.peak_mb, "devices": model.devices_,
            "estimate_mb": round(model.memory_estimate_ / MiB), "knn": model.knn_method_}


class _DeviceMemoryPeak:
    """Peak GPU memory in use during a block, over what was in use before it (polled every
    10 ms from the driver's free-memory figure; None on the CPU)."""

    def __init__(self, device: str) -> None:
        self.device, self.peak_mb = device, None

    def __enter__(self):
        from unimap.runtime.device import simulated

        if self.device != "cuda" or simulated():  # the simulator has no device memory
            self.device = "cpu"
            return self
        import threading

        from numba import cuda

        context = cuda.current_context()
        self._free0 = self._least = context.get_memory_info()[0]
        self._stop = threading.Event()

        def poll():
            # the driver's current context is per thread: make the primary one current here
            # (without it every query failed and the thread died, leaving a peak of 0)
            here = cuda.current_context()
            while not self._stop.wait(0.01):
                self._least = min(self._least, here.get_memory_info()[0])

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.device == "cuda":
            self._stop.set()
            self._thread.join()
            self.peak_mb = round((self._free0 - self._least) / MiB)


def _steal() -> float:
    def read():
        with open("/proc/stat") as fh:
            return [int(v) for v in fh.readline().split()[1:]]
    import time

    a = read()
    time.sleep(1.0)
    b = read()
    delta = [y - x for x, y in zip(a, b, strict=False)]
    return 100.0 * delta[7] / max(sum(delta), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="GDR,UMAP")
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--source", default="gauss", choices=("gauss", "mnist"))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the sizes this many times, interleaved (medians compared)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        method, n, source, device = args.worker
        print(json.dumps(fit_one(method, int(n), source, device)))
        return
    rows = []
    rounds = [(method, n) for method in args.methods.split(",")
              for _ in range(args.rounds) for n in map(int, args.sizes.split(","))]
    for method, n in rounds:
        load, steal = os.getloadavg()[0], _steal()
        proc = subprocess.run([sys.executable, "-W", "ignore", __file__, "--worker", method,
                               str(n), args.source, args.device], capture_output=True,
                              text=True)
        if proc.returncode:
            raise RuntimeError(proc.stderr[-3000:])
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        row.update(load=round(load, 2), steal=round(steal, 1))
        rows.append(row)
        print(json.dumps(row), flush=True)
    lines = ["| method | data | n | total s | kNN s | affinities s | init s | optimize s | "
             "peak MiB | estimate MiB | GPU peak MiB | phases on GPU | "
             "load / steal % at start |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        t = r["timings"]
        lines.append(f"| {r['method']} | {r['source']} | {r['n']:,} | {t['total']} | "
                     f"{t['neighbors']} | {t['affinities']} | {t['init']} | {t['optimize']} | "
                     f"{r['peak_mb']} | {r['estimate_mb']} | {r['device_peak_mb'] or '-'} | "
                     f"{','.join(k for k, v in r['devices'].items() if v == 'cuda') or '-'} | "
                     f"{r['load']} / {r['steal']} |")
    for method in args.methods.split(","):
        lines.extend(_ratio_lines(method, [r for r in rows if r["method"] == method]))
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(f"# Scaling on one machine\n\n`python benchmarks/scale.py "
                            f"--methods {args.methods} --sizes {args.sizes} --source "
                            f"{args.source} --device {args.device} --rounds "
                            f"{args.rounds}`\n\n{text}\n")


def _ratio_lines(method: str, rows: list) -> list:
    """t(largest n) / t(smallest n), of the medians over rounds; with several rounds also
    each round's own ratio (the host's speed drifts between rounds, less within one)."""
    totals: dict = {}
    for r in rows:
        totals.setdefault(r["n"], []).append(r["timings"]["total"])
    if len(totals) < 2:
        return []
    lo, hi = min(totals), max(totals)
    ratio = float(np.median(totals[hi]) / np.median(totals[lo]))
    line = (f"\n{method}: t({hi:,}) / t({lo:,}) = {ratio:.1f} for {hi / lo:.0f}x the points")
    if len(totals[hi]) > 1:
        per_round = zip(totals[hi], totals[lo], strict=True)
        line += (f" (medians of {len(totals[hi])} rounds; per round: "
                 + ", ".join(f"{h / l:.1f}" for h, l in per_round) + ")")
    return [line]


if __name__ == "__main__":
    main()
