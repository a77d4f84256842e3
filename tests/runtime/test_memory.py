"""Memory known before it is spent: the estimate, the refusal, ``max_memory``."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import unimap
from unimap.runtime import memory as _memory
from unimap.runtime.memory import InsufficientMemoryError, available_memory, parse_memory

ESTIMATORS = {
    "UMAP": lambda **kw: unimap.UMAP(n_epochs=20, random_state=0, **kw),
    "GDR": lambda **kw: unimap.GDR(n_epochs=20, random_state=0, **kw),
    "GDRn": lambda **kw: unimap.GDR(normalized=True, n_epochs=30, random_state=0, **kw),
    "TSNE": lambda **kw: unimap.TSNE(max_iter=60, early_exaggeration_iter=20, random_state=0,
                                      **kw),
}


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(5, 20)) * 6
    return (centers[rng.integers(0, 5, 1500)] + rng.normal(size=(1500, 20))).astype(np.float32)


@pytest.mark.parametrize(("text", "size"), [
    ("8GB", 8 * 10**9), ("512MiB", 512 * 2**20), ("1.5 GiB", int(1.5 * 2**30)), ("100", 100),
    (4096, 4096), (2.5e9, 2_500_000_000), (None, None)])
def test_parse_memory(text, size):
    assert parse_memory(text) == size


@pytest.mark.parametrize("bad", ["lots", "8 parsecs", "GB", "-1GB"])
def test_parse_memory_rejects_what_is_not_a_size(bad):
    with pytest.raises(ValueError, match="not a size"):
        parse_memory(bad)


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-5, ValueError),
                                              (float("nan"), ValueError),
                                              (float("inf"), ValueError),
                                              ([1], TypeError), (True, TypeError),
                                              ("huge", ValueError)])
def test_max_memory_is_validated(blobs, value, error):
    with pytest.raises(error, match="max_memory"):
        unimap.UMAP(max_memory=value).fit(blobs[:50])


def test_available_memory_reads_the_system():
    size = available_memory()
    assert size is None or size > 0


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_estimate_is_recorded_and_bounds_the_allocations(blobs, name):
    """The estimate must stay above what the fit allocates. tracemalloc sees numpy's arrays
    (not faiss's, nor the allocator's slack), so this checks the counted part of the model
    can fail: an estimate that forgot a large array would come out below the traced peak."""
    ESTIMATORS[name]().fit(blobs[:200])  # load the numba kernels outside the measurement
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        model = ESTIMATORS[name]().fit(blobs)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert isinstance(model.memory_estimate_, int)
    assert peak <= model.memory_estimate_
    # and not absurdly above: the exact kNN's blocks dominate at this size (2 x 1500² floats)
    assert model.memory_estimate_ < 20 * peak + 64 * 2**20


def test_estimate_grows_with_the_data_and_the_neighbours(blobs):
    small = unimap.UMAP(n_epochs=5, random_state=0).fit(blobs[:500]).memory_estimate_
    large = unimap.UMAP(n_epochs=5, random_state=0).fit(blobs).memory_estimate_
    wide = unimap.UMAP(n_neighbors=60, n_epochs=5, random_state=0).fit(blobs).memory_estimate_
    assert small < large < wide


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_refusal_names_the_estimate_and_the_remedy(blobs, name):
    model = ESTIMATORS[name](max_memory="1MB")
    limit = r"more than max_memory \(976\.6 KiB\)"
    with pytest.raises(InsufficientMemoryError, match=limit) as err:
        model.fit(blobs)
    message = str(err.value)
    assert "at its peak" in message and "max_memory=None" in message
    assert not hasattr(model, "embedding_") and not hasattr(model, "memory_estimate_")
    assert isinstance(err.value, MemoryError)  # callers catching MemoryError still do


def test_exact_neighbours_advice(blobs):
    with pytest.raises(InsufficientMemoryError, match="largest phase is neighbors: "
                                                      "knn_method='hnsw'"):
        unimap.GDR(knn_method="exact", max_memory="20MB").fit(blobs)


def test_a_float64_input_is_refused_before_its_float32_copy(blobs):
    D = np.sqrt(((blobs[:600, None] - blobs[None, :600]) ** 2).sum(-1)).astype(np.float64)
    with pytest.raises(InsufficientMemoryError, match="largest phase is input: pass float32"):
        unimap.UMAP(metric="precomputed", max_memory="1MB").fit(D)
    # the float32 matrix is not copied: what is left is the fit itself
    model = unimap.UMAP(metric="precomputed", n_epochs=5, random_state=0, max_memory="64MB")
    assert model.fit(D.astype(np.float32)).memory_estimate_ < 16 * 2**20


def test_available_memory_is_the_default_limit(blobs, monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 2**20)
    with pytest.raises(InsufficientMemoryError, match="the available memory"):
        unimap.UMAP(n_epochs=5).fit(blobs)
    model = unimap.UMAP(n_epochs=5, max_memory=None, random_state=0).fit(blobs)
    assert np.isfinite(model.embedding_).all()
    monkeypatch.setattr(_memory, "available_memory", lambda: None)  # unknown: no check
    unimap.UMAP(n_epochs=5, random_state=0).fit(blobs)


def test_tsne_fft_grid_is_counted():
    from unimap.optimizers.gradient_descent.repulsion.fft import grid_bytes as fft_grid_bytes

    assert fft_grid_bytes(10**7) == 224 * 1500**2  # capped at MAX_NODES_2D
    assert fft_grid_bytes(1000) < fft_grid_bytes(10**6)


def test_verbose_prints_the_estimate(blobs, capsys):
    unimap.GDR(n_epochs=5, random_state=0, verbose=True).fit(blobs[:300])
    out = capsys.readouterr()
    assert "memory: about" in out.err and out.out == ""  # progress goes to stderr


def test_cli_max_memory(tmp_path, blobs):
    from unimap.cli.main import main

    data = tmp_path / "x.npy"
    np.save(data, blobs[:400])
    out = tmp_path / "map.png"
    assert main(["embed", str(data), "-o", str(out), "--max-memory", "1MB", "-q"]) == 1
    assert not out.exists()
    assert main(["embed", str(data), "-o", str(out), "--max-memory", "none", "-q",
                 "--n-epochs", "10"]) == 0
    assert out.exists()
