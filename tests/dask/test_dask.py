"""transform of dask arrays and the sample-then-place recipe (unimap.dask), on LocalClusters."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import unimap  # noqa: E402
from unimap.datasets import load_digits  # noqa: E402

N_FIT = 1000
CHUNK = 200  # 797 new points: blocks of 200, 200, 200, 197

ESTIMATORS = {
    "pca": lambda: unimap.PCA(),
    "gdr": lambda: unimap.GDR(random_state=0, n_epochs=100),
    "gdr-normalized": lambda: unimap.GDR(normalized=True, random_state=0, n_epochs=100),
    "umap": lambda: unimap.UMAP(random_state=0, n_epochs=100),
    "tsne": lambda: unimap.TSNE(random_state=0, max_iter=300),
}


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits()
    return X[:N_FIT], X[N_FIT:], y[:N_FIT], y[N_FIT:]


@pytest.fixture(scope="module")
def fitted(digits):
    X_fit = digits[0]
    return {name: make().fit(X_fit) for name, make in ESTIMATORS.items()}


def test_transform_ships_the_model_once_without_a_client(fitted, digits):
    """Without a distributed client every block's task depends on one delayed node holding
    the model, and the shipped copy leaves out the kNN graph, which transform does not read.
    (Runs before the module's client exists: the tests are ordered so.)"""
    from dask.core import get_dependencies

    with pytest.raises(ValueError):
        distributed.get_client()  # no client: the delayed path
    est = fitted["gdr"]
    Y = est.transform(da.from_array(digits[1], chunks=(CHUNK, -1)))
    graph = dict(Y.__dask_graph__())
    blocks = [key for key in graph if isinstance(key, tuple) and key[0] == Y.name]
    model_keys = {dep for key in blocks for dep in get_dependencies(graph, key)
                  if "model" in str(dep)}
    assert len(blocks) == 4 and len(model_keys) == 1
    shipped = graph[model_keys.pop()]
    shipped = getattr(shipped, "value", shipped)  # a DataNode in dask's task spec
    assert type(shipped) is type(est) and not hasattr(shipped, "graph_")
    assert hasattr(est, "graph_")  # the user's estimator is unchanged
    np.testing.assert_array_equal(Y.compute(scheduler="threads"), est.transform(digits[1]))


def test_processes_cluster_gives_the_same_placement(fitted, digits):
    """The real case: the model pickled to worker processes (faiss index and numba kernels
    rebuilt there)."""
    est, X_new = fitted["gdr"], digits[1]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        placed = c.compute(est.transform(da.from_array(X_new, chunks=(CHUNK, -1)))).result()
    np.testing.assert_array_equal(placed, est.transform(X_new))


def test_placement_survives_the_loss_of_a_worker(fitted, digits):
    """Issue 55: the model was scattered to one worker; when it died every block failed with
    FutureCancelledError. It is on every worker now: kill one (its process exits), and the
    placement still completes, bitwise."""
    import os

    est, X_new = fitted["gdr"], digits[1]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        Y = est.transform(da.from_array(X_new, chunks=(CHUNK, -1)))
        holders = {key: workers for key, workers in c.who_has().items()
                   if str(key).startswith(type(est).__name__)}
        assert len(holders) == 1 and len(next(iter(holders.values()))) == 2
        victim = next(iter(holders.values()))[0]
        pid = c.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, 9)
        placed = c.compute(Y).result(timeout=120)
    np.testing.assert_array_equal(placed, est.transform(X_new))


def test_column_chunks_are_joined_with_a_warning(fitted, digits):
    est, X_new = fitted["umap"], digits[1]
    X = da.from_array(X_new, chunks=(CHUNK, 16))
    with pytest.warns(UserWarning, match="column chunks are joined"):
        Y = est.transform(X)
    assert Y.chunks == ((200, 200, 200, 197), (2,))
    np.testing.assert_array_equal(Y.compute(scheduler="sync"), est.transform(X_new))


def test_unknown_and_empty_row_chunks(fitted, digits):
    est, X_new = fitted["pca"], digits[1]
    X = da.from_array(X_new, chunks=(CHUNK, -1))
    kept = X[X[:, 20] > 8]  # row counts unknown until computed; some blocks may be empty
    assert np.isnan(kept.shape[0])
    mask = X_new[:, 20] > 8
    assert 0 < mask.sum() < len(X_new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Y = est.transform(kept).compute(scheduler="sync")
    np.testing.assert_array_equal(Y, est.transform(X_new[mask]))
    empty = est.transform(X[:0]).compute(scheduler="sync")
    assert empty.shape == (0, 2) and empty.dtype == np.float32


def test_dask_input_errors_are_raised_at_transform(fitted, digits):
    X_new = digits[1]
    with pytest.raises(ValueError, match="features"):
        fitted["gdr"].transform(da.from_array(X_new[:, :10], chunks=CHUNK))
    with pytest.raises(ValueError, match="2-D"):
        fitted["pca"].transform(da.from_array(X_new[:, 0], chunks=CHUNK))
    with pytest.raises(ValueError, match="numeric"):
        fitted["umap"].transform(da.from_array(X_new.astype(str), chunks=CHUNK))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        unimap.GDR().transform(da.from_array(X_new, chunks=CHUNK))
    with pytest.raises(TypeError, match="fit_sample_transform takes a dask"):
        unimap.dask.sample.fit_sample_transform(unimap.PCA(), X_new, n_sample=100)
    with pytest.raises(ValueError, match="unknown row counts"):
        X = da.from_array(X_new, chunks=CHUNK)
        unimap.dask.sample.sample_rows(X[X[:, 20] > 8], 50)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_dask_transform_equals_numpy_transform(name, fitted, digits, client):
    est, X_new = fitted[name], digits[1]
    Y = est.transform(da.from_array(X_new, chunks=(CHUNK, -1)))
    assert isinstance(Y, da.Array)  # lazy: nothing placed yet
    assert Y.chunks == ((200, 200, 200, 197), (2,))
    assert Y.dtype == np.float32
    placed = client.compute(Y).result()
    assert placed.dtype == np.float32 and placed.shape == (len(X_new), 2)
    # A point is placed on its own, so the blocks give bitwise what the whole array gives.
    np.testing.assert_array_equal(placed, est.transform(X_new))


def test_transform_scatters_the_model_once_with_a_client(fitted, digits, client):
    """With a client the model is scattered: one future, which the scatter puts on one
    worker; placing 8 blocks on 2 workers, a worker receives it from another at most once
    (not once per block)."""
    est = fitted["gdr"]
    before = set(client.futures)
    Y = est.transform(da.from_array(digits[1], chunks=(100, -1)))
    scattered = [key for key in set(client.futures) - before if str(key).startswith("GDR-")]
    assert len(scattered) == 1
    placed = client.compute(Y).result()
    key = scattered[0]
    received = client.run(lambda dask_worker: sum(
        k == key for entry in dask_worker.transfer_incoming_log for k in entry["keys"]))
    assert len(received) == 2 and max(received.values()) <= 1, received
    np.testing.assert_array_equal(placed, est.transform(digits[1]))


def test_fit_sample_transform_is_deterministic_and_places_well(digits, client):
    """Fit GDR on a seeded uniform sample of all 1797 digits, place every row through the
    cluster. The same seed gives the same sample and placement, another seed another sample.
    The placed points' 10-NN accuracy on the digit labels is above 0.9: GDR's own embedding
    of the digits scores about 0.97 (tests/methods/test_gdr.py), a random 2-D layout 0.1."""
    X = np.concatenate([digits[0], digits[1]])
    labels = np.concatenate([digits[2], digits[3]])
    X_dask = da.from_array(X, chunks=(400, -1))
    runs = []
    for seed in (0, 0, 1):
        est = unimap.GDR(random_state=0, n_epochs=100)
        placed = unimap.dask.fit_sample_transform(est, X_dask, n_sample=600,
                                                  random_state=seed)
        assert isinstance(placed.embedding, da.Array)
        assert placed.sample_indices.shape == (600,)
        assert np.all(np.diff(placed.sample_indices) > 0)
        np.testing.assert_array_equal(est.embedding_.shape, (600, 2))
        runs.append((placed.sample_indices, client.compute(placed.embedding).result()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert not np.array_equal(runs[0][0], runs[2][0])
    accuracy = unimap.metrics.knn_accuracy(runs[0][1], labels, n_neighbors=10)
    assert accuracy > 0.9, accuracy


@pytest.fixture(scope="module")
def offset_data():
    """Correlated 40-D rows far from the origin (offset 1e4, spread ~6): a sum of x xᵀ
    minus n μ μᵀ would lose ~8 of float64's digits to cancellation here."""
    rng = np.random.default_rng(0)
    return rng.standard_normal((5003, 40)) @ rng.standard_normal((40, 40)) + 1e4


@pytest.mark.parametrize("chunks", [(1000, 40), (777, 13), (5003, 40)])
def test_pca_fit_of_dask_array_equals_covariance_solver(offset_data, chunks):
    """PCA.fit of a dask array merges per-block moments; its axes equal the in-memory
    covariance solver's up to rounding, for uneven row chunks and column chunks."""
    ref = unimap.PCA(5, svd_solver="covariance").fit(offset_data)
    est = unimap.PCA(5).fit(da.from_array(offset_data, chunks=chunks))
    assert est.svd_solver_ == "covariance" and est.n_samples_ == 5003
    assert est.components_.dtype == np.float64
    np.testing.assert_allclose(est.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(est.mean_, ref.mean_, rtol=1e-13)
    np.testing.assert_allclose(est.explained_variance_, ref.explained_variance_, rtol=1e-10)
    # the in-memory ratio divides by (Σx² − nμ²)/(n − 1), which loses digits at this offset
    np.testing.assert_allclose(est.explained_variance_ratio_, ref.explained_variance_ratio_,
                               rtol=1e-8)


def test_pca_fit_transform_of_dask_array_is_lazy_and_float32(offset_data, client):
    X = (offset_data - 1e4).astype(np.float32)
    ref = unimap.PCA(5, svd_solver="covariance").fit(X)
    X_dask = da.from_array(X, chunks=(1000, -1))
    Z = unimap.PCA(5).fit_transform(X_dask)
    assert isinstance(Z, da.Array) and Z.dtype == np.float32
    np.testing.assert_allclose(client.compute(Z).result(), ref.transform(X), atol=1e-4)
    # the moments merge in a fixed tree: the same with or without the cluster, bitwise
    with_client = unimap.dask.sample.scatter_moments(X_dask)
    with dask_config_sync():
        local = unimap.dask.sample.scatter_moments(X_dask)
    np.testing.assert_array_equal(with_client.scatter, local.scatter)


def dask_config_sync():
    import dask

    return dask.config.set(scheduler="sync")


def test_pca_fit_of_dask_array_rejects_bad_input(offset_data):
    X = offset_data.copy()
    X[2345, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity \(row 2345, in the block of rows "
                                         r"2000-2999\)"):
        unimap.PCA(5).fit(da.from_array(X, chunks=1000))
    with pytest.raises(ValueError, match="n_components must be in"):
        unimap.PCA(50).fit(da.from_array(offset_data, chunks=1000))
    with pytest.raises(ValueError, match="svd_solver='full' needs the data in memory"):
        unimap.PCA(5, svd_solver="full").fit(da.from_array(offset_data, chunks=1000))
    unknown = da.from_array(offset_data, chunks=1000)
    unknown = unknown[unknown[:, 0] > 0]  # a boolean mask: row counts unknown until computed
    with pytest.raises(ValueError, match="unknown row counts"):
        unimap.PCA(5).fit(unknown)
    est = unimap.PCA(5)
    with pytest.raises(ValueError, match="NaN"):
        est.fit(da.from_array(X, chunks=1000))
    assert not hasattr(est, "components_")  # nothing written half-way


def test_import_unimap_does_not_import_dask():
    code = ("import sys, unimap; unimap.GDR; unimap.PCA; unimap.dask.transform; "
            "import unimap.methods.umap, unimap.methods.tsne; "
            "print('dask' in sys.modules, 'distributed' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("make", [lambda: unimap.UMAP(n_epochs=10),
                                  lambda: unimap.GDR(normalized=True, n_epochs=10),
                                  lambda: unimap.TSNE(max_iter=10)])
def test_a_neighbour_embedding_refuses_to_gather_a_dask_array(make):
    # Issue 55: GDR().fit(dask_array) gathered the whole array into the client silently.
    # GDR(normalized=False) now fits it on the cluster (tests/dask/test_dask_fit.py); the
    # methods without a distributed optimizer refuse it.
    rows = np.random.default_rng(0).standard_normal((320, 20)).astype(np.float32)
    X = da.from_array(rows[:300], chunks=100)
    est = make()
    with pytest.raises(ValueError, match=r"does not gather a dask collection of shape "
                                         r"\(300, 20\).*X.compute\(\).*docs/dask.md"):
        est.fit(X)
    assert not hasattr(est, "embedding_")
    with pytest.raises(ValueError, match="does not gather"):
        make().fit(rows[:300], da.from_array(np.zeros(300), chunks=100))
    if isinstance(est, (unimap.UMAP, unimap.GDR)):
        est.fit(rows[:300])
        before = est.embedding_.copy()
        with pytest.raises(ValueError, match="update fits in this process"):
            est.update(da.from_array(rows[300:320], chunks=10))
        np.testing.assert_array_equal(est.embedding_, before)
