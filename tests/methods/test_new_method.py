"""A new method is a declaration of existing parts plus what is new about it, in one module.

``SpringMap`` below is defined here and nowhere else: UMAP's neighbours, fuzzy graph, spectral
start and placement of new points, with one new gradient (linear springs along the edges,
Cauchy repulsion from sampled points) and its own memory profile. Every table of methods
must find it from its declaration alone: ``unimap.SpringMap``, ``unimap embed --method
springmap`` (its options, refused options, ``--save-model``), ``unimap transform``,
``unimap.tl.embed``, ``save``/``load``, the memory estimate and ``precompile``.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

import unimap
from unimap.methods.memory_plan import MemoryProfile
from unimap.methods.registry import MethodDeclaration, PrecompileFit, Variant, built_in
from unimap.methods.umap import UMAP

# The optimizer's arrays, declared per point: large enough that the estimate visibly follows
# the declaration (a 1,000-point fit "needs" over 1 GB, which max_memory then refuses).
SPRING_BYTES_PER_POINT = 1 << 20


def spring_gradient(Y: np.ndarray, heads: np.ndarray, tails: np.ndarray, weights: np.ndarray,
                    negatives: np.ndarray) -> np.ndarray:
    """The new gradient: ``w_ij (y_i − y_j)`` along each edge (a spring of rest length 0)
    minus ``(y_i − y_k) / (1 + |y_i − y_k|²)²`` summed over the sampled points k of row i."""
    grad = np.zeros_like(Y)
    np.add.at(grad, heads, weights[:, None] * (Y[heads] - Y[tails]))
    away = Y[:, None, :] - Y[negatives]
    grad -= (away / (1.0 + (away ** 2).sum(-1, keepdims=True)) ** 2).sum(1)
    return grad


class SpringMap(UMAP):
    """UMAP's parts with the spring gradient (a test method: not shipped)."""

    declaration = MethodDeclaration(
        name="SpringMap", module=__name__,
        variants=(Variant("springmap", "springs along the edges (a test method)",
                          options=MappingProxyType({"n_neighbors": "15", "metric": "euclidean",
                                                    "n_epochs": "200"}),
                          size_param="n_neighbors", scanpy_record="umap"),),
        transform_needs=built_in("UMAP").transform_needs,
        precompile=(PrecompileFit("SpringMap", {"n_epochs": 5, "random_state": 0,
                                                "max_memory": None}),))

    def _resolve(self, n):
        fit = super()._resolve(n)
        if self.n_epochs is None:
            fit.n_epochs_ = 200
        return fit

    def _memory_profile(self, fit, n):
        return MemoryProfile(n * SPRING_BYTES_PER_POINT, "n_neighbors")

    def _optimizer_on_gpu(self, fit, n_samples):
        return False

    def _optimize(self, fit, init, seed):
        graph, fit.pruned_graph = fit.pruned_graph.tocoo(), None
        rng = np.random.default_rng(seed)
        Y = np.asarray(init, dtype=np.float64).copy()
        weights = graph.data.astype(np.float64)
        for _ in range(fit.n_epochs_):
            negatives = rng.integers(0, Y.shape[0], size=(Y.shape[0], 5))
            Y -= 0.05 * spring_gradient(Y, graph.row, graph.col, weights, negatives)
        return Y.astype(np.float32)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 300)
    centres = rng.normal(scale=4.0, size=(4, 10))
    return (centres[labels] + rng.normal(size=(300, 10))).astype(np.float32), labels


def test_the_namespace_finds_it():
    assert unimap.SpringMap is SpringMap
    assert "SpringMap" in dir(unimap)
    assert "springmap" in unimap.methods.registry.variants()


def test_its_gradient_runs_and_keeps_the_groups(data):
    X, labels = data
    model = SpringMap(n_neighbors=10, random_state=0, max_memory=None).fit(X)
    umap = UMAP(n_neighbors=10, n_epochs=200, random_state=0, max_memory=None).fit(X)
    assert not np.allclose(model.embedding_, umap.embedding_)  # its own optimizer ran
    assert model.n_epochs_ == 200
    assert unimap.metrics.knn_accuracy(model.embedding_, labels, n_neighbors=10) > 0.95
    placed = model.transform(X[:20] + 0.01)  # UMAP's placement, inherited
    assert placed.shape == (20, 2) and np.isfinite(placed).all()


def test_the_memory_estimate_reads_its_profile(data):
    X, _ = data
    model = SpringMap(n_neighbors=10, n_epochs=2, random_state=0, max_memory=None).fit(X)
    assert model.memory_estimate_ >= X.shape[0] * SPRING_BYTES_PER_POINT
    with pytest.raises(MemoryError, match="SpringMap"):
        SpringMap(n_neighbors=10, n_epochs=2, max_memory="100MB").fit(X)


def test_save_and_load(tmp_path, data):
    X, _ = data
    model = SpringMap(n_neighbors=10, n_epochs=20, random_state=0, max_memory=None).fit(X)
    model.save(tmp_path / "m.unimap")
    loaded = unimap.load(tmp_path / "m.unimap")
    assert type(loaded) is SpringMap
    assert np.array_equal(loaded.transform(X[:10]), model.transform(X[:10]))


def test_the_command_line(tmp_path, data, capsys):
    from unimap.cli.main import main

    X, _ = data
    path, out, model = tmp_path / "x.npy", tmp_path / "e.npy", tmp_path / "m.unimap"
    np.save(path, X)
    with pytest.raises(SystemExit):
        main(["embed", "--help"])
    assert "springmap: springs along the edges" in capsys.readouterr().out
    assert main(["embed", str(path), "--method", "springmap", "--n-neighbors", "10",
                 "--n-epochs", "20", "--no-plot", "--embedding", str(out), "--save-model",
                 str(model), "--max-memory", "none", "-q"]) == 0
    assert np.load(out).shape == (300, 2)
    capsys.readouterr()
    assert main(["embed", str(path), "--method", "springmap", "--perplexity", "5",
                 "--no-plot", "-q"]) == 2  # an option it does not declare
    assert "--perplexity does not apply to --method springmap" in capsys.readouterr().err
    placed = tmp_path / "p.npy"
    assert main(["transform", str(model), str(path), "-o", str(placed)]) == 0
    assert np.load(placed).shape == (300, 2)


def test_unimap_tl(data):
    anndata = pytest.importorskip("anndata")
    X, _ = data
    adata = anndata.AnnData(X)
    unimap.tl.embed(adata, "springmap", n_neighbors=10, n_epochs=20, max_memory=None)
    assert adata.obsm["X_springmap"].shape == (300, 2)
    assert adata.uns["unimap"]["springmap"]["estimator"] == "SpringMap"
    assert set(adata.uns["springmap"]["params"]) >= {"a", "b"}  # scanpy's tl.umap record


def test_precompile_runs_its_declared_fit(data):
    from unimap.cli.precompile import _tasks

    tasks = dict(_tasks())
    assert "SpringMap" in tasks
    X, labels = data
    assert tasks["SpringMap"](X, labels).shape == (40, 2)


def test_two_methods_of_one_name_are_refused():
    import gc

    from unimap.methods import registry

    class Impostor(UMAP):
        declaration = SpringMap.declaration._replace(module="elsewhere")

    try:
        with pytest.raises(RuntimeError, match="two methods are named 'SpringMap'"):
            registry.declarations()
    finally:
        del Impostor
        gc.collect()
    assert "springmap" in registry.variants()  # gone with its class


def test_a_subclass_without_its_own_declaration_is_not_a_method(tmp_path, data):
    class Tweaked(SpringMap):
        pass

    model = Tweaked(n_neighbors=10, n_epochs=2, max_memory=None).fit(data[0])
    with pytest.raises(TypeError, match="save stores unimap's estimators"):
        model.save(tmp_path / "t.unimap")
    assert "Tweaked" not in {d.name for d in unimap.methods.registry.declarations()}


def test_an_option_the_command_line_lacks_is_named():
    import gc

    from unimap.cli.main import build_parser

    class Odd(UMAP):
        declaration = SpringMap.declaration._replace(
            name="Odd", module=__name__, variants=(Variant(
                "odd", "odd", options=MappingProxyType({"gamma": ""})),))

    try:
        with pytest.raises(RuntimeError, match=r"method 'odd' declares options the command "
                           r"line does not have: \['gamma'\]"):
            build_parser()
    finally:
        del Odd
        gc.collect()
