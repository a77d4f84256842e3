"""The chunked 2-D GDR epochs (unimap.optimizers.gdr.chunked_epochs_numba) against the per-epoch
kernel."""

import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from unimap.optimizers.gdr.chunked_epochs_numba import epoch_buffers, unnormalized_epochs_2d
from unimap.optimizers.gdr.common_numba import CSR, HeavyBall, TransposedCSR, UnnormalizedForces
from unimap.optimizers.gdr.unnormalized_numba import gdr_unnormalized_epoch
from unimap.runtime.threads import numba_threads

f32 = np.float32
ARGS = (f32(2.0), 5.0, f32(0.02), f32(1.577), f32(0.895), f32(1e-3), f32(4.0))


def make_problem():
    """A random symmetric kNN-like graph of 3,000 points (12 row blocks) and a start."""
    rng = np.random.default_rng(0)
    n, k = 3000, 10
    rows = np.repeat(np.arange(n), k)
    cols = rng.integers(0, n, n * k)
    P = sp.csr_matrix((rng.random(n * k).astype(np.float32), (rows, cols)), shape=(n, n))
    P = (P + P.T).tocsr()
    P.setdiag(0)
    P.eliminate_zeros()
    edges = (P.indptr.astype(np.int64), P.indices.astype(np.int32), P.data.astype(np.float32))
    init = (rng.standard_normal((n, 2)) * 5).astype(np.float32)
    return edges, init


@pytest.fixture(scope="module")
def problem():
    return make_problem()


def _per_epoch(edges, init, rates, pool):
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    Y, V = init.copy(), np.zeros_like(init)
    Y_next, F = np.empty_like(Y), np.empty_like(Y)
    for epoch, rate in enumerate(rates):
        gdr_unnormalized_epoch(Y, Y_next, F, V, CSR(*edges), TransposedCSR(*empty),
                               UnnormalizedForces(*ARGS[:6]), HeavyBall(ARGS[6], f32(0.5)), rate,
                               np.uint64(3), np.int64(epoch), False, negative_pool=pool)
        Y, Y_next = Y_next, Y
    return Y


def _chunked(edges, init, rates, pool, workers, chunk):
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    n = init.shape[0]
    weight = ARGS[2] if pool == 0 else f32(ARGS[2] * f32(n / (n - 1)))
    Y, V, F = epoch_buffers(init)
    for start in range(0, len(rates), chunk):
        unnormalized_epochs_2d(Y, F, V, CSR(*edges), TransposedCSR(*empty),
                               UnnormalizedForces(ARGS[0], ARGS[1], weight, *ARGS[3:6]),
                               HeavyBall(ARGS[6], f32(0.5)), rates[start:start + chunk],
                               np.uint64(3), np.int64(start), np.int64(workers), np.int64(pool))
    return Y[len(rates) % 3]


@pytest.mark.parametrize("pool", [0, 32])
@pytest.mark.parametrize(("workers", "chunk"), [(1, 7), (2, 10), (5, 3), (2, 40)])
def test_bitwise_the_per_epoch_kernel(problem, pool, workers, chunk):
    edges, init = problem
    rates = np.linspace(1.0, 0.0, 23, endpoint=False).astype(np.float32)
    expected = _per_epoch(edges, init, rates, pool)
    with numba_threads(min(workers, numba.config.NUMBA_NUM_THREADS)):
        got = _chunked(edges, init, rates, pool, workers, chunk)
    assert np.isfinite(got).all() and not np.array_equal(got, init)
    assert np.array_equal(got, expected)


def test_bitwise_with_more_threads_than_cores():
    """Workers that the OS deschedules (more than the CPUs) still give the same epochs: run
    in a subprocess with 8 numba threads on however many cores there are."""
    code = "\n".join([
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})",
        "import numpy as np, test_gdr_epochs as t",
        "edges, init = t.make_problem()",
        "rates = np.linspace(1.0, 0.0, 40, endpoint=False).astype(np.float32)",
        "a = t._per_epoch(edges, init, rates, 0)",
        "same = [np.array_equal(a, t._chunked(edges, init, rates, 0, 8, 10)) for _ in range(5)]",
        "print('same' if all(same) else 'different')",
    ])
    env = dict(os.environ, NUMBA_NUM_THREADS="8")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.stdout.strip().endswith("same"), out.stdout[-500:] + out.stderr[-2000:]


def test_a_swapped_argument_group_does_not_compile(problem):
    # The kernels read their argument groups by name: P and Pᵀ, or the forces' parameters
    # and the step's, passed in each other's place fail to compile instead of running.
    from numba.core.errors import TypingError

    edges, init = problem
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    Y, V = init.copy(), np.zeros_like(init)
    Y_next, F = np.empty_like(Y), np.empty_like(Y)
    forces, step = UnnormalizedForces(*ARGS[:6]), HeavyBall(ARGS[6], f32(0.5))
    swaps = [(TransposedCSR(*empty), CSR(*edges), forces, step),
             (CSR(*edges), TransposedCSR(*empty), step, forces)]
    for args in swaps:
        with pytest.raises(TypingError):
            gdr_unnormalized_epoch(Y, Y_next, F, V, *args, f32(0.1), np.uint64(3), np.int64(0),
                                   False)


def test_the_normalized_forces_refuse_a_swapped_group(problem):
    # GDR's normalized forces read their groups by name too.
    from numba.core.errors import TypingError

    from unimap.optimizers.gdr.common_numba import SampledKernel
    from unimap.optimizers.gdr.normalized_numba import gdr_normalized_forces

    edges, init = problem
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    A, R, z = np.empty_like(init), np.empty_like(init), np.empty(init.shape[0])
    marks = np.zeros((2, init.shape[0]), np.uint8)
    kernel = SampledKernel(f32(1.0), 1.0, f32(1.0), f32(1.0))
    with pytest.raises(TypingError):
        gdr_normalized_forces(init, A, R, z, marks, TransposedCSR(*empty), CSR(*edges), kernel,
                              np.uint64(0), np.int64(0), False, True)
    gdr_normalized_forces(init, A, R, z, marks, CSR(*edges), TransposedCSR(*empty), kernel,
                          np.uint64(0), np.int64(0), False, True)
    assert np.isfinite(A).all() and np.isfinite(R).all() and (z > 0).all()
