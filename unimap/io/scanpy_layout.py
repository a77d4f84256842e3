"""scanpy's AnnData layout, read and written without importing anndata or scanpy.

What :mod:`unimap.tl` needs to stand in for ``scanpy.tl.umap`` and ``scanpy.tl.tsne``: the
neighbours ``scanpy.pp.neighbors`` stores (:func:`knn_from_neighbors`, read as the
estimators' ``precomputed_knn``) and which of them a fit reuses, the ``uns[...]["params"]``
scanpy writes for an embedding (:func:`scanpy_params`) and for a PCA (:func:`write_pca`), and
unimap's own record beside them (:func:`unimap_records`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.io.anndata_input import is_anndata
from unimap.neighbors.metrics import metric_name
from unimap.runtime.user_warnings import warn_user

__all__ = ["knn_from_neighbors", "neighbours_to_reuse", "check_connectivities",
           "fit_neighbourhood", "scanpy_params", "write_pca", "unimap_records"]


def neighbours_to_reuse(adata: Any, method: str, size_param: str | None,
                         neighbors_key: str | None, use_neighbors: bool | None) -> str | None:
    """The ``uns`` key of the scanpy neighbours the fit reuses, or None to search."""
    if size_param is None:
        if neighbors_key is not None or use_neighbors:
            raise ValueError(f"method={method!r} uses no neighbours; leave neighbors_key and "
                             "use_neighbors unset")
        return None
    if use_neighbors is False:
        if neighbors_key is not None:
            raise ValueError(f"use_neighbors=False contradicts neighbors_key={neighbors_key!r}")
        return None
    if neighbors_key is not None:
        return neighbors_key
    if use_neighbors or (size_param == "n_neighbors" and "neighbors" in adata.uns):
        return "neighbors"
    return None


def check_connectivities(graph_params: dict, neighbors_key: str) -> None:
    """Warn when scanpy's connectivities are not UMAP's (``pp.neighbors(method="gauss")``):
    unimap computes its memberships from the graph's distances, so the result differs from
    scanpy's embedding of those connectivities."""
    method = graph_params.get("method", "umap")
    if method != "umap":
        warn_user(f"the connectivities of uns[{neighbors_key!r}] were computed with "
                  f"method={method!r}; unimap reads the graph's distances and computes "
                  "its own (UMAP) memberships", UserWarning)


def fit_neighbourhood(estimator: Any, size_param: str, k: int, explicit: bool) -> float:
    """Set the estimator's neighbourhood size to what ``k`` neighbours per point (the point
    itself included) allow; warn where that differs from its setting. Returns the size."""
    name = type(estimator).__name__
    wanted = getattr(estimator, size_param)
    if size_param == "n_neighbors":
        size = min(wanted, k) if explicit else k  # unasked, the graph's size is the size
        if explicit and wanted != k:
            warn_user(
                f"the reused neighbours have {k} per point (the point itself included) and "
                f"{name} has n_neighbors={wanted}: using n_neighbors={size}"
                + (f", the {size} nearest of them" if size < k else "")
                + " (recorded in uns['unimap'][...]['params'])", UserWarning)
    else:
        # a perplexity-calibrated row uses floor(3 * perplexity) neighbours besides itself
        size = wanted if int(3 * wanted) <= k - 1 else (k - 1) / 3
        if size != wanted:
            warn_user(
                f"{name} with perplexity={wanted:g} needs {int(3 * wanted)} neighbours per "
                f"point, but the reused neighbours have {k - 1} (besides the point): using "
                f"perplexity={size:.4g} (recorded in uns['unimap'][...]['params']); for "
                f"more, run scanpy.pp.neighbors with n_neighbors={int(3 * wanted) + 1}",
                UserWarning)
    estimator.set_params(**{size_param: size})
    return size


def knn_from_neighbors(adata: Any, neighbors_key: str = "neighbors"
                       ) -> tuple[np.ndarray, np.ndarray]:
    """scanpy's neighbours as the ``precomputed_knn`` of a unimap estimator.

    ``scanpy.pp.neighbors`` stores, per cell, its ``n_neighbors - 1`` nearest other cells as a
    CSR matrix of distances (``obsp[uns[neighbors_key]["distances_key"]]``). This returns the
    ``(indices, distances)`` pair of shape ``(n_obs, m + 1)`` the estimators take: column 0
    the point itself at distance 0, then its ``m`` nearest neighbours by increasing distance,
    ``m`` the fewest neighbours any row has (a warning says when rows differ).

    Parameters
    ----------
    adata : anndata.AnnData
    neighbors_key : str, default="neighbors"

    Returns
    -------
    indices : ndarray of int32, shape (n_obs, m + 1)
    distances : ndarray of float32, shape (n_obs, m + 1)

    Raises
    ------
    ValueError
        No such neighbours, a matrix that is not n_obs × n_obs, a row without neighbours, or
        negative or non-finite distances.

    Examples
    --------
    >>> import anndata, unimap
    >>> from sklearn.neighbors import kneighbors_graph
    >>> from unimap.datasets import load_digits
    >>> from unimap.tl import knn_from_neighbors
    >>> X, _ = load_digits()
    >>> adata = anndata.AnnData(X[:500])
    >>> adata.obsp["distances"] = kneighbors_graph(X[:500], 14, mode="distance")  # as scanpy's
    >>> adata.uns["neighbors"] = {"distances_key": "distances", "params": {"n_neighbors": 15}}
    >>> indices, distances = knn_from_neighbors(adata)
    >>> indices.shape, bool((indices[:, 0] == range(500)).all())  # column 0: the cell itself
    ((500, 15), True)
    >>> model = unimap.UMAP(n_neighbors=15, precomputed_knn=(indices, distances), random_state=0)
    >>> model.fit(X[:500]).embedding_.shape
    (500, 2)
    """
    if not is_anndata(adata):
        raise TypeError(f"adata must be an anndata.AnnData, got {type(adata).__name__}")
    if neighbors_key not in adata.uns:
        found = [k for k, v in adata.uns.items()
                 if isinstance(v, dict) and "distances_key" in v]
        raise ValueError(f"adata.uns has no {neighbors_key!r}: run scanpy.pp.neighbors first"
                         + (f" (neighbours found under {', '.join(map(repr, found))})"
                            if found else ""))
    info = adata.uns[neighbors_key]
    key = info.get("distances_key", "distances")
    if key in adata.obsp:
        D = adata.obsp[key]
    elif "distances" in info:  # scanpy before 1.5 kept the matrices in uns
        D = info["distances"]
    else:
        raise ValueError(f"adata.obsp has no {key!r} (the distances of "
                         f"uns[{neighbors_key!r}])")
    n = adata.n_obs
    if not sp.issparse(D) or D.shape != (n, n):
        raise ValueError(f"the distances {key!r} must be a sparse {n} x {n} matrix, got "
                         f"{type(D).__name__} of shape {getattr(D, 'shape', None)}")
    D = sp.csr_matrix(D)
    rows = np.repeat(np.arange(n), np.diff(D.indptr))
    cols, dists = D.indices, np.asarray(D.data, dtype=np.float64)
    if not np.isfinite(dists).all() or (dists < 0).any():
        raise ValueError(f"the distances {key!r} must be finite and non-negative")
    other = cols != rows  # the point itself, where stored, is column 0 anyway
    rows, cols, dists = rows[other], cols[other], dists[other]
    counts = np.bincount(rows, minlength=n)
    m = int(counts.min())
    if m == 0:
        raise ValueError(f"row {int(np.argmin(counts))} of the distances {key!r} has no "
                         "neighbours")
    if counts.max() != m:
        warn_user(f"the rows of {key!r} have {m} to {int(counts.max())} neighbours; "
                  f"using the {m} nearest of each", UserWarning)
    order = np.lexsort((cols, dists, rows))  # by row, then distance (ties: lower index)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    take = order[(starts[:, None] + np.arange(m)).ravel()].reshape(n, m)
    indices = np.empty((n, m + 1), dtype=np.int32)
    distances = np.zeros((n, m + 1), dtype=np.float32)
    indices[:, 0] = np.arange(n)
    indices[:, 1:] = cols[take]
    distances[:, 1:] = dists[take]
    return indices, distances


def scanpy_params(record: str, estimator: Any, use_rep: str | None) -> dict[str, Any]:
    """``uns[key]["params"]`` as scanpy writes it: ``tl.umap``'s for ``record="umap"`` (the
    UMAP-like methods), ``tl.tsne``'s for ``"tsne"`` (the t-SNE-like ones): the variant's
    ``scanpy_record`` (:class:`unimap.methods.registry.Variant`)."""
    if record not in ("umap", "tsne"):
        raise ValueError(f"scanpy records 'umap' or 'tsne' parameters, not {record!r}")
    if record == "umap":
        params: dict[str, Any] = {"a": float(estimator.a_), "b": float(estimator.b_)}
        seed = estimator.random_state
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed != 0:
            params["random_state"] = int(seed)  # scanpy records a seed other than its 0
        return params
    rate = getattr(estimator, "learning_rate", None)
    params = {"perplexity": float(estimator.perplexity),
              "early_exaggeration": float(estimator.early_exaggeration),
              "learning_rate": float(rate if isinstance(rate, (int, float))
                                     else estimator.learning_rate_),
              "n_jobs": int(estimator.n_jobs), "metric": metric_name(estimator.metric)}
    if use_rep is not None:
        params["use_rep"] = use_rep
    return params


def write_pca(adata: Any, pca: Any, pcs: np.ndarray, key_added: str | None,
              loadings: bool) -> None:
    """``obsm["X_pca"]``, ``varm["PCs"]`` (when fitted on ``X``) and ``uns["pca"]`` as
    ``scanpy.pp.pca`` writes them."""
    adata.obsm[key_added or "X_pca"] = pcs
    if loadings:
        adata.varm[key_added or "PCs"] = pca.components_.T
    adata.uns[key_added or "pca"] = {
        "params": {"zero_center": True, "use_highly_variable": False, "mask_var": None},
        "variance": pca.explained_variance_, "variance_ratio": pca.explained_variance_ratio_}


def unimap_records(adata: Any) -> dict:
    """``adata.uns["unimap"]``: unimap's record of each fit, by the fit's ``uns`` key."""
    if not isinstance(adata.uns.get("unimap"), dict):
        adata.uns["unimap"] = {}
    return adata.uns["unimap"]
