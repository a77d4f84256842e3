import numpy as np
import pytest

from unimap.affinity.fuzzy import fuzzy_simplicial_set, fuzzy_union, smooth_knn_dist
from unimap.lowdim.ab_fit import find_ab_params
from unimap.neighbors.graph import nearest_neighbors


@pytest.fixture(scope="module")
def knn():
    X = np.random.default_rng(0).standard_normal((500, 6)).astype(np.float32)
    graph, _ = nearest_neighbors(X, 15, method="exact")
    return graph.indices, graph.distances


def test_sigma_rho_calibration_reaches_log2_k(knn):
    _, dist = knn
    sigmas, rhos = smooth_knn_dist(dist, 15)
    np.testing.assert_allclose(rhos, dist[:, 1], rtol=1e-6)  # local_connectivity=1
    d = dist[:, 1:].astype(np.float64) - rhos[:, None]
    sums = np.where(d > 0, np.exp(-d / sigmas[:, None]), 1.0).sum(axis=1)
    np.testing.assert_allclose(sums, np.log2(15), rtol=1e-4)


@pytest.mark.parametrize("local_connectivity", [0.0, 1.0])
def test_calibration_reaches_log2_k_at_any_distance_scale(knn, local_connectivity):
    # Raw pixel or count data put neighbours ~1000 apart; with local_connectivity 0 (new
    # points in transform: no rho) exp(-d) underflowed at the first Newton step, and sigma
    # went to 2**64: every membership 1 (MNIST's held-out rows, before the fix).
    _, dist = knn
    for scale in (1.0, 1e3, 1e6):
        sigmas, rhos = smooth_knn_dist(dist * np.float32(scale), 15, local_connectivity)
        d = (dist[:, 1:] * np.float32(scale)).astype(np.float64) - rhos[:, None]
        sums = np.where(d > 0, np.exp(-d / sigmas[:, None]), 1.0).sum(axis=1)
        np.testing.assert_allclose(sums, np.log2(15), rtol=1e-4)


def test_local_connectivity_interpolates(knn):
    _, dist = knn
    _, rhos = smooth_knn_dist(dist, 15, local_connectivity=1.5)
    np.testing.assert_allclose(rhos, 0.5 * (dist[:, 1] + dist[:, 2]), rtol=1e-5)


def test_fuzzy_union_is_symmetric_and_matches_formula(knn):
    idx, dist = knn
    graph, sigmas, rhos = fuzzy_simplicial_set(idx, dist)
    assert abs(graph - graph.T).max() < 1e-6
    assert graph.diagonal().max() == 0
    # check one entry against w_ij + w_ji - w_ij w_ji
    i, pos = 0, 3
    j = idx[i, pos]
    w_ij = np.exp(-max(dist[i, pos] - rhos[i], 0) / sigmas[i])
    row_j = list(idx[j])
    w_ji = np.exp(-max(dist[j, row_j.index(i)] - rhos[j], 0) / sigmas[j]) if i in row_j else 0
    assert graph[i, j] == pytest.approx(w_ij + w_ji - w_ij * w_ji, rel=1e-5)
    assert graph.data.max() <= 1.0 + 1e-6


def test_intersection_is_subset_of_union(knn):
    idx, dist = knn
    union, _, _ = fuzzy_simplicial_set(idx, dist, set_op_mix_ratio=1.0)
    inter, _, _ = fuzzy_simplicial_set(idx, dist, set_op_mix_ratio=0.0)
    assert inter.nnz < union.nnz
    assert (union - inter).min() >= -1e-6


def test_fuzzy_union_small_example():
    import scipy.sparse as sp

    W = sp.csr_matrix(np.array([[0, 0.5], [0.2, 0]], dtype=np.float32))
    U = fuzzy_union(W).toarray()
    assert U[0, 1] == pytest.approx(0.5 + 0.2 - 0.1)
    assert U[1, 0] == pytest.approx(U[0, 1])


def test_ab_params_for_defaults():
    a, b = find_ab_params(1.0, 0.1)
    assert a == pytest.approx(1.577, abs=2e-3)
    assert b == pytest.approx(0.895, abs=2e-3)
    with pytest.raises(ValueError, match="min_dist"):
        find_ab_params(1.0, 2.0)


def test_ab_fit_matches_scipy_curve_fit():
    # find_ab_params fits without scipy.optimize (its import costs every fit 0.24 s); it must
    # land on curve_fit's least-squares solution.
    from scipy.optimize import curve_fit

    for spread in (0.5, 1.0, 2.0, 5.0):
        for fraction in (0.0, 0.001, 0.05, 0.1, 0.3, 0.5, 0.99):
            min_dist = fraction * spread
            x = np.linspace(0, spread * 3, 300)
            y = np.where(x < min_dist, 1.0, np.exp(-(x - min_dist) / spread))
            with np.errstate(divide="ignore"):
                (a_ref, b_ref), _ = curve_fit(lambda x, a, b: 1 / (1 + a * x ** (2 * b)), x, y)
            a, b = find_ab_params(spread, min_dist)
            np.testing.assert_allclose([a, b], [a_ref, b_ref], rtol=1e-4)


def test_ab_fit_is_scale_free_and_valid_for_extreme_spreads():
    # The curve only depends on min_dist/spread: b must too, and a·spread^(2b) (the a of the
    # unit-spread problem). curve_fit from (1, 1) in raw units gave b < 0 for spread = 0.05.
    for fraction in (0.0, 0.1, 0.5, 1.0):
        a1, b1 = find_ab_params(1.0, fraction)
        for spread in (0.01, 0.05, 20.0, 100.0):
            a, b = find_ab_params(spread, fraction * spread)
            assert a > 0 and b > 0
            np.testing.assert_allclose(b, b1, rtol=1e-6)
            np.testing.assert_allclose(a * spread ** (2 * b), a1, rtol=1e-6)
