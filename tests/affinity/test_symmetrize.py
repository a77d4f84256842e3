"""The affinity matrices built by unimap.affinity.symmetrize_numba are bitwise those of scipy's
sparse operations, which built them before (kept here as the oracle), in every mode."""

import numpy as np
import pytest
import scipy.sparse as sp

from unimap.affinity.fuzzy import (
    fuzzy_simplicial_set,
    fuzzy_union,
    membership_weights,
    smooth_knn_dist,
)
from unimap.affinity.joint import joint_affinities, knn_affinities
from unimap.affinity.perplexity import perplexity_affinities, symmetrize_tsne


def _scipy_directed(indices, values, n):
    m, k = indices.shape
    rows = np.repeat(np.arange(m, dtype=np.int64), k)
    directed = sp.csr_matrix((values.ravel(), (rows, indices.ravel())), shape=(m, n))
    directed.sum_duplicates()
    return directed


def _scipy_union(directed, mix=1.0):
    transpose = directed.T.tocsr()
    product = directed.multiply(transpose).tocsr()
    union = directed + transpose - product
    if mix != 1.0:
        union = mix * union + (1.0 - mix) * product
    result = sp.csr_matrix(union, dtype=np.float32)
    result.eliminate_zeros()
    result.sort_indices()
    return result


def _scipy_joint(directed, symmetrization, normalize):
    n = directed.shape[0]
    if symmetrization == "umap":
        P = _scipy_union(directed)
    elif symmetrization == "tsne":
        P = (directed + directed.T.tocsr()) * 0.5
    else:
        P = directed
    P = sp.coo_matrix(P, dtype=np.float32)
    keep = (P.row != P.col) & (P.data > 0)
    P = sp.csr_matrix((P.data[keep], (P.row[keep], P.col[keep])), shape=(n, n))
    P.sum_duplicates()
    P.sort_indices()
    if normalize and P.nnz:
        P.data /= np.float32(P.data.sum(dtype=np.float64))
    return P


def _scipy_tsne(conditional):
    n = conditional.shape[0]
    P = (conditional + conditional.T.tocsr()) / (2.0 * n)
    P = sp.csr_matrix(P, dtype=np.float32)
    P.eliminate_zeros()
    P.sort_indices()
    return P


def _assert_same(ours, theirs):
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.indptr, theirs.indptr)
    np.testing.assert_array_equal(ours.indices, theirs.indices)
    np.testing.assert_array_equal(ours.data.view(np.uint32), theirs.data.view(np.uint32))


@pytest.fixture(params=["unique", "repeats"])
def graph(request):
    """A kNN-shaped graph with the point itself in column 0; "repeats" adds rows that name
    a neighbour twice and rows that list the point again (duplicate points)."""
    rng = np.random.default_rng(3)
    n, k = 400, 12
    indices = np.empty((n, k), dtype=np.int32)
    for i in range(n):
        others = rng.choice(np.delete(np.arange(n), i), k - 1, replace=False)
        indices[i] = np.concatenate([[i], others])
    distances = np.sort(rng.gamma(2.0, 1.0, (n, k)).astype(np.float32), axis=1)
    distances[:, 0] = 0
    if request.param == "repeats":
        indices[::7, 5] = indices[::7, 4]
        indices[::11, 3] = np.arange(0, n, 11)
    return indices, distances


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_knn_affinities_match_scipy(graph, dtype):
    indices, distances = graph
    values = distances.astype(dtype) + 1
    ours = knn_affinities(indices, values, indices.shape[0])
    theirs = _scipy_directed(indices, values, indices.shape[0])
    assert ours.dtype == dtype
    np.testing.assert_array_equal(ours.toarray(), theirs.toarray())


@pytest.mark.parametrize("mix", [1.0, 0.0, 0.3])
def test_fuzzy_simplicial_set_matches_scipy(graph, mix):
    indices, distances = graph
    ours, sigmas, rhos = fuzzy_simplicial_set(indices, distances, set_op_mix_ratio=mix)
    weights = membership_weights(indices, distances, sigmas, rhos)
    _assert_same(ours, _scipy_union(_scipy_directed(indices, weights, len(indices)), mix))


@pytest.mark.parametrize("symmetrization", ["umap", "tsne", "none"])
@pytest.mark.parametrize("kind", ["fuzzy", "perplexity"])
def test_joint_affinities_match_scipy(graph, kind, symmetrization):
    from unimap.affinity.perplexity import conditional_probabilities

    indices, distances = graph
    n = len(indices)
    normalize = kind == "perplexity"
    ours = joint_affinities(indices, distances, kind, symmetrization, normalize, 5.0)
    if kind == "perplexity":
        probabilities, _ = conditional_probabilities(distances[:, 1:], 5.0)
        directed = _scipy_directed(indices[:, 1:], probabilities, n)
    else:
        sigmas, rhos = smooth_knn_dist(distances, distances.shape[1])
        weights = membership_weights(indices, distances, sigmas, rhos)
        directed = _scipy_directed(indices, weights.astype(np.float64), n)
    _assert_same(ours, _scipy_joint(directed, symmetrization, normalize))
    assert ours.diagonal().max() == 0


def test_perplexity_affinities_match_scipy(graph):
    from unimap.affinity.perplexity import conditional_probabilities

    indices, distances = graph
    ours, _ = perplexity_affinities(indices, distances, 5.0)
    probabilities, _ = conditional_probabilities(distances[:, 1:], 5.0)
    _assert_same(ours, _scipy_tsne(_scipy_directed(indices[:, 1:], probabilities, len(indices))))


def test_symmetrize_any_csr_input():
    """Unsorted rows with repeated entries and explicit zeros, and integer data."""
    rows = np.array([0, 0, 2, 1, 0, 2, 1])
    cols = np.array([2, 1, 0, 2, 1, 2, 1])
    values = np.array([3, 1, 2, 0, 4, 5, 7])
    coo = sp.coo_matrix((values, (rows, cols)), shape=(3, 3))
    directed = sp.csr_matrix((coo.data, coo.col, np.array([0, 3, 5, 7])), shape=(3, 3))
    directed.data[:] = values[np.argsort(rows, kind="stable")]
    directed.indices[:] = cols[np.argsort(rows, kind="stable")]
    expected = directed.toarray().astype(np.float64)
    P = symmetrize_tsne(directed).toarray()
    np.testing.assert_array_equal(P, ((expected + expected.T) / 6.0).astype(np.float32))
    U = fuzzy_union(directed.astype(np.float32) / 10).toarray()
    a = (expected / 10).astype(np.float32)
    np.testing.assert_allclose(U, a + a.T - a * a.T, rtol=1e-6)


def test_knn_affinities_reject_indices_out_of_range():
    with pytest.raises(ValueError, match=r"neighbour indices must lie in \[0, 3\)"):
        knn_affinities(np.array([[0, 3]]), np.ones((1, 2)), 3)
    with pytest.raises(ValueError, match="do not match"):
        knn_affinities(np.array([[0, 1]]), np.ones((1, 3)), 3)


def test_same_bits_for_any_thread_count(graph):
    import numba

    from unimap.runtime.threads import numba_threads

    indices, distances = graph
    results = []
    for n_threads in (1, min(3, numba.config.NUMBA_NUM_THREADS)):
        with numba_threads(n_threads):
            results.append(joint_affinities(indices, distances, "fuzzy", "umap", False))
    _assert_same(results[0], results[1])


def test_knn_affinities_of_no_neighbours_is_empty():
    P = knn_affinities(np.zeros((3, 0), np.int32), np.zeros((3, 0)), 3)
    assert P.shape == (3, 3) and P.nnz == 0
    np.testing.assert_array_equal(P.indptr, [0, 0, 0, 0])
