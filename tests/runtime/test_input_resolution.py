"""Data the float32 neighbour search cannot resolve is refused with the one-line fix, instead
of a finite, wrong embedding."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from unimap import GDR, UMAP
from unimap.metrics import knn_accuracy


def _clusters(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, 400)
    return rng.normal(size=(4, 8))[y] * 4 + rng.normal(size=(400, 8)), y


@pytest.mark.parametrize("make", [lambda X: X * 1e-30, lambda X: sp.csr_matrix(X * 1e-30)])
def test_data_at_a_tiny_scale_is_refused(make):
    X, _ = _clusters()
    with pytest.raises(ValueError, match="multiply X by a constant"):
        UMAP(n_epochs=5).fit(make(X))


def test_float64_data_with_a_large_offset_is_refused():
    X, _ = _clusters()
    with pytest.raises(ValueError, match="subtract the column means"):
        GDR(n_epochs=5).fit(X + 1e8)


def test_the_suggested_fixes_give_the_embedding_back():
    X, y = _clusters()
    tiny, offset = X * 1e-30, X + 1e8
    fixed = [tiny / tiny.std(), offset - offset.mean(axis=0)]
    for data in fixed:
        embedding = UMAP(n_epochs=100, random_state=0).fit_transform(data)
        assert knn_accuracy(embedding, y, n_neighbors=10) > 0.95


def test_ordinary_offsets_and_float32_input_are_accepted():
    X, _ = _clusters()
    UMAP(n_epochs=5).fit(X + 300.0)  # 0-255 pixels, expression counts: far below the limit
    UMAP(n_epochs=5).fit((X + 1e8).astype(np.float32))  # its bits are the user's already
