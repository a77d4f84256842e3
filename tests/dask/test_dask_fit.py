"""``GDR(normalized=False).fit`` of a dask array on the cluster (:mod:`unimap.dask.fit`):
bitwise the in-memory fit on the cluster's kNN graph, and clear refusals of what it does not
fit."""

from __future__ import annotations

import numpy as np
import pytest

import unimap

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1_200, 12)).astype(np.float32)
    X[:400] += 3.0
    X[400:800, :2] -= 3.0
    return X


def _in_memory_twin(fitted: unimap.GDR, X: np.ndarray, **params) -> unimap.GDR:
    """The in-memory fit of ``X`` on the cluster fit's kNN graph, the same parameters."""
    graph = unimap.dask.knn_graph(da.from_array(X, chunks=300), fitted.n_neighbors_,
                                  random_state=fitted._streams.neighbors).compute()
    return unimap.GDR(precomputed_knn=graph, **params).fit(X)


@pytest.mark.parametrize("init,n_components,n_parts",
                         [("spectral", 2, None), ("pca", 2, 3), ("random", 3, 1),
                          ("pca", 3, 4)])
def test_the_cluster_fit_is_bitwise_the_in_memory_fit(client, blobs, init, n_components,
                                                      n_parts):
    params = dict(init=init, n_components=n_components, n_epochs=40, random_state=5)
    X = da.from_array(blobs, chunks=(250, 6))  # column chunks are joined
    est = unimap.GDR(**params)
    if n_parts is None:
        est.fit(X)
    else:
        assert unimap.dask.fit_on_cluster(est, X, client=client, n_parts=n_parts) is est
    twin = _in_memory_twin(est, blobs, **params)
    np.testing.assert_array_equal(est.knn_indices_, twin.knn_indices_)
    assert (est.graph_ != twin.graph_).nnz == 0
    np.testing.assert_array_equal(est.embedding_, twin.embedding_)
    assert est.embedding_.shape == (1_200, n_components)
    assert est.knn_method_ == "dask_shards"
    assert set(est.devices_.values()) == {"cpu"}
    assert est.init_info_["method"] == init
    assert {"neighbors", "affinities", "init", "optimize"} <= set(est.timings_)


def test_a_precomputed_graph_with_a_dask_array_skips_the_search(client, blobs):
    X = da.from_array(blobs, chunks=400)
    graph = unimap.dask.knn_graph(X, 15, random_state=0).compute()
    on_cluster = unimap.GDR(precomputed_knn=graph, n_epochs=30, random_state=1).fit(X)
    in_memory = unimap.GDR(precomputed_knn=graph, n_epochs=30, random_state=1).fit(blobs)
    assert on_cluster.knn_method_ == "precomputed"
    np.testing.assert_array_equal(on_cluster.embedding_, in_memory.embedding_)


def test_a_model_fitted_on_the_cluster_cannot_transform(client, blobs):
    est = unimap.GDR(n_epochs=10, init="random", random_state=0).fit(
        da.from_array(blobs, chunks=400))
    with pytest.raises(ValueError, match="fitted with precomputed_knn or on a dask array"):
        est.transform(blobs[:5])


@pytest.mark.parametrize("params,y,message", [
    ({}, np.zeros(1_200), "takes no y"),
    ({"unique": True}, None, "unique=True"),
    ({"metric": "manhattan"}, None, "serves metric in"),
    ({"device": "cuda"}, None, "runs on the workers' CPUs"),
])
def test_what_the_cluster_fit_cannot_do_is_refused_by_name(client, blobs, params, y,
                                                            message):
    est = unimap.GDR(n_epochs=10, **params)
    with pytest.raises(ValueError, match=message):
        est.fit(da.from_array(blobs, chunks=400), y)
    assert not hasattr(est, "embedding_")


def test_bad_dask_input_is_refused_before_any_work(client):
    with pytest.raises(ValueError, match="2-D dask array"):
        unimap.GDR().fit(da.zeros((10,), chunks=5))
    with pytest.raises(ValueError, match="numeric"):
        unimap.GDR().fit(da.from_array(np.array([["a", "b"]] * 4), chunks=2))
    rows = da.from_array(np.ones((8, 3), np.float32), chunks=4)
    with pytest.raises(ValueError, match="unknown row counts"):
        unimap.GDR().fit(rows[rows[:, 0] > 0])


def test_a_disconnected_graphs_components_are_placed_by_their_centroids(client):
    # Issue 55: the cluster's spectral start placed more components than the ± axes in
    # random directions (the rows are not on the client); on 1M points of 20 sheets that cost
    # 0.03 of 10-NN accuracy against the in-memory fit. Their centroids are now summed on
    # the workers, as the in-memory start sums them.
    from unimap.dask.fit import ClusterRows
    from unimap.initialization.spectral import component_sums

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((7, 8)) * 40
    labels = np.repeat(np.arange(7), 150)
    X = (centres[labels] + rng.standard_normal((1_050, 8))).astype(np.float32)
    X_dask = da.from_array(X, chunks=(200, 8))
    np.testing.assert_allclose(ClusterRows(X_dask).component_sums(labels, 7),
                               component_sums(labels, 7, X), rtol=1e-12)
    params = dict(n_epochs=40, random_state=0)
    with pytest.warns(UserWarning, match="7 connected components"):
        on_cluster = unimap.GDR(**params).fit(X_dask)
    twin = _in_memory_twin(on_cluster, X, **params)
    assert on_cluster.init_info_["n_graph_components"] == 7
    np.testing.assert_allclose(on_cluster.embedding_, twin.embedding_, atol=1e-3)


class _StubClient:
    """A client whose scheduler lists two workers with the given limit and memory in use."""

    def __init__(self, limit: int, used: int) -> None:
        self.info = {"workers": {f"tcp://w{i}": {"memory_limit": limit, "nthreads": 1,
                                                 "metrics": {"memory": used}}
                                 for i in range(2)}}

    def scheduler_info(self):
        return self.info


def test_a_worker_too_small_for_the_epochs_is_refused_before_any_phase():
    from unimap.dask.epochs import worker_epoch_bytes
    from unimap.runtime.memory import InsufficientMemoryError

    n, k = 1_000_000, 15
    rows = [500_224, 499_776]  # two parts of whole 256-row blocks
    need = worker_epoch_bytes(n, 2, [rows[0]], [rows[0] * 2 * (k - 1)])  # P symmetric
    # every part reads all n positions twice over (received and concatenated): 16 MB in 2-D
    assert need > 2 * n * 2 * 4
    big = unimap.dask.ClusterFit(_StubClient(limit=8 * 2**30, used=2**28))
    assert big.checked_worker_memory(unimap.GDR(), n, k, 2) == need
    small = unimap.dask.ClusterFit(_StubClient(limit=need, used=2**28))
    with pytest.raises(InsufficientMemoryError, match=r"tcp://w0.*memory_limit.*n_parts"):
        small.checked_worker_memory(unimap.GDR(), n, k, 2)
    # the check can be turned off, and a worker without a limit is not checked
    assert small.checked_worker_memory(unimap.GDR(max_memory=None), n, k, 2) == need
    unlimited = unimap.dask.ClusterFit(_StubClient(limit=0, used=2**28))
    assert unlimited.checked_worker_memory(unimap.GDR(), n, k, 2) == need
    # more parts on as many workers: each holds fewer edges, but still all n positions
    parted = unimap.dask.ClusterFit(_StubClient(limit=0, used=0), n_parts=8)
    assert 2 * n * 2 * 4 < parted.checked_worker_memory(unimap.GDR(), n, k, 2) < need


def test_the_cluster_fit_records_its_worker_estimate(client, blobs):
    X = da.from_array(blobs, chunks=300)
    est = unimap.GDR(n_epochs=10, random_state=0).fit(X)
    assert est.worker_memory_estimate_ > 2 * blobs.shape[0] * 2 * 4
    assert not hasattr(unimap.GDR(n_epochs=10, random_state=0).fit(blobs),
                       "worker_memory_estimate_")
