"""unimap on a GPU against cuML and against unimap on the CPU, MNIST-70k end to end (issue 21).

Usage, on the GPU machine (``pip install -e ".[gpu,bench]" cuml-cu12``)::

    python benchmarks/gpu.py                       # every candidate, 3 warm runs each
    python benchmarks/gpu.py --only unimap-gdr-cuda cuml-umap --runs 5
    python benchmarks/gpu.py --out benchmarks/results/gpu.md

Every run is a fresh process (:mod:`_harness`): the clock starts before the library is
imported and stops when the embedding is a NumPy array in host memory; the data are loaded
before (not timed). Each candidate first runs once untimed-for-the-table in the same way (its
``first`` column: numba-cuda and cuML compile or load their kernels then), then ``--runs``
times; the table gives the median and range of those. Quality is 10-NN accuracy on the digit
labels over all points and trustworthiness at k = 15 on a fixed 3,000-point sample, computed
afterwards on the CPU. ``devices`` is unimap's ``devices_``: which phases ran on the GPU.

Targets of the issue: GDR/UMAP-like on the GPU <= 0.5 s and >= 3x faster than cuML UMAP at
equal quality; t-SNE-like >= 3x faster than cuML TSNE at equal or better recall. Absolute
times are only meaningful from the GPU machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (  # noqa: E402
    Runner,
    fmt,
    knn_accuracy,
    machine_description,
    markdown_table,
    run_worker,
    trustworthiness_sample,
    worker_main,
)


def _import_unimap() -> Any:
    import unimap

    return unimap


def _unimap_fit(method: str, device: str, **params: Any):
    def fit(unimap: Any, X: np.ndarray, spec_params: dict) -> tuple[np.ndarray, dict]:
        epochs = os.environ.get("UNIMAP_BENCH_EPOCHS")  # the simulator's rehearsal only
        if epochs and method in ("GDR", "UMAP"):
            params["n_epochs"] = int(epochs)
        elif epochs and method == "TSNE":  # the GPU's exact sums: n² Python steps simulated
            params.update(max_iter=int(epochs), early_exaggeration_iter=int(epochs) // 2)
        est = getattr(unimap, method)(random_state=0, device=device, **params)
        Y = est.fit_transform(X)
        devices = getattr(est, "devices_", None) or {"fit": est.device_}  # PCA: one phase
        return Y, {"timings": est.timings_, "devices": devices}
    return fit


def _import_cuml() -> Any:
    import cuml

    return cuml


def _cuml_fit(method: str, **params: Any):
    def fit(cuml: Any, X: np.ndarray, spec_params: dict) -> tuple[np.ndarray, dict]:
        Y = getattr(cuml, method)(random_state=0, **params).fit_transform(X)
        if hasattr(Y, "get"):  # a CuPy array: the clock stops with the embedding on the host
            Y = Y.get()
        return np.asarray(Y), {}
    return fit


def _import_torchdr() -> Any:
    import torchdr

    return torchdr


def _peer_device() -> str:
    """Where the GPU peers run: ``cuda``, or ``cpu`` for the simulator's rehearsal
    (``UNIMAP_PEER_DEVICE=cpu``: a machine without a GPU checks the plumbing only)."""
    return os.environ.get("UNIMAP_PEER_DEVICE", "cuda")


def _import_torchdr_fixed() -> Any:
    """TorchDR 0.5 with its symmetrisation's keys in int64: it builds ``i * n + j`` from int32
    kNN indices, which overflow above 46,340 points ("bincount only supports 1-d non-negative
    integral inputs" at MNIST-70k); casting the indices first is the whole fix."""
    import torchdr
    from torchdr.utils import sparse

    merge = sparse.merge_symmetry
    if not getattr(merge, "_unimap_int64", False):
        def merge_int64(i, j, v, n):
            return merge(i.long(), j.long(), v, n)
        merge_int64._unimap_int64 = True
        sparse.merge_symmetry = merge_int64
    return torchdr


def _torch_to_host(Y: Any) -> np.ndarray:
    if hasattr(Y, "detach"):  # a torch tensor: the clock stops with it on the host
        Y = Y.detach().cpu().numpy()
    return np.asarray(Y)


def _torchdr_fit(method: str, **params: Any):
    def fit(torchdr: Any, X: np.ndarray, spec_params: dict) -> tuple[np.ndarray, dict]:
        model = getattr(torchdr, method)(random_state=0, device=_peer_device(), **params)
        return _torch_to_host(model.fit_transform(X)), {}
    return fit


def _import_gtsne() -> Any:
    import g_tsne

    return g_tsne


def _gtsne_fit(g_tsne: Any, X: np.ndarray, spec_params: dict) -> tuple[np.ndarray, dict]:
    """gpu-tsne 0.1 (a PyTorch FFT t-SNE that travels in 15 kB), 750 iterations by default."""
    return _torch_to_host(g_tsne.TSNE(random_state=0, device=_peer_device()).fit_transform(X)), {}


RUNNERS = {
    "unimap-gdr-cuda": Runner(_import_unimap, _unimap_fit("GDR", "cuda")),
    "unimap-umap-cuda": Runner(_import_unimap, _unimap_fit("UMAP", "cuda")),
    "unimap-gdr-cpu": Runner(_import_unimap, _unimap_fit("GDR", "cpu")),
    "unimap-umap-cpu": Runner(_import_unimap, _unimap_fit("UMAP", "cpu")),
    "unimap-gdr-normalized-cuda": Runner(_import_unimap,
                                         _unimap_fit("GDR", "cuda", normalized=True)),
    "unimap-tsne-cpu": Runner(_import_unimap, _unimap_fit("TSNE", "cpu")),
    "unimap-tsne-cuda": Runner(_import_unimap, _unimap_fit("TSNE", "cuda")),
    "unimap-pca-cuda": Runner(_import_unimap, _unimap_fit("PCA", "cuda")),
    "unimap-pca-cpu": Runner(_import_unimap, _unimap_fit("PCA", "cpu")),
    "cuml-umap": Runner(_import_cuml, _cuml_fit("UMAP")),
    "cuml-tsne": Runner(_import_cuml, _cuml_fit("TSNE")),
    # TorchDR (PyTorch): the GPU peer that can be carried where cuML cannot be installed
    # backend=None: torch on the GPU (its default, faiss, falls back to faiss-cpu without faiss-gpu)
    "torchdr-umap": Runner(_import_torchdr_fixed, _torchdr_fit("UMAP", backend=None)),
    "torchdr-tsne": Runner(_import_torchdr, _torchdr_fit("TSNE", backend=None)),
    "gtsne-tsne": Runner(_import_gtsne, _gtsne_fit),
}


def _load_mnist(root: Path, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    sys.path.insert(0, str(root))
    from unimap.datasets import load_mnist

    X, y = load_mnist(download=False)
    return (X[:n], y[:n]) if n else (X, y)


def _run(name: str, data: Path, workdir: Path, run_id: int) -> dict:
    spec = {"data": str(data), "embedding": str(workdir / f"{name}-{run_id}.npy")}
    result = run_worker(__file__, name, spec, workdir / f"{name}-{run_id}.json")
    result["embedding_path"] = spec["embedding"]
    return result


def run_benchmark(args: argparse.Namespace) -> str:
    root = Path(__file__).resolve().parents[1]
    X, y = _load_mnist(root, args.n)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        data = workdir / "mnist.npy"
        np.save(data, X)
        for name in args.only or list(RUNNERS):
            try:
                first = _run(name, data, workdir, 0)
                warm = [_run(name, data, workdir, r) for r in range(1, args.runs + 1)]
            except Exception as exc:  # noqa: BLE001 - a missing peer is reported, not fatal
                rows.append([name, "failed: " + str(exc)[:80]] + [""] * 7)
                print(f"{name}: {exc}", file=sys.stderr)
                continue
            totals = [r["total_s"] for r in warm]
            Y = np.load(warm[-1]["embedding_path"])
            extra = warm[-1].get("extra") or {}
            devices = extra.get("devices") or {}
            on_gpu = ",".join(k for k, v in devices.items() if v == "cuda") or "-"
            rows.append([name, fmt(first["total_s"]), fmt(statistics.median(totals)),
                         f"{fmt(min(totals))}-{fmt(max(totals))}",
                         fmt(knn_accuracy(Y, y, 10), 4),
                         fmt(trustworthiness_sample(X, Y, 15), 4), on_gpu,
                         fmt((extra.get("timings") or {}).get("optimize")),
                         fmt(warm[-1]["peak_rss_mb"], 0)])
            print(" | ".join(rows[-1]), file=sys.stderr)
    headers = ["candidate", "first s", "median s", "range s", "10-NN acc", "trust@15",
               "phases on GPU", "optimize s", "peak RSS MiB"]
    return "\n".join([
        "# unimap on the GPU, MNIST-70k end to end",
        "",
        f"Machine: {machine_description()}",
        "",
        f"Reproduce: `python benchmarks/gpu.py --runs {args.runs}"
        + (f" --n {args.n}" if args.n else "")
        + (f" --only {' '.join(args.only)}" if args.only else "") + "`",
        "",
        markdown_table(headers, rows),
        "",
    ])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(RUNNERS))
    parser.add_argument("--runs", type=int, default=3, help="warm runs per candidate")
    parser.add_argument("--out", type=Path, help="write the markdown table here")
    parser.add_argument("--n", type=int, help="first N rows of MNIST (the rehearsal's tiny data)")
    parser.add_argument("--worker", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker_main(RUNNERS[args.worker], args.spec)
        return 0
    report = run_benchmark(args)
    print(report)
    if args.out:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
