"""Sparse rows kept sparse: pynndescent's sparse kernels index them (asked for with
``knn_method="nndescent"``, or when their dense copy would pass ``MAX_DENSE_BYTES``), and
fit, transform, inverse_transform, update, save and load never densify them."""

import numpy as np
import pytest
import scipy.sparse as sp

import unimap
from unimap import GDR, TSNE, UMAP
from unimap.datasets import load_digits
from unimap.metrics import knn_accuracy
from unimap.neighbors.graph import NeighborIndex

pytest.importorskip("pynndescent")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits()
    return sp.csr_matrix(X.astype(np.float32)), y


@pytest.fixture
def tiny_dense_limit(monkeypatch):
    """Every sparse input counts as too large to densify."""
    monkeypatch.setattr("unimap.runtime.validation.MAX_DENSE_BYTES", 1000)


def _never_densified(monkeypatch, n_features=64):
    """Densifying sparse rows of ``n_features`` columns fails from 100 rows on (a column's
    range, one row, and inverse_transform's output rows are dense by nature; products of
    rows with rows are not the rows)."""
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        for name in ("toarray", "todense"):
            original = getattr(cls, name)

            def guarded(self, *args, _original=original, **kwargs):
                if self.shape[0] >= 100 and self.shape[1] == n_features:
                    raise AssertionError(f"a sparse matrix of shape {self.shape} was densified")
                return _original(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, guarded)


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "hellinger"])
def test_the_sparse_graph_is_the_exact_graph_up_to_pynndescents_recall(digits, metric):
    X, _ = digits
    index = NeighborIndex(metric, "nndescent", random_state=0).build(X[:1000])
    assert index.is_sparse
    graph = index.knn_graph(15)
    exact = NeighborIndex(metric, "exact").build(X[:1000].toarray()).knn_graph(15)
    recall = np.mean([np.intersect1d(a, b).size / 15
                      for a, b in zip(graph.indices, exact.indices, strict=True)])
    assert recall >= 0.97  # measured 0.998-1.000 on these 1,000 digits
    same = graph.indices == exact.indices
    np.testing.assert_allclose(graph.distances[same], exact.distances[same], rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("knn_method, search", [("auto", "exact"),
                                               ("nndescent", "nndescent")])
def test_a_too_large_sparse_input_is_never_densified(digits, tiny_dense_limit, monkeypatch,
                                                     knn_method, search):
    X, y = digits
    train, new = X[:1400], X[1400:]
    dense_fit = UMAP(n_epochs=200, random_state=0).fit(train.toarray())
    _never_densified(monkeypatch)
    model = UMAP(n_epochs=200, random_state=0, knn_method=knn_method).fit(train)
    assert model._index.is_sparse and model.knn_method_ == search
    # the same map as from dense rows: 10-NN accuracy within 0.01 (measured 0.984 and 0.984)
    assert knn_accuracy(model.embedding_, y[:1400]) >= knn_accuracy(
        dense_fit.embedding_, y[:1400]) - 0.01
    placed = model.transform(new)
    assert np.isfinite(placed).all()
    rows = model.inverse_transform(model.embedding_[:5])
    assert rows.shape == (5, 64) and np.isfinite(rows).all()
    grown = UMAP(n_epochs=200, random_state=0, knn_method=knn_method).fit(train[:1000])
    grown.update(train[1000:])
    assert grown.embedding_.shape == (1400, 2) and grown._index.is_sparse


def test_tsne_starts_a_too_large_sparse_input_from_its_principal_components(
        digits, tiny_dense_limit, monkeypatch):
    X, y = digits
    _never_densified(monkeypatch)
    model = TSNE(max_iter=400, random_state=0).fit(X[:1000])
    assert model._index.is_sparse and model.init_info_["method"] == "pca"
    assert knn_accuracy(model.embedding_, y[:1000]) >= 0.95  # measured 0.983


def test_a_sparse_model_saves_and_loads_with_its_sparse_rows(digits, tmp_path):
    X, _ = digits
    model = GDR(knn_method="nndescent", random_state=0).fit(X[:800])
    again = unimap.load(model.save(tmp_path / "sparse.unimap"))
    assert sp.issparse(again._index.indexed_rows())
    np.testing.assert_array_equal(again.transform(X[800:820]), model.transform(X[800:820]))


def test_a_too_large_sparse_input_without_a_sparse_search_is_refused(digits,
                                                                     tiny_dense_limit):
    X, _ = digits

    def taxicab(a, b):
        return np.abs(a - b).sum()

    with pytest.raises(ValueError, match="too large to densify.*has no sparse kernel"):
        UMAP(metric=taxicab).fit(X[:200])
    model = UMAP(metric="correlation", n_epochs=20, random_state=0).fit(X[:300])
    with pytest.raises(ValueError, match="centred rows, which are dense"):
        model.inverse_transform(model.embedding_[:2])


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_the_sparse_exact_search_is_the_dense_exact_search(metric):
    # wide, sparse rows (a bag of words) are searched by sparse products, not densified
    rng = np.random.default_rng(0)
    X = sp.random(400, 5000, density=0.004, random_state=rng, format="csr", dtype=np.float32)
    X.data = np.ceil(X.data * 3)  # counts: many exact ties, as in text
    index = NeighborIndex(metric).build(X)
    assert index.is_sparse and index.method_ == "exact"
    dense = NeighborIndex(metric, "exact").build(X.toarray())
    graph, expected = index.knn_graph(10), dense.knn_graph(10)
    # the same distances, row by row (ids may differ only between tied points)
    np.testing.assert_allclose(graph.distances, expected.distances, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(graph.indices[:, 0], np.arange(400))
    Q = X[:30] * 2
    (idx, dist), (_, expected_dist) = index.query(Q, 5), dense.query(Q.toarray(), 5)
    np.testing.assert_allclose(dist, expected_dist, rtol=1e-5, atol=1e-6)
    if metric == "euclidean":  # and they are the distances to the ids found
        rows = X.toarray()
        found = np.linalg.norm(rows[idx] - 2 * rows[:30, None], axis=2)
        np.testing.assert_allclose(dist, found, rtol=1e-5, atol=1e-5)


def test_which_sparse_rows_stay_sparse(monkeypatch):
    from unimap.neighbors.sparse_rows import sparse_search

    def rows(n, d=5000, per_row=20):
        cols = np.random.default_rng(0).integers(d, size=n * per_row)
        return sp.csr_matrix((np.ones(n * per_row, np.float32),
                              (np.repeat(np.arange(n), per_row), cols)), shape=(n, d))

    wide, many = rows(1000), rows(30_000)
    assert sparse_search(wide, "cosine", "auto") == "exact"  # a bag of words: same graph
    assert sparse_search(wide, "manhattan", "auto") is None  # densified, as before
    assert sparse_search(many, "cosine", "auto") is None  # HNSW on the dense copy, as before
    assert sparse_search(rows(1000, d=500), "cosine", "auto") is None  # not wide
    assert sparse_search(wide, "manhattan", "nndescent") == "nndescent"
    assert sparse_search(wide, "cosine", "hnsw") is None
    monkeypatch.setattr("unimap.runtime.validation.MAX_DENSE_BYTES", 1000)
    assert sparse_search(many, "cosine", "auto") == "nndescent"
    assert sparse_search(many, "cosine", "exact") == "exact"
    assert sparse_search(wide, "manhattan", "auto") == "nndescent"
    with pytest.raises(ValueError, match="knn_method='hnsw' searches dense rows"):
        sparse_search(wide, "cosine", "hnsw")
    with pytest.raises(ValueError, match="knn_method='exact' searches sparse X"):
        sparse_search(wide, "manhattan", "exact")


def test_new_sparse_rows_are_found_exactly_where_pynndescent_built_the_graph():
    # pynndescent's queries among sparse documents miss most neighbours (recall 0.22 on
    # benchmarks/sparse_text.py's corpus): euclidean and cosine queries run exactly
    rng = np.random.default_rng(1)
    X = sp.random(600, 5000, density=0.004, random_state=rng, format="csr", dtype=np.float32)
    index = NeighborIndex("cosine", "nndescent", random_state=0).build(X)
    assert index.method_ == "nndescent" and index.is_sparse
    dense = NeighborIndex("cosine", "exact").build(X.toarray())
    Q = sp.random(40, 5000, density=0.004, random_state=rng, format="csr", dtype=np.float32)
    (_, dist), (_, expected) = index.query(Q, 8), dense.query(Q.toarray(), 8)
    np.testing.assert_allclose(dist, expected, rtol=1e-5, atol=1e-6)
