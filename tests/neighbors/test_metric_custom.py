"""User-defined metrics: a numba function (or one numba compiles) of two rows, as umap-learn
and pynndescent take it; exact and through pynndescent, pickled, refused by ``save``."""

import pickle

import numba
import numpy as np
import pytest

from unimap import GDR, TSNE, UMAP, InvalidParameterError
from unimap.datasets import load_digits
from unimap.neighbors.graph import NeighborIndex


@numba.njit
def taxicab(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += abs(a[i] - b[i])
    return total


@numba.njit
def taxicab_with_gradient(a, b):  # umap-learn's convention: (distance, gradient)
    total = 0.0
    for i in range(a.shape[0]):
        total += abs(a[i] - b[i])
    return total, np.sign(a - b)


def power_distance(a, b, p):  # plain Python: unimap compiles it
    return (np.abs(a - b) ** p).sum() ** (1.0 / p)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits()
    return X[:600].astype(np.float32), y[:600]


def test_a_compiled_metric_gives_the_named_metrics_embedding_bit_for_bit(digits):
    X, _ = digits
    mine = UMAP(metric=taxicab, n_epochs=60, random_state=0, n_jobs=1).fit(X)
    named = UMAP(metric="manhattan", n_epochs=60, random_state=0).fit(X)
    np.testing.assert_array_equal(mine.knn_indices_, named.knn_indices_)
    np.testing.assert_array_equal(mine.embedding_, named.embedding_)
    other_threads = UMAP(metric=taxicab, n_epochs=60, random_state=0, n_jobs=2).fit(X)
    np.testing.assert_array_equal(other_threads.embedding_, mine.embedding_)
    np.testing.assert_array_equal(mine.transform(X[:20]), named.transform(X[:20]))


def test_a_metric_returning_its_gradient_is_searched_by_its_distance(digits):
    X, _ = digits
    with_gradient = UMAP(metric=taxicab_with_gradient, n_epochs=30, random_state=0).fit(X)
    plain = UMAP(metric=taxicab, n_epochs=30, random_state=0).fit(X)
    np.testing.assert_array_equal(with_gradient.embedding_, plain.embedding_)
    np.testing.assert_array_equal(with_gradient.transform(X[:20]), plain.transform(X[:20]))
    assert with_gradient.metric is taxicab_with_gradient  # the hyperparameter is kept


@pytest.mark.slow  # compile-bound: CI runs it in its slow step
def test_pynndescent_takes_a_metric_returning_its_gradient(digits):
    X, _ = digits
    graph = NeighborIndex(taxicab_with_gradient, "nndescent", random_state=0).build(X)
    plain = NeighborIndex(taxicab, "nndescent", random_state=0).build(X)
    np.testing.assert_array_equal(graph.knn_graph(10).indices, plain.knn_graph(10).indices)


def test_a_plain_function_takes_its_parameters_from_metric_kwds(digits):
    X, _ = digits
    graph = NeighborIndex(power_distance, "exact", metric_kwds={"p": 3.0}).build(X).knn_graph(10)
    named = NeighborIndex("minkowski", "exact", metric_kwds={"p": 3.0}).build(X).knn_graph(10)
    np.testing.assert_array_equal(graph.indices, named.indices)
    np.testing.assert_allclose(graph.distances, named.distances, rtol=1e-5)


@pytest.mark.slow  # compile-bound: CI runs it in its slow step
def test_pynndescent_serves_a_user_metric_beyond_the_exact_search(digits):
    X, y = digits
    approx = UMAP(metric=taxicab, knn_method="nndescent", n_epochs=60, random_state=0).fit(X)
    exact = UMAP(metric="manhattan", knn_method="exact", n_epochs=60, random_state=0).fit(X)
    assert approx._index.method_ == "nndescent"
    recall = np.mean([np.intersect1d(a, b).size / a.size
                      for a, b in zip(approx.knn_indices_, exact.knn_indices_, strict=True)])
    assert recall >= 0.97  # measured 0.990-0.992 over seeds 0-2, the same as for "manhattan"
    placed = approx.transform(X[:30])
    assert placed.shape == (30, 2) and np.isfinite(placed).all()


def test_tsne_and_gdr_take_a_user_metric(digits):
    X, _ = digits
    tsne = TSNE(metric=power_distance, metric_params={"p": 1.0}, max_iter=300, random_state=0)
    named = TSNE(metric="manhattan", max_iter=300, random_state=0)
    np.testing.assert_array_equal(tsne.fit(X).knn_indices_, named.fit(X).knn_indices_)
    gdr = GDR(metric=taxicab, random_state=0).fit(X)
    np.testing.assert_array_equal(gdr.transform(X[:10]),
                                  GDR(metric="manhattan", random_state=0).fit(X).transform(X[:10]))


def test_pickle_keeps_a_user_metric_and_save_refuses_it(digits, tmp_path):
    X, _ = digits
    model = UMAP(metric=taxicab, n_epochs=30, random_state=0).fit(X)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.transform(X[:10]), model.transform(X[:10]))
    path = tmp_path / "model.unimap"
    with pytest.raises(TypeError, match="user-defined metric 'taxicab' cannot be saved"):
        model.save(path)
    assert not path.exists()


def _as_text(a, b):
    return str(a)


@numba.njit
def _negative(a, b):
    return -1.0


@pytest.mark.parametrize("metric, kwds, error, message", [
    (_as_text, None, ValueError, "metric='_as_text' could not be compiled by numba"),
    (_negative, None, ValueError, "metric='_negative' returned the distance -1.0"),
    (taxicab, {"p": "x"}, InvalidParameterError, r"metric_kwds\['p'\] of a user-defined"),
    (3, None, InvalidParameterError, "metric must be one of .* or a callable"),
])
def test_a_bad_user_metric_is_refused_by_name(digits, metric, kwds, error, message):
    X, _ = digits
    with pytest.raises(error, match=message):
        UMAP(metric=metric, metric_kwds=kwds, n_epochs=10).fit(X[:100])


@numba.njit
def _raising(a, b):
    if a[0] > 1e3:
        raise ValueError("rows this large are out of my range")
    return np.sqrt(((a - b) ** 2).sum())


@numba.njit
def _nan(a, b):
    return np.nan


@pytest.mark.parametrize("knn_method", ["exact", "nndescent"])
@pytest.mark.parametrize("metric, message", [
    (_negative, "metric='_negative' returned the distance -1.0: a metric's distances must be "
                "finite and non-negative"),
    (_nan, "metric='_nan' returned the distance nan"),
    (_raising, "metric='_raising' raised ValueError: rows this large are out of my range"),
])
def test_a_bad_user_metric_is_refused_alike_by_every_search(digits, metric, message,
                                                             knn_method):
    # Issue 58: above 4,096 points (pynndescent) negative distances were accepted and gave
    # garbage, NaN came back as "neighbour indices must lie in [0, n)", and an exception in
    # the metric as numba's SystemError; the exact search refused them by name.
    X, _ = digits
    X = X[:200].copy()
    X[0, 0] = 2e3  # _raising's trigger, in the first rows that both searches reach
    with pytest.raises(ValueError, match=message):
        UMAP(metric=metric, knn_method=knn_method, n_epochs=10).fit(X)


@numba.njit
def _negative_far_out(a, b):  # negative only between rows the probe of 64 does not hold
    if a[0] > 100.0 and b[0] > 100.0:
        return -1.0
    return np.sqrt(((a - b) ** 2).sum())


def test_pynndescent_graph_of_a_user_metric_is_checked_after_the_probe(digits):
    X, _ = digits
    X = X[:300].copy()
    X[150:, 0] += 200.0  # rows 150 on: _negative_far_out gives -1 between them
    with pytest.raises(ValueError, match="metric='_negative_far_out' returned the distance "
                       "-1.0"):
        UMAP(metric=_negative_far_out, knn_method="nndescent", n_epochs=10).fit(X)
