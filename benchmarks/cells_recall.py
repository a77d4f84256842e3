"""Recall of the GPU's k-means cells kNN search (``unimap/neighbors/cells_cuda.py``), on the CPU.

``cell_graph_reference`` computes the graph the GPU kernels compute (the same cells, probes,
scan order and float32 sums; ``tests/device/test_cuda.py`` checks they are equal), so its recall
is the GPU's. Data: ``benchmarks/scale.py``'s 50-D mixture of 30 Gaussians, searched as is
(50 features: no projection). Recall@k of 2,000 random points against their exact neighbours
(NumPy brute force), the point itself included, and the share of points that probe a second
cell. Rows:

- the default cells (``CELL_ROWS`` = 25,000 points each): at 250k points, 10 cells, about one
  per Gaussian;
- cells of ``n / 400`` points: 400 cells, as 10M points get by default (13 cells per
  Gaussian), so each Gaussian is cut by as many walls as at 10M, with 1 to 15 cells probed
  besides the home cell. (Fewer points per cell than at 10M, so the neighbours reach further
  relative to a cell: a pessimistic stand-in.)

Examples::

    python benchmarks/cells_recall.py                 # 250k points, writes results/cells_recall.md
    python benchmarks/cells_recall.py --n 50000 --no-save
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "cells_recall.md"
K = 15  # UMAP's default n_neighbors
N_QUERIES = 2_000


def recall(X: np.ndarray, idx: np.ndarray, queries: np.ndarray) -> float:
    found = 0
    for q in queries:
        d = ((X - X[q]) ** 2).sum(1, dtype=np.float64)
        exact = np.argpartition(d, K)[:K]
        found += len(set(exact) & set(idx[q]))
    return found / (K * len(queries))


def row(X: np.ndarray, cell_rows: int, n_probe: int, queries: np.ndarray) -> str:
    from unimap.neighbors.cells_cuda import (
        KMEANS_MIN_SAMPLE,
        KMEANS_SAMPLE_PER_CELL,
        KMEANS_SEED,
        cell_graph_reference,
        n_cells_for,
    )
    from unimap.neighbors.kmeans import kmeans

    n = X.shape[0]
    n_cells = n_cells_for(n, cell_rows)
    n_sample = min(n, max(KMEANS_MIN_SAMPLE, KMEANS_SAMPLE_PER_CELL * n_cells))
    tic = time.perf_counter()
    centroids = kmeans(np.ascontiguousarray(X[::max(1, n // n_sample)]), n_cells, KMEANS_SEED)
    idx, _ = cell_graph_reference(X, centroids, K, n_probe)
    seconds = time.perf_counter() - tic
    sizes = np.bincount(_homes(X, centroids), minlength=n_cells)
    line = (f"| {n:,} | {n_cells} | {sizes.min():,}-{sizes.max():,} | {n_probe} | "
            f"{recall(X, idx, queries):.4f} | {seconds:.0f} |")
    print(line, flush=True)
    return line


def _homes(X: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    from unimap.neighbors.kmeans import nearest_centroids

    return nearest_centroids(X, centroids)


def main() -> None:
    from scale import data

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=250_000)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    X = data(args.n, "gauss")
    queries = np.random.default_rng(1).choice(args.n, N_QUERIES, replace=False)
    from unimap.neighbors.cells_cuda import CELL_ROWS, N_PROBE

    rows = [row(X, CELL_ROWS, N_PROBE, queries)]
    rows += [row(X, max(K, args.n // 400), p, queries) for p in (1, 3, 7, 15)]
    text = ("# Recall of the GPU's k-means cells kNN search (computed on the CPU)\n\n"
            f"`python benchmarks/cells_recall.py --n {args.n}`: the 50-D mixture of "
            f"`benchmarks/scale.py`, k = {K}, recall@{K} of {N_QUERIES:,} random points "
            "(the point itself included). Seconds: k-means and the whole graph on this host's "
            "CPU (the reference, not the GPU).\n\n"
            "| points | cells | points per cell | cells probed at most | recall | s (CPU) |\n"
            "|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\nSee the script's docstring for what each row stands for.\n")
    print(text)
    if not args.no_save:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
