"""unique=True (issue 41): fit on the distinct rows, duplicates share their row's position."""

import numpy as np
import pytest
import scipy.sparse as sp

import unimap
from unimap import GDR, UMAP
from unimap.methods.unique_rows import distinct_rows, first_rows


@pytest.fixture(scope="module")
def repeated():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(200, 5)).astype(np.float32)
    picks = rng.integers(0, 200, 500)
    picks[:200] = np.arange(200)  # every distinct row appears
    rng.shuffle(picks)
    return base, picks, base[picks]


def test_distinct_rows_in_order_of_first_appearance(repeated):
    _, picks, X = repeated
    rows, inverse = distinct_rows(X)
    np.testing.assert_array_equal(X[rows][inverse], X)
    assert (np.diff(rows) > 0).all() and rows.size == 200
    np.testing.assert_array_equal(first_rows(inverse), rows)
    sparse_rows, sparse_inverse = distinct_rows(sp.csr_matrix(X))
    np.testing.assert_array_equal(sparse_rows, rows)
    np.testing.assert_array_equal(sparse_inverse, inverse)
    signed = np.array([[0.0, 1.0], [-0.0, 1.0]])
    assert distinct_rows(signed)[0].tolist() == [0]


@pytest.mark.parametrize("cls", [UMAP, GDR])
def test_fit_on_distinct_rows_equals_the_fit_of_those_rows(cls, repeated):
    _, _, X = repeated
    model = cls(unique=True, n_epochs=30, random_state=0).fit(X)
    rows, inverse = distinct_rows(X)
    alone = cls(n_epochs=30, random_state=0).fit(X[rows])
    np.testing.assert_array_equal(model.embedding_, alone.embedding_[inverse])
    assert model.embedding_.shape == (500, 2) and model.graph_.shape == (200, 200)
    np.testing.assert_array_equal(model.unique_inverse_, inverse)
    np.testing.assert_array_equal(model.transform(X[:20]), alone.transform(X[:20]))


def test_unique_with_labels_and_an_init_array(repeated):
    _, _, X = repeated
    y = (X[:, 0] > 0).astype(int)
    start = np.random.default_rng(1).normal(size=(500, 2)).astype(np.float32)
    model = UMAP(unique=True, n_epochs=20, random_state=0, init=start).fit(X, y)
    assert model.init_.shape == (200, 2)
    assert np.isfinite(model.embedding_).all()


def test_unique_model_saves_loads_and_inverts(repeated, tmp_path):
    _, _, X = repeated
    model = UMAP(unique=True, n_epochs=20, random_state=0).fit(X)
    loaded = unimap.load(model.save(tmp_path / "u.unimap"))
    np.testing.assert_array_equal(loaded.unique_inverse_, model.unique_inverse_)
    np.testing.assert_array_equal(loaded.transform(X[:9]), model.transform(X[:9]))
    np.testing.assert_array_equal(loaded.inverse_transform(model.embedding_[:4]),
                                  model.inverse_transform(model.embedding_[:4]))


def test_unique_refusals():
    X = np.ones((10, 3))
    with pytest.raises(ValueError, match="2 distinct samples"):
        UMAP(unique=True).fit(X)
    D = np.abs(np.subtract.outer(np.arange(10.0), np.arange(10.0)))
    with pytest.raises(ValueError, match="precomputed"):
        UMAP(unique=True, metric="precomputed").fit(D)
