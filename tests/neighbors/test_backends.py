"""The backends behind NeighborIndex: one picked per build, one index planned per fit, pickles
of the layout before the backends still load, copies on other thread counts."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import unimap
from unimap.neighbors import graph as graph_module
from unimap.neighbors.exact import ExactBackend
from unimap.neighbors.graph import NeighborIndex
from unimap.neighbors.hnsw_backend import HNSWBackend
from unimap.neighbors.precomputed import PrecomputedBackend
from unimap.neighbors.sparse_rows import SparseExactBackend


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).standard_normal((300, 8)).astype(np.float32)


def test_each_build_picks_one_backend(X):
    wide = sp.random(200, 5000, density=0.01, random_state=0, format="csr", dtype=np.float32)
    D = np.sqrt(((X[:50, None] - X[None, :50]) ** 2).sum(-1))
    cases = [(NeighborIndex("cosine", "exact"), X, ExactBackend),
             (NeighborIndex("euclidean", "hnsw"), X, HNSWBackend),
             (NeighborIndex("euclidean"), wide, SparseExactBackend),
             (NeighborIndex("precomputed"), D, PrecomputedBackend)]
    for index, data, cls in cases:
        index.build(data)
        assert type(index.backend_) is cls and index.method_ == cls.name
        assert index.is_sparse == sp.issparse(data)
    assert not NeighborIndex().is_sparse  # unbuilt


def test_a_fit_plans_and_builds_one_index(X, monkeypatch):
    made = []
    original = NeighborIndex.__init__

    def counted(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(NeighborIndex, "__init__", counted)
    planned = []
    monkeypatch.setattr(NeighborIndex, "planned_method",
                        lambda self, n, _f=NeighborIndex.planned_method:
                        planned.append(self) or _f(self, n))
    model = unimap.UMAP(n_neighbors=10, n_epochs=10, random_state=0).fit(X)
    # one object: asked for its backend by the memory estimate (and by its build), built
    assert len(made) == 1 and model._index is made[0]
    assert planned and all(index is made[0] for index in planned)
    assert model._index.device == "cpu" and model.knn_method_ == "exact"


def _old_state(index):
    """The pickled state of ``index`` as NeighborIndex kept it before the backends."""
    state = {k: v for k, v in vars(index).items() if k != "backend_"}
    backend = index.backend_
    state["method_"] = backend.name
    if backend.name == "nndescent":
        state["_nnd_data"] = backend.rows
        if not backend.sparse:
            state["_data"] = graph_module.prepare_rows(backend.rows, index.metric)
    else:
        state["_data"] = backend.rows
    if backend.name == "hnsw":
        state["_hnsw"] = backend.index
    return state


@pytest.mark.parametrize("metric, method", [("cosine", "exact"), ("correlation", "hnsw"),
                                            ("euclidean", "precomputed")])
def test_pickles_of_the_layout_before_the_backends_load(X, metric, method):
    data = X if method != "precomputed" else np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    index = NeighborIndex("precomputed" if method == "precomputed" else metric,
                          "exact" if method == "precomputed" else method).build(data)
    old = NeighborIndex.__new__(NeighborIndex)
    state = _old_state(index)
    state.pop("metric_kwds")  # pickled before metrics took parameters
    old.__setstate__(pickle.loads(pickle.dumps(state)))
    assert type(old.backend_) is type(index.backend_) and old.method_ == index.method_
    queries = data[:20] + 0.01
    for a, b in zip(old.query(queries, 6), index.query(queries, 6), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(old.knn_graph(7).indices, index.knn_graph(7).indices)


def test_an_old_nndescent_pickle_keeps_the_rows_pynndescent_indexes(X):
    pytest.importorskip("pynndescent")
    index = NeighborIndex("cosine", "nndescent", random_state=0).build(X)
    old = NeighborIndex.__new__(NeighborIndex)
    state = _old_state(index)
    state["_nnd"] = object()  # never pickled; rebuilt on demand
    old.__setstate__(state)
    assert old.backend_.nnd is None
    np.testing.assert_array_equal(old.indexed_rows(), index.indexed_rows())
    np.testing.assert_array_equal(old.backend_.rows, X)


def test_with_threads_copies_and_leaves_the_original(X):
    index = NeighborIndex("euclidean", "hnsw", n_jobs=1).build(X)
    before = index.query(X[:10] + 0.01, 5)
    other = index.with_threads(2)
    assert other.n_threads_ == 2 and other.backend_.n_threads == 2
    assert other.backend_.index.n_threads == 2 and index.backend_.index.n_threads == 1
    assert other.backend_.rows is index.backend_.rows  # the arrays are shared
    for a, b in zip(other.query(X[:10] + 0.01, 5), before, strict=True):
        np.testing.assert_array_equal(a, b)


def test_memory_counts_the_prepared_rows_and_the_backends_own():
    from unimap.methods.memory_plan import neighbors_bytes

    n, d, k = 10_000, 30, 15
    for method, cls in graph_module.BACKENDS.items():
        peak, kept = cls.memory_bytes(n, d, k)
        assert neighbors_bytes(method, n, d, k, "euclidean") == (peak, kept)
        assert neighbors_bytes(method, n, d, k, "cosine") == (peak + n * d * 4, kept + n * d * 4)
    assert neighbors_bytes("hnsw", n, n, k, "precomputed") == (n * k * 24, n * k * 8)
