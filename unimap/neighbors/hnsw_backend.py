"""The ``"hnsw"`` backend of :mod:`unimap.neighbors.graph` (:class:`HNSWBackend`): one
:class:`unimap.neighbors.hnsw.HNSWIndex` of the prepared rows, or for large data one per
k-means cell (:class:`unimap.neighbors.sharded.ShardedHNSWIndex`, :func:`hnsw_index`), and
what a model file keeps to rebuild them byte for byte."""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.neighbors import sharded
from unimap.neighbors.backend import Backend
from unimap.neighbors.candidates import HNSW_PCA_DIM
from unimap.neighbors.hnsw import HNSW_EF_CONSTRUCTION, HNSW_M, HNSWIndex, hnsw_layout

__all__ = ["HNSWBackend", "hnsw_index"]


# faiss HNSW memory: vectors and level-0 links, with std::vector growth (from the resident-set
# growth; measured: benchmarks/results/fit_memory.md)
HNSW_LINK_BYTES = 2 * 16 * 4
HNSW_GROWTH = 1.6


def hnsw_index(data: np.ndarray, n_threads: int, pca: Any = "fit",
               centroids: np.ndarray | None = None) -> Any:
    """The HNSW index of ``data``: one :class:`HNSWIndex`, or from ``SHARDED_MIN_ROWS``
    points on the :class:`unimap.neighbors.sharded.ShardedHNSWIndex` of its k-means cells.

    Only data of at most ``HNSW_PCA_DIM`` columns are sharded: each cell keeps a copy of its
    rows for the exact re-ranking, which for narrow data costs no more than the projection one
    index keeps, but for wide data copies them all and multiplies the fit's peak memory
    (measured: benchmarks/results/scale_gdr.md)."""
    wide = data.shape[1] > HNSW_PCA_DIM
    if centroids is not None or (data.shape[0] >= sharded.SHARDED_MIN_ROWS and not wide):
        return sharded.ShardedHNSWIndex(data, n_threads, pca, centroids)
    return HNSWIndex(data, n_threads, pca)


class HNSWBackend(Backend):
    """The ``"hnsw"`` backend: :func:`hnsw_index` of the prepared rows (euclidean geometry).

    A model file keeps the rows and the PCA projection (and the k-means cells) the graphs
    were built on; they are rebuilt at load time, byte for byte (:meth:`restore`)."""

    name = "hnsw"

    def build(self, rows: np.ndarray) -> HNSWBackend:
        self.rows = rows
        self.index = hnsw_index(rows, self.n_threads)
        return self

    def knn_graph(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.index.search(self.rows, k)

    def query(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self.index.search(rows, k)

    @staticmethod
    def memory_bytes(n: int, d: int, k: int) -> tuple[int, int]:
        """The faiss graphs of the projection, the projection in Morton order (kept for the
        graph's search), and the larger of the projecting's centred copy and the search's
        candidates."""
        graph = n * k * 8
        p = min(d, HNSW_PCA_DIM)
        index = int(n * (4 * p + HNSW_LINK_BYTES) * HNSW_GROWTH)
        ordered = n * p * 4
        projection = n * (d + p) * 4 if d > HNSW_PCA_DIM else 0
        layout = hnsw_layout(n)
        parts = layout.n_parts
        cand = layout.candidates_per_part(k, self_join=True)
        reverse = parts * cand * 4 if k <= layout.self_candidates else 0
        search = n * (parts * cand * 8 + cand * 4 + reverse + 24 * k)
        kept = index + ordered + graph
        return kept + max(projection, search), kept

    def with_threads(self, n_threads: int) -> HNSWBackend:
        import copy

        backend = super().with_threads(n_threads)
        backend.index = copy.copy(self.index)
        backend.index.n_threads = n_threads
        backend.index.__dict__.pop("_ordered", None)  # the training points' own search only
        return backend

    def export(self, info: dict, encode: Any) -> None:
        super().export(info, encode)
        index, pca = self.index, self.index.pca
        centroids = getattr(index, "centroids", None)
        info["hnsw"] = {
            "n_parts": index.n_parts, "M": HNSW_M,
            # the k-means cells of a sharded index (unimap.neighbors.sharded); absent: one index
            "cells": None if centroids is None else encode(centroids, "index.cells.centroids"),
            "ef_construction": HNSW_EF_CONSTRUCTION,
            "pca": None if pca is None else {
                **{field: encode(getattr(pca, field), f"index.pca.{field}")
                   for field in _PCA_FIELDS},
                "solver": pca.solver,
            },
        }

    def restore(self, rows: np.ndarray, info: dict, decode: Any) -> HNSWBackend:
        """The graphs rebuilt from the file's projection and cells, refused where this
        unimap's HNSW settings differ from the file's (its graphs would not be the same)."""
        from unimap.decomposition.pca import PCAFit

        stored_info = _dict(info.get("hnsw"))
        centroids = decode(stored_info.get("cells"), "index.cells.centroids")
        layout = hnsw_layout(rows.shape[0]) if centroids is None else sharded.cell_layout()
        settings = {"n_parts": layout.n_parts, "M": HNSW_M,
                    "ef_construction": HNSW_EF_CONSTRUCTION}
        stored = {k: stored_info.get(k) for k in settings}
        if stored != settings:
            raise ValueError(f"the file's HNSW settings {stored} differ from this unimap's "
                             f"{settings}: its graphs cannot be rebuilt identically")
        pca = stored_info.get("pca")
        if pca is not None:
            fields = {k: decode(_dict(pca).get(k), f"index.pca.{k}") for k in _PCA_FIELDS}
            if not all(isinstance(v, np.ndarray) and v.dtype.kind == "f"
                       for v in fields.values()):
                raise ValueError("index PCA fields must be float arrays")
            k, d = fields["components"].shape if fields["components"].ndim == 2 else (-1, -1)
            if d != rows.shape[1] or fields["mean"].shape != (d,) or not all(
                    fields[f].shape == (k,) for f in _PCA_FIELDS[2:]):
                raise ValueError("index PCA arrays do not match the data's features")
            pca = PCAFit(**fields, solver=str(pca.get("solver")))
        self.rows = rows
        if centroids is not None:
            if not isinstance(centroids, np.ndarray) or centroids.dtype != np.float32 or (
                    centroids.ndim != 2 or centroids.shape[0] < 1 or centroids.shape[1] != (
                        rows.shape[1] if pca is None else pca.components.shape[0])):
                raise ValueError("index cell centroids must be float32 of shape (n_cells, "
                                 "the searched space's dimension)")
            self.index = sharded.ShardedHNSWIndex(rows, self.n_threads, pca=pca,
                                                  centroids=centroids)
            return self
        self.index = HNSWIndex(rows, self.n_threads, pca=pca)
        del self.index._ordered  # the training points' projection: recomputed on demand
        return self


_PCA_FIELDS = ("components", "mean", "explained_variance", "explained_variance_ratio",
               "singular_values")


def _dict(value: Any) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"expected a dict, got {type(value).__name__}")
    return value
