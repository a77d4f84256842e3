"""What UMAP's fit and placement SGD share: the pruned graph, each edge's sampling schedule
(its edges as colour classes for a fit, as CSR rows for ``transform``), the kernel's
parameters and the epoch loop (threads, guard, callback)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from unimap.optimizers.schedule import linear_decay
from unimap.runtime.threads import PARALLEL_MIN_ROWS, AdaptiveThreads, numba_threads

__all__ = ["prune_graph", "epochs_per_sample", "edge_classes", "fit_sampling_plan",
           "grouped_sampling_plan", "place_sampling_plan", "SGDSteps", "sgd_steps",
           "output_metric_code", "run_epochs"]


def prune_graph(graph: sp.csr_matrix, n_epochs: int,
                max_weight: float | None = None) -> sp.csr_matrix:
    """Drop edges too weak to be sampled even once in ``n_epochs`` (weight <
    max_weight / n_epochs; ``max_weight`` defaults to the graph's largest weight)."""
    graph = graph.copy()
    if graph.nnz:
        top = graph.data.max() if max_weight is None else max_weight
        graph.data[graph.data < top / float(n_epochs)] = 0.0
        graph.eliminate_zeros()
    return graph


def epochs_per_sample(weights: np.ndarray, n_epochs: int,
                      max_weight: float | None = None) -> np.ndarray:
    """Sampling period of each edge: an edge of weight ``max_weight`` (default: the
    heaviest) is sampled every epoch; -1 for an edge of weight 0 (never sampled)."""
    from unimap.optimizers.umap_sgd.epochs_numba import sampling_periods

    weights = np.ascontiguousarray(weights, dtype=np.float64)
    top = (weights.max() if weights.size else 1.0) if max_weight is None else max_weight
    return sampling_periods(weights, np.float64(n_epochs), np.float64(top))


def edge_classes(indptr: np.ndarray, indices: np.ndarray, n_vertices: int):
    """Directed edges sorted into vertex-disjoint colour classes.

    Returns
    -------
    heads, tails : int32 arrays of the edges in class order
    class_ptr : int64 array, class ``c`` is ``[class_ptr[c], class_ptr[c + 1])``
    order : positions of the class-ordered edges in the CSR edge list
    """
    from unimap.optimizers.umap_sgd.edge_coloring_numba import (
        edges_by_class,
        greedy_edge_coloring,
    )

    colors, n_colors = greedy_edge_coloring(indptr, indices, n_vertices)
    return edges_by_class(indptr, indices, colors, n_colors)


def _csr_periods(graph, n_epochs, max_weight):
    indptr = graph.indptr.astype(np.int64)
    indices = graph.indices.astype(np.int32, copy=False)
    eps = epochs_per_sample(graph.data.astype(np.float64), n_epochs, max_weight)
    return indptr, indices, eps


def _schedule(eps, negative_sample_rate):
    from unimap.optimizers.umap_sgd.epochs_numba import Schedule

    eps_neg = eps / negative_sample_rate
    return Schedule(eps, eps.copy(), eps_neg, eps_neg.copy())


def fit_sampling_plan(graph: sp.csr_matrix, n_epochs: int, negative_sample_rate: float):
    """A fit's edges grouped in classes that no two threads write at once
    (:class:`~unimap.optimizers.umap_sgd.epochs_numba.EdgeClasses`), their sampling
    :class:`~unimap.optimizers.umap_sgd.epochs_numba.Schedule` (epochs per sample and per
    negative sample, next epoch of each) and the edges' weights in the same order; the
    heaviest edge is sampled every epoch."""
    from unimap.optimizers.umap_sgd.epochs_numba import EdgeClasses

    indptr, indices, eps = _csr_periods(graph, n_epochs, None)
    heads, tails, class_ptr, order = edge_classes(indptr, indices, graph.shape[0])
    edges, eps, weights = EdgeClasses(heads, tails, class_ptr), eps[order], graph.data[order]
    return edges, _schedule(eps, negative_sample_rate), weights


def grouped_sampling_plan(graph: sp.csr_matrix, n_epochs: int, negative_sample_rate: float,
                          n_groups: int | None = None):
    """:func:`fit_sampling_plan` for the grouped epoch
    (:mod:`unimap.optimizers.umap_sgd.grouped_numba`, the GPU's): the edges in ``n_groups``
    groups (default ``EPOCH_GROUPS``), group ``g`` every ``n_groups``-th edge of the
    head-sorted list from the ``g``-th, so that every group spreads over all points
    (:class:`~unimap.optimizers.umap_sgd.grouped_numba.EdgeGroups`), no colouring needed."""
    from unimap.optimizers.umap_sgd.grouped_numba import EPOCH_GROUPS, EdgeGroups

    n_groups = EPOCH_GROUPS if n_groups is None else n_groups
    indptr, indices, eps = _csr_periods(graph, n_epochs, None)
    nnz = indices.shape[0]
    order = np.concatenate([np.arange(g, nnz, n_groups) for g in range(n_groups)])
    group_ptr = np.zeros(n_groups + 1, np.int64)
    group_ptr[1:] = np.cumsum([len(range(g, nnz, n_groups)) for g in range(n_groups)])
    heads = np.repeat(np.arange(graph.shape[0], dtype=np.int32), np.diff(indptr))
    edges = EdgeGroups(np.ascontiguousarray(heads[order]), np.ascontiguousarray(indices[order]),
                       group_ptr)
    return edges, _schedule(eps[order], negative_sample_rate), graph.data[order]


def place_sampling_plan(graph: sp.csr_matrix, n_epochs: int, max_weight: float | None,
                        negative_sample_rate: float):
    """``transform``'s edges as CSR rows
    (:class:`~unimap.optimizers.umap_sgd.epochs_numba.EdgeRows`) and their sampling
    schedule, an edge of ``max_weight`` (default: the heaviest) sampled every epoch."""
    from unimap.optimizers.umap_sgd.epochs_numba import EdgeRows

    indptr, indices, eps = _csr_periods(graph, n_epochs, max_weight)
    return EdgeRows(indptr, indices), _schedule(eps, negative_sample_rate)


class SGDSteps(NamedTuple):
    """The kernel's parameters (:class:`~unimap.optimizers.umap_sgd.epochs_numba.SGDKernel`,
    float32), the negative samples' seed (uint64) and every epoch's float32 step."""

    kernel: Any
    seed: np.uint64
    alphas: list


def sgd_steps(a: float, b: float, repulsion_strength: float, seed: int, learning_rate: float,
              n_epochs: int) -> SGDSteps:
    """:class:`SGDSteps` of a run: the step decays linearly from ``learning_rate`` to 0."""
    from unimap.optimizers.umap_sgd.epochs_numba import SGDKernel

    f32 = np.float32
    return SGDSteps(SGDKernel(f32(a), f32(b), f32(repulsion_strength)), np.uint64(seed),
                    linear_decay(learning_rate, n_epochs))


def output_metric_code(output_metric: str, densmap: bool, device: str) -> int:
    """0 for the euclidean kernels, else the code of
    :data:`unimap.optimizers.umap_sgd.output_metric_numba.OUTPUT_METRICS`."""
    if output_metric in ("euclidean", "l2"):
        return 0
    from unimap.optimizers.umap_sgd.output_metric_numba import OUTPUT_METRICS

    if output_metric not in OUTPUT_METRICS:
        raise ValueError(f"output_metric must be 'euclidean', 'haversine' or 'hyperboloid', "
                         f"got {output_metric!r}")
    if densmap or device == "cuda":
        raise ValueError(f"output_metric={output_metric!r} runs on the CPU, without densMAP")
    return OUTPUT_METRICS[output_metric]


def run_epochs(emb: np.ndarray, n_epochs: int, epoch_step: Callable[[int], None],
               guard: Any = None, relabel: np.ndarray | None = None,
               callback: Callable[[int, np.ndarray], None] | None = None) -> None:
    """Run ``epoch_step(epoch)`` for every epoch on the CPU, then check ``emb`` with ``guard``
    (rows named through ``relabel``) and call ``callback(epoch, emb)``. Few rows run on one
    thread, since waking the pool each epoch costs more than the work; more run on adaptive
    threads (:class:`unimap.runtime.threads.AdaptiveThreads`)."""
    parallel = emb.shape[0] >= PARALLEL_MIN_ROWS
    with numba_threads(None) as max_threads:
        threads = AdaptiveThreads(max_threads if parallel else 1)
        with threads.spread():
            for epoch in range(n_epochs):
                threads.start_epoch(epoch)
                epoch_step(epoch)
                threads.end_epoch()
                if guard is not None:
                    guard.check(epoch, emb, relabel)
                if callback is not None:
                    callback(epoch, emb)
