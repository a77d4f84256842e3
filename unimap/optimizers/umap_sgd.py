"""UMAP's optimizer: edge-sampled SGD with negative sampling, on the CPU or the GPU.

Edges are sampled in proportion to their weight (``epochs_per_sample``), grouped into
vertex-disjoint colour classes (``edge_classes``) so that threads never write the same point,
which makes the result the same for any thread count. ``umap_sgd`` is the one entry point:
it chooses the epoch kernel (2-D, 2-D with pooled negatives, n-D; rows for ``transform``) and
the device (:mod:`unimap.optimizers.umap_sgd_cuda` for ``device="cuda"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.optimizers import sampling
from unimap.optimizers.schedule import linear_decay
from unimap.runtime.ordering import in_input_order, locality_order, relabelled
from unimap.runtime.threads import (
    PARALLEL_MIN_ROWS,
    AdaptiveThreads,
    numba_threads,
)
from unimap.runtime.validation import check_int

__all__ = ["prune_graph", "epochs_per_sample", "edge_classes", "umap_sgd"]


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
    from unimap.optimizers.umap_sgd_numba import sampling_periods

    weights = np.ascontiguousarray(weights, dtype=np.float64)
    top = (weights.max() if weights.size else 1.0) if max_weight is None else max_weight
    return sampling_periods(weights, np.float64(n_epochs), np.float64(top))


def umap_sgd(
    head: np.ndarray,
    tail: np.ndarray | None,
    graph: sp.csr_matrix,
    n_epochs: int,
    a: float,
    b: float,
    seed: int,
    learning_rate: float = 1.0,
    repulsion_strength: float = 1.0,
    negative_sample_rate: float = 5.0,
    row_keys: np.ndarray | None = None,
    callback: Callable[[int, np.ndarray], None] | None = None,
    max_weight: float | None = None,
    guard: Any = None,
    device: str = "cpu",
    negative_pool: int | None = None,
    density: DensityPlan | None = None,
    output_metric: str = "euclidean",
) -> np.ndarray:
    """Optimize ``head`` with UMAP's SGD over the edges of ``graph`` (rows = head points).

    Parameters
    ----------
    head : ndarray of shape (n_rows, dim), float32
        Initial positions of the points being moved (not modified).
    tail : ndarray of shape (n_tail, dim) or None
        Fixed positions that edges point to (``transform``); None when fitting, where edges
        point into ``head`` itself, which must then be symmetric.
    graph : csr_matrix of shape (n_rows, n_tail)
        Edge weights (already pruned).
    n_epochs : int
    a, b : float
        Low-dimensional kernel ``1 / (1 + a d^(2b))``.
    seed : int
        Seed of the counter-based negative sampling.
    learning_rate : float, default=1.0
        Initial step, decayed linearly to 0.
    repulsion_strength : float, default=1.0
    negative_sample_rate : float, default=5
        Negative samples per attraction sample.
    row_keys : ndarray of shape (n_rows,), uint64, optional
        Identity of each row in the random stream (default: the row number).
    callback : callable(epoch, embedding), optional
        Called after each epoch with the current positions (do not modify).
    max_weight : float, optional
        The weight sampled every epoch (default: the graph's largest). ``transform`` fixes
        it so that a new point's sampling does not depend on the other points of its batch.
    guard : :class:`unimap.runtime.guards.FiniteGuard`, optional
        Checks the embedding after every epoch.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"``: the epochs run on the GPU (:mod:`unimap.optimizers.umap_sgd_cuda`, the same
        edge and row code), except those of ``transform`` (``tail`` given) with a
        ``callback`` or a non-euclidean ``output_metric``, which run on the CPU.
    negative_pool : int, optional
        Fitting in 2-D on the CPU: each block of edges draws its negative samples from a
        pool of this many points (0: every sample from all points). Default:
        :func:`unimap.optimizers.sampling.default_negative_pool`.
    density : :class:`DensityPlan`, optional
        densMAP: its last epochs (``frac`` of them) add the density gradient
        (:mod:`unimap.optimizers.densmap_numba`); fitting on the CPU only.
    output_metric : {"euclidean", "haversine", "hyperboloid"}, default="euclidean"
        The space of the embedding (:mod:`unimap.optimizers.output_metric_numba`; CPU only,
        without ``density``).

    Returns
    -------
    embedding : ndarray of shape (n_rows, dim), float32
    """
    from unimap.optimizers.umap_sgd_numba import (
        SGDKernel,
        sgd_epoch_edges_2d,
        sgd_epoch_edges_2d_pooled,
        sgd_epoch_edges_nd,
        sgd_epoch_rows,
    )
    from unimap.runtime.dynamic_numba import workers

    if negative_pool is not None:
        negative_pool = check_int(negative_pool, "negative_pool", 0)
    emb = np.ascontiguousarray(head, dtype=np.float32).copy()
    graph = sp.csr_matrix(graph)
    relabel = None
    if tail is None and emb.shape[0] >= PARALLEL_MIN_ROWS:
        emb, graph, relabel = _relabel_for_locality(emb, graph)
        if callback is not None:
            callback = _in_original_order(callback, relabel)
    edges, schedule, edge_weights = _sampling_plan(graph, tail is None, n_epochs, max_weight,
                                                   negative_sample_rate)
    if row_keys is None:
        row_keys = np.arange(emb.shape[0], dtype=np.uint64)
    f32 = np.float32
    a, b, gamma = f32(a), f32(b), f32(repulsion_strength)
    kernel = SGDKernel(a, b, gamma)
    seed = np.uint64(seed)
    alphas = linear_decay(learning_rate, n_epochs)
    metric = _output_metric_code(output_metric, density, device)
    if device == "cuda" and tail is None:
        from unimap.optimizers.umap_sgd_cuda import umap_sgd_cuda

        if density is not None:
            raise ValueError("densMAP's epochs have no CUDA kernels; run them with "
                             "device='cpu'")

        emb = umap_sgd_cuda(emb, edges, schedule, n_epochs, a, b, gamma, seed, alphas, guard,
                            relabel, callback)
        return emb if relabel is None else in_input_order(emb, relabel)
    if device == "cuda" and tail is not None and not metric and callback is None:
        from unimap.optimizers.umap_sgd_cuda import umap_sgd_rows_cuda

        return umap_sgd_rows_cuda(emb, tail, edges, schedule, a, b, gamma, seed, alphas,
                                  row_keys, guard)
    snapshot = np.empty_like(emb)
    if negative_pool is None:
        negative_pool = sampling.default_negative_pool(emb.shape[0])
    if metric:
        from unimap.optimizers.output_metric_numba import (
            sgd_epoch_edges_metric,
            sgd_epoch_rows_metric,
        )

        fit_epoch, pool_args = sgd_epoch_edges_metric, (np.int64(metric),)
    elif emb.shape[1] != 2:
        fit_epoch, pool_args = sgd_epoch_edges_nd, ()
    elif negative_pool > 0:
        fit_epoch, pool_args = sgd_epoch_edges_2d_pooled, (np.int64(negative_pool),)
    else:
        fit_epoch, pool_args = sgd_epoch_edges_2d, ()
    term, densmap_from = None, n_epochs
    if density is not None and tail is None:
        from unimap.optimizers.densmap_numba import density_stats, sgd_epoch_edges_densmap

        term = density.term(edge_weights, emb.shape[0], relabel)
        densmap_from = density.first_epoch(n_epochs)
    parallel = emb.shape[0] >= PARALLEL_MIN_ROWS
    with numba_threads(None) as max_threads:
        # Few rows: one thread, since waking the pool each epoch costs more than the work.
        threads = AdaptiveThreads(max_threads if parallel else 1)
        with threads.spread():
            for epoch in range(n_epochs):
                threads.start_epoch(epoch)
                alpha = alphas[epoch]
                if tail is None and epoch >= densmap_from:
                    snapshot[:] = emb
                    density_stats(emb, edges.heads, edges.tails, a, b,
                                  density.var_shift, term)
                    sgd_epoch_edges_densmap(emb, snapshot, edges, schedule, kernel, term, seed,
                                            epoch, alpha, np.int64(workers()))
                elif tail is None:
                    snapshot[:] = emb
                    fit_epoch(emb, snapshot, edges, schedule, kernel, seed, epoch, alpha,
                              np.int64(workers()), *pool_args)
                elif metric:
                    sgd_epoch_rows_metric(emb, tail, edges, schedule, kernel, row_keys, seed,
                                          epoch, alpha, np.int64(metric))
                else:
                    sgd_epoch_rows(emb, tail, edges, schedule, kernel, row_keys, seed, epoch,
                                   alpha)
                threads.end_epoch()
                if guard is not None:
                    guard.check(epoch, emb, relabel)
                if callback is not None:
                    callback(epoch, emb)
    return emb if relabel is None else in_input_order(emb, relabel)


def _output_metric_code(output_metric: str, density, device: str) -> int:
    """0 for the euclidean kernels, else the code of
    :data:`unimap.optimizers.output_metric_numba.OUTPUT_METRICS`."""
    if output_metric in ("euclidean", "l2"):
        return 0
    from unimap.optimizers.output_metric_numba import OUTPUT_METRICS

    if output_metric not in OUTPUT_METRICS:
        raise ValueError(f"output_metric must be 'euclidean', 'haversine' or 'hyperboloid', "
                         f"got {output_metric!r}")
    if density is not None or device == "cuda":
        raise ValueError(f"output_metric={output_metric!r} runs on the CPU, without densMAP")
    return OUTPUT_METRICS[output_metric]


def _sampling_plan(graph, fitting, n_epochs, max_weight, negative_sample_rate):
    """The edge arrays an epoch kernel walks, its sampling schedule (epochs per sample
    and per negative sample, next epoch of each) and the edges' weights in the same order:
    when fitting, the edges grouped in classes that no two threads write at once (heads,
    tails, class_ptr); else the CSR rows."""
    from unimap.optimizers.umap_sgd_numba import EdgeClasses, EdgeRows, Schedule

    indptr = graph.indptr.astype(np.int64)
    indices = graph.indices.astype(np.int32, copy=False)
    eps = epochs_per_sample(graph.data.astype(np.float64), n_epochs, max_weight)
    weights = graph.data
    if fitting:
        heads, tails, class_ptr, order = edge_classes(indptr, indices, graph.shape[0])
        edges, eps, weights = EdgeClasses(heads, tails, class_ptr), eps[order], weights[order]
    else:
        edges = EdgeRows(indptr, indices)
    eps_neg = eps / negative_sample_rate
    return edges, Schedule(eps, eps.copy(), eps_neg, eps_neg.copy()), weights


@dataclass(frozen=True)
class DensityPlan:
    """densMAP's settings for :func:`umap_sgd`: the data's standardised log radii ``R`` (in
    input order), ``lam`` (``dens_lambda``), ``frac`` (the share of epochs, at the end, with
    the density term: ``dens_frac``) and ``var_shift`` (``dens_var_shift``)."""

    R: np.ndarray
    lam: float
    frac: float
    var_shift: float

    def first_epoch(self, n_epochs: int) -> int:
        """The first epoch with the term: umap-learn's ``(epoch + 1) / n_epochs > 1 - frac``
        (none when ``lam`` is 0)."""
        if self.lam <= 0:
            return n_epochs
        epochs = np.arange(n_epochs)
        late = np.flatnonzero((epochs + 1) / float(n_epochs) > 1.0 - self.frac)
        return int(late[0]) if late.size else n_epochs

    def term(self, weights: np.ndarray, n: int, relabel: np.ndarray | None):
        """The kernel's :class:`unimap.optimizers.densmap_numba.DensityTerm` for edges of
        ``weights`` over ``n`` points (relabelled like the embedding when ``relabel``)."""
        from unimap.optimizers.densmap_numba import DensityTerm

        R = self.R if relabel is None else self.R[relabel]
        f32 = np.float32
        return DensityTerm(np.ascontiguousarray(weights, dtype=f32),
                           np.ascontiguousarray(R, dtype=f32), np.zeros(n, f32),
                           np.zeros(n, f32), np.zeros(3), f32(self.lam),
                           f32(float(np.sum(weights, dtype=np.float64)) / n))


def _relabel_for_locality(emb: np.ndarray, graph: sp.csr_matrix):
    """Points relabelled along a Z-order curve of their positions, so that most edges join
    points close in memory and threads write mostly their own cache lines (MNIST-70k, 2
    threads: edges crossing the middle of the point range 0.49 -> 0.07, SGD 5.8 -> 3.9 s
    while cache lines were slow to move between cores)."""
    relabel = locality_order(emb)
    return np.ascontiguousarray(emb[relabel]), relabelled(graph, relabel), relabel


def _in_original_order(callback: Callable[[int, np.ndarray], None], relabel: np.ndarray):
    """Wrap ``callback`` so that it sees the rows of a relabelled embedding in input order."""
    def wrapped(epoch: int, emb: np.ndarray) -> None:
        callback(epoch, in_input_order(emb, relabel))

    return wrapped


def edge_classes(indptr: np.ndarray, indices: np.ndarray, n_vertices: int):
    """Directed edges sorted into vertex-disjoint colour classes.

    Returns
    -------
    heads, tails : int32 arrays of the edges in class order
    class_ptr : int64 array, class ``c`` is ``[class_ptr[c], class_ptr[c + 1])``
    order : positions of the class-ordered edges in the CSR edge list
    """
    from unimap.optimizers.edge_coloring_numba import edges_by_class, greedy_edge_coloring

    colors, n_colors = greedy_edge_coloring(indptr, indices, n_vertices)
    return edges_by_class(indptr, indices, colors, n_colors)
