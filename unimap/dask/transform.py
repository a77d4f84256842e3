"""Past one machine: ``transform`` of a ``dask.array``.

Dask is an optional extra (``pip install 'unimap[dask]'``); it is imported only when a dask
object reaches unimap, never by ``import unimap`` (a dask array is recognised by the module of
its type).

- ``est.transform(X)`` of a fitted ``PCA``, ``UMAP``, ``TSNE`` or ``GDR`` takes a
  ``dask.array.Array`` of shape (m, n_features) and returns a lazy ``dask.array.Array`` of
  shape (m, n_components), float32, chunked by rows like ``X``. Each block is placed on a
  worker by the estimator's own ``transform`` (:meth:`_transform`), and a new point is placed
  on its own against the fixed embedding, so a block's rows land where the NumPy
  ``transform`` of that block puts them, bitwise (``tests/dask/test_dask.py``).
- The model goes to the cluster once: a light copy (without ``graph_``, ``knn_indices_`` and
  ``knn_dists_``, which ``transform`` does not read) is one node of the graph
  (``dask.delayed``), or, when a ``distributed.Client`` is current, scattered to every worker
  (a worker lost then loses no model);
  every block's task depends on that one key, so a worker deserialises the model once, not
  once per block.

Fitting on a sample and the streamed moments of ``PCA().fit`` are in :mod:`unimap.dask.sample`;
the kNN graph of a dask array built on the cluster is in :mod:`unimap.dask.knn`.
"""

from __future__ import annotations

import copy
import sys
import uuid
from typing import Any

import numpy as np

from unimap.runtime.user_warnings import warn_user
from unimap.runtime.validation import is_dask_collection

__all__ = ["is_dask_collection", "transform_blocks", "check_numeric_matrix"]


_NOT_SHIPPED = ("graph_", "knn_indices_", "knn_dists_")  # fitted, but transform never reads them


def transform_blocks(estimator: Any, X: Any, options: dict, n_features: int,
                     n_jobs: int | None = None) -> Any:
    """The lazy ``transform`` of a dask array (see the module docstring).

    Parameters
    ----------
    estimator : fitted PCA, UMAP, TSNE or GDR
    X : dask.array.Array of shape (m, n_features)
    options : dict
        Keyword arguments of the estimator's ``_transform`` (TSNE's placement options).
    n_features : int
        The number of columns ``X`` must have.
    n_jobs : int or None, default=None
        Threads of each block's placement on its worker; None: the worker's thread count
        (``os.cpu_count()`` outside a ``distributed`` worker). The placement's numba
        kernels hold the GIL, so the blocks a worker runs side by side on its threads take
        turns in them, and each turn should use all the worker's threads.

    Returns
    -------
    embedding : dask.array.Array of shape (m, n_components)
        float32 (PCA: float64 for float64 input, as its NumPy ``transform``).
    """
    name = type(estimator).__name__
    check_numeric_matrix(X, f"{name}.transform")
    estimator._check_n_features(X, n_features)
    estimator._check_feature_names(None)  # a dask array has no column names
    if X.numblocks[1] > 1:
        warn_user(f"{name}.transform places whole rows: the dask array's {X.numblocks[1]} "
                  "column chunks are joined into one (X.rechunk({1: -1})); chunk by rows "
                  "only to avoid the extra step", UserWarning)
        X = X.rechunk({1: -1})
    width = estimator._n_features_out
    dtype = estimator._transform_dtype(X.dtype)
    model = _ship(_without_graph(estimator), name)
    return X.map_blocks(_place_block, model, options, n_jobs, dtype=dtype,
                        chunks=(X.chunks[0], (width,)), meta=np.empty((0, width), dtype=dtype),
                        name=f"unimap-{name.lower()}-transform-{uuid.uuid4().hex}")


def check_numeric_matrix(X: Any, what: str) -> None:
    """A 2-D ``dask.array.Array`` of numbers, or an error naming ``what`` needs it."""
    import dask.array as da

    if not isinstance(X, da.Array):
        raise TypeError(f"{what} takes a dask.array.Array, got {type(X).__module__}."
                        f"{type(X).__qualname__}; a dask DataFrame becomes one with "
                        "df.to_dask_array(lengths=True)")
    if X.ndim != 2:
        raise ValueError(f"{what} needs a 2-D dask array, got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{what} needs numeric data, got dtype {X.dtype}")


def _place_block(block: Any, model: Any, options: dict, n_jobs: int | None) -> np.ndarray:
    """One block's placement, on a worker."""
    if block.shape[0] == 0:
        return np.empty((0, model._n_features_out), model._transform_dtype(block.dtype))
    threads = worker_threads() if n_jobs is None else n_jobs
    return _with_threads(model, threads)._transform(block, **options)


def worker_threads() -> int:
    """The thread count of the ``distributed`` worker running this task, else the cores."""
    import os

    if "distributed" in sys.modules:
        from distributed import get_worker

        try:
            return get_worker().state.nthreads
        except ValueError:  # not in a worker
            pass
    return os.cpu_count() or 1


def _without_graph(estimator: Any) -> Any:
    """A shallow copy of the fitted estimator without the attributes ``transform`` never
    reads (the kNN graph and ``graph_``: most of a model's bytes besides the index)."""
    model = copy.copy(estimator)
    for attr in _NOT_SHIPPED:
        model.__dict__.pop(attr, None)
    return model


def _with_threads(estimator: Any, n_jobs: int) -> Any:
    """A shallow copy (cheap: the arrays are shared) placing on ``n_jobs`` threads: the
    fit's thread count belongs to the client's machine, and the model on a worker is shared
    by the blocks, so it is not changed in place."""
    from unimap.runtime.threads import resolve_n_jobs

    threads = resolve_n_jobs(n_jobs)
    model = copy.copy(estimator)
    if "n_jobs" in model.__dict__:
        model.n_jobs = threads
    index = model.__dict__.get("_index")
    if index is not None:
        model._index = index.with_threads(threads)
    return model


def _ship(model: Any, name: str) -> Any:
    """The model as one piece of the graph: scattered when a distributed client is current
    (it then travels outside the graph, which stays small), else a ``dask.delayed`` node."""
    client = _current_client()
    if client is not None:
        # on every worker: a model held by one worker was lost with it, and every block
        # failed with FutureCancelledError; each worker that places a block needs
        # the model anyway
        return client.scatter(model, hash=False, broadcast=True)
    import dask

    return dask.delayed(model, name=f"unimap-{name.lower()}-model-{uuid.uuid4().hex}",
                        traverse=False)


def _current_client() -> Any:
    if "distributed" not in sys.modules:  # no client without distributed imported
        return None
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        return None
