"""UMAP's SGD for ``transform``: new points moved against a fixed embedding.

:func:`umap_sgd_place` is the entry point :func:`unimap.placement.fuzzy_placement` calls. The
training embedding does not move, so each new point (row) is independent of the others: its
edges point into the fixed ``tail``, its draws are keyed by the row's identity (``row_keys``),
and its result does not depend on the batch it comes in. Rows run in parallel on the CPU
(:func:`unimap.optimizers.umap_sgd.epochs_numba.sgd_epoch_rows`) or one thread each on the
GPU (:func:`unimap.optimizers.umap_sgd.epochs_cuda.umap_sgd_place_cuda`), both through
:func:`unimap.optimizers.umap_sgd.epochs_numba.place_row`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.optimizers.umap_sgd.common import (
    output_metric_code,
    place_sampling_plan,
    run_epochs,
    sgd_steps,
)

__all__ = ["umap_sgd_place"]


def umap_sgd_place(
    head: np.ndarray,
    tail: np.ndarray,
    graph: sp.csr_matrix,
    *,
    n_epochs: int,
    a: float,
    b: float,
    seed: int,
    learning_rate: float = 1.0,
    repulsion_strength: float = 1.0,
    negative_sample_rate: float = 5.0,
    row_keys: np.ndarray | None = None,
    max_weight: float | None = None,
    guard: Any = None,
    device: str = "cpu",
    output_metric: str = "euclidean",
) -> np.ndarray:
    """Optimize the new points ``head`` with UMAP's SGD along the edges of ``graph`` into the
    fixed ``tail``.

    Parameters
    ----------
    head : ndarray of shape (m, dim), float32
        Initial positions of the new points (not modified).
    tail : ndarray of shape (n, dim)
        The fixed embedding that the edges point to.
    graph : csr_matrix of shape (m, n)
        Edge weights (already pruned:
        :func:`unimap.optimizers.umap_sgd.common.prune_graph`).
    n_epochs, a, b, seed, learning_rate, repulsion_strength, negative_sample_rate
        As in :func:`unimap.optimizers.umap_sgd.fit.umap_sgd_fit`.
    row_keys : ndarray of shape (m,), uint64, optional
        Identity of each row in the random stream (default: the row number).
    max_weight : float, optional
        The weight sampled every epoch (default: the graph's largest); fixed, so that a new
        point's sampling does not depend on the other points of its batch.
    guard : :class:`unimap.runtime.guards.FiniteGuard`, optional
        Checks the embedding after every epoch (on the GPU: once, after the last).
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"``: the epochs run on the GPU
        (:func:`unimap.optimizers.umap_sgd.epochs_cuda.umap_sgd_place_cuda`, the same row code).
    output_metric : {"euclidean", "haversine", "hyperboloid"}, default="euclidean"
        The space of the embedding (:mod:`unimap.optimizers.umap_sgd.output_metric_numba`;
        CPU only).

    Returns
    -------
    embedding : ndarray of shape (m, dim), float32
    """
    emb = np.ascontiguousarray(head, dtype=np.float32).copy()
    graph = sp.csr_matrix(graph)
    rows, schedule = place_sampling_plan(graph, n_epochs, max_weight, negative_sample_rate)
    if row_keys is None:
        row_keys = np.arange(emb.shape[0], dtype=np.uint64)
    kernel, seed, alphas = sgd_steps(a, b, repulsion_strength, seed, learning_rate, n_epochs)
    metric = output_metric_code(output_metric, False, device)
    if device == "cuda":  # (a non-euclidean output_metric was refused there)
        from unimap.optimizers.umap_sgd.epochs_cuda import umap_sgd_place_cuda

        return umap_sgd_place_cuda(emb, tail, rows, schedule, kernel.a, kernel.b, kernel.gamma,
                                   seed, alphas, row_keys, guard)
    if metric:
        from unimap.optimizers.umap_sgd.output_metric_numba import sgd_epoch_rows_metric

        def epoch_step(epoch: int) -> None:
            sgd_epoch_rows_metric(emb, tail, rows, schedule, kernel, row_keys, seed, epoch,
                                  alphas[epoch], np.int64(metric))
    else:
        from unimap.optimizers.umap_sgd.epochs_numba import sgd_epoch_rows

        def epoch_step(epoch: int) -> None:
            sgd_epoch_rows(emb, tail, rows, schedule, kernel, row_keys, seed, epoch,
                           alphas[epoch])

    run_epochs(emb, n_epochs, epoch_step, guard)
    return emb
