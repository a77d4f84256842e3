"""UMAP's calibration at any scale of the distances (issue 58: precomputed distances × 1e30
were calibrated to σ's cap of 2⁶⁴, and the embedding degraded to a 5-NN accuracy of 0.85 on
blobs where the unscaled distances gave 1.00)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs
from sklearn.metrics import pairwise_distances

from unimap import GDR, UMAP
from unimap.affinity import FuzzyAffinity
from unimap.affinity.fuzzy import calibration_scale, smooth_knn_dist
from unimap.metrics import knn_accuracy_loo


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(400, 10, centers=6, random_state=0, cluster_std=2.0)
    return pairwise_distances(X).astype(np.float32), y


def _knn(D, k=15):
    idx = np.argsort(D, axis=1, kind="stable")[:, :k]
    return idx, np.take_along_axis(D, idx, axis=1)


@pytest.mark.parametrize("factor", [1e30, 2.0 ** 100, 1e-30, 2.0 ** -100])
def test_memberships_do_not_depend_on_the_distances_scale(blobs, factor):
    D, _ = blobs
    idx, dist = _knn(D)
    scaled = dist * np.float32(factor)
    reference = FuzzyAffinity().fit(idx, dist)
    fitted = FuzzyAffinity().fit(idx, scaled)
    np.testing.assert_allclose(fitted.P_.toarray(), reference.P_.toarray(), atol=1e-5)
    np.testing.assert_allclose(fitted.sigmas_, reference.sigmas_ * factor, rtol=1e-4)
    np.testing.assert_allclose(fitted.rhos_, reference.rhos_ * np.float32(factor), rtol=1e-6)
    np.testing.assert_allclose(fitted.to_new(idx[:, 1:], scaled[:, 1:]),
                               reference.to_new(idx[:, 1:], dist[:, 1:]), atol=1e-5)


def test_the_scale_is_a_power_of_two_only_out_of_range():
    assert calibration_scale(np.array([[0.0, 3.0, 1e12]], np.float32)) == 1.0
    assert calibration_scale(np.array([[0.0, np.inf, 5.0]], np.float32)) == 1.0
    assert calibration_scale(np.array([[0.0, 3e30]], np.float32)) == 2.0 ** 101
    assert calibration_scale(np.array([[0.0, 3e-30]], np.float32)) == 2.0 ** -99
    # within the range the calibration keeps its bits
    dist = np.sort(np.random.default_rng(0).uniform(0, 50, (30, 8)).astype(np.float32), axis=1)
    dist[:, 0] = 0
    sigmas, rhos = smooth_knn_dist(dist)
    assert calibration_scale(dist) == 1.0 and np.isfinite(sigmas).all()


@pytest.mark.parametrize("kind", ["dense", "sparse", "knn"])
@pytest.mark.parametrize("make", [
    lambda **kw: UMAP(n_epochs=60, random_state=0, **kw),
    lambda **kw: GDR(n_epochs=60, random_state=0, **kw),
])
def test_precomputed_distances_at_1e30_embed_as_unscaled(blobs, kind, make):
    D, y = blobs

    def fit(D):
        if kind == "knn":
            return make(precomputed_knn=_knn(D)).fit(np.zeros((len(D), 2), np.float32))
        return make(metric="precomputed").fit(sp.csr_matrix(D) if kind == "sparse" else D)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # several components
        reference, scaled = fit(D), fit(D * np.float32(1e30))
    np.testing.assert_allclose(scaled.graph_.toarray(), reference.graph_.toarray(), atol=1e-5)
    accuracy = knn_accuracy_loo(scaled.embedding_, y, 5)
    assert accuracy >= knn_accuracy_loo(reference.embedding_, y, 5) - 0.01
