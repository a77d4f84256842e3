"""Optimizers that move an embedding: UMAP's edge-sampled SGD (t-SNE and GDR add theirs)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from unimap._validation import numba_threads
from unimap.ordering import morton_order

__all__ = ["prune_graph", "epochs_per_sample", "edge_classes", "umap_sgd"]

PARALLEL_MIN_ROWS = 512  # below this, a serial epoch beats waking the thread pool


def prune_graph(graph: sp.csr_matrix, n_epochs: int) -> sp.csr_matrix:
    """Drop edges too weak to be sampled even once in ``n_epochs`` (weight < max / n_epochs)."""
    graph = graph.copy()
    if graph.nnz:
        graph.data[graph.data < graph.data.max() / float(n_epochs)] = 0.0
        graph.eliminate_zeros()
    return graph


def epochs_per_sample(weights: np.ndarray, n_epochs: int) -> np.ndarray:
    """Sampling period of each edge: the heaviest edge is sampled every epoch."""
    result = np.full(weights.shape[0], -1.0, dtype=np.float64)
    n_samples = n_epochs * (weights / weights.max())
    positive = n_samples > 0
    result[positive] = float(n_epochs) / n_samples[positive]
    return result


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

    Returns
    -------
    embedding : ndarray of shape (n_rows, dim), float32
    """
    from unimap._kernels.umap_sgd import sgd_epoch_edges_2d, sgd_epoch_edges_nd, sgd_epoch_rows

    emb = np.ascontiguousarray(head, dtype=np.float32).copy()
    graph = sp.csr_matrix(graph)
    relabel = None
    if tail is None and emb.shape[0] >= PARALLEL_MIN_ROWS:
        # Relabel the points along a Z-order curve of their initial positions, so that most
        # edges join points that are close in memory: threads then write mostly to their own
        # cache lines. On MNIST-70k (2 threads) the share of edges crossing the middle of the
        # point range fell from 0.49 to 0.07 and the SGD from 5.8 to 3.9 s while cache lines
        # were slow to move between the cores (3.7 -> 3.4 s when they were not).
        relabel = morton_order(emb, n_dims=min(3, emb.shape[1]), bits=16)
        emb = np.ascontiguousarray(emb[relabel])
        graph = graph[relabel][:, relabel]
        if callback is not None:
            callback = _in_original_order(callback, relabel)
    indptr = graph.indptr.astype(np.int64)
    indices = graph.indices.astype(np.int32)
    eps = epochs_per_sample(graph.data.astype(np.float64), n_epochs)
    if tail is None:
        heads, tails, class_ptr, order = edge_classes(indptr, indices, emb.shape[0])
        eps = eps[order]
    eps_neg = eps / negative_sample_rate
    next_sample = eps.copy()
    next_negative = eps_neg.copy()
    if row_keys is None:
        row_keys = np.arange(emb.shape[0], dtype=np.uint64)
    f32 = np.float32
    a, b, gamma = f32(a), f32(b), f32(repulsion_strength)
    seed = np.uint64(seed)
    snapshot = np.empty_like(emb)
    fit_epoch = sgd_epoch_edges_2d if emb.shape[1] == 2 else sgd_epoch_edges_nd
    with numba_threads(None) as max_threads:
        # Few rows: one thread, since waking the pool each epoch costs more than the work.
        threads = AdaptiveThreads(max_threads if emb.shape[0] >= PARALLEL_MIN_ROWS else 1)
        for epoch in range(n_epochs):
            threads.start_epoch(epoch)
            alpha = f32(learning_rate * (1.0 - epoch / float(n_epochs)))
            if tail is None:
                snapshot[:] = emb
                fit_epoch(emb, snapshot, heads, tails, class_ptr, eps, next_sample, eps_neg,
                          next_negative, seed, epoch, a, b, gamma, alpha)
            else:
                sgd_epoch_rows(emb, tail, indptr, indices, eps, next_sample, eps_neg,
                               next_negative, row_keys, seed, epoch, a, b, gamma, alpha)
            threads.end_epoch()
            if callback is not None:
                callback(epoch, emb)
    return emb if relabel is None else _in_input_order(emb, relabel)


def _in_input_order(emb: np.ndarray, relabel: np.ndarray) -> np.ndarray:
    """Rows of an embedding whose row ``r`` is input point ``relabel[r]``, in input order."""
    unordered = np.empty_like(emb)
    unordered[relabel] = emb
    return unordered


def _in_original_order(callback: Callable[[int, np.ndarray], None], relabel: np.ndarray):
    """Wrap ``callback`` so that it sees the rows of a relabelled embedding in input order."""
    def wrapped(epoch: int, emb: np.ndarray) -> None:
        callback(epoch, _in_input_order(emb, relabel))

    return wrapped


def edge_classes(indptr: np.ndarray, indices: np.ndarray, n_vertices: int):
    """Directed edges sorted into vertex-disjoint colour classes.

    Returns
    -------
    heads, tails : int32 arrays of the edges in class order
    class_ptr : int64 array, class ``c`` is ``[class_ptr[c], class_ptr[c + 1])``
    order : positions of the class-ordered edges in the CSR edge list
    """
    from unimap._kernels.edge_coloring import greedy_edge_coloring

    colors, n_colors = greedy_edge_coloring(indptr, indices, n_vertices)
    order = np.argsort(colors, kind="stable")
    csr_heads = np.repeat(np.arange(n_vertices, dtype=np.int32), np.diff(indptr))
    class_ptr = np.zeros(n_colors + 1, dtype=np.int64)
    np.cumsum(np.bincount(colors, minlength=n_colors), out=class_ptr[1:])
    return (np.ascontiguousarray(csr_heads[order]), np.ascontiguousarray(indices[order]),
            class_ptr, order)


class AdaptiveThreads:
    """Run epochs on ``max_threads``, or on one thread while that is faster.

    An epoch of the edge-coloured SGD is dozens of short parallel steps, each ending in a
    barrier; when other programs keep a core busy, a descheduled thread stalls every barrier
    and threads can be slower than one (measured on MNIST with 0.75 cores of other load:
    5x slower). The embedding does not depend on the thread count, so the count can follow
    the machine.

    On a quiet machine nothing is probed. The reference is the lowest median of ``window``
    consecutive threaded epochs seen after the first ``warmup`` epochs (UMAP samples few
    edges in its first epochs, so early epochs are no reference; a median, so that one
    fast or slow epoch is no reference either). Only when the median of the last
    ``confirm`` threaded epochs takes ``slow_factor`` times the reference is the next epoch
    timed on one thread; one thread is then kept for ``period`` epochs if it beat that
    median, after which threads are tried again.

    A median, not the last epoch, because one slow epoch is no evidence of a busy machine.
    (The first version probed after any slow epoch and kept one thread if it beat that
    epoch: a one-off stall of the threads, common on a shared machine, then cost ``period``
    epochs at half speed: GDR's normalized mode on MNIST-70k ran 21-24 of its 750 epochs on
    one thread in each of four runs on a quiet machine, about 0.2 s.)

    When the probe loses, the work per epoch may have grown (GDR's normalized mode draws 12
    times fewer samples during early exaggeration), so the reference is measured anew from
    the next ``window`` threaded epochs.
    (Without this, every other epoch after early exaggeration was a losing probe on one
    thread: 47 ms per MNIST-70k epoch instead of 32, measured with a since-reverted faster
    build of GDR's kernel; the probes cost the same share with the current one.)

    (A first version compared with the single fastest epoch, which was UMAP's nearly empty
    epoch 0: every later epoch looked slow, and on a quiet 2-core machine half of the 200
    MNIST epochs ran on one thread, 6.5 s of SGD instead of 4.6 s.)
    """

    def __init__(self, max_threads: int, period: int = 20, slow_factor: float = 1.5,
                 warmup: int = 10, window: int = 5, confirm: int = 3,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        import numba

        self._numba = numba
        self.max_threads = max(1, max_threads)
        self.period = period
        self.slow_factor = slow_factor
        self.warmup = warmup
        self.window = window
        self.confirm = min(confirm, window)
        self._clock = clock
        self._recent: list[float] = []
        self._reference = np.inf
        self._next = self.max_threads
        self._single_until = -1
        self.single_epochs = 0
        """Number of epochs run on one thread (for diagnostics)."""

    def start_epoch(self, epoch: int) -> None:
        self._epoch = epoch
        self._current = 1 if epoch < self._single_until else self._next
        self._numba.set_num_threads(self._current)
        self._start = self._clock()

    def end_epoch(self) -> None:
        elapsed = self._clock() - self._start
        self._next = self.max_threads
        if self._current == 1 and self.max_threads > 1:
            self.single_epochs += 1
        if self.max_threads == 1 or self._epoch < self._single_until:
            return
        if self._current > 1:
            self._recent = (self._recent + [elapsed])[-self.window:]
            if self._epoch < self.warmup or len(self._recent) < self.window:
                return
            self._reference = min(self._reference, float(np.median(self._recent)))
            if self._recent_median() > self.slow_factor * self._reference:
                self._next = 1  # probe one thread next epoch
        elif self._recent and elapsed < self._recent_median():
            self._single_until = self._epoch + 1 + self.period
        else:  # threads won: their epochs may be longer because the work grew; measure anew
            self._recent = []
            self._reference = np.inf

    def _recent_median(self) -> float:
        """Median of the last ``confirm`` threaded epochs."""
        return float(np.median(self._recent[-self.confirm:]))
