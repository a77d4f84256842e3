"""The spectral start on a GPU: the normalised adjacency built on the device and its leading
eigenvectors by :func:`unimap.initialization.lobpcg.lobpcg_largest` over these kernels.

One thread per row in every kernel (the threads stride over the rows: one block in the
simulator) except the Gram products, which sum fixed chunks of rows per thread and then the
chunks in order: no atomics anywhere, so the layout is the same bits
run after run on one GPU. Products accumulate in float64 and blocks are stored in float32.
Only the Ritz step's small matrices (at most 3m × 3m, m = n_components + 4) cross to the host.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import cuda

from unimap.runtime.blas import one_blas_thread
from unimap.runtime.common_cuda import check_device_memory, strided_launch

__all__ = ["CudaBlockOps", "spectral_layout_cuda", "device_bytes", "GUARD_VECTORS"]

# 4: far fewer iterations than 2, hardly more than 8, and each iteration's work grows with them
# (measured: benchmarks/results/spectral_lobpcg.md)
GUARD_VECTORS = 4
GRAM_CHUNK = 1024  # rows one thread of a Gram product sums


@cuda.jit(cache=True)
def _normalize(indptr, indices, data, degrees, out):
    """``out = D^{-1/2} W D^{-1/2}`` entry by entry (``degrees``: W's row sums)."""
    for i in range(cuda.grid(1), indptr.shape[0] - 1, cuda.gridsize(1)):
        left = 1.0 / math.sqrt(max(degrees[i], 1e-300))
        for p in range(indptr[i], indptr[i + 1]):
            out[p] = data[p] * left / math.sqrt(max(degrees[indices[p]], 1e-300))


@cuda.jit(cache=True)
def _row_sums(indptr, data, degrees, sqrt_degrees):
    for i in range(cuda.grid(1), indptr.shape[0] - 1, cuda.gridsize(1)):
        total = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            total += data[p]
        degrees[i] = total
        sqrt_degrees[i, 0] = math.sqrt(total)


@cuda.jit(cache=True)
def _spmm(indptr, indices, data, V, out):
    for i in range(cuda.grid(1), indptr.shape[0] - 1, cuda.gridsize(1)):
        for c in range(V.shape[1]):
            total = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                total += data[p] * V[indices[p], c]
            out[i, c] = total


@cuda.jit(cache=True)
def _gram_chunks(U, V, chunk, partial):
    """``partial[q, a, b]`` = Σ over rows of chunk q of U[i, a] V[i, b]."""
    pairs = U.shape[1] * V.shape[1]
    for t in range(cuda.grid(1), partial.shape[0] * pairs, cuda.gridsize(1)):
        q = t // pairs
        a = (t % pairs) // V.shape[1]
        b = t % V.shape[1]
        total = 0.0
        for i in range(q * chunk, min(U.shape[0], (q + 1) * chunk)):
            total += U[i, a] * V[i, b]
        partial[q, a, b] = total


@cuda.jit(cache=True)
def _sum_chunks(partial, out):
    for t in range(cuda.grid(1), out.shape[0] * out.shape[1], cuda.gridsize(1)):
        a, b = t // out.shape[1], t % out.shape[1]
        total = 0.0
        for q in range(partial.shape[0]):
            total += partial[q, a, b]
        out[a, b] = total


@cuda.jit(cache=True)
def _combine(S, C, out):
    for i in range(cuda.grid(1), S.shape[0], cuda.gridsize(1)):
        for c in range(C.shape[1]):
            total = 0.0
            for j in range(S.shape[1]):
                total += S[i, j] * C[j, c]
            out[i, c] = total


@cuda.jit(cache=True)
def _residual(AX, X, values, out):
    for i in range(cuda.grid(1), X.shape[0], cuda.gridsize(1)):
        for c in range(X.shape[1]):
            out[i, c] = AX[i, c] - X[i, c] * values[c]


@cuda.jit(cache=True)
def _subtract_outer(V, y, c):
    for i in range(cuda.grid(1), V.shape[0], cuda.gridsize(1)):
        for j in range(V.shape[1]):
            V[i, j] = V[i, j] - y[i, 0] * c[j]


@cuda.jit(cache=True)
def _scale_columns(V, factors):
    for i in range(cuda.grid(1), V.shape[0], cuda.gridsize(1)):
        for j in range(V.shape[1]):
            V[i, j] = V[i, j] * factors[j]


@cuda.jit(cache=True)
def _copy_block(source, out):
    for i in range(cuda.grid(1), source.shape[0], cuda.gridsize(1)):
        for j in range(source.shape[1]):
            out[i, j] = source[i, j]


class CudaBlockOps:
    """:class:`unimap.initialization.lobpcg.BlockOps` on the GPU for the normalised adjacency
    of a symmetric CSR graph (copied to the device once; see the module docstring).

    Every buffer an operation needs is allocated here, once: a Gram product's partial sums and
    result, and the small host matrices and vectors (Ritz coefficients, eigenvalues, column
    factors), which are copied into device buffers instead of new device arrays. ``width``
    is the widest block the iteration uses (3m). An allocation per operation, ~20 per
    iteration, was the suspect for the slow spectral start first measured on the GPU
    (measured: ``benchmarks/results/gpu.md``).
    """

    def __init__(self, graph: sp.csr_matrix, width: int) -> None:
        n = graph.shape[0]
        self.n = n
        self.launch = strided_launch(n)
        self.indptr = cuda.to_device(graph.indptr.astype(np.int64))
        self.indices = cuda.to_device(graph.indices.astype(np.int32))
        weights = cuda.to_device(graph.data.astype(np.float32))
        degrees = cuda.device_array(n, dtype=np.float64)
        self.sqrt_degrees = cuda.device_array((n, 1), dtype=np.float32)
        _row_sums[self.launch](self.indptr, weights, degrees, self.sqrt_degrees)
        self.data = cuda.device_array(int(graph.nnz), dtype=np.float32)
        _normalize[self.launch](self.indptr, self.indices, weights, degrees, self.data)
        self.chunks = (n + GRAM_CHUNK - 1) // GRAM_CHUNK
        self._partial = cuda.device_array(self.chunks * width * width, dtype=np.float64)
        self._gram = cuda.device_array(width * width, dtype=np.float64)
        self._coefficients = cuda.device_array(width * width, dtype=np.float64)
        self._vector = cuda.device_array(width, dtype=np.float64)

    def _small(self, buffer, host: np.ndarray):
        """``host`` (float64) copied into the front of a preallocated device buffer, as a
        contiguous view of its shape. The copy waits for the kernels queued before it (one
        stream), so a buffer is reused only after the kernel that read it has run."""
        host = np.ascontiguousarray(host, dtype=np.float64)
        view = buffer[:host.size].reshape(host.shape)
        view.copy_to_device(host)
        return view

    def empty(self, n: int, width: int):
        return cuda.device_array((n, width), dtype=np.float32)  # no host zeros to copy

    def from_host(self, block: np.ndarray, out) -> None:
        _copy_block[self.launch](cuda.to_device(np.ascontiguousarray(block)), out)

    def to_host(self, block) -> np.ndarray:
        contiguous = cuda.device_array(block.shape, dtype=np.float32)
        _copy_block[self.launch](block, contiguous)
        return contiguous.copy_to_host()

    def matmul(self, V, out) -> None:
        _spmm[self.launch](self.indptr, self.indices, self.data, V, out)

    def gram(self, U, V) -> np.ndarray:
        a, b = U.shape[1], V.shape[1]
        partial = self._partial[:self.chunks * a * b].reshape(self.chunks, a, b)
        _gram_chunks[strided_launch(self.chunks * a * b)](U, V, GRAM_CHUNK, partial)
        out = self._gram[:a * b].reshape(a, b)
        _sum_chunks[strided_launch(a * b)](partial, out)
        return out.copy_to_host()

    def combine(self, S, C: np.ndarray, out) -> None:
        _combine[self.launch](S, self._small(self._coefficients, C), out)

    def residual(self, AX, X, values: np.ndarray, out) -> None:
        _residual[self.launch](AX, X, self._small(self._vector, values), out)

    def subtract_outer(self, V, y, c: np.ndarray) -> None:
        _subtract_outer[self.launch](V, y, self._small(self._vector, c))

    def scale_columns(self, V, factors: np.ndarray) -> None:
        _scale_columns[self.launch](V, self._small(self._vector, factors))


def device_bytes(n: int, nnz: int, n_components: int) -> int:
    """Device memory of :func:`spectral_layout_cuda`: the graph twice (weights, normalised),
    four (n, 3m) float32 blocks, the degrees, the Gram chunks and the small buffers."""
    m = n_components + GUARD_VECTORS
    chunks = (n + GRAM_CHUNK - 1) // GRAM_CHUNK
    small = 8 * (2 * 9 * m * m + 3 * m)
    return 8 * (n + 1) + nnz * 12 + 4 * 4 * n * 3 * m + 12 * n + 8 * chunks * 9 * m * m + small


def spectral_layout_cuda(graph: sp.csr_matrix, n_components: int, seed: int,
                         tol: float = 1e-4, max_iter: int = 500):
    """Eigenvalues and eigenvectors for :func:`unimap.initialization.eigenpairs.oriented_layouts`
    of a connected graph: ``(values (d + 1,), vectors (n, d + 1))`` with the trivial pair
    (1, D^{1/2}1) first, or None when LOBPCG did not reach ``tol`` in ``max_iter`` iterations
    (the caller then asks ARPACK on the CPU)."""
    from unimap.initialization.lobpcg import lobpcg_largest

    n = graph.shape[0]
    m = min(n_components + GUARD_VECTORS, n - 2)
    check_device_memory(device_bytes(n, graph.nnz, n_components),
                        "the spectral initialization on the GPU")
    ops = CudaBlockOps(graph, 3 * m)
    trivial = ops.sqrt_degrees
    norm = math.sqrt(ops.gram(trivial, trivial)[0, 0])
    ops.scale_columns(trivial, np.array([1.0 / max(norm, 1e-300)]))
    X0 = np.random.default_rng(seed).standard_normal((n, m)).astype(np.float32)
    # The Ritz steps' small eigenproblems and products on one BLAS thread, as ARPACK's on the
    # CPU: their bits then do not depend on the host's cores, and BLAS's threads do not wake
    # (against numba's) for tiny matrices every iteration (measured:
    # benchmarks/results/library_notes.md, "unimap/initialization/spectral_cuda.py").
    with one_blas_thread():
        result = lobpcg_largest(ops, X0, trivial, n_components, tol, max_iter)
    if not result.converged:
        return None
    values = np.concatenate([[1.0], result.values[:n_components]])
    vectors = np.hstack([ops.to_host(trivial), result.vectors[:, :n_components]])
    return values, vectors
