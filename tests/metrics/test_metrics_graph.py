"""unimap.metrics.knn_graph_recall: the recall of a kNN graph against a brute-force count."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from unimap.metrics import knn_graph_recall
from unimap.neighbors.graph import nearest_neighbors


def _exact_graph(X, k, metric="euclidean"):
    """(n, k + 1) lists, the point itself first, from scipy's distances."""
    D = cdist(X, X, metric="cityblock" if metric == "manhattan" else metric)
    np.fill_diagonal(D, -1.0)  # the point itself first
    return np.argsort(D, axis=1, kind="stable")[:, : k + 1], D


def _brute_recall(graph, D, rows):
    """Per row: listed others no farther than the exact k-th other (ties count)."""
    k = graph.shape[1] - 1
    terms = []
    for i in rows:
        others = np.delete(D[i], i)
        bound = np.sort(others)[k - 1]
        listed = set([j for j in graph[i].tolist() if j != i][:k])  # a repeat counts once
        terms.append(sum(D[i, j] <= bound * (1 + 1e-9) for j in listed) / k)
    return np.array(terms)


@pytest.fixture(scope="module")
def blob():
    return np.random.default_rng(0).standard_normal((600, 8)).astype(np.float32)


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "correlation", "manhattan"])
def test_exact_graph_scores_one(blob, metric):
    graph, _ = _exact_graph(blob, 10, metric)
    score = knn_graph_recall(blob, graph, metric=metric, sample_size=None)
    assert score.value == pytest.approx(1.0) and score.stderr == 0.0


def test_damaged_graph_against_brute_force(blob):
    graph, D = _exact_graph(blob, 10)
    rng = np.random.default_rng(1)
    damaged = graph.copy()
    # replace a random third of the neighbour columns by random rows
    mask = rng.random(damaged[:, 1:].shape) < 1 / 3
    damaged[:, 1:][mask] = rng.integers(0, blob.shape[0], mask.sum())
    expected = _brute_recall(damaged, D, range(blob.shape[0]))
    score = knn_graph_recall(blob, damaged, sample_size=None)
    assert 0.55 < score.value < 0.8  # ~2/3 kept, a few random rows are true neighbours
    assert score.value == pytest.approx(expected.mean(), abs=1e-12)
    sampled = knn_graph_recall(blob, damaged, sample_size=200, random_state=0)
    assert sampled == knn_graph_recall(blob, damaged, sample_size=200, random_state=0)
    assert abs(sampled.value - expected.mean()) < 4 * sampled.stderr
    assert 0 < sampled.stderr < expected.std() / np.sqrt(200) * 1.01


def test_repeated_ids_count_once_and_self_is_skipped(blob):
    graph, D = _exact_graph(blob, 6)
    repeated = graph.copy()
    repeated[:, 2] = repeated[:, 1]  # the nearest listed twice: one hit, one miss
    assert knn_graph_recall(blob, repeated, sample_size=None).value == pytest.approx(5 / 6)
    shifted = np.roll(graph, -1, axis=1)  # the point itself last: still skipped
    assert knn_graph_recall(blob, shifted, sample_size=None).value == pytest.approx(1.0)


def test_ties_at_the_kth_distance_count_either_way():
    # a point with 4 others at the same distance: any 2 of them are its 2 nearest
    X = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1], [5, 5], [6, 5], [5, 6]],
                 dtype=np.float32)
    graph, D = _exact_graph(X, 2)
    graph[0, 1:] = [3, 4]  # not the order a stable sort picks
    assert knn_graph_recall(X, graph, sample_size=None).value == pytest.approx(1.0)


def test_precomputed_distances(blob):
    graph, D = _exact_graph(blob, 5)
    D = cdist(blob, blob)
    assert knn_graph_recall(D, graph, metric="precomputed", sample_size=None).value == 1.0


def test_the_default_hnsw_graph_on_clustered_data():
    # The default graph's recall on clustered 20-D data: high (measured 0.99+), and a graph
    # with half its lists shuffled across rows scores about half that.
    rng = np.random.default_rng(2)
    X = (rng.standard_normal((20, 20)) * 6)[rng.integers(0, 20, 25_000)]
    X = (X + rng.standard_normal(X.shape)).astype(np.float32)
    graph = nearest_neighbors(X, 15, method="hnsw")[0].indices
    score = knn_graph_recall(X, graph, sample_size=500, random_state=0)
    assert score.value > 0.95
    shuffled = graph.copy()
    rows = rng.permutation(X.shape[0])[: X.shape[0] // 2]
    shuffled[rows, 1:] = graph[rng.permutation(rows), 1:]
    worse = knn_graph_recall(X, shuffled, sample_size=500, random_state=0)
    assert abs(worse.value - score.value / 2) < 0.06


def test_bad_input_is_named(blob):
    graph, _ = _exact_graph(blob, 5)
    with pytest.raises(ValueError, match="shape"):
        knn_graph_recall(blob, graph[:-1])
    with pytest.raises(TypeError, match="integer"):
        knn_graph_recall(blob, graph.astype(float))
    with pytest.raises(ValueError, match=r"\[0, 599\]"):
        knn_graph_recall(blob, graph + 1)
    with pytest.raises(ValueError, match="metric"):
        knn_graph_recall(blob, graph, metric="hamming")
    with pytest.raises(ValueError, match="columns"):
        knn_graph_recall(blob, graph[:, :1])
