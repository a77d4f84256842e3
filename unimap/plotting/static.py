"""Plots of embeddings: static figures (matplotlib, ``pip install 'unimap[plot]'``, imported
only when drawing) and a self-contained interactive HTML map (:func:`save_html`, no extra
dependency).

Static plots read well at any size. Up to :data:`DENSITY_THRESHOLD` points they are scatter plots
whose marker size and opacity shrink with the number of points; above it the points are
aggregated per pixel (a 2-D histogram; the colour of a pixel is the mean colour of its points,
its opacity grows with the log of their number) and drawn as one image, so the drawing cost
follows the pixels rather than the points and a PDF or SVG stays small (measured:
benchmarks/results/architecture_notes.md). Points layers are always rasterized in vector
formats.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from unimap.io.atomic import atomic_path
from unimap.plotting.colors import (
    DEFAULT_COLOR,
    MISSING_COLOR,
    OTHER_COLOR,
    ColorColumn,
    color_column,
    hex_to_rgb,
)
from unimap.plotting.html_map import html_map, save_html

__all__ = ["scatter", "save_scatter", "save_comparison", "save_html", "html_map",
           "DENSITY_THRESHOLD", "STATIC_FORMATS"]

DENSITY_THRESHOLD = 100_000
STATIC_FORMATS = ("png", "svg", "pdf")
_RENDERS = ("auto", "points", "density")


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("plotting needs matplotlib: pip install 'unimap[plot]'") from exc
    return plt


def _point_size(n: int) -> float:
    # ~ 1 / sqrt(n) keeps the total ink roughly constant as n grows.
    return float(np.clip(200.0 / np.sqrt(max(n, 1)), 0.1, 30.0))


def _point_alpha(n: int) -> float:
    # opaque up to 2,000 points, then fading so that overlaps show as darker areas.
    return float(np.clip((2000.0 / max(n, 1)) ** 0.25, 0.3, 1.0))


def _as_xy(embedding: Any) -> tuple[np.ndarray, np.ndarray]:
    embedding = np.asarray(embedding)
    if embedding.ndim != 2 or embedding.shape[1] < 2:
        raise ValueError(f"embedding must have shape (n, >= 2), got {embedding.shape}")
    if embedding.dtype.kind not in "iuf":
        raise ValueError(f"embedding must be numeric, got dtype {embedding.dtype}")
    xy = embedding[:, :2].astype(np.float64)
    if not np.isfinite(xy).all():
        raise ValueError("embedding contains NaN or infinite values")
    return xy[:, 0], xy[:, 1]


def _legend_entries(column: ColorColumn) -> list[tuple[str, str]]:
    entries = [(name, color) for name, color in zip(column.categories, column.colors,
                                                     strict=True) if color != OTHER_COLOR]
    n_other = len(column.categories) - len(entries)
    if n_other:
        entries.append((f"other ({n_other} categories)", OTHER_COLOR))
    return entries


def _rgb_table(colors: list[str]) -> np.ndarray:
    return np.array([hex_to_rgb(c) for c in colors], dtype=np.float64) / 255.0


def _draw_points(ax, x, y, column: ColorColumn | None, size: float, alpha: float, cmap: str):
    order = np.random.default_rng(0).permutation(len(x))  # no category always on top
    x, y = x[order], y[order]
    if column is None:
        return ax.scatter(x, y, s=size, c=DEFAULT_COLOR, alpha=alpha, linewidths=0,
                          rasterized=True)
    if column.kind == "categorical":
        rgb = _rgb_table(column.colors)[column.codes[order]]
        return ax.scatter(x, y, s=size, c=rgb, alpha=alpha, linewidths=0, rasterized=True)
    values = column.values[order]
    missing = np.isnan(values)
    if missing.any():
        ax.scatter(x[missing], y[missing], s=size, c=MISSING_COLOR, alpha=alpha, linewidths=0,
                   rasterized=True)
    vmin, vmax = _value_range(values)
    return ax.scatter(x[~missing], y[~missing], s=size, c=values[~missing], cmap=cmap,
                      vmin=vmin, vmax=vmax, alpha=alpha, linewidths=0, rasterized=True)


def _value_range(values: np.ndarray) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    return float(finite.min()), float(finite.max())


def _extent(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """A square-pixel frame around the points with a 2% margin."""
    bounds = []
    for v in (x, y):
        lo, hi = float(v.min()), float(v.max())
        pad = 0.02 * (hi - lo) if hi > lo else 1.0
        bounds += [lo - pad, hi + pad]
    return tuple(bounds)


def density_image(x: np.ndarray, y: np.ndarray, extent: tuple[float, float, float, float],
                  shape: tuple[int, int], column: ColorColumn | None = None,
                  cmap: Any = None, min_alpha: float = 0.35) -> np.ndarray:
    """Aggregate points into an RGBA image (rows bottom to top, for ``origin="lower"``).

    Each pixel's colour is the mean colour of its points (for a continuous column: the colour
    of their mean value); its opacity is ``min_alpha`` for one point, rising with the log of the
    count to 1 at the 99th percentile of the non-empty pixels' counts. Empty pixels are
    transparent.

    Parameters
    ----------
    x, y : ndarray of shape (n,)
    extent : (xmin, xmax, ymin, ymax)
    shape : (width, height) in pixels
    column : ColorColumn, optional
    cmap : matplotlib colormap, needed for a continuous column
    min_alpha : float, default=0.35

    Returns
    -------
    ndarray of float32, shape (height, width, 4)
    """
    width, height = shape
    xmin, xmax, ymin, ymax = extent
    ix = np.clip(((x - xmin) * (width / (xmax - xmin))).astype(np.int64), 0, width - 1)
    iy = np.clip(((y - ymin) * (height / (ymax - ymin))).astype(np.int64), 0, height - 1)
    pixel = iy * width + ix
    size = width * height
    counts = np.bincount(pixel, minlength=size).astype(np.float64)
    filled = counts > 0
    rgb = np.zeros((size, 3))
    if column is None:
        rgb[:] = np.array(hex_to_rgb(DEFAULT_COLOR)) / 255.0
    elif column.kind == "categorical":
        table = _rgb_table(column.colors)
        per_point = table[column.codes]
        for channel in range(3):
            rgb[filled, channel] = (np.bincount(pixel, per_point[:, channel], size)[filled]
                                    / counts[filled])
    else:
        values = column.values
        valid = ~np.isnan(values)
        n_valid = np.bincount(pixel[valid], minlength=size)
        sums = np.bincount(pixel[valid], values[valid], size)
        vmin, vmax = _value_range(values)
        has = n_valid > 0
        mean = np.zeros(size)
        mean[has] = (sums[has] / n_valid[has] - vmin) / ((vmax - vmin) or 1.0)
        rgb[:] = np.array(hex_to_rgb(MISSING_COLOR)) / 255.0
        rgb[has] = np.asarray(cmap(mean[has]))[:, :3]
    top = float(np.percentile(counts[filled], 99)) if filled.any() else 1.0
    scale = np.log1p(max(top, 1.0))
    alpha = np.zeros(size)
    alpha[filled] = np.minimum(1.0, min_alpha + (1 - min_alpha) * np.log1p(counts[filled])
                               / scale)
    image = np.concatenate([rgb, alpha[:, None]], axis=1).astype(np.float32)
    return image.reshape(height, width, 4)


def _draw_density(ax, x, y, column: ColorColumn | None, cmap):
    x0, x1, y0, y1 = _extent(x, y)
    bbox = ax.get_window_extent()
    # one bin per output pixel of the axes, square in data units
    side = int(np.clip(min(bbox.width, bbox.height), 64, 2400))
    aspect = (y1 - y0) / (x1 - x0)
    width, height = (side, max(1, round(side * aspect))) if aspect <= 1 else \
        (max(1, round(side / aspect)), side)
    image = density_image(x, y, (x0, x1, y0, y1), (width, height), column, cmap)
    return ax.imshow(image, origin="lower", extent=(x0, x1, y0, y1), interpolation="nearest",
                     aspect="equal")


def scatter(
    embedding: np.ndarray,
    labels: Any = None,
    ax: Any = None,
    title: str | None = None,
    point_size: float | None = None,
    legend: bool = True,
    *,
    categorical: bool | None = None,
    render: str = "auto",
    cmap: str = "viridis",
    alpha: float | None = None,
    colorbar_label: str | None = None,
) -> Any:
    """Plot a 2-D embedding (its first two columns), coloured by ``labels``.

    Parameters
    ----------
    embedding : ndarray of shape (n_samples, >= 2)
    labels : array-like of shape (n_samples,), optional
        What to colour by. Categories (strings, booleans, or whole numbers with at most 30
        distinct values) get a palette of 30 colours and a legend; with more categories the 29
        most frequent keep a colour and the rest are grey ("other"). Other numbers get the
        continuous colour map ``cmap`` and a colour bar (NaN drawn light grey).
    ax : matplotlib Axes, optional
        Drawn into a new 7 × 7 inch figure when omitted.
    title : str, optional
    point_size : float, optional
        Marker area of the scatter rendering; default scales with ``1/sqrt(n_samples)``.
    legend : bool, default=True
        Draw the legend (categories, outside the axes on the right) or colour bar.
    categorical : bool, optional
        Force the labels to be treated as categories (True) or a scale (False).
    render : {"auto", "points", "density"}, default="auto"
        "points": a scatter plot; "density": per-pixel aggregation drawn as an image, for large
        ``n``; "auto": "density" above :data:`DENSITY_THRESHOLD` points.
    cmap : str, default="viridis"
        Colour map of continuous labels.
    alpha : float, optional
        Marker opacity of the scatter rendering; default falls from 1 (≤ 2,000 points) to 0.3.
    colorbar_label : str, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    plt = _pyplot()
    x, y = _as_xy(embedding)
    n = len(x)
    if render not in _RENDERS:
        raise ValueError(f"render must be one of {_RENDERS}, got {render!r}")
    column = None
    if labels is not None:
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"labels has shape {labels.shape} for {n} points; expected ({n},)")
        column = color_column(labels, categorical)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 7))
    colormap = plt.get_cmap(cmap)
    if render == "density" or (render == "auto" and n > DENSITY_THRESHOLD):
        _draw_density(ax, x, y, column, colormap)
    else:
        size = _point_size(n) if point_size is None else point_size
        _draw_points(ax, x, y, column, size, _point_alpha(n) if alpha is None else alpha, cmap)
        ax.set_aspect("equal", adjustable="datalim")
    if legend and column is not None:
        _add_legend(ax, column, colormap, colorbar_label)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)
    return ax


def _add_legend(ax, column: ColorColumn, colormap, colorbar_label: str | None) -> None:
    if column.kind == "continuous":
        import matplotlib.cm
        import matplotlib.colors

        vmin, vmax = _value_range(column.values)
        mappable = matplotlib.cm.ScalarMappable(matplotlib.colors.Normalize(vmin, vmax),
                                                colormap)
        bar = ax.figure.colorbar(mappable, ax=ax, shrink=0.7)
        if colorbar_label:
            bar.set_label(colorbar_label)
        return
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="", markersize=6, markeredgewidth=0,
                      color=color, label=name) for name, color in _legend_entries(column)]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8,
              frameon=False, handletextpad=0.3, borderaxespad=0.0)


def _check_static_path(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in STATIC_FORMATS:
        raise ValueError(f"cannot write a static plot to {path.name!r}: use .png, .svg or .pdf "
                         "(or save_html for .html)")
    return fmt


def save_scatter(path: str | os.PathLike, embedding: np.ndarray, labels: Any = None,
                 title: str | None = None, dpi: int = 150, **kwargs: Any) -> Path:
    """Draw :func:`scatter` and write it to ``path`` (.png, .svg or .pdf) atomically.

    Parameters
    ----------
    path : str or path-like
        The suffix picks the format. Nothing is written if drawing fails.
    embedding, labels, title
        As for :func:`scatter`.
    dpi : int, default=150
        Resolution of the PNG, and of the rasterized points layer in SVG and PDF.
    **kwargs
        Passed on to :func:`scatter` (``render``, ``categorical``, ``cmap``, ...).

    Returns
    -------
    Path
    """
    plt = _pyplot()
    path = Path(path)
    fmt = _check_static_path(path)
    fig, ax = plt.subplots(figsize=(7, 7), dpi=dpi)
    try:
        scatter(embedding, labels, ax=ax, title=title, **kwargs)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=fmt, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


def save_comparison(path: str | os.PathLike, embeddings: Mapping[str, np.ndarray],
                    labels: Any = None, dpi: int = 120, panel_size: float = 4.5,
                    **kwargs: Any) -> Path:
    """Draw several embeddings of the same points side by side and write them to ``path``.

    Parameters
    ----------
    path : str or path-like
        .png, .svg or .pdf; written atomically.
    embeddings : mapping of str to ndarray of shape (n_samples, >= 2)
        Panel title → embedding, in panel order.
    labels : array-like of shape (n_samples,), optional
        Colours every panel; the legend or colour bar is drawn beside the last one.
    dpi : int, default=120
    panel_size : float, default=4.5
        Width and height of one panel in inches.
    **kwargs
        Passed on to :func:`scatter`.

    Returns
    -------
    Path
    """
    plt = _pyplot()
    path = Path(path)
    fmt = _check_static_path(path)
    if not embeddings:
        raise ValueError("no embeddings to draw")
    count = len(embeddings)
    fig, axes = plt.subplots(1, count, figsize=(panel_size * count, panel_size), dpi=dpi,
                             squeeze=False)
    try:
        for i, (ax, (name, embedding)) in enumerate(zip(axes[0], embeddings.items(),
                                                        strict=True)):
            scatter(embedding, labels, ax=ax, title=name, legend=i == count - 1, **kwargs)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=fmt, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path
