"""The leading eigenvectors of a symmetric matrix by LOBPCG (Knyazev, 2001), for the spectral
start on the GPU, written over a few block operations (:class:`BlockOps`) so that the GPU's
kernels (:mod:`unimap.initialization.spectral_cuda`) and NumPy (:class:`NumpyBlockOps`, the
stand-in the tests run on the CPU) drive the same iteration.

Why LOBPCG there, when the CPU uses ARPACK: each iteration is one sparse product with a block
of vectors, a few tall-skinny products and one eigenproblem of at most 3·m × 3·m on the host,
so the n-sized work stays on the device and only m² numbers a step cross to the host. With
four guard vectors this driver reaches a residual of 1e-4 and its eigenvectors span ARPACK's
(measured: ``benchmarks/results/spectral_lobpcg.md``).

Every reduction is taken in a fixed order (the ops' contract), so the same start gives the
same bits run after run; the Rayleigh–Ritz step whitens the basis through the eigenvalues of
its Gram matrix instead of a Cholesky factor, which fails once the residuals and the previous
directions become nearly dependent near convergence.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import numpy as np

__all__ = ["BlockOps", "NumpyBlockOps", "EigenResult", "lobpcg_largest"]

# Directions of the basis whose Gram eigenvalue is below this fraction of the largest are
# dropped: float32 vectors leave dependent directions at ~1e-14, real ones stay above 1e-8.
_WHITEN_CUTOFF = 1e-9


class BlockOps(Protocol):
    """The operations of one iteration on (n, w) blocks held where the matrix lives."""

    def empty(self, n: int, width: int) -> Any:
        """An (n, width) float32 block, uninitialised: the iteration writes every column
        before it reads it."""

    def from_host(self, block: np.ndarray, out: Any) -> None: ...

    def to_host(self, block: Any) -> np.ndarray: ...

    def matmul(self, V: Any, out: Any) -> None:
        """``out = A V``."""

    def gram(self, U: Any, V: Any) -> np.ndarray:
        """``Uᵀ V`` on the host, float64, summed in an order fixed by the shapes."""

    def combine(self, S: Any, C: np.ndarray, out: Any) -> None:
        """``out = S C`` (C a host float64 matrix)."""

    def residual(self, AX: Any, X: Any, values: np.ndarray, out: Any) -> None:
        """``out = AX − X diag(values)``."""

    def subtract_outer(self, V: Any, y: Any, c: np.ndarray) -> None:
        """``V −= y cᵀ`` (y a single column)."""

    def scale_columns(self, V: Any, factors: np.ndarray) -> None:
        """``V *= factors`` column by column."""


class NumpyBlockOps:
    """:class:`BlockOps` with NumPy and a scipy sparse matrix (float32 blocks, float64
    products, as the GPU's kernels take them)."""

    def __init__(self, matrix) -> None:
        self.matrix = matrix

    def empty(self, n: int, width: int) -> np.ndarray:
        return np.full((n, width), np.nan, dtype=np.float32)  # a read before a write shows

    def from_host(self, block: np.ndarray, out: np.ndarray) -> None:
        out[...] = block

    def to_host(self, block: np.ndarray) -> np.ndarray:
        return np.array(block)

    def matmul(self, V: np.ndarray, out: np.ndarray) -> None:
        out[...] = self.matrix @ V.astype(np.float64)

    def gram(self, U: np.ndarray, V: np.ndarray) -> np.ndarray:
        return U.astype(np.float64).T @ V.astype(np.float64)

    def combine(self, S: np.ndarray, C: np.ndarray, out: np.ndarray) -> None:
        out[...] = S.astype(np.float64) @ C

    def residual(self, AX: np.ndarray, X: np.ndarray, values: np.ndarray,
                 out: np.ndarray) -> None:
        out[...] = AX.astype(np.float64) - X.astype(np.float64) * values

    def subtract_outer(self, V: np.ndarray, y: np.ndarray, c: np.ndarray) -> None:
        V[...] = V.astype(np.float64) - y.astype(np.float64) * c[None, :]

    def scale_columns(self, V: np.ndarray, factors: np.ndarray) -> None:
        V[...] = V.astype(np.float64) * factors[None, :]


class EigenResult(NamedTuple):
    values: np.ndarray  # (m,) descending
    vectors: np.ndarray  # (n, m) float32, on the host
    n_iter: int
    converged: bool


def _rayleigh_ritz(G: np.ndarray, H: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The m largest Ritz pairs of (H, G): values descending, coefficients (w, m)."""
    g_values, g_vectors = np.linalg.eigh((G + G.T) / 2)
    keep = g_values > _WHITEN_CUTOFF * g_values[-1]
    whiten = g_vectors[:, keep] / np.sqrt(g_values[keep])
    reduced = whiten.T @ ((H + H.T) / 2) @ whiten
    values, vectors = np.linalg.eigh((reduced + reduced.T) / 2)
    top = np.argsort(values)[::-1][:m]
    return values[top], whiten @ vectors[:, top]


def _unit_columns(ops: BlockOps, V: Any) -> np.ndarray:
    """Scale V's columns to norm 1 (zero columns stay zero); returns their former norms."""
    norms = np.sqrt(np.maximum(np.diag(ops.gram(V, V)), 0.0))
    ops.scale_columns(V, np.where(norms > 0, 1.0 / np.maximum(norms, 1e-300), 0.0))
    return norms


def lobpcg_largest(ops: BlockOps, X0: np.ndarray, constraint: Any, n_wanted: int,
                   tol: float, max_iter: int) -> EigenResult:
    """The ``m = X0.shape[1]`` largest eigenpairs of the ops' matrix, orthogonal to the unit
    column ``constraint`` (an eigenvector, already on the ops' side), by LOBPCG.

    Stops when the residual norms ``‖A x − λ x‖`` of the first ``n_wanted`` unit Ritz vectors
    are all below ``tol`` (the others are guard vectors that speed convergence), or after
    ``max_iter`` iterations (``converged`` False).
    """
    n, m = X0.shape
    S, AS, S_next, AS_next = (ops.empty(n, 3 * m) for _ in range(4))
    X = S[:, :m]
    ops.from_host(np.ascontiguousarray(X0, dtype=np.float32), X)
    ops.subtract_outer(X, constraint, ops.gram(constraint, X)[0])
    _unit_columns(ops, X)
    ops.matmul(X, AS[:, :m])
    values, C = _rayleigh_ritz(ops.gram(X, X), ops.gram(X, AS[:, :m]), m)
    ops.combine(X, C, S_next[:, :m])
    ops.combine(AS[:, :m], C, AS_next[:, :m])
    S, S_next, AS, AS_next = S_next, S, AS_next, AS
    width, iteration, converged = 2 * m, 0, False
    for iteration in range(1, max_iter + 1):  # noqa: B007 - reported after the loop
        X, AX, W = S[:, :m], AS[:, :m], S[:, m:2 * m]
        ops.residual(AX, X, values, W)
        ops.subtract_outer(W, constraint, ops.gram(constraint, W)[0])
        norms = _unit_columns(ops, W)
        if norms[:n_wanted].max() < tol:
            converged = True
            break
        ops.matmul(W, AS[:, m:2 * m])
        basis, products = S[:, :width], AS[:, :width]
        values, C = _rayleigh_ritz(ops.gram(basis, basis), ops.gram(basis, products), m)
        directions = C.copy()
        directions[:m] = 0.0  # P: the step's part outside the current X
        ops.combine(basis, C, S_next[:, :m])
        ops.combine(products, C, AS_next[:, :m])
        ops.combine(basis, directions, S_next[:, 2 * m:])
        ops.combine(products, directions, AS_next[:, 2 * m:])
        scales = _unit_columns(ops, S_next[:, 2 * m:])
        ops.scale_columns(AS_next[:, 2 * m:], np.where(scales > 0, 1.0 / np.maximum(
            scales, 1e-300), 0.0))
        S, S_next, AS, AS_next = S_next, S, AS_next, AS
        width = 3 * m
    return EigenResult(values, ops.to_host(S[:, :m]), iteration, converged)
