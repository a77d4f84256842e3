"""Property-based fuzzing of every estimator (hypothesis).

Each generated example is a data set (shape, dtype, duplicates, constant columns, huge or
tiny magnitudes, dense or one of scipy's sparse formats) and parameter values at and beyond
their bounds. The property: ``fit_transform`` either raises ValueError or TypeError whose
message names the problem, or returns a finite array of shape (n_samples, n_components).
Anything else (another exception, a NaN, a wrong shape, a crash) is a bug.

The default profile runs a few hundred examples in all (fast enough for CI); the ``slow``
marker runs the ``thorough`` profile with ten times as many.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from unimap import GDR, PCA, TSNE, UMAP  # noqa: E402

FAST = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
THOROUGH = settings(max_examples=600, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DTYPES = ["float64", "float32", "float16", "int64", "int32", "bool", "object", "complex128"]


@st.composite
def data_sets(draw):
    """An input matrix: dense of any dtype, or sparse; with the usual pathologies."""
    n = draw(st.integers(1, 60))
    d = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    scale = draw(st.sampled_from([1.0, 1e-30, 1e30, 1e-300, 1e300]))
    X = X * scale
    if draw(st.booleans()):  # duplicates: a few rows repeated many times
        X = X[rng.integers(0, max(1, n // 4), size=n)]
    if draw(st.booleans()):  # a constant column
        X[:, rng.integers(0, d)] = draw(st.sampled_from([0.0, 7.0]))
    if draw(st.integers(0, 9)) == 0:  # a non-finite entry
        X[rng.integers(0, n), rng.integers(0, d)] = draw(st.sampled_from([np.nan, np.inf]))
    dtype = draw(st.sampled_from(DTYPES))
    with np.errstate(over="ignore", invalid="ignore"):
        X = X.astype(dtype) if dtype != "object" else X.astype(object)
    if draw(st.integers(0, 4)) == 0 and dtype in ("float64", "float32", "int64"):
        import scipy.sparse as sp

        X[np.abs(X) < 0.5] = 0
        X = draw(st.sampled_from([sp.csr_matrix, sp.csc_matrix, sp.coo_matrix]))(X)
    return X


def _check(estimator, X) -> None:
    n = X.shape[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Y = estimator.fit_transform(X)
    except (ValueError, TypeError) as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        return
    Y = np.asarray(Y)
    assert Y.shape == (n, estimator.n_components), (Y.shape, n)
    assert np.isfinite(Y).all(), "non-finite embedding returned"


def _umap(draw):
    return UMAP(n_neighbors=draw(st.sampled_from([1, 2, 5, 15, 100])),
                n_components=draw(st.integers(1, 3)),
                min_dist=draw(st.sampled_from([0.0, 0.1, 0.99, 1.0, 5.0])),
                init=draw(st.sampled_from(["spectral", "random", "pca"])),
                n_epochs=draw(st.sampled_from([0, 1, 5])), random_state=0)


def _tsne(draw):
    return TSNE(perplexity=draw(st.sampled_from([0.5, 2.0, 5.0, 30.0, 1000.0])),
                n_components=draw(st.integers(1, 3)),
                method=draw(st.sampled_from(["auto", "exact", "barnes_hut", "fft"])),
                init=draw(st.sampled_from(["pca", "random", "spectral"])),
                max_iter=draw(st.sampled_from([1, 10])),
                early_exaggeration_iter=draw(st.sampled_from([0, 5])), random_state=0)


def _gdr(draw):
    return GDR(normalized=draw(st.booleans()),
               n_neighbors=draw(st.sampled_from([1, 2, 5, 15, 100])),
               n_components=draw(st.integers(1, 3)),
               n_epochs=draw(st.sampled_from([1, 5, 20])), random_state=0)


def _pca(draw):
    return PCA(n_components=draw(st.integers(1, 10)),
               svd_solver=draw(st.sampled_from(["auto", "full", "covariance",
                                                "randomized"])), random_state=0)


MAKERS = {"UMAP": _umap, "TSNE": _tsne, "GDR": _gdr, "PCA": _pca}


def _property(name):
    @given(X=data_sets(), data=st.data())
    def run(X, data):
        _check(MAKERS[name](data.draw), X)
    return run


@pytest.mark.parametrize("name", list(MAKERS))
def test_fuzz(name):
    FAST(_property(name))()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MAKERS))
def test_fuzz_thorough(name):
    THOROUGH(_property(name))()
