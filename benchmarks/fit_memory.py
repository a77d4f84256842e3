"""Peak memory of one fit, over what the process held before it (Linux).

Usage (one fit per process, so that nothing else shares the high-water mark)::

    python benchmarks/fit_memory.py GDR 70000 mnist
    python benchmarks/fit_memory.py UMAP 300000 gauss     # 30-centre mixture in 50-D

The libraries and numba kernels are loaded by a 3,000-point fit first; then the kernel's
high-water mark is reset (``/proc/self/clear_refs``) and the measured fit's peak is VmHWM minus
the VmRSS before it. Prints one JSON line. The numbers of the issue-19 note came from here.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not in /proc/self/status")


def main(argv: list[str]) -> None:
    import unimap
    from unimap.datasets import load_mnist

    method, n, source = argv[0], int(argv[1]), argv[2]
    if source == "mnist":
        X, _ = load_mnist(n_samples=n)
    else:
        rng = np.random.default_rng(0)
        centers = rng.standard_normal((30, 50)).astype(np.float32) * 5
        X = centers[rng.integers(0, 30, n)] + rng.standard_normal((n, 50)).astype(np.float32)
    make = {"GDR": lambda: unimap.GDR(random_state=0),
            "GDRn": lambda: unimap.GDR(normalized=True, random_state=0),
            "UMAP": lambda: unimap.UMAP(random_state=0),
            "TSNE": lambda: unimap.TSNE(random_state=0)}[method]
    make().fit(X[:3000])
    base = _status_bytes("VmRSS:")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the high-water mark to the current RSS
    tic = time.perf_counter()
    model = make().fit(X)
    seconds = time.perf_counter() - tic
    peak = _status_bytes("VmHWM:")
    print(json.dumps({"method": method, "n": n, "d": X.shape[1], "source": source,
                      "fit_s": round(seconds, 1), "knn": model.knn_method_,
                      "peak_over_base_mb": round((peak - base) / 2**20, 1)}))


if __name__ == "__main__":
    main(sys.argv[1:])
