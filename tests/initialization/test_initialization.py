import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from unimap.affinity.fuzzy import fuzzy_simplicial_set
from unimap.initialization.layouts import (
    array_init,
    pca_init,
    random_init,
    rescale_to_box,
    rescale_to_std,
)
from unimap.initialization.spectral import spectral_init, spectral_layout
from unimap.neighbors.graph import nearest_neighbors


def _graph(X, k=10):
    g, _ = nearest_neighbors(X.astype(np.float32), k, method="exact")
    return fuzzy_simplicial_set(g.indices, g.distances)[0]


def _dense_reference(graph, dim):
    W = graph.toarray().astype(np.float64)
    d = W.sum(axis=1)
    L = np.eye(len(d)) - W / np.sqrt(np.outer(d, d))
    evals, evecs = scipy.linalg.eigh(L)
    return evecs[:, 1 : dim + 1]


@pytest.mark.parametrize("n", [300, 1500])  # dense path and ARPACK path
def test_spectral_layout_matches_scipy_dense(n):
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 3 * np.pi, n)
    X = np.c_[t * np.cos(t), t * np.sin(t), rng.normal(0, 0.3, n)]  # a connected spiral
    graph = _graph(X)
    layout = spectral_layout(graph, 2, seed=0)
    ref = _dense_reference(graph, 2)
    for c in range(2):  # same eigenvectors up to sign
        corr = np.corrcoef(layout[:, c], ref[:, c])[0, 1]
        assert abs(corr) > 0.999


def test_spectral_init_disconnected_components_are_separated():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 1, (100, 3)), rng.normal(100, 1, (100, 3))])
    graph = _graph(X)
    with pytest.warns(UserWarning, match="2 connected components"):
        Y, info = spectral_init(graph, 2, seed=0, data=X)
    assert info["n_graph_components"] == 2
    assert np.isfinite(Y).all()
    a, b = Y[:100], Y[100:]
    gap = np.linalg.norm(a.mean(0) - b.mean(0))
    assert gap > 2 * max(np.ptp(a, 0).max(), np.ptp(b, 0).max()) / 2


def test_spectral_init_tiny_graph_falls_back_to_random():
    graph = sp.csr_matrix(np.array([[0, 1.0], [1.0, 0]]))
    Y, info = spectral_init(graph, 2, seed=0)
    assert info["fallback"] is not None and Y.shape == (2, 2) and np.isfinite(Y).all()


def test_spectral_init_eigensolver_failure_falls_back(monkeypatch):
    import scipy.sparse.linalg

    def broken(*args, **kwargs):
        raise scipy.sparse.linalg.ArpackNoConvergence("no convergence", np.array([]),
                                                      np.array([]))

    monkeypatch.setattr(scipy.sparse.linalg, "eigsh", broken)
    X = np.random.default_rng(2).normal(size=(1200, 3))
    with pytest.warns(UserWarning, match="spectral initialization failed"):
        Y, info = spectral_init(_graph(X), 2, seed=0)
    assert info["fallback"].startswith("random") and np.isfinite(Y).all()


def test_pca_init_fits_its_axes_on_a_sample_of_large_data(monkeypatch):
    # Above PCA_INIT_FIT_ROWS rows the axes come from a seeded random sample: close to the
    # full fit's (elongated data: the axes are well separated), the same for the same seed.
    import unimap.initialization.layouts as ini

    rng = np.random.default_rng(8)
    X = (rng.standard_normal((3000, 6)) * [5, 3, 1, 1, 1, 1]).astype(np.float32)
    full = pca_init(X, 2, seed=0)
    monkeypatch.setattr(ini, "PCA_INIT_FIT_ROWS", 500)
    sampled = pca_init(X, 2, seed=0)
    for c in range(2):
        assert abs(np.corrcoef(full[:, c], sampled[:, c])[0, 1]) > 0.99
    np.testing.assert_array_equal(sampled, pca_init(X, 2, seed=0))
    assert not np.array_equal(sampled, pca_init(X, 2, seed=1))


def test_pca_random_array_and_rescaling():
    X = np.random.default_rng(3).normal(size=(50, 4)).astype(np.float32)
    P = pca_init(X, 2, seed=0)
    assert P.shape == (50, 2) and P[:, 0].var() >= P[:, 1].var()
    assert pca_init(X[:, :1], 2, seed=0).shape == (50, 2)  # padded when D < dim
    R = random_init(50, 3, seed=0)
    assert R.shape == (50, 3) and np.abs(R).max() <= 10
    np.testing.assert_array_equal(R, random_init(50, 3, seed=0))
    B = rescale_to_box(P, 10.0)
    np.testing.assert_allclose(B.min(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(B.max(0), 10.0, rtol=1e-5)
    S = rescale_to_std(P, 1e-4)
    assert S[:, 0].std() == pytest.approx(1e-4, rel=1e-3)
    with pytest.raises(ValueError, match="init array must have shape"):
        array_init(np.zeros((3, 2)), 50, 2)


def test_spectral_init_many_components_are_placed_apart():
    # 1,500 components: 500 isolated points, 500 pairs and 500 spirals-in-miniature of 12
    # points; each must sit in its own box, away from every other component.
    rng = np.random.default_rng(2)
    blocks, labels = [], []
    for c, size in enumerate([1] * 500 + [2] * 500 + [12] * 500):
        w = rng.uniform(0.5, 1.0, size=(size, size))
        w = np.triu(w, 1) + np.triu(w, 1).T
        blocks.append(sp.csr_matrix(w))
        labels += [c] * size
    graph = sp.block_diag(blocks, format="csr")
    labels = np.array(labels)
    data = rng.normal(size=(labels.size, 5)) + 50 * rng.normal(size=(1500, 5))[labels]
    with pytest.warns(UserWarning, match="1500 connected components"):
        Y, info = spectral_init(graph, 2, seed=0, data=data)
    assert info["n_graph_components"] == 1500 and np.isfinite(Y).all()
    lo = np.vstack([Y[labels == c].min(0) for c in range(1500)])
    hi = np.vstack([Y[labels == c].max(0) for c in range(1500)])
    # No two components' bounding boxes intersect (boxes of radius gap/4 around the meta
    # positions in the construction).
    overlap = ((lo[:, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[:, None, :])).all(2)
    np.fill_diagonal(overlap, False)
    assert not overlap.any()
    Y2, _ = spectral_init(graph, 2, seed=0, data=data)
    np.testing.assert_array_equal(Y, Y2)


def test_component_centroids_without_a_float64_copy_of_the_data(monkeypatch):
    # The per-component sums behind the meta layout: bitwise those of one sparse product,
    # computed a block of rows at a time, so that the traced peak stays far below the
    # float64 copy of the data that one product made (6 GB for MNIST upsampled to 1M rows).
    import tracemalloc

    import scipy.sparse as sp

    from unimap.initialization import spectral as initialization

    rng = np.random.default_rng(0)
    n, d, n_comp = 20000, 200, 500
    X = rng.standard_normal((n, d)).astype(np.float32)
    labels = rng.integers(0, n_comp, n)
    indicator = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(n_comp, n))
    expected = np.asarray(indicator @ X, dtype=np.float64)
    monkeypatch.setattr(initialization, "_CENTROID_BLOCK_BYTES", 8 * d * 1600)  # 1,600 rows
    tracemalloc.start()
    try:
        sums = initialization.component_sums(labels, n_comp, X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(sums, expected)
    assert peak < 0.5 * (8 * n * d)  # the float64 copy would be 32 MB; blocks are 2.6 MB


def test_spectral_layout_does_not_depend_on_blas_threads():
    # ARPACK's vector operations run on one BLAS thread: on MNIST-70k the layout's bits
    # differed between 1 and 2 BLAS threads before, so the same seed gave another
    # embedding on a machine with another core count.
    import scipy.sparse as sp
    from threadpoolctl import threadpool_limits

    from unimap.initialization.spectral import spectral_layout

    rng = np.random.default_rng(0)
    n, k = 60000, 10
    rows = np.repeat(np.arange(n), k)
    cols = (rows + rng.integers(1, 500, rows.size)) % n  # a ring of local links: connected
    G = sp.csr_matrix((rng.random(rows.size), (rows, cols)), shape=(n, n))
    G = (G + G.T).tocsr()
    layouts = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="blas"):
            layouts.append(spectral_layout(G, 2, seed=0))
    np.testing.assert_array_equal(layouts[0], layouts[1])


def test_spectral_init_components_laid_out_side_by_side_do_not_depend_on_threads():
    """Components of unequal sizes (100 to 600 rows, above the dense-eigh size) are laid out
    on the fit's threads, largest first: the same bits on 1 and 2 threads."""
    import warnings

    import numba

    rng = np.random.default_rng(3)
    sizes = [600, 100, 400, 250, 150]
    X = np.vstack([rng.normal(60 * c, 1, (m, 5)) for c, m in enumerate(sizes)])
    graph = _graph(X)
    before = numba.get_num_threads()
    layouts = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Y, info = spectral_init(graph, 2, seed=0, data=X)
            assert info["n_graph_components"] == len(sizes)
            layouts.append(Y)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(layouts[0], layouts[1])
    assert np.isfinite(layouts[0]).all()


def test_small_components_batched_as_laid_out_one_by_one():
    # _dense_layouts lays out the small components with one eigh per size; each layout must
    # be bitwise the one spectral_layout gives its block alone (then scaled to max 1), the
    # path every component took before. Sizes 4..64 (dense eigh), shuffled, uneven weights.
    from unimap.initialization.eigenpairs import DENSE_EIGH_MAX
    from unimap.initialization.spectral import _dense_layouts

    rng = np.random.default_rng(5)
    sizes = rng.integers(4, DENSE_EIGH_MAX + 1, 300)
    blocks = []
    for size in sizes:
        w = rng.uniform(0.0, 1.0, size=(size, size)) * (rng.random((size, size)) < 0.4)
        w = np.triu(w, 1) + np.diag(np.ones(size - 1), 1)  # a path keeps it connected
        blocks.append(sp.csr_matrix((w + w.T).astype(np.float32)))
    grouped = sp.block_diag(blocks, format="csr")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    components = np.arange(sizes.size)
    seen = set()
    for batch, subs in _dense_layouts(grouped, bounds, sizes, components, 2):
        for c, sub in zip(batch, subs, strict=True):
            alone = spectral_layout(blocks[c], 2, seed=0)
            np.testing.assert_array_equal(sub, alone / max(np.abs(alone).max(), 1e-12))
            seen.add(int(c))
    assert seen == set(range(sizes.size))


def test_connected_components_match_scipy():
    """The union-find numbering equals scipy's (by smallest vertex), edges taken as
    undirected, on random directed graphs with many components and self-loops."""
    from scipy.sparse.csgraph import connected_components as scipy_components

    from unimap.initialization.spectral import connected_components

    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(1, 300))
        m = int(rng.integers(0, 2 * n))
        graph = sp.csr_matrix((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))),
                              shape=(n, n))
        count, labels = connected_components(graph)
        expected_count, expected = scipy_components(graph, directed=False)
        assert count == expected_count
        np.testing.assert_array_equal(labels, expected)


@pytest.mark.parametrize("method", ["UMAP", "GDR", "TSNE"])
def test_an_init_array_of_equal_rows_is_refused(method):
    # issue 42: it was accepted and the embedding stayed one point (no force separates
    # equal points)
    import unimap

    X = np.random.default_rng(0).standard_normal((40, 4))
    with pytest.raises(ValueError, match="all rows equal"):
        getattr(unimap, method)(init=np.ones((40, 2))).fit(X)
    distinct = np.random.default_rng(1).standard_normal((40, 2))
    Y = getattr(unimap, method)(init=distinct, random_state=0).fit_transform(X)
    assert np.unique(Y, axis=0).shape[0] == 40
