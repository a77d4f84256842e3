"""The spectral start of nearly disconnected graphs (unimap.initialization.near_components)."""

import numpy as np
import pytest
import scipy.sparse as sp

from unimap.initialization import near_components as near
from unimap.initialization.spectral import spectral_init


def _groups_in_a_chain(n_groups=8, size=120, weak=1e-4, seed=0):
    """Dense random groups; group g joined to g + 1 by a few edges of weight ``weak``. The
    vertices are shuffled so that no test can pass by reading the groups off the order."""
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(n_groups):
        w = rng.uniform(0.2, 1.0, (size, size)) * (rng.random((size, size)) < 0.3)
        w = np.triu(w, 1)
        blocks.append(sp.csr_matrix(w + w.T))
    graph = sp.block_diag(blocks, format="lil")
    for g in range(n_groups - 1):
        for _ in range(3):
            a, b = g * size + rng.integers(size), (g + 1) * size + rng.integers(size)
            graph[a, b] = graph[b, a] = weak
    labels = np.repeat(np.arange(n_groups), size)
    perm = rng.permutation(labels.size)
    graph = sp.csr_matrix(graph)[perm][:, perm]
    return sp.csr_matrix(graph), labels[perm]


def _same_partition(a, b):
    pairs = {(int(x), int(y)) for x, y in zip(a, b, strict=True)}
    return len(pairs) == len(set(a)) == len(set(b))


def test_the_groups_of_a_nearly_disconnected_graph_are_found():
    graph, truth = _groups_in_a_chain()
    n_groups, labels = near.near_components(graph, 2, seed=0)
    assert n_groups == 8 and _same_partition(labels, truth)
    assert labels[0] == 0 and labels.dtype == np.int32  # numbered by first vertex


def test_the_groups_are_placed_along_the_graph_between_them():
    # The groups form a chain (g joined to g + 1 only): each group's nearest other group in
    # the layout must be one of its neighbours in the chain.
    from scipy.spatial import cKDTree

    graph, truth = _groups_in_a_chain()
    n_groups, labels = near.near_components(graph, 2, seed=0)
    meta = near.group_positions(graph, labels, n_groups, 2)
    along = meta[[labels[truth == g][0] for g in range(8)]]
    nearest = cKDTree(along).query(along, k=2)[1][:, 1]
    assert np.all(np.abs(nearest - np.arange(8)) == 1)
    assert np.abs(meta).max() == pytest.approx(1.0)


def _overlapping_boxes(Y, truth):
    """How many pairs of groups have overlapping bounding boxes in the layout ``Y``."""
    n_groups = int(truth.max()) + 1
    lo = np.vstack([Y[truth == g].min(0) for g in range(n_groups)])
    hi = np.vstack([Y[truth == g].max(0) for g in range(n_groups)])
    overlap = ((lo[:, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[:, None, :])).all(2)
    np.fill_diagonal(overlap, False)
    return int(overlap.sum()) // 2


# Which two vectors the eigensolver returns from a nearly degenerate space follows its start
# vector (the seed) and the CPU's rounding, so the plain start's defect shows on some seeds
# only: 9 of seeds 0-19 mixed groups on a Zen 4 core (AVX-512 OpenBLAS), 7 of 20 with the
# Haswell kernels forced (NUMBA_CPU_NAME=haswell OPENBLAS_CORETYPE=Haswell), seed 0 on the
# first only. Over 20 seeds, the chance that none mixes at such a rate is below 1e-4.
SEEDS = range(20)


def test_spectral_init_lays_nearly_disconnected_groups_out_apart():
    graph, truth = _groups_in_a_chain()
    for seed in SEEDS:
        Y, info = spectral_init(graph, 2, seed=seed)
        assert info["n_graph_components"] == 1 and info["n_near_components"] == 8
        assert np.isfinite(Y).all()
        assert _overlapping_boxes(Y, truth) == 0, seed
    Y, _ = spectral_init(graph, 2, seed=0)
    again, _ = spectral_init(graph, 2, seed=0)
    np.testing.assert_array_equal(Y, again)


def test_the_plain_eigenvectors_mix_such_groups(monkeypatch):
    # The defect the groups' layout mends: without it, the two eigenvectors taken from a
    # nearly degenerate space put some groups' boxes on top of each other.
    graph, truth = _groups_in_a_chain()
    monkeypatch.setattr("unimap.initialization.spectral.nearly_disconnected",
                        lambda evals, d: False)
    mixed = []
    for seed in SEEDS:
        Y, info = spectral_init(graph, 2, seed=seed)
        assert "n_near_components" not in info
        mixed.append(_overlapping_boxes(Y, truth) > 0)
    assert any(mixed)


def test_a_well_connected_graph_keeps_the_plain_spectral_start():
    rng = np.random.default_rng(0)
    n = 900
    w = rng.uniform(0.2, 1.0, (n, n)) * (rng.random((n, n)) < 0.02)
    graph = sp.csr_matrix(np.triu(w, 1) + np.triu(w, 1).T)
    _, info = spectral_init(graph, 2, seed=0)
    assert "n_near_components" not in info


def test_three_groups_keep_the_plain_start():
    # Three groups in 2-D: eigenvectors 2 and 3 span their indicators, nothing to mend.
    graph, _ = _groups_in_a_chain(n_groups=3)
    assert near.near_components(graph, 2, seed=0) is None
    Y, info = spectral_init(graph, 2, seed=0)
    assert "n_near_components" not in info and np.isfinite(Y).all()


def test_more_groups_than_looked_for_are_found_as_unions_never_split():
    # Forty groups: more than MAX_GROUPS, and Lanczos misses some of the forty nearly equal
    # eigenvalues; the groups found must still be unions of whole groups.
    graph, truth = _groups_in_a_chain(n_groups=40, size=40)
    found = near.near_components(graph, 2, seed=0)
    assert found is not None
    n_groups, labels = found
    assert 2 < n_groups <= near.MAX_GROUPS
    assert all(np.unique(labels[truth == g]).size == 1 for g in range(40))
    Y, info = spectral_init(graph, 2, seed=0)
    assert np.isfinite(Y).all()


def test_supervised_digits_start_with_their_classes_apart():
    # A supervised fit's graph is nearly disconnected by construction (edges between labels
    # scaled by about e^-5): every class must start in its own region. Measured by the ARI of
    # k-means (10 clusters) on the start against the labels: 0.967 with the groups' layout,
    # 0.46-0.67 with the plain eigenvectors (seeds 0-3, measured when this was written).
    from sklearn.cluster import KMeans
    from sklearn.datasets import load_digits
    from sklearn.metrics import adjusted_rand_score

    import unimap

    X, y = load_digits(return_X_y=True)
    model = unimap.UMAP(random_state=0).fit(X, y)
    assert model.init_info_["n_near_components"] >= 10
    start, _ = spectral_init(model.graph_, 2, seed=0)
    clusters = KMeans(10, n_init=5, random_state=0).fit_predict(start)
    assert adjusted_rand_score(y, clusters) > 0.9
