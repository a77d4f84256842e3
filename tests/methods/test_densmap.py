"""densMAP (issue 41): UMAP(densmap=True) keeps the data's local radii in the embedding."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import spearmanr

import unimap
from unimap import UMAP
from unimap.affinity.density import log_radii


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    X, _ = load_digits(return_X_y=True)
    return X[:900].astype(np.float32)


def _reference_log_radii(graph, knn_indices, knn_dists):
    """umap-learn's loop (simplicial_set_embedding) over the graph's COO entries."""
    n = graph.shape[0]
    rows = np.repeat(np.arange(n), knn_indices.shape[1])
    dmat = sp.coo_matrix((knn_dists.ravel(), (rows, knn_indices.ravel())), shape=(n, n))
    dists = dmat.maximum(dmat.transpose()).todok()
    coo = graph.tocoo()
    ro, mu_sum = np.zeros(n), np.zeros(n)
    for j, k, mu in zip(coo.row, coo.col, coo.data, strict=True):
        D = dists[j, k] * dists[j, k]
        ro[j] += mu * D
        ro[k] += mu * D
        mu_sum[j] += mu
        mu_sum[k] += mu
    return np.log(1e-8 + ro / mu_sum)


def test_log_radii_match_umap_learns_loop(digits):
    model = UMAP(n_epochs=10, random_state=0).fit(digits[:300])
    ours = log_radii(model.graph_, model.knn_indices_, model.knn_dists_)
    expected = _reference_log_radii(model.graph_, model.knn_indices_, model.knn_dists_)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)


def test_densmap_keeps_the_local_radii(digits):
    plain_emb, plain_orig, plain_emb_r = UMAP(random_state=0, output_dens=True).fit_transform(
        digits)
    model = UMAP(random_state=0, densmap=True, output_dens=True)
    embedding, rad_orig, rad_emb = model.fit_transform(digits)
    assert embedding.shape == (900, 2) and rad_orig.shape == rad_emb.shape == (900,)
    # the data's radii: over the graph pruned for 700 epochs instead of 500 (a few edges more)
    np.testing.assert_allclose(rad_orig, plain_orig, rtol=1e-3)
    plain = spearmanr(plain_orig, plain_emb_r).statistic
    dens = spearmanr(rad_orig, rad_emb).statistic
    # measured on all of digits: 0.12 without densMAP, 0.819 with it, umap-learn's 0.806
    assert dens > 0.7 and dens > plain + 0.4, (plain, dens)
    assert model.n_epochs_ == 700  # umap-learn's default: 200 more epochs for densMAP


def test_densmap_is_the_same_for_any_n_jobs(digits):
    kw = dict(densmap=True, n_epochs=60, random_state=0)
    np.testing.assert_array_equal(UMAP(n_jobs=1, **kw).fit_transform(digits),
                                  UMAP(n_jobs=2, **kw).fit_transform(digits))


def test_zero_lambda_leaves_umaps_epochs_untouched(digits):
    np.testing.assert_array_equal(
        UMAP(densmap=True, dens_lambda=0.0, n_epochs=50, random_state=0).fit_transform(digits),
        UMAP(n_epochs=50, random_state=0).fit_transform(digits))


def test_radii_follow_unique_rows_refits_and_files(digits, tmp_path):
    X = np.vstack([digits[:200], digits[:50]])
    model = UMAP(unique=True, output_dens=True, n_epochs=30, random_state=0).fit(X)
    assert model.rad_orig_.shape == model.rad_emb_.shape == (250,)
    np.testing.assert_array_equal(model.rad_emb_[200:], model.rad_emb_[:50])
    loaded = unimap.load(model.save(tmp_path / "d.unimap"))
    np.testing.assert_array_equal(loaded.rad_emb_, model.rad_emb_)
    model.set_params(output_dens=False, unique=False).fit(digits[:100])
    assert not hasattr(model, "rad_orig_") and not hasattr(model, "rad_emb_")
    assert not hasattr(model, "unique_inverse_")


@pytest.mark.parametrize(("kw", "name"), [({"dens_frac": 1.5}, "dens_frac"),
                                          ({"dens_lambda": -1.0}, "dens_lambda"),
                                          ({"densmap": "yes"}, "densmap")])
def test_bad_densmap_settings(kw, name, digits):
    with pytest.raises(unimap.InvalidParameterError, match=name):
        UMAP(**kw).fit(digits[:50])
