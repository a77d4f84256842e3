"""Parameter names and errors for users coming from scikit-learn, umap-learn, openTSNE and
scanpy (issue 41): scikit-learn's TSNE names, InvalidParameterError, "did you mean"."""

import numpy as np
import pytest

import unimap
from unimap import GDR, PCA, TSNE, UMAP, InvalidParameterError


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=6.0, size=(3, 8))
    return (centers[rng.integers(0, 3, 150)] + rng.normal(size=(150, 8))).astype(np.float32)


@pytest.mark.parametrize("make", [
    lambda: UMAP(n_neighbors="many"), lambda: UMAP(min_dist=-1.0), lambda: GDR(n_epochs=0),
    lambda: TSNE(max_iter=0), lambda: TSNE(method="bh"), lambda: PCA(n_components=-2),
    lambda: UMAP(min_dist=2.0, spread=1.0),  # a relation between two parameters
])
def test_invalid_values_raise_an_error_that_is_value_and_type_error(make, small):
    with pytest.raises(InvalidParameterError) as info:
        make().fit(small)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
    assert unimap.InvalidParameterError is InvalidParameterError


@pytest.mark.parametrize(("cls", "name", "expected"), [
    (UMAP, "n_neighbor", "did you mean 'n_neighbors'"),
    (TSNE, "perplexty", "did you mean 'perplexity'"),
    (GDR, "densmap", "densMAP is UMAP.s"),
    (UMAP, "max_iter", "n_epochs"),
    (TSNE, "force_approximation_algorithm", "knn_method"),
    (UMAP, "maxiter", "n_epochs"), (UMAP, "alpha", "learning_rate"),
    (UMAP, "gamma", "repulsion_strength"), (UMAP, "init_pos", "init"),
    (TSNE, "initialization", "init"), (TSNE, "negative_gradient_method", "method"),
    (GDR, "angle", "Barnes-Hut"), (PCA, "zzz", "PCA's parameters are"),
])
def test_unknown_names_say_what_to_use(cls, name, expected):
    with pytest.raises(TypeError, match=expected) as info:
        cls(**{name: 1})
    assert f"unexpected keyword argument {name!r}" in str(info.value)


def test_wrapped_init_keeps_the_signature_for_get_params():
    from sklearn.base import clone

    model = TSNE(max_iter=300, angle=0.3)
    assert model.get_params()["max_iter"] == 300 and model.get_params()["angle"] == 0.3
    assert clone(model).get_params() == model.get_params()


def test_tsne_max_iter_counts_every_iteration_and_n_iter_is_a_deprecated_alias(small):
    new = TSNE(max_iter=80, early_exaggeration_iter=30, random_state=0).fit(small)
    assert new.n_iter_ == 80
    with pytest.warns(FutureWarning, match="max_iter=early_exaggeration_iter \\+ N"):
        old = TSNE(n_iter=80, early_exaggeration_iter=30, random_state=0).fit(small)
    np.testing.assert_array_equal(old.embedding_, new.embedding_)


def test_tsne_angle_is_the_barnes_hut_angle_and_theta_a_deprecated_alias(small):
    kw = dict(method="barnes_hut", max_iter=40, early_exaggeration_iter=10, random_state=0)
    coarse = TSNE(angle=0.9, **kw).fit(small).embedding_
    with pytest.warns(FutureWarning, match="use angle"):
        old = TSNE(theta=0.9, **kw).fit(small).embedding_
    np.testing.assert_array_equal(old, coarse)
    assert not np.array_equal(coarse, TSNE(angle=0.1, **kw).fit(small).embedding_)


def test_tsne_learning_rate_is_a_float_as_in_scikit_learn(small):
    model = TSNE(max_iter=30, early_exaggeration_iter=10, random_state=0).fit(small)
    assert isinstance(model.learning_rate_, float) and isinstance(model.early_learning_rate_, float)
    assert model.learning_rate_ == 50.0  # max(150 / 1 / 4, 50)


def test_tsne_min_grad_norm_stops_at_the_first_check(small):
    model = TSNE(max_iter=300, early_exaggeration_iter=100, min_grad_norm=1e30,
                 random_state=0).fit(small)
    assert model.n_iter_ == 50  # checked every 50 iterations, as scikit-learn does


def test_tsne_n_iter_without_progress_stops_a_stalled_fit(small):
    # a step so small that the loss stops falling: KL is flat after early exaggeration
    kw = dict(max_iter=600, early_exaggeration_iter=50, learning_rate=1e-12, random_state=0)
    stalled = TSNE(n_iter_without_progress=100, **kw).fit(small)
    assert 50 < stalled.n_iter_ < 600
    assert TSNE(**kw).fit(small).n_iter_ == 600  # off by default


def test_stopping_rule_off_leaves_the_fit_bitwise_unchanged(small):
    kw = dict(max_iter=120, early_exaggeration_iter=30, random_state=0)
    plain = TSNE(**kw).fit(small)
    watched = TSNE(n_iter_without_progress=1000, min_grad_norm=0.0, **kw).fit(small)
    assert watched.n_iter_ == 120
    np.testing.assert_array_equal(plain.embedding_, watched.embedding_)


@pytest.mark.parametrize("verbose", [0, 1, 2, True, False])
def test_verbose_takes_scikit_learn_levels(verbose, small, capsys):
    UMAP(n_epochs=5, verbose=verbose, random_state=0).fit(small)
    assert bool(capsys.readouterr().err) == bool(verbose)


def test_negative_verbose_is_refused():
    with pytest.raises(InvalidParameterError, match="verbose"):
        UMAP(verbose=-1).fit(np.ones((5, 2)))


@pytest.mark.parametrize("cls", [UMAP, TSNE, GDR, PCA])
def test_only_the_first_parameter_is_positional(cls):
    import inspect

    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name != "self"]
    assert params[0].kind == params[0].POSITIONAL_OR_KEYWORD
    assert all(p.kind == p.KEYWORD_ONLY for p in params[1:])  # scikit-learn's `*`
    first, second = params[0].name, params[1].name
    assert getattr(cls(5), first) == 5
    with pytest.raises(TypeError, match=rf"{cls.__name__} takes {first} by position and every "
                       rf"other parameter by name, got 2 positional arguments: "
                       rf"{cls.__name__}\(5, {second}='x'\)\?"):
        cls(5, "x")


def test_umap_learns_search_seed_and_progress_options_are_accepted(small):
    kw = dict(n_epochs=10, random_state=0)
    plain = UMAP(**kw).fit(small)
    forced = UMAP(force_approximation_algorithm=True, **kw).fit(small)
    assert plain.knn_method_ == "exact" and forced.knn_method_ not in ("exact", "")
    assert UMAP(force_approximation_algorithm=True, knn_method="exact",
                **kw).fit(small).knn_method_ == "exact"  # only "auto" is overridden
    # the options of pynndescent's index and of tqdm change nothing here
    quiet = UMAP(low_memory=False, angular_rp_forest=True, transform_queue_size=8.0,
                 tqdm_kwds={"disable": True}, verbose=True, **kw).fit(small)
    np.testing.assert_array_equal(quiet.embedding_, plain.embedding_)
    # transform_seed seeds the placement: the same seed the same bits, None the fit's stream
    new = small[:20] + 0.05
    seeded = [UMAP(transform_seed=seed, **kw).fit(small).transform(new) for seed in (7, 7, 8)]
    np.testing.assert_array_equal(seeded[0], seeded[1])
    assert not np.array_equal(seeded[0], seeded[2])
    np.testing.assert_array_equal(UMAP(transform_seed=None, **kw).fit(small).transform(new),
                                  plain.transform(new))
    with pytest.raises(InvalidParameterError, match="transform_seed"):
        UMAP(transform_seed=-1).fit(small)


def test_transform_mode_graph_returns_the_memberships_to_the_training_points():
    import scipy.sparse as sp
    from sklearn.neighbors import NearestNeighbors

    from unimap.datasets import load_digits

    X, _ = load_digits()
    X = X.astype(np.float32)
    train, new = X[:1000], X[1000:1100]
    model = UMAP(transform_mode="graph", n_epochs=20, random_state=0).fit(train)
    graph = model.transform(new)
    assert sp.issparse(graph) and graph.format == "csr" and graph.shape == (100, 1000)
    assert np.all(np.diff(graph.indptr) == model.n_neighbors_)
    assert graph.data.min() > 0 and graph.data.max() <= 1
    nearest = NearestNeighbors(n_neighbors=model.n_neighbors_).fit(train)
    _, expected = nearest.kneighbors(new)
    agree = np.mean([np.intersect1d(graph[i].indices, expected[i]).size / expected.shape[1]
                     for i in range(100)])
    assert agree > 0.99  # an exact search: only ties between equal distances may differ
    # the embedding mode of the same model is unchanged
    model.set_params(transform_mode="embedding")
    np.testing.assert_array_equal(
        model.transform(new),
        UMAP(n_epochs=20, random_state=0).fit(train).transform(new))
    with pytest.raises(InvalidParameterError, match="transform_mode"):
        UMAP(transform_mode="edges").fit(train)


def test_transform_mode_graph_is_umap_learns():
    umap = pytest.importorskip("umap")
    from unimap.datasets import load_digits

    X, _ = load_digits()
    X = X.astype(np.float32)
    ours = UMAP(transform_mode="graph", n_epochs=20, random_state=0).fit(X[:1000])
    theirs = umap.UMAP(transform_mode="graph", n_epochs=20, random_state=0).fit(X[:1000])
    a, b = ours.transform(X[1000:1100]), theirs.transform(X[1000:1100])
    assert ((a != 0).toarray() == (b != 0).toarray()).mean() > 0.999  # measured 0.99996
    np.testing.assert_allclose(np.asarray(a.sum(axis=1)), np.asarray(b.sum(axis=1)), rtol=0.01)
