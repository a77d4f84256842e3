"""The estimators are scikit-learn estimators: check_estimator, clone, Pipeline, GridSearchCV.

Each check that cannot apply to a neighbour embedding is declared with its reason by the
estimator's ``_expected_failed_checks`` and run as an expected failure (scikit-learn's
``expected_failed_checks``), so a check that starts to pass is noticed too.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from unimap import GDR, PCA, TSNE, UMAP
from unimap.metrics import trustworthiness

# Small settings keep the ~50 checks per estimator fast; the checks are about the contract.
ESTIMATORS = [
    PCA(),
    UMAP(n_epochs=20, random_state=0),
    TSNE(max_iter=50, early_exaggeration_iter=10, random_state=0),
    GDR(n_epochs=20, random_state=0),
    GDR(normalized=True, n_epochs=30, random_state=0),
]


@parametrize_with_checks(ESTIMATORS,
                         expected_failed_checks=lambda est: est._expected_failed_checks())
def test_sklearn_check_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_parameter_has_a_declared_constraint(estimator):
    assert set(estimator.get_params()) == set(estimator._parameter_constraints)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_clone_and_repr(estimator):
    twin = clone(estimator).set_params(random_state=7)
    assert twin.get_params()["random_state"] == 7
    assert estimator.get_params()["random_state"] in (None, 0)
    assert repr(estimator).startswith(type(estimator).__name__ + "(")


def test_pipeline_scaler_pca_umap(digits):
    X, _ = digits
    pipe = make_pipeline(StandardScaler(), PCA(30), UMAP(n_epochs=50, random_state=0))
    Y = pipe.fit_transform(X[:500])
    assert Y.shape == (500, 2) and np.isfinite(Y).all()
    assert pipe.transform(X[500:520]).shape == (20, 2)
    # The PCA step saw the scaled data: same embedding as by hand.
    scaled = StandardScaler().fit_transform(X[:500])
    by_hand = UMAP(n_epochs=50, random_state=0).fit_transform(PCA(30).fit_transform(scaled))
    np.testing.assert_array_equal(Y, by_hand)


def test_set_output_names_the_columns(digits):
    X, _ = digits
    model = PCA(3).fit(X)
    assert list(model.get_feature_names_out()) == ["pca0", "pca1", "pca2"]
    umap = UMAP(n_epochs=20, random_state=0).fit(X[:200])
    assert list(umap.get_feature_names_out()) == ["umap0", "umap1"]


def test_grid_search_over_n_neighbors_with_a_unimap_metric(digits):
    X, _ = digits
    X = X[:300]

    def trust(estimator, X_test, y=None):  # scorer from unimap.metrics
        return trustworthiness(X_test, estimator.transform(X_test), n_neighbors=5)

    search = GridSearchCV(UMAP(n_epochs=30, random_state=0), {"n_neighbors": [5, 15]},
                          scoring=trust, cv=2).fit(X)
    assert search.best_params_["n_neighbors"] in (5, 15)
    scores = search.cv_results_["mean_test_score"]
    assert np.all((scores > 0.8) & (scores <= 1.0)), scores


def test_estimators_load_without_scikit_learn():
    """scikit-learn's import costs 0.8 s in a fresh process; fitting must not need it."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from unimap import GDR, PCA, TSNE, UMAP\n"
        "X = np.random.default_rng(0).standard_normal((300, 8)).astype(np.float32)\n"
        "for est in (PCA(2), UMAP(n_epochs=5), TSNE(max_iter=20, early_exaggeration_iter=5),\n"
        "            GDR(n_epochs=5), GDR(normalized=True, n_epochs=5)):\n"
        "    est.fit(X).transform(X[:5])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'"
        " or m == 'scipy.stats'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]", out


def test_pandas_output_and_feature_names(digits):
    pd = pytest.importorskip("pandas")
    X, _ = digits
    frame = pd.DataFrame(X[:200], columns=[f"pixel{i}" for i in range(X.shape[1])],
                         index=np.arange(1000, 1200))
    model = UMAP(n_epochs=20, random_state=0).set_output(transform="pandas")
    out = model.fit_transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["umap0", "umap1"]
    assert (out.index == frame.index).all()
    np.testing.assert_array_equal(out.to_numpy(), model.embedding_)
    assert list(model.feature_names_in_) == list(frame.columns)
    placed = model.transform(frame.iloc[:5])
    assert isinstance(placed, pd.DataFrame) and (placed.index == frame.index[:5]).all()
    with pytest.raises(ValueError, match="feature names should match"):
        model.transform(frame.iloc[:5].rename(columns={"pixel0": "other"}))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        model.transform(X[:5])
    # A refit on an array forgets the names.
    assert not hasattr(UMAP(n_epochs=5).fit(frame).fit(X[:200]), "feature_names_in_")
