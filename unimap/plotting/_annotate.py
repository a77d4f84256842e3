"""What a static plot says besides its points: the legend or colour bar (with a title), the
category names written on the map at each category's centre without overlapping, and the
axis labels."""

from __future__ import annotations

import math

import numpy as np

from unimap.plotting.colors import OTHER_COLOR, ColorColumn

LEGEND_LOCS = ("right margin", "on data", "none")
_ROWS_PER_COLUMN = 35  # legend entries per column beside a 7-inch plot at 8 points


def legend_entries(column: ColorColumn) -> list[tuple[str, str]]:
    """(name, colour) of each coloured category, then one "other" entry for the rest."""
    entries = [(name, color) for name, color in zip(column.categories, column.colors,
                                                     strict=True) if color != OTHER_COLOR]
    n_other = len(column.categories) - len(entries)
    if n_other:
        entries.append((f"other ({n_other} categories)", OTHER_COLOR))
    return entries


def add_colorbar(ax, column: ColorColumn, colormap, limits: tuple[float, float],
                 title: str | None) -> None:
    """A colour bar beside ``ax``; its ends are arrows where values lie beyond the limits."""
    import matplotlib.cm
    import matplotlib.colors

    values = column.values[np.isfinite(column.values)]
    below = values.size and values.min() < limits[0]
    above = values.size and values.max() > limits[1]
    extend = {(True, True): "both", (True, False): "min", (False, True): "max"}.get(
        (bool(below), bool(above)), "neither")
    mappable = matplotlib.cm.ScalarMappable(matplotlib.colors.Normalize(*limits), colormap)
    bar = ax.figure.colorbar(mappable, ax=ax, shrink=0.7, extend=extend)
    if title:
        bar.set_label(title)


def add_category_legend(ax, column: ColorColumn, title: str | None) -> None:
    """The categories in a legend outside the axes, on the right."""
    from matplotlib.lines import Line2D

    entries = legend_entries(column)
    handles = [Line2D([], [], marker="o", linestyle="", markersize=6, markeredgewidth=0,
                      color=color, label=name) for name, color in entries]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8,
              frameon=False, handletextpad=0.3, borderaxespad=0.0, title=title,
              title_fontsize=9, alignment="left",
              ncols=max(1, math.ceil(len(entries) / _ROWS_PER_COLUMN)))


def _renderer(fig):
    get = getattr(fig.canvas, "get_renderer", None)
    return get() if get is not None else fig._get_renderer()


def _overlaps(box: np.ndarray, placed: np.ndarray) -> bool:
    if not len(placed):
        return False
    return bool(np.any((box[0] < placed[:, 2]) & (placed[:, 0] < box[2])
                       & (box[1] < placed[:, 3]) & (placed[:, 1] < box[3])))


def _free_offset(box: np.ndarray, placed: np.ndarray, step: float) -> tuple[float, float]:
    """The nearest shift (display units) on rings of growing radius around ``box`` that keeps
    it clear of every ``placed`` box; no shift when none of the tried ones does."""
    if not _overlaps(box, placed):
        return 0.0, 0.0
    for ring in range(1, 25):
        radius = ring * step
        count = 8 + 4 * ring
        for j in range(count):
            angle = 2 * math.pi * j / count + math.pi / 2  # try above first, then around
            dx, dy = radius * math.cos(angle), radius * math.sin(angle)
            if not _overlaps(box + np.array([dx, dy, dx, dy]), placed):
                return dx, dy
    return 0.0, 0.0


def add_labels_on_data(ax, x: np.ndarray, y: np.ndarray, column: ColorColumn,
                       fontsize: float = 9) -> list:
    """Each category's name at the median of its points, nudged until no two names overlap.

    The largest categories are placed first and keep their centres; each later name moves to
    the nearest free spot on rings around its centre (a greedy search in display units, so the
    layout holds for the figure's size and resolution as drawn).

    Returns
    -------
    list of matplotlib Text
    """
    import matplotlib.patheffects as effects

    ax.apply_aspect()  # the final limits, so that data and display positions agree
    renderer = _renderer(ax.figure)
    to_data = ax.transData.inverted()
    order = np.argsort(-column.counts, kind="stable")
    placed: list[list[float]] = []
    texts = []
    for k in order:
        members = column.codes == k
        if not members.any():
            continue
        cx, cy = float(np.median(x[members])), float(np.median(y[members]))
        text = ax.text(cx, cy, column.categories[k], ha="center", va="center",
                       fontsize=fontsize, fontweight="bold", color="#222222", zorder=5,
                       path_effects=[effects.withStroke(linewidth=2.5, foreground="white")])
        extent = text.get_window_extent(renderer)
        pad = 1.5 * text.get_fontsize() * ax.figure.dpi / 72 * 0.15
        box = np.array([extent.x0 - pad, extent.y0 - pad, extent.x1 + pad, extent.y1 + pad])
        dx, dy = _free_offset(box, np.asarray(placed).reshape(-1, 4), 0.5 * extent.height)
        if dx or dy:
            centre = ax.transData.transform((cx, cy))
            text.set_position(to_data.transform((centre[0] + dx, centre[1] + dy)))
        placed.append(list(box + np.array([dx, dy, dx, dy])))
        texts.append(text)
    return texts


def set_axis_labels(ax, basis: str | None) -> None:
    """``"{basis} 1"`` and ``"{basis} 2"`` on the axes (no ticks: their values mean nothing)."""
    ax.set_xticks([])
    ax.set_yticks([])
    if basis:
        ax.set_xlabel(f"{basis} 1", loc="left", fontsize=9)
        ax.set_ylabel(f"{basis} 2", loc="bottom", fontsize=9)
