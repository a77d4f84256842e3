import numpy as np
import pytest
from sklearn.decomposition import PCA as SkPCA
from sklearn.exceptions import NotFittedError

from unimap import PCA


@pytest.fixture(scope="module")
def data(digits):
    return digits[0]


@pytest.mark.parametrize("solver", ["covariance", "full", "randomized"])
def test_matches_sklearn_up_to_sign(data, solver):
    ours = PCA(5, svd_solver=solver, random_state=0).fit(data)
    ref = SkPCA(5, svd_solver="full").fit(data.astype(np.float64))
    for c in range(5):
        dot = abs(np.dot(ours.components_[c], ref.components_[c]))
        assert dot == pytest.approx(1.0, abs=1e-4)
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-4)
    np.testing.assert_allclose(
        ours.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-4
    )
    np.testing.assert_allclose(ours.mean_, ref.mean_, rtol=1e-5, atol=1e-5)


def test_fit_transform_transform_and_inverse(data):
    pca = PCA(64, svd_solver="full")
    Z = pca.fit_transform(data)
    np.testing.assert_allclose(Z, pca.transform(data), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(pca.inverse_transform(Z), data, atol=1e-3)
    assert pca.explained_variance_ratio_.sum() == pytest.approx(1.0, abs=1e-5)


def test_default_is_two_components_and_dtype_is_kept(data):
    Z32 = PCA().fit_transform(data.astype(np.float32))
    Z64 = PCA().fit_transform(data.astype(np.float64))
    assert Z32.shape == (len(data), 2) and Z32.dtype == np.float32
    assert Z64.dtype == np.float64
    assert PCA().fit_transform(data.astype(np.int64)).dtype == np.float32


def test_sign_is_deterministic(data):
    a = PCA(3, svd_solver="covariance").fit(data).components_
    b = PCA(3, svd_solver="randomized", random_state=5).fit(data).components_
    np.testing.assert_allclose(a, b, atol=1e-3)


def test_whiten(data):
    Z = PCA(3, whiten=True).fit_transform(data)
    np.testing.assert_allclose(Z.var(axis=0, ddof=1), 1.0, rtol=1e-3)


def test_errors(data):
    with pytest.raises(ValueError, match="n_components must be in"):
        PCA(65).fit(data)
    with pytest.raises(ValueError, match="svd_solver must be one of"):
        PCA(svd_solver="arpack").fit(data)
    pca = PCA().fit(data)
    with pytest.raises(ValueError, match="X has 3 features, but PCA is expecting 64 features"):
        pca.transform(data[:, :3])
    with pytest.raises(NotFittedError, match="not fitted"):
        PCA().transform(data)
    with pytest.raises(ValueError, match="NaN"):
        PCA().fit(np.array([[1.0, np.nan], [2.0, 3.0]]))


def test_constant_data_has_zero_variance_and_finite_output():
    Z = PCA(2).fit_transform(np.ones((10, 3)))
    assert np.isfinite(Z).all()
    np.testing.assert_allclose(Z, 0.0)


def test_integers_beyond_float32_and_huge_floats_are_computed_in_float64():
    # Issue 58: int64 values near 2**62 were cast to float32, whose products overflowed
    # (the scatter was infinite: "array must not contain infs or NaNs").
    from sklearn.decomposition import PCA as SkPCA

    X = np.random.default_rng(0).integers(-2**62, 2**62, size=(60, 4), dtype=np.int64)
    ours = PCA(4).fit(X)
    assert ours.components_.dtype == np.float64
    np.testing.assert_allclose(ours.explained_variance_ratio_,
                               SkPCA(4).fit(X).explained_variance_ratio_, rtol=1e-9)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)), X, rtol=1e-9)
    small = PCA(2).fit(X % 1000)  # integers float32 holds exactly stay float32
    assert small.components_.dtype == np.float32
    with pytest.warns(UserWarning, match="PCA computes in float64"):
        big = PCA(2).fit(X.astype(np.float32))
    assert np.isfinite(big.explained_variance_).all()


def test_inverse_transform_beyond_the_range_is_refused():
    # found by tests/methods/test_contract.py: Z of 3e38 came back with infinities
    rotated = np.random.default_rng(0).standard_normal((50, 2)) @ [[1.0, 1.0], [-1.0, 1.0]]
    pca = PCA(2).fit(rotated.astype(np.float32))  # axes along the diagonals: 0.7 each
    with pytest.raises(ValueError, match="beyond 3.4e\\+38"):
        pca.inverse_transform(np.full((2, 2), 3e38, np.float32))
    assert np.isfinite(pca.inverse_transform(np.full((2, 2), 1e30, np.float32))).all()
