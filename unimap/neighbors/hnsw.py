"""The HNSW index of the ``"hnsw"`` backend (:mod:`unimap.neighbors.hnsw_backend`): faiss HNSW
graphs of interleaved parts of the data over a PCA projection, candidates re-ranked by exact
distances (:class:`HNSWIndex`), and the settings chosen for it by measurement."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from unimap.neighbors.candidates import fit_candidate_pca
from unimap.runtime.ordering import morton_order
from unimap.runtime.threads import numba_threads, pinned_pool, spread_threads


@contextmanager
def _faiss_threads(n_threads: int):
    """Run faiss calls of the current thread on ``n_threads`` OpenMP threads, then restore the
    count (OpenMP keeps it per calling thread)."""
    import faiss

    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n_threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


class HNSWIndex:
    """faiss HNSW graphs over a PCA reduction of the data, with exact re-ranking in the full
    space.

    A high-dimensional HNSW build is slow, so candidates are searched in a
    ``HNSW_PCA_DIM``-dimensional PCA projection and re-ranked by their exact full-space
    distances, which keeps the recall of a full-space graph in less time (measured:
    benchmarks/results/knn_candidates.md). Low-dimensional data skips the PCA.

    The points are split into interleaved parts (:func:`hnsw_layout`: 2, or 4 from
    ``HNSW_MANY_PARTS_MIN_ROWS`` points on), one HNSW graph each, and a query takes its
    candidates from every part. faiss's threaded insertion orders its locks by
    timing, so a graph built on several threads (and the embedding) could depend on the
    thread count; one graph per part, each built on one thread, is the same for any thread
    count, and the parts are built side by side, one thread each (measured:
    benchmarks/results/architecture_notes.md).

    ``pca="fit"`` fits the projection; a saved model (:mod:`unimap.io.persistence`) passes the
    stored one (a :class:`unimap.decomposition.pca.PCAFit`, or None for data kept unreduced), and
    the graphs built from it are byte for byte those of the fit (insertion on one thread per
    part is deterministic).
    """

    def __init__(self, data: np.ndarray, n_threads: int, pca: Any = "fit",
                 layout: HNSWLayout | None = None) -> None:
        from unimap.decomposition.pca import project

        self.n_threads = n_threads
        self.data = data
        if isinstance(pca, str):
            pca = fit_candidate_pca(data)
        self.pca = pca
        reduced = data if pca is None else project(data, pca)
        # Points are inserted (and queries run) in Morton order of their first three
        # coordinates, so that consecutive searches walk the same part of the graph and
        # re-rank overlapping candidates while they are in cache (measured:
        # benchmarks/results/architecture_notes.md). Part p holds Morton positions
        # p, p + n_parts, ...: each part covers the whole space, in Morton order itself.
        self.order = morton_order(reduced)
        self.layout = hnsw_layout(data.shape[0]) if layout is None else layout
        self.n_parts = self.layout.n_parts
        ordered = np.ascontiguousarray(reduced[self.order], dtype=np.float32)
        self._ordered = ordered  # the training points' projection, reused by their own search
        parts = [ordered[p::self.n_parts] for p in range(self.n_parts)]
        # Not pinned: a part is one thread's fixed work, and the thread of a part whose CPU
        # another program holds must be free to move to the CPU the other part leaves.
        with ThreadPoolExecutor(max_workers=max(1, min(n_threads, self.n_parts))) as pool:
            self.indexes = list(pool.map(_build_hnsw, parts))

    def search(self, queries: np.ndarray, k: int,
               per_part: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest indexed points of each query (see the class docstring);
        ``per_part``: candidates from each part, instead of the layout's count."""
        from unimap.neighbors.topk_numba import add_reverse_candidates, rerank_candidates

        # The reverse pairs let small k search fewer candidates at the same recall; from
        # k > layout.self_candidates on each part returns enough candidates by itself and the
        # pairs are left out (measured: benchmarks/results/architecture_notes.md).
        self_join = queries is self.data
        layout = self.__dict__.get("layout") or hnsw_layout(self.data.shape[0])  # the build's
        reverse = self_join and k <= layout.self_candidates
        if self_join:  # the training points keep the build's Morton order (their slots)
            query_order, ordered = self.order, getattr(self, "_ordered", None)
        else:
            query_order, ordered = None, None
        if ordered is None:  # new points, or the training points of an unpickled index
            from unimap.decomposition.pca import project

            # new points row by row, so that a point's candidates do not depend on its batch
            reduced = (queries if self.pca is None
                       else project(queries, self.pca, row_exact=not self_join))
            if query_order is None:  # a query's result does not depend on the others
                query_order = morton_order(reduced)
            ordered = np.ascontiguousarray(reduced[query_order], dtype=np.float32)
        n_cand = min(layout.candidates_per_part(k, self_join) if per_part is None
                     else max(per_part, k),
                     max(ix.ntotal for ix in self.indexes))
        # faiss writes each part's local ids straight into its slice: local id l of part p is
        # Morton position p + l * n_parts (the re-ranking maps it; -1 is a missing candidate)
        candidates = np.empty((len(self.indexes), ordered.shape[0], n_cand), dtype=np.int64)
        _search_in_chunks(self.indexes, ordered, n_cand, candidates, self.n_threads)
        idx = np.empty((queries.shape[0], k), dtype=np.int64)
        sq_dist = np.empty((queries.shape[0], k), dtype=np.float32)
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        with numba_threads(self.n_threads) as workers, spread_threads():
            if reverse:
                # results by slot (Morton position), where the reverse pairs are local,
                # then by point
                by_slot = np.arange(queries.shape[0])
                slot_idx, slot_dist = np.empty_like(idx), np.empty_like(sq_dist)
                cand_dist = np.empty((queries.shape[0], len(self.indexes) * n_cand),
                                     dtype=np.float32)
                rerank_candidates(self.data, queries, query_order, candidates, self.order, k,
                                  slot_idx, slot_dist, by_slot, cand_dist, workers)
                add_reverse_candidates(candidates, self.order, cand_dist, slot_idx, slot_dist)
                idx[query_order], sq_dist[query_order] = slot_idx, slot_dist
            else:
                rerank_candidates(self.data, queries, query_order, candidates, self.order, k,
                                  idx, sq_dist, query_order, np.empty((0, 0), np.float32),
                                  workers)
        return idx, np.sqrt(np.maximum(sq_dist, 0.0))

    # faiss indexes are not picklable: serialise to bytes.
    def __getstate__(self) -> dict:
        import faiss

        state = self.__dict__.copy()
        state["indexes"] = [faiss.serialize_index(index) for index in self.indexes]
        state.pop("_ordered", None)  # recomputed on demand
        return state

    def __setstate__(self, state: dict) -> None:
        import faiss

        state["indexes"] = [faiss.deserialize_index(index) for index in state["indexes"]]
        self.__dict__.update(state)


_HNSWIndex = HNSWIndex  # the name pickles written before it was public refer to


def _search_in_chunks(indexes: list, queries: np.ndarray, n_cand: int, out: np.ndarray,
                      n_threads: int) -> None:
    """``out[p]`` ← the ``n_cand`` candidates of every query in ``indexes[p]``.

    Chunks of ``HNSW_QUERY_CHUNK`` queries are searched on single-threaded faiss calls, taken
    by ``n_threads`` Python threads as each finishes (faiss releases the GIL): a thread that
    another program keeps off its core delays one chunk, not a fixed half of the queries as
    in faiss's own OpenMP loop (measured: benchmarks/results/architecture_notes.md). A
    query's candidates do not depend on its
    chunk, so the result is the same for any ``n_threads``.
    """
    for index in indexes:
        index.hnsw.efSearch = n_cand
    n = queries.shape[0]
    tasks = [(p, start) for p in range(len(indexes)) for start in range(0, n, HNSW_QUERY_CHUNK)]

    def search(task):
        p, start = task
        stop = min(n, start + HNSW_QUERY_CHUNK)
        distances = np.empty((stop - start, n_cand), dtype=np.float32)  # not needed: scratch
        with _faiss_threads(1):
            indexes[p].search(queries[start:stop], n_cand, D=distances, I=out[p, start:stop])

    if n_threads <= 1 or len(tasks) == 1:
        for task in tasks:
            search(task)
        return
    with pinned_pool(n_threads) as pool:
        list(pool.map(search, tasks))  # list(): re-raises a worker's exception


def _build_hnsw(points: np.ndarray):
    """One faiss HNSW graph of ``points``, inserted in row order on one thread."""
    import faiss

    index = faiss.IndexHNSWFlat(points.shape[1], HNSW_M)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    with _faiss_threads(1):
        index.add(points)
    return index


# HNSW settings, chosen by measurement on MNIST-70k (measured:
# benchmarks/results/knn_candidates.md, knn_default_candidates.md and architecture_notes.md).
HNSW_QUERY_CHUNK = 2048  # queries per single-threaded faiss search call (_search_in_chunks)
HNSW_PARTS = 2  # fixed: the graphs, hence the neighbours, must not depend on n_jobs
HNSW_CANDIDATES_PER_PART = 35  # new points: 2 x 35 candidates
# The kNN graph of the indexed points also takes each pair found by one point's search into
# the other point's list (add_reverse_candidates), so it needs fewer candidates per part than
# new points for the same recall.
HNSW_SELF_CANDIDATES_PER_PART = 30
HNSW_M = 16
# From this many points on, 4 parts of 18 candidates each (22 for new points) instead of 2 of
# 30 (35): smaller graphs, built faster, whose different errors add recall; below the
# threshold the results stay those of the 2-part layout (measured:
# benchmarks/results/scale_gdr.md and architecture_notes.md).
HNSW_MANY_PARTS = 4
HNSW_MANY_PARTS_MIN_ROWS = 200_000
HNSW_MANY_PARTS_SELF_CANDIDATES = 18
HNSW_MANY_PARTS_CANDIDATES = 22


class HNSWLayout(NamedTuple):
    """How the HNSW index of n points is split and searched."""

    n_parts: int
    self_candidates: int  # per part, for the kNN graph of the indexed points (with reverse pairs)
    new_candidates: int  # per part, for new points

    def candidates_per_part(self, k: int, self_join: bool) -> int:
        """Candidates each part returns for ``k`` neighbours: above the per-part count, k
        from each of 2 parts (k/2 from each of 4), twice the share of the true neighbours a
        part holds."""
        per_part = self.self_candidates if self_join else self.new_candidates
        return max(per_part, -(-2 * k // self.n_parts))


def hnsw_layout(n: int) -> HNSWLayout:
    """The parts and candidates of an index of ``n`` points (fixed by n alone, so the
    neighbours do not depend on the thread count)."""
    if n >= HNSW_MANY_PARTS_MIN_ROWS:
        return HNSWLayout(HNSW_MANY_PARTS, HNSW_MANY_PARTS_SELF_CANDIDATES,
                          HNSW_MANY_PARTS_CANDIDATES)
    return HNSWLayout(min(HNSW_PARTS, n), HNSW_SELF_CANDIDATES_PER_PART,
                      HNSW_CANDIDATES_PER_PART)


# efConstruction 20: a faster build at the same recall after the exact re-ranking (measured:
# benchmarks/results/architecture_notes.md).
HNSW_EF_CONSTRUCTION = 20

