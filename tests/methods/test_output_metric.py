"""UMAP(output_metric=...): embeddings on the sphere and in hyperbolic space."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.metrics.pairwise import haversine_distances

import unimap
from unimap.optimizers.umap_sgd.output_metric_numba import HAVERSINE, HYPERBOLOID, distance_grad


def _haversine(P, Q):
    """Great-circle distances between rows (θ, φ) of P and Q, by scikit-learn's haversine
    (which takes latitude π/2 − θ and longitude φ)."""
    return haversine_distances(np.c_[np.pi / 2 - P[:, 0], P[:, 1]],
                               np.c_[np.pi / 2 - Q[:, 0], Q[:, 1]])


def _hyperbolic(P, Q):
    s = np.sqrt(1 + (P ** 2).sum(1))[:, None]
    t = np.sqrt(1 + (Q ** 2).sum(1))[None, :]
    return np.arccosh(np.maximum(s * t - P @ Q.T, 1.0))


def _knn_accuracy(D, y_train, y_test, k=10):
    nearest = np.argsort(D, axis=1)[:, :k]
    votes = y_train[nearest]
    predicted = np.array([np.bincount(v, minlength=10).argmax() for v in votes])
    return (predicted == y_test).mean()


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:1200].astype(np.float32), y[:1200], X[1200:1500].astype(np.float32), y[1200:1500]


@pytest.mark.parametrize("metric, dim", [(HAVERSINE, 2), (HYPERBOLOID, 2), (HYPERBOLOID, 3)])
def test_distance_and_gradient(metric, dim):
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.uniform(0.3, 2.8, dim), rng.uniform(0.3, 2.8, dim)
        grad = np.empty(dim)
        d = distance_grad(metric, x, y, grad)
        reference = (_haversine if metric == HAVERSINE else _hyperbolic)(x[None], y[None])
        assert d == pytest.approx(reference[0, 0], rel=1e-9, abs=1e-12)
        step = 1e-6
        numeric = np.empty(dim)
        for k in range(dim):
            up, down = x.copy(), x.copy()
            up[k] += step
            down[k] -= step
            numeric[k] = (distance_grad(metric, up, y, np.empty(dim))
                          - distance_grad(metric, down, y, np.empty(dim))) / (2 * step)
        # the gradients carry umap-learn's 1e-6 in their denominators
        np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-6)


def test_digits_on_the_sphere_keep_their_neighbourhoods(digits):
    # Measured when written: 10-NN accuracy of held-out points placed by transform, by
    # great-circle distance, 0.96 (the euclidean embedding's 0.97); the bar leaves room for
    # seeds and platforms, far above chance (0.1) and a collapsed sphere.
    X, y, X_new, y_new = digits
    model = unimap.UMAP(output_metric="haversine", random_state=0).fit(X)
    assert np.isfinite(model.embedding_).all()
    placed = model.transform(X_new)
    assert _knn_accuracy(_haversine(placed, model.embedding_), y, y_new) > 0.9
    # the points use the sphere: their unit vectors do not all lie in one small cap
    theta, phi = model.embedding_[:, 0], model.embedding_[:, 1]
    xyz = np.c_[np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)]
    assert np.linalg.norm(xyz.mean(0)) < 0.8


def test_digits_in_hyperbolic_space_keep_their_neighbourhoods(digits):
    X, y, X_new, y_new = digits
    model = unimap.UMAP(output_metric="hyperboloid", random_state=0).fit(X)
    assert np.isfinite(model.embedding_).all()
    placed = model.transform(X_new)
    assert _knn_accuracy(_hyperbolic(placed, model.embedding_), y, y_new) > 0.9


def test_output_metric_fits_do_not_depend_on_threads(digits):
    from unimap.runtime.threads import numba_threads

    X = digits[0][:700]
    runs = []
    for n_jobs in (1, 2):
        with numba_threads(n_jobs):
            runs.append(unimap.UMAP(output_metric="haversine", random_state=3,
                                    n_jobs=n_jobs).fit(X).embedding_)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_saved_and_loaded(tmp_path, digits):
    X, _, X_new, _ = digits
    model = unimap.UMAP(output_metric="hyperboloid", n_epochs=50, random_state=0).fit(X)
    model.save(tmp_path / "m.unimap")
    loaded = unimap.load(tmp_path / "m.unimap")
    assert loaded.output_metric == "hyperboloid"
    np.testing.assert_array_equal(loaded.transform(X_new[:20]), model.transform(X_new[:20]))


@pytest.mark.parametrize("params, match", [
    ({"output_metric": "haversine", "n_components": 3}, "n_components must be 2"),
    ({"output_metric": "haversine", "densmap": True}, "densmap and output_dens"),
    ({"output_metric": "hyperboloid", "output_dens": True}, "densmap and output_dens"),
    ({"output_metric": "hyperboloid", "output_metric_kwds": {"c": 1}}, "takes no parameters"),
    ({"output_metric": "poincare"}, "output_metric"),
])
def test_refusals(params, match, digits):
    with pytest.raises(ValueError, match=match):
        unimap.UMAP(**params).fit(digits[0][:100])


def test_inverse_transform_and_gdr_refuse_a_non_euclidean_output(digits):
    X = digits[0][:300]
    model = unimap.UMAP(output_metric="haversine", n_epochs=20, random_state=0).fit(X)
    with pytest.raises(ValueError, match="euclidean distances in the embedding"):
        model.inverse_transform(model.embedding_[:3])
    with pytest.raises(TypeError, match="UMAP's"):
        unimap.GDR(output_metric="haversine")
