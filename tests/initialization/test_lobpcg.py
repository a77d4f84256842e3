"""LOBPCG over NumPy's block operations: the driver the GPU's spectral start runs
(:mod:`unimap.initialization.lobpcg`), checked against ARPACK on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from unimap.affinity.fuzzy import fuzzy_simplicial_set
from unimap.initialization.eigenpairs import normalized_adjacency
from unimap.initialization.lobpcg import NumpyBlockOps, lobpcg_largest
from unimap.initialization.spectral import spectral_layout
from unimap.neighbors import NeighborIndex


@pytest.fixture(scope="module")
def graph():
    # connected, with distinct leading eigenvalues (1, 0.913, 0.881, 0.822, ...)
    X, _ = make_blobs(600, n_features=12, centers=4, cluster_std=8.0, random_state=0)
    knn = NeighborIndex("euclidean", "exact").build(X.astype(np.float32)).knn_graph(15)
    return fuzzy_simplicial_set(knn.indices, knn.distances)[0]


def _solve(graph, n_wanted=2, guards=4, max_iter=500, seed=0):
    adjacency, degrees = normalized_adjacency(graph)
    trivial = (np.sqrt(degrees) / np.linalg.norm(np.sqrt(degrees))).astype(np.float32)
    X0 = np.random.default_rng(seed).standard_normal((graph.shape[0], n_wanted + guards))
    ops = NumpyBlockOps(adjacency.astype(np.float32))
    return lobpcg_largest(ops, X0.astype(np.float32), trivial[:, None], n_wanted, 1e-4,
                          max_iter)


def test_lobpcg_spans_arpacks_eigenvectors(graph):
    result = _solve(graph)
    assert result.converged and result.n_iter < 500
    assert np.all(np.diff(result.values) <= 0)  # descending
    reference = spectral_layout(graph, 2, 0)  # ARPACK
    ours = result.vectors[:, :2].astype(np.float64)
    cosines = np.linalg.svd((ours / np.linalg.norm(ours, axis=0)).T
                            @ (reference / np.linalg.norm(reference, axis=0)),
                            compute_uv=False)
    # the principal angles between the two 2-D subspaces; 1e-4 residuals give ~1e-5 here
    assert cosines.min() > 0.9999


def test_lobpcg_eigenpairs_satisfy_the_equation(graph):
    result = _solve(graph, n_wanted=3)
    adjacency, degrees = normalized_adjacency(graph)
    for value, vector in zip(result.values[:3], result.vectors[:, :3].T, strict=True):
        vector = vector.astype(np.float64) / np.linalg.norm(vector)
        assert np.linalg.norm(adjacency @ vector - value * vector) < 2e-4
        assert abs(vector @ np.sqrt(degrees)) / np.linalg.norm(np.sqrt(degrees)) < 1e-4


def test_lobpcg_says_when_it_did_not_converge(graph):
    result = _solve(graph, max_iter=2)
    assert not result.converged and result.n_iter == 2


def test_lobpcg_is_deterministic(graph):
    a, b = _solve(graph, seed=3), _solve(graph, seed=3)
    assert np.array_equal(a.vectors, b.vectors) and np.array_equal(a.values, b.values)
