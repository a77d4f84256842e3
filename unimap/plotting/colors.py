"""Colours shared by the static plots and the HTML map (matplotlib is needed here only to
read a colour map or a colour name given as a ``palette``).

A column to colour by is *categorical* (strings, booleans, or whole numbers with at most
:data:`MAX_CATEGORIES` distinct values) or *continuous* (any other numbers). Up to ten categories
get :data:`TAB10`, more get :data:`CATEGORY_PALETTE` (102 colours); beyond the palette's length
the most frequent categories keep a colour and the rest share :data:`OTHER_COLOR`. Text
categories sort naturally ("type 2" before "type 10"). Continuous values go through viridis
(:data:`VIRIDIS_STOPS`) between robust limits (:func:`color_limits`: the 1st and 99th
percentiles by default, so that one outlier does not wash out the scale).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# 102 colours that stay apart on white. tab10 first (its grey left out: grey means "other" or
# "missing"), then, one at a time, the colour farthest (CIELAB distance) from all those before
# it: first from matplotlib's qualitative palettes (tab20, tab20b, tab20c, Set1, Set2, Set3,
# Dark2, Paired, Accent, Pastel1, Pastel2; greys and colours lighter than L* = 86 left out),
# then, when none of those is 15 or more away, from a grid over the sRGB cube. So any prefix
# is well spread: every pair is at least 15 apart, neighbours in the list at least 20.
CATEGORY_PALETTE: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#fdc086", "#a1d99b", "#f4cae4", "#f0027f", "#637939", "#a6761d", "#fb8072",
    "#1b9e77", "#393b79", "#e6ab02", "#9e9ac8", "#bf5b17", "#b3de69", "#7b4173", "#e7969c",
    "#dbdb8d", "#8dd3c7", "#6baed6", "#ad494a", "#de9ed6", "#e7ba52", "#e6550d", "#31a354",
    "#7570b3", "#6a3d9a", "#8ca252", "#8c6d31", "#66a61e", "#6b6ecf", "#a55194", "#74c476",
    "#a65628", "#fdcdac", "#0000ff", "#ff1eff", "#00f000", "#005aff", "#8700c3", "#c300a5",
    "#00f087", "#006969", "#e178ff", "#96e100", "#96004b", "#005a00", "#ff0000", "#00e1c3",
    "#ff005a", "#a500ff", "#875ae1", "#e15a87", "#2dc30f", "#69a5ff", "#003cb4", "#0078ff",
    "#878700", "#870078", "#b4a578", "#961e0f", "#5a3cff", "#ff965a", "#c32d87", "#c3a5ff",
    "#1e693c", "#0f5a78", "#c38769", "#4b4b1e", "#b40f3c", "#b46987", "#78e169", "#693c0f",
    "#ff3cb4", "#f0d200", "#ff0fd2", "#d23ce1", "#871ea5", "#4b2dc3", "#00f05a", "#78a578",
    "#b44bb4", "#b487ff", "#ff694b", "#ff5a69", "#4b7800", "#ffa53c", "#1ed287", "#4b9687",
    "#0087a5", "#00b4ff", "#004ba5", "#ffa5ff", "#ff69e1", "#c3e12d",
)
# the name of the palette before it grew past 30 colours
CATEGORY_COLORS = CATEGORY_PALETTE
# whole numbers with at most this many distinct values are categories unless told otherwise
MAX_CATEGORIES = 30
# up to ten categories: matplotlib's tab10 as it is (no "other" grey can occur then).
TAB10: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
)
OTHER_COLOR = "#b0b0b0"
MISSING_COLOR = "#d9d9d9"
DEFAULT_COLOR = "#3465a4"
DEFAULT_PERCENTILES = (1.0, 99.0)
# viridis at 17 equally spaced positions (matplotlib's values).
VIRIDIS_STOPS: tuple[str, ...] = (
    "#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e",
    "#21918c", "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219",
    "#fde725",
)
_HEX = re.compile(r"#[0-9a-fA-F]{6}")


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    """``"#rrggbb"`` to a tuple of three ints in 0..255."""
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


@dataclass(frozen=True)
class ColorColumn:
    """One column prepared for colouring.

    Attributes
    ----------
    kind : {"categorical", "continuous"}
    codes : ndarray of int64, shape (n,)
        Categorical only: the category index of each row.
    categories : list of str
        Categorical only: the category names, in sorted order.
    counts : ndarray of int64
        Categorical only: rows per category.
    colors : list of str
        Categorical only: the colour of each category (when there are more categories than
        colours in the palette, the most frequent keep their own and the rest get OTHER_COLOR).
    values : ndarray of float64, shape (n,)
        Continuous only: the values (NaN where missing).
    """

    kind: str
    codes: np.ndarray | None = None
    categories: list[str] | None = None
    counts: np.ndarray | None = None
    colors: list[str] | None = None
    values: np.ndarray | None = None

    @property
    def n_colored(self) -> int:
        """How many categories have a colour of their own (the rest are "other")."""
        return sum(color != OTHER_COLOR for color in self.colors or ())


def is_categorical(values: np.ndarray) -> bool:
    """Whether ``values`` are drawn as categories rather than on a colour scale."""
    if values.dtype.kind not in "iuf":  # strings, objects, booleans, dates
        return True
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    if finite.size and not np.all(finite == np.round(finite)):
        return False
    return np.unique(finite).size <= MAX_CATEGORIES


def _natural_key(text: str) -> list:
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", text) if part]


def _unique_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    try:
        categories, codes = np.unique(values, return_inverse=True)
    except TypeError:  # mixed object types (str and float NaN, ...): compare as text
        categories, codes = np.unique(values.astype(str), return_inverse=True)
    codes = codes.reshape(-1)
    if categories.dtype.kind in "OUS" and len(categories) <= 100_000:
        order = sorted(range(len(categories)), key=lambda i: _natural_key(str(categories[i])))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        categories, codes = categories[order], rank[codes]
    return categories, codes


def _category_name(value: Any) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value.item() if isinstance(value, np.generic) else value)


def to_hex(color: Any, name: str = "palette") -> str:
    """A colour (``"#rrggbb"``, or anything matplotlib reads: ``"red"``, ``"#f00"``, an RGB
    tuple) as ``"#rrggbb"``; a clear ValueError naming ``name`` when it is not one."""
    if isinstance(color, str) and _HEX.fullmatch(color):
        return color.lower()
    try:
        import matplotlib.colors
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ValueError(f"{name}: {color!r} is not a '#rrggbb' colour (other colour names "
                         "need matplotlib: pip install 'unimap[plot]')") from exc
    try:
        return matplotlib.colors.to_hex(color)
    except ValueError as exc:
        raise ValueError(f"{name}: {color!r} is not a colour") from exc


def palette_colors(palette: Any, n_categories: int) -> list[str]:
    """The colours a ``palette`` option gives to ``n_categories`` categories.

    Parameters
    ----------
    palette : None, str or sequence of colours
        None: :data:`TAB10` up to ten categories, else :data:`CATEGORY_PALETTE`. A str: a
        matplotlib colour map; a qualitative one (``"tab20"``, ``"Set1"``, ...) gives its list of
        colours, any other (``"viridis"``, ...) is sampled at ``n_categories`` equally spaced
        points. A sequence: the colours, in order.
    n_categories : int

    Returns
    -------
    list of str
        ``"#rrggbb"`` colours; may be shorter than ``n_categories`` (the rest are "other").

    Examples
    --------
    >>> palette_colors(["red", "#00ff00"], 2)
    ['#ff0000', '#00ff00']
    >>> len(palette_colors(None, 45))
    102
    """
    if palette is None:
        return list(TAB10 if n_categories <= len(TAB10) else CATEGORY_PALETTE)
    if isinstance(palette, str):
        try:
            from matplotlib import colormaps
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("a colour map name as palette needs matplotlib: "
                              "pip install 'unimap[plot]'") from exc
        if palette not in colormaps:
            raise ValueError(f"palette={palette!r} is not a matplotlib colour map (or pass a "
                             "list of colours)")
        cmap = colormaps[palette]
        listed = getattr(cmap, "colors", None)
        if listed is not None and len(listed) <= 64:  # qualitative: its own colours
            return [to_hex(c) for c in listed]
        return [to_hex(cmap(t)) for t in np.linspace(0.0, 1.0, max(n_categories, 1))]
    if isinstance(palette, Mapping) or not isinstance(palette, Sequence) or not palette:
        raise ValueError("palette must be a colour map name or a non-empty list of colours, "
                         f"got {palette!r}")
    return [to_hex(c) for c in palette]


def _assign_colors(counts: np.ndarray, palette: list[str]) -> list[str]:
    """One colour per category: in order while the palette lasts; beyond it, the most frequent
    categories keep one (in category order) and the rest are OTHER_COLOR."""
    n = len(counts)
    if n <= len(palette):
        return list(palette[:n])
    colors = [OTHER_COLOR] * n
    keep = np.sort(np.argsort(-counts, kind="stable")[: len(palette) - 1])
    for color, index in zip(palette, keep, strict=False):
        colors[index] = color
    return colors


def color_column(values: Any, categorical: bool | None = None,
                 palette: Any = None) -> ColorColumn:
    """Prepare ``values`` (array-like of shape (n,)) for colouring.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
    categorical : bool, optional
        Force the kind; by default :func:`is_categorical` decides.
    palette : None, str or sequence of colours, optional
        The colours of categories (see :func:`palette_colors`).

    Returns
    -------
    ColorColumn

    Examples
    --------
    >>> column = color_column(["b", "a", "b"])
    >>> column.categories, column.codes.tolist()
    (['a', 'b'], [1, 0, 1])
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"a colour column must be 1-D, got shape {values.shape}")
    if categorical is None:
        categorical = is_categorical(values)
    if not categorical:
        if values.dtype.kind not in "iufb":
            raise ValueError("a continuous colour column must be numeric")
        return ColorColumn("continuous", values=values.astype(np.float64))
    categories, codes = _unique_codes(values)
    counts = np.bincount(codes, minlength=len(categories)).astype(np.int64)
    colors = _assign_colors(counts, palette_colors(palette, len(categories)))
    return ColorColumn("categorical", codes=codes.astype(np.int64),
                       categories=[_category_name(c) for c in categories], counts=counts,
                       colors=colors)


def color_limits(values: np.ndarray, percentiles: tuple[float, float] | None = DEFAULT_PERCENTILES,
                 vmin: float | None = None, vmax: float | None = None) -> tuple[float, float]:
    """The ends of the colour scale of continuous ``values``.

    Parameters
    ----------
    values : ndarray
        NaN and infinite values are ignored.
    percentiles : (float, float) or None, default=(1, 99)
        The scale runs from the first to the second percentile of the finite values, so that a
        few outliers do not wash out the colours of the rest; None (or ``(0, 100)``): from the
        minimum to the maximum.
    vmin, vmax : float, optional
        Fixed ends; each given one wins over its percentile.

    Returns
    -------
    (float, float)
        ``lo < hi`` (a constant column gets ``(v - 0.5, v + 0.5)``).

    Examples
    --------
    >>> values = np.r_[np.arange(100.0), 1e6]
    >>> color_limits(values)
    (1.0, 99.0)
    >>> color_limits(values, percentiles=None)
    (0.0, 1000000.0)
    """
    if percentiles is None:
        percentiles = (0.0, 100.0)
    if (not isinstance(percentiles, Sequence) or len(percentiles) != 2
            or not 0 <= percentiles[0] < percentiles[1] <= 100):
        raise ValueError("percentiles must be two numbers 0 <= low < high <= 100, got "
                         f"{percentiles!r}")
    finite = values[np.isfinite(values)]
    lo, hi = ((float(v) for v in np.percentile(finite, percentiles)) if finite.size
              else (0.0, 1.0))
    lo = lo if vmin is None else float(vmin)
    hi = hi if vmax is None else float(vmax)
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
        raise ValueError(f"colour limits must be finite with vmin <= vmax, got ({lo}, {hi})")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi
