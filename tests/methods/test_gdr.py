"""GDR: force kernels against the stated losses, unbiased sampling, determinism, quality, input.

Reference numbers on digits (measured with this code; 10-NN accuracy leave-one-out / exact
trustworthiness@15 / 15-NN recall): unimap.UMAP 0.987 / 0.988 / 0.536, unimap.TSNE
0.986 / 0.990 / 0.592. GDR with its defaults, seeds 0-2: 0.985-0.988 / 0.986-0.988 /
0.531-0.538 (not normalized) and 0.987-0.988 / 0.990 / 0.593-0.594 (normalized). The start
alone (spectral, resp. PCA) scores 0.77 / 0.84 / 0.14 and 0.65 / 0.83 / 0.15, so the
thresholds below (about one point under UMAP / t-SNE) fail for an optimizer that does not do
its job.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from unimap import GDR
from unimap.metrics import knn_accuracy_loo, knn_recall, trustworthiness
from unimap.optimizers.gdr.common_numba import (
    CSR,
    HeavyBall,
    SampledKernel,
    TransposedCSR,
    UnnormalizedForces,
    n_samples_of_row,
)
from unimap.optimizers.gdr.normalized_numba import gdr_normalized_forces
from unimap.optimizers.gdr.unnormalized_numba import gdr_unnormalized_epoch

f32 = np.float32
EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))


def _random_problem(n, dim, symmetric, seed):
    """Well-separated points and a sparse P with rows of different degrees."""
    rng = np.random.default_rng(seed)
    Y = rng.uniform(-2.0, 2.0, size=(n, dim))
    dense = rng.uniform(0.05, 1.0, size=(n, n)) * (rng.uniform(size=(n, n)) < 0.4)
    np.fill_diagonal(dense, 0.0)
    if symmetric:
        dense = (dense + dense.T) / 2
    P = sp.csr_matrix(dense.astype(np.float32))
    P.sort_indices()
    return Y, P


def _csr(P):
    return (P.indptr.astype(np.int64), P.indices.astype(np.int32), P.data.astype(np.float32))


def _transpose(P):
    T = P.T.tocsr()
    T.sort_indices()
    return _csr(T)


def _grad_fd(loss, Y, h=1e-5):
    """Central finite differences of ``loss`` (float64) w.r.t. every entry of Y."""
    G = np.zeros_like(Y)
    for idx in np.ndindex(*Y.shape):
        Yp, Ym = Y.copy(), Y.copy()
        Yp[idx] += h
        Ym[idx] -= h
        G[idx] = (loss(Yp) - loss(Ym)) / (2 * h)
    return G


# -- unnormalized mode: F_i = −∂ℓ_i/∂y_i ---------------------------------------------------------
def _umap_forces(Y, P, a, b, m, rep_weight, symmetric_attraction, exhaustive, epoch=0, eps=0.0):
    Yf = np.ascontiguousarray(Y, dtype=np.float32)
    F, Y_out, V = np.empty_like(Yf), np.empty_like(Yf), np.zeros_like(Yf)
    transposed = _transpose(P) if symmetric_attraction else EMPTY
    gdr_unnormalized_epoch(Yf, Y_out, F, V, CSR(*_csr(P)), TransposedCSR(*transposed),
                           UnnormalizedForces(f32(1.0), float(m), f32(rep_weight), f32(a), f32(b),
                                              f32(eps)),
                           HeavyBall(f32(1e9), f32(0.0)), f32(1.0), np.uint64(3), np.int64(epoch),
                           exhaustive)
    return F.astype(np.float64), Y_out


def _umap_point_loss(i, P, a, b, m, rep_weight, symmetric_attraction):
    """ℓ_i = Σ_j π_ij (−log q_ij) + ω_i Σ_{k≠i} (−log(1 − q_ik)), as a function of Y."""
    Pd = P.toarray().astype(np.float64)
    pi = Pd[i] + (Pd[:, i] if symmetric_attraction else 0.0)
    n = P.shape[0]
    omega = rep_weight * n_samples_of_row(P.indptr[i + 1] - P.indptr[i], m) / (n - 1)
    others = np.arange(n) != i

    def loss(Y):
        u = ((Y - Y[i]) ** 2).sum(axis=1)[others]
        ub = a * u**b
        return (pi[others] * np.log1p(ub)).sum() + omega * np.log1p(1.0 / ub).sum()

    return loss


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize(("a", "b"), [(1.0, 1.0), (1.577, 0.895), (0.6, 1.4), (2.0, 0.6)])
@pytest.mark.parametrize("symmetric_attraction", [False, True])
def test_unnormalized_forces_are_minus_the_gradient(dim, a, b, symmetric_attraction):
    n, m, rep_weight = 9, 1.5, 0.7
    Y, P = _random_problem(n, dim, symmetric=False, seed=dim)
    F, _ = _umap_forces(Y, P, a, b, m, rep_weight, symmetric_attraction, exhaustive=True)
    for i in range(n):
        loss = _umap_point_loss(i, P, a, b, m, rep_weight, symmetric_attraction)
        G = _grad_fd(loss, Y)[i]
        np.testing.assert_allclose(F[i], -G, rtol=2e-3, atol=2e-4 * np.abs(G).max())


def test_symmetric_attraction_with_symmetric_p_is_twice_the_row_pull():
    # The estimator passes attr_scale=2 instead of Pᵀ when P = Pᵀ: the same forces.
    Y, P = _random_problem(12, 2, symmetric=True, seed=5)
    Yf = np.ascontiguousarray(Y, dtype=np.float32)
    out = []
    for scale, transposed in [(2.0, EMPTY), (1.0, _transpose(P))]:
        F, Y_out, V = np.empty_like(Yf), np.empty_like(Yf), np.zeros_like(Yf)
        gdr_unnormalized_epoch(Yf, Y_out, F, V, CSR(*_csr(P)), TransposedCSR(*transposed),
                               UnnormalizedForces(f32(scale), 1.0, f32(0.3), f32(1.5), f32(0.9),
                                                  f32(1e-3)),
                               HeavyBall(f32(4.0), f32(0.0)), f32(1.0), np.uint64(0), np.int64(0),
                               False)
        out.append(F.copy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)


# -- normalized mode: ∇L = 4(E·A − γ·R/Z) --------------------------------------------------------
def _tsne_parts(Y, P, a, b, m, symmetric_attraction, exhaustive, epoch=0, scale=1.0,
                blocks=3, shared=False):
    Yf = np.ascontiguousarray(Y, dtype=np.float32)
    A, R = np.empty_like(Yf), np.empty_like(Yf)
    z_rows = np.empty(len(Yf))
    transposed = _transpose(P) if symmetric_attraction else EMPTY
    marks = np.zeros((blocks, len(Yf)), dtype=np.uint8)
    gdr_normalized_forces(Yf, A, R, z_rows, marks, CSR(*_csr(P)), TransposedCSR(*transposed),
                          SampledKernel(f32(scale), float(m), f32(a), f32(b)), np.uint64(11),
                          np.int64(epoch), exhaustive, shared)
    assert not marks.any()  # the kernel leaves its scratch marks cleared
    return A.astype(np.float64), R.astype(np.float64), z_rows


def _tsne_loss(P, a, b, exaggeration, c, gamma):
    """L = −E·c·Σ_{i≠j} p_ij log w_ij + γ·log Σ_{k≠l} w_kl."""
    Pd = P.toarray().astype(np.float64)
    off = ~np.eye(P.shape[0], dtype=bool)

    def loss(Y):
        u = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(axis=2)
        logw = -np.log1p(a * np.where(off, u, 1.0) ** b)
        return -exaggeration * c * (Pd * logw)[off].sum() + gamma * np.log(np.exp(logw)[off].sum())

    return loss


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize(("a", "b"), [(1.0, 1.0), (1.577, 0.895), (0.6, 1.4), (1.0, 0.7)])
@pytest.mark.parametrize("symmetric_attraction", [False, True])
def test_normalized_gradient_matches_finite_differences(dim, a, b, symmetric_attraction):
    # Asymmetric attraction is the gradient for a symmetric P (c = 1); symmetric attraction for
    # any P (c = 2), so that case uses a non-symmetric P.
    exaggeration, gamma = 3.0, 1.3
    Y, P = _random_problem(8, dim, symmetric=not symmetric_attraction, seed=10 + dim)
    P = P / P.sum()
    A, R, z_rows = _tsne_parts(Y, P, a, b, 1.0, symmetric_attraction, exhaustive=True)
    grad = 4.0 * (exaggeration * A - gamma * R / z_rows.sum())
    loss = _tsne_loss(P, a, b, exaggeration, 2.0 if symmetric_attraction else 1.0, gamma)
    G = _grad_fd(loss, Y)
    np.testing.assert_allclose(grad, G, rtol=2e-3, atol=2e-4 * np.abs(G).max())


def test_the_chain_rule_factor_matters_for_b_not_1():
    # With g = w (the factor a·b·u^(b−1) dropped, as in the public GDR code) the "gradient" is
    # far from the finite differences that the kernel matches (previous test).
    Y, P = _random_problem(8, 2, symmetric=True, seed=3)
    P = (P / P.sum()).toarray()
    a, b = 1.577, 0.895
    G = _grad_fd(_tsne_loss(sp.csr_matrix(P), a, b, 1.0, 1.0, 1.0), Y)
    diff = Y[:, None, :] - Y[None, :, :]
    u = (diff**2).sum(axis=2)
    np.fill_diagonal(u, 1.0)
    w = 1.0 / (1.0 + a * u**b)
    np.fill_diagonal(w, 0.0)
    dropped = 4 * (((P - w / w.sum()) * w)[:, :, None] * diff).sum(axis=1)
    assert np.abs(dropped - G).max() > 0.1 * np.abs(G).max()


# -- the sampled estimates are unbiased ----------------------------------------------------------
@pytest.mark.parametrize(("shared", "dim", "a", "b"),
                         [(False, 2, 1.3, 0.8), (True, 2, 1.3, 0.8), (True, 2, 1.0, 1.0),
                          (True, 3, 1.3, 0.8)])
def test_z_estimate_is_unbiased(shared, dim, a, b):
    n = 60
    Y, P = _random_problem(n, dim, symmetric=True, seed=4)
    P = P / P.sum()
    _, R_exact, z_exact = _tsne_parts(Y, P, a, b, 0.3, False, exhaustive=True)
    Z = z_exact.sum()
    draws = np.array([_tsne_parts(Y, P, a, b, 0.3, False, False, epoch=t,
                                  shared=shared)[2].sum() for t in range(3000)])
    se = draws.std(ddof=1) / np.sqrt(len(draws))
    assert se < 0.01 * Z  # the estimate is informative
    assert abs(draws.mean() - Z) < 4 * se
    # A single global mean n(n−1)·mean(w) over all samples is biased here (rows have
    # different degrees, so draw different numbers of samples): the test can tell.
    deg = np.diff(P.indptr)
    assert deg.min() < 0.7 * deg.max()


def test_repulsion_estimates_are_unbiased():
    n, m, rep_weight = 40, 0.5, 0.4
    Y, P = _random_problem(n, 2, symmetric=True, seed=6)
    Pn = P / P.sum()
    _, R_exact, _ = _tsne_parts(Y, Pn, 1.0, 1.0, m, False, exhaustive=True)
    for shared in (False, True):
        R = np.array([_tsne_parts(Y, Pn, 1.0, 1.0, m, False, False, epoch=t, shared=shared)[1]
                      for t in range(3000)])
        se = R.std(axis=0, ddof=1) / np.sqrt(len(R))
        assert (np.abs(R.mean(axis=0) - R_exact) < 4.5 * se + 1e-6).all()
    F_exact, _ = _umap_forces(Y, P, 1.577, 0.895, m, rep_weight, True, True, eps=1e-3)
    F = np.array([_umap_forces(Y, P, 1.577, 0.895, m, rep_weight, True, False, epoch=t,
                               eps=1e-3)[0] for t in range(3000)])
    se = F.std(axis=0, ddof=1) / np.sqrt(len(F))
    assert (np.abs(F.mean(axis=0) - F_exact) < 4.5 * se + 1e-6).all()


def test_negative_samples_exclude_the_point_and_cover_the_others():
    # Two points: the only admissible negative of each is the other one.
    Y = np.array([[0.0, 0.0], [1.0, 0.0]])
    P = sp.csr_matrix(np.array([[0.0, 0.5], [0.5, 0.0]], dtype=np.float32))
    A, R, z = _tsne_parts(Y, P / P.sum(), 1.0, 1.0, 3.0, False, False)
    np.testing.assert_allclose(z, [0.5, 0.5], rtol=1e-6)
    np.testing.assert_allclose(R, [[-0.25, 0.0], [0.25, 0.0]], rtol=1e-6)


@pytest.mark.parametrize("dim", [2, 3])
def test_shared_samples_skip_the_point_and_its_neighbours(dim):
    # Shared samples are uniform over all n points; the row's own point and its neighbours
    # (already exact in the near field) count 0. With all points neighbours the far field is
    # empty, so every epoch's estimate is the exact near field, whichever points were drawn.
    # (Unbiasedness with a far field: test_z_estimate_is_unbiased and the repulsion test.)
    rng = np.random.default_rng(2)
    Y = rng.normal(size=(5, dim))
    full = sp.csr_matrix(np.ones((5, 5), np.float32) - np.eye(5, dtype=np.float32))
    _, R_exact, z_exact = _tsne_parts(Y, full / full.sum(), 1.0, 1.0, 1.0, False, True)
    for epoch in range(5):
        _, R, z = _tsne_parts(Y, full / full.sum(), 1.0, 1.0, 1.0, False, False, epoch=epoch,
                              shared=True)
        np.testing.assert_allclose(z, z_exact, rtol=1e-5)
        np.testing.assert_allclose(R, R_exact, rtol=1e-5, atol=1e-7)


def test_epoch_kernels_are_deterministic_for_any_thread_count():
    import numba

    rng = np.random.default_rng(0)
    n = 3000
    Y = rng.normal(size=(n, 2))
    rows = np.repeat(np.arange(n), 10)
    P = sp.csr_matrix((rng.uniform(size=n * 10).astype(np.float32),
                       (rows, rng.integers(0, n, n * 10))), shape=(n, n))
    P.setdiag(0)
    P.eliminate_zeros()
    previous = numba.get_num_threads()
    try:
        out = []
        for threads, blocks in [(1, 1), (numba.config.NUMBA_NUM_THREADS, 7)]:
            numba.set_num_threads(threads)
            F, Y_out = _umap_forces(Y, P, 1.577, 0.895, 1.0, 0.3, True, False, eps=1e-3)
            A, R, z = _tsne_parts(Y, P / P.sum(), 1.0, 1.0, 1.0, True, False, blocks=blocks)
            As, Rs, zs = _tsne_parts(Y, P / P.sum(), 1.0, 1.0, 4.0, True, False, blocks=blocks,
                                     shared=True)
            out.append((F, Y_out, A, R, z, As, Rs, zs))
    finally:
        numba.set_num_threads(previous)
    for x, y in zip(*out, strict=True):
        np.testing.assert_array_equal(x, y)


# -- estimator -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def umap_like(digits):
    return GDR(random_state=0).fit(digits[0])


@pytest.fixture(scope="module")
def tsne_like(digits):
    return GDR(normalized=True, random_state=0).fit(digits[0])


def test_quality_unnormalized_on_digits(digits, umap_like):
    X, y = digits
    E = umap_like.embedding_
    assert E.shape == (1797, 2) and E.dtype == np.float32
    assert knn_accuracy_loo(E, y, 10) > 0.975
    assert trustworthiness(X, E, n_neighbors=15) > 0.98
    assert knn_recall(X, E, 15) > 0.49


def test_quality_normalized_on_digits(digits, tsne_like):
    X, y = digits
    E = tsne_like.embedding_
    assert E.shape == (1797, 2) and E.dtype == np.float32
    assert knn_accuracy_loo(E, y, 10) > 0.975
    assert trustworthiness(X, E, n_neighbors=15) > 0.985
    assert knn_recall(X, E, 15) > 0.56


def test_fitted_attributes(umap_like, tsne_like):
    m = umap_like
    assert sp.isspmatrix_csr(m.graph_) and m.graph_.shape == (1797, 1797)
    assert abs(m.graph_ - m.graph_.T).max() < 1e-6 and m.graph_.diagonal().max() == 0
    assert m.a_ == pytest.approx(1.577, abs=2e-3) and m.b_ == pytest.approx(0.895, abs=2e-3)
    assert m.symmetric_attraction_ and m.symmetrization_ == "umap" and m.init_ == "spectral"
    assert m.n_neighbors_ == 15 and m.knn_indices_.shape == (1797, 15)
    assert m.mean_weight_ == pytest.approx(m.graph_.data.mean())
    assert set(m.timings_) == {"neighbors", "affinities", "init", "optimize", "total"}
    assert m.n_epochs is None and m.learning_rate is None  # hyperparameters never overwritten
    t = tsne_like
    assert t.graph_.sum() == pytest.approx(1.0, rel=1e-4)
    assert (t.a_, t.b_) == (1.0, 1.0) and not t.symmetric_attraction_
    assert t.symmetrization_ == "tsne" and t.init_info_["method"] == "pca"
    assert t.perplexity_ == 10.0 and t.n_neighbors_ == 31
    assert t.shared_negatives_ and not m.shared_negatives_ and m.n_negatives_ == 1.0
    shared_samples = t.n_negatives_ * t.graph_.nnz / 1797  # M, the samples of an epoch
    assert shared_samples == pytest.approx(1000) and t.n_negatives is None
    assert t.learning_rate_ == 1797 / 4  # M > 500: t-SNE's step, not shrunk
    assert t.early_learning_rate_ == max(t.learning_rate_ / 12, 50.0)  # the floor, here
    assert m.early_learning_rate_ == m.learning_rate_
    assert m.learning_rate_ == 0.1 and m.n_epochs_ == 500
    assert t.z_ > 0
    assert (t.n_epochs_, t.early_exaggeration_iter_) == (600, 100)  # 500 after exaggeration
    assert t.early_exaggeration_iter is None


@pytest.mark.parametrize("shared", [True, False])
def test_normalized_small_perplexity_keeps_the_clusters(mnist_test_set, shared):
    # Perplexity 5 draws few samples (shared: M ≈ 88 per epoch; per row: ~22), each repelling
    # with weight ~n/M. At the step tuned for perplexity 30 (M ≈ 520, per row ~130) their kicks
    # broke MNIST's clusters apart: on these 10,000 test images 10-NN accuracy 0.775 (shared),
    # 0.39 on 10,000 training images (per row), 0.64 and 0.66 on all 70,000. The step shrunk in
    # proportion keeps them: 0.950/0.950 (shared, seeds 0/1), 0.949/0.947 (per row). 0.9
    # separates the two with room for seeds and platforms; the kick grows with n (weight n/M
    # times a step ∝ n), so fewer points would not show the failure (3,000: 0.87 unshrunk).
    # (The shared default draws M = 1000 at any perplexity: M ≈ 88 needs n_negatives=4.)
    X, y = mnist_test_set
    model = GDR(normalized=True, perplexity=5, shared_negatives=shared,
                n_negatives=4.0 if shared else None, random_state=0).fit(X)
    assert model.learning_rate_ < len(X) / 4
    assert knn_accuracy_loo(model.embedding_, y, 10) > 0.9


@pytest.mark.parametrize("normalized", [False, True])
def test_same_seed_same_embedding_for_any_n_jobs(digits, normalized):
    X = digits[0]
    runs = [GDR(normalized=normalized, random_state=0, n_jobs=j, n_epochs=60).fit_transform(X)
            for j in (1, 2)]
    np.testing.assert_array_equal(runs[0], runs[1])
    other = GDR(normalized=normalized, random_state=1, n_jobs=1, n_epochs=60).fit_transform(X)
    assert not np.array_equal(runs[0], other)


@pytest.mark.parametrize(
    "params",
    [dict(symmetrization="tsne"), dict(symmetrization="none", symmetric_attraction=True),
     dict(symmetric_attraction=False), dict(a=1.0, b=1.0), dict(n_negatives=0.5),
     dict(init="pca"), dict(init="random"), dict(n_components=3)],
)
def test_unnormalized_variants(blobs, params):
    X, y = blobs
    m = GDR(random_state=0, **params).fit(X)
    assert m.embedding_.shape == (300, params.get("n_components", 2))
    assert knn_accuracy_loo(m.embedding_, y, 10) > 0.95


@pytest.mark.parametrize(
    "params",
    [dict(symmetrization="umap"), dict(symmetric_attraction=True), dict(a=1.577, b=0.895),
     dict(init="random"), dict(init="spectral"), dict(n_components=3), dict(n_negatives=3),
     dict(shared_negatives=False), dict(shared_negatives=False, n_components=3)],
)
def test_normalized_variants(blobs, params):
    X, y = blobs
    m = GDR(normalized=True, random_state=0, perplexity=20, n_epochs=400, **params).fit(X)
    assert m.embedding_.shape == (300, params.get("n_components", 2))
    assert knn_accuracy_loo(m.embedding_, y, 10) > 0.95


def test_array_init_is_used(blobs):
    X, _ = blobs
    init = np.random.default_rng(0).normal(size=(300, 2))
    m = GDR(init=init, random_state=0, n_epochs=1, learning_rate=1e-6).fit(X)
    assert m.init_info_["method"] == "array"
    np.testing.assert_allclose(m.embedding_, init, atol=1e-3)
    with pytest.raises(ValueError, match="init array must have shape"):
        GDR(init=init[:10]).fit(X)


# -- bad input and edge cases --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        (np.array([[0.0, np.nan], [1.0, 2.0], [3.0, 4.0]]), ValueError, "NaN"),
        (np.array([[0.0, np.inf], [1.0, 2.0], [3.0, 4.0]]), ValueError, "NaN"),
        (np.empty((0, 4)), ValueError, "empty"),
        (np.arange(10.0), ValueError, "2-D"),
        (np.array([[object(), 1]], dtype=object), TypeError, "dtype object"),
        (np.array([[1 + 1j, 2]]), ValueError, "Complex"),
        (np.ones((1, 3)), ValueError, "at least 2 samples"),
    ],
)
def test_bad_input(bad, error, match):
    with pytest.raises(error, match=match):
        GDR().fit(bad)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_neighbors": 1}, "n_neighbors must be in"),
        ({"n_components": 0}, "n_components must be in"),
        ({"metric": "cosin"}, "metric must be one of"),
        ({"normalized": 1}, "normalized must be True or False"),
        ({"symmetric_attraction": "yes"}, "symmetric_attraction must be True or False"),
        ({"symmetrization": "max"}, "symmetrization must be one of"),
        ({"perplexity": 0.0}, "perplexity must be"),
        ({"min_dist": -1.0}, "min_dist must be"),
        ({"min_dist": 2.0}, "min_dist must be"),
        ({"spread": 0.0}, "spread must be"),
        ({"a": 1.0}, "a and b must be given together"),
        ({"a": -1.0, "b": 1.0}, "a must be"),
        ({"n_negatives": 0}, "n_negatives must be"),
        ({"shared_negatives": "yes"}, "shared_negatives must be True or False"),
        ({"shared_negatives": True}, "shared_negatives=True needs normalized=True"),
        ({"n_epochs": 0}, "n_epochs must be in"),
        ({"n_epochs": 2.5}, "n_epochs must be an integer"),
        ({"learning_rate": 0.0}, "learning_rate must be"),
        ({"early_exaggeration": 0.0}, "early_exaggeration must be"),
        ({"early_exaggeration_iter": -1}, "early_exaggeration_iter must be in"),
        ({"momentum": 1.0}, "momentum must be"),
        ({"repulsion_strength": -1.0}, "repulsion_strength must be"),
        ({"init": "spectal"}, "init must be one of"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"knn_method": "annoy"}, "knn_method must be one of"),
        ({"verbose": "loud"}, "verbose must be True or False"),
    ],
)
def test_invalid_hyperparameters(blobs, params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        GDR(**params).fit(blobs[0])


def test_small_n_warns_and_records():
    X = np.random.default_rng(0).normal(size=(6, 3))
    m = GDR(n_neighbors=15, random_state=0)
    with pytest.warns(UserWarning, match="n_neighbors=15 is larger than the number of samples"):
        E = m.fit_transform(X)
    assert m.n_neighbors_ == 6 and m.n_neighbors == 15 and np.isfinite(E).all()
    t = GDR(normalized=True, random_state=0)
    with pytest.warns(UserWarning, match="perplexity=10"):
        E = t.fit_transform(X)
    assert t.perplexity_ < 10 and t.perplexity == 10 and np.isfinite(E).all()


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("n", [2, 3])
def test_tiny_inputs_give_finite_output(n, normalized):
    X = np.random.default_rng(n).normal(size=(n, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        E = GDR(normalized=normalized, random_state=0).fit_transform(X)
    assert E.shape == (n, 2) and np.isfinite(E).all()


@pytest.mark.parametrize("normalized", [False, True])
def test_duplicates_and_constant_data_give_finite_output(blobs, normalized):
    X, _ = blobs
    Xd = np.vstack([X, X[:50], X[:50]])
    E = GDR(normalized=normalized, random_state=0, n_epochs=100).fit_transform(Xd)
    assert np.isfinite(E).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        E = GDR(normalized=normalized, random_state=0, n_epochs=50).fit_transform(
            np.ones((40, 5)))
    assert np.isfinite(E).all()


def test_integer_float16_sparse_and_precomputed_input(blobs):
    from scipy.spatial.distance import cdist

    X, y = blobs
    kw = dict(random_state=0, n_epochs=50)
    assert np.isfinite(GDR(**kw).fit_transform(np.round(X * 10).astype(np.int32))).all()
    assert np.isfinite(GDR(**kw).fit_transform(X.astype(np.float16))).all()
    np.testing.assert_allclose(GDR(**kw).fit_transform(sp.csr_matrix(X)),
                               GDR(**kw).fit_transform(X), atol=1e-4)
    D = cdist(X, X)
    assert knn_accuracy_loo(GDR(metric="precomputed", **kw).fit_transform(D), y, 10) > 0.9
    t = GDR(metric="precomputed", normalized=True, perplexity=20, random_state=0).fit(D)
    assert t.init_ == "spectral" and knn_accuracy_loo(t.embedding_, y, 10) > 0.9
    with pytest.raises(ValueError, match="square distance matrix"):
        GDR(metric="precomputed").fit(X)


# -- transform -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits_split(digits):
    X, y = digits
    perm = np.random.default_rng(0).permutation(len(X))
    return X[perm[:1400]], y[perm[:1400]], X[perm[1400:]], y[perm[1400:]]


@pytest.mark.parametrize("normalized", [False, True])
def test_transform_held_out_points_land_with_their_class(digits_split, normalized):
    # Measured: held-out 10-NN accuracy 0.972 (seeds 0-2, not normalized) and 0.985-0.987
    # (normalized); 0.95 leaves room for seeds, not for misplaced points.
    from sklearn.neighbors import KNeighborsClassifier

    X_train, y_train, X_new, y_new = digits_split
    model = GDR(normalized=normalized, random_state=0).fit(X_train)
    Y_new = model.transform(X_new)
    assert Y_new.shape == (len(X_new), 2) and Y_new.dtype == np.float32
    classifier = KNeighborsClassifier(10).fit(model.embedding_, y_train)
    assert classifier.score(Y_new, y_new) > 0.95


@pytest.mark.parametrize("normalized", [False, True])
def test_transform_training_points_land_near_their_embedding(digits, normalized, umap_like,
                                                              tsne_like):
    model = tsne_like if normalized else umap_like
    E = model.embedding_
    T = model.transform(digits[0][:200])
    own = np.linalg.norm(T - E[:200], axis=1)
    spread = np.linalg.norm(E - E.mean(0), axis=1).mean()
    assert np.median(own) < 0.1 * spread


@pytest.mark.parametrize("normalized", [False, True])
def test_transform_is_batch_independent(digits, normalized, umap_like, tsne_like):
    model = tsne_like if normalized else umap_like
    X = digits[0][1000:1020]
    batch = model.transform(X)
    single = np.vstack([model.transform(X[i : i + 1]) for i in range(20)])
    np.testing.assert_allclose(batch, single, rtol=1e-5, atol=1e-5)


def test_transform_errors(digits, umap_like):
    with pytest.raises(NotFittedError, match="not fitted"):
        GDR().transform(np.zeros((3, 64)))
    with pytest.raises(ValueError, match="X has 5 features, but GDR is expecting 64 features"):
        umap_like.transform(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="NaN"):
        umap_like.transform(np.full((2, 64), np.nan))
    X = digits[0][:300]
    custom = GDR(normalized=True, a=1.5, b=0.8, n_epochs=20, random_state=0).fit(X)
    with pytest.raises(ValueError, match="a = b = 1"):
        custom.transform(X[:3])


def test_transform_after_pickle(blobs):
    import pickle

    X, _ = blobs
    model = GDR(random_state=0, n_epochs=30).fit(X)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(model.transform(X[:5]), restored.transform(X[:5]))


def test_kernel_coefficients_finite_at_zero_distance_for_any_b():
    # Coincident points: the repulsion coefficient must be its limit 2b/ε, not fast_pow's
    # garbage (it went negative for b >= 1.3 when u was floored at 1e-30).
    import numba

    from unimap.lowdim.similarity_numba import (
        ab_kernel,
        gdr_attraction_coeff,
        gdr_repulsion_coeff,
    )

    @numba.njit
    def coefficients(u, a, b):
        w, g = ab_kernel(u, a, b)
        return gdr_repulsion_coeff(u, a, b, np.float32(1e-3)), gdr_attraction_coeff(
            u, a, b), w, g

    for b in (0.5, 0.9, 1.0, 1.3, 1.5, 2.0, 2.5):
        for u in (0.0, 1e-30, 1e-12, 1e-6):
            values = coefficients(f32(u), f32(1.6), f32(b))
            assert all(np.isfinite(v) for v in values), (b, u, values)
        rep0 = coefficients(f32(0.0), f32(1.6), f32(b))[0]
        np.testing.assert_allclose(rep0, 2 * b / 1e-3, rtol=1e-3)


_FIRST_AND_CACHED_SCRIPT = """
import sys
import numpy as np
import scipy.sparse as sp
from unimap.optimizers.gdr.common_numba import (
    CSR, HeavyBall, SampledKernel, TransposedCSR, UnnormalizedForces,
)
from unimap.optimizers.gdr.normalized_numba import gdr_normalized_forces
from unimap.optimizers.gdr.unnormalized_numba import gdr_unnormalized_epoch

f32 = np.float32
rng = np.random.default_rng(0)
n = 1500
Y = (rng.standard_normal((n, 2)) * 5).astype(np.float32)
P = sp.random(n, n, density=0.01, random_state=1, format="csr", dtype=np.float32)
P = (P + P.T).tocsr()
csr = (P.indptr.astype(np.int64), P.indices.astype(np.int32), P.data.astype(np.float32))
empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
out = {}
for shared, m in [(True, 4.0), (False, 1.0)]:
    for b in [1.0, 0.8]:
        A, R, z = np.empty_like(Y), np.empty_like(Y), np.empty(n)
        gdr_normalized_forces(Y, A, R, z, np.zeros((4, n), np.uint8), CSR(*csr),
                              TransposedCSR(*empty), SampledKernel(f32(1), m, f32(1.3), f32(b)),
                              np.uint64(0), np.int64(3), False, shared)
        out[f"tsne_{shared}_{b}"] = np.concatenate([A.ravel(), R.ravel(), z])
F, Y_out, V = np.empty_like(Y), np.empty_like(Y), np.zeros_like(Y)
gdr_unnormalized_epoch(Y, Y_out, F, V, CSR(*csr), TransposedCSR(*empty),
                       UnnormalizedForces(f32(1), 1.0, f32(0.1), f32(1.577), f32(0.895),
                                          f32(1e-3)),
                       HeavyBall(f32(4), f32(0.5)), f32(1), np.uint64(0), np.int64(3), False)
out["umap"] = np.concatenate([F.ravel(), Y_out.ravel()])
np.savez(sys.argv[1], **out)
"""


@pytest.mark.slow  # compile-bound: CI runs it in its slow step
def test_first_and_cached_runs_agree(tmp_path):
    # A user's first run compiles the kernels, later runs load them from numba's disk cache:
    # both must give the same bits. They did not when a sum inside a row was vectorized (LLVM
    # reassociates it, and the JIT's and the cache's copy of a caller did so differently).
    import os
    import subprocess
    import sys

    script = tmp_path / "forces.py"
    script.write_text(_FIRST_AND_CACHED_SCRIPT)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMBA_DEBUG_CACHE="1")
    logs = []
    for run in ("first", "cached"):
        done = subprocess.run([sys.executable, str(script), str(tmp_path / f"{run}.npz")],
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        logs.append(done.stdout + done.stderr)
    for kernel in ("_normalized_forces_2d", "_unnormalized_epoch_2d"):
        assert "data saved to" in logs[0] and kernel in logs[0]
        assert f"{kernel}-" in logs[1] and "data saved" not in logs[1]  # loaded, not compiled
    first, cached = np.load(tmp_path / "first.npz"), np.load(tmp_path / "cached.npz")
    for key in first.files:
        np.testing.assert_array_equal(first[key], cached[key], err_msg=key)


# -- negatives from per-block pools (large inputs) ----------------------------------------------
def _pooled_forces(Y, P, rep_weight, epoch, pool, n_workers=None, exhaustive=False):
    Yf = np.ascontiguousarray(Y, dtype=np.float32)
    F, Y_out, V = np.empty_like(Yf), np.empty_like(Yf), np.zeros_like(Yf)
    gdr_unnormalized_epoch(Yf, Y_out, F, V, CSR(*_csr(P)), TransposedCSR(*EMPTY),
                           UnnormalizedForces(f32(2.0), 2.0, f32(rep_weight), f32(1.577),
                                              f32(0.895), f32(1e-3)),
                           HeavyBall(f32(1e9), f32(0.0)), f32(1.0), np.uint64(3), np.int64(epoch),
                           exhaustive, n_workers=n_workers, negative_pool=pool)
    return F.astype(np.float64)


def test_pooled_negatives_are_unbiased():
    # Averaged over epochs, the pooled repulsion converges to the exhaustive one: its error
    # halves with 4x the epochs (noise), where a bias would stay. Measured: 0.117 after 300
    # epochs, 0.058 after 1,200 (a pool of 32 per 256-row block: few draws, much noise);
    # samples of their own, 0.023 after 300.
    Y, P = _random_problem(700, 2, symmetric=True, seed=7)
    pull = _pooled_forces(Y, P, 0.0, 0, pool=0)
    push = _pooled_forces(Y, P, 0.5, 0, pool=0, exhaustive=True) - pull
    pooled = np.array([_pooled_forces(Y, P, 0.5, e, pool=32) for e in range(1200)]) - pull

    def error(forces):
        return np.linalg.norm(forces.mean(axis=0) - push) / np.linalg.norm(push)

    early, late = error(pooled[:300]), error(pooled)
    assert late < 0.08 and late < 0.65 * early, (early, late)


def test_pooled_negatives_do_not_depend_on_the_thread_count():
    Y, P = _random_problem(900, 2, symmetric=True, seed=8)
    one = _pooled_forces(Y, P, 0.5, 4, pool=64, n_workers=1)
    two = _pooled_forces(Y, P, 0.5, 4, pool=64, n_workers=2)
    np.testing.assert_array_equal(one, two)


def test_large_input_path_on_digits(digits, umap_like, monkeypatch):
    """The path GDR() takes from POOLED_NEGATIVES_MIN_ROWS rows on (points relabelled along a
    Z-order curve, negatives drawn from per-block pools, the embedding returned in input
    order), forced on the digits: the same quality bars as the default path
    (test_quality_unnormalized_on_digits; a row order mixed up on the way back would score
    ~0.1), and bitwise the same for any n_jobs."""
    from unimap.optimizers import sampling

    monkeypatch.setattr(sampling, "POOLED_NEGATIVES_MIN_ROWS", 1000)
    X, y = digits
    runs = [GDR(random_state=0, n_jobs=j).fit_transform(X) for j in (1, 2)]
    np.testing.assert_array_equal(runs[0], runs[1])
    E = runs[0]
    assert not np.array_equal(E, umap_like.embedding_)  # the large path did run
    assert np.isfinite(E).all()
    assert knn_accuracy_loo(E, y, 10) > 0.975
    assert trustworthiness(X, E, n_neighbors=15) > 0.98
    assert knn_recall(X, E, 15) > 0.49
