"""The estimators' contract under every operation, property-based (issue 58, item 3).

Each example fits an estimator (UMAP, GDR in both modes, TSNE, PCA; ``unique`` on or off;
dense, float64, integer or sparse rows, with duplicates) and then applies one operation to a
second generated input that may be bad (other widths, NaN, infinities, huge values, empty,
sparse): ``transform``, ``update``, ``inverse_transform`` or ``save`` followed by ``load``.
The contract: the result is finite, of the right shape and aligned with its input (``update``
grows ``embedding_`` by the new rows, a loaded model transforms as the saved one did,
bitwise), or the call raises ValueError or TypeError with a message, leaving the model as it
was and no file behind. The example count is bounded for CI; ``derandomize`` makes a run
repeatable.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

hypothesis = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")
from hypothesis import HealthCheck, given, settings  # noqa: E402

import unimap  # noqa: E402
from unimap import GDR, PCA, TSNE, UMAP  # noqa: E402

CONTRACT = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
OPERATIONS = ("transform", "update", "inverse_transform", "save")


@st.composite
def training_rows(draw):
    n = draw(st.integers(12, 50))
    d = draw(st.integers(2, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    X = rng.standard_normal((n, d)) * draw(st.sampled_from([1.0, 1e-3, 1e6]))
    if draw(st.booleans()):  # duplicated rows
        X[rng.integers(0, n, n // 3)] = X[0]
    kind = draw(st.sampled_from(["float32", "float64", "int64", "csr"]))
    if kind == "int64":
        X = np.round(X * 10).astype(np.int64)
    elif kind == "csr":
        X[np.abs(X) < 0.7 * np.abs(X).max() / 3] = 0
        X = sp.csr_matrix(X.astype(np.float32))
    else:
        X = X.astype(kind)
    return X


@st.composite
def new_rows(draw, width):
    """A second input for an operation: usually well formed, sometimes not."""
    m = draw(st.integers(0, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    d = width if draw(st.integers(0, 5)) else draw(st.integers(1, width + 2))
    Z = rng.standard_normal((m, d)) * draw(st.sampled_from([1.0, 1.0, 1e3, 1e20]))
    if m and draw(st.integers(0, 5)) == 0:
        Z[rng.integers(0, m), rng.integers(0, d)] = draw(st.sampled_from([np.nan, np.inf]))
    if draw(st.integers(0, 5)) == 0:
        return sp.csr_matrix(Z.astype(np.float32))
    return Z.astype(draw(st.sampled_from(["float32", "float64"])))


def _estimator(draw):
    name = draw(st.sampled_from(["UMAP", "GDR", "GDR-normalized", "TSNE", "PCA"]))
    unique = draw(st.booleans())
    if name == "UMAP":
        return UMAP(n_neighbors=5, n_epochs=10, unique=unique, random_state=0)
    if name == "GDR":
        return GDR(n_neighbors=5, n_epochs=10, unique=unique, random_state=0)
    if name == "GDR-normalized":
        return GDR(normalized=True, n_neighbors=5, n_epochs=20, unique=unique, random_state=0)
    if name == "TSNE":
        return TSNE(perplexity=3.0, max_iter=30, random_state=0)
    return PCA(n_components=2)


def _quiet(call, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args)


def _refused(exc: Exception) -> None:
    assert isinstance(exc, (ValueError, TypeError)), f"{type(exc).__name__}: {exc}"
    assert str(exc).strip(), f"{type(exc).__name__} without a message"


def _finite(result, shape) -> None:
    result = np.asarray(result.toarray() if sp.issparse(result) else result)
    assert result.shape == shape, (result.shape, shape)
    assert np.isfinite(result).all(), "a non-finite result returned"


def _check_operation(model, X, operation, draw, folder) -> None:
    width = X.shape[1]
    before = np.array(model.embedding_, copy=True) if hasattr(model, "embedding_") else None
    if operation == "inverse_transform":
        if not hasattr(model, "inverse_transform"):
            return
        m = draw(st.integers(0, 6))
        scale = draw(st.sampled_from([1.0, 1e20, 3e38]))
        rng = np.random.default_rng(m)
        Z = (rng.uniform(-1, 1, (m, model.n_components)) * scale).astype(np.float32)
        try:
            result = _quiet(model.inverse_transform, Z)
        except Exception as exc:  # noqa: BLE001
            _refused(exc)
            return
        _finite(result, (m, width))
        return
    Z = draw(new_rows(width))
    if operation == "transform":
        try:
            result = _quiet(model.transform, Z)
        except Exception as exc:  # noqa: BLE001 - the contract names the allowed ones
            _refused(exc)
        else:
            _finite(result, (Z.shape[0], model.n_components))
    elif operation == "update":
        if not hasattr(model, "update"):
            return
        try:
            _quiet(model.update, Z)
        except Exception as exc:  # noqa: BLE001
            _refused(exc)
            np.testing.assert_array_equal(model.embedding_, before)  # nothing half-way
        else:
            _finite(model.embedding_, (before.shape[0] + Z.shape[0], before.shape[1]))
    else:  # save, then load: the loaded model places points as the saved one does
        path = folder / "model.unimap"
        model.save(path)
        loaded = unimap.load(path)
        good = (np.asarray(X[:5].toarray() if sp.issparse(X) else X[:5])).astype(np.float32)
        expected = _quiet(model.transform, good)
        np.testing.assert_array_equal(_quiet(loaded.transform, good), expected)
        path.unlink()
        # a failing save writes nothing: a path below a file cannot be written
        blocker = folder / "file"
        blocker.write_bytes(b"")
        with pytest.raises((OSError, ValueError)):
            model.save(blocker / "model.unimap")
        blocker.unlink()
    assert os.listdir(folder) == [], os.listdir(folder)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_contract_holds_for_every_operation(operation, tmp_path):
    @given(X=training_rows(), data=st.data())
    def run(X, data):
        model = _estimator(data.draw)
        if isinstance(model, TSNE) and operation == "update":
            return
        try:
            _quiet(model.fit, X)
        except Exception as exc:  # noqa: BLE001
            _refused(exc)
            return
        n_rows = X.shape[0]
        _finite(model.embedding_ if hasattr(model, "embedding_") else model.transform(X),
                (n_rows, model.n_components))
        _check_operation(model, X, operation, data.draw, tmp_path)

    CONTRACT(run)()
