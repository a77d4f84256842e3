"""The affinity stages (:mod:`unimap.affinity.stage`): each object gives the same P as the
function it wraps, places new points as the estimators' ``transform`` does, and answers the
planning (memory, devices) that the pipeline asks of it."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from unimap.affinity import (
    Affinity,
    FuzzyAffinity,
    JointAffinity,
    PerplexityAffinity,
    fuzzy_simplicial_set,
    joint_affinities,
    perplexity_affinities,
)
from unimap.methods.umap import UMAP
from unimap.neighbors import nearest_neighbors


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 6)).astype(np.float32)
    knn, index = nearest_neighbors(X, 31, random_state=0)
    return X, knn, index


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.data, b.data)


def test_each_stage_gives_its_function_s_bits(data):
    _, knn, _ = data
    fuzzy = FuzzyAffinity(local_connectivity=2.0, set_op_mix_ratio=0.7).fit(knn.indices,
                                                                            knn.distances)
    P, sigmas, rhos = fuzzy_simplicial_set(knn.indices, knn.distances, None, 2.0, 0.7)
    _same(fuzzy.P_, P)
    assert np.array_equal(fuzzy.sigmas_, sigmas) and np.array_equal(fuzzy.rhos_, rhos)
    perplexity = PerplexityAffinity(10.0).fit(knn.indices, knn.distances)
    P, sigmas = perplexity_affinities(knn.indices, knn.distances, 10.0)
    _same(perplexity.P_, P)
    assert np.array_equal(perplexity.sigmas_, sigmas)
    for kind in ("fuzzy", "perplexity"):
        for symmetrization in ("umap", "tsne", "none"):
            joint = JointAffinity(kind, symmetrization, True, 10.0).fit(knn.indices,
                                                                         knn.distances)
            _same(joint.P_, joint_affinities(knn.indices, knn.distances, kind, symmetrization,
                                             True, 10.0))
            assert joint.n_samples_ == 300


def test_new_points_get_the_calibrated_rows(data):
    X, _, index = data
    affinity = PerplexityAffinity(5.0)
    k = affinity.n_neighbors_for(X.shape[0])
    assert k == 15
    idx, dist = index.query(X[:20] + 0.05, k)
    P = affinity.to_new(idx, dist)
    assert P.shape == (20, 15)
    assert np.allclose(P.sum(axis=1), 1.0)
    entropy = -(P * np.log2(np.where(P > 0, P, 1.0))).sum(axis=1)
    assert np.allclose(2.0 ** entropy, 5.0, rtol=1e-3)  # each row at the perplexity

    idx, dist = index.query(X[:20], 15)  # training points again: each its own nearest
    W = FuzzyAffinity(local_connectivity=1.0).to_new(idx, dist)
    assert W.dtype == np.float32 and ((W >= 0) & (W <= 1)).all()
    assert np.array_equal(idx[:, 0], np.arange(20)) and np.allclose(W[:, 0], 1.0)
    assert (np.diff(W, axis=1) <= 1e-7).all()  # nearer neighbours weigh more

    for kind, directed in (("fuzzy", FuzzyAffinity()), ("perplexity", PerplexityAffinity(5.0))):
        assert np.array_equal(JointAffinity(kind, perplexity=5.0).to_new(idx, dist),
                              directed.to_new(idx, dist))


def test_the_placement_asks_the_stage(data, monkeypatch):
    """UMAP's transform computes the new points' memberships with ``FuzzyAffinity.to_new``."""
    X, _, _ = data
    model = UMAP(n_neighbors=10, n_epochs=20, random_state=0, max_memory=None).fit(X)
    calls = []
    original = FuzzyAffinity.to_new

    def spy(self, indices, distances):
        calls.append((self.local_connectivity, indices.shape))
        return original(self, indices, distances)

    monkeypatch.setattr(FuzzyAffinity, "to_new", spy)
    model.transform(X[:7] + 0.01)
    assert calls == [(1.0, (7, 10))]


def test_memory_and_devices_are_declared(data):
    assert FuzzyAffinity().memory(1000) == (44_000, 28_000)
    assert PerplexityAffinity().memory(1000) == (48_000, 14_000)
    assert JointAffinity("perplexity").memory(10) == PerplexityAffinity().memory(10)
    assert all(a.supports("cuda") and a.supports("cpu") and not a.supports("tpu")
               for a in (FuzzyAffinity(), PerplexityAffinity(), JointAffinity()))


class CPUOnlyFuzzy(FuzzyAffinity):
    """A stage without CUDA kernels, that allocates a lot per edge."""

    MEMORY_PER_EDGE = (1 << 16, 8)
    DEVICES = ("cpu",)


class UMAPWithCPUOnlyFuzzy(UMAP):
    def _affinity(self, fit):
        return CPUOnlyFuzzy(self.local_connectivity, self.set_op_mix_ratio)


def test_the_pipeline_plans_with_the_method_s_stage(data):
    """The memory estimate reads the stage's bytes per edge, and the GPU phase plan its
    devices: nothing about the affinity is listed elsewhere."""
    X, _, _ = data
    model = UMAPWithCPUOnlyFuzzy(n_neighbors=10, n_epochs=2, random_state=0,
                                 max_memory=None).fit(X)
    assert model.memory_estimate_ >= X.shape[0] * 10 * (1 << 16)
    with pytest.raises(MemoryError, match="affinities"):
        UMAPWithCPUOnlyFuzzy(n_neighbors=10, n_epochs=2, max_memory="150MB").fit(X)
    with pytest.raises(ValueError, match="no kernels for device='cuda'"):
        CPUOnlyFuzzy().fit(np.zeros((2, 2), np.int32), np.zeros((2, 2)), device="cuda")

    model._optimizer_on_gpu = lambda fit, n: False  # the optimizer's answer, fixed here
    assert "affinities" not in model._cuda_phases(_unindexed(model, X), X)
    plain = UMAP(n_neighbors=10)
    plain._optimizer_on_gpu = lambda fit, n: False
    assert "affinities" in plain._cuda_phases(_unindexed(plain, X), X)


def _unindexed(model, X):
    """The plan of a fit of ``X`` whose kNN graph is given (no index to ask)."""
    plan = model._resolve(X.shape[0])
    plan._index = None
    return plan


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"same \(n_samples, k\) shape"):
        FuzzyAffinity().fit(np.zeros((4, 3), np.int32), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="kind must be one of"):
        JointAffinity("gaussian").fit(np.zeros((3, 2), np.int32), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="symmetrization must be one of"):
        JointAffinity("fuzzy", "max").fit(np.zeros((3, 2), np.int32), np.zeros((3, 2)))
    with pytest.raises(NotImplementedError):
        Affinity().to_new(np.zeros((1, 1)), np.zeros((1, 1)))
    assert repr(JointAffinity("perplexity", "tsne", True, 12.0)) == (
        "JointAffinity(kind='perplexity', symmetrization='tsne', normalize=True, "
        "perplexity=12.0)")


@pytest.mark.parametrize("stage", [FuzzyAffinity, PerplexityAffinity, JointAffinity])
def test_docstring_examples(stage):
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(stage, stage.__name__):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
    assert runner.tries > 0
