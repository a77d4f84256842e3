"""Peak memory of one fit, phase by phase, against the estimate the fit made beforehand (Linux).

Usage::

    python benchmarks/fit_memory.py GDR 70000 mnist            # one fit, one JSON line
    python benchmarks/fit_memory.py UMAP 300000 gauss          # 30-centre mixture in 50-D
    python benchmarks/fit_memory.py --table [--out FILE.md]    # the set of the issue-19 note

Each fit runs in its own process so that nothing else shares the high-water mark. The
libraries and numba kernels are loaded by a 3,000-point fit first. Then, at the start of each
phase (neighbours, affinities, init, optimize), the kernel's high-water mark is reset
(``/proc/self/clear_refs``) and ``tracemalloc``'s peak too; at its end the phase's peak
resident set (VmHWM) and its peak of traced allocations (numpy's arrays; not faiss's) are
recorded, both over what the process held before the fit. The fit's peak is the largest phase
peak; ``memory_estimate_`` is what ``unimap.runtime.memory`` predicted before the first allocation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

import numpy as np

MiB = 2**20
TABLE = [("GDR", 20000, "mnist"), ("GDR", 70000, "mnist"), ("GDRn", 70000, "mnist"),
         ("UMAP", 70000, "mnist"), ("TSNE", 70000, "mnist"), ("GDR", 300000, "gauss"),
         ("UMAP", 300000, "gauss"), ("TSNE", 300000, "gauss")]


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not in /proc/self/status")


def _reset_high_water_mark() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _data(n: int, source: str) -> np.ndarray:
    if source == "mnist":
        from unimap.datasets import load_mnist

        return load_mnist(n_samples=n)[0]
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((30, 50)).astype(np.float32) * 5
    return centers[rng.integers(0, 30, n)] + rng.standard_normal((n, 50)).astype(np.float32)


def measure(method: str, n: int, source: str) -> dict:
    import unimap
    from unimap.methods import _base

    X = _data(n, source)
    make = {"GDR": lambda: unimap.GDR(random_state=0),
            "GDRn": lambda: unimap.GDR(normalized=True, random_state=0),
            "UMAP": lambda: unimap.UMAP(random_state=0),
            "TSNE": lambda: unimap.TSNE(random_state=0)}[method]
    make().fit(X[:3000])

    phases: dict[str, dict] = {}
    base = {"rss": 0, "traced": 0}
    timed_phase = _base.PhaseTimer.phase

    @contextmanager
    def measured_phase(self, name, detail=None, progress=None):
        _reset_high_water_mark()
        tracemalloc.reset_peak()
        with timed_phase(self, name, detail, progress):
            yield
        traced_peak = tracemalloc.get_traced_memory()[1]
        phases[name] = {"rss_peak_mb": round((_status_bytes("VmHWM:") - base["rss"]) / MiB),
                        "traced_peak_mb": round((traced_peak - base["traced"]) / MiB)}

    _base.PhaseTimer.phase = measured_phase
    tracemalloc.start()
    base["rss"], base["traced"] = _status_bytes("VmRSS:"), tracemalloc.get_traced_memory()[0]
    tic = time.perf_counter()
    model = make().fit(X)
    seconds = time.perf_counter() - tic
    peak = max(p["rss_peak_mb"] for p in phases.values())
    estimate = model.memory_estimate_ / MiB
    return {"method": method, "n": n, "d": X.shape[1], "source": source,
            "fit_s": round(seconds, 1), "knn": model.knn_method_,
            "peak_over_base_mb": peak, "estimate_mb": round(estimate),
            "estimate_over_peak": round(estimate / max(peak, 1), 2), "phases": phases}


def table(out: Path | None) -> None:
    rows = []
    for method, n, source in TABLE:
        proc = subprocess.run([sys.executable, "-W", "ignore", __file__, method, str(n), source],
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"{method} {n} {source} failed:\n{proc.stderr[-3000:]}")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    lines = ["| method | data | kNN | fit s | measured peak MiB | estimate MiB | estimate/peak "
             "| phase peaks MiB (neighbors / affinities / init / optimize) |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        per_phase = " / ".join(str(p["rss_peak_mb"]) for p in r["phases"].values())
        lines.append(f"| {r['method']} | {r['source']} {r['n']:,} x {r['d']} | {r['knn']} | "
                     f"{r['fit_s']} | {r['peak_over_base_mb']} | {r['estimate_mb']} | "
                     f"{r['estimate_over_peak']} | {per_phase} |")
    text = "\n".join(lines)
    print(text)
    if out is not None:
        load = os.getloadavg()
        out.write_text(f"# Fit memory: measured peak against `memory_estimate_`\n\n"
                       f"`python benchmarks/fit_memory.py --table`; load average at the end "
                       f"{load[0]:.2f}. Peaks are resident-set high-water marks over the "
                       f"process before the fit (the input data not included).\n\n{text}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", nargs="?")
    parser.add_argument("n", nargs="?", type=int)
    parser.add_argument("source", nargs="?", choices=("mnist", "gauss"))
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.table:
        table(args.out)
    else:
        print(json.dumps(measure(args.method, args.n, args.source)))


if __name__ == "__main__":
    main()
