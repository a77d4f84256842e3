"""The eigenpairs behind the spectral starts: the normalised adjacency of a graph, its largest
eigenpairs by ARPACK on one BLAS thread, and their orientation into layouts that do not depend
on the solver. Shared by :mod:`unimap.initialization.spectral` and
:mod:`unimap.initialization.near_components`.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp

from unimap.runtime.blas import one_blas_thread

__all__ = ["DENSE_EIGH_MAX", "normalized_adjacency", "arpack_largest", "oriented_layouts",
           "unit_box"]


DENSE_EIGH_MAX = 64  # dense eigh below this: ARPACK needs a Krylov space smaller than n
# (Above it ARPACK wins, and multi-threaded LAPACK suffers badly from a busy machine;
# measured: benchmarks/results/library_notes.md, "unimap/initialization/eigenpairs.py".)


def normalized_adjacency(graph: sp.spmatrix) -> tuple[sp.spmatrix, np.ndarray]:
    """The normalised adjacency ``D^{-1/2} W D^{-1/2}`` (float64) and the degrees of ``W``.

    Each entry involves its own row's and column's degrees only, so a component's block of
    it is what the component's graph alone gives (what ``_dense_layouts`` relies on)."""
    degrees = np.asarray(graph.sum(axis=1)).ravel()
    D = sp.diags(1.0 / np.sqrt(np.maximum(degrees, 1e-300)))
    return (D @ graph @ D).astype(np.float64), degrees


def oriented_layouts(evals: np.ndarray, evecs: np.ndarray,
                     n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """For a stack of eigendecompositions (evals (m, r), evecs (m, n, r)): the eigenvectors
    of the 2nd to (d+1)th largest eigenvalues, each with the sign of its largest |coordinate|
    (the first such) made positive, so that the result does not depend on the solver;
    float32 (m, n, d), and whether each is finite."""
    order = np.argsort(evals, axis=1)[:, ::-1][:, 1:n_components + 1]
    vectors = np.take_along_axis(evecs, order[:, None, :], axis=2)
    pivot = np.argmax(np.abs(vectors), axis=1)[:, None, :]
    signs = np.sign(np.take_along_axis(vectors, pivot, axis=1))
    signs[signs == 0] = 1.0
    return (vectors * signs).astype(np.float32), np.isfinite(vectors).all(axis=(1, 2))


def unit_box(layouts: np.ndarray) -> np.ndarray:
    """Each (n, d) layout of a stack (m, n, d) scaled to max|coordinate| = 1."""
    peak = np.abs(layouts).max(axis=(1, 2))
    return layouts / np.maximum(peak, np.float32(1e-12))[:, None, None]


def arpack_largest(adjacency, k, degrees, seed, limit_blas=True):
    """Largest ``k`` eigenpairs by ARPACK; a small Krylov space first, a large one on failure.

    16 Lanczos vectors converge faster than umap-learn's sqrt(n) to the same eigenvectors. The
    matrix and vectors are float32: single-precision ARPACK halves the memory traffic of the
    matvecs, for the same eigenvectors (tol=1e-4 is far above float32's rounding; measured:
    benchmarks/results/library_notes.md, "unimap/initialization/eigenpairs.py").
    """
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    n = adjacency.shape[0]
    rng = np.random.default_rng(seed)
    adjacency = adjacency.astype(np.float32)
    v0 = (np.sqrt(degrees) + 1e-3 * rng.standard_normal(n)).astype(np.float32)
    small = min(n - 1, max(2 * k + 1, 16))
    large = min(n - 1, max(2 * k + 1, int(np.sqrt(n))))
    # ARPACK's vector operations on one BLAS thread: the eigenvectors then do not depend on
    # how many cores BLAS found, and a core held by another program does not stall BLAS's
    # static split; the sparse matvec, most of the work, is single-threaded anyway (measured:
    # benchmarks/results/library_notes.md, "unimap/initialization/eigenpairs.py").
    with one_blas_thread() if limit_blas else nullcontext():
        try:
            return eigsh(adjacency, k, which="LA", ncv=small, tol=1e-4, v0=v0, maxiter=n * 5)
        except ArpackNoConvergence:
            if large <= small:
                raise
            return eigsh(adjacency, k, which="LA", ncv=large, tol=1e-4, v0=v0,
                         maxiter=n * 5)
