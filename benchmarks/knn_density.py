"""Recall of the default kNN graph on one 50-D Gaussian blob, against its number of points.

Why: ``benchmarks/dask_knn.py`` measured recall@15 0.93 at 200k, 0.74 at 1M and 0.42 at 10M
points of the issue-23 mixture (30 Gaussians in 50-D). Its clusters hold n / 30 points each,
and inside one isotropic 50-D Gaussian the nearest neighbours are barely nearer than the rest
(distance concentration): an approximate search finds near neighbours, not the nearest. This
script measures that alone: one standard Gaussian in 50-D with as many points as one cluster
of the mixture at 1M, 3M and 10M (and one shard of ``unimap.dask.knn_graph``), the default
in-memory graph (``unimap.neighbors.graph.nearest_neighbors``) against pynndescent with umap-learn's
settings, both scored on the same sampled rows against the exact neighbours:

- recall@15 (the row itself left out of both);
- the mean distance of the 14 found neighbours over the mean exact one (1.0: as near as the
  true ones), and the same for the 14th neighbour.

Usage::

    python benchmarks/knn_density.py [--sizes 33333,100000,333333] [--queries 500]
        [--out benchmarks/results/knn_density.md]

Times are this host's (same run, pynndescent compiled beforehand on small data).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from dask_place import emit, machine_state

K, D = 15, 50


def exact_neighbors(X: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact K neighbours of ``X[rows]`` (the row itself first) and their distances."""
    sq = (X.astype(np.float64) ** 2).sum(1)
    ids, dists = [], []
    for start in range(0, len(rows), 100):
        q = rows[start:start + 100]
        d2 = sq[q][:, None] - 2.0 * (X[q].astype(np.float64) @ X.T.astype(np.float64)) + sq
        top = np.argsort(d2, axis=1)[:, :K]
        ids.append(top)
        dists.append(np.sqrt(np.maximum(np.take_along_axis(d2, top, 1), 0.0)))
    return np.vstack(ids), np.vstack(dists)


def score(indices: np.ndarray, distances: np.ndarray, rows: np.ndarray,
          exact: np.ndarray, exact_dist: np.ndarray) -> tuple[float, float, float]:
    """Recall@15, mean-distance ratio and 14th-distance ratio of a graph on ``rows``."""
    hits = [np.intersect1d(indices[r, 1:], e[e != r]).size for r, e in zip(rows, exact,
                                                                          strict=True)]
    found = np.sort(distances[rows], axis=1)[:, 1:]
    return (float(np.mean(hits)) / (K - 1), float(found.mean() / exact_dist[:, 1:].mean()),
            float(np.mean(found[:, -1] / exact_dist[:, -1])))


def run(n: int, queries: int) -> dict:
    from pynndescent import NNDescent

    from unimap.neighbors.graph import nearest_neighbors

    X = np.random.default_rng(0).standard_normal((n, D), dtype=np.float32)
    rows = np.random.default_rng(1).choice(n, size=min(queries, n), replace=False)
    exact, exact_dist = exact_neighbors(X, rows)
    res = {"n": n, "exact_nn": float(exact_dist[:, 1].mean()),
           "exact_14": float(exact_dist[:, -1].mean())}
    tic = time.perf_counter()
    graph = nearest_neighbors(X, K)[0]
    res["unimap_s"] = time.perf_counter() - tic
    res["unimap"] = score(graph.indices, graph.distances, rows, exact, exact_dist)
    # umap-learn's settings (umap_.nearest_neighbors)
    n_trees = min(64, 5 + int(round((n ** 0.5) / 20.0)))
    n_iters = max(5, int(round(np.log2(n))))
    tic = time.perf_counter()
    index = NNDescent(X, n_neighbors=K, metric="euclidean", n_trees=n_trees, n_iters=n_iters,
                      max_candidates=60, low_memory=True, random_state=0, n_jobs=-1)
    indices, distances = index.neighbor_graph
    res["pynndescent_s"] = time.perf_counter() - tic
    res["pynndescent"] = score(indices, distances, rows, exact, exact_dist)
    return res


def report(results: list[dict], args: argparse.Namespace, state: str) -> str:
    lines = [f"## One 50-D Gaussian, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"- state at start: {state}",
             f"- command: `python benchmarks/knn_density.py --sizes "
             f"{','.join(map(str, args.sizes))} --queries {args.queries}`", "",
             "| n | exact 1st / 14th NN distance | library | s | recall@15 | "
             "mean-distance ratio | 14th-distance ratio |", "|---:|---|---|---:|---:|---:|---:|"]
    for res in results:
        for lib in ("unimap", "pynndescent"):
            r, mean_ratio, kth_ratio = res[lib]
            lines.append(f"| {res['n']:,} | {res['exact_nn']:.2f} / {res['exact_14']:.2f} | "
                         f"{lib} | {res[f'{lib}_s']:.1f} | {r:.4f} | {mean_ratio:.4f} | "
                         f"{kth_ratio:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")],
                        default=[33_333, 100_000, 333_333])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--out", type=Path, help="append the report to this Markdown file")
    args = parser.parse_args()
    from pynndescent import NNDescent

    warm = NNDescent(np.random.default_rng(0).standard_normal((2000, D), dtype=np.float32),
                     n_neighbors=K, random_state=0)  # compile outside the timings
    assert warm.neighbor_graph[0].shape == (2000, K)
    state = machine_state()
    emit(report([run(n, args.queries) for n in args.sizes], args, state), args.out)


if __name__ == "__main__":
    main()
