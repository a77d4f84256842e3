"""transform of sparse input: the same placement as of the dense rows, for every neighbour
embedding and on the command line (it failed in the index's row preparation before)."""

import numpy as np
import pytest
import scipy.sparse as sp

import unimap
from unimap.cli import main

X_SPARSE = sp.random(300, 40, density=0.2, random_state=0, format="csr", dtype=np.float32)


@pytest.mark.parametrize("make", [
    lambda: unimap.UMAP(n_epochs=20, random_state=0),
    lambda: unimap.TSNE(max_iter=60, early_exaggeration_iter=20, random_state=0),
    lambda: unimap.GDR(n_epochs=20, random_state=0),
    lambda: unimap.GDR(normalized=True, n_epochs=40, random_state=0),
], ids=["umap", "tsne", "gdr", "gdr_normalized"])
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_rows_are_placed_as_their_dense_copies(make, fmt):
    model = make().fit(X_SPARSE)
    new = X_SPARSE[:7]
    placed = model.transform(new.asformat(fmt))
    np.testing.assert_array_equal(placed, model.transform(new.toarray()))
    assert placed.shape == (7, 2) and np.isfinite(placed).all()


def test_cli_transform_of_a_sparse_npz(tmp_path):
    sp.save_npz(tmp_path / "train.npz", X_SPARSE[:250])
    sp.save_npz(tmp_path / "new.npz", X_SPARSE[250:])
    model_path = tmp_path / "model.unimap"
    assert main(["embed", str(tmp_path / "train.npz"), "-o", str(tmp_path / "map.png"),
                 "--n-epochs", "20", "--save-model", str(model_path)]) == 0
    out = tmp_path / "placed.npy"
    assert main(["transform", str(model_path), str(tmp_path / "new.npz"), "-o", str(out)]) == 0
    expected = unimap.load(model_path).transform(X_SPARSE[250:].toarray())
    np.testing.assert_array_equal(np.load(out), expected)
