"""LOBPCG (the GPU's spectral start) against ARPACK (the CPU's) on MNIST-70k's GDR graph, on
the CPU with NumPy's block operations: iterations to a residual tolerance, per number of guard
vectors, and how well the two eigenvectors span ARPACK's (issue 45).

Usage::

    python benchmarks/spectral_lobpcg.py --out benchmarks/results/spectral_lobpcg.md

The iteration counts are those the GPU runs (its kernels implement the same operations); the
seconds are NumPy's on this machine and say nothing of the GPU's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    from _harness import machine_description, markdown_table

    import unimap
    from unimap.datasets import load_mnist
    from unimap.initialization.eigenpairs import normalized_adjacency
    from unimap.initialization.lobpcg import NumpyBlockOps, lobpcg_largest
    from unimap.initialization.spectral import spectral_layout

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    X, _ = load_mnist(download=False)
    graph = unimap.GDR(random_state=0, n_epochs=1).fit(X).graph_
    tic = time.perf_counter()
    reference = spectral_layout(graph, 2, 0)
    arpack_s = time.perf_counter() - tic
    adjacency, degrees = normalized_adjacency(graph)
    ops = NumpyBlockOps(adjacency.astype(np.float32))
    trivial = (np.sqrt(degrees) / np.linalg.norm(np.sqrt(degrees))).astype(np.float32)[:, None]
    unit = reference / np.linalg.norm(reference, axis=0)
    rows = []
    for guards in (2, 4, 8):
        X0 = np.random.default_rng(0).standard_normal((graph.shape[0], 2 + guards))
        for tol in (1e-3, 1e-4):
            tic = time.perf_counter()
            result = lobpcg_largest(ops, X0.astype(np.float32), trivial, 2, tol, 500)
            seconds = time.perf_counter() - tic
            ours = result.vectors[:, :2].astype(np.float64)
            cosines = np.linalg.svd((ours / np.linalg.norm(ours, axis=0)).T @ unit,
                                    compute_uv=False)
            rows.append([str(guards), f"{tol:g}", str(result.n_iter), str(result.converged),
                         f"{cosines.min():.5f}", f"{cosines.max():.5f}", f"{seconds:.2f}"])
            print(" | ".join(rows[-1]), flush=True)
    report = "\n".join([
        "# LOBPCG (the GPU's spectral start) against ARPACK, MNIST-70k GDR graph",
        "", f"Machine: {machine_description()}", "",
        f"Graph: {graph.shape[0]} vertices, {graph.nnz} edges. ARPACK (the CPU's solver, "
        f"tol 1e-4, 16 Lanczos vectors): {arpack_s:.2f} s here.", "",
        "Reproduce: `python benchmarks/spectral_lobpcg.py`", "",
        markdown_table(["guard vectors", "tol", "iterations", "converged",
                        "min cos to ARPACK", "max cos", "NumPy s (not the GPU's)"], rows), ""])
    print(report)
    if args.out:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
