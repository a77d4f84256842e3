"""Static plots: readable at any n, categorical and continuous colouring, small vector files."""

import io

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402

from unimap.plotting.colors import OTHER_COLOR, TAB10, color_column  # noqa: E402
from unimap.plotting.static import density_image, save_comparison, save_scatter, scatter  # noqa: E402


def _clusters(n, k, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-20, 20, (k, 2))
    labels = rng.integers(0, k, n)
    return centers[labels] + rng.standard_normal((n, 2)), labels


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def _ink(rgb: np.ndarray) -> float:
    return float((rgb.min(axis=2) < 235).mean())


@pytest.fixture
def fig_ax():
    fig, ax = plt.subplots()
    yield fig, ax
    plt.close(fig)


def test_categorical_legend_names_every_category_in_natural_order(fig_ax):
    emb, labels = _clusters(500, 12)
    names = np.array([f"type {i}" for i in range(12)])[labels]
    ax = scatter(emb, names, ax=fig_ax[1])
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == [f"type {i}" for i in range(12)]  # "type 2" before "type 10"
    assert isinstance(ax.collections[0], PathCollection)


def test_beyond_the_palette_the_most_frequent_keep_a_colour(fig_ax):
    emb, labels = _clusters(6000, 120)
    labels[:1000] = 0  # category 0 is the most frequent: it keeps a colour
    names = np.array([f"cell {i}" for i in range(120)])[labels]
    ax = scatter(emb, names, ax=fig_ax[1])
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(texts) == 102 and texts[-1] == "other (19 categories)"
    assert "cell 0" in texts
    column = color_column(names)
    assert column.n_colored == 101 and column.colors.count(OTHER_COLOR) == 19
    # 120 distinct integers are a scale unless told otherwise
    assert color_column(labels).kind == "continuous"
    assert color_column(labels, categorical=True).n_colored == 101


def test_up_to_ten_categories_use_tab10():
    column = color_column(np.array(["b", "a", "c", "a"]))
    assert column.categories == ["a", "b", "c"] and column.colors == list(TAB10[:3])
    assert column.codes.tolist() == [1, 0, 2, 0]


def test_continuous_column_gets_a_colorbar(fig_ax):
    fig, ax = fig_ax
    emb, _ = _clusters(500, 3)
    values = emb[:, 0] * 0.37
    values[:5] = np.nan  # missing values are drawn grey, not dropped
    scatter(emb, values, ax=ax)
    assert len(fig.axes) == 2  # the plot and its colour bar
    assert color_column(values).kind == "continuous"
    assert sum(len(c.get_offsets()) for c in ax.collections) == 500


def test_large_n_renders_as_a_density_image(fig_ax):
    emb, labels = _clusters(150_000, 5)
    ax = scatter(emb, labels, ax=fig_ax[1])
    assert any(isinstance(a, AxesImage) for a in ax.get_images())
    assert not ax.collections  # no million-marker scatter


def test_png_is_readable_not_blank_and_not_an_ink_blot(tmp_path):
    emb, labels = _clusters(300_000, 8)
    path = save_scatter(tmp_path / "big.png", emb, labels, title="300k")
    rgb = _pixels(path.read_bytes())
    ink = _ink(rgb)
    assert 0.05 < ink < 0.6, ink
    colours = np.unique((rgb[rgb.min(axis=2) < 235] // 32).reshape(-1, 3), axis=0)
    assert len(colours) > 8  # several categories, not one colour


def test_vector_formats_stay_small_for_200k_points(tmp_path):
    emb, labels = _clusters(200_000, 6)
    for fmt in ("svg", "pdf"):
        path = save_scatter(tmp_path / f"big.{fmt}", emb, labels)
        assert path.stat().st_size < 1_500_000, (fmt, path.stat().st_size)
    assert b"<image" in (tmp_path / "big.svg").read_bytes()  # the points layer is one image


def test_scatter_rendering_rasterizes_points_in_svg(tmp_path):
    emb, labels = _clusters(20_000, 4)
    path = save_scatter(tmp_path / "mid.svg", emb, labels, render="points")
    text = path.read_text()
    assert "<image" in text and text.count("<path") < 200
    assert path.stat().st_size < 1_500_000


def test_density_image_mixes_colours_and_scales_opacity():
    x = np.array([0.1, 0.1, 0.1, 0.9])
    y = np.array([0.1, 0.1, 0.1, 0.9])
    column = color_column(np.array([0, 1, 1, 0]))
    img = density_image(x, y, (0, 1, 0, 1), (2, 2), column, min_alpha=0.4)
    first, second = (np.array([int(h[i:i + 2], 16) for i in (1, 3, 5)]) / 255
                     for h in TAB10[:2])
    np.testing.assert_allclose(img[0, 0, :3], (first + 2 * second) / 3, rtol=1e-6)
    np.testing.assert_allclose(img[1, 1, :3], first, rtol=1e-6)
    top = np.percentile([3, 1], 99)  # opacity reaches 1 at the 99th percentile of the counts
    assert img[1, 1, 3] == pytest.approx(0.4 + 0.6 * np.log(2) / np.log1p(top))
    assert img[0, 0, 3] == 1.0
    assert img[0, 1, 3] == 0 and img[1, 0, 3] == 0  # empty pixels are transparent


def test_save_scatter_rejects_unknown_format_and_writes_nothing(tmp_path):
    emb, labels = _clusters(100, 2)
    with pytest.raises(ValueError, match="use .png, .svg or .pdf"):
        save_scatter(tmp_path / "map.jpg", emb, labels)
    with pytest.raises(ValueError, match="labels has shape"):
        save_scatter(tmp_path / "map.png", emb, labels[:-1])
    with pytest.raises(ValueError, match="NaN"):
        save_scatter(tmp_path / "map.png", np.full((5, 2), np.nan))
    assert list(tmp_path.iterdir()) == []


def test_save_comparison_draws_one_panel_per_embedding(tmp_path):
    emb, labels = _clusters(400, 3)
    path = save_comparison(tmp_path / "cmp.png", {"a": emb, "b": emb[:, ::-1]}, labels)
    rgb = _pixels(path.read_bytes())
    assert rgb.shape[1] > 1.8 * rgb.shape[0]  # side by side
    assert _ink(rgb) > 0.01
