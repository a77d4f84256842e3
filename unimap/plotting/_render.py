"""Drawing the points of a static plot: a scatter plot up to a few hundred thousand points, a
per-pixel aggregate image above (see :mod:`unimap.plotting.static`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.plotting.colors import DEFAULT_COLOR, MISSING_COLOR, ColorColumn, hex_to_rgb


def point_size(n: int) -> float:
    # ~ 1 / sqrt(n) keeps the total ink roughly constant as n grows.
    return float(np.clip(200.0 / np.sqrt(max(n, 1)), 0.1, 30.0))


def point_alpha(n: int) -> float:
    # opaque up to 2,000 points, then fading so that overlaps show as darker areas.
    return float(np.clip((2000.0 / max(n, 1)) ** 0.25, 0.3, 1.0))


def as_xy(embedding: Any) -> tuple[np.ndarray, np.ndarray]:
    """The first two columns of ``embedding`` as float64, checked."""
    embedding = np.asarray(embedding)
    if embedding.ndim != 2 or embedding.shape[1] < 2:
        raise ValueError(f"embedding must have shape (n, >= 2), got {embedding.shape}")
    if embedding.dtype.kind not in "iuf":
        raise ValueError(f"embedding must be numeric, got dtype {embedding.dtype}")
    xy = embedding[:, :2].astype(np.float64)
    if not np.isfinite(xy).all():
        raise ValueError("embedding contains NaN or infinite values")
    return xy[:, 0], xy[:, 1]


def rgb_table(colors: list[str]) -> np.ndarray:
    return np.array([hex_to_rgb(c) for c in colors], dtype=np.float64) / 255.0


def _full_range(values: np.ndarray) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    return float(finite.min()), float(finite.max())


def draw_points(ax, x, y, column: ColorColumn | None, size: float, alpha: float, cmap,
                limits: tuple[float, float] | None = None):
    """A scatter plot, points in a fixed random order (no category always on top)."""
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    if column is None:
        return ax.scatter(x, y, s=size, c=DEFAULT_COLOR, alpha=alpha, linewidths=0,
                          rasterized=True)
    if column.kind == "categorical":
        rgb = rgb_table(column.colors)[column.codes[order]]
        return ax.scatter(x, y, s=size, c=rgb, alpha=alpha, linewidths=0, rasterized=True)
    values = column.values[order]
    missing = np.isnan(values)
    if missing.any():
        ax.scatter(x[missing], y[missing], s=size, c=MISSING_COLOR, alpha=alpha, linewidths=0,
                   rasterized=True)
    vmin, vmax = limits if limits is not None else _full_range(values)
    return ax.scatter(x[~missing], y[~missing], s=size, c=values[~missing], cmap=cmap,
                      vmin=vmin, vmax=vmax, alpha=alpha, linewidths=0, rasterized=True)


def extent(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """A square-pixel frame around the points with a 2% margin."""
    bounds = []
    for v in (x, y):
        lo, hi = float(v.min()), float(v.max())
        pad = 0.02 * (hi - lo) if hi > lo else 1.0
        bounds += [lo - pad, hi + pad]
    return tuple(bounds)


def density_image(x: np.ndarray, y: np.ndarray, extent: tuple[float, float, float, float],
                  shape: tuple[int, int], column: ColorColumn | None = None,
                  cmap: Any = None, min_alpha: float = 0.35,
                  limits: tuple[float, float] | None = None) -> np.ndarray:
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
    limits : (float, float), optional
        The values at the two ends of ``cmap`` (values beyond are clipped); default the minimum
        and maximum.

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
        table = rgb_table(column.colors)
        per_point = table[column.codes]
        for channel in range(3):
            rgb[filled, channel] = (np.bincount(pixel, per_point[:, channel], size)[filled]
                                    / counts[filled])
    else:
        values = column.values
        valid = ~np.isnan(values)
        vmin, vmax = limits if limits is not None else _full_range(values)
        n_valid = np.bincount(pixel[valid], minlength=size)
        # clipped before averaging, so that an outlier cannot drag a pixel off the scale
        sums = np.bincount(pixel[valid], np.clip(values[valid], vmin, vmax), size)
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


def draw_density(ax, x, y, column: ColorColumn | None, cmap,
                 limits: tuple[float, float] | None = None):
    """The points aggregated per output pixel of the axes, drawn as one image."""
    x0, x1, y0, y1 = extent(x, y)
    bbox = ax.get_window_extent()
    # one bin per output pixel of the axes, square in data units
    side = int(np.clip(min(bbox.width, bbox.height), 64, 2400))
    aspect = (y1 - y0) / (x1 - x0)
    width, height = (side, max(1, round(side * aspect))) if aspect <= 1 else \
        (max(1, round(side / aspect)), side)
    image = density_image(x, y, (x0, x1, y0, y1), (width, height), column, cmap,
                          limits=limits)
    return ax.imshow(image, origin="lower", extent=(x0, x1, y0, y1), interpolation="nearest",
                     aspect="equal")
