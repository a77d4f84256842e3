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

__all__ = ["HNSW_PCA_DIM", "HNSW_PCA_SAMPLES", "fit_candidate_pca", "candidate_sample_step"]

HNSW_PCA_DIM = 50  # the projection's dimension
HNSW_PCA_SAMPLES = 10_000  # rows the projection is fitted on (at least; strided)


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
