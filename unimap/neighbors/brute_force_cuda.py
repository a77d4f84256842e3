"""The kNN graph on a GPU: brute force in a PCA projection, then exact re-ranking.

As the CPU's HNSW path (:class:`unimap.neighbors.hnsw.HNSWIndex`), candidates come from a
``CANDIDATE_DIM``-dimensional PCA projection of wide data and are re-ranked by their exact
distances in the full space; on the GPU the candidates are found by brute force instead of a
graph walk, so they are the exact nearest in the projection. The kernel takes ``max(64, 2k)``
candidates: fewer fall short of the CPU's HNSW path's recall (measured:
benchmarks/results/library_notes.md, "unimap/neighbors/brute_force_cuda.py").

``_top_candidates``: one thread per query keeps its nearest candidates in a sorted local array;
the block stages ``TILE`` points at a time in shared memory, so each point is read from
global memory once per block. ``_rerank``: one thread per query computes its candidates' full
distances and keeps the k nearest. Each thread scans in a fixed order and keeps the earlier
index on ties, so the graph is the same run after run.

Cost: n² · ``CANDIDATE_DIM`` multiply-adds, 2.5e11 for MNIST-70k, 5e13 for 1M points; above
``BRUTE_FORCE_MAX_SAMPLES`` the candidates come from k-means cells instead
(:mod:`unimap.neighbors.cells_cuda`, approximate, the CPU's sharded index mirrored), re-ranked
the same way. Up to ``MAX_SAMPLES`` points; device memory is checked before allocating.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32

from unimap.neighbors.candidates import (
    GPU_MAX_CANDIDATES,
    GPU_SEARCH_DIM,
    GPU_TILE,
    HNSW_PCA_DIM,
    candidate_sample_step,
)
from unimap.neighbors.cells_cuda import cell_candidates_cuda, offer_tile, stage_tile
from unimap.neighbors.topk_numba import insert_sorted
from unimap.runtime.common_cuda import check_device_memory, on_target, rows_launch
from unimap.runtime.distance_numba import sq_dist

__all__ = ["knn_graph_cuda", "usable", "CANDIDATE_DIM", "MAX_CANDIDATES", "MAX_SAMPLES",
           "BRUTE_FORCE_MAX_SAMPLES"]

CANDIDATE_DIM = HNSW_PCA_DIM  # the projection's dimension for wider data (the CPU's)
MAX_DIM = GPU_SEARCH_DIM  # data up to this width are searched unreduced (exact)
MAX_CANDIDATES = GPU_MAX_CANDIDATES  # the local arrays' length: k up to 160
BRUTE_FORCE_MAX_SAMPLES = 2_000_000  # above: k-means cells (5e13 multiply-adds at 2M)
MAX_SAMPLES = 100_000_000  # int32 rows; 10M x 50 features take about 6 GB on the device
TILE = GPU_TILE  # points staged in shared memory at a time


_insert = on_target(insert_sorted)  # the CPU's bounded insertion sort
_sq_dist = on_target(sq_dist)


def usable(n: int, k: int, metric: str) -> bool:
    """Whether :func:`knn_graph_cuda` serves this graph."""
    return metric in ("euclidean", "cosine", "correlation") and n <= MAX_SAMPLES \
        and k <= MAX_CANDIDATES


def n_candidates(n: int, k: int, reduced: bool) -> int:
    return min(n, MAX_CANDIDATES, max(64, 2 * k)) if reduced else k


@cuda.jit(cache=True)
def _top_candidates(R, n_cand, out_idx, out_dist):
    """``out_*[q]`` ← the ``n_cand`` nearest rows of ``R`` to row q of ``R`` (itself
    included), by squared distance, ascending. ``R`` has ``MAX_DIM`` columns (zero-padded):
    the loops over them have a constant length, so the compiler unrolls them and keeps the
    query in registers."""
    tile = cuda.shared.array((TILE, MAX_DIM), float32)
    query = cuda.local.array(MAX_DIM, float32)
    best_d = cuda.local.array(MAX_CANDIDATES, float32)
    best_i = cuda.local.array(MAX_CANDIDATES, int32)
    n = R.shape[0]
    q = cuda.grid(1)
    active = q < n
    if active:
        for c in range(MAX_DIM):
            query[c] = R[q, c]
        for s in range(n_cand):
            best_d[s] = np.float32(np.inf)
            best_i[s] = -1
    worst = np.float32(np.inf)
    for base in range(0, n, TILE):
        rows = min(TILE, n - base)
        stage_tile(tile, R, base, rows, cuda.threadIdx.x, cuda.blockDim.x)
        cuda.syncthreads()
        if active:
            worst = offer_tile(query, tile, rows, base, best_d[:n_cand], best_i[:n_cand], worst)
        cuda.syncthreads()
    if active:
        for s in range(n_cand):
            out_idx[q, s] = best_i[s]
            out_dist[q, s] = best_d[s]


@cuda.jit(cache=True)
def _rerank(X, candidates, k, out_idx, out_dist):
    """``out_*[q]`` ← the ``k`` of row q's candidates nearest in the full space of ``X``."""
    best_d = cuda.local.array(MAX_CANDIDATES, float32)
    best_i = cuda.local.array(MAX_CANDIDATES, int32)
    q = cuda.grid(1)
    if q >= X.shape[0]:
        return
    for s in range(k):
        best_d[s] = np.float32(np.inf)
        best_i[s] = -1
    for j in range(candidates.shape[1]):
        other = candidates[q, j]
        if other < 0:
            continue
        d = _sq_dist(X, q, X, other, np.float32(0.0))
        if d < best_d[k - 1]:
            _insert(best_d[:k], best_i[:k], d, other)
    for s in range(k):
        out_idx[q, s] = best_i[s]
        out_dist[q, s] = best_d[s]


def device_bytes(n: int, d: int, k: int) -> int:
    reduced = d > MAX_DIM
    c = n_candidates(n, k, reduced)
    return 4 * n * MAX_DIM + 8 * n * c + (4 * n * d + 8 * n * k if reduced else 0)


def knn_graph_cuda(data: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``data`` (prepared: float32, euclidean geometry) to each
    row, the row itself included: ``(indices int64, distances float32)``, ascending.

    Data wider than ``MAX_DIM`` are searched in a PCA projection and re-ranked exactly: its
    axes from the strided sample of rows the CPU takes
    (:func:`unimap.neighbors.candidates.candidate_sample_step`), fitted and applied on the GPU
    (:mod:`unimap.decomposition.pca_cuda`), so the data cross to the device once.
    """
    from unimap.decomposition.pca_cuda import fit_pca_cuda, project_cuda

    n, d = data.shape
    check_device_memory(device_bytes(n, d, k), "the kNN graph on the GPU")
    reduced = d > MAX_DIM
    # Zero columns up to MAX_DIM change no distance (each adds 0.0 after the real ones).
    if reduced:
        d_data = cuda.to_device(np.ascontiguousarray(data, dtype=np.float32))
        axes = fit_pca_cuda(d_data, CANDIDATE_DIM, candidate_sample_step(n))
        d_search = project_cuda(d_data, axes, MAX_DIM)
    else:
        search = np.zeros((n, MAX_DIM), np.float32)
        search[:, :d] = data
        d_search = cuda.to_device(search)
    n_cand = n_candidates(n, k, reduced)
    blocks, threads = rows_launch(n)
    if n > BRUTE_FORCE_MAX_SAMPLES:
        cand_idx, cand_dist = cell_candidates_cuda(d_search, CANDIDATE_DIM if reduced else d,
                                                   n_cand)
    else:
        cand_idx = cuda.device_array((n, n_cand), np.int32)
        cand_dist = cuda.device_array((n, n_cand), np.float32)
        _top_candidates[blocks, threads](d_search, n_cand, cand_idx, cand_dist)
    if not reduced:
        idx, sq = cand_idx.copy_to_host(), cand_dist.copy_to_host()
    else:
        del d_search
        out_idx = cuda.device_array((n, k), np.int32)
        out_dist = cuda.device_array((n, k), np.float32)
        _rerank[blocks, threads](d_data, cand_idx, k, out_idx, out_dist)
        idx, sq = out_idx.copy_to_host(), out_dist.copy_to_host()
    return idx.astype(np.int64), np.sqrt(np.maximum(sq, 0.0))
