"""Principal component analysis (reference 000) as a scikit-learn estimator.

The mathematics (centre, decompose, sort, fix signs) is in :mod:`unimap.decomposition.pca`, which
the PCA initialization and the kNN search's reduction share.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.decomposition.pca import SOLVERS, fit_pca, project
from unimap.methods._estimator import UnimapEstimator
from unimap.methods.parameters import shared_constraints
from unimap.methods.registry import built_in
from unimap.runtime.params import Boolean, Integer, Options
from unimap.runtime.random_streams import seed_from_random_state
from unimap.runtime.user_warnings import warn_user
from unimap.runtime.validation import check_array, check_int, is_dask_collection

__all__ = ["PCA"]


class PCA(UnimapEstimator):
    """Principal component analysis.

    Centres the data, finds the directions of largest variance and projects onto them. Three
    solvers give the same components (up to sign, which is fixed so that the largest-magnitude
    loading of each component is positive):

    - ``"covariance"``: eigendecomposition of the ``D × D`` covariance matrix, the algorithm of
      reference 000; fastest when ``n_samples ≫ n_features`` and ``n_features`` is moderate.
    - ``"full"``: thin SVD of the centred data (LAPACK).
    - ``"randomized"``: Halko et al.'s randomized range finder with power iterations, for
      large inputs when few components are wanted; never forms the centred copy of ``X``.

    ``fit`` of a ``dask.array.Array`` never gathers it: the covariance solver's matrix is
    summed block by block on the workers (:func:`unimap.dask.scatter_moments`), so data
    far larger than one machine's memory is reduced in one pass over its blocks, and
    ``transform`` projects it block by block, lazily (``docs/dask.md``).

    Parameters
    ----------
    n_components : int, default=2
        Number of components to keep (at most ``min(n_samples, n_features)``).
    svd_solver : {"auto", "covariance", "full", "randomized"}, default="auto"
        ``"auto"`` picks covariance when ``n_features <= 1000`` and ``n_samples`` is at
        least 10 times that; else randomized when ``n_components`` is below 10% of
        ``min(n_samples, n_features)`` and the input has more than 500,000 entries; else
        covariance when ``n_features <= 1000``, else full.
    whiten : bool, default=False
        Scale the projections to unit variance.
    n_iter : int, default=6
        Power iterations of the randomized solver.
    random_state : int, Generator or None, default=None
        Seed of the randomized solver.
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where the covariance solver sums its matrix (:mod:`unimap.runtime.device`):
        ``"cuda"`` on the GPU (:mod:`unimap.decomposition.pca_cuda`; the d × d
        eigenproblem and the projections stay on the CPU), ``"auto"`` there when a GPU is
        usable. The full and randomized solvers have no CUDA kernels yet: with
        ``device="cuda"`` they run on the CPU and say so. ``device_`` records where the fit
        ran.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
    explained_variance_ : ndarray of shape (n_components,)
        Variance along each component (ddof=1).
    explained_variance_ratio_ : ndarray of shape (n_components,)
    singular_values_ : ndarray of shape (n_components,)
    mean_ : ndarray of shape (n_features,)
    n_components_ : int
    n_features_in_ : int
    n_samples_ : int
    svd_solver_ : str
        The solver used.
    device_ : {"cpu", "cuda"}
        Where the fit's decomposition ran.
    timings_ : dict
        Seconds spent in ``fit``.

    Examples
    --------
    >>> import numpy as np, unimap
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> pca = unimap.PCA(n_components=2).fit(X)
    >>> Z = pca.transform(X)
    >>> Z.shape, Z.dtype
    ((1797, 2), dtype('float32'))
    >>> bool(pca.explained_variance_ratio_[0] > pca.explained_variance_ratio_[1])
    True
    >>> pca.inverse_transform(Z).shape
    (1797, 64)
    """

    declaration = built_in("PCA")
    _parameter_constraints = {
        # the same checks as the neighbour embeddings'; the docs differ (PCA's meaning)
        **shared_constraints("n_components", "random_state", "device"),
        "svd_solver": Options(*SOLVERS),
        "whiten": Boolean(),
        "n_iter": Integer(0, 1_000),  # power iterations
    }
    _fitted_attribute = "components_"

    def __init__(
        self,
        n_components: int = 2,
        *,
        svd_solver: str = "auto",
        whiten: bool = False,
        n_iter: int = 6,
        random_state: Any = None,
        device: str = "auto",
    ) -> None:
        self.n_components = n_components
        self.svd_solver = svd_solver
        self.whiten = whiten
        self.n_iter = n_iter
        self.random_state = random_state
        self.device = device

    def fit(self, X: Any, y: Any = None) -> PCA:
        """Fit the model on ``X`` of shape (n_samples, n_features) (an AnnData gives its
        ``obsm["X_pca"]``, else its ``X``). Returns ``self``."""
        self._fit(X)
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """Fit and return the projections of ``X``, shape (n_samples, n_components) (lazy
        for a dask array, as :meth:`transform`)."""
        X = self._fit(X)
        if is_dask_collection(X):
            return self._dask_transform(X, {})
        return project(X, self._axes, self.whiten, row_exact=True)

    def transform(self, X: Any) -> np.ndarray:
        """Project ``X`` of shape (m, n_features) onto the components: (m, n_components).

        The result is float64 for float64 input, else float32. A ``dask.array.Array`` gives
        a lazy one, projected block by block on its workers (:mod:`unimap.dask.transform`)."""
        return self._transform(X)

    def _transform_dtype(self, dtype: np.dtype) -> np.dtype:
        return np.dtype(np.float64 if dtype == np.float64 else np.float32)

    def _transform(self, X: Any) -> np.ndarray:
        if is_dask_collection(X):
            return self._dask_transform(X, {})
        self._check_fitted()
        X = _check_input(self._new_input(X))
        self._check_n_features(X, self.n_features_in_)
        return project(X, self._axes, self.whiten, row_exact=True)

    def inverse_transform(self, Z: Any) -> np.ndarray:
        """Map projections of shape (m, n_components) back to the input space."""
        self._check_fitted()
        Z = check_array(Z, "Z", dtype=None)
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"Z has {Z.shape[1]} columns, but PCA has {self.n_components_} components"
            )
        if self.whiten:
            Z = Z * np.sqrt(self.explained_variance_)
        dtype = self.components_.dtype
        with np.errstate(over="ignore", invalid="ignore"):
            X = (Z @ self.components_ + self.mean_).astype(dtype, copy=False)
        if not np.isfinite(X).all():
            raise ValueError(f"Z maps to values beyond {np.finfo(dtype).max:.3g}, the range "
                             f"of this PCA's {dtype} components")
        return X

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    @property
    def _axes(self):
        from unimap.decomposition.pca import PCAFit

        return PCAFit(self.components_, self.mean_, self.explained_variance_,
                      self.explained_variance_ratio_, self.singular_values_, self.svd_solver_)

    def _fit(self, X: Any) -> Any:
        start = time.perf_counter()
        self._validate_params()
        if is_dask_collection(X):
            return self._fit_dask(X, start)
        names = SimpleNamespace()
        X = _check_input(self._fit_input(X, names))
        n, d = X.shape
        k = check_int(self.n_components, "n_components", 1, min(n, d))
        solver = self.svd_solver
        if solver == "auto":
            from unimap.decomposition.pca import choose_solver

            solver = choose_solver(n, d, k)
        seed = seed_from_random_state(self.random_state) if solver == "randomized" else 0
        if self._on_gpu(solver):
            from unimap.decomposition.pca_cuda import fit_pca_cuda

            axes = fit_pca_cuda(np.ascontiguousarray(X), k, dtype=X.dtype)
            self._store(axes, n, d, vars(names), start, "cuda")
        else:
            self._store(fit_pca(X, k, solver, self.n_iter, seed), n, d, vars(names), start)
        return X

    def _on_gpu(self, solver: str) -> bool:
        """Whether this fit's solver runs on the GPU (the covariance solver, for
        ``device="cuda"``, or ``"auto"`` with a usable GPU); warns where ``device="cuda"``
        asked for a solver without CUDA kernels."""

        from unimap.runtime.device import resolve_device

        if resolve_device(self.device) != "cuda":
            return False
        if solver == "covariance":
            return True
        if self.device == "cuda":
            warn_user(f"PCA's {solver!r} solver has no CUDA kernels yet; it runs on the "
                      "CPU (svd_solver='covariance' runs on the GPU; device_ records "
                      "where the fit ran)", UserWarning)
        return False

    def _fit_dask(self, X: Any, start: float) -> Any:
        """Fit on a dask array without gathering it: one pass over its blocks for the
        covariance (:func:`unimap.dask.scatter_moments`), then its leading
        eigenvectors."""
        from unimap.dask.sample import checked_rows, scatter_moments
        from unimap.decomposition.pca import axes_from_scatter

        if self.svd_solver not in ("auto", "covariance"):
            raise ValueError(
                "PCA fits a dask array with the covariance solver (one pass over its blocks); "
                f"svd_solver={self.svd_solver!r} needs the data in memory "
                "(fit np.asarray(X) instead)")
        X = checked_rows(X, "PCA.fit")
        n, d = int(X.shape[0]), int(X.shape[1])
        k = check_int(self.n_components, "n_components", 1, min(n, d))  # before the pass
        moments = scatter_moments(X)
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float32)
        axes = axes_from_scatter(moments.scatter, moments.mean, moments.n, k, dtype)
        self._store(axes, moments.n, d, {}, start)
        return X

    def _store(self, axes: Any, n: int, d: int, names: dict, start: float,
               device: str = "cpu") -> None:
        fitted = dict(
            names, n_samples_=n, n_features_in_=d, n_components_=axes.components.shape[0],
            svd_solver_=axes.solver, device_=device, components_=axes.components,
            mean_=axes.mean,
            explained_variance_=axes.explained_variance,
            explained_variance_ratio_=axes.explained_variance_ratio,
            singular_values_=axes.singular_values,
            timings_={"fit": time.perf_counter() - start})
        # All at once, after the last step that can fail: an interrupted fit changes nothing.
        for stale in ("feature_names_in_", "use_rep_"):  # a refit without them drops them
            self.__dict__.pop(stale, None)
        self.__dict__.update(fitted)


def _check_input(X: Any) -> np.ndarray:
    """X as a dense float array: float32 or float64 as given, integers as float32 unless
    float32 would round them (beyond 2²⁴: float64, as scikit-learn takes every integer), and
    float32 values beyond ``MAX_FEATURE_MAGNITUDE`` in float64, with a warning: their
    float32 products overflow (int64 values near 2⁶² made the scatter infinite)."""
    from unimap.runtime.validation import MAX_FEATURE_MAGNITUDE

    if sp.issparse(X):
        X = check_array(X, accept_sparse=True, dtype=None).toarray()
    raw = X if isinstance(X, np.ndarray) else np.asarray(X)
    if raw.dtype.kind in "iu" and raw.size and (
            max(abs(int(raw.min())), abs(int(raw.max()))) > 2**24):
        return check_array(X, dtype=np.float64)
    X = check_array(X, dtype=None)
    if X.dtype == np.float32 and X.size and float(np.abs(X).max()) > MAX_FEATURE_MAGNITUDE:

        warn_user(f"X has values up to {float(np.abs(X).max()):.3g}, whose float32 "
                  "products overflow; PCA computes in float64")
        X = X.astype(np.float64)
    return X
