"""The sharded kNN index of large inputs (unimap.neighbors.sharded), on small data, small cells."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import unimap
import unimap.neighbors.sharded as sharded
from unimap.neighbors.graph import NeighborIndex, nearest_neighbors


@pytest.fixture
def small_cells(monkeypatch):
    """Cells of ~500 points from 1,000 points on (the defaults: 25,000 from 500,000)."""
    monkeypatch.setattr(sharded, "SHARDED_MIN_ROWS", 1_000)
    monkeypatch.setattr(sharded, "SHARD_ROWS", 500)


def _mixture(n, dim, seed=0, n_clusters=8):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(n_clusters, dim))
    return (centres[rng.integers(0, n_clusters, n)] + rng.normal(size=(n, dim))).astype(
        np.float32)


def _recall(found, exact):
    k = exact.shape[1]
    return np.mean([len(set(a) & set(b)) / k for a, b in zip(found, exact, strict=True)])


def test_wide_data_keep_one_index(small_cells):
    # the cells would copy every row of more than 50 columns (hnsw_index says why)
    index = NeighborIndex(method="hnsw").build(_mixture(3000, 60))
    assert not isinstance(index.backend_.index, sharded.ShardedHNSWIndex)


def test_cells_over_a_projection(small_cells):
    # built directly: cells searched in the 50-D PCA projection of 60-D rows, re-ranked
    # exactly (measured recall 0.971)
    X = _mixture(6000, 60)
    index = sharded.ShardedHNSWIndex(X, 2)
    assert index.pca is not None and index.centroids.shape == (12, 50)
    idx, dist = index.search(index.data, 15)
    exact = nearest_neighbors(X, 15, method="exact")[0]
    assert _recall(idx, exact.indices) > 0.95


def test_graph_recall_and_thread_count_independence(small_cells):
    dim = 20
    X = _mixture(6000, dim)
    exact = nearest_neighbors(X, 15, method="exact")[0]
    one, index = nearest_neighbors(X, 15, method="hnsw", n_jobs=1)
    two = nearest_neighbors(X, 15, method="hnsw", n_jobs=2)[0]
    assert isinstance(index.backend_.index, sharded.ShardedHNSWIndex)
    assert len(index.backend_.index.members) == 12
    # measured 0.973; cells of 500 cut the 8 clusters more often than
    # cells of 25,000 cut real data, where the sharded graph matches the unsharded one
    assert _recall(one.indices, exact.indices) > 0.95
    np.testing.assert_array_equal(one.indices, two.indices)
    np.testing.assert_array_equal(one.distances, two.distances)
    assert (one.indices[:, 0] == np.arange(6000)).all()
    assert (np.diff(one.distances, axis=1) >= 0).all()
    # the distances are the exact ones of the pairs listed
    rows = np.repeat(np.arange(6000), 15)
    true = np.linalg.norm(X[rows] - X[one.indices.ravel()], axis=1).reshape(6000, 15)
    np.testing.assert_allclose(one.distances, true, rtol=1e-4, atol=1e-4)


def test_probes_pairs_told_to_the_points_found(small_cells, monkeypatch):
    """A probe's pairs across a wall are offered to the points it found: recall rises, and
    the same graph comes for any thread count (graph_recall_... above checks the rest)."""
    X = _mixture(6000, 50, seed=5)
    exact = nearest_neighbors(X, 15, method="exact")[0].indices
    with_pairs = sharded.ShardedHNSWIndex(X, 1, pca=None)
    idx, dist = with_pairs.search(with_pairs.data, 15)
    two = sharded.ShardedHNSWIndex(X, 2, pca=None)
    np.testing.assert_array_equal(two.search(two.data, 15)[0], idx)
    monkeypatch.setattr("unimap.neighbors.rows_numba.offer_reverse_pairs", lambda *a: 0)
    without = with_pairs.search(with_pairs.data, 15)[0]
    # measured 0.9851 against 0.9773
    assert _recall(idx, exact) > _recall(without, exact) + 0.004


def test_new_points(small_cells):
    X = _mixture(6000, 20)
    index = NeighborIndex(method="hnsw").build(X)
    rng = np.random.default_rng(1)  # new points: jittered copies of indexed ones
    queries = X[rng.integers(0, 6000, 500)] + rng.normal(scale=0.5, size=(500, 20)).astype(
        np.float32)
    idx, dist = index.query(queries, 15)
    exact = NeighborIndex(method="exact").build(X).query(queries, 15)[0]
    assert _recall(idx, exact) > 0.95  # measured 0.968
    assert (np.diff(dist, axis=1) >= 0).all()
    # an indexed point asked as a new one finds itself first
    idx, dist = index.query(X[:50], 15)
    assert (idx[:, 0] == np.arange(50)).all() and (dist[:, 0] == 0).all()


def test_unprobed_rows_had_no_nearer_point_elsewhere(small_cells, monkeypatch):
    """The wall bound: with every cell searched exactly, a row whose nearest other wall lies
    beyond its k-th candidate from home has its exact neighbours at home."""
    X = _mixture(4000, 10, seed=3)

    def exact_in_cell(self, c, queries, k, per_part=None):
        ids = self.members[c]
        local, dist = NeighborIndex(method="exact").build(self.data[ids]).query(
            queries, min(k, ids.size))
        out_i = np.full((queries.shape[0], k), -1, np.int64)
        out_d = np.full((queries.shape[0], k), np.inf, np.float32)
        out_i[:, :local.shape[1]], out_d[:, :local.shape[1]] = ids[local], dist
        return out_i, out_d

    monkeypatch.setattr(sharded.ShardedHNSWIndex, "_in_cell", exact_in_cell)
    index = sharded.ShardedHNSWIndex(X, 2, pca=None)
    idx, dist = index.search(index.data, 15)
    home = np.stack([exact_in_cell(index, index.home[i], X[i:i + 1], 15)[1][0]
                     for i in range(4000)])
    wall_cell, wall_dist = index._walls
    unprobed = (wall_cell < 0) | (wall_dist > home[:, -1] * sharded._SLACK)
    assert 0.05 < unprobed.mean() < 0.95  # both kinds of row are tested
    exact = NeighborIndex(method="exact").build(X).query(X, 15)[1]
    np.testing.assert_allclose(dist[unprobed], exact[unprobed], rtol=1e-5, atol=1e-5)
    # probed rows: the home cell and the nearest other one, never worse than home alone
    assert (dist[:, -1] <= home[:, -1] * (1 + 1e-4)).all()  # float32 rounding: 1.2e-5 seen


def test_cells_smaller_than_k_fall_back_to_exact(small_cells):
    X = _mixture(3000, 8, seed=2)
    X[:4] = 500.0 + np.arange(4, dtype=np.float32)[:, None]  # far away: a cell of its own
    index = NeighborIndex(method="hnsw").build(X)
    cells = index.backend_.index.members
    assert min(c.size for c in cells) < 15
    graph = index.knn_graph(15)
    exact = nearest_neighbors(X, 15, method="exact")[0]
    assert (graph.indices >= 0).all()
    np.testing.assert_allclose(graph.distances[:4], exact.distances[:4], rtol=1e-5)


@pytest.mark.filterwarnings("ignore:the neighbour graph has")  # one component per cluster
def test_saved_model_rebuilds_the_cells(small_cells, tmp_path):
    X = _mixture(3000, 20, seed=4)
    model = unimap.UMAP(n_epochs=20, random_state=0, knn_method="hnsw").fit(X)
    assert isinstance(model._index.backend_.index, sharded.ShardedHNSWIndex)
    loaded = unimap.load(model.save(tmp_path / "m.unimap"))
    assert isinstance(loaded._index.backend_.index, sharded.ShardedHNSWIndex)
    np.testing.assert_array_equal(model._index.backend_.index.centroids,
                                  loaded._index.backend_.index.centroids)
    new = X[:200] + np.float32(0.05)
    np.testing.assert_array_equal(model.transform(new), loaded.transform(new))
    np.testing.assert_array_equal(model.transform(new),
                                  pickle.loads(pickle.dumps(model)).transform(new))
