import numpy as np
import pytest
from scipy.spatial.distance import cdist

from unimap.neighbors.graph import NeighborIndex, nearest_neighbors
from unimap.runtime.ordering import morton_order


def _brute(X, k, metric):
    D = cdist(X.astype(np.float64), X.astype(np.float64), metric=metric)
    np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1, kind="stable")[:, : k - 1]
    return idx, np.take_along_axis(D, idx, axis=1)


@pytest.mark.parametrize(
    ("metric", "scipy_metric"),
    [("euclidean", "euclidean"), ("cosine", "cosine"), ("manhattan", "cityblock"),
     ("correlation", "correlation")],
)
def test_exact_knn_matches_brute_force(metric, scipy_metric):
    X = np.random.default_rng(0).standard_normal((400, 12)).astype(np.float32)
    graph, _ = nearest_neighbors(X, 10, metric=metric, method="exact")
    idx, dist = _brute(X, 10, scipy_metric)
    assert graph.indices.shape == (400, 10) and graph.indices.dtype == np.int32
    np.testing.assert_array_equal(graph.indices[:, 0], np.arange(400))
    np.testing.assert_allclose(graph.distances[:, 0], 0.0)
    # Distances agree to float32 precision; indices agree except for exact ties.
    np.testing.assert_allclose(graph.distances[:, 1:], dist, rtol=1e-4, atol=1e-4)
    assert (graph.indices[:, 1:] == idx).mean() > 0.999


def test_query_new_points_matches_brute_force():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 5)).astype(np.float32)
    Y = rng.standard_normal((20, 5)).astype(np.float32)
    index = NeighborIndex(method="exact").build(X)
    idx, dist = index.query(Y, 7)
    D = cdist(Y, X)
    np.testing.assert_array_equal(idx, np.argsort(D, axis=1)[:, :7])
    np.testing.assert_allclose(dist, np.sort(D, axis=1)[:, :7], rtol=1e-4, atol=1e-4)


def test_precomputed_distance_matrix():
    X = np.random.default_rng(2).standard_normal((100, 4))
    D = cdist(X, X)
    graph, _ = nearest_neighbors(D, 6, metric="precomputed")
    idx, dist = _brute(X, 6, "euclidean")
    np.testing.assert_array_equal(graph.indices[:, 1:], idx)
    np.testing.assert_allclose(graph.distances[:, 1:], dist, rtol=1e-5)
    with pytest.raises(ValueError, match="square"):
        nearest_neighbors(D[:, :50], 6, metric="precomputed")
    with pytest.raises(ValueError, match="non-negative"):
        nearest_neighbors(-D, 6, metric="precomputed")


def test_duplicates_keep_self_first():
    X = np.repeat(np.random.default_rng(3).standard_normal((10, 3)), 5, axis=0)
    graph, _ = nearest_neighbors(X.astype(np.float32), 8, method="exact")
    np.testing.assert_array_equal(graph.indices[:, 0], np.arange(50))
    # each point's 4 copies are at distance 0
    np.testing.assert_allclose(graph.distances[:, :5], 0.0, atol=1e-3)


def test_hnsw_backend_recall():
    pytest.importorskip("faiss")
    X = np.random.default_rng(4).standard_normal((3000, 16)).astype(np.float32)
    exact, _ = nearest_neighbors(X, 15, method="exact")
    approx, index = nearest_neighbors(X, 15, method="hnsw")
    assert approx.method == "hnsw"
    np.testing.assert_array_equal(approx.indices[:, 0], np.arange(3000))
    pairs = zip(approx.indices, exact.indices, strict=True)
    hits = [len(set(a[1:]) & set(e[1:])) for a, e in pairs]
    # 16-D Gaussian data is the hard case for graph indexes; MNIST reaches higher recall.
    assert np.mean(hits) / 14 > 0.9
    idx, _ = index.query(X[:5], 3)
    np.testing.assert_array_equal(idx[:, 0], np.arange(5))


def test_hnsw_pca_path_recall_and_query_order_independence():
    # Wider than HNSW_PCA_DIM: the PCA projection, the Morton-ordered insertion and queries,
    # and the exact re-ranking all take part.
    pytest.importorskip("faiss")
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((20, 80)) * 4
    X = (centres[rng.integers(0, 20, 3000)] + rng.standard_normal((3000, 80))).astype(np.float32)
    exact, _ = nearest_neighbors(X, 15, method="exact")
    approx, index = nearest_neighbors(X, 15, method="hnsw")
    hits = [len(set(a[1:]) & set(e[1:])) for a, e in zip(approx.indices, exact.indices,
                                                       strict=True)]
    assert np.mean(hits) / 14 > 0.95
    # Distances are exact full-space distances of the returned ids.
    d = np.linalg.norm(X[approx.indices] - X[:, None, :], axis=2)
    np.testing.assert_allclose(approx.distances, d, rtol=1e-4, atol=1e-3)
    # A query's answer does not depend on the other queries of the batch.
    Y = X[:200] + 0.01
    perm = rng.permutation(200)
    idx, dist = index.query(Y, 10)
    idx_p, dist_p = index.query(Y[perm], 10)
    np.testing.assert_array_equal(idx_p, idx[perm])
    np.testing.assert_array_equal(dist_p, dist[perm])


def test_morton_order_is_a_local_permutation():
    rng = np.random.default_rng(0)
    P = rng.random((4096, 3))
    order = morton_order(P)
    np.testing.assert_array_equal(np.sort(order), np.arange(4096))
    step = np.linalg.norm(np.diff(P[order], axis=0), axis=1).mean()
    random_step = np.linalg.norm(np.diff(P, axis=0), axis=1).mean()
    assert step < random_step / 4
    # Constant columns and a single row are fine.
    np.testing.assert_array_equal(morton_order(np.zeros((5, 3))), np.arange(5))
    np.testing.assert_array_equal(morton_order(np.ones((1, 2))), [0])


def test_invalid_metric_and_method():
    X = np.ones((5, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="metric must be one of"):
        nearest_neighbors(X, 3, metric="mahalanobis")
    with pytest.raises(ValueError, match="method must be one of"):
        nearest_neighbors(X, 3, method="annoy")


def test_hnsw_graph_does_not_depend_on_n_jobs_and_survives_pickling():
    # The parts' graphs are built side by side on several threads, each on one thread.
    pytest.importorskip("faiss")
    import pickle

    X = np.random.default_rng(6).standard_normal((4000, 60)).astype(np.float32)
    graphs = [nearest_neighbors(X, 10, method="hnsw", n_jobs=j) for j in (1, 2, 3)]
    for graph, _ in graphs[1:]:
        np.testing.assert_array_equal(graph.indices, graphs[0][0].indices)
        np.testing.assert_array_equal(graph.distances, graphs[0][0].distances)
    index = pickle.loads(pickle.dumps(graphs[0][1]))
    again = index.knn_graph(10)  # the training points' projection is recomputed
    np.testing.assert_array_equal(again.indices, graphs[0][0].indices)
    np.testing.assert_array_equal(again.distances, graphs[0][0].distances)
    idx, dist = index.query(X[:50] + 0.01, 5)
    idx0, dist0 = graphs[0][1].query(X[:50] + 0.01, 5)
    np.testing.assert_array_equal(idx, idx0)
    np.testing.assert_array_equal(dist, dist0)


@pytest.mark.parametrize("n", [2, 3, 7])
def test_hnsw_on_a_handful_of_points_is_exact(n):
    pytest.importorskip("faiss")
    X = np.random.default_rng(n).standard_normal((n, 5)).astype(np.float32)
    approx, _ = nearest_neighbors(X, n, method="hnsw")
    exact, _ = nearest_neighbors(X, n, method="exact")
    np.testing.assert_array_equal(approx.indices, exact.indices)


def _rerank_with_reverse(X, candidates, k):
    """rerank_candidates + add_reverse_candidates with slots = point ids (n_parts = 1)."""
    from unimap.neighbors.topk_numba import add_reverse_candidates, rerank_candidates

    n = X.shape[0]
    rows = np.arange(n)
    idx = np.empty((n, k), np.int64)
    dist = np.empty((n, k), np.float32)
    cand_dist = np.empty((n, candidates.shape[2]), np.float32)
    rerank_candidates(X, X, rows, candidates, rows, k, idx, dist, rows, cand_dist, 2)
    own = idx.copy()
    add_reverse_candidates(candidates, rows, cand_dist, idx, dist)
    return own, idx, dist


def test_reverse_candidates_give_the_best_of_both_directions():
    # Each point searched only a random third of the points (some slots missing): after the
    # reverse pass, its list is the k nearest of what it found plus the points that found it.
    rng = np.random.default_rng(11)
    n, k, width = 300, 6, 40
    X = rng.standard_normal((n, 5)).astype(np.float32)
    candidates = np.stack([rng.choice(n, width, replace=False) for _ in range(n)])[None]
    candidates[0, rng.random((n, width)) < 0.1] = -1
    own, idx, dist = _rerank_with_reverse(X, candidates, k)
    found = [set(row[row >= 0]) for row in candidates[0]]
    for i in range(n):
        pool = found[i] | {j for j in range(n) if i in found[j]}
        d = ((X[sorted(pool)] - X[i]) ** 2).sum(axis=1)
        best = np.array(sorted(pool))[np.argsort(d, kind="stable")[:k]]
        assert set(idx[i]) == set(best)
        assert len(set(idx[i])) == k  # no point listed twice
        np.testing.assert_allclose(dist[i], np.sort(d)[:k], rtol=1e-5)
    assert np.all(np.diff(dist, axis=1) >= 0)
    assert (idx != own).any()  # the reverse pairs did change some lists


def test_hnsw_self_join_uses_reverse_pairs_and_stays_exact_in_distance():
    # Up to HNSW_SELF_CANDIDATES_PER_PART neighbours the graph takes the reverse pairs: its
    # recall is at least that of the forward candidates alone, row by row in k-th distance.
    pytest.importorskip("faiss")
    import unimap.neighbors.topk_numba as topk

    X = np.random.default_rng(12).standard_normal((3000, 16)).astype(np.float32)
    merged, _ = nearest_neighbors(X, 15, method="hnsw")
    original = topk.add_reverse_candidates
    topk.add_reverse_candidates = lambda *args: None
    try:
        forward, _ = nearest_neighbors(X, 15, method="hnsw")
    finally:
        topk.add_reverse_candidates = original
    assert np.all(merged.distances[:, -1] <= forward.distances[:, -1])
    assert (merged.distances[:, -1] < forward.distances[:, -1]).any()
    d = np.linalg.norm(X[merged.indices] - X[:, None, :], axis=2)
    np.testing.assert_allclose(merged.distances, d, rtol=1e-4, atol=1e-3)


def test_nndescent_takes_unimap_63_bit_seeds():
    pytest.importorskip("pynndescent")
    from unimap import UMAP
    from unimap.datasets import make_blobs

    X, _ = make_blobs(300, 5, random_state=0)
    model = UMAP(knn_method="nndescent", n_epochs=5, random_state=0).fit(X)
    assert model.knn_method_ == "nndescent"
    assert np.isfinite(model.embedding_).all()


@pytest.mark.slow  # compile-bound: CI runs it in its slow step
def test_nndescent_runs_where_numba_has_fewer_threads_than_cores():
    # pynndescent sets numba's thread count to n_jobs: with n_jobs=-1 (all cores) and numba
    # started on one thread, the fit failed ("number of threads must be between 1 and 1").
    # The count is clamped to numba's.
    pytest.importorskip("pynndescent")
    import os
    import subprocess
    import sys

    code = ("import numba, numpy as np, unimap\n"
            "X = np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32)\n"
            "m = unimap.UMAP(knn_method='nndescent', n_epochs=5, random_state=0).fit(X)\n"
            "print(m.knn_method_, numba.get_num_threads())\n")
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["nndescent", "1"]


def test_hnsw_many_parts_layout_for_large_inputs(monkeypatch):
    """From HNSW_MANY_PARTS_MIN_ROWS points the index has 4 parts of fewer candidates
    (forced here on 3000 points): recall above 0.95 for the graph (k = 15 with reverse
    pairs, and k = 31 above the per-part count) and for new points; the same graph for any
    n_jobs and after pickling. Measured: 0.997 / 0.961 / 0.997, against 0.992 / 0.933 / 0.987
    for the 2-part layout on the same data."""
    pytest.importorskip("faiss")
    import pickle

    import unimap.neighbors.hnsw as nb

    monkeypatch.setattr(nb, "HNSW_MANY_PARTS_MIN_ROWS", 2000)
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((20, 80)) * 4
    data = (centres[rng.integers(0, 20, 3500)] + rng.standard_normal((3500, 80))).astype(
        np.float32)
    X, new = data[:3000], data[3000:]
    assert nb.hnsw_layout(3000).n_parts == 4 and nb.hnsw_layout(1999).n_parts == 2

    def recall(found, truth):
        return np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(found, truth,
                                                                         strict=True)])

    for k in (15, 31):
        exact, _ = nearest_neighbors(X, k, method="exact")
        graphs = [nearest_neighbors(X, k, method="hnsw", n_jobs=j) for j in (1, 2)]
        assert len(graphs[0][1].backend_.index.indexes) == 4
        np.testing.assert_array_equal(graphs[0][0].indices, graphs[1][0].indices)
        assert recall(graphs[0][0].indices[:, 1:], exact.indices[:, 1:]) > 0.95
    index = pickle.loads(pickle.dumps(graphs[0][1]))
    np.testing.assert_array_equal(index.knn_graph(31).indices, graphs[0][0].indices)
    exact_index = NeighborIndex(method="exact").build(X)
    truth, _ = exact_index.query(new, 15)
    found, _ = graphs[0][1].query(new, 15)
    assert recall(found, truth) > 0.95


@pytest.mark.parametrize("metric", ["cosine", "correlation"])
def test_nndescent_graph_and_queries_have_the_metrics_distances(metric):
    # pynndescent returns the metric's own distances: they were once converted again as if
    # they were euclidean distances between unit rows (cosine: d²/2 of 1 - cos)
    pytest.importorskip("pynndescent")
    X = np.random.default_rng(0).standard_normal((500, 12)).astype(np.float32)
    index = NeighborIndex(metric, "nndescent", random_state=0).build(X)
    graph = index.knn_graph(10)
    D = cdist(X.astype(np.float64), X.astype(np.float64), metric=metric)
    found = np.take_along_axis(D, graph.indices.astype(np.int64), axis=1)
    np.testing.assert_allclose(graph.distances, found, rtol=1e-4, atol=1e-5)
    idx, dist = index.query(X[:20] + 0.01, 10)
    Dq = cdist((X[:20] + 0.01).astype(np.float64), X.astype(np.float64), metric=metric)
    np.testing.assert_allclose(dist, np.take_along_axis(Dq, idx.astype(np.int64), axis=1),
                               rtol=1e-4, atol=1e-5)
