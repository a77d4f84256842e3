"""The projection kNN candidates are searched in: the leading principal axes of wide data.

HNSW (:mod:`unimap.neighbors.hnsw`), its k-means cells (:mod:`unimap.neighbors.sharded`) and
the GPU's brute force (:mod:`unimap.neighbors.brute_force_cuda`) search candidates in this
projection and re-rank them by their exact full-space distances, so the projection only
proposes and its axes can come from a sample (measured: benchmarks/results/knn_candidates.md,
knn_default_candidates.md and architecture_notes.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.decomposition.pca import fit_pca

__all__ = ["HNSW_PCA_DIM", "HNSW_PCA_SAMPLES", "GPU_SEARCH_DIM", "GPU_MAX_CANDIDATES",
           "GPU_TILE", "fit_candidate_pca", "candidate_sample_step"]

HNSW_PCA_DIM = 50  # the projection's dimension
HNSW_PCA_SAMPLES = 10_000  # rows the projection is fitted on (at least; strided)

# The GPU's searches (brute force and k-means cells), which share their search array's layout:
GPU_SEARCH_DIM = 64  # data up to this width are searched unreduced (exact); the tile's width
GPU_MAX_CANDIDATES = 160  # the local arrays' length: k up to 160 (t-SNE: 3 x perplexity + 1)
GPU_TILE = 128  # points staged in shared memory at a time (TILE x SEARCH_DIM float32: 32 KiB)


def fit_candidate_pca(data: np.ndarray) -> Any:
    """The projection HNSW candidates are searched in: ``HNSW_PCA_DIM`` principal axes of
    data wider than that (a :class:`unimap.decomposition.pca.PCAFit`), else None (the data as they
    are).

    The projection only proposes candidates (re-ranked exactly), so its axes are fitted on a
    strided sample of ``HNSW_PCA_SAMPLES`` rows: a small loss of recall for a faster fit
    (measured: benchmarks/results/architecture_notes.md).
    """
    if data.shape[1] <= HNSW_PCA_DIM:
        return None
    step = candidate_sample_step(data.shape[0])
    return fit_pca(np.ascontiguousarray(data[::step]), HNSW_PCA_DIM, solver="covariance")


def candidate_sample_step(n: int) -> int:
    """The stride of the rows the candidate projection is fitted on (the GPU's too)."""
    return max(1, n // HNSW_PCA_SAMPLES)
