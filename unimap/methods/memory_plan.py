"""The memory model of a neighbour embedding's fit: each phase's peak from the data's shape.

A fit runs its phases one after the other (neighbours, affinities, initialization,
optimization). Each phase keeps some arrays for the later ones (the kNN graph, P) and
allocates others only while it runs (exact kNN distance blocks, HNSW candidates, the
symmetrization's temporaries, the FFT grid). The peak is the largest, over the phases, of
what the earlier phases kept plus what the phase itself allocates.

The sizes are counted from the arrays each step allocates; the per-edge constants of the
steps whose temporaries are not counted one by one (symmetrization, spectral init, UMAP's
epoch bookkeeping) are bytes per kNN edge (n x n_neighbors), measured per phase with
``tracemalloc`` (``benchmarks/fit_memory.py``); faiss's allocations are outside
``tracemalloc`` and come from the resident-set growth (measured:
benchmarks/results/fit_memory.md). Each stage answers for its own phase: the kNN backend
(its ``memory_bytes``), the affinity (:meth:`unimap.affinity.stage.Affinity.memory`) and the
optimizer (its ``*_memory`` function, through the method's :class:`MemoryProfile`);
:mod:`unimap.runtime.memory` checks the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from unimap.neighbors.graph import memory_bytes
from unimap.runtime.memory import MemoryEstimate

if TYPE_CHECKING:
    from unimap.affinity.stage import Affinity

__all__ = ["MemoryProfile", "pipeline_estimate", "neighbors_bytes"]

SPECTRAL_INIT_BYTES = 40  # bytes per kNN edge (n * n_neighbors) of the spectral start


class MemoryProfile(NamedTuple):
    """What a method's optimizer allocates (its ``_memory_profile``, from the optimizer's
    own ``*_memory`` function), for :func:`pipeline_estimate`."""

    optimizer_bytes: int  # the optimizer's own arrays
    k_parameter: str  # the parameter that sets the number of neighbours
    optimizer_advice: str = ""  # what lowers the optimizer's memory, if not k_parameter


def pipeline_estimate(n: int, d: int, k: int, width: int, knn: str, metric: str,
                      sparse_input: bool, spectral_init: bool, affinity: Affinity,
                      profile: MemoryProfile, sparse_nnz: int = 0) -> MemoryEstimate:
    """The phases' peaks of a neighbour embedding's fit (neighbours → affinities → init →
    optimize) on n points of d features, k kNN columns, ``width`` output dimensions, with the
    kNN backend ``knn`` (``"precomputed"``: a given graph; ``"sparse"``: pynndescent on
    sparse rows of ``sparse_nnz`` stored values), the method's ``affinity`` stage (its
    :meth:`~unimap.affinity.stage.Affinity.memory`) and the method's ``profile``."""
    smaller_k = f"a smaller {profile.k_parameter} (or fewer samples)"
    estimate = MemoryEstimate()
    # the search runs on a dense copy of sparse features (sparse distances stay sparse),
    # unless it keeps them sparse
    dense = n * d * 4 if sparse_input and metric != "precomputed" and knn != "sparse" else 0
    if knn == "precomputed":
        knn_peak = knn_kept = n * k * 8
    elif knn == "sparse":  # a float32 CSR copy; pynndescent's forest and heaps, or the
        # exact search's block of float64 products and its float32 distances
        knn_kept = sparse_nnz * 8 + (n + 1) * 4 + n * k * 8
        knn_peak = knn_kept + max(n * k * 24 * 3, 3 * (1 << 27))
    else:
        knn_peak, knn_kept = neighbors_bytes(knn, n, d, k, metric)
    estimate.phases["neighbors"] = dense + knn_peak
    estimate.advice["neighbors"] = (
        "pass the kNN graph (precomputed_knn) instead of an n x n matrix"
        if metric == "precomputed" else
        "knn_method='hnsw'" if knn == "exact" else
        f"fewer features (PCA first) or {smaller_k}")
    edges = n * k
    affinity_peak, affinity_kept = affinity.memory(edges)
    estimate.phases["affinities"] = knn_kept + affinity_peak
    estimate.advice["affinities"] = smaller_k
    kept = knn_kept + affinity_kept + n * width * 8  # and the start layout
    spectral = edges * SPECTRAL_INIT_BYTES if spectral_init else 0
    estimate.phases["init"] = kept + spectral
    estimate.advice["init"] = "init='pca'" if spectral else smaller_k
    estimate.phases["optimize"] = kept + profile.optimizer_bytes
    estimate.advice["optimize"] = profile.optimizer_advice or smaller_k
    return estimate


def neighbors_bytes(method: str, n: int, d: int, k: int, metric: str) -> tuple[int, int]:
    """(peak while the kNN graph is built, kept afterwards) for ``NeighborIndex`` method
    ``method`` on n points of d features and k columns (the point itself included).

    Kept: the graph (int32 indices, float32 distances) and the index ``transform`` reuses.
    Each backend counts its own arrays (:func:`unimap.neighbors.graph.memory_bytes`).
    """
    return memory_bytes(method, n, d, k, metric)

