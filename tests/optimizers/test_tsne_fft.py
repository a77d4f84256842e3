import numba
import numpy as np
import pytest

from unimap.optimizers.gradient_descent.repulsion import fft as tsne_fft
from unimap.optimizers.gradient_descent.repulsion.fft import fft_repulsion


def _exact(Y, dof):
    diff = Y[:, None, :] - Y[None, :, :]
    t = 1.0 / (1.0 + (diff**2).sum(-1) / dof)
    w = t**dof
    np.fill_diagonal(w, 0.0)
    return ((w * t)[:, :, None] * diff).sum(1), w.sum()


def _blobs(n, dim, seed=0):
    """Gaussian blobs spanning ~50 units, like a t-SNE embedding."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-20, 20, size=(6, dim))
    return centers[rng.integers(0, 6, n)] + rng.normal(scale=3.0, size=(n, dim))


def _errors(Y, dof, **kw):
    F, z = _exact(Y, dof)
    Ff, zf = fft_repulsion(Y, dof, **kw)
    assert Ff.shape == Y.shape and Ff.dtype == np.float64
    return np.linalg.norm(Ff - F) / np.linalg.norm(F), abs(zf - z) / z


# Limits ~3x the errors measured with the default grid (p = 3, box width 1, as openTSNE, whose
# errors on the same data are 1.0-2.7x these): forces 1.7-3.3e-2, z 1.3e-4-1.2e-3.
@pytest.mark.parametrize(("dim", "dof", "max_force_err", "max_z_err"), [
    (2, 1.0, 6e-2, 2e-3),
    (2, 0.5, 5e-2, 7e-4),
    (2, 2.0, 7e-2, 3.5e-3),
    (1, 1.0, 7e-2, 5e-4),
    (1, 0.5, 1e-1, 4e-4),
    (1, 2.0, 6e-2, 5e-4),
])
def test_matches_exact(dim, dof, max_force_err, max_z_err):
    force_err, z_err = _errors(_blobs(2000, dim), dof)
    assert force_err < max_force_err and z_err < max_z_err, (force_err, z_err)


@pytest.mark.parametrize(("dim", "max_z_err"), [(1, 1e-5), (2, 2e-4)])
def test_converges_with_finer_boxes(dim, max_z_err):
    # Halving the box width cuts the (third-order) interpolation error by ~8x: measured forces
    # 2.0-2.4e-3, z 3e-6 (1-D) and 7e-5 (2-D).
    force_err, z_err = _errors(_blobs(2000, dim), 1.0, ints_in_interval=0.5)
    assert force_err < 8e-3 and z_err < max_z_err, (force_err, z_err)


def test_isolated_point_is_accurate():
    # float64 grids: a far, lone point's small forces are not lost in the FFT's roundoff.
    Y = _blobs(1500, 2)
    Y[0] = [60.0, 60.0]
    for dof in (1.0, 2.0):
        F, _ = _exact(Y, dof)
        Ff, _ = fft_repulsion(Y, dof)
        assert np.linalg.norm(Ff[0] - F[0]) < 3e-6 * np.linalg.norm(F[0])  # measured <1e-6


def test_deterministic_across_thread_counts():
    Y = _blobs(6000, 2, seed=3)
    Y1 = _blobs(6000, 1, seed=3)
    counts = [c for c in (1, 2, 4) if c <= numba.config.NUMBA_NUM_THREADS]
    before = numba.get_num_threads()
    results = []
    try:
        for c in counts:
            numba.set_num_threads(c)
            results.append((fft_repulsion(Y, 0.7), fft_repulsion(Y1, 1.0)))
    finally:
        numba.set_num_threads(before)
    (F2, z2), (F1, z1) = results[0]
    for (G2, w2), (G1, w1) in results[1:]:
        assert np.array_equal(F2, G2) and z2 == w2
        assert np.array_equal(F1, G1) and z1 == w1


@pytest.mark.parametrize("dim", [1, 2])
def test_two_points(dim):
    Y = np.array([[0.3, -1.0], [1.5, 0.7]])[:, :dim]
    for dof in (1.0, 0.5):
        F, z = _exact(Y, dof)
        Ff, zf = fft_repulsion(Y, dof)
        # 50 boxes over the pair: far finer than usual. Measured errors 1-4e-6.
        assert np.abs(Ff - F).max() < 1e-5 * np.abs(F).max()
        assert zf == pytest.approx(z, rel=5e-6)


@pytest.mark.parametrize("dim", [1, 2])
def test_all_points_identical(dim):
    n = 50
    Y = np.full((n, dim), 3.25)
    F, z = fft_repulsion(Y, 1.0)
    assert np.all(F == 0.0)
    assert z == pytest.approx(n * (n - 1), rel=3e-7)  # measured 7e-8


def test_exploding_point_grid_is_capped():
    assert tsne_fft._n_boxes(1e9, 3, 50, 1.0, tsne_fft.MAX_NODES_2D) * 3 <= tsne_fft.MAX_NODES_2D
    assert tsne_fft._n_boxes(104.0, 3, 50, 1.0, tsne_fft.MAX_NODES_2D) == 108  # FFT-friendly
    Y = _blobs(300, 1)
    Y[0] = 1e7  # 1-D: a huge grid is cheap, but still capped
    F, z = fft_repulsion(Y)
    assert np.isfinite(F).all() and np.isfinite(z)


@pytest.mark.parametrize("Y", [
    np.zeros((10, 3)), np.zeros(10), np.zeros((1, 2)),
    np.array([[0.0, 1.0], [np.nan, 0.0]]), np.array([[0.0], [np.inf]]),
])
def test_rejects_bad_input(Y):
    with pytest.raises(ValueError):
        fft_repulsion(Y)


def test_workspace_and_fft_fallback_give_identical_results(monkeypatch):
    Ya = _blobs(3000, 2, seed=5)
    Yb = 2.5 * Ya[:2000]  # a larger grid
    expected = [fft_repulsion(Y, 1.0) for Y in (Ya, Yb, Ya)]
    ws = tsne_fft.FFTWorkspace()
    got = [fft_repulsion(Y, 1.0, workspace=ws) for Y in (Ya, Yb, Ya)]
    # scipy.fft's public functions, in case its private pocketfft binding goes away
    monkeypatch.setattr(tsne_fft, "_raw_pocketfft", lambda: None)
    got += [fft_repulsion(Y, 1.0, workspace=ws) for Y in (Ya, Yb, Ya)]
    for (F, z), (G, w) in zip(expected * 2, got, strict=True):
        assert np.array_equal(F, G) and z == w
