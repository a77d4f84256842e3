import numpy as np
import pytest

from unimap.optimizers.gradient_descent.repulsion.barnes_hut import (
    bh_repulsion,
    bh_repulsion_query,
    build_tree,
)
from unimap.optimizers.gradient_descent.repulsion.bh_tree_numba import LEAF_SIZE
from unimap.runtime.threads import numba_threads


def _exact(Y, Yq=None, dof=1.0):
    """O(n^2) reference: forces and per-point z, self excluded when ``Yq`` is None."""
    fit = Yq is None
    Yq = Y if fit else Yq
    diff = Yq[:, None, :] - Y[None, :, :]
    base = 1.0 + (diff**2).sum(-1) / dof
    w = base**-dof
    wf = w / base
    if fit:
        np.fill_diagonal(w, 0.0)
        np.fill_diagonal(wf, 0.0)
    return (wf[..., None] * diff).sum(1), w.sum(1)


def _blobs(n, span, dim=2, k=10, seed=0):
    """Gaussian blobs spread like a t-SNE embedding."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-span / 2, span / 2, (k, dim))
    return centres[rng.integers(0, k, n)] + rng.standard_normal((n, dim)) * span / 25


def _assert_exact(forces, z, Y, Yq=None, dof=1.0, rtol=1e-10):
    fe, ze = _exact(Y, Yq, dof)
    scale = np.abs(fe).max()
    np.testing.assert_allclose(forces, fe, rtol=rtol, atol=rtol * scale)
    if Yq is None:
        assert abs(z - ze.sum()) <= rtol * ze.sum()
    else:
        np.testing.assert_allclose(z, ze, rtol=rtol)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dof", [1.0, 0.7, 3.0])
def test_theta_zero_is_exact(dim, dof):
    Y = _blobs(400, 50, dim, seed=dim)
    forces, z = bh_repulsion(Y, theta=0.0, dof=dof)
    assert forces.shape == Y.shape and forces.dtype == np.float64
    _assert_exact(forces, z, Y, dof=dof)


# measured on these data (2000 points, span 50): relative error of z 6.4e-3 (2-D), 1.7e-3
# (3-D); of the forces 1.5e-2 (2-D), 6.1e-3 (3-D). Thresholds are ~3x that.
@pytest.mark.parametrize(("dim", "z_tol", "f_tol"), [(2, 2e-2, 5e-2), (3, 6e-3, 2e-2)])
def test_theta_half_accuracy(dim, z_tol, f_tol):
    Y = _blobs(2000, 50, dim)
    forces, z = bh_repulsion(Y, theta=0.5)
    fe, ze = _exact(Y)
    assert abs(z / ze.sum() - 1) < z_tol
    assert np.linalg.norm(forces - fe) / np.linalg.norm(fe) < f_tol


@pytest.mark.parametrize("dim", [2, 3])
def test_query_mode(dim):
    Y = _blobs(700, 50, dim, seed=3)
    tree = build_tree(Y[:500])
    Yq = np.vstack([Y[500:], Y[:3]])  # held-out points, and three coinciding with tree points
    forces, z = bh_repulsion_query(tree, Yq, theta=0.0)
    assert forces.shape == Yq.shape and z.shape == (len(Yq),)
    _assert_exact(forces, z, Y[:500], Yq)
    forces, z = bh_repulsion_query(tree, Yq, theta=0.5, dof=0.7)
    fe, ze = _exact(Y[:500], Yq, dof=0.7)
    assert np.abs(z / ze - 1).max() < 5e-2
    assert np.linalg.norm(forces - fe) / np.linalg.norm(fe) < 5e-2


@pytest.mark.parametrize("dim", [2, 3])
def test_bitwise_identical_for_any_thread_count(dim):
    Y = _blobs(20_000, 100, dim, seed=4)
    tree = build_tree(Y[:15_000])
    results = []
    for n_threads in (1, 2):
        with numba_threads(n_threads):
            results.append((bh_repulsion(Y, 0.5), bh_repulsion_query(tree, Y[15_000:], 0.5)))
    ((f1, z1), (qf1, qz1)), ((f2, z2), (qf2, qz2)) = results
    assert z1 == z2
    assert np.array_equal(f1, f2)
    assert np.array_equal(qf1, qf2) and np.array_equal(qz1, qz2)


def test_duplicates():
    rng = np.random.default_rng(5)
    Y = np.vstack([np.repeat([[1.0, 2.0]], 60, axis=0), rng.standard_normal((100, 2)),
                   np.repeat([[-3.0, 0.5]], 30, axis=0)])
    for theta in (0.0, 0.5):
        forces, z = bh_repulsion(Y, theta)
        assert np.isfinite(forces).all() and np.isfinite(z)
    _assert_exact(*bh_repulsion(Y, 0.0), Y)
    # coinciding points count w = 1 each in z and push nothing
    f, z = bh_repulsion(np.ones((50, 3)), 0.5)
    assert z == 50 * 49 and not f.any()


def test_small_inputs():
    f, z = bh_repulsion(np.array([[0.0, 0.0], [3.0, 4.0]]))
    np.testing.assert_allclose(z, 2 / 26)
    np.testing.assert_allclose(f, [[-3 / 676, -4 / 676], [3 / 676, 4 / 676]])
    f, z = bh_repulsion(np.array([[1.0, 2.0, 3.0]]))
    assert z == 0.0 and not f.any()
    f, z = bh_repulsion(np.empty((0, 2)))
    assert z == 0.0 and f.shape == (0, 2)
    f, z = bh_repulsion_query(build_tree(np.ones((5, 2))), np.empty((0, 2)))
    assert f.shape == (0, 2) and z.shape == (0,)
    f, z = bh_repulsion_query(build_tree(np.empty((0, 3))), np.ones((4, 3)))
    assert not f.any() and not z.any()


@pytest.mark.parametrize("scale", [1e6, 1e-8])
@pytest.mark.parametrize("dim", [2, 3])
def test_huge_and_tiny_ranges(scale, dim):
    Y = np.random.default_rng(6).uniform(-1, 1, (300, dim)) * scale
    _assert_exact(*bh_repulsion(Y, 0.0), Y)
    forces, z = bh_repulsion(Y, 0.5)
    fe, ze = _exact(Y)
    assert abs(z / ze.sum() - 1) < 5e-2
    assert np.linalg.norm(forces - fe) / np.linalg.norm(fe) < 0.1


def test_points_closer_than_morton_resolution():
    # in 3-D the codes have 21 bits per coordinate: over a span of 2e6, points closer than
    # ~1 share a code and are split by coordinates instead
    rng = np.random.default_rng(7)
    Y = np.vstack([rng.standard_normal((200, 3)) * 1e-3, [[1e6, 0, 0], [-1e6, 0, 0]]])
    tree = build_tree(Y)
    leaf = tree.skip == np.arange(tree.n_nodes) + 1
    assert (tree.end - tree.start)[leaf].max() <= LEAF_SIZE
    _assert_exact(*bh_repulsion(Y, 0.0), Y)


def test_self_excluded_when_own_cell_could_be_summarised():
    # theta above 1/sqrt(2): a tight cluster holding the point itself passes the criterion,
    # yet the point must not interact with itself
    rng = np.random.default_rng(8)
    Y = np.vstack([rng.standard_normal((50, 2)) * 1e-3, rng.standard_normal((50, 2)) * 1e-3
                   + 1000.0])
    forces, z = bh_repulsion(Y, theta=1.5)
    fe, ze = _exact(Y)
    assert abs(z / ze.sum() - 1) < 1e-5
    assert np.linalg.norm(forces - fe) / np.linalg.norm(fe) < 1e-2


def test_tree_structure():
    Y = _blobs(3000, 50, 2, seed=9)
    tree = build_tree(Y)
    assert np.array_equal(tree.points, Y[tree.order])
    assert np.array_equal(np.sort(tree.order), np.arange(len(Y)))
    for k in range(tree.n_nodes):
        pts = tree.points[tree.start[k] : tree.end[k]]
        assert tree.count[k] == len(pts) > 0
        np.testing.assert_allclose(tree.com[k], pts.mean(0), rtol=1e-12, atol=1e-12)
        inside = np.abs(pts - tree.centre[k]) <= tree.half_width[k] * (1 + 1e-9) + 1e-9
        assert inside.all()
        if tree.skip[k] == k + 1:  # leaf
            assert len(pts) <= LEAF_SIZE
            continue
        child, cursor, n_children = k + 1, tree.start[k], 0
        while child < tree.skip[k]:
            assert tree.start[child] == cursor
            assert tree.half_width[child] <= 0.5 * tree.half_width[k]
            cursor, child, n_children = tree.end[child], tree.skip[child], n_children + 1
        assert cursor == tree.end[k] and child == tree.skip[k] and n_children >= 2


def test_invalid_inputs():
    Y = np.zeros((10, 2))
    with pytest.raises(ValueError, match="2 or 3 components"):
        bh_repulsion(np.zeros((10, 4)))
    with pytest.raises(ValueError, match="2 or 3 components"):
        build_tree(np.zeros((10, 1)))
    with pytest.raises(ValueError, match="NaN"):
        bh_repulsion(np.array([[0.0, np.nan], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        bh_repulsion_query(build_tree(Y), np.array([[np.inf, 0.0]]))
    with pytest.raises(ValueError, match="overflow"):
        bh_repulsion(np.array([[0.0, 0.0], [1e200, 0.0]]))
    with pytest.raises(ValueError, match="theta"):
        bh_repulsion(Y, theta=-0.1)
    with pytest.raises(ValueError, match="dof"):
        bh_repulsion(Y, dof=0.0)
    with pytest.raises(ValueError, match="components"):
        bh_repulsion_query(build_tree(Y), np.zeros((3, 3)))
