"""GDR()'s 2-D optimizer with and without the large-input layout, on MNIST (issue 20/23).

From ``unimap.optimizers.sampling.POOLED_NEGATIVES_MIN_ROWS`` points on, ``GDR()`` relabels the
points along a Z-order curve of their start and draws each row block's negatives from a pool of
``NEGATIVE_POOL`` points (docs/gdr.md, "Large inputs"). This script measures where that pays:
``GDR(random_state=0)`` is fitted once on MNIST (``--n`` rows) with the layout off, and the
arguments of its optimizer call (:func:`unimap.optimizers.gdr.unnormalized.unnormalized_full_batch`:
the real graph and spectral start) are kept. Then, interleaved, ``--rounds`` times each, the whole
optimization runs in four configurations:

- ``plain``: input labels, every negative sample reads its own point (below the threshold);
- ``relabel``: Z-order labels, per-sample negatives;
- ``pool``: input labels, pooled negatives;
- ``relabel+pool``: both (what GDR() does from the threshold on).

Reported: median and minimum milliseconds per epoch, the ratio of the medians to ``plain``,
and the leave-one-out 10-NN accuracy of each configuration's embedding (first round; the
same start and seed for all). Quote ratios from one run: this host's speed drifts.

Usage::

    python benchmarks/gdr_locality.py [--n 70000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from busy_epochs import capture_problem
from dask_place import machine_state


def configurations(args: tuple, kwargs: dict) -> dict:
    """``name -> (args, kwargs, order)`` of the four layouts of the captured problem."""
    from unimap.optimizers.gdr.forces import gdr_edge_arrays
    from unimap.optimizers.sampling import NEGATIVE_POOL
    from unimap.runtime.ordering import locality_order

    init, edges, transposed, scale = args[:4]
    P = _csr(edges)
    order = locality_order(init)
    # Pᵀ's arrays are empty unless P is directed; the captured scale stays the call's
    directed = transposed[0].shape[0] > 0
    r_edges, r_transposed, _ = gdr_edge_arrays(P, True, directed, order)
    relabelled = (init[order], r_edges, r_transposed, scale) + tuple(args[4:])
    plain_kw = dict(kwargs, negative_pool=0, row_ids=None)
    pool_kw = dict(kwargs, negative_pool=NEGATIVE_POOL, row_ids=None)
    return {
        "plain": (args, plain_kw, None),
        "relabel": (relabelled, plain_kw, order),
        "pool": (args, pool_kw, None),
        "relabel+pool": (relabelled, pool_kw, order),
    }


def _csr(edges: tuple):
    import scipy.sparse as sp

    indptr, indices, data = edges
    n = indptr.shape[0] - 1
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=70_000, help="MNIST rows")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per configuration")
    options = parser.parse_args()

    from unimap.datasets import load_mnist
    from unimap.metrics import knn_accuracy_loo
    from unimap.optimizers import sampling
    from unimap.optimizers.gdr.unnormalized import unnormalized_full_batch
    from unimap.runtime.ordering import in_input_order

    print(f"machine at start: {machine_state()}")
    threshold = sampling.POOLED_NEGATIVES_MIN_ROWS
    sampling.POOLED_NEGATIVES_MIN_ROWS = options.n + 1  # capture the problem without the layout
    try:
        args, kwargs = capture_problem(options.n)
    finally:
        sampling.POOLED_NEGATIVES_MIN_ROWS = threshold
    labels = load_mnist()[1][: options.n]
    n_epochs = args[4]
    configs = configurations(args, kwargs)
    times = {name: [] for name in configs}
    accuracy = {}
    for _ in range(options.rounds):
        for name, (call_args, call_kwargs, order) in configs.items():
            start = time.perf_counter()
            Y = unnormalized_full_batch(*call_args, **call_kwargs)
            times[name].append((time.perf_counter() - start) / n_epochs * 1e3)
            if name not in accuracy:
                Y = Y if order is None else in_input_order(Y, order)
                accuracy[name] = knn_accuracy_loo(Y, labels, 10)
    base = float(np.median(times["plain"]))
    print(f"\nMNIST-{options.n}, {n_epochs} epochs, {options.rounds} rounds, interleaved")
    print("| layout | median ms/epoch | min | / plain | 10-NN accuracy |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        median = float(np.median(values))
        print(f"| {name} | {median:.2f} | {min(values):.2f} | {median / base:.2f}x "
              f"| {accuracy[name]:.4f} |")
    print(f"machine at end: {machine_state()}")


if __name__ == "__main__":
    main()
