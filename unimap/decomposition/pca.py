"""The mathematics of principal component analysis (reference 000): centre, decompose, sort.

A low module: the :class:`unimap.PCA` estimator, the PCA initialization and the kNN search's
reduction all call :func:`fit_pca` and :func:`project`, so none of them imports an estimator.
Three solvers give the same components up to rounding (the sign is fixed so that the
largest-magnitude loading of each component is positive):

- ``"covariance"``: eigendecomposition of the ``D × D`` covariance matrix (reference 000);
  fastest when ``n_samples ≫ n_features`` and ``n_features`` is moderate.
- ``"full"``: thin SVD of the centred data (LAPACK).
- ``"randomized"``: Halko et al.'s range finder with power iterations; never forms the
  centred copy of ``X``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from unimap.decomposition.blocked import map_row_blocks, sum_row_blocks
from unimap.runtime.blas import one_blas_thread

__all__ = [
    "SOLVERS", "PCAFit", "axes_from_scatter", "centred_scatter", "choose_solver", "fit_pca",
    "project", "randomized_range",
]

SOLVERS = ("auto", "covariance", "full", "randomized")


@dataclass(frozen=True)
class PCAFit:
    """The fitted axes: ``components`` (k, d), ``mean`` (d,), per-component
    ``explained_variance`` (ddof=1), ``explained_variance_ratio`` and ``singular_values``,
    all in the input's float dtype; ``solver`` the one used."""

    components: np.ndarray
    mean: np.ndarray
    explained_variance: np.ndarray
    explained_variance_ratio: np.ndarray
    singular_values: np.ndarray
    solver: str


def choose_solver(n: int, d: int, k: int) -> str:
    """``"auto"``'s choice: covariance when ``d <= 1000`` and ``n >= 10 d`` (one GEMM,
    compute-bound, beats the randomized solver's 14 memory-bound passes, as scikit-learn's
    rule); randomized for few components of a large input; else covariance up to 1000
    features, full SVD beyond."""
    if d <= 1000 and n >= 10 * d:
        return "covariance"
    if k < 0.1 * min(n, d) and n * d > 500_000:
        return "randomized"
    return "covariance" if d <= 1000 else "full"


def fit_pca(X: np.ndarray, n_components: int, solver: str = "auto", n_iter: int = 6,
            seed: int = 0) -> PCAFit:
    """Principal axes of a validated dense float array ``X`` of shape (n, d).

    ``n_components`` must lie in ``[1, min(n, d)]``; ``seed`` drives the randomized solver.
    """
    n, d = X.shape
    k = n_components
    solver = choose_solver(n, d, k) if solver == "auto" else solver
    mean = X.mean(axis=0, dtype=np.float64)
    total_var = _total_variance(X, mean)
    # LAPACK and the products on one BLAS thread (the products in parallel blocks:
    # unimap.decomposition.blocked), so the axes do not depend on BLAS's thread count
    with one_blas_thread():
        if solver == "covariance":
            components, variances = _covariance(X, mean, k)
        elif solver == "full":
            components, variances = _full_svd(X, mean)
        else:
            components, variances = _randomized(X, mean, k, n_iter, seed)
    return _axes(components, variances, mean, total_var, n, k, X.dtype, solver)


def axes_from_scatter(scatter: np.ndarray, mean: np.ndarray, n: int, n_components: int,
                      dtype: np.dtype) -> PCAFit:
    """The covariance solver's axes from the centred scatter matrix ``Σ (x − mean)(x −
    mean)ᵀ`` (float64, d × d) of ``n`` rows, gathered elsewhere (``unimap.dask.transform``'s
    blocks)."""
    cov = scatter / max(n - 1, 1)
    components, variances = _leading_eigenpairs(cov, n_components)
    total_var = float(np.trace(cov)) if n > 1 else 0.0
    return _axes(components, variances, mean, total_var, n, n_components, np.dtype(dtype),
                 "covariance")


def _axes(components: np.ndarray, variances: np.ndarray, mean: np.ndarray, total_var: float,
          n: int, k: int, dtype: np.dtype, solver: str) -> PCAFit:
    components = _fix_signs(components[:k])
    variances = np.maximum(variances[:k], 0.0)
    ratio = variances / total_var if total_var > 0 else np.zeros_like(variances)
    return PCAFit(components.astype(dtype), mean.astype(dtype), variances.astype(dtype),
                  ratio.astype(dtype), np.sqrt(variances * max(n - 1, 1)).astype(dtype), solver)


def project(X: np.ndarray, fit: PCAFit, whiten: bool = False,
            row_exact: bool = False) -> np.ndarray:
    """Coordinates of the rows of ``X`` on the fitted axes, shape (m, k), in ``X``'s dtype.

    ``row_exact``: each row's coordinates are computed on their own (einsum's loop), so any
    block of rows gives the bits the whole array gives, as the estimators promise for Dask
    blocks; BLAS's product splits the rows over threads and tiles by the array's size, so its
    last bits depend on the block. The loop is as fast as BLAS for a few components but much
    slower for many, so the kNN's candidate projection keeps BLAS (measured:
    benchmarks/results/architecture_notes.md), over fixed blocks of rows
    (:func:`unimap.decomposition.blocked.map_row_blocks`): its bits then depend on the array,
    not on BLAS's threads."""
    offsets = np.einsum("j,kj->k", fit.mean, fit.components)
    if row_exact:
        out = np.einsum("ij,kj->ik", X, fit.components) - offsets
    else:
        components_t = np.ascontiguousarray(fit.components.T)
        out = map_row_blocks(X, lambda rows: rows @ components_t - offsets,
                             fit.components.shape[0], np.result_type(X, components_t))
    if whiten:
        out /= np.sqrt(np.maximum(fit.explained_variance, np.finfo(out.dtype).tiny))
    return out.astype(X.dtype, copy=False)


def _covariance(X: np.ndarray, mean64: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    cov = centred_scatter(X, mean64)
    cov /= max(X.shape[0] - 1, 1)
    return _leading_eigenpairs(cov, k)


def centred_scatter(X: np.ndarray, mean64: np.ndarray) -> np.ndarray:
    """``Σ (x − mean)(x − mean)ᵀ`` over the rows of ``X``, float64 (d × d).

    Centred BLAS products in the input precision (float32 for float32 input, as
    scikit-learn's covariance_eigh), by blocks of rows summed in float64: no centred copy
    of X and shorter float32 sums."""
    mean = mean64.astype(X.dtype)

    def block_scatter(rows: slice) -> np.ndarray:
        Xc = X[rows] - mean
        return Xc.T @ Xc

    scatter = sum_row_blocks(X, block_scatter)
    return scatter


def _leading_eigenpairs(cov: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    d = cov.shape[0]
    evals, evecs = scipy.linalg.eigh(cov, subset_by_index=(d - k, d - 1))  # leading pairs only
    order = np.argsort(evals)[::-1]
    return evecs[:, order].T, evals[order]


def _full_svd(X: np.ndarray, mean64: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    Xc = X.astype(np.float64) - mean64
    _, s, vt = scipy.linalg.svd(Xc, full_matrices=False, check_finite=False)
    return vt, s**2 / max(X.shape[0] - 1, 1)


def _randomized(X: np.ndarray, mean64: np.ndarray, k: int, n_iter: int,
                seed: int) -> tuple[np.ndarray, np.ndarray]:
    n_cols = min(k + 10, min(X.shape))
    Q = randomized_range(X, mean64.astype(X.dtype), n_cols, n_iter, seed)
    # B = Qᵀ (X − 1 μᵀ), formed without the centred copy of X.
    B = sum_row_blocks(X, lambda rows: Q[rows].T @ X[rows]) - np.outer(Q.sum(axis=0), mean64)
    _, s, vt = scipy.linalg.svd(B, full_matrices=False)
    return vt, s**2 / max(X.shape[0] - 1, 1)


def randomized_range(
    X: np.ndarray, mean: np.ndarray, n_cols: int, n_iter: int, seed: int
) -> np.ndarray:
    """Orthonormal basis of the range of ``X − 1 meanᵀ`` (Halko et al. 2011, alg. 4.4).

    Power iterations are re-orthonormalised by LU (cheap) and finally by QR.
    """
    rng = np.random.default_rng(seed)
    omega = rng.standard_normal((X.shape[1], n_cols)).astype(X.dtype)

    def centred_times(M):  # (X − 1μᵀ) M, by fixed blocks of rows
        shift = (mean @ M)[None, :]
        return map_row_blocks(X, lambda rows: rows @ M - shift, M.shape[1], M.dtype)

    def centred_t_times(M):  # (X − 1μᵀ)ᵀ M, the blocks' partial products added in order
        total = sum_row_blocks(X, lambda rows: X[rows].T @ M[rows])
        return (total - np.outer(mean, M.sum(axis=0))).astype(M.dtype)

    Q = centred_times(omega)
    for _ in range(n_iter):
        Q, _ = scipy.linalg.lu(Q, permute_l=True)
        Q = centred_times(centred_t_times(Q))
    Q, _ = scipy.linalg.qr(Q, mode="economic")
    return Q


def _total_variance(X: np.ndarray, mean: np.ndarray) -> float:
    n = X.shape[0]
    if n < 2:
        return 0.0
    # Σ_j var_j = (Σ x² − n μ²) / (n − 1), accumulated in float64.
    sq = np.einsum("ij,ij->j", X, X, dtype=np.float64)
    return float(np.sum(sq - n * mean**2) / (n - 1))


def _fix_signs(components: np.ndarray) -> np.ndarray:
    """Make the largest-magnitude loading of each component positive (deterministic output)."""
    idx = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), idx])
    signs[signs == 0] = 1.0
    return components * signs[:, None]
