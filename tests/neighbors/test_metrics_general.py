"""The general metrics (issue 41): each against SciPy's, scikit-learn's or pynndescent's own
definition, dense and sparse, exact and through pynndescent, saved and loaded."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

import unimap
from unimap import TSNE, UMAP, InvalidParameterError
from unimap.neighbors.graph import NeighborIndex
from unimap.neighbors.metrics import GENERAL_METRICS, METRIC_ALIASES, pairwise


def _data(metric, n=200, d=6, seed=0):
    rng = np.random.default_rng(seed)
    if metric in ("hamming", "jaccard", "dice"):
        return (rng.random((n, d)) > 0.6).astype(np.float32)
    if metric == "haversine":
        return np.column_stack([rng.uniform(-1.5, 1.5, n), rng.uniform(-3, 3, n)]).astype(
            np.float32)
    return rng.random((n, d)).astype(np.float32)


def _reference(A, B, metric):
    A, B = A.astype(np.float64), B.astype(np.float64)
    if metric == "hellinger":
        from pynndescent.distances import hellinger

        return np.array([[hellinger(a, b) for b in B] for a in A])
    if metric == "haversine":
        from sklearn.metrics.pairwise import haversine_distances

        return haversine_distances(A, B)
    if metric == "minkowski":
        return cdist(A, B, "minkowski", p=3.0)
    if metric in ("jaccard", "dice"):
        return cdist(A != 0, B != 0, metric)
    return cdist(A, B, metric)


@pytest.mark.parametrize("metric", GENERAL_METRICS)
def test_pairwise_matches_the_defining_library(metric):
    A, B = _data(metric, 30), _data(metric, 40, seed=1)
    kw = {"p": 3.0} if metric == "minkowski" else None
    np.testing.assert_allclose(pairwise(A, B, metric, kw), _reference(A, B, metric),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("metric", GENERAL_METRICS)
def test_pairwise_by_blocks_gives_the_same_distances(metric, monkeypatch):
    # Issue 58: SciPy's float64 copies of all the rows (400 x 1,000,000 sparse rows with
    # chebyshev: 3.2 GB twice) grew the process by 7.7 GB under max_memory="2GB", whose
    # estimate said 1.76 GB. pairwise now hands SciPy blocks of at most
    # PAIRWISE_BLOCK_BYTES (measured after: 1.88 GB grown, 2.05 GB estimated), and the
    # estimate counts two of them.
    import unimap.neighbors.metrics as metrics
    from unimap.neighbors.graph import memory_bytes

    A, B = _data(metric, 30), _data(metric, 40, seed=1)
    kw = {"p": 3.0} if metric == "minkowski" else None
    whole = pairwise(A, B, metric, kw)
    monkeypatch.setattr(metrics, "PAIRWISE_BLOCK_BYTES", 7 * 8 * A.shape[1])  # 7 rows
    np.testing.assert_array_equal(pairwise(A, B, metric, kw), whole)
    monkeypatch.undo()
    general, native = (memory_bytes("exact", 400, 10**6, 15, m)[0] for m in (metric, "manhattan"))
    assert general - native == 2 * metrics.PAIRWISE_BLOCK_BYTES


@pytest.mark.parametrize("metric", GENERAL_METRICS)
def test_exact_graph_is_the_brute_force_graph(metric):
    X = _data(metric)
    kw = {"p": 3.0} if metric == "minkowski" else None
    graph = NeighborIndex(metric, "exact", metric_kwds=kw).build(X).knn_graph(8)
    D = _reference(X, X, metric)
    np.fill_diagonal(D, -1.0)  # the point itself first
    expected = np.sort(D, axis=1)[:, :8]
    expected[:, 0] = 0.0
    # hellinger's sqrt(1 - ratio) loses digits near 0 (ratio ~ 1): float32 rows, 2e-6 apart
    np.testing.assert_allclose(graph.distances, expected, rtol=1e-5, atol=1e-5)
    assert (graph.indices[:, 0] == np.arange(len(X))).all() or metric in (
        "hamming", "jaccard", "dice")  # binary rows repeat: ties at distance 0


@pytest.mark.parametrize("metric", ["canberra", "jaccard"])  # ~10 s of pynndescent JIT each
def test_pynndescent_graph_agrees_with_the_exact_one(metric):
    X = _data(metric, n=600, d=10)
    exact = NeighborIndex(metric, "exact").build(X).knn_graph(10)
    approx = NeighborIndex(metric, "nndescent", random_state=0).build(X).knn_graph(10)
    # same distances at each rank (ids may differ among ties); pynndescent is approximate
    close = np.isclose(approx.distances, exact.distances, rtol=1e-4, atol=1e-5)
    assert close.mean() > 0.95, close.mean()


@pytest.mark.parametrize("metric", GENERAL_METRICS)
def test_sparse_input_gives_the_dense_embedding(metric):
    X = _data(metric, n=150)
    if metric != "haversine":  # coordinates: any zero is a place, keep them dense-ish
        X[X < 0.5] = 0.0
    kw = {"p": 3.0} if metric == "minkowski" else None
    dense = UMAP(metric=metric, metric_kwds=kw, n_epochs=30, random_state=0).fit(X)
    sparse = UMAP(metric=metric, metric_kwds=kw, n_epochs=30, random_state=0).fit(
        sp.csr_matrix(X))
    np.testing.assert_array_equal(dense.embedding_, sparse.embedding_)
    np.testing.assert_array_equal(dense.transform(X[:5]), sparse.transform(sp.csr_matrix(X[:5])))


def test_aliases_name_the_same_metric():
    X = _data("manhattan")
    base = UMAP(metric="manhattan", n_epochs=20, random_state=0).fit_transform(X)
    for alias, target in METRIC_ALIASES.items():
        if target == "manhattan":
            np.testing.assert_array_equal(
                UMAP(metric=alias, n_epochs=20, random_state=0).fit_transform(X), base)


def test_minkowski_p_changes_the_graph_and_survives_save_and_load(tmp_path):
    X = _data("minkowski")
    p3 = UMAP(metric="minkowski", metric_kwds={"p": 3}, n_epochs=20, random_state=0).fit(X)
    p2 = UMAP(metric="minkowski", n_epochs=20, random_state=0).fit(X)
    euclid = UMAP(metric="euclidean", n_epochs=20, random_state=0).fit(X)
    np.testing.assert_allclose(p2.knn_dists_, euclid.knn_dists_, rtol=1e-5, atol=1e-6)
    assert not np.allclose(p3.knn_dists_, p2.knn_dists_)
    loaded = unimap.load(p3.save(tmp_path / "m.unimap"))
    assert loaded.metric_kwds == {"p": 3}
    np.testing.assert_array_equal(loaded.transform(X[:7]), p3.transform(X[:7]))


def test_tsne_takes_scikit_learns_metric_params():
    X = _data("minkowski")
    model = TSNE(metric="minkowski", metric_params={"p": 1}, max_iter=30,
                 early_exaggeration_iter=10, random_state=0).fit(X)
    np.testing.assert_allclose(model.knn_dists_[:, 1:], np.sort(cdist(X, X, "cityblock"), 1)[
        :, 1:model.knn_dists_.shape[1]], rtol=1e-5)


@pytest.mark.parametrize(("kw", "X", "message"), [
    (dict(metric="minkowski", metric_kwds={"q": 2}), None, "takes only 'p'"),
    (dict(metric="minkowski", metric_kwds={"p": -1}), None, "positive number"),
    (dict(metric="canberra", metric_kwds={"p": 2}), None, "takes no parameters"),
    (dict(metric="haversine"), None, "2 columns"),
    (dict(metric="hellinger"), -np.ones((30, 3)), "non-negative"),
    (dict(metric="canberra", knn_method="hnsw"), None, "hnsw"),
    (dict(metric="mahalanobis"), None, "metric must be one of"),
])
def test_bad_metric_settings_are_refused_by_name(kw, X, message):
    X = _data("canberra", n=30) if X is None else X
    with pytest.raises(ValueError, match=message) as info:
        UMAP(n_epochs=5, **kw).fit(X)
    if "metric_kwds" in kw or kw["metric"] == "mahalanobis":
        assert isinstance(info.value, InvalidParameterError)
