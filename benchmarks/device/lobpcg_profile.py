"""Where the GPU's spectral start spends its time: LOBPCG over
:class:`unimap.initialization.spectral_cuda.CudaBlockOps` on MNIST-70k's GDR graph, each block
operation timed on the host until it returns and then until the device has finished it,
against ARPACK on the CPU (the CPU path's solver) on the same graph; once with the host's
small eigenproblems on one BLAS thread (as the fits run it) and once on BLAS's own threads.

Why: on an H100 (``benchmarks/results/gpu.md``, 2026-11-27) the spectral start took 24-26 s on
the GPU inside a warm process, where ARPACK takes about 0.5 s and the same LOBPCG in NumPy on
2 CPU cores 2.8 s (64 iterations); its kernels are linear in n and compile to plain PTX, so
the time is in the host's side of the ~30 operations per iteration. This script says which.

Usage (the device run's ``lobpcg`` step; ``--n`` cuts MNIST for the simulator's rehearsal)::

    python benchmarks/device/lobpcg_profile.py [--n 70000] [--json out.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

OPS = ("empty", "from_host", "to_host", "matmul", "gram", "combine", "residual",
       "subtract_outer", "scale_columns")


class TimedOps:
    """A :class:`BlockOps` that forwards to ``ops`` and records, per operation, the calls, the
    seconds until the call returns and the seconds until the device is idle after it."""

    def __init__(self, ops, synchronize) -> None:
        self._ops, self._synchronize = ops, synchronize
        self.calls: dict[str, int] = defaultdict(int)
        self.host_s: dict[str, float] = defaultdict(float)
        self.drain_s: dict[str, float] = defaultdict(float)
        for name in OPS:
            setattr(self, name, self._timed(name))

    def _timed(self, name: str):
        method = getattr(self._ops, name)

        def call(*args):
            tic = time.perf_counter()
            result = method(*args)
            returned = time.perf_counter()
            self._synchronize()
            self.calls[name] += 1
            self.host_s[name] += returned - tic
            self.drain_s[name] += time.perf_counter() - returned
            return result

        return call


def _graph(n: int | None) -> sp.csr_matrix:
    import unimap
    from unimap.datasets import load_mnist

    X, _ = load_mnist(download=False)
    X = X[:n] if n else X
    model = unimap.GDR(random_state=0, init="random", n_epochs=1, device="auto").fit(X)
    return sp.csr_matrix(model.graph_)


def _timed_lobpcg(graph: sp.csr_matrix, d: int) -> dict:
    """One LOBPCG as ``spectral_layout_cuda`` runs it, each operation timed (:class:`TimedOps`)."""
    from numba import cuda

    from unimap.initialization.lobpcg import lobpcg_largest
    from unimap.initialization.spectral_cuda import GUARD_VECTORS, CudaBlockOps

    n = graph.shape[0]
    tic = time.perf_counter()
    ops = CudaBlockOps(graph, 3 * (d + GUARD_VECTORS))
    cuda.synchronize()
    setup = time.perf_counter() - tic
    timed = TimedOps(ops, cuda.synchronize)
    trivial = ops.sqrt_degrees
    norm = math.sqrt(ops.gram(trivial, trivial)[0, 0])
    ops.scale_columns(trivial, np.array([1.0 / max(norm, 1e-300)]))
    X0 = np.random.default_rng(0).standard_normal((n, d + GUARD_VECTORS)).astype(np.float32)
    tic = time.perf_counter()
    result = lobpcg_largest(timed, X0, trivial, d, 1e-4, 500)
    total = time.perf_counter() - tic
    in_ops = sum(timed.host_s.values()) + sum(timed.drain_s.values())
    return {"setup_s": round(setup, 3), "iterations": result.n_iter,
            "total_s": round(total, 3),
            "ritz_steps_on_host_s": round(total - in_ops, 3),  # everything outside the ops
            "per_op": {name: {"calls": timed.calls[name],
                              "host_ms": round(1e3 * timed.host_s[name], 1),
                              "drain_ms": round(1e3 * timed.drain_s[name], 1)}
                       for name in OPS if timed.calls[name]}}


def _micro(n: int, repeats: int) -> dict:
    """Milliseconds per call of what an iteration does many times: a launch on a contiguous
    block and on a column slice of a wider one (numba-cuda types the slice 'A'), a small
    allocation, a small copy to the host (a sync), a small copy to the device."""
    from numba import cuda

    from unimap.initialization.spectral_cuda import _scale_columns
    from unimap.runtime.common_cuda import strided_launch

    wide = cuda.device_array((n, 18), dtype=np.float32)
    block = cuda.device_array((n, 6), dtype=np.float32)
    factors = cuda.to_device(np.ones(6))
    small = np.ones(6)
    launch = strided_launch(n)

    def per_call(action) -> float:
        action()
        cuda.synchronize()
        tic = time.perf_counter()
        for _ in range(repeats):
            action()
        cuda.synchronize()
        return round(1e3 * (time.perf_counter() - tic) / repeats, 4)

    return {"launch_contiguous_ms": per_call(lambda: _scale_columns[launch](block, factors)),
            "launch_column_slice_ms": per_call(
                lambda: _scale_columns[launch](wide[:, 6:12], factors)),
            "allocate_ms": per_call(lambda: cuda.device_array(64, dtype=np.float64)),
            "copy_to_host_ms": per_call(lambda: factors.copy_to_host()),
            "to_device_ms": per_call(lambda: cuda.to_device(small)),
            "copy_into_buffer_ms": per_call(lambda: factors.copy_to_device(small))}


def main(argv: list[str] | None = None) -> int:
    from unimap.initialization.eigenpairs import arpack_largest, normalized_adjacency
    from unimap.initialization.spectral_cuda import spectral_layout_cuda
    from unimap.runtime.blas import one_blas_thread

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    graph = _graph(args.n)
    n, d = graph.shape[0], 2
    row = {"n": n, "nnz": int(graph.nnz)}

    adjacency, degrees = normalized_adjacency(graph)
    tic = time.perf_counter()
    arpack_largest(adjacency, d + 1, degrees, 0, True)
    row["arpack_cpu_s"] = round(time.perf_counter() - tic, 3)

    tic = time.perf_counter()  # the first call also loads or compiles the kernels
    found = spectral_layout_cuda(graph, d, 0)
    row["lobpcg_gpu_first_s"] = round(time.perf_counter() - tic, 3)
    row["lobpcg_converged"] = found is not None
    tic = time.perf_counter()
    spectral_layout_cuda(graph, d, 0)
    row["lobpcg_gpu_warm_s"] = round(time.perf_counter() - tic, 3)
    print(json.dumps(row), flush=True)

    row["micro"] = _micro(n, 20 if args.n and args.n < 1000 else 1000)
    print(json.dumps(row), flush=True)
    for blas in ("one BLAS thread", "BLAS's own threads"):  # the fits use the first
        with one_blas_thread() if blas == "one BLAS thread" else nullcontext():
            row[blas] = _timed_lobpcg(graph, d)
    from unimap.initialization import spectral_cuda

    row["overloads"] = {name: len(getattr(getattr(spectral_cuda, name), "overloads", {}))
                        for name in ("_spmm", "_gram_chunks", "_sum_chunks", "_combine",
                                     "_residual", "_subtract_outer", "_scale_columns",
                                     "_copy_block")}
    print(json.dumps(row), flush=True)
    if args.json:
        with args.json.open("a") as out:
            out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
