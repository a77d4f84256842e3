"""unimap.analysis: each analysis on data whose answer is known in advance.

Known answers used here:

- an isometry (a rotation and shift of data lying in a 2-D plane, or PCA of such data) keeps
  every distance, so no pair changes sort index, every neighbour band is kept (overlap 1),
  the normalised distances agree (relative error 0) and the distances lie on the diagonal;
- a uniform scaling keeps all of that but the slope of the distances;
- an embedding independent of the data keeps a band of ``width`` neighbours out of ``n - 1``
  by chance only (overlap ``width / (n - 1)``), and the relative ranks of two independent
  orders differ by 1/3 on average (``E|U - V|`` for independent uniforms);
- the sub-sample embeddings of a deterministic PCA of planar data are the same plane up to a
  rotation and shift, so Procrustes leaves no displacement.
"""

import numpy as np
import pytest
from scipy.spatial import procrustes
from scipy.spatial.distance import cdist

from unimap.analysis import (
    EmbeddingAnalysis,
    clone_estimator,
    distance_comparison,
    embedding_analysis,
    neighbor_overlap,
    plot_distance_comparison,
    plot_embedding_analysis,
    plot_neighbor_overlap,
    plot_relative_error,
    plot_runtime_profile,
    plot_sort_index_change,
    plot_sorted_distances,
    plot_subsample_stability,
    procrustes_align,
    relative_error,
    runtime_profile,
    sort_index_change,
    sorted_distances,
    subsample_stability,
)
from unimap.methods.pca import PCA


@pytest.fixture(scope="module")
def planar():
    """150 points of a 2-D plane in R^10 (continuous: no tied distances), their plane
    coordinates, and a rotated and shifted copy of those (an exact isometry)."""
    rng = np.random.default_rng(0)
    plane = rng.standard_normal((150, 2)) * [3.0, 1.0]
    basis, _ = np.linalg.qr(rng.standard_normal((10, 2)))
    X = plane @ basis.T + rng.standard_normal(10)
    angle = 0.7
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    return X, plane, plane @ rotation + [5.0, -2.0]


@pytest.fixture(scope="module")
def gaussian():
    """Continuous 5-D data and a noisy 2-D linear embedding of it (no ties, imperfect)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 5))
    return X, X[:, :2] + 0.5 * rng.standard_normal((120, 2))


def _assert_isometric(result: EmbeddingAnalysis, slope: float = 1.0):
    np.testing.assert_array_equal(result.sort_index_change.change, 0.0)
    assert result.sort_index_change.mean_abs_change == 0.0
    comparison = result.distance_comparison
    np.testing.assert_allclose(comparison.low, slope * comparison.high, rtol=1e-9, atol=1e-12)
    assert comparison.pearson == pytest.approx(1.0, abs=1e-12)
    assert comparison.slope == pytest.approx(slope, rel=1e-9)
    np.testing.assert_allclose(result.sorted_distances.low, comparison.low)
    assert result.relative_error.error.max() < 1e-9
    np.testing.assert_array_equal(result.neighbor_overlap.overlap, 1.0)
    np.testing.assert_array_equal(result.neighbor_overlap.per_anchor, 1.0)


# -- the five distance analyses --------------------------------------------------------------
def test_rotation_is_an_isometry(planar):
    X, _, rotated = planar
    _assert_isometric(embedding_analysis(X, rotated, random_state=0))


def test_pca_of_planar_data_is_an_isometry(planar):
    X, _, _ = planar
    _assert_isometric(embedding_analysis(X, PCA(2).fit_transform(X), random_state=0))


def test_scaling_changes_only_the_slope(planar):
    X, plane, _ = planar
    _assert_isometric(embedding_analysis(X, 3.0 * plane, random_state=0), slope=3.0)


def test_random_embedding_scores_chance(planar):
    X, _, _ = planar
    n = X.shape[0]
    unrelated = np.random.default_rng(2).standard_normal((n, 2))
    overlap = neighbor_overlap(X, unrelated, ks=np.arange(1, n - 9), width=10, random_state=0)
    assert overlap.chance == pytest.approx(10 / (n - 1))
    # 150 anchors x 140 bands: the mean is within a few standard errors of chance.
    assert overlap.overlap.mean() == pytest.approx(overlap.chance, abs=0.01)
    assert np.abs(overlap.overlap - overlap.chance).max() < 0.06
    change = sort_index_change(X, unrelated, random_state=0)
    assert change.mean_abs_change == pytest.approx(1 / 3, abs=0.03)
    comparison = distance_comparison(X, unrelated, random_state=0)
    assert abs(comparison.pearson) < 0.1


def test_pairs_are_all_pairs_of_the_sample(digits):
    X, _ = digits
    embedding = PCA(2).fit_transform(X)
    result = distance_comparison(X, embedding, n_samples=60, random_state=3)
    pairs = result.pairs
    ids = np.unique(pairs)
    assert ids.shape == (60,) and pairs.shape == (60 * 59 // 2, 2)
    assert (pairs[:, 0] < pairs[:, 1]).all()
    assert np.all(np.diff(result.high) >= 0)
    high = np.linalg.norm(X[pairs[:, 0]].astype(np.float64) - X[pairs[:, 1]], axis=1)
    low = np.linalg.norm(embedding[pairs[:, 0]].astype(np.float64) - embedding[pairs[:, 1]],
                         axis=1)
    np.testing.assert_allclose(result.high, high, rtol=1e-6)
    np.testing.assert_allclose(result.low, low, rtol=1e-5)
    # Same seed, same sample; the four pairwise analyses share it.
    again = sorted_distances(X, embedding, n_samples=60, random_state=3)
    np.testing.assert_array_equal(again.pairs, pairs)
    np.testing.assert_array_equal(relative_error(X, embedding, 60, 3).pairs, pairs)
    np.testing.assert_array_equal(sort_index_change(X, embedding, 60, 3).pairs, pairs)


def test_relative_error_follows_the_reference_formula(gaussian):
    X, embedding = gaussian
    result = relative_error(X, embedding, random_state=0)
    high = cdist(X, X)[np.triu_indices(len(X), 1)]
    low = cdist(embedding, embedding)[np.triu_indices(len(X), 1)]
    high, low = np.sort(high / high.max()), low[np.argsort(high)] / low.max()
    np.testing.assert_allclose(result.high, high)
    np.testing.assert_allclose(result.low, low)
    np.testing.assert_allclose(result.error, np.abs(high - low) / high)
    assert result.median_error == pytest.approx(np.median(np.abs(high - low) / high))


def test_sort_index_change_of_a_swapped_pair():
    # Distances 1, 2, 3 between three points on a line; the embedding keeps the line but
    # makes the shortest distance the middle one: two pairs swap places in the order.
    X = np.array([[0.0], [1.0], [3.0]])
    embedding = np.array([[0.0, 0.0], [2.5, 0.0], [3.0, 0.0]])  # 2.5, 0.5, 3.0
    result = sort_index_change(X, embedding)
    np.testing.assert_array_equal(result.rank_high, [0, 1, 2])
    np.testing.assert_array_equal(result.rank_low, [1, 0, 2])
    np.testing.assert_array_equal(result.change, [0.5, -0.5, 0.0])


def _brute_overlap(X, embedding, anchors, ks, width):
    out = np.empty((len(anchors), len(ks)))
    for a, i in enumerate(anchors):
        dh, dl = cdist(X[i : i + 1], X)[0], cdist(embedding[i : i + 1], embedding)[0]
        dh[i] = dl[i] = -1.0
        oh, ol = np.argsort(dh)[1:], np.argsort(dl)[1:]
        for b, k in enumerate(ks):
            out[a, b] = len(set(oh[k - 1 : k - 1 + width]) & set(ol[k - 1 : k - 1 + width]))
    return out / width


@pytest.mark.parametrize("ks", [[1, 2, 5], [1, 40, 110]])  # partial and full sorts
def test_neighbor_overlap_matches_brute_force(gaussian, ks):
    X, embedding = gaussian
    result = neighbor_overlap(X, embedding, ks=ks, width=7, n_samples=30, random_state=0)
    assert result.anchors.shape == (30,) and len(np.unique(result.anchors)) == 30
    expected = _brute_overlap(X, embedding, result.anchors, ks, 7)
    np.testing.assert_allclose(result.per_anchor, expected)
    np.testing.assert_allclose(result.overlap, expected.mean(axis=0))


def test_other_metrics(gaussian):
    X, embedding = gaussian
    D = cdist(X, X)
    for pairwise in (sort_index_change, relative_error):
        a = pairwise(D, embedding, metric="precomputed", random_state=0)
        b = pairwise(X, embedding, random_state=0)
        np.testing.assert_allclose(a.high, b.high, atol=1e-12)
    a = neighbor_overlap(D, embedding, ks=[1, 3], metric="precomputed")
    b = neighbor_overlap(X, embedding, ks=[1, 3])
    np.testing.assert_array_equal(a.per_anchor, b.per_anchor)
    # Cosine distances of the rows of X are euclidean distances of the unit rows, up to a
    # monotone map: the same neighbours.
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    a = neighbor_overlap(X, embedding, ks=[1, 3], metric="cosine")
    b = neighbor_overlap(unit, embedding, ks=[1, 3])
    np.testing.assert_array_equal(a.per_anchor, b.per_anchor)
    upper = np.triu_indices(len(X), 1)
    for metric, scipy_metric in [("cosine", "cosine"), ("correlation", "correlation"),
                                 ("manhattan", "cityblock")]:
        result = sort_index_change(X, embedding, metric=metric, random_state=0)
        D = cdist(X, X, scipy_metric)
        np.testing.assert_allclose(result.high, np.sort(D[upper]), atol=1e-12)
        a = neighbor_overlap(X, embedding, ks=[1, 4, 50], metric=metric)
        b = neighbor_overlap(D, embedding, ks=[1, 4, 50], metric="precomputed")
        np.testing.assert_array_equal(a.per_anchor, b.per_anchor)


def test_default_ks_span_all_ranks(planar):
    X, _, rotated = planar
    result = neighbor_overlap(X, rotated, width=10, n_samples=20, random_state=0)
    assert result.ks[0] == 1 and result.ks[-1] == X.shape[0] - 10
    assert np.all(np.diff(result.ks) > 0) and len(result.ks) <= 50
    assert result.per_anchor.shape == (20, len(result.ks))


# -- input errors --------------------------------------------------------------------------------
def test_mismatched_rows_raise(gaussian):
    X, embedding = gaussian
    for analysis in (sort_index_change, distance_comparison, sorted_distances, relative_error,
                     neighbor_overlap, embedding_analysis):
        with pytest.raises(ValueError, match="X has 120 samples but embedding has 119"):
            analysis(X, embedding[:-1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ks": [0, 3]}, r"ks must lie in \[1, n_points - width\] = \[1, 110\]"),
        ({"ks": [111]}, r"ks must lie in \[1, n_points - width\]"),
        ({"ks": [1.5]}, "ks must be a non-empty 1-D sequence of integers"),
        ({"ks": []}, "ks must be a non-empty 1-D sequence of integers"),
        ({"width": 0}, r"width must be in \[1, inf\)"),
        ({"width": 120}, "width=120 needs more than 120 points"),
        ({"n_samples": 0}, r"n_samples must be in \[1, inf\)"),
    ],
)
def test_neighbor_overlap_bad_parameters(gaussian, kwargs, message):
    X, embedding = gaussian
    with pytest.raises(ValueError, match=message):
        neighbor_overlap(X, embedding, **kwargs)


def test_pairwise_analyses_need_three_points(gaussian):
    X, embedding = gaussian
    with pytest.raises(ValueError, match=r"n_samples must be in \[3, inf\)"):
        sort_index_change(X, embedding, n_samples=2)
    with pytest.raises(ValueError, match="a minimum of 3 is required"):
        relative_error(X[:2], embedding[:2])


# -- stability under sub-sampling ----------------------------------------------------------------
class _RandomEmbedding:
    """An 'estimator' whose embedding ignores the data (cloned through its __init__)."""

    def __init__(self, n_components=2, random_state=None):
        self.n_components = n_components
        self.random_state = random_state

    def fit_transform(self, X):
        rng = np.random.default_rng(self.random_state)
        return rng.standard_normal((X.shape[0], self.n_components))


def test_pca_is_stable_on_planar_data(planar):
    X, _, _ = planar
    result = subsample_stability(X, PCA(2), fraction=0.5, n_repeats=4, random_state=0)
    assert result.indices.shape == (4, 75) and result.aligned.shape == (4, 75, 2)
    assert result.mean_displacement < 1e-9 and result.disparity.max() < 1e-12
    assert result.counts.sum() == 4 * 75
    np.testing.assert_array_equal(np.isnan(result.per_point), result.counts == 0)
    np.testing.assert_allclose(result.embedding, PCA(2).fit_transform(X))


def test_unrelated_embeddings_are_unstable(planar):
    X, _, _ = planar
    # A fixed seed: every sub-sample gets the first rows of the same random draw, unrelated
    # to where the same points lie in the reference.
    result = subsample_stability(X, _RandomEmbedding(random_state=5), 0.6, 3, random_state=0)
    assert result.mean_displacement > 0.5
    assert result.disparity.min() > 0.8


def test_stability_factory_and_given_embedding(gaussian):
    X, _ = gaussian
    reference = PCA(2).fit_transform(X)
    from_factory = subsample_stability(X, lambda: PCA(2), 0.8, 2, random_state=1)
    given = subsample_stability(X, PCA, 0.8, 2, random_state=1, embedding=reference)
    np.testing.assert_allclose(from_factory.displacement, given.displacement, atol=1e-12)
    assert 0.0 < from_factory.mean_displacement < 0.5  # 5-D data: PCA planes differ a little
    with pytest.raises(ValueError, match="X has 120 samples but embedding has 119"):
        subsample_stability(X, PCA(2), embedding=reference[:-1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fraction": 0.0}, r"fraction must be a finite number in \(0.0, 1.0\]"),
        ({"fraction": 1.5}, r"fraction must be a finite number in \(0.0, 1.0\]"),
        ({"fraction": 0.01}, "leaves 1 per sub-sample; at least 3 are needed"),
        ({"n_repeats": 0}, r"n_repeats must be in \[1, inf\)"),
    ],
)
def test_stability_bad_parameters(gaussian, kwargs, message):
    X, _ = gaussian
    with pytest.raises(ValueError, match=message):
        subsample_stability(X, PCA(2), **kwargs)


def test_procrustes_align_recovers_a_similarity():
    rng = np.random.default_rng(4)
    source = rng.standard_normal((50, 3))
    orthogonal, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    target = 2.5 * source @ orthogonal + [1.0, -2.0, 3.0]
    aligned, disparity = procrustes_align(source, target)
    np.testing.assert_allclose(aligned, target, atol=1e-12)
    assert disparity == pytest.approx(0.0, abs=1e-12)
    other = rng.standard_normal((50, 3))
    assert procrustes_align(other, target)[1] == pytest.approx(procrustes(target, other)[2])


def test_clone_estimator_copies_parameters():
    original = PCA(3, svd_solver="full", random_state=7)
    copy = clone_estimator(original)
    assert type(copy) is PCA and copy is not original
    assert (copy.n_components, copy.svd_solver, copy.random_state) == (3, "full", 7)
    assert clone_estimator(PCA).n_components == 2

    class Opaque:
        def __init__(self, alpha=1.0):
            self._alpha = alpha

        def fit_transform(self, X):
            return X

    with pytest.raises(TypeError, match=r"parameters \['alpha'\] are not stored"):
        clone_estimator(Opaque())


# -- runtime profile -----------------------------------------------------------------------------
class _TimedEstimator:
    """Fake phases: kNN time grows with D, the rest is fixed; 0.05 s outside the phases."""

    def __init__(self, per_dim=0.01):
        self.per_dim = per_dim

    def fit(self, X):
        knn = self.per_dim * X.shape[1]
        self.timings_ = {"neighbors": knn, "optimize": 0.15, "total": knn + 0.2}
        return self


def test_runtime_profile_shares_of_known_timings():
    result = runtime_profile(dims=[5, 20, 80], n_samples=10, estimator=_TimedEstimator(),
                             random_state=0)
    assert result.phases == ("neighbors", "optimize", "other")
    total = 0.01 * result.dims + 0.2
    np.testing.assert_allclose(result.total, total)
    np.testing.assert_allclose(result.knn_share, 0.01 * result.dims / total)
    np.testing.assert_allclose(result.shares["other"], 0.05 / total)
    np.testing.assert_allclose(result.knn_share + result.rest_share, 1.0)
    np.testing.assert_allclose(sum(result.shares.values()), 1.0)
    table = result.table().splitlines()
    assert len(table) == 4 and table[0].split()[:3] == ["D", "total", "s"]


def test_runtime_profile_of_umap():
    from unimap.methods.umap import UMAP

    umap = UMAP(n_neighbors=5, n_epochs=5, init="random", random_state=0)
    result = runtime_profile(dims=[3, 12], n_samples=40, estimator=umap, random_state=0)
    assert set(result.phases) == {"neighbors", "affinities", "init", "optimize", "other"}
    for share in result.shares.values():
        assert np.all((share >= 0) & (share <= 1))
    np.testing.assert_allclose(sum(result.shares.values()), 1.0)
    np.testing.assert_allclose(result.knn_share + result.rest_share, 1.0)
    assert np.all(result.total > 0)


def test_runtime_profile_bad_input():
    with pytest.raises(ValueError, match="does not record the time of its phases"):
        runtime_profile(dims=[3], n_samples=10, estimator=PCA(2))
    with pytest.raises(ValueError, match="dims must be a non-empty 1-D sequence of integers"):
        runtime_profile(dims=[], estimator=_TimedEstimator())
    with pytest.raises(ValueError, match="dims must be positive"):
        runtime_profile(dims=[0, 4], estimator=_TimedEstimator())


# -- plots ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_plots_of_the_five_analyses(plt, gaussian):
    X, embedding = gaussian
    result = embedding_analysis(X, embedding, n_samples=50, random_state=0, ks=[1, 5, 20])
    panels = [(plot_sort_index_change, result.sort_index_change),
              (plot_distance_comparison, result.distance_comparison),
              (plot_sorted_distances, result.sorted_distances),
              (plot_neighbor_overlap, result.neighbor_overlap),
              (plot_relative_error, result.relative_error)]
    for draw, data in panels:
        fig = draw(data)
        assert isinstance(fig, plt.Figure) and len(fig.axes) == 1
        plt.close(fig)
        fig = data.plot()
        assert len(fig.axes) == 1
        plt.close(fig)
    fig, ax = plt.subplots(1, 2)
    assert plot_sorted_distances(result.sorted_distances, ax=ax[1]) is fig
    assert ax[1].has_data() and not ax[0].has_data()
    plt.close(fig)
    fig = plot_embedding_analysis({"noisy": result, "again": result})
    assert len(fig.axes) == 10 and fig.axes[0].get_title().startswith("noisy: ")
    plt.close(fig)
    with pytest.raises(TypeError, match="must be an EmbeddingAnalysis"):
        plot_embedding_analysis({"x": result.relative_error})


def test_plots_of_stability_and_runtime(plt, planar):
    X, _, _ = planar
    stability = subsample_stability(X, PCA(2), 0.5, 2, random_state=0)
    fig = plot_subsample_stability(stability)
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 3  # two panels and a colorbar
    plt.close(fig)
    profile = runtime_profile(dims=[5, 50], n_samples=10, estimator=_TimedEstimator())
    fig = plot_runtime_profile(profile)
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 2
    plt.close(fig)


# -- repr ------------------------------------------------------------------------------------------
def test_reprs_are_short_summaries_and_the_data_stay_attributes(gaussian, planar):
    X, embedding = gaussian
    analysis = embedding_analysis(X, embedding, random_state=0)
    text = repr(analysis)
    pairs = analysis.relative_error.pairs
    assert pairs.shape[0] == 120 * 119 // 2  # the default dataclass repr printed every array
    assert len(text) < 1000 and text.count("\n") <= 8
    assert f"pairs ({pairs.shape[0]}, 2)" in text  # arrays by shape
    assert f"mean_error={analysis.relative_error.mean_error:.4g}" in text  # numbers by value
    inner = repr(analysis.relative_error)
    assert len(inner) < 400 and "signed_error" in inner and "[" not in inner

    Xp, _, _ = planar
    stability = subsample_stability(Xp, PCA(2), 0.5, 3, random_state=0)
    text = repr(stability)
    assert len(text) < 400 and text.startswith("SubsampleStability(scale=")
    assert "aligned (3, 75, 2)" in text and "per_point (150,)" in text
    assert stability.aligned.shape == (3, 75, 2)  # the full data, by attribute

    profile = runtime_profile(dims=[5, 50], n_samples=10, estimator=_TimedEstimator())
    assert "seconds {" in repr(profile) and len(repr(profile)) < 500
