"""``GDR(normalized=False).fit`` of a dask array on a ``dask.distributed`` cluster: the rows
never come to the client.

What runs where (the estimator's pipeline, :class:`unimap.methods._base.NeighborEmbedding`,
asks a :class:`ClusterFit` for the phases that read the rows or dominate the time):

- **neighbors**: :func:`unimap.dask.knn_graph` on the workers (k-means shards searched by
  HNSW); its ``(n, k)`` indices and distances come to the client (``n·k·8`` bytes, against
  ``n·d·4`` for the rows).
- **affinities**: UMAP's fuzzy graph on the client from those arrays, as in memory.
- **init**: ``"spectral"`` on the client from the graph; ``"pca"``: the axes of the in-memory
  start's sample of rows (the same rows: only they come to the client), every row projected
  on its worker; ``"random"`` and arrays as in memory.
- **optimize**: the epochs on the workers (:mod:`unimap.dask.epochs`), bitwise the
  single-machine optimizer's.

So ``GDR(...).fit(X)`` on the cluster is bitwise ``GDR(precomputed_knn=graph, ...)
.fit(X.compute())`` with ``graph`` the cluster's kNN graph (the tests hold them equal), except
where a spectral start's graph has more connected components than the ± coordinate axes: the
centroids whose principal axes place them are summed per block on the workers
(:class:`ClusterRows`), equal to the in-memory sums up to rounding, not bitwise.

Not built yet: the affinities on the workers (the client holds the ``n·k`` graph), a
supervised fit, ``unique=True``, the normalized mode, UMAP and TSNE (they refuse a dask
array and name the recipes of ``docs/dask.md``); ``transform`` of a model fitted here (no
index of the training rows in this process).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from unimap.dask.sample import checked_rows

__all__ = ["ClusterFit", "fit_on_cluster"]


class ClusterFit:
    """How one fit uses the cluster: its client, the kNN graph's shards and probes, and the
    optimizer's row parts (see the module docstring).

    Parameters
    ----------
    client : distributed.Client, optional
        Default: the current client.
    n_shards, n_probe : int, optional
        As :func:`unimap.dask.knn_graph`.
    n_parts : int, optional
        Row ranges of the optimizer (:func:`unimap.dask.epochs.unnormalized_epochs_dask`);
        default one per worker. The result does not depend on it.

    Examples
    --------
    >>> import dask.array as da, unimap
    >>> from distributed import Client
    >>> client = Client(processes=False, n_workers=2, threads_per_worker=1,
    ...                 dashboard_address=None)
    >>> cluster = unimap.dask.ClusterFit(client, n_parts=4)
    >>> cluster.n_parts, len(cluster.client.scheduler_info()["workers"])
    (4, 2)
    >>> client.close()
    """

    def __init__(self, client: Any = None, *, n_shards: int | None = None,
                 n_probe: int | None = None, n_parts: int | None = None) -> None:
        from unimap.dask.epochs import required_client

        self.client = required_client(client)
        self.n_shards, self.n_probe, self.n_parts = n_shards, n_probe, n_parts

    def checked_input(self, estimator: Any, X: Any, y: Any) -> Any:
        """``X`` as the cluster fit takes it, or a ValueError naming what it cannot do."""
        from unimap.dask.knn_cells import METRICS
        from unimap.dask.transform import is_dask_collection

        name = type(estimator).__name__
        X = checked_rows(X, f"{name}.fit on a dask array")
        if y is not None:
            kind = "dask collection" if is_dask_collection(y) else "array"
            raise ValueError(f"{name}.fit of a dask array takes no y (got a {kind}): a "
                             "supervised fit on the cluster is not built; fit a sample "
                             "with its labels and place the rest (docs/dask.md)")
        if getattr(estimator, "unique", False):
            raise ValueError(f"{name}(unique=True) cannot fit a dask array: finding the "
                             "duplicate rows would gather them; fit with unique=False")
        if estimator.metric not in METRICS and estimator.precomputed_knn is None:
            raise ValueError(f"{name}.fit of a dask array builds its kNN graph on the cluster, "
                             f"which serves metric in {METRICS}, not {estimator.metric!r}")
        if estimator.device == "cuda":
            raise ValueError(f"{name}(device='cuda') cannot fit a dask array: the cluster "
                             "fit runs on the workers' CPUs; use device='auto' or 'cpu'")
        if X.shape[0] < 2:
            raise ValueError(f"{name} needs at least 2 samples, got {X.shape[0]} sample")
        return X

    def neighbors(self, X: Any, n_neighbors: int, metric: str,
                  seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The kNN graph of ``X``'s rows, built on the workers, in memory here."""
        from unimap.dask.knn import knn_graph

        graph = knn_graph(X, n_neighbors, metric=metric, n_shards=self.n_shards,
                          n_probe=self.n_probe, random_state=seed)
        indices, distances = graph.compute()
        return np.ascontiguousarray(indices), np.ascontiguousarray(distances)

    def initialize(self, init: Any, X: Any, graph: Any, n_components: int, seed: int,
                   scale: str) -> tuple[np.ndarray, dict]:
        """The start, as :func:`unimap.initialization.layouts.initialize` makes it in
        memory; ``"pca"`` projects the rows on their workers."""
        from unimap.initialization.layouts import (
            BOX_SIZE,
            INIT_STD,
            initialize,
            rescale_to_box,
            rescale_to_std,
        )

        if not (isinstance(init, str) and init == "pca"):
            return initialize(init, ClusterRows(X), graph, n_components, seed, scale)
        Y = pca_start(X, n_components, seed)
        Y = rescale_to_box(Y, BOX_SIZE) if scale == "box" else rescale_to_std(Y, INIT_STD)
        return Y, {"method": "pca", "fallback": None}

    def checked_worker_memory(self, estimator: Any, n: int, n_neighbors: int,
                              n_components: int) -> int:
        """The epochs' peak on the most loaded worker (bytes, :func:`worker_epoch_bytes` with
        P's rows bounded by ``2·(n_neighbors − 1)`` entries, the kNN union's largest, and
        Pᵀ's as many where it is stored), refused with an ``InsufficientMemoryError`` before
        any phase runs where a worker's memory in use plus that peak passes the fraction of
        its ``memory_limit`` at which dask pauses it. ``estimator.max_memory=None`` turns the
        refusal off; a worker without a limit is not checked. Returns the estimate."""
        import dask

        from unimap.dask.epochs import part_workers, row_parts, worker_epoch_bytes
        from unimap.runtime.dynamic_numba import ROW_BLOCK
        from unimap.runtime.memory import InsufficientMemoryError, format_bytes

        workers = self.client.scheduler_info()["workers"]
        names = sorted(workers)
        if not names:
            return 0
        n_parts = self.n_parts if self.n_parts is not None else len(names)
        # P's rows hold at most the kNN union's 2·(k − 1) entries; Pᵀ is stored beside P only
        # when P is directed (symmetrization="none") and the attraction symmetric
        directed = getattr(estimator, "symmetrization", None) == "none"
        per_row = 2 * max(n_neighbors - 1, 1) * (2 if directed else 1)
        ranges = row_parts(n, n_parts)
        parts: dict[str, list[int]] = {name: [] for name in names}
        for worker, (first, stop) in zip(part_workers(names, len(ranges)), ranges, strict=True):
            parts[worker].append(min(n, stop * ROW_BLOCK) - first * ROW_BLOCK)
        needs = {name: worker_epoch_bytes(n, n_components, rows, [r * per_row for r in rows],
                                          running=int(workers[name].get("nthreads", 1)))
                 for name, rows in parts.items()}
        if estimator.max_memory is None:
            return max(needs.values())
        fraction = (dask.config.get("distributed.worker.memory.pause", 0.8)
                    or dask.config.get("distributed.worker.memory.terminate", 0.95) or 1.0)
        for name in names:
            limit = workers[name].get("memory_limit") or 0
            used = int(workers[name].get("metrics", {}).get("memory", 0) or 0)
            if limit and used + needs[name] > fraction * limit:
                raise InsufficientMemoryError(
                    f"{type(estimator).__name__}'s epochs on the cluster would need about "
                    f"{format_bytes(needs[name])} on worker {name} (every part reads the "
                    f"positions of all {n} rows: {format_bytes(2 * n * n_components * 4)} "
                    f"per running task, whatever the number of parts; and its "
                    f"{len(parts[name])} part(s)' edges and rows), with "
                    f"{format_bytes(used)} in use there: more than the {fraction:.0%} of its "
                    f"memory_limit ({format_bytes(limit)}) at which dask pauses it. Give the "
                    "workers more memory, or more workers (or n_parts) to split the edges; "
                    "max_memory=None skips this check")
        return max(needs.values())

    def gdr_unnormalized(self, init: np.ndarray, P: Any, **options: Any) -> np.ndarray:
        """:func:`unimap.dask.epochs.gdr_unnormalized_dask` on this cluster (``options``:
        :func:`~unimap.optimizers.gdr.unnormalized.gdr_unnormalized`'s, ``device`` dropped)."""
        from unimap.dask.epochs import gdr_unnormalized_dask

        options.pop("device", None)
        return gdr_unnormalized_dask(init, P, n_parts=self.n_parts, client=self.client,
                                     **options)


class ClusterRows:
    """A dask array's rows as the spectral start reads them: the sums of the rows of each
    connected component (their centroids place the components), computed on the workers."""

    def __init__(self, X: Any) -> None:
        self.X = X

    def component_sums(self, labels: np.ndarray, n_labels: int) -> np.ndarray:
        """Per-label sums of the rows, float64 (n_labels, n_features): each block's on its
        worker (its labels sent with it), added on the client in block order."""
        import dask

        X = self.X
        offsets = np.concatenate([[0], np.cumsum(X.chunks[0])])
        blocks = X.to_delayed().ravel()
        parts = [dask.delayed(_block_label_sums)(block, labels[offsets[b]:offsets[b + 1]],
                                                 n_labels)
                 for b, block in enumerate(blocks)]
        sums = np.zeros((n_labels, X.shape[1]), dtype=np.float64)
        for part in dask.compute(*parts):
            sums += part
        return sums


def _block_label_sums(block: Any, labels: np.ndarray, n_labels: int) -> np.ndarray:
    from unimap.initialization.spectral import component_sums

    return component_sums(labels, n_labels, np.asarray(block))


def pca_start(X: Any, n_components: int, seed: int) -> np.ndarray:
    """:func:`unimap.initialization.layouts.pca_init` of a dask array: the axes fitted on the
    same rows (all of them up to ``PCA_INIT_FIT_ROWS``, else the same draw), which alone
    come to the client; every row projected on its worker, one by one."""
    from unimap.decomposition.pca import fit_pca
    from unimap.initialization.layouts import PCA_INIT_FIT_ROWS, padded_components
    from unimap.runtime.random_streams import spawn_seeds

    sample_seed, solver_seed, pad_seed = spawn_seeds(seed, 3)
    n, d = X.shape
    if n <= PCA_INIT_FIT_ROWS:
        sample = X.compute()
    else:
        rows = np.random.default_rng(sample_seed).choice(n, PCA_INIT_FIT_ROWS, replace=False)
        sample = X[np.sort(rows)].compute()
    sample = np.asarray(sample)
    if not np.issubdtype(sample.dtype, np.floating):
        sample = sample.astype(np.float32)
    k = min(n_components, sample.shape[0], d)
    axes = fit_pca(sample, k, seed=solver_seed)
    proj = X.map_blocks(partial(_projected_rows, axes=axes, dtype=sample.dtype),
                        chunks=(X.chunks[0], (k,)), dtype=np.float32).compute()
    return padded_components(np.ascontiguousarray(proj), n_components, pad_seed)


def _projected_rows(block: Any, axes: Any, dtype: np.dtype) -> np.ndarray:
    """One block's rows on the PCA start's axes (on a worker), each row on its own."""
    from unimap.decomposition.pca import project

    return project(np.asarray(block, dtype=dtype), axes, row_exact=True).astype(np.float32)


def fit_on_cluster(estimator: Any, X: Any, y: Any = None, *, client: Any = None,
                   n_shards: int | None = None, n_probe: int | None = None,
                   n_parts: int | None = None) -> Any:
    """Fit ``estimator`` (``GDR(normalized=False)``) to the dask array ``X`` on the cluster
    with these options (:class:`ClusterFit`; ``estimator.fit(X)`` uses the defaults).
    Returns the fitted estimator; ``embedding_`` is in memory on the client.

    Examples
    --------
    >>> import dask.array as da, numpy as np, unimap
    >>> from distributed import Client
    >>> client = Client(processes=False, n_workers=2, threads_per_worker=1,
    ...                 dashboard_address=None)
    >>> X = da.random.default_rng(0).standard_normal((3_000, 10), chunks=1_000)
    >>> model = unimap.dask.fit_on_cluster(unimap.GDR(n_epochs=50, random_state=0), X,
    ...                                    client=client, n_parts=3)
    >>> model.embedding_.shape, model.knn_method_, bool(np.isfinite(model.embedding_).all())
    ((3000, 2), 'dask_shards', True)
    >>> client.close()
    """
    cluster = ClusterFit(client, n_shards=n_shards, n_probe=n_probe, n_parts=n_parts)
    return estimator._fit(X, y, cluster=cluster)
