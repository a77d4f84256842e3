"""UMAP's SGD for a fit: every point moves, both ends of each sampled edge.

:func:`umap_sgd_fit` is the entry point :class:`unimap.methods.umap.UMAP` calls: it chooses
the epoch kernel (2-D, 2-D with pooled negatives, n-D; densMAP's last epochs; a non-euclidean
output space) and the device (:mod:`unimap.optimizers.umap_sgd.epochs_cuda` for
``device="cuda"``). Large inputs are relabelled along a Z-order curve of their start, so that
most edges join points close in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.optimizers import sampling
from unimap.optimizers.umap_sgd.common import (
    fit_sampling_plan,
    grouped_sampling_plan,
    output_metric_code,
    run_epochs,
    sgd_steps,
)
from unimap.runtime.ordering import in_input_order, locality_order, relabelled
from unimap.runtime.threads import PARALLEL_MIN_ROWS
from unimap.runtime.validation import check_int

__all__ = ["umap_sgd_fit", "umap_sgd_fit_memory", "DensityPlan"]

BYTES_PER_EDGE = 108
"""The SGD's per-edge schedules over the pruned graph and its head/tail/weight arrays, bytes
per kNN edge, set from measured peaks so that the estimate stays above them (measured:
benchmarks/results/scale_umap.md, fit_memory.md; its history: architecture_notes.md)."""


def umap_sgd_fit_memory(n_samples: int, n_edges: int, n_components: int) -> int:
    """Bytes :func:`umap_sgd_fit` allocates for a fit of ``n_samples`` points, ``n_edges``
    kNN edges (n × k) and ``n_components`` dimensions (the memory estimate's optimizer
    phase)."""
    return n_edges * BYTES_PER_EDGE + n_samples * n_components * 16


def umap_sgd_fit(
    init: np.ndarray,
    graph: sp.csr_matrix,
    *,
    n_epochs: int,
    a: float,
    b: float,
    seed: int,
    learning_rate: float = 1.0,
    repulsion_strength: float = 1.0,
    negative_sample_rate: float = 5.0,
    callback: Callable[[int, np.ndarray], None] | None = None,
    guard: Any = None,
    device: str = "cpu",
    negative_pool: int | None = None,
    density: DensityPlan | None = None,
    output_metric: str = "euclidean",
) -> np.ndarray:
    """Optimize ``init`` with UMAP's SGD over the edges of ``graph``.

    Parameters
    ----------
    init : ndarray of shape (n, dim), float32
        Initial positions (not modified).
    graph : csr_matrix of shape (n, n)
        Edge weights, symmetric (already pruned:
        :func:`unimap.optimizers.umap_sgd.common.prune_graph`).
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
    callback : callable(epoch, embedding), optional
        Called after each epoch with the current positions, in input order (do not modify).
    guard : :class:`unimap.runtime.guards.FiniteGuard`, optional
        Checks the embedding after every epoch.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"``: the epochs run on the GPU (:mod:`unimap.optimizers.umap_sgd.epochs_cuda`),
        in edge groups whose moves are summed (:mod:`unimap.optimizers.umap_sgd.grouped_numba`:
        the same quality as the CPU's epochs on MNIST, not the same numbers).
    negative_pool : int, optional
        In 2-D on the CPU: each block of edges draws its negative samples from a pool of
        this many points (0: every sample from all points). Default:
        :func:`unimap.optimizers.sampling.default_negative_pool`.
    density : :class:`DensityPlan`, optional
        densMAP: its last epochs (``frac`` of them) add the density gradient
        (:mod:`unimap.optimizers.umap_sgd.densmap_numba`); on the CPU only.
    output_metric : {"euclidean", "haversine", "hyperboloid"}, default="euclidean"
        The space of the embedding (:mod:`unimap.optimizers.umap_sgd.output_metric_numba`;
        CPU only, without ``density``).

    Returns
    -------
    embedding : ndarray of shape (n, dim), float32, in the input's row order
    """
    from unimap.optimizers.umap_sgd.epochs_numba import (
        sgd_epoch_edges_2d,
        sgd_epoch_edges_2d_pooled,
        sgd_epoch_edges_nd,
    )
    from unimap.runtime.dynamic_numba import workers

    if negative_pool is not None:
        negative_pool = check_int(negative_pool, "negative_pool", 0)
    emb = np.ascontiguousarray(init, dtype=np.float32).copy()
    graph = sp.csr_matrix(graph)
    relabel = None
    if emb.shape[0] >= PARALLEL_MIN_ROWS:
        emb, graph, relabel = _relabel_for_locality(emb, graph)
        if callback is not None:
            callback = _in_original_order(callback, relabel)
    kernel, seed, alphas = sgd_steps(a, b, repulsion_strength, seed, learning_rate, n_epochs)
    metric = output_metric_code(output_metric, density is not None, device)
    if device == "cuda":
        from unimap.optimizers.umap_sgd.epochs_cuda import umap_sgd_fit_cuda

        if density is not None:
            raise ValueError("densMAP's epochs have no CUDA kernels; run them with "
                             "device='cpu'")
        # the GPU's epoch runs edge groups, not colour classes (grouped_numba): no colouring
        edges, schedule, _ = grouped_sampling_plan(graph, n_epochs, negative_sample_rate)
        emb = umap_sgd_fit_cuda(emb, edges, schedule, n_epochs, kernel.a, kernel.b,
                                kernel.gamma, seed, alphas, guard, relabel, callback)
        return emb if relabel is None else in_input_order(emb, relabel)
    edges, schedule, edge_weights = fit_sampling_plan(graph, n_epochs, negative_sample_rate)
    snapshot = np.empty_like(emb)
    if negative_pool is None:
        negative_pool = sampling.default_negative_pool(emb.shape[0])
    if metric:
        from unimap.optimizers.umap_sgd.output_metric_numba import sgd_epoch_edges_metric

        fit_epoch, pool_args = sgd_epoch_edges_metric, (np.int64(metric),)
    elif emb.shape[1] != 2:
        fit_epoch, pool_args = sgd_epoch_edges_nd, ()
    elif negative_pool > 0:
        fit_epoch, pool_args = sgd_epoch_edges_2d_pooled, (np.int64(negative_pool),)
    else:
        fit_epoch, pool_args = sgd_epoch_edges_2d, ()
    term, densmap_from = None, n_epochs
    if density is not None:
        from unimap.optimizers.umap_sgd.densmap_numba import (
            density_stats,
            sgd_epoch_edges_densmap,
        )

        term = density.term(edge_weights, emb.shape[0], relabel)
        densmap_from = density.first_epoch(n_epochs)

    def epoch_step(epoch: int) -> None:
        alpha = alphas[epoch]
        snapshot[:] = emb
        if epoch >= densmap_from:
            density_stats(emb, edges.heads, edges.tails, kernel.a, kernel.b, density.var_shift,
                          term)
            sgd_epoch_edges_densmap(emb, snapshot, edges, schedule, kernel, term, seed, epoch,
                                    alpha, np.int64(workers()))
        else:
            fit_epoch(emb, snapshot, edges, schedule, kernel, seed, epoch, alpha,
                      np.int64(workers()), *pool_args)

    run_epochs(emb, n_epochs, epoch_step, guard, relabel, callback)
    return emb if relabel is None else in_input_order(emb, relabel)


@dataclass(frozen=True)
class DensityPlan:
    """densMAP's settings for :func:`umap_sgd_fit`: the data's standardised log radii ``R``
    (in input order), ``lam`` (``dens_lambda``), ``frac`` (the share of epochs, at the end,
    with the density term: ``dens_frac``) and ``var_shift`` (``dens_var_shift``)."""

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
        """The kernel's :class:`unimap.optimizers.umap_sgd.densmap_numba.DensityTerm` for edges
        of ``weights`` over ``n`` points (relabelled like the embedding when ``relabel``)."""
        from unimap.optimizers.umap_sgd.densmap_numba import DensityTerm

        R = self.R if relabel is None else self.R[relabel]
        f32 = np.float32
        return DensityTerm(np.ascontiguousarray(weights, dtype=f32),
                           np.ascontiguousarray(R, dtype=f32), np.zeros(n, f32),
                           np.zeros(n, f32), np.zeros(3), f32(self.lam),
                           f32(float(np.sum(weights, dtype=np.float64)) / n))


def _relabel_for_locality(emb: np.ndarray, graph: sp.csr_matrix):
    """Points relabelled along a Z-order curve of their positions, so that most edges join
    points close in memory and threads write mostly their own cache lines, which made the SGD
    faster while cache lines were slow to move between cores (measured:
    benchmarks/results/library_notes.md, "unimap/optimizers/umap_sgd/fit.py")."""
    relabel = locality_order(emb)
    return np.ascontiguousarray(emb[relabel]), relabelled(graph, relabel), relabel


def _in_original_order(callback: Callable[[int, np.ndarray], None], relabel: np.ndarray):
    """Wrap ``callback`` so that it sees the rows of a relabelled embedding in input order."""
    def wrapped(epoch: int, emb: np.ndarray) -> None:
        callback(epoch, in_input_order(emb, relabel))

    return wrapped
