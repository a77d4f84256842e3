"""Time one epoch of GDR's normalized-mode force kernel on MNIST-70k (a profiling aid).

``GDR(normalized=True)`` spends most of its optimization in
:func:`unimap.optimizers.gdr.normalized_numba.gdr_normalized_forces`. This script fits the default
model once (so that the graph and the embedding are the real ones), then calls the kernel on the
final embedding for each configuration in turn, ``--rounds`` times each, and prints the median and
minimum time of one epoch. Configurations run interleaved, so a slow spell of this shared
machine hits all of them alike; quote ratios between rows, absolute times only from a quiet
machine.

Rows: shared samples (the default; M ≈ 4·nnz/n ≈ 520 at perplexity 30), one shared sample
(M = 1: what the exact near field and the attraction cost alone), and per-row samples
(``shared_negatives=False``'s ~130 per row).

Example::

    python benchmarks/gdr_epoch.py                 # MNIST-70k
    python benchmarks/gdr_epoch.py --n 20000 --rounds 10
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

MNIST = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "mnist"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=70_000, help="MNIST rows (default: all)")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per row")
    parser.add_argument("--epochs", type=int, default=5, help="epochs per round")
    args = parser.parse_args()

    from unimap import GDR
    from unimap.datasets import load_mnist
    from unimap.optimizers.gdr.common_numba import CSR, SampledKernel, TransposedCSR
    from unimap.optimizers.gdr.forces import neighbour_marks
    from unimap.optimizers.gdr.normalized_numba import gdr_normalized_forces

    X, _ = load_mnist(MNIST, download=False)
    X = X[: args.n]
    model = GDR(normalized=True, random_state=0).fit(X)
    (indptr, indices, data), transposed, scale = model._edge_arrays()
    Y = np.ascontiguousarray(model.embedding_, dtype=np.float32)
    A, R = np.empty_like(Y), np.empty_like(Y)
    z_rows = np.empty(len(Y))
    marks = neighbour_marks(len(Y))
    f32 = np.float32
    a, b = f32(model.a_), f32(model.b_)
    negatives = model.n_negatives_

    def epoch_fn(shared: bool, m: float):
        def run(epoch: int) -> None:
            gdr_normalized_forces(Y, A, R, z_rows, marks, CSR(indptr, indices, data),
                                  TransposedCSR(*transposed), SampledKernel(f32(scale), m, a, b),
                                  np.uint64(0), np.int64(epoch), False, shared)
        return run

    rows = {
        f"shared samples (n_negatives={negatives:g})": epoch_fn(True, negatives),
        "one shared sample (near field + attraction)": epoch_fn(True, 1e-9),
        "per-row samples (n_negatives=1)": epoch_fn(False, 1.0),
    }
    times: dict[str, list[float]] = {name: [] for name in rows}
    for run in rows.values():
        run(0)  # compile / warm up
    for _ in range(args.rounds):
        for name, run in rows.items():
            start = time.perf_counter()
            for epoch in range(args.epochs):
                run(epoch)
            times[name].append((time.perf_counter() - start) / args.epochs * 1e3)
    print(f"MNIST first {len(Y):,} rows, {indptr[-1]:,} edges; ms per epoch "
          f"(median, min of {args.rounds} rounds of {args.epochs}):")
    base = float(np.median(times[next(iter(rows))]))
    for name, values in times.items():
        median = float(np.median(values))
        print(f"  {name:45s} {median:7.2f}  {min(values):7.2f}  ({median / base:.2f}x)")


if __name__ == "__main__":
    main()
