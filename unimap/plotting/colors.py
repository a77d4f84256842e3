"""Colours shared by the static plots and the HTML map (no matplotlib needed here).

A column to colour by is *categorical* (strings, booleans, or whole numbers with at most
:data:`MAX_CATEGORIES` distinct values) or *continuous* (any other numbers). Up to ten categories
get :data:`TAB10`, more get :data:`CATEGORY_COLORS`; beyond its 30 colours the 29 most frequent
categories keep one and the rest share :data:`OTHER_COLOR`. Text categories sort naturally
("type 2" before "type 10"). Continuous values go through viridis (:data:`VIRIDIS_STOPS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

# 30 colours that stay apart on white: tab10 and its light tints (greys left out: grey means
# "other" or "missing"), then twelve darker or brighter ones.
CATEGORY_COLORS: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2",
    "#dbdb8d", "#9edae5", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#e7ba52",
    "#006d5b", "#000000", "#ff1f5b", "#00cd6c", "#6b6ecf", "#ad494a",
)
MAX_CATEGORIES = len(CATEGORY_COLORS)
# up to ten categories: matplotlib's tab10 as it is (no "other" grey can occur then).
TAB10: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
)
OTHER_COLOR = "#b0b0b0"
MISSING_COLOR = "#d9d9d9"
DEFAULT_COLOR = "#3465a4"
# viridis at 17 equally spaced positions (matplotlib's values).
VIRIDIS_STOPS: tuple[str, ...] = (
    "#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e",
    "#21918c", "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219",
    "#fde725",
)


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
        Categorical only: the colour of each category (the ``MAX_CATEGORIES - 1`` most frequent
        keep their own when there are more categories than colours; the rest get OTHER_COLOR).
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


def color_column(values: Any, categorical: bool | None = None) -> ColorColumn:
    """Prepare ``values`` (array-like of shape (n,)) for colouring.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
    categorical : bool, optional
        Force the kind; by default :func:`is_categorical` decides.

    Returns
    -------
    ColorColumn
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
    colors = [OTHER_COLOR] * len(categories)
    if len(categories) <= len(TAB10):
        colors = list(TAB10[: len(categories)])
    elif len(categories) <= MAX_CATEGORIES:
        colors = list(CATEGORY_COLORS[: len(categories)])
    else:  # the most frequent keep a colour (in sorted order of category), the rest are "other"
        keep = np.sort(np.argsort(-counts, kind="stable")[: MAX_CATEGORIES - 1])
        for color, index in zip(CATEGORY_COLORS, keep, strict=False):
            colors[index] = color
    return ColorColumn("categorical", codes=codes.astype(np.int64),
                       categories=[_category_name(c) for c in categories], counts=counts,
                       colors=colors)
