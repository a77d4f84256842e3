"""scanpy-style tools: embed an ``AnnData`` in place.

:func:`embed` (and its shorthands :func:`umap`, :func:`tsne`, :func:`gdr`) fits a unimap
estimator on an AnnData's representation and writes, as ``scanpy.tl.umap`` does,

- ``adata.obsm["X_<method>"]``: the embedding (``X_umap``, ``X_tsne``, ``X_gdr``,
  ``X_gdr_tsne``, ``X_pca``), float32;
- ``adata.uns["<method>"]``: ``{"method", "estimator", "params", "resolved", "timings"}``:
  the estimator's parameters (plus ``use_rep`` and, with reused neighbours,
  ``neighbors_key``), the settings the fit resolved (``n_neighbors_``, ``n_epochs_``, ...)
  and the seconds per phase.

It can reuse the neighbours ``scanpy.pp.neighbors`` computed (:func:`knn_from_neighbors`)
instead of searching them again. anndata is needed only for the objects passed in; this module
never imports it.

Examples
--------
>>> import scanpy as sc, unimap  # doctest: +SKIP
>>> sc.pp.pca(adata); sc.pp.neighbors(adata)  # doctest: +SKIP
>>> unimap.tl.umap(adata, use_neighbors=True)  # doctest: +SKIP
>>> sc.pl.embedding(adata, basis="X_umap")  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.io.anndata_input import default_rep, fit_record, is_anndata, representation

__all__ = ["embed", "umap", "tsne", "gdr", "knn_from_neighbors"]

# method -> (estimator class name, fixed parameters, the parameter that sets the kNN size)
_METHODS = {
    "umap": ("UMAP", {}, "n_neighbors"),
    "gdr": ("GDR", {}, "n_neighbors"),
    "tsne": ("TSNE", {}, "perplexity"),
    "gdr-tsne": ("GDR", {"normalized": True}, "perplexity"),
    "pca": ("PCA", {}, None),
}


def embed(
    adata: Any,
    method: str = "umap",
    *,
    use_rep: str | None = None,
    neighbors_key: str | None = None,
    use_neighbors: bool = False,
    key_added: str | None = None,
    copy: bool = False,
    random_state: Any = 0,
    **params: Any,
) -> Any:
    """Embed an AnnData with a unimap method, scanpy style.

    Parameters
    ----------
    adata : anndata.AnnData
    method : {"umap", "tsne", "gdr", "gdr-tsne", "pca"}, default="umap"
        ``unimap.UMAP``, ``unimap.TSNE``, ``unimap.GDR``, ``unimap.GDR(normalized=True)`` or
        ``unimap.PCA``.
    use_rep : str or None, default=None
        ``"X"`` or a key of ``adata.obsm``. None: the representation the reused neighbours
        were computed on (their ``params["use_rep"]``, when recorded), else
        ``obsm["X_pca"]`` when present, else ``X``; ``"X"`` for ``method="pca"``.
    neighbors_key : str or None, default=None
        Reuse the neighbours of ``adata.uns[neighbors_key]`` (written by
        ``scanpy.pp.neighbors(..., key_added=...)``) instead of searching them.
    use_neighbors : bool, default=False
        Reuse ``adata.uns["neighbors"]`` (scanpy's default key).
    key_added : str or None, default=None
        Write ``obsm[key_added]`` and ``uns[key_added]`` instead of ``obsm["X_<method>"]``
        and ``uns["<method>"]``.
    copy : bool, default=False
        Work on a copy of ``adata`` and return it.
    random_state : int, Generator or None, default=0
        The estimator's seed (scanpy's default 0: the same call gives the same embedding).
    **params
        Parameters of the estimator (``n_neighbors``, ``min_dist``, ``perplexity``,
        ``n_epochs``, ``metric``, ...).

    Returns
    -------
    AnnData or None
        The copy when ``copy=True``, else None (``adata`` is changed in place).

    Raises
    ------
    TypeError
        ``adata`` is not an AnnData, or a parameter the estimator does not have.
    ValueError
        An unknown method or representation, neighbours asked of PCA, or neighbours that
        cannot be read (the message says why).

    Warns
    -----
    UserWarning
        When reused neighbours fix a neighbourhood size other than the estimator's
        (``n_neighbors``; ``perplexity`` needs ``3·perplexity`` neighbours): the size used
        is recorded in ``uns[...]["params"]``.

    Notes
    -----
    scanpy stores ``n_neighbors - 1`` neighbours per cell (itself left out) in
    ``obsp["distances"]``; unimap's ``n_neighbors`` counts the point itself, so
    ``scanpy.pp.neighbors(n_neighbors=15)`` gives exactly the graph of ``UMAP(n_neighbors=15)``.
    A fit on reused neighbours has no neighbour index: it cannot ``transform`` new points.
    """
    if not is_anndata(adata):
        raise TypeError(f"adata must be an anndata.AnnData, got {type(adata).__name__}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {list(_METHODS)}, got {method!r}")
    if "precomputed_knn" in params:
        raise TypeError("pass neighbours as neighbors_key / use_neighbors, not precomputed_knn")
    class_name, fixed, size_param = _METHODS[method]
    if use_neighbors and neighbors_key is None:
        neighbors_key = "neighbors"
    if neighbors_key is not None and size_param is None:
        raise ValueError(f"method={method!r} uses no neighbours; leave neighbors_key and "
                         "use_neighbors unset")
    if copy:
        adata = adata.copy()

    from unimap.methods.gdr import GDR
    from unimap.methods.pca import PCA
    from unimap.methods.tsne import TSNE
    from unimap.methods.umap import UMAP

    classes = {"GDR": GDR, "PCA": PCA, "TSNE": TSNE, "UMAP": UMAP}
    estimator = classes[class_name](**fixed, random_state=random_state, **params)
    record: dict[str, Any] = {}
    if neighbors_key is not None:
        indices, distances = knn_from_neighbors(adata, neighbors_key)
        scanpy_params = adata.uns[neighbors_key].get("params", {})
        if use_rep is None and isinstance(scanpy_params.get("use_rep"), str):
            use_rep = scanpy_params["use_rep"]
        size = _fit_neighbourhood(estimator, size_param, indices.shape[1],
                                  explicit=size_param in params)
        estimator.set_params(precomputed_knn=(indices, distances))
        record.update(neighbors_key=neighbors_key, neighbors_n_neighbors=indices.shape[1])
        if size != params.get(size_param, size):
            record[f"requested_{size_param}"] = params[size_param]
    if use_rep is None:
        use_rep = "X" if method == "pca" else default_rep(adata)
    X, _, use_rep = representation(adata, use_rep)
    record["use_rep"] = use_rep
    n_pcs = scanpy_params.get("n_pcs") if neighbors_key is not None else None
    if n_pcs is not None and use_rep == "X_pca":  # scanpy's graph used the first n_pcs PCs
        X = X[:, : int(n_pcs)]
        record["n_pcs"] = int(n_pcs)
    embedding = np.asarray(estimator.fit_transform(X), dtype=np.float32)

    uns = fit_record(estimator, method, **record)
    if method == "pca" and use_rep == "X":  # as scanpy.pp.pca
        adata.varm["PCs"] = estimator.components_.T
    name = method.replace("-", "_")
    adata.obsm[key_added or f"X_{name}"] = embedding
    adata.uns[key_added or name] = uns
    return adata if copy else None


def _fit_neighbourhood(estimator: Any, size_param: str, k: int, explicit: bool) -> float:
    """Set the estimator's neighbourhood size to what ``k`` neighbours per point (the point
    itself included) allow; warn where that differs from its setting. Returns the size."""
    name = type(estimator).__name__
    wanted = getattr(estimator, size_param)
    if size_param == "n_neighbors":
        size = min(wanted, k) if explicit else k
        if size != wanted or (explicit and wanted != k):
            warnings.warn(
                f"the reused neighbours have {k} per point (the point itself included) and "
                f"{name} has n_neighbors={wanted}: using n_neighbors={size}"
                + (f", the {size} nearest of them" if size < k else "")
                + " (recorded in uns[...]['params'])", UserWarning, stacklevel=3)
    else:
        # a perplexity-calibrated row uses floor(3 * perplexity) neighbours besides itself
        size = wanted if int(3 * wanted) <= k - 1 else (k - 1) / 3
        if size != wanted:
            warnings.warn(
                f"{name} with perplexity={wanted:g} needs {int(3 * wanted)} neighbours per "
                f"point, but the reused neighbours have {k - 1} (besides the point): using "
                f"perplexity={size:.4g} (recorded in uns[...]['params']); for more, run "
                f"scanpy.pp.neighbors with n_neighbors={int(3 * wanted) + 1}",
                UserWarning, stacklevel=3)
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
    >>> knn = knn_from_neighbors(adata)  # doctest: +SKIP
    >>> unimap.UMAP(n_neighbors=knn[0].shape[1], precomputed_knn=knn).fit(adata)  # +SKIP
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
        warnings.warn(f"the rows of {key!r} have {m} to {int(counts.max())} neighbours; "
                      f"using the {m} nearest of each", UserWarning, stacklevel=2)
    order = np.lexsort((cols, dists, rows))  # by row, then distance (ties: lower index)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    take = order[(starts[:, None] + np.arange(m)).ravel()].reshape(n, m)
    indices = np.empty((n, m + 1), dtype=np.int32)
    distances = np.zeros((n, m + 1), dtype=np.float32)
    indices[:, 0] = np.arange(n)
    indices[:, 1:] = cols[take]
    distances[:, 1:] = dists[take]
    return indices, distances


def umap(adata: Any, **kwargs: Any) -> Any:
    """:func:`embed` with ``method="umap"``: writes ``obsm["X_umap"]``, ``uns["umap"]``."""
    return embed(adata, "umap", **kwargs)


def tsne(adata: Any, **kwargs: Any) -> Any:
    """:func:`embed` with ``method="tsne"``: writes ``obsm["X_tsne"]``, ``uns["tsne"]``."""
    return embed(adata, "tsne", **kwargs)


def gdr(adata: Any, *, normalized: bool = False, **kwargs: Any) -> Any:
    """:func:`embed` with ``method="gdr"`` (``obsm["X_gdr"]``), or ``"gdr-tsne"`` with
    ``normalized=True`` (``obsm["X_gdr_tsne"]``)."""
    return embed(adata, "gdr-tsne" if normalized else "gdr", **kwargs)
