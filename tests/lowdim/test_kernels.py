import numba
import numpy as np
import scipy.sparse as sp

from unimap.affinity.fuzzy import fuzzy_simplicial_set
from unimap.lowdim.fastpow_numba import fast_pow
from unimap.neighbors.graph import nearest_neighbors
from unimap.optimizers.umap_sgd.common import edge_classes, epochs_per_sample
from unimap.optimizers.umap_sgd.edge_coloring_numba import greedy_edge_coloring


@numba.njit
def _fast_pow_array(x, b):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = fast_pow(x[i], b)
    return out


def test_fast_pow_relative_error():
    x = np.exp(np.random.default_rng(0).uniform(np.log(1e-8), np.log(1e6), 200_000))
    x = x.astype(np.float32)
    for b in (0.5, 0.895, 1.0, 1.5):
        ref = x.astype(np.float64) ** b
        err = np.abs(_fast_pow_array(x, np.float32(b)) / ref - 1.0).max()
        assert err < 5e-5, (b, err)


def test_edge_classes_are_vertex_disjoint_and_cover_all_edges():
    X = np.random.default_rng(1).standard_normal((600, 5)).astype(np.float32)
    g, _ = nearest_neighbors(X, 15, method="exact")
    graph = fuzzy_simplicial_set(g.indices, g.distances)[0]
    indptr, indices = graph.indptr.astype(np.int64), graph.indices.astype(np.int32)
    colors, n_colors = greedy_edge_coloring(indptr, indices, 600)
    degree = np.diff(indptr)
    assert n_colors <= 4 * degree.max()
    heads, tails, class_ptr, order = edge_classes(indptr, indices, 600)
    assert np.array_equal(np.sort(order), np.arange(graph.nnz))
    for c in range(len(class_ptr) - 1):
        ends = np.concatenate([heads[class_ptr[c] : class_ptr[c + 1]],
                               tails[class_ptr[c] : class_ptr[c + 1]]])
        assert len(np.unique(ends)) == len(ends)  # no point twice in one class


def _reference_coloring(indptr, indices):
    """Greedy edge colouring in plain Python: each edge in order takes the smallest colour
    used at neither end."""
    used = {}
    colors = []
    for i in range(len(indptr) - 1):
        for e in range(indptr[i], indptr[i + 1]):
            j = int(indices[e])
            taken = used.setdefault(i, set()) | used.setdefault(j, set())
            color = next(c for c in range(len(taken) + 1) if c not in taken)
            used[i].add(color)
            used[j].add(color)
            colors.append(color)
    return np.array(colors, dtype=np.int32)


def test_edge_colouring_and_classes_match_plain_references():
    # A hub of degree 150 besides random edges: colours past 64 use the sets' later words.
    rng = np.random.default_rng(3)
    n = 400
    rows = np.concatenate([rng.integers(0, n, 3000), np.zeros(150, np.int64),
                           1 + np.arange(150)])
    cols = np.concatenate([rng.integers(0, n, 3000), 1 + np.arange(150),
                           np.zeros(150, np.int64)])
    keep = rows != cols
    graph = sp.csr_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    indptr, indices = graph.indptr.astype(np.int64), graph.indices.astype(np.int32)
    colors, n_colors = greedy_edge_coloring(indptr, indices, n)
    want = _reference_coloring(indptr, indices)
    np.testing.assert_array_equal(colors, want)
    assert n_colors == want.max() + 1 > 128
    heads, tails, class_ptr, order = edge_classes(indptr, indices, n)
    want_order = np.argsort(colors, kind="stable")
    np.testing.assert_array_equal(order, want_order)
    csr_heads = np.repeat(np.arange(n), np.diff(indptr))
    np.testing.assert_array_equal(heads, csr_heads[want_order])
    np.testing.assert_array_equal(tails, indices[want_order])
    np.testing.assert_array_equal(np.diff(class_ptr), np.bincount(colors, minlength=n_colors))


def test_sgd_coefficients_finite_at_zero_distance_for_any_b():
    # Two points on top of each other: fast_pow(0, b) would leave its range for b >= 1, so the
    # kernels offset its argument; the repulsion must stay finite and equal the limit
    # 2γb / ε, the attraction 0.
    from unimap.lowdim.similarity_numba import sgd_attraction_coeff, sgd_repulsion_coeff

    @numba.njit
    def coefficients(d2, a, b):
        return sgd_repulsion_coeff(d2, a, b, np.float32(1.0)), sgd_attraction_coeff(d2, a, b)

    for b in (0.5, 0.79, 0.9, 1.0, 1.5, 1.93, 2.5):
        for d2 in (0.0, 1e-12, 1e-6):
            rep, att = coefficients(np.float32(d2), np.float32(1.6), np.float32(b))
            assert np.isfinite(rep) and np.isfinite(att), (b, d2, rep, att)
        rep0, att0 = coefficients(np.float32(0.0), np.float32(1.6), np.float32(b))
        np.testing.assert_allclose(rep0, 2 * b / 0.001, rtol=1e-3)
        assert att0 == 0.0


def test_epochs_per_sample_matches_the_numpy_form():
    rng = np.random.default_rng(4)
    weights = rng.random(5000) ** 3
    weights[::7] = 0.0
    for max_weight in (None, 0.5):
        top = weights.max() if max_weight is None else max_weight
        n_samples = 200 * (weights / top)  # the replaced form, bit for bit
        want = np.full(weights.shape[0], -1.0)
        want[n_samples > 0] = 200.0 / n_samples[n_samples > 0]
        np.testing.assert_array_equal(epochs_per_sample(weights, 200, max_weight), want)
    assert epochs_per_sample(np.zeros(0), 200).shape == (0,)
