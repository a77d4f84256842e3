"""Plots of embeddings: static figures (matplotlib, ``pip install 'unimap[plot]'``, imported
only when drawing) and a self-contained interactive HTML map (:func:`save_html`, no extra
dependency).

Static plots read well at any size. Up to :data:`DENSITY_THRESHOLD` points they are scatter plots
whose marker size and opacity shrink with the number of points; above it the points are
aggregated per pixel (a 2-D histogram; the colour of a pixel is the mean colour of its points,
its opacity grows with the log of their number) and drawn as one image, so the drawing cost
follows the pixels rather than the points and a PDF or SVG stays small (measured:
benchmarks/results/architecture_notes.md). Points layers are always rasterized in vector
formats. The drawing lives in :mod:`unimap.plotting._render`, legends and labels in
:mod:`unimap.plotting._annotate`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from unimap.io.atomic import atomic_path
from unimap.plotting._annotate import (
    LEGEND_LOCS,
    add_category_legend,
    add_colorbar,
    add_labels_on_data,
    set_axis_labels,
)
from unimap.plotting._render import (
    as_xy,
    density_image,
    draw_density,
    draw_points,
    point_alpha,
)
from unimap.plotting._render import point_size as default_point_size
from unimap.plotting.colors import DEFAULT_PERCENTILES, color_column, color_limits
from unimap.plotting.html_map import html_map, save_html
from unimap.plotting.trust import neighborhood_preservation

__all__ = ["scatter", "save_scatter", "save_comparison", "plot_trust", "save_html", "html_map",
           "density_image", "DENSITY_THRESHOLD", "STATIC_FORMATS"]

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
    palette: Any = None,
    legend_loc: str = "right margin",
    legend_title: str | None = None,
    basis: str | None = "Dim",
    percentiles: tuple[float, float] | None = DEFAULT_PERCENTILES,
    vmin: float | None = None,
    vmax: float | None = None,
) -> Any:
    """Plot a 2-D embedding (its first two columns), coloured by ``labels``.

    Parameters
    ----------
    embedding : ndarray of shape (n_samples, >= 2)
    labels : array-like of shape (n_samples,), optional
        What to colour by. Categories (strings, booleans, or whole numbers with at most 30
        distinct values) get ``palette`` and a legend; other numbers get the colour map
        ``cmap`` and a colour bar (NaN drawn light grey). A pandas Series lends its name to
        the legend's title.
    ax : matplotlib Axes, optional
        Drawn into a new 7 × 7 inch figure when omitted.
    title : str, optional
    point_size : float, optional
        Marker area of the scatter rendering; default scales with ``1/sqrt(n_samples)``.
    legend : bool, default=True
        Draw the legend (or colour bar); False is ``legend_loc="none"``.
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
        Title of the colour bar or legend when ``legend_title`` is not given.
    palette : str or sequence of colours, optional
        Colours of the categories: a matplotlib colour map name (``"tab20"``, ``"Set1"``, or a
        continuous one such as ``"viridis"``, sampled evenly) or a list of colours, given in
        category order. Default: tab10 up to ten categories, else a palette of 102 colours
        that stay apart (:data:`unimap.plotting.colors.CATEGORY_PALETTE`). Beyond the palette's
        length the most frequent categories keep a colour and the rest are grey ("other").
    legend_loc : {"right margin", "on data", "none"}, default="right margin"
        Where categories are named: a legend right of the axes, or each category's name on the
        map at the median of its points (names nudged apart so that none overlap; as scanpy's
        ``legend_loc="on data"``), or nowhere. A colour bar is drawn unless "none".
    legend_title : str, optional
        Title of the legend or colour bar; default ``colorbar_label``, else the name of a
        pandas Series ``labels``.
    basis : str or None, default="Dim"
        Axis labels ``"{basis} 1"`` and ``"{basis} 2"`` (``"UMAP"`` gives "UMAP 1" and
        "UMAP 2"); None or "" for none.
    percentiles : (float, float) or None, default=(1, 99)
        Continuous labels: the colour scale spans these percentiles of the finite values, so
        that a few outliers do not wash out the rest (values beyond take the end colours; the
        colour bar shows arrows); None: from the minimum to the maximum.
    vmin, vmax : float, optional
        Fixed ends of the colour scale, each winning over its percentile.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.plotting import scatter
    >>> rng = np.random.default_rng(0)
    >>> embedding = rng.normal(size=(600, 2)) + np.repeat(rng.normal(0, 8, (40, 2)), 15, 0)
    >>> clusters = np.repeat([f"cluster {i}" for i in range(40)], 15)
    >>> ax = scatter(embedding, clusters, legend_loc="on data", basis="UMAP")
    >>> ax.get_xlabel(), len(ax.texts)
    ('UMAP 1', 40)
    >>> ax = scatter(embedding, embedding[:, 0] ** 3, percentiles=(5, 95), legend_title="x³")
    """
    plt = _pyplot()
    x, y = as_xy(embedding)
    n = len(x)
    if render not in _RENDERS:
        raise ValueError(f"render must be one of {_RENDERS}, got {render!r}")
    if legend_loc not in LEGEND_LOCS:
        raise ValueError(f"legend_loc must be one of {LEGEND_LOCS}, got {legend_loc!r}")
    column = None
    if legend_title is None:
        legend_title = colorbar_label or (None if labels is None else getattr(labels, "name",
                                                                               None))
    if labels is not None:
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"labels has shape {labels.shape} for {n} points; expected ({n},)")
        column = color_column(labels, categorical, palette)
    limits = None
    if column is not None and column.kind == "continuous":
        limits = color_limits(column.values, percentiles, vmin, vmax)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 7))
    colormap = plt.get_cmap(cmap)
    if render == "density" or (render == "auto" and n > DENSITY_THRESHOLD):
        draw_density(ax, x, y, column, colormap, limits)
    else:
        size = default_point_size(n) if point_size is None else point_size
        draw_points(ax, x, y, column, size, point_alpha(n) if alpha is None else alpha,
                    colormap, limits)
        ax.set_aspect("equal", adjustable="datalim")
    set_axis_labels(ax, basis)
    if title:
        ax.set_title(title)
    if legend and column is not None and legend_loc != "none":
        if column.kind == "continuous":
            add_colorbar(ax, column, colormap, limits, legend_title)
        elif legend_loc == "on data":
            add_labels_on_data(ax, x, y, column)
        else:
            add_category_legend(ax, column, legend_title)
    return ax


def plot_trust(
    embedding: np.ndarray,
    X: Any = None,
    *,
    scores: Any = None,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    ax: Any = None,
    cmap: str = "viridis",
    **kwargs: Any,
) -> Any:
    """Colour each point of ``embedding`` by how much of its data neighbourhood it keeps.

    The score of a point is the fraction of its ``n_neighbors`` nearest neighbours in ``X``
    that are also among its nearest in the drawn two columns
    (:func:`unimap.plotting.trust.neighborhood_preservation`); dark regions are where the map
    tears neighbourhoods apart or brings strangers together.

    Parameters
    ----------
    embedding : ndarray of shape (n_samples, >= 2)
    X : array-like of shape (n_samples, n_features), optional
        The data the embedding was made from; needed unless ``scores`` are given.
    scores : array-like of shape (n_samples,), optional
        Scores computed before (skips the neighbour search).
    n_neighbors : int, default=15
    metric : str, default="euclidean"
        The data's distance.
    ax : matplotlib Axes, optional
    cmap : str, default="viridis"
        The same scale as the HTML map's trust layer.
    **kwargs
        Passed on to :func:`scatter` (``title``, ``render``, ``basis``, ...). The scale runs
        from 0 to 1 unless ``vmin``/``vmax`` say otherwise.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.plotting import plot_trust
    >>> X = np.random.default_rng(0).normal(size=(300, 8))
    >>> ax = plot_trust(X[:, :2], X, n_neighbors=10, basis="PCA")
    >>> ax.figure.axes[-1].get_ylabel()
    'trust: share of 10 nearest neighbours kept'
    """
    if scores is None:
        if X is None:
            raise ValueError("plot_trust needs the data X (or scores computed before)")
        scores = neighborhood_preservation(X, as_xy_array(embedding), n_neighbors,
                                           metric=metric)
    kwargs.setdefault("vmin", 0.0)
    kwargs.setdefault("vmax", 1.0)
    kwargs.setdefault("legend_title", f"trust: share of {n_neighbors} nearest neighbours kept")
    return scatter(embedding, np.asarray(scores, dtype=np.float64), ax=ax, categorical=False,
                   cmap=cmap, **kwargs)


def as_xy_array(embedding: Any) -> np.ndarray:
    """The two drawn columns of ``embedding`` as an (n, 2) float64 array, checked."""
    return np.column_stack(as_xy(embedding))


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
        Passed on to :func:`scatter` (``render``, ``categorical``, ``palette``,
        ``legend_loc``, ``basis``, ``percentiles``, ...).

    Returns
    -------
    Path

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.plotting import save_scatter
    >>> embedding = np.random.default_rng(0).normal(size=(100, 2))
    >>> save_scatter(tmp / "map.png", embedding, np.arange(100) % 3,   # doctest: +SKIP
    ...              legend_loc="on data", basis="UMAP").name
    'map.png'
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
        Colours every panel; the legend or colour bar is drawn beside the last one (names on
        the data, with ``legend_loc="on data"``, in every panel).
    dpi : int, default=120
    panel_size : float, default=4.5
        Width and height of one panel in inches.
    **kwargs
        Passed on to :func:`scatter`.

    Returns
    -------
    Path

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.plotting import save_comparison
    >>> a = np.random.default_rng(0).normal(size=(100, 2))
    >>> save_comparison(tmp / "cmp.png", {"seed 0": a, "flipped": -a},  # doctest: +SKIP
    ...                 np.arange(100) % 4, palette="Set1").name
    'cmp.png'
    """
    plt = _pyplot()
    path = Path(path)
    fmt = _check_static_path(path)
    if not embeddings:
        raise ValueError("no embeddings to draw")
    count = len(embeddings)
    fig, axes = plt.subplots(1, count, figsize=(panel_size * count, panel_size), dpi=dpi,
                             squeeze=False)
    on_data = kwargs.get("legend_loc") == "on data"
    try:
        for i, (ax, (name, embedding)) in enumerate(zip(axes[0], embeddings.items(),
                                                        strict=True)):
            scatter(embedding, labels, ax=ax, title=name,
                    legend=on_data or i == count - 1, **kwargs)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=fmt, bbox_inches="tight")
    finally:
        plt.close(fig)
    return path
