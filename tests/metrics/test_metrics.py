from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.manifold import trustworthiness as sklearn_trustworthiness

from unimap.affinity.fuzzy import fuzzy_simplicial_set
from unimap.lowdim.ab_fit import find_ab_params
from unimap.methods.pca import PCA
from unimap.metrics import (
    SampledScore,
    continuity,
    distance_correlation,
    knn_accuracy,
    knn_accuracy_loo,
    knn_recall,
    triplet_accuracy,
    trustworthiness,
    trustworthiness_sampled,
    tsne_kl_divergence,
    umap_cross_entropy,
)
from unimap.metrics import common as metrics  # holds BLOCK_BYTES, read at call time
from unimap.neighbors.graph import nearest_neighbors


@pytest.fixture(scope="module")
def digits_2d(digits):
    X, y = digits
    return X, PCA(2).fit_transform(X), y


@pytest.fixture(scope="module")
def gaussian():
    """Continuous data (no tied distances) and a noisy 3-D linear embedding of it."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 10))
    embedding = X[:, :3] + 0.3 * rng.standard_normal((400, 3))
    return X, embedding


@pytest.fixture(scope="module")
def integer_points():
    """Small-integer coordinates: float32 distances are exact, so ties are exact ties."""
    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, size=(300, 6)).astype(np.float32)
    embedding = rng.integers(0, 8, size=(300, 2)).astype(np.float32)
    labels = rng.integers(0, 4, size=300)
    return X, embedding, labels


def _brute_neighbors(A, k):
    D = cdist(A, A)
    np.fill_diagonal(D, np.inf)
    return np.argsort(D, axis=1, kind="stable")[:, :k]


def _reference_vote(neighbor_labels):
    """Majority label; among tied labels, the one met first (nearest)."""
    votes = []
    for row in neighbor_labels:
        counts = Counter(row.tolist())
        top = max(counts.values())
        votes.append(next(label for label in row if counts[label] == top))
    return np.array(votes)


# -- trustworthiness and continuity -----------------------------------------------------------
@pytest.mark.parametrize(("n_neighbors", "metric"), [(5, "euclidean"), (12, "euclidean"),
                                                      (5, "cosine"), (30, "manhattan")])
def test_trustworthiness_equals_sklearn_on_digits(digits_2d, n_neighbors, metric):
    # Digits have many exactly tied distances: equality needs scikit-learn's tie order too.
    X, embedding, _ = digits_2d
    expected = sklearn_trustworthiness(X, embedding, n_neighbors=n_neighbors, metric=metric)
    assert abs(trustworthiness(X, embedding, n_neighbors, metric) - expected) < 1e-9


def test_continuity_is_trustworthiness_with_roles_swapped(digits_2d):
    X, embedding, _ = digits_2d
    expected = sklearn_trustworthiness(embedding, X, n_neighbors=7)
    assert abs(continuity(X, embedding, 7) - expected) < 1e-9


def test_blocked_rows_give_the_same_value(gaussian, monkeypatch):
    X, embedding = gaussian
    expected = sklearn_trustworthiness(X, embedding, n_neighbors=10)
    monkeypatch.setattr(metrics, "BLOCK_BYTES", 8 * 400 * 37)  # blocks of 37 rows
    assert abs(trustworthiness(X, embedding, 10) - expected) < 1e-12
    assert abs(continuity(X, embedding, 10) - sklearn_trustworthiness(embedding, X,
                                                                      n_neighbors=10)) < 1e-12


def test_precomputed_distances(gaussian):
    X, embedding = gaussian
    D = cdist(X, X)
    expected = sklearn_trustworthiness(D, embedding, n_neighbors=8, metric="precomputed")
    assert abs(trustworthiness(D, embedding, 8, metric="precomputed") - expected) < 1e-12


def test_identity_embedding_is_perfect_and_random_is_not(gaussian):
    X, _ = gaussian
    assert trustworthiness(X, X, 10) == 1.0
    assert continuity(X, X, 10) == 1.0
    assert knn_recall(X, X, 10) == 1.0
    assert trustworthiness_sampled(X, X, 10, n_samples=50, random_state=0) == (1.0, 0.0)
    noise = np.random.default_rng(5).standard_normal((X.shape[0], 2))
    assert trustworthiness(X, noise, 10) < 0.6
    assert continuity(X, noise, 10) < 0.6
    assert knn_recall(X, noise, 10) < 0.1


# -- sampled trustworthiness ------------------------------------------------------------------
def test_sampled_over_all_points_is_exact(gaussian):
    X, embedding = gaussian
    for metric in ("euclidean", "cosine"):
        value, stderr = trustworthiness_sampled(X, embedding, 10, n_samples=10_000,
                                                metric=metric)
        assert abs(value - trustworthiness(X, embedding, 10, metric)) < 1e-12
        assert stderr == 0.0


def test_sampled_is_within_three_standard_errors_on_mnist():
    from unimap.datasets import load_mnist

    try:
        X, _ = load_mnist(n_samples=5000, download=False)
    except FileNotFoundError:
        pytest.skip("MNIST files not available")
    embedding = PCA(2).fit_transform(X)
    exact = trustworthiness(X, embedding, 15)
    score = trustworthiness_sampled(X, embedding, 15, n_samples=500, random_state=0)
    assert isinstance(score, SampledScore)
    assert 0 < score.stderr < 0.02
    assert abs(score.value - exact) < 3 * score.stderr


def test_sampled_is_reproducible_and_near_exact_with_ties(digits_2d):
    X, embedding, _ = digits_2d
    first = trustworthiness_sampled(X, embedding, 10, n_samples=300, random_state=4)
    assert first == trustworthiness_sampled(X, embedding, 10, n_samples=300, random_state=4)
    # All points: the exact value, up to the order of tied input distances (stable here,
    # numpy's unstable sort in scikit-learn), which moves it by about 1e-6 on digits.
    value, _ = trustworthiness_sampled(X, embedding, 10, n_samples=len(X))
    assert abs(value - trustworthiness(X, embedding, 10)) < 1e-4


# -- neighbourhood and class preservation -----------------------------------------------------
def test_knn_recall_against_brute_force(integer_points):
    X, embedding, _ = integer_points
    k = 12
    input_nn, embedding_nn = _brute_neighbors(X, k), _brute_neighbors(embedding, k)
    pairs = zip(input_nn, embedding_nn, strict=True)
    per_point = np.array([len(set(a) & set(b)) / k for a, b in pairs])
    assert knn_recall(X, embedding, k) == pytest.approx(per_point.mean(), abs=1e-12)
    assert knn_recall(X, embedding, k, sample_size=1000) == knn_recall(X, embedding, k)
    sampled = knn_recall(X, embedding, k, sample_size=150, random_state=0)
    assert sampled == knn_recall(X, embedding, k, sample_size=150, random_state=0)
    assert abs(sampled - per_point.mean()) < 4 * per_point.std() / np.sqrt(150)


def test_knn_accuracy_loo_against_brute_force(integer_points):
    _, embedding, labels = integer_points
    for k in (1, 4, 10):  # even k: many tied votes, decided by the nearest neighbour
        expected = (_reference_vote(labels[_brute_neighbors(embedding, k)]) == labels).mean()
        assert knn_accuracy_loo(embedding, labels, k) == pytest.approx(expected, abs=1e-12)


def test_knn_accuracy_folds_against_brute_force(integer_points):
    _, embedding, labels = integer_points
    n, k = len(labels), 6
    folds = np.array_split(np.random.default_rng(3).permutation(n), 4)
    correct = 0
    for test in folds:
        train = np.setdiff1d(np.arange(n), test)
        D = cdist(embedding[test], embedding[train])
        nearest = train[np.argsort(D, axis=1, kind="stable")[:, :k]]
        correct += (_reference_vote(labels[nearest]) == labels[test]).sum()
    assert knn_accuracy(embedding, labels, k, n_folds=4, random_state=3) == correct / n


def test_knn_accuracy_separated_and_random_labels(blobs):
    X, y = blobs
    assert knn_accuracy(X, y) == 1.0
    assert knn_accuracy_loo(X, y) == 1.0
    shuffled = np.random.default_rng(0).permutation(y)
    assert knn_accuracy(X, shuffled) < 0.45  # chance is 0.25
    assert knn_accuracy(X, np.array(["a", "b", "c", "d"])[y]) == 1.0  # any label type


# -- global structure -------------------------------------------------------------------------
def test_triplet_accuracy_known_answers(gaussian):
    X, _ = gaussian
    assert triplet_accuracy(X, X, 5000, random_state=0) == 1.0
    assert triplet_accuracy(X, 2 * X + 1, 5000, random_state=0) == 1.0
    assert triplet_accuracy(cdist(X, X), X, 5000, random_state=0, metric="precomputed") == 1.0
    noise = np.random.default_rng(1).standard_normal((len(X), 2))
    assert 0.45 < triplet_accuracy(X, noise, 5000, random_state=0) < 0.55
    assert 0.5 < triplet_accuracy(X, X[:, :2], 5000, random_state=0) < 1.0


def test_distance_correlation_known_answers(gaussian):
    X, _ = gaussian
    assert distance_correlation(X, 2 * X, 20000, random_state=0) == pytest.approx(1.0)
    assert distance_correlation(X, -X, 20000, random_state=0) == pytest.approx(1.0)
    noise = np.random.default_rng(2).standard_normal((len(X), 2))
    assert abs(distance_correlation(X, noise, 20000, random_state=0)) < 0.05
    assert 0.2 < distance_correlation(X, X[:, :3], 20000, random_state=0) < 1.0
    first = distance_correlation(X, X[:, :3], 1000, random_state=7)
    assert first == distance_correlation(X, X[:, :3], 1000, random_state=7)


# -- objectives -------------------------------------------------------------------------------
def _joint_probabilities(X, k=10):
    graph, _ = nearest_neighbors(X, k, method="exact")
    rows = np.repeat(np.arange(len(X)), k - 1)
    weights = np.exp(-graph.distances[:, 1:].ravel() ** 2 / 4.0)
    P = sp.csr_matrix((weights, (rows, graph.indices[:, 1:].ravel())), shape=(len(X),) * 2)
    P = P + P.T
    return P / P.sum()


@pytest.mark.parametrize("dof", [1.0, 0.6])
def test_tsne_kl_divergence_against_dense(blobs, dof):
    X, _ = blobs
    X, embedding = X[:200], np.random.default_rng(0).standard_normal((200, 2))
    P = _joint_probabilities(X)
    dense_p = P.toarray()
    d2 = cdist(embedding, embedding, "sqeuclidean")
    w = (1.0 + d2 / dof) ** (-dof)
    np.fill_diagonal(w, 0.0)
    q = w / w.sum()
    mask = dense_p > 0
    expected = np.sum(dense_p[mask] * np.log(dense_p[mask] / q[mask]))
    assert tsne_kl_divergence(P, embedding, dof) == pytest.approx(expected, rel=1e-10)
    assert tsne_kl_divergence(dense_p, embedding, dof) == pytest.approx(expected, rel=1e-10)


def test_tsne_kl_divergence_is_lower_for_a_better_embedding(blobs):
    X, _ = blobs
    P = _joint_probabilities(X)
    noise = np.random.default_rng(0).standard_normal((len(X), 2))
    assert 0 < tsne_kl_divergence(P, X[:, :2]) < tsne_kl_divergence(P, noise)


@pytest.mark.parametrize("ab", [None, (1.2, 0.8)])
def test_umap_cross_entropy_against_dense(blobs, ab):
    X, _ = blobs
    X, embedding = X[:200], np.random.default_rng(0).standard_normal((200, 2))
    graph, _ = nearest_neighbors(X, 15, method="exact")
    W, _, _ = fuzzy_simplicial_set(graph.indices, graph.distances)
    a, b = find_ab_params(1.0, 0.1) if ab is None else ab
    d = cdist(embedding, embedding)
    off_diagonal = ~np.eye(len(d), dtype=bool)
    v = 1.0 / (1.0 + a * d[off_diagonal] ** (2 * b))
    w = W.toarray().astype(np.float64)[off_diagonal]
    expected = -np.sum(w * np.log(v) + (1.0 - w) * np.log(1.0 - v))
    kwargs = {} if ab is None else {"a": a, "b": b}
    assert umap_cross_entropy(W, embedding, **kwargs) == pytest.approx(expected, rel=1e-9)


# -- bad input --------------------------------------------------------------------------------
def test_mismatched_lengths_are_rejected(gaussian):
    X, embedding = gaussian
    for function in (trustworthiness, continuity, trustworthiness_sampled, knn_recall,
                     triplet_accuracy, distance_correlation):
        with pytest.raises(ValueError, match="embedding has 399"):
            function(X, embedding[:-1])
    with pytest.raises(ValueError, match="labels has 399"):
        knn_accuracy(embedding, np.zeros(399))
    with pytest.raises(ValueError, match="labels has 399"):
        knn_accuracy_loo(embedding, np.zeros(399))
    with pytest.raises(ValueError, match=r"P has shape \(399, 399\)"):
        tsne_kl_divergence(sp.eye(399) / 399, embedding)
    with pytest.raises(ValueError, match=r"graph has shape"):
        umap_cross_entropy(sp.eye(399), embedding)


def test_too_many_neighbors_for_trustworthiness(gaussian):
    X, embedding = gaussian
    for function in (trustworthiness, continuity, trustworthiness_sampled):
        with pytest.raises(ValueError, match="n_neighbors must be less than n_samples / 2"):
            function(X, embedding, 200)
    assert trustworthiness(X, embedding, 199) < 1.0
    with pytest.raises(ValueError, match="n_neighbors"):
        knn_recall(X, embedding, 400)
    with pytest.raises(ValueError, match="n_neighbors"):
        knn_accuracy(embedding, np.zeros(400), n_neighbors=321, n_folds=5)


def test_nan_and_bad_parameters_are_rejected(gaussian):
    X, embedding = gaussian
    bad = X.copy()
    bad[3, 1] = np.nan
    for function in (trustworthiness, trustworthiness_sampled, knn_recall, triplet_accuracy,
                     distance_correlation):
        with pytest.raises(ValueError, match="X contains NaN"):
            function(bad, embedding)
        with pytest.raises(ValueError, match="embedding contains NaN"):
            function(embedding, bad)
    with pytest.raises(ValueError, match="labels contains NaN"):
        knn_accuracy(embedding, np.where(np.arange(400) == 5, np.nan, 1.0))
    with pytest.raises(ValueError, match="metric"):
        trustworthiness(X, embedding, metric="chebyshev")
    with pytest.raises(ValueError, match="metric"):
        trustworthiness_sampled(X, embedding, metric="manhattan")
    with pytest.raises(ValueError, match="square"):
        trustworthiness(X, embedding, metric="precomputed")
    with pytest.raises(ValueError, match="n_samples"):
        trustworthiness_sampled(X, embedding, n_samples=0)
    with pytest.raises(ValueError, match="n_folds"):
        knn_accuracy(embedding, np.zeros(400), n_folds=1)
    with pytest.raises(ValueError, match="n_triplets"):
        triplet_accuracy(X, embedding, 0)


def test_bad_objective_inputs_are_rejected(blobs):
    X, _ = blobs
    P = _joint_probabilities(X)
    with pytest.raises(ValueError, match="sum to 1"):
        tsne_kl_divergence(2 * P, X[:, :2])
    with pytest.raises(ValueError, match="non-negative"):
        tsne_kl_divergence(-P, X[:, :2])
    with pytest.raises(ValueError, match="zero diagonal"):
        tsne_kl_divergence((P + sp.eye(len(X))) / 2, X[:, :2])
    with pytest.raises(ValueError, match="dof"):
        tsne_kl_divergence(P, X[:, :2], dof=0.0)
    with pytest.raises(ValueError, match="both a and b"):
        umap_cross_entropy(P, X[:, :2], a=1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        umap_cross_entropy(P * 1e6, X[:, :2])
