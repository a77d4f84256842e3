"""Initial embeddings: the dispatch every neighbour-embedding method starts from
(:func:`initialize`), the PCA, random and user-array starts, and the rescaling to UMAP's box or
t-SNE's small standard deviation; the spectral start is in :mod:`unimap.initialization.spectral`.

Each initializer returns raw coordinates of shape (n_samples, n_components), float32; the
method then rescales them (UMAP: into a [0, 10] box; t-SNE: to a small standard deviation).
Fallbacks never fail silently: they warn and say what was used in the returned ``info``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.initialization.random_layout import random_init
from unimap.initialization.spectral import spectral_init
from unimap.runtime.random_streams import spawn_seeds
from unimap.runtime.validation import check_array

__all__ = [
    "initialize",
    "pca_init",
    "array_init",
    "rescale_to_box",
    "rescale_to_std",
]


INIT_STD = 1e-4  # t-SNE's start: standard deviation of the first coordinate
BOX_SIZE = 10.0  # UMAP's start: each coordinate in [0, BOX_SIZE]
PCA_INIT_FIT_ROWS = 10_000  # rows the PCA initialization's axes are fitted on (at most)


def initialize(
    init: Any,
    X: np.ndarray | sp.spmatrix | None,
    graph: sp.spmatrix,
    n_components: int,
    seed: int,
    scale: str,
    device: str = "cpu",
) -> tuple[np.ndarray, dict]:
    """The start of an embedding, as every neighbour-embedding method makes it.

    Parameters
    ----------
    init : {"spectral", "pca", "random"} or array of shape (n_samples, n_components)
        An array is used as given.
    X : array of shape (n_samples, n_features), sparse matrix, or None
        The feature vectors (None for precomputed distances, which rules out ``"pca"``).
    graph : sparse matrix of shape (n_samples, n_samples)
        The affinities a spectral start lays out.
    n_components, seed : int
    scale : {"box", "std"}
        ``"box"`` (UMAP): random starts are uniform in ±10 and the others are mapped onto
        ``[0, 10]`` per coordinate (a spectral start that fell back to random keeps its own
        scale); ``"std"`` (t-SNE): centred, standard deviation 1e-4.
    device : {"cpu", "cuda"}, default="cpu"
        Where a spectral start's eigenvectors
        (:func:`unimap.initialization.spectral.spectral_init`) and a PCA start's axes
        (:func:`pca_init`) are computed.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components), float32
    info : dict
        ``{"method": ..., "fallback": str | None}`` (spectral adds ``n_graph_components``).
    """
    n = graph.shape[0]
    if not isinstance(init, str):
        return array_init(init, n, n_components), {"method": "array", "fallback": None}
    if init == "random":
        info = {"method": "random", "fallback": None}
        if scale == "box":
            return random_init(n, n_components, seed, BOX_SIZE), info
        return random_init(n, n_components, seed, INIT_STD, "normal"), info
    if init == "pca":
        if X is None:
            raise ValueError("init='pca' needs feature vectors, not distances; use "
                             "'spectral' or 'random'")
        Y = pca_init(_dense_if_it_fits(X), n_components, seed, device)
        info = {"method": "pca", "fallback": None}
    else:
        data = None if (X is None or sp.issparse(X)) else X
        Y, info = spectral_init(graph, n_components, seed, data, device=device)
        if info["fallback"] is not None and scale == "box":
            return Y, info
    return (rescale_to_box(Y, BOX_SIZE) if scale == "box" else rescale_to_std(Y, INIT_STD)), info


def pca_init_on_gpu(n: int, d: int, n_components: int) -> bool:
    """Whether ``pca_init(device="cuda")`` runs on the GPU: where its sample's solver is the
    covariance solver, the one with CUDA kernels (:mod:`unimap.decomposition.pca_cuda`)."""
    from unimap.decomposition.pca import choose_solver

    k = min(n_components, n, d)
    return choose_solver(min(n, PCA_INIT_FIT_ROWS), d, k) == "covariance"


def pca_init(X: np.ndarray, n_components: int, seed: int, device: str = "cpu") -> np.ndarray:
    """The first principal components of ``X``, float32 (sparse rows, too large to densify,
    by :func:`_sparse_pca_init`).

    Above ``PCA_INIT_FIT_ROWS`` rows the axes are fitted on that many rows drawn at random
    (``seed``), then all rows are projected: the leading axes of a large sample are those of
    the data, at a third of the fit's cost (measured: benchmarks/results/library_notes.md,
    "unimap/initialization/layouts.py"). ``device="cuda"``: the fit
    and the projection on the GPU where :func:`pca_init_on_gpu` says so.
    """
    from unimap.decomposition.pca import fit_pca, project

    sample_seed, solver_seed, pad_seed = spawn_seeds(seed, 3)
    if sp.issparse(X):
        return _sparse_pca_init(X, n_components, sample_seed, solver_seed, pad_seed)
    k = min(n_components, X.shape[0], X.shape[1])
    sample = _fit_rows(X, sample_seed)
    if device == "cuda" and pca_init_on_gpu(*X.shape, n_components):
        from unimap.decomposition.pca_cuda import fit_pca_cuda, project_cuda

        axes = fit_pca_cuda(np.ascontiguousarray(sample), k, dtype=X.dtype)
        proj = project_cuda(np.ascontiguousarray(X), axes).copy_to_host()
    else:
        # row by row: a block of rows on a dask worker gets these bits (unimap.dask.fit),
        # as fast as BLAS's product for a start's few components
        proj = project(X, fit_pca(sample, k, seed=solver_seed), row_exact=True
                       ).astype(np.float32)
    return padded_components(proj, n_components, pad_seed)


def _fit_rows(X: Any, sample_seed: int) -> Any:
    """The rows the axes are fitted on: all, or ``PCA_INIT_FIT_ROWS`` drawn at random."""
    if X.shape[0] <= PCA_INIT_FIT_ROWS:
        return X
    rows = np.random.default_rng(sample_seed).choice(X.shape[0], PCA_INIT_FIT_ROWS,
                                                     replace=False)
    return X[np.sort(rows)]


def padded_components(proj: np.ndarray, n_components: int, pad_seed: int) -> np.ndarray:
    """``proj`` with small noise columns added up to ``n_components`` (where the data had
    fewer dimensions than the output)."""
    missing = n_components - proj.shape[1]
    if missing <= 0:
        return proj
    rng = np.random.default_rng(pad_seed)
    pad = rng.normal(scale=1e-4 * max(np.abs(proj).max(), 1.0), size=(proj.shape[0], missing))
    return np.hstack([proj, pad.astype(np.float32)])


def _dense_if_it_fits(X: Any) -> Any:
    """Sparse rows densified where their float32 copy fits ``MAX_DENSE_BYTES`` (the bits of
    a dense fit), else left sparse."""
    from unimap.runtime.validation import MAX_DENSE_BYTES

    if sp.issparse(X) and X.shape[0] * X.shape[1] * 4 <= MAX_DENSE_BYTES:
        return X.toarray()
    return X


def _sparse_pca_init(X: sp.spmatrix, n_components: int, sample_seed: int, solver_seed: int,
                     pad_seed: int) -> np.ndarray:
    """:func:`pca_init` of sparse rows too large to densify: scikit-learn's ARPACK PCA, which
    centres the sparse sample implicitly, then ``X @ axes - mean @ axes`` (the rows stay
    sparse)."""
    from sklearn.decomposition import PCA as ScikitPCA

    X = sp.csr_matrix(X, dtype=np.float32)
    sample = _fit_rows(X, sample_seed)
    k = min(n_components, sample.shape[0] - 1, X.shape[1] - 1)  # ARPACK: k < min(n, d)
    pca = ScikitPCA(k, svd_solver="arpack", random_state=solver_seed % 2**32).fit(sample)
    axes = pca.components_.T.astype(np.float64)
    proj = (np.asarray(X @ axes) - pca.mean_ @ axes).astype(np.float32)
    return padded_components(proj, n_components, pad_seed)


def array_init(init: Any, n_samples: int, n_components: int) -> np.ndarray:
    """Validate a user-given initial embedding."""
    Y = check_array(init, "init")
    if Y.shape != (n_samples, n_components):
        raise ValueError(
            f"init array must have shape ({n_samples}, {n_components}), got {Y.shape}"
        )
    if n_samples > 1 and (Y[0] == Y).all():
        # every force between two equal points is zero: the embedding stays one point
        raise ValueError("init array has all rows equal, which gives the optimizer no "
                         "direction to move them apart; pass distinct rows, or "
                         "init='spectral', 'pca' or 'random'")
    return Y.copy()


def rescale_to_box(Y: np.ndarray, size: float = 10.0) -> np.ndarray:
    """Affinely map each coordinate onto ``[0, size]`` (constant columns map to 0)."""
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.ascontiguousarray(size * (Y - lo) / span, dtype=np.float32)


def rescale_to_std(Y: np.ndarray, std: float = 1e-4) -> np.ndarray:
    """Centre and scale so the first coordinate has standard deviation ``std`` (t-SNE)."""
    Y = Y - Y.mean(axis=0)
    s = Y[:, 0].std()
    return np.ascontiguousarray(Y * (std / s if s > 0 else 1.0), dtype=np.float32)
