"""GDR's 2-D epochs with a barrier per epoch against chunks of epochs without one, on a quiet
host and with a CPU-bound competitor pinned to core 0 (issue 20, item 3).

The problem is the real one: ``GDR(random_state=0)`` is fitted once on MNIST (``--n`` rows)
and the arguments of its optimizer
(:func:`unimap.optimizers.gdr.unnormalized.unnormalized_full_batch`) are kept. Then, interleaved,
``--rounds`` times each in each state:

- ``per-epoch``: the former driver, one ``prange`` per epoch
  (:func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch`) with adaptive threads
  and pinned workers, as the 2-D optimizer ran before the chunked kernel;
- ``chunked``: :func:`unimap.optimizers.gdr.unnormalized.unnormalized_full_batch` as it is,
  ``EPOCH_CHUNK`` epochs per parallel region (:mod:`unimap.optimizers.gdr.chunked_epochs_numba`).

Both give the same embedding bitwise (checked here on every round). Reported: the median and
minimum seconds of the whole optimization (all epochs) per driver and state, and the
machine's state. Quote ratios from one run; this host's speed drifts between runs.

Usage::

    python benchmarks/busy_epochs.py [--n 70000] [--rounds 5] [--out results/busy_epochs.md]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from busy_host import competitor  # a CPU-bound loop pinned to core 0
from dask_place import emit, machine_state


def capture_problem(n: int) -> tuple:
    """The positional and keyword arguments of GDR()'s ``unnormalized_full_batch`` call."""
    import unimap
    import unimap.optimizers.gdr.unnormalized as optimize_module
    from unimap.datasets import load_mnist

    captured = {}
    original = optimize_module.unnormalized_full_batch

    def keep(*args, **kwargs):
        captured["call"] = (args, kwargs)
        return original(*args, **kwargs)

    optimize_module.unnormalized_full_batch = keep  # gdr_unnormalized looks it up at call time
    try:
        unimap.GDR(random_state=0).fit(load_mnist()[0][:n])
    finally:
        optimize_module.unnormalized_full_batch = original
    args, kwargs = captured["call"]
    kwargs = dict(kwargs, guard=None)
    return args, kwargs


def per_epoch(init, edges, transposed, attraction_scale, n_epochs, a, b, seed,
              learning_rate, momentum, n_negatives, repulsion_weight, guard=None, row_ids=None,
              device="cpu", negative_pool=0):
    """The 2-D optimizer before the chunked kernel: a ``prange`` (and its join) per epoch."""
    from unimap.lowdim.similarity_numba import UMAP_EPS
    from unimap.optimizers.gdr.common_numba import CSR, HeavyBall, TransposedCSR, UnnormalizedForces
    from unimap.optimizers.gdr.unnormalized import FULL_BATCH_CLIP
    from unimap.optimizers.gdr.unnormalized_numba import gdr_unnormalized_epoch
    from unimap.optimizers.schedule import linear_decay
    from unimap.runtime.threads import adaptive_threads

    f32 = np.float32
    rates = linear_decay(learning_rate, n_epochs)
    Y = np.array(init, dtype=np.float32, order="C")
    Y_next, F, V = np.empty_like(Y), np.empty_like(Y), np.zeros_like(Y)
    threads = adaptive_threads(Y.shape[0])
    with threads.spread():
        for epoch in range(n_epochs):
            threads.start_epoch(epoch)
            gdr_unnormalized_epoch(Y, Y_next, F, V, CSR(*edges), TransposedCSR(*transposed),
                                   UnnormalizedForces(f32(attraction_scale), n_negatives,
                                                      f32(repulsion_weight), f32(a), f32(b),
                                                      f32(UMAP_EPS)),
                                   HeavyBall(f32(FULL_BATCH_CLIP), f32(momentum)), rates[epoch],
                                   np.uint64(seed), np.int64(epoch), False,
                                   negative_pool=negative_pool)
            threads.end_epoch()
            Y, Y_next = Y_next, Y
    return Y


def measure(problem: tuple, rounds: int) -> dict:
    from unimap.optimizers.gdr.unnormalized import unnormalized_full_batch

    args, kwargs = problem
    drivers = {"per-epoch": per_epoch, "chunked": unnormalized_full_batch}
    times: dict = {name: [] for name in drivers}
    for _ in range(rounds):
        results = {}
        for name, driver in drivers.items():
            tic = time.perf_counter()
            results[name] = driver(*args, **kwargs)
            times[name].append(time.perf_counter() - tic)
        if not np.array_equal(results["per-epoch"], results["chunked"]):
            raise AssertionError("the chunked epochs changed the embedding")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=70_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, help="append the report to this Markdown file")
    args = parser.parse_args()
    problem = capture_problem(args.n)
    measure(problem, 1)  # compile both drivers' kernels outside the timings
    lines = [f"## GDR's 2-D epochs, MNIST-{args.n // 1000}k, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             f"- command: `python benchmarks/busy_epochs.py --n {args.n} --rounds "
             f"{args.rounds}`", f"- {problem[0][4]} epochs, {os.cpu_count()} cores"]
    table = ["", "| state | driver | median s | min s | rounds |", "|---|---|---:|---:|---|"]
    medians = {}
    for state in ("quiet", "busy"):
        with competitor(state == "busy"):
            lines.append(f"- {state}, at start: {machine_state()}")
            times = measure(problem, args.rounds)
        for name, values in times.items():
            medians[state, name] = float(np.median(values))
            table.append(f"| {state} | {name} | {np.median(values):.2f} | {min(values):.2f} | "
                         + ", ".join(f"{v:.2f}" for v in values) + " |")
    lines += table + [""] + [
        f"{state}: chunked / per-epoch = "
        f"{medians[state, 'chunked'] / medians[state, 'per-epoch']:.2f}"
        for state in ("quiet", "busy")]
    emit("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
