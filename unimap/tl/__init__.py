"""scanpy-style tools: embed an ``AnnData`` in place, as ``scanpy.tl`` does.

:func:`umap` and :func:`tsne` take the parameters and defaults of ``scanpy.tl.umap`` and
``scanpy.tl.tsne`` and write what they write, so that ``sc.pl.umap``, ``sc.tl.ingest`` and
every other reader of scanpy's layout work on the result:

- ``adata.obsm["X_umap"]`` / ``["X_tsne"]`` (or ``[key_added]``): the embedding, float32;
- ``adata.uns["umap"]`` / ``["tsne"]`` (or ``[key_added]``): ``{"params": ...}`` exactly as
  scanpy writes it (UMAP: ``a``, ``b`` and ``random_state`` when not 0; t-SNE: ``perplexity``,
  ``early_exaggeration``, ``learning_rate``, ``n_jobs``, ``metric`` and ``use_rep`` when given);
- ``adata.uns["unimap"]["umap"]`` (the same key): what unimap adds, ``{"method", "estimator",
  "params", "resolved", "timings"}``: every parameter of the estimator (with ``use_rep``,
  ``n_pcs`` and, with reused neighbours, ``neighbors_key``), the settings the fit resolved
  (``n_neighbors_``, ``n_epochs_``, ...) and the seconds per phase.

:func:`umap` reuses the neighbours ``scanpy.pp.neighbors`` stored (``uns["neighbors"]``, or
``neighbors_key``) when they are there, as ``scanpy.tl.umap`` does, and searches its own
otherwise. :func:`embed` runs any unimap method (``gdr``, ``gdr-tsne``, ``pca`` too) with the
estimator's own defaults. anndata is needed only for the objects passed in; this module never
imports it.

Examples
--------
>>> import scanpy as sc, unimap  # doctest: +SKIP
>>> sc.pp.pca(adata); sc.pp.neighbors(adata)  # doctest: +SKIP
>>> unimap.tl.umap(adata)  # scanpy's graph, scanpy's defaults  # doctest: +SKIP
>>> sc.pl.umap(adata, color="cell_type")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.io.anndata_input import fit_record, is_anndata
from unimap.io.scanpy_layout import (
    check_connectivities,
    fit_neighbourhood,
    knn_from_neighbors,
    neighbours_to_reuse,
    scanpy_params,
    unimap_records,
    write_pca,
)
from unimap.methods import registry
from unimap.tl._representation import choose_representation

__all__ = ["embed", "umap", "tsne", "gdr", "knn_from_neighbors"]

def embed(
    adata: Any,
    method: str = "umap",
    *,
    use_rep: str | None = None,
    n_pcs: int | None = None,
    neighbors_key: str | None = None,
    use_neighbors: bool | None = None,
    key_added: str | None = None,
    copy: bool = False,
    random_state: Any = 0,
    **params: Any,
) -> Any:
    """Embed an AnnData with a unimap method, with the estimator's own defaults.

    Parameters
    ----------
    adata : anndata.AnnData
    method : {"umap", "tsne", "gdr", "gdr-tsne", "pca"} or another declared method, default="umap"
        ``unimap.UMAP``, ``unimap.TSNE``, ``unimap.GDR``, ``unimap.GDR(normalized=True)`` or
        ``unimap.PCA``: the variants of :mod:`unimap.methods.registry`.
    use_rep : str or None, default=None
        ``"X"`` or a key of ``adata.obsm``. None: the representation the reused neighbours
        were computed on (their ``params["use_rep"]`` and ``n_pcs``), else scanpy's rule:
        ``X`` when it has at most 50 variables, else ``obsm["X_pca"]``, else the first 50
        principal components (computed with a warning and stored in ``obsm["X_pca"]``,
        ``varm["PCs"]`` and ``uns["pca"]``, as scanpy does); ``"X"`` for ``method="pca"``.
    n_pcs : int or None, default=None
        Use the first ``n_pcs`` columns of an ``obsm`` representation (scanpy's meaning;
        ``n_pcs=0`` means ``X``).
    neighbors_key : str or None, default=None
        Reuse the neighbours of ``adata.uns[neighbors_key]`` (written by
        ``scanpy.pp.neighbors(..., key_added=...)``) instead of searching them. None:
        ``"neighbors"`` when reused (see ``use_neighbors``).
    use_neighbors : bool or None, default=None
        Whether to reuse scanpy's neighbours. None: UMAP and GDR reuse ``uns["neighbors"]``
        when it is there (as ``scanpy.tl.umap``); t-SNE and GDR's t-SNE mode search their
        own (they need ``3·perplexity`` neighbours, more than scanpy's 15; as
        ``scanpy.tl.tsne``). True: reuse, an error if there are none. False: always search.
    key_added : str or None, default=None
        Write ``obsm[key_added]``, ``uns[key_added]`` and ``uns["unimap"][key_added]``
        instead of ``obsm["X_<method>"]``, ``uns["<method>"]`` and
        ``uns["unimap"]["<method>"]``.
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
        The copy when ``copy=True``, else None (``adata`` is changed in place, once the fit
        has succeeded: a failed fit writes nothing).

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
        When reused neighbours fix a neighbourhood size other than the one asked for
        (``n_neighbors``; ``perplexity`` needs ``3·perplexity`` neighbours): the size used is
        recorded in ``uns["unimap"][...]["params"]``. When the reused graph's connectivities
        were not UMAP's (scanpy's ``method="gauss"``): unimap computes its own memberships
        from the graph's distances.

    Notes
    -----
    scanpy stores ``n_neighbors - 1`` neighbours per cell (itself left out) in
    ``obsp["distances"]``; unimap's ``n_neighbors`` counts the point itself, so
    ``scanpy.pp.neighbors(n_neighbors=15)`` gives exactly the graph of ``UMAP(n_neighbors=15)``.
    unimap reads the distances and computes the fuzzy memberships itself (scanpy's
    ``obsp["connectivities"]``, equal for scanpy's default ``method="umap"``). A fit on
    reused neighbours has no neighbour index: it cannot ``transform`` new points.

    Examples
    --------
    >>> import anndata, unimap
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> adata = anndata.AnnData(X[:500])
    >>> adata.obsm["X_pca"] = unimap.PCA(n_components=20).fit_transform(X[:500])
    >>> unimap.tl.embed(adata, "gdr", random_state=0)  # in place: returns None
    >>> adata.obsm["X_gdr"].shape, adata.uns["unimap"]["gdr"]["estimator"]
    ((500, 2), 'GDR')
    >>> copy = unimap.tl.embed(adata, "gdr-tsne", key_added="X_gdr_k30", n_neighbors=30,
    ...                        random_state=0, copy=True)
    >>> "X_gdr_k30" in copy.obsm, "X_gdr_k30" in adata.obsm
    (True, False)
    """
    _check_anndata(adata)
    table = registry.variants()
    if method not in table:
        raise ValueError(f"method must be one of {list(table)}, got {method!r}")
    declared, chosen = table[method]
    for name, value in chosen.fixed.items():
        if name in params and params[name] != value:
            raise ValueError(f"method={method!r} fixes {name}={value!r}; got {name}="
                             f"{params[name]!r} (choose the method: {list(table)})")
    if "precomputed_knn" in params:
        raise TypeError("pass neighbours as neighbors_key / use_neighbors, not precomputed_knn")
    size_param = chosen.size_param
    given_rep = use_rep  # scanpy's tl.tsne records use_rep as given
    neighbors_key = neighbours_to_reuse(adata, method, size_param, neighbors_key,
                                        use_neighbors)
    if copy:
        adata = adata.copy()

    estimator = registry.estimator_class(declared.name)(
        **{**chosen.fixed, **params}, random_state=random_state)
    record: dict[str, Any] = {}
    if neighbors_key is not None:
        indices, distances = knn_from_neighbors(adata, neighbors_key)
        graph_params = adata.uns[neighbors_key].get("params", {})
        check_connectivities(graph_params, neighbors_key)
        if use_rep is None:  # the representation the graph was computed on, as scanpy
            use_rep, n_pcs = graph_params.get("use_rep"), graph_params.get("n_pcs")
        size = fit_neighbourhood(estimator, size_param, indices.shape[1],
                                 explicit=size_param in params)
        estimator.set_params(precomputed_knn=(indices, distances))
        record.update(neighbors_key=neighbors_key, neighbors_n_neighbors=indices.shape[1])
        if size != params.get(size_param, size):
            record[f"requested_{size_param}"] = params[size_param]
    if size_param is None and use_rep is None:  # no neighbours: a decomposition of X
        use_rep = "X"
    X, use_rep, n_pcs, pca_writes = choose_representation(adata, use_rep, n_pcs)
    record["use_rep"] = use_rep
    if n_pcs is not None:
        record["n_pcs"] = n_pcs
    embedding = np.asarray(estimator.fit_transform(X), dtype=np.float32)

    # everything is written after the fit: a failed fit leaves adata as it was
    for write in pca_writes:
        write(adata)
    name = method.replace("-", "_")
    key = key_added or name
    if not declared.neighbor_index:  # PCA: as scanpy.pp.pca
        write_pca(adata, estimator, embedding, key_added, use_rep == "X")
    else:
        adata.obsm[key_added or f"X_{name}"] = embedding
        if chosen.scanpy_record is not None:
            adata.uns[key] = {"params": scanpy_params(chosen.scanpy_record, estimator,
                                                      given_rep)}
    unimap_records(adata)[key] = fit_record(estimator, method, **record)
    return adata if copy else None


def _check_anndata(adata: Any) -> None:
    if not is_anndata(adata):
        raise TypeError(f"adata must be an anndata.AnnData, got {type(adata).__name__}")


def umap(
    adata: Any,
    *,
    min_dist: float = 0.5,
    spread: float = 1.0,
    n_components: int = 2,
    maxiter: int | None = None,
    alpha: float = 1.0,
    gamma: float = 1.0,
    negative_sample_rate: int = 5,
    init_pos: Any = "spectral",
    random_state: Any = 0,
    a: float | None = None,
    b: float | None = None,
    key_added: str | None = None,
    neighbors_key: str | None = None,
    copy: bool = False,
    **kwargs: Any,
) -> Any:
    """UMAP of an AnnData as ``scanpy.tl.umap``: its parameters, defaults and output.

    Writes ``obsm["X_umap"]``, ``uns["umap"] = {"params": {"a": ..., "b": ...}}`` (plus
    ``random_state`` when not 0) and unimap's record in ``uns["unimap"]["umap"]`` (or
    ``key_added`` for all three).

    Parameters
    ----------
    adata : anndata.AnnData
    min_dist : float, default=0.5
        scanpy's default (``unimap.UMAP`` and umap-learn default to 0.1).
    spread : float, default=1.0
    n_components : int, default=2
    maxiter : int or None, default=None
        Epochs of the optimization (``UMAP``'s ``n_epochs``): None gives 500 up to 10,000
        cells and 200 beyond, as scanpy.
    alpha : float, default=1.0
        The initial learning rate (``UMAP``'s ``learning_rate``).
    gamma : float, default=1.0
        The weight of the negative samples (``UMAP``'s ``repulsion_strength``).
    negative_sample_rate : int, default=5
    init_pos : {"spectral", "random"}, a key of ``adata.obsm`` or an array, \
default="spectral"
        The start (``UMAP``'s ``init``); an ``obsm`` key takes that embedding. scanpy's
        ``"paga"`` is not supported: pass the PAGA positions as an array.
    random_state : int, Generator or None, default=0
    a, b : float or None, default=None
        The low-dimensional kernel's parameters; None fits them to ``min_dist`` and
        ``spread``.
    key_added : str or None, default=None
    neighbors_key : str or None, default=None
        The neighbours to reuse: ``uns[neighbors_key]`` and its ``distances`` in ``obsp``.
        None: ``uns["neighbors"]`` when present (scanpy's default key), else unimap
        searches the neighbours itself (``n_neighbors``, default 15, as
        ``scanpy.pp.neighbors``), where scanpy would raise.
    copy : bool, default=False
    **kwargs
        :func:`embed`'s ``use_rep``, ``n_pcs``, ``use_neighbors`` and any parameter of
        :class:`unimap.UMAP` (``n_neighbors``, ``metric``, ``n_jobs``, ``verbose``, ...).

    Returns
    -------
    AnnData or None
        The copy when ``copy=True``, else None.

    Notes
    -----
    Differences from ``scanpy.tl.umap``: the graph's memberships are computed by unimap from
    scanpy's distances (equal to scanpy's connectivities for ``pp.neighbors``' default
    ``method="umap"``); without stored neighbours unimap searches them instead of raising;
    ``method="rapids"`` and ``init_pos="paga"`` are not offered. The optimizer is unimap's,
    so the same seed does not give umap-learn's embedding.

    Examples
    --------
    >>> import anndata, unimap
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> adata = anndata.AnnData(X[:500])
    >>> adata.obsm["X_pca"] = unimap.PCA(n_components=20).fit_transform(X[:500])
    >>> unimap.tl.umap(adata, random_state=0)  # scanpy's defaults (min_dist=0.5)
    >>> adata.obsm["X_umap"].shape, adata.obsm["X_umap"].dtype
    ((500, 2), dtype('float32'))
    >>> sorted(adata.uns["umap"]["params"])  # as scanpy writes it
    ['a', 'b']
    """
    _check_anndata(adata)
    if isinstance(init_pos, str) and init_pos == "paga":
        raise ValueError("init_pos='paga' is not supported: pass the PAGA positions as an "
                         "array (init_pos=...) or an obsm key")
    if isinstance(init_pos, str) and init_pos in adata.obsm:
        init_pos = np.asarray(adata.obsm[init_pos], dtype=np.float32)
    elif init_pos is None:
        init_pos = "spectral"
    _take_scanpy_names(kwargs, n_epochs=("maxiter", maxiter, None),
                       learning_rate=("alpha", alpha, 1.0),
                       repulsion_strength=("gamma", gamma, 1.0),
                       init=("init_pos", init_pos, "spectral"))
    return embed(adata, "umap", key_added=key_added, neighbors_key=neighbors_key, copy=copy,
                 random_state=random_state, min_dist=min_dist, spread=spread,
                 n_components=n_components, negative_sample_rate=negative_sample_rate,
                 a=a, b=b, **kwargs)


def tsne(
    adata: Any,
    n_pcs: int | None = None,
    *,
    use_rep: str | None = None,
    perplexity: float = 30,
    metric: str = "euclidean",
    early_exaggeration: float = 12,
    learning_rate: float = 1000,
    random_state: Any = 0,
    n_jobs: int | None = None,
    key_added: str | None = None,
    copy: bool = False,
    **kwargs: Any,
) -> Any:
    """t-SNE of an AnnData as ``scanpy.tl.tsne``: its parameters, defaults and output.

    Writes ``obsm["X_tsne"]``, ``uns["tsne"] = {"params": {"perplexity", "early_exaggeration",
    "learning_rate", "n_jobs", "metric"}}`` (plus ``use_rep`` when given) and unimap's
    record in ``uns["unimap"]["tsne"]`` (or ``key_added`` for all three).

    Parameters
    ----------
    adata : anndata.AnnData
    n_pcs : int or None, default=None
        The first ``n_pcs`` columns of the representation (``0``: ``X``).
    use_rep : str or None, default=None
        ``"X"`` or a key of ``obsm``. None: scanpy's rule, ``X`` when it has at most 50
        variables, else ``obsm["X_pca"]``, else the first 50 principal components (computed
        with a warning and stored, as scanpy does).
    perplexity : float, default=30
    metric : str, default="euclidean"
    early_exaggeration : float, default=12
    learning_rate : float, default=1000
        scanpy's fixed rate, the same in both phases (``unimap.TSNE`` defaults to ``"auto"``:
        ``max(n / 12 / 4, 50)`` during early exaggeration, ``max(n / 4, 50)`` after).
    random_state : int, Generator or None, default=0
    n_jobs : int or None, default=None
        Threads; None uses all cores (scanpy's None means its ``settings.n_jobs``). unimap's
        result does not depend on the thread count.
    key_added : str or None, default=None
    copy : bool, default=False
    **kwargs
        :func:`embed`'s ``neighbors_key`` and ``use_neighbors`` (scanpy's t-SNE never
        reuses neighbours, and by default neither does this) and any parameter of
        :class:`unimap.TSNE` (``max_iter``, ``init``, ``verbose``, ...).

    Returns
    -------
    AnnData or None
        The copy when ``copy=True``, else None.

    Notes
    -----
    Differences from ``scanpy.tl.tsne`` (scikit-learn's exact-gradient Barnes-Hut t-SNE):
    unimap's TSNE (Barnes-Hut below 10,000 cells, FFT beyond) runs 750 iterations by
    default against scikit-learn's 1000 (``max_iter``); wide data without ``X_pca`` gets
    unimap's PCA rather than scanpy's.

    Examples
    --------
    >>> import anndata, unimap
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> adata = anndata.AnnData(X[:500])
    >>> adata.obsm["X_pca"] = unimap.PCA(n_components=20).fit_transform(X[:500])
    >>> unimap.tl.tsne(adata, random_state=0)
    >>> adata.obsm["X_tsne"].shape
    (500, 2)
    >>> adata.uns["unimap"]["tsne"]["estimator"]
    'TSNE'
    """
    return embed(adata, "tsne", use_rep=use_rep, n_pcs=n_pcs, key_added=key_added, copy=copy,
                 random_state=random_state, perplexity=perplexity, metric=metric,
                 early_exaggeration=early_exaggeration, learning_rate=learning_rate,
                 n_jobs=-1 if n_jobs is None else n_jobs, **kwargs)


def gdr(adata: Any, *, normalized: bool = False, **kwargs: Any) -> Any:
    """:func:`embed` with ``method="gdr"`` (``obsm["X_gdr"]``; ``uns["gdr"]`` as UMAP's), or
    ``"gdr-tsne"`` with ``normalized=True`` (``obsm["X_gdr_tsne"]``; ``uns["gdr_tsne"]`` as
    t-SNE's), with ``unimap.GDR``'s defaults.

    Examples
    --------
    >>> import anndata, unimap
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> adata = anndata.AnnData(X[:500])
    >>> adata.obsm["X_pca"] = unimap.PCA(n_components=20).fit_transform(X[:500])
    >>> unimap.tl.gdr(adata, random_state=0)
    >>> unimap.tl.gdr(adata, normalized=True, random_state=0)  # t-SNE-like
    >>> sorted(key for key in adata.obsm if key.startswith("X_gdr"))
    ['X_gdr', 'X_gdr_tsne']
    """
    return embed(adata, "gdr-tsne" if normalized else "gdr", **kwargs)


def _take_scanpy_names(kwargs: dict, **names: tuple[str, Any, Any]) -> None:
    """Put each scanpy-named value into ``kwargs`` under unimap's name: ``name=(scanpy's
    name, its value, its default)``. Both names given is an error."""
    for name, (scanpy_name, value, default) in names.items():
        if name not in kwargs:
            kwargs[name] = value
        elif not (value is default
                  or (not isinstance(value, np.ndarray) and value == default)):
            raise TypeError(f"pass {scanpy_name} (scanpy's name) or {name}, not both")
