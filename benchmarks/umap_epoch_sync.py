"""UMAP's GPU epoch in edge groups: does it embed as well as the CPU's epochs?

The GPU's UMAP epoch used to run the colour classes one after the other with a grid-wide
barrier between them: at least as many barriers per epoch as the graph's largest degree. It
now runs ``EPOCH_GROUPS`` groups of edges, each reading the positions at the group's start and
summing every point's moves in fixed point (``unimap/optimizers/umap_sgd/grouped_numba.py``):
two barriers per group. Fewer groups mean fewer barriers and staler positions; this script
measures what that costs in quality on the CPU, where the serial reference of the GPU's epoch
(``sgd_epoch_groups``) runs the same arithmetic.

Each variant fits ``unimap.UMAP(random_state=0)`` on MNIST (same kNN graph, spectral start,
sampling schedule and steps); only the epochs differ:

* ``cpu``: unimap's CPU epochs (colour classes, live positions);
* ``groups-N``: the grouped epoch with N groups (``groups-16`` is the GPU's);
* ``rows``: one point per thread moving only itself along its own edges, the other ends and
  the negative samples read from the epoch's start (no atomics and one launch per epoch on a
  GPU; a rejected alternative).

Quality: leave-one-out 10-NN accuracy over all points, trustworthiness@15 on a fixed
3,000-point sample (``_harness.py``).

    python benchmarks/umap_epoch_sync.py                 # 70k, every variant
    python benchmarks/umap_epoch_sync.py --n 20000 --variants cpu,groups-16 --no-save
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numba
import numpy as np
from _harness import knn_accuracy, machine_description, trustworthiness_sample

from unimap.lowdim.similarity_numba import sgd_attraction_coeff, sgd_repulsion_coeff
from unimap.optimizers.umap_sgd.epochs_numba import clip_grad, clip_rare, draw_negative
from unimap.runtime.rng_numba import hash_combine, mix64

VARIANTS = "cpu,groups-1,groups-4,groups-16,groups-32,rows"


@numba.njit(cache=False, fastmath=True)
def row_epoch_2d(emb, snapshot, indptr, indices, epochs_per_sample, next_sample,
                 epochs_per_negative, next_negative, seed, epoch, a, b, gamma, alpha):
    """The ``rows`` variant's epoch: each point moves itself along its due edges, reading the
    other ends and its negative samples from ``snapshot``; nothing else writes its row."""
    seed_hash = mix64(np.uint64(seed))
    n_draw = snapshot.shape[0] - 1
    for i in range(indptr.shape[0] - 1):
        y0 = snapshot[i, 0]
        y1 = snapshot[i, 1]
        for e in range(indptr[i], indptr[i + 1]):
            if next_sample[e] > epoch:
                continue
            j = indices[e]
            dx = y0 - snapshot[j, 0]
            dy = y1 - snapshot[j, 1]
            coeff = sgd_attraction_coeff(dx * dx + dy * dy, a, b)
            y0 += clip_rare(coeff * dx) * alpha
            y1 += clip_rare(coeff * dy) * alpha
            next_sample[e] += epochs_per_sample[e]
            n_neg = np.int64((epoch - next_negative[e]) / epochs_per_negative[e])
            next_negative[e] += n_neg * epochs_per_negative[e]
            key = hash_combine(hash_combine(seed_hash, e), epoch)
            r0 = np.float32(0.0)
            r1 = np.float32(0.0)
            for s in range(n_neg):
                k = draw_negative(key, s, n_draw, i, True)
                ex = y0 - snapshot[k, 0]
                ey = y1 - snapshot[k, 1]
                c = sgd_repulsion_coeff(ex * ex + ey * ey, a, b, gamma)
                r0 += clip_grad(c * ex)
                r1 += clip_grad(c * ey)
            y0 += r0 * alpha
            y1 += r1 * alpha
        emb[i, 0] = y0
        emb[i, 1] = y1


def epochs_of(variant: str):
    """A stand-in for ``umap_sgd_fit`` that runs ``variant``'s epochs (CPU, serial)."""
    from unimap.optimizers.umap_sgd.common import (
        grouped_sampling_plan,
        place_sampling_plan,
        sgd_steps,
    )
    from unimap.optimizers.umap_sgd.grouped_numba import sgd_epoch_groups

    def fit(init, graph, *, n_epochs, a, b, seed, learning_rate=1.0, repulsion_strength=1.0,
            negative_sample_rate=5.0, **ignored):
        kernel, seed, alphas = sgd_steps(a, b, repulsion_strength, seed, learning_rate,
                                         n_epochs)
        emb = np.ascontiguousarray(init, dtype=np.float32).copy()
        if variant == "rows":
            rows, schedule = place_sampling_plan(graph, n_epochs, None, negative_sample_rate)
            for epoch in range(n_epochs):
                row_epoch_2d(emb, emb.copy(), rows.indptr, rows.indices, *schedule, seed,
                             epoch, kernel.a, kernel.b, kernel.gamma, alphas[epoch])
            return emb
        n_groups = int(variant.split("-")[1])
        edges, schedule, _ = grouped_sampling_plan(graph, n_epochs, negative_sample_rate,
                                                   n_groups)
        moves = np.zeros(emb.shape, np.int64)
        for epoch in range(n_epochs):
            sgd_epoch_groups(emb, moves, edges, schedule, kernel, seed, epoch, alphas[epoch])
        return emb

    return fit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=70000)
    parser.add_argument("--variants", default=VARIANTS)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"
                                             / "umap_epoch_sync.md"))
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    import unimap
    from unimap.optimizers.umap_sgd import fit as sgd_fit

    X, y = unimap.datasets.load_mnist(n_samples=args.n)
    cpu_fit = sgd_fit.umap_sgd_fit
    lines = ["# UMAP's GPU epoch in edge groups, against the CPU's epochs", "",
             f"{time.strftime('%Y-%m-%d')}, `python benchmarks/umap_epoch_sync.py` (what each "
             "variant is: the script's docstring).", "",
             f"Machine: {machine_description()}; load average before the runs "
             f"{os.getloadavg()[0]:.2f}", "",
             f"MNIST n={args.n}, `unimap.UMAP(random_state=0)`; only the epochs differ "
             "(the variants other than `cpu` run serially: their times are not comparable)", "",
             "| epochs | 10-NN accuracy | trustworthiness@15 | fit s |", "|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for variant in args.variants.split(","):
        sgd_fit.umap_sgd_fit = cpu_fit if variant == "cpu" else epochs_of(variant)
        t0 = time.perf_counter()
        emb = unimap.UMAP(random_state=0).fit_transform(X)
        seconds = time.perf_counter() - t0
        row = (f"| {variant} | {knn_accuracy(emb, y):.4f} | "
               f"{trustworthiness_sample(X, emb):.4f} | {seconds:.1f} |")
        lines.append(row)
        print(row, flush=True)
    sgd_fit.umap_sgd_fit = cpu_fit
    if not args.no_save:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
