"""Options of the static plots, checked on matplotlib's objects rather than pixels: palettes,
robust colour limits, names on the data, legend titles, axis labels, the trust layer."""

import itertools

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from unimap.plotting import plot_trust, save_comparison, scatter  # noqa: E402
from unimap.plotting.colors import (  # noqa: E402
    CATEGORY_PALETTE,
    MISSING_COLOR,
    OTHER_COLOR,
    color_column,
    color_limits,
    hex_to_rgb,
    palette_colors,
)
from unimap.plotting.trust import neighborhood_preservation  # noqa: E402


def _lab(colors):
    rgb = np.array([hex_to_rgb(c) for c in colors]) / 255.0
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = lin @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                          [0.0193, 0.1192, 0.9505]]).T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]),
                     200 * (f[:, 1] - f[:, 2])], axis=1)


def _clusters(n, k, seed=0, spread=20.0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-spread, spread, (k, 2))
    labels = np.arange(n) % k
    return centers[labels] + rng.standard_normal((n, 2)), labels


@pytest.fixture
def ax():
    fig, ax = plt.subplots(figsize=(7, 7))
    yield ax
    plt.close(fig)


def _point_colors(ax):
    return {to_hex(c) for c in ax.collections[0].get_facecolors()}


def test_default_palette_is_long_and_its_colours_stay_apart():
    assert len(CATEGORY_PALETTE) >= 100 and len(set(CATEGORY_PALETTE)) == len(CATEGORY_PALETTE)
    lab = _lab(CATEGORY_PALETTE)
    distance = np.linalg.norm(lab[:, None] - lab[None], axis=2)
    np.fill_diagonal(distance, np.inf)
    assert distance.min() > 15  # no near-duplicates anywhere (CIELAB units)
    assert np.diagonal(distance, 1).min() > 20  # neighbours in the list are clearly apart
    away = np.linalg.norm(lab[:, None] - _lab([OTHER_COLOR, MISSING_COLOR, "#ffffff"])[None],
                          axis=2)
    assert away.min() > 15  # no colour is mistaken for "other", "missing" or the background


def test_fifty_categories_each_get_their_own_colour(ax):
    emb, labels = _clusters(2000, 50)
    names = np.array([f"leiden {i}" for i in range(50)])[labels]
    scatter(emb, names, ax=ax)
    assert len(_point_colors(ax)) == 50
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    assert entries == [f"leiden {i}" for i in range(50)]  # no "other"
    assert color_column(names).colors == list(CATEGORY_PALETTE[:50])


def test_palette_takes_a_colour_map_name_or_a_list(ax):
    emb, labels = _clusters(300, 3)
    scatter(emb, labels, ax=ax, palette=["red", "#00ff00", (0, 0, 1)])
    assert _point_colors(ax) == {"#ff0000", "#00ff00", "#0000ff"}
    assert palette_colors("Set1", 3)[:3] == ["#e41a1c", "#377eb8", "#4daf4a"]
    sampled = palette_colors("viridis", 5)  # continuous maps are sampled evenly
    assert len(sampled) == 5 and sampled[0] == "#440154" and sampled[-1] == "#fde725"
    # a palette shorter than the categories: the most frequent keep a colour
    column = color_column(np.array(list("aabbbcd")), palette=["#111111", "#222222", "#333333"])
    assert column.colors == ["#111111", "#222222", OTHER_COLOR, OTHER_COLOR]


@pytest.mark.parametrize(("palette", "message"), [
    ("no-such-map", "not a matplotlib colour map"),
    (["#12345"], "is not a colour"),
    ([], "non-empty list"),
    ({"a": "red"}, "list of colours"),
])
def test_a_bad_palette_is_a_clear_error(ax, palette, message):
    emb, labels = _clusters(30, 3)
    with pytest.raises(ValueError, match=message):
        scatter(emb, labels, ax=ax, palette=palette)


def test_colour_limits_are_percentiles_so_one_outlier_does_not_wash_out_the_scale(ax):
    emb, _ = _clusters(1000, 4)
    values = np.random.default_rng(1).normal(size=1000)
    values[0] = 1e6
    scatter(emb, values, ax=ax)
    points = ax.collections[0]
    lo, hi = np.percentile(values, [1, 99])
    assert points.norm.vmin == pytest.approx(lo) and points.norm.vmax == pytest.approx(hi)
    assert ax.figure.axes[-1].get_ylabel() == ""  # no title unless one is known
    assert color_limits(values, percentiles=None) == (values.min(), 1e6)
    assert color_limits(values, (10, 90), vmax=5.0) == (np.percentile(values, 10), 5.0)
    assert color_limits(np.full(3, 2.0)) == (1.5, 2.5)
    with pytest.raises(ValueError, match="percentiles must be"):
        color_limits(values, (99, 1))


def test_changed_percentiles_reach_the_scatter_and_the_colour_bar(ax):
    emb, _ = _clusters(500, 2)
    values = np.arange(500.0)
    scatter(emb, values, ax=ax, percentiles=(10, 90), legend_title="age")
    assert ax.collections[0].norm.vmax == pytest.approx(np.percentile(values, 90))
    bar = ax.figure.axes[-1]
    assert bar.get_ylabel() == "age"
    assert ax.figure.axes[-1] is not ax and bar.get_ylim()[1] <= 450.0


def test_names_on_the_data_sit_at_the_medians_and_never_overlap(ax):
    # 40 crowded clusters: many names start on top of each other
    emb, labels = _clusters(4000, 40, spread=6.0)
    names = np.array([f"cell type {i}" for i in range(40)])[labels]
    scatter(emb, names, ax=ax, legend_loc="on data")
    assert ax.get_legend() is None
    texts = {t.get_text(): t for t in ax.texts}
    assert sorted(texts) == sorted(set(names))
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in texts.values()]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    # the largest category was placed first, at its median
    counts = np.bincount(labels)
    first = f"cell type {int(np.argmax(counts))}"
    members = names == first
    assert texts[first].get_position() == pytest.approx(
        (np.median(emb[members, 0]), np.median(emb[members, 1])))


def test_legend_title_and_axis_labels(ax):
    pd = pytest.importorskip("pandas")
    emb, labels = _clusters(300, 3)
    scatter(emb, pd.Series(labels.astype(str), name="cell type"), ax=ax, basis="UMAP")
    assert ax.get_legend().get_title().get_text() == "cell type"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("UMAP 1", "UMAP 2")


def test_default_axis_labels_and_none(ax):
    emb, labels = _clusters(100, 2)
    scatter(emb, labels, ax=ax, legend_title="batch")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Dim 1", "Dim 2")
    assert ax.get_legend().get_title().get_text() == "batch"
    ax.clear()
    scatter(emb, labels, ax=ax, basis=None, legend_loc="none")
    assert ax.get_xlabel() == "" and ax.get_legend() is None


def test_unknown_legend_loc_is_refused(ax):
    emb, labels = _clusters(30, 3)
    with pytest.raises(ValueError, match="legend_loc must be one of"):
        scatter(emb, labels, ax=ax, legend_loc="upper left")


def test_comparison_names_categories_on_every_panel(tmp_path):
    emb, labels = _clusters(300, 3)
    fig_count = len(plt.get_fignums())
    save_comparison(tmp_path / "cmp.png", {"a": emb, "b": -emb}, labels, legend_loc="on data")
    assert (tmp_path / "cmp.png").stat().st_size > 0
    assert len(plt.get_fignums()) == fig_count  # the figure was closed


def test_trust_scores_match_knn_recall_and_mark_the_torn_points():
    from unimap.metrics import knn_recall

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    embedding = X[:, :2].copy()
    scores = neighborhood_preservation(X, embedding, 10, method="exact")
    assert scores.shape == (400,) and set(np.unique(scores * 10)) <= set(range(11))
    assert scores.mean() == pytest.approx(knn_recall(X, embedding, 10))
    torn = embedding.copy()
    torn[:20] = rng.uniform(50, 60, (20, 2))  # twenty points thrown far away
    moved = neighborhood_preservation(X, torn, 10, method="exact")
    assert moved[:20].mean() < 0.1 < scores[:20].mean()
    with pytest.raises(ValueError, match="row for row"):
        neighborhood_preservation(X, embedding[:-1])


def test_plot_trust_draws_scores_on_a_fixed_zero_to_one_scale(ax):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    plot_trust(X[:, :2], X, n_neighbors=8, ax=ax, basis="PCA")
    points = ax.collections[0]
    assert (points.norm.vmin, points.norm.vmax) == (0.0, 1.0)
    expected = neighborhood_preservation(X, X[:, :2], 8)
    assert sorted(points.get_array()) == pytest.approx(sorted(expected))
    assert "8 nearest neighbours" in ax.figure.axes[-1].get_ylabel()
    with pytest.raises(ValueError, match="needs the data X"):
        plot_trust(X[:, :2])
