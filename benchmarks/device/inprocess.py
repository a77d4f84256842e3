"""Warm fits inside one process on the GPU: seconds per phase, where each phase ran, quality,
and whether two fits with the same seed give bitwise the same embedding (issue 45).

Usage (the device run calls it; ``--n`` cuts MNIST for the simulator's rehearsal)::

    python benchmarks/device/inprocess.py --methods GDR,UMAP,GDRn,TSNE --device cuda
    python benchmarks/device/inprocess.py --scale 10000000 --source gauss --methods GDR

MNIST mode: each method fits once to load its kernels (numba-cuda compiles them in a bare
process, or loads them from its cache), then twice more, timed; the table gives the faster of
the two, ``timings_`` by phase, ``devices_``, 10-NN accuracy and trustworthiness@15 on a
3,000-point sample, and whether the two timed fits are bitwise equal. Scale mode
(``--scale N``): one verbose fit of N points of ``benchmarks/scale.py``'s data, printing one
line per finished phase as it ends (so a run killed by its timeout still says where the
time went), then the device's peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

ESTIMATORS = {  # name in the table -> (class name, extra parameters)
    "GDR": ("GDR", {}),
    "GDRn": ("GDR", {"normalized": True}),
    "UMAP": ("UMAP", {}),
    "TSNE": ("TSNE", {}),
    "PCA": ("PCA", {}),
}


def rehearsal_params(cls: str) -> dict:
    """``n_epochs`` (GDR, UMAP) or ``max_iter`` (TSNE) cut to ``UNIMAP_BENCH_EPOCHS`` where it
    is set: the rehearsal in numba-cuda's simulator, which runs a CUDA thread as a Python
    thread (200 epochs of 60 points take 17 s there), checks the plumbing, not the result."""
    epochs = os.environ.get("UNIMAP_BENCH_EPOCHS")
    if epochs and cls == "TSNE":  # its GPU optimizer's exact sums: n² Python steps simulated
        return {"max_iter": int(epochs), "early_exaggeration_iter": int(epochs) // 2}
    return {"n_epochs": int(epochs)} if epochs and cls in ("GDR", "UMAP") else {}


def _make(name: str, device: str, verbose: bool = False):
    import unimap

    cls, params = ESTIMATORS[name]
    if cls != "PCA":  # PCA has no verbose output
        params = {**params, "verbose": verbose}
    return getattr(unimap, cls)(random_state=0, device=device, **params,
                                **rehearsal_params(cls))


def _mnist(n: int | None) -> tuple[np.ndarray, np.ndarray]:
    from unimap.datasets import load_mnist

    X, y = load_mnist(download=False)
    return (X[:n], y[:n]) if n else (X, y)


def mnist_rows(methods: list[str], device: str, n: int | None) -> list[dict]:
    from _harness import knn_accuracy, trustworthiness_sample

    X, y = _mnist(n)
    rows = []
    for name in methods:
        _make(name, device).fit(X[: min(len(X), 2000)])  # kernels compiled or loaded
        fits, seconds = [], []
        for _ in range(2):
            tic = time.perf_counter()
            model = _make(name, device)
            embedding = np.asarray(model.fit_transform(X))  # on the host: the clock stops
            seconds.append(time.perf_counter() - tic)
            fits.append((model, embedding))
        model, Y = fits[int(np.argmin(seconds))]
        row = {"method": name, "n": len(X), "warm_s": round(min(seconds), 3),
               "phases": {k: round(v, 3) for k, v in model.timings_.items()},
               "devices": getattr(model, "devices_", None) or {"fit": model.device_},
               "bitwise_repeat": bool(np.array_equal(fits[0][1], fits[1][1])),
               "knn_acc10": round(knn_accuracy(Y, y, 10), 4),
               "trust15": round(trustworthiness_sample(X, Y, 15), 4)}
        if name in ("GDR", "UMAP"):  # UMAP's placement: its SGD runs on the GPU too
            row.update(transform_timings(model, X[: min(len(X), 10_000)]))
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def transform_timings(model, X_new: np.ndarray) -> dict:
    """``transform`` of ``X_new`` warm on the model's device and on the CPU: seconds, and the
    median distance between the two placements relative to the embedding's extent."""
    device = model.device
    model.transform(X_new[:100])  # the rows kernel compiled or loaded
    tic = time.perf_counter()
    placed = model.transform(X_new)
    seconds = time.perf_counter() - tic
    model.set_params(device="cpu")
    tic = time.perf_counter()
    on_cpu = model.transform(X_new)
    cpu_seconds = time.perf_counter() - tic
    model.set_params(device=device)
    extent = float(np.ptp(model.embedding_, axis=0).max())
    gap = float(np.median(np.linalg.norm(placed - on_cpu, axis=1))) / extent
    return {"transform_n": len(X_new), "transform_s": round(seconds, 3),
            "transform_cpu_s": round(cpu_seconds, 3), "transform_gap": round(gap, 6)}


def rehearsal_cells() -> None:
    """The rehearsal's sizes for the GPU kNN's k-means cells (``UNIMAP_BENCH_CELLS`` =
    "above,rows": cells above this many points, of about that many each), so that its 300
    points take the path 10M points take on the GPU."""
    cells = os.environ.get("UNIMAP_BENCH_CELLS")
    if cells:
        import unimap.neighbors.brute_force_cuda as brute_force
        import unimap.neighbors.cells_cuda as cells_cuda

        above, rows = (int(v) for v in cells.split(","))
        brute_force.BRUTE_FORCE_MAX_SAMPLES, cells_cuda.CELL_ROWS = above, rows


def scale_row(method: str, device: str, n: int, source: str) -> dict:
    from scale import _DeviceMemoryPeak, data

    rehearsal_cells()

    X = data(n, source)
    print(f"{method} {n} {source}: data ready", flush=True)
    _make(method, device).fit(X[: min(3000, n // 2)])
    with _DeviceMemoryPeak(device) as gpu:
        tic = time.perf_counter()
        model = _make(method, device, verbose=True).fit(X)
        total = time.perf_counter() - tic
    row = {"method": method, "n": n, "source": source, "total_s": round(total, 2),
           "phases": {k: round(v, 2) for k, v in model.timings_.items()},
           "devices": model.devices_, "device_peak_mb": gpu.peak_mb,
           "knn": model.knn_method_}
    print(json.dumps(row), flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="GDR,GDRn,UMAP,TSNE,PCA")
    parser.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    parser.add_argument("--n", type=int, help="first N MNIST rows (the rehearsal's tiny data)")
    parser.add_argument("--scale", type=int, help="one verbose fit of this many points")
    parser.add_argument("--source", default="gauss", choices=("gauss", "mnist"))
    parser.add_argument("--json", type=Path, help="append the rows here, one JSON per line")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(ESTIMATORS))
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {sorted(ESTIMATORS)}")
    if args.scale:
        rows = [scale_row(m, args.device, args.scale, args.source) for m in methods]
    else:
        rows = mnist_rows(methods, args.device, args.n)
    if args.json:
        with args.json.open("a") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
