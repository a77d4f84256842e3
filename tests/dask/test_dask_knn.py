"""The kNN graph of a dask array built on the cluster (unimap.dask.knn_graph)."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import unimap  # noqa: E402
from unimap.dask.knn import knn_graph  # noqa: E402
from unimap.neighbors.graph import nearest_neighbors  # noqa: E402

K = 15


def _mixture(n: int, d: int = 10, centres: int = 12, seed: int = 0) -> np.ndarray:
    """Overlapping Gaussian clusters: neighbours cross the k-means cells' borders."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((centres, d)).astype(np.float32) * 2.0
    return means[rng.integers(0, centres, n)] + rng.standard_normal((n, d), dtype=np.float32)


@pytest.fixture(scope="module")
def data():
    X = _mixture(6000)
    exact = nearest_neighbors(X, K, method="exact")[0]
    return X, exact


def _recall(indices: np.ndarray, exact: np.ndarray) -> float:
    pairs = zip(indices[:, 1:], exact.indices[:, 1:], strict=True)
    return float(np.mean([np.intersect1d(a, b).size for a, b in pairs]) / (K - 1))


def test_one_shard_is_the_in_memory_graph(data):
    """One shard is the in-memory HNSW index of all rows, its own graph searched the same
    way: bitwise the in-memory graph, whatever the chunking."""
    X, _ = data
    memory = nearest_neighbors(X, K, method="hnsw")[0]
    idx, dist = knn_graph(da.from_array(X, chunks=(1700, -1)), K, n_shards=1,
                          random_state=0).compute()
    np.testing.assert_array_equal(idx, memory.indices)
    np.testing.assert_array_equal(dist, memory.distances)


def test_shards_probes_and_recall(data):
    """More probes reach the neighbours across the cells' borders. Measured on this data
    (4 shards): recall@15 0.952 with one probe, 0.998 with two, 0.9996 with four; the
    in-memory graph 0.9995. The thresholds leave a margin for other BLAS/faiss builds."""
    X, exact = data
    Xd = da.from_array(X, chunks=(1500, -1))
    recall = {p: _recall(knn_graph(Xd, K, n_shards=4, n_probe=p, random_state=0)
                         .compute(scheduler="threads")[0], exact)
              for p in (1, 2, 4)}
    memory = _recall(nearest_neighbors(X, K, method="hnsw")[0].indices, exact)
    assert recall[1] < recall[2] <= recall[4]
    assert recall[2] >= 0.98 and recall[4] >= memory - 0.005, (recall, memory)


def test_independent_of_chunking_and_cluster(data):
    """The same rows in other blocks, on a process cluster: the same bits."""
    X, _ = data
    expected = knn_graph(da.from_array(X, chunks=(6000, -1)), K, n_shards=3, n_probe=2,
                         random_state=1).compute(scheduler="sync")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        got = knn_graph(da.from_array(X, chunks=(1000, -1)), K, n_shards=3, n_probe=2,
                        random_state=1).compute()
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_graph_layout_and_use_in_a_fit(data):
    """Column 0 is the row itself, distances ascending and exact; the graph feeds a fit."""
    X, exact = data
    g = knn_graph(da.from_array(X, chunks=(2000, -1)), K, n_shards=2, random_state=0)
    assert g.indices.chunks == ((2000, 2000, 2000), (K,)) and g.indices.dtype == np.int32
    assert g.centroids.shape == (2, X.shape[1])
    idx, dist = g.compute()
    np.testing.assert_array_equal(idx[:, 0], np.arange(len(X)))
    assert (dist[:, 0] == 0).all() and (np.diff(dist, axis=1) >= 0).all()
    true = np.linalg.norm(X[idx[:, 1:]] - X[:, None, :], axis=2)
    np.testing.assert_allclose(dist[:, 1:], true, rtol=1e-4, atol=1e-4)
    est = unimap.GDR(precomputed_knn=(idx, dist), n_epochs=50, random_state=0).fit(X)
    assert np.isfinite(est.embedding_).all() and est.embedding_.shape == (len(X), 2)


def test_cosine_distances():
    X = np.abs(_mixture(2000, seed=3))
    idx, dist = knn_graph(da.from_array(X, chunks=(700, -1)), K, metric="cosine",
                          n_shards=2, random_state=0).compute(scheduler="sync")
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    cosine = 1.0 - np.einsum("ij,ikj->ik", unit, unit[idx[:, 1:]])
    np.testing.assert_allclose(dist[:, 1:], cosine, atol=1e-5)
    exact = nearest_neighbors(X, K, metric="cosine", method="exact")[0]
    assert _recall(idx, exact) >= 0.98  # measured 1.0


def test_kmeans_is_seeded_and_keeps_emptied_clusters():
    from unimap.dask.knn_cells import kmeans

    X = _mixture(3000)
    a, b = kmeans(X, 5, seed=7), kmeans(X, 5, seed=7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, kmeans(X, 5, seed=8))
    twins = np.repeat(X[:2], 50, axis=0)  # 2 distinct points, 4 clusters: 2 stay empty
    centres = kmeans(twins, 4, seed=0)
    assert np.isfinite(centres).all() and len(np.unique(centres, axis=0)) >= 2


def test_errors_name_the_problem(data):
    X, _ = data
    Xd = da.from_array(X, chunks=(2000, -1))
    with pytest.raises(TypeError, match="dask.array.Array"):
        knn_graph(X)
    with pytest.raises(ValueError, match="n_probe"):
        knn_graph(Xd, n_shards=2, n_probe=3)
    with pytest.raises(ValueError, match="n_neighbors"):
        knn_graph(Xd, n_neighbors=1)
    with pytest.raises(ValueError, match="metric"):
        knn_graph(Xd, metric="manhattan")
    bad = X.copy()
    bad[4321, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        knn_graph(da.from_array(bad, chunks=(2000, -1)), random_state=0).compute(
            scheduler="sync")
    few = da.from_array(_mixture(60), chunks=(30, -1))  # 12 shards of ~5 rows, one probe
    with pytest.raises(ValueError, match="fewer than n_neighbors"):
        knn_graph(few, K, n_shards=12, n_probe=1, random_state=0).compute(scheduler="sync")


def test_knn_graph_recall_on_the_cluster_equals_the_in_memory_one():
    """unimap.dask.knn_graph_recall scores the same sampled rows the same way as
    unimap.metrics.knn_graph_recall, with the exact neighbours found block by block."""
    import dask

    from unimap.dask.knn import knn_graph_recall as dask_recall
    from unimap.metrics import knn_graph_recall

    rng = np.random.default_rng(5)
    data = (rng.standard_normal((3000, 12)) + rng.integers(0, 4, (3000, 1)) * 3).astype(
        np.float32)
    graph = nearest_neighbors(data, 10, method="hnsw")[0].indices.copy()
    rows = rng.permutation(3000)[:600]
    graph[rows, 1:] = graph[rng.permutation(rows), 1:]  # spoil a fifth of the lists
    X = da.from_array(data, chunks=700)
    scores = {}
    for metric in ("euclidean", "cosine"):
        expected = knn_graph_recall(data, graph, metric=metric, sample_size=300,
                                    random_state=1)
        with dask.config.set(scheduler="sync"):
            got = dask_recall(X, graph, metric=metric, sample_size=300, random_state=1)
        assert got.value == pytest.approx(expected.value, abs=1e-12)
        assert got.stderr == pytest.approx(expected.stderr, abs=1e-12)
        scores[metric] = got.value
    # four fifths of the euclidean lists are right; the cosine neighbours are other rows
    assert 0.7 < scores["euclidean"] < 0.85 and scores["cosine"] < scores["euclidean"] - 0.2
    with pytest.raises(ValueError, match="shape"):
        dask_recall(X, graph[:-1])
    spoiled = data.copy()
    spoiled[1234, 5] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity \(row 1234"), \
            dask.config.set(scheduler="sync"):
        dask_recall(da.from_array(spoiled, chunks=700), graph, sample_size=50, random_state=1)
