"""Faults inside fit and transform: non-finite values are caught at the epoch they appear,
an interrupted fit changes nothing, and transform rejects bad points as fit does."""

from __future__ import annotations

import numpy as np
import pytest

from unimap import GDR, PCA, TSNE, UMAP
from unimap.runtime.guards import FiniteGuard, NonFiniteError


@pytest.fixture(scope="module")
def small(digits):
    X, _ = digits
    return X[:300]


def test_guard_names_epoch_row_and_what():
    guard = FiniteGuard("M", "Try X.")
    Y = np.zeros((5, 2), dtype=np.float32)
    guard.check(0, Y, **{"1/Z": 1.0})
    Y[3, 1] = np.nan
    with pytest.raises(NonFiniteError, match=r"M: the embedding became NaN or infinite at "
                                             r"epoch 8 \(first in row 3, 1 rows in all\)\. "
                                             r"Try X\."):
        guard.check(7, Y)
    with pytest.raises(NonFiniteError, match="1/Z became NaN"):
        guard.check(0, np.zeros((2, 2)), **{"1/Z": np.inf})
    # Rows reported in the user's order when the optimizer reordered them.
    with pytest.raises(NonFiniteError, match="first in row 0"):
        guard.check(0, Y, row_ids=np.array([4, 3, 2, 0, 1]))
    assert issubclass(NonFiniteError, ValueError)
    assert issubclass(NonFiniteError, FloatingPointError)


def _inject_nan(monkeypatch, module, name, at_epoch, target):
    """Wrap kernel ``module.name`` so that after epoch ``at_epoch`` (counted by calls) the
    array argument ``target`` gets a NaN in row 3."""
    real = getattr(module, name)
    calls = {"n": 0}

    def faulty(*args, **kwargs):
        out = real(*args, **kwargs)
        if calls["n"] == at_epoch:
            args[target][3, 0] = np.nan
        calls["n"] += 1
        return out

    monkeypatch.setattr(module, name, faulty)


def test_umap_sgd_fault_is_caught_at_its_epoch(small, monkeypatch):
    from unimap.optimizers.umap_sgd import epochs_numba as umap_sgd

    _inject_nan(monkeypatch, umap_sgd, "sgd_epoch_edges_2d", 6, 0)
    with pytest.raises(NonFiniteError, match=r"UMAP: the embedding became NaN or infinite at "
                                             r"epoch 7 \(first in row 3") as info:
        UMAP(n_epochs=30, random_state=0).fit(small)
    assert "learning_rate" in str(info.value)


def test_gdr_full_batch_fault_is_caught_at_its_epoch(small, monkeypatch):
    from unimap.optimizers.gdr import unnormalized_numba as gdr

    _inject_nan(monkeypatch, gdr, "gdr_unnormalized_epoch", 4, 1)  # Y_out is the second argument
    with pytest.raises(NonFiniteError, match=r"GDR: the embedding became NaN or infinite at "
                                             r"epoch 5 \(first in row 3"):
        GDR(n_components=3, n_epochs=30, random_state=0).fit(small)  # one epoch per call


def test_gdr_2d_fault_is_caught_in_its_chunk(small, monkeypatch):
    """The 2-D epochs run EPOCH_CHUNK (10) per call: a NaN that appears in the second call
    is named with that call's epochs."""
    from unimap.optimizers.gdr import chunked_epochs_numba as gdr_epochs

    real, calls = gdr_epochs.unnormalized_epochs_2d, {"n": 0}

    def faulty(Y, *args):
        real(Y, *args)
        calls["n"] += 1
        if calls["n"] == 2:  # after epochs 11-20 the positions are in Y[20 % 3]
            Y[20 % 3][3, 0] = np.nan

    monkeypatch.setattr(gdr_epochs, "unnormalized_epochs_2d", faulty)
    with pytest.raises(NonFiniteError, match=r"GDR: the embedding became NaN or infinite "
                                             r"between epochs 11 and 20 \(first in row 3"):
        GDR(n_epochs=30, random_state=0).fit(small)


def test_gdr_normalized_nonfinite_force_is_named(small, monkeypatch):
    from unimap.optimizers.gdr.forces import SampledForces

    real = SampledForces.__call__

    def faulty(self, Y, iteration):
        attraction, repulsion, inv_z = real(self, Y, iteration)
        return attraction, repulsion, (inv_z * np.nan if iteration == 9 else inv_z)

    monkeypatch.setattr(SampledForces, "__call__", faulty)
    with pytest.raises(NonFiniteError, match=r"GDR\(normalized=True\): 1/Z became NaN or "
                                             r"infinite at epoch 10"):
        GDR(normalized=True, n_epochs=40, random_state=0).fit(small)


def test_tsne_divergence_fails_loudly(small):
    with pytest.raises(NonFiniteError, match=r"TSNE: .* became NaN or infinite at epoch \d+"
                                             r".*learning_rate"):
        TSNE(method="exact", learning_rate=1e300, max_step_norm=None, max_iter=60,
             early_exaggeration_iter=10, random_state=0).fit(small)


def test_transform_fault_is_caught(small, monkeypatch):
    from unimap.optimizers.umap_sgd import epochs_numba as umap_sgd

    model = UMAP(n_epochs=20, random_state=0).fit(small)
    _inject_nan(monkeypatch, umap_sgd, "sgd_epoch_rows", 2, 0)
    with pytest.raises(NonFiniteError, match="transform: the embedding became NaN"):
        model.transform(small[:10])


@pytest.mark.parametrize("make", [
    lambda cb: TSNE(max_iter=100, early_exaggeration_iter=20, callback=cb, callback_every=10,
                    random_state=0),
], ids=["TSNE"])
def test_interrupted_fit_leaves_the_estimator_as_it_was(small, make):
    def interrupt(iteration, loss, embedding):
        raise KeyboardInterrupt

    fresh = make(interrupt)
    with pytest.raises(KeyboardInterrupt):
        fresh.fit(small)
    assert [k for k in vars(fresh) if k.endswith("_") and not k.startswith("__")] == []

    calls = {"n": 0}

    def interrupt_second_fit(iteration, loss, embedding):
        if calls["n"]:
            raise KeyboardInterrupt

    model = make(interrupt_second_fit).fit(small)
    calls["n"] = 1
    before = dict(vars(model))
    with pytest.raises(KeyboardInterrupt):
        model.fit(small[:200])
    assert vars(model).keys() == before.keys()
    assert all(vars(model)[k] is v for k, v in before.items())


def test_failed_pca_fit_sets_nothing():
    model = PCA(5)
    with pytest.raises(ValueError):
        model.fit(np.ones((3, 2)))
    assert [k for k in vars(model) if k.endswith("_")] == []


BAD_POINTS = {
    "nan": lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X),
    "inf": lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, np.inf, X),
    "complex": lambda X: X.astype(np.complex64),
    "strings": lambda X: np.where(np.arange(X.size).reshape(X.shape) == 5, "a", X.astype(object)),
}


@pytest.mark.parametrize("kind", list(BAD_POINTS))
@pytest.mark.parametrize("make", [
    lambda: PCA(2), lambda: UMAP(n_epochs=10, random_state=0),
    lambda: TSNE(max_iter=30, early_exaggeration_iter=5, random_state=0),
    lambda: GDR(n_epochs=10, random_state=0),
], ids=["PCA", "UMAP", "TSNE", "GDR"])
def test_transform_rejects_bad_points_as_fit_does(small, make, kind):
    bad = BAD_POINTS[kind](small[:40].astype(np.float64))
    with pytest.raises((ValueError, TypeError)) as at_fit:
        make().fit(bad)
    model = make().fit(small)
    with pytest.raises(type(at_fit.value)) as at_transform:
        model.transform(bad)
    assert str(at_transform.value) == str(at_fit.value)


@pytest.mark.parametrize("make", [
    lambda: PCA(2), lambda: UMAP(n_epochs=10, random_state=0),
    lambda: TSNE(max_iter=30, early_exaggeration_iter=5, random_state=0),
    lambda: GDR(n_epochs=10, random_state=0),
], ids=["PCA", "UMAP", "TSNE", "GDR"])
def test_transform_rejects_wrong_width(small, make):
    model = make().fit(small)
    with pytest.raises(ValueError, match=r"X has 63 features, but \w+ is expecting 64"):
        model.transform(small[:5, :63])
