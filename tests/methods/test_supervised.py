"""Supervised and semi-supervised fits (issue 41): umap-learn's graph intersections, checked
against a line-by-line port of its loops, and their effect on the embedding."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from unimap import GDR, TSNE, UMAP
from unimap.affinity.supervised import (
    categorical_intersection,
    encode_labels,
    far_distance,
    reset_local_connectivity,
    weighted_intersection,
)
from unimap.metrics import knn_accuracy


def _random_graph(n, density, seed):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=rng, format="csr", dtype=np.float64)
    A.data = rng.uniform(0.05, 1.0, A.nnz)
    return ((A + A.T) / 2).tocsr().astype(np.float32)


def _reference_reset(graph):
    """umap-learn's reset_local_connectivity: normalize(norm="max"), then the fuzzy union."""
    from sklearn.preprocessing import normalize

    g = normalize(graph.astype(np.float64), norm="max")
    t = g.T
    return (g + t - g.multiply(t)).tocsr()


def _reference_general_intersection(left, right, weight):
    """umap-learn's general_simplicial_set_intersection (sparse.general_sset_intersection)."""
    result = (left + right).tocoo()
    lmin = max(left.data.min() / 2.0, 1.0e-8)
    rmin = max(right.data.min() / 2.0, 1.0e-8)
    values = result.data.astype(np.float64).copy()
    L, R = left.tolil(), right.tolil()
    for idx, (i, j) in enumerate(zip(result.row, result.col, strict=True)):
        lv = L[i, j] if L[i, j] != 0 else lmin
        rv = R[i, j] if R[i, j] != 0 else rmin
        if lv > lmin or rv > rmin:
            if weight < 0.5:
                values[idx] = lv * pow(rv, weight / (1.0 - weight))
            else:
                values[idx] = pow(lv, (1.0 - weight) / weight) * rv
    return _reference_reset(sp.csr_matrix((values, (result.row, result.col)), left.shape))


def test_reset_local_connectivity_matches_umap_learn():
    graph = _random_graph(40, 0.2, 0)
    ours = reset_local_connectivity(graph, np.float64)
    np.testing.assert_allclose(ours.toarray(), _reference_reset(graph).toarray(), rtol=1e-6)
    assert abs(ours - ours.T).max() < 1e-12


@pytest.mark.parametrize("weight", [0.1, 0.5, 0.9])
def test_weighted_intersection_matches_umap_learn(weight):
    left, right = _random_graph(30, 0.2, 1), _random_graph(30, 0.15, 2)
    ours = weighted_intersection(left, right, weight)
    reference = _reference_general_intersection(left.astype(np.float64),
                                                right.astype(np.float64), weight)
    np.testing.assert_allclose(ours.toarray(), reference.toarray(), rtol=1e-5, atol=1e-7)


def test_categorical_intersection_matches_umap_learn():
    graph = _random_graph(30, 0.3, 3)
    codes = np.random.default_rng(4).integers(-1, 3, 30)
    far = far_distance(0.5)
    coo = graph.tocoo()
    values = coo.data.astype(np.float64).copy()
    for idx, (i, j) in enumerate(zip(coo.row, coo.col, strict=True)):  # umap-learn's loop
        if codes[i] == -1 or codes[j] == -1:
            values[idx] *= math.exp(-1.0)
        elif codes[i] != codes[j]:
            values[idx] *= math.exp(-far)
    reference = _reference_reset(sp.csr_matrix((values, (coo.row, coo.col)), graph.shape))
    ours = categorical_intersection(graph, codes, far)
    np.testing.assert_allclose(ours.toarray(), reference.toarray(), rtol=1e-5, atol=1e-7)
    assert far == 5.0 and far_distance(1.0) == 1e12


def test_labels_of_any_kind_are_encoded_with_unlabelled_points():
    np.testing.assert_array_equal(encode_labels([3, -1, 7, 3], 4), [0, -1, 1, 0])
    np.testing.assert_array_equal(encode_labels(["b", "a", "b"], 3), [1, 0, 1])
    np.testing.assert_array_equal(encode_labels(np.array(["b", None, "a"], dtype=object), 3),
                                  [1, -1, 0])
    np.testing.assert_array_equal(encode_labels([1.0, np.nan, 2.0], 3), [0, -1, 1])
    with pytest.raises(ValueError, match="one label per sample"):
        encode_labels([1, 2], 3)
    with pytest.raises(ValueError, match="no labelled sample"):
        encode_labels([-1, -1], 2)


def test_every_mark_of_an_unlabelled_point_is_one_rule():
    # Issue 58: pd.NA in a pandas string Series, "" and a text "-1" (a labels file read as
    # text) were taken as classes; the CLI's help promised "-1 or empty entries are
    # unlabelled". One rule now serves fit(X, y), the CLI and unimap.tl.
    pd = pytest.importorskip("pandas")
    expected = [0, -1, 1, -1, -1, -1, -1]
    for labels in (pd.Series(["a", pd.NA, "b", "", " -1 ", None, "  "], dtype="string"),
                   np.array(["a", "", "b", "-1", " ", "", ""]),
                   np.array(["a", None, "b", math.nan, "", -1, pd.NA], dtype=object)):
        np.testing.assert_array_equal(encode_labels(labels, 7), expected)
    np.testing.assert_array_equal(encode_labels(pd.Categorical(["b", None, "a"]), 3),
                                  [1, -1, 0])
    assert list(encode_labels([True, False, True], 3)) == [1, 0, 1]  # booleans are classes


def test_pandas_na_and_none_give_the_same_supervised_fit(digits):
    pd = pytest.importorskip("pandas")
    X, y, _, _ = digits
    text = np.where(np.arange(len(y)) % 3 == 0, None, y.astype(str)).astype(object)
    with_none = UMAP(n_epochs=30, random_state=0).fit_transform(X, text)
    with_na = UMAP(n_epochs=30, random_state=0).fit_transform(
        X, pd.Series(text, dtype="string"))
    np.testing.assert_array_equal(with_none, with_na)


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X[:900].astype(np.float32), y[:900], X[900:1300].astype(np.float32), y[900:1300]


@pytest.mark.parametrize("make", [
    lambda: UMAP(n_epochs=100, random_state=0), lambda: GDR(n_epochs=100, random_state=0),
    lambda: GDR(normalized=True, n_epochs=200, random_state=0),
])
def test_labels_separate_the_classes(make, digits):
    X, y, _, _ = digits
    plain = knn_accuracy(make().fit_transform(X), y)
    supervised = knn_accuracy(make().fit_transform(X, y), y)
    # the unsupervised maps of these 900 digits reach 0.978-0.982 (measured); the labels' graph
    # must push the training points' own neighbourhoods to (nearly) one class
    assert supervised > max(plain, 0.985), (plain, supervised)


def test_semi_supervised_fit_uses_the_known_labels(digits):
    X, y, _, _ = digits
    partial = np.where(np.arange(len(y)) % 2 == 0, y, -1)
    model = UMAP(n_epochs=100, random_state=0)
    semi = model.fit_transform(X, partial)
    plain = UMAP(n_epochs=100, random_state=0).fit_transform(X)
    assert not np.array_equal(semi, plain)
    labelled = partial != -1
    assert knn_accuracy(semi[labelled], y[labelled]) >= knn_accuracy(
        plain[labelled], y[labelled])


def test_supervised_model_places_new_points_by_their_features(digits):
    X, y, X_new, y_new = digits
    model = UMAP(n_epochs=100, random_state=0).fit(X, y)
    placed = model.transform(X_new)
    from sklearn.neighbors import KNeighborsClassifier

    held_out = KNeighborsClassifier(10).fit(model.embedding_, y).score(placed, y_new)
    assert held_out > 0.9  # digits' unsupervised held-out 10-NN accuracy is about 0.95


def test_numeric_target_changes_the_graph(digits):
    X, y, _, _ = digits
    model = UMAP(n_epochs=50, random_state=0, target_metric="l2", target_n_neighbors=10)
    emb = model.fit_transform(X, y.astype(float))
    assert np.isfinite(emb).all()
    assert not np.array_equal(emb, UMAP(n_epochs=50, random_state=0).fit_transform(X))
    two_columns = np.column_stack([y, y % 2]).astype(float)
    assert np.isfinite(UMAP(n_epochs=20, random_state=0, target_metric="euclidean")
                       .fit_transform(X, two_columns)).all()


def test_supervised_fit_is_the_same_for_any_n_jobs(digits):
    X, y, _, _ = digits
    one = UMAP(n_epochs=50, random_state=0, n_jobs=1).fit_transform(X, y)
    two = UMAP(n_epochs=50, random_state=0, n_jobs=2).fit_transform(X, y)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize(("y", "kw", "message"), [
    (np.arange(5), {}, "one label per sample"),
    (np.full(60, -1), {}, "no labelled sample"),
    (np.arange(60), {"target_n_neighbors": 1}, "target_n_neighbors"),
    (np.arange(60), {"target_n_neighbors": -5}, r"target_n_neighbors must be -1 or"),
    (np.r_[np.nan, np.ones(59)], {"target_metric": "l2"}, "NaN"),
    (np.arange(7), {"target_metric": "l1"}, "one target per sample"),
])
def test_bad_targets_are_refused_by_name(y, kw, message):
    X = np.random.default_rng(0).normal(size=(60, 4))
    with pytest.raises(ValueError, match=message):
        UMAP(n_epochs=5, **kw).fit(X, y)


def test_directed_gdr_refuses_labels():
    X = np.random.default_rng(0).normal(size=(60, 4))
    with pytest.raises(ValueError, match="symmetrization='none'"):
        GDR(symmetrization="none", n_epochs=5).fit(X, np.arange(60) % 2)


def test_tsne_ignores_y_as_scikit_learn_does(digits):
    X, y, _, _ = digits
    kw = dict(max_iter=60, early_exaggeration_iter=20, random_state=0)
    np.testing.assert_array_equal(TSNE(**kw).fit_transform(X[:200], y[:200]),
                                  TSNE(**kw).fit_transform(X[:200]))
