"""A standalone interactive HTML map of an embedding: one file, no server, no network.

:func:`save_html` writes a page that opens offline in any current browser;
:func:`save_linked_html` writes two embeddings of the same points side by side, the second
aligned to the first, linked so that hovering or selecting in one shows the same points in the
other. The points and columns are embedded compactly (:mod:`unimap.plotting._html_data`) and
drawn by a small inlined script on 2-D canvases (:mod:`unimap.plotting._html_page`): each frame
aggregates the points per pixel as round, anti-aliased dots (mean colour, opacity rising with
the count), so a million points stay responsive without WebGL.

In the page: drag pans, the wheel zooms, hovering shows the nearest point's id and columns; a
drop-down switches the colour column; the legend sits beside the map and a click on a category
hides or shows it; the search box highlights the points whose id or category matches; box and
lasso selection (buttons, or shift+drag and alt+drag) select points whose ids can be
downloaded or copied as CSV or JSON.

For tests and automation the page sets ``window.unimapMap`` with ``ready``, ``n``, ``views``,
``project(i, view)`` (the client coordinates of point ``i``), ``pick(clientX, clientY)``,
``setColor(name)``, ``setMode("pan" | "box" | "lasso")``, ``hidden()``, ``search(text)``,
``selection()``, ``exportSelection("csv" | "json")``, ``hovered()``, ``colorOf(i, view)``,
``tooltipId``, ``loadMs`` and ``renderMs``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from unimap.io.atomic import atomic_path
from unimap.plotting._html_data import (
    check_xy,
    columns_dict,
    encode_column,
    encode_ids,
    encode_view,
    page_constants,
)
from unimap.plotting._html_page import render_page
from unimap.plotting.align import procrustes_align
from unimap.plotting.colors import DEFAULT_PERCENTILES
from unimap.plotting.trust import TRUST_COLUMN, neighborhood_preservation

__all__ = ["save_html", "html_map", "save_linked_html", "linked_html_map"]

_MAX_HOVER_DEFAULT = 12


def _page_data(views: list[tuple[str, np.ndarray]], labels: Any, columns: Any, ids: Any,
               color_by: str | None, hover: Sequence[str] | None, id_name: str, palette: Any,
               percentiles: Any, X: Any, n_neighbors: int, metric: str,
               debug: bool, names_on_map: bool = True) -> dict[str, Any]:
    n = views[0][1].shape[0]
    cols = columns_dict(columns, n)
    if labels is not None:
        if "label" in cols:
            raise ValueError("both labels and a column named 'label' were given")
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"labels has shape {labels.shape}; expected ({n},)")
        cols = {"label": labels, **cols}
    encoded = [encode_column(name, values, palette, percentiles)
               for name, values in cols.items()]
    if X is not None:
        if TRUST_COLUMN in cols:
            raise ValueError(f"a column is named {TRUST_COLUMN!r}, the name of the layer "
                             "computed from X: rename it")
        scores = [neighborhood_preservation(X, xy, n_neighbors, metric=metric)
                  for _, xy in views]
        cols[TRUST_COLUMN] = scores[0]
        encoded.append(encode_column(
            TRUST_COLUMN, scores, limits=(0.0, 1.0),
            title=f"trust: share of the {n_neighbors} nearest neighbours in the data kept"))
    if color_by is not None and color_by not in cols:
        raise ValueError(f"color_by={color_by!r} is not a column; columns: {list(cols)}")
    if hover is None:
        hover = list(cols)[:_MAX_HOVER_DEFAULT]
    missing = [name for name in hover if name not in cols]
    if missing:
        raise ValueError(f"hover columns {missing} not found; columns: {list(cols)}")
    if color_by is None and cols:
        color_by = next(iter(cols))
    first = encode_view(*views[0])
    # the first view's points at the top level, where the page kept them before it could hold
    # two views (readers of the data block rely on "xy" and "bounds" there)
    return {"n": n, "xy": first.pop("xy"), "bounds": first.pop("bounds"),
            "views": [first] + [encode_view(name, xy) for name, xy in views[1:]],
            "columns": encoded, "hover": list(hover), "colorBy": color_by,
            "ids": encode_ids(ids, n), "idName": str(id_name), "debug": bool(debug),
            "namesOnMap": bool(names_on_map),
            **page_constants()}


def html_map(
    embedding: Any,
    labels: Any = None,
    columns: Any = None,
    ids: Any = None,
    color_by: str | None = None,
    hover: Sequence[str] | None = None,
    title: str = "unimap",
    id_name: str = "id",
    *,
    palette: Any = None,
    percentiles: tuple[float, float] | None = DEFAULT_PERCENTILES,
    X: Any = None,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    debug: bool = False,
    names_on_map: bool = True,
) -> str:
    """The HTML text of the interactive map (see :func:`save_html` for the parameters).

    Examples
    --------
    >>> import numpy as np
    >>> text = html_map(np.random.default_rng(0).normal(size=(100, 2)), labels=np.arange(100) % 3)
    >>> text.startswith("<!DOCTYPE html>")
    True
    """
    xy = check_xy(embedding)
    data = _page_data([("", xy)], labels, columns, ids, color_by, hover, id_name, palette,
                      percentiles, X, n_neighbors, metric, debug, names_on_map)
    return render_page(title, data)


def save_html(
    path: str | os.PathLike,
    embedding: Any,
    labels: Any = None,
    columns: Any = None,
    ids: Any = None,
    color_by: str | None = None,
    hover: Sequence[str] | None = None,
    title: str = "unimap",
    id_name: str = "id",
    *,
    palette: Any = None,
    percentiles: tuple[float, float] | None = DEFAULT_PERCENTILES,
    X: Any = None,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    debug: bool = False,
    names_on_map: bool = True,
) -> Path:
    """Write a self-contained interactive map of ``embedding`` to ``path``, atomically.

    Parameters
    ----------
    path : str or path-like
        The HTML file to write (nothing is written if preparing it fails).
    embedding : array-like of shape (n_samples, >= 2)
        The first two columns are drawn.
    labels : array-like of shape (n_samples,), optional
        Shorthand for a column named ``"label"`` (listed first).
    columns : mapping of str to array-like, or pandas DataFrame, optional
        Columns to colour by and to show on hover, row for row with the embedding. Strings,
        booleans and whole numbers with at most 30 values are categories (a legend whose
        entries hide and show them); other numbers are continuous (a colour bar).
    ids : array-like of shape (n_samples,), optional
        The id shown first in the tooltip, found by the search box and exported with a
        selection; default: the row number.
    color_by : str, optional
        The column coloured at first (switchable in the page); default the first column.
    hover : sequence of str, optional
        The columns shown in the tooltip; default the first 12.
    title : str, default="unimap"
    id_name : str, default="id"
        How the id is labelled in the tooltip and in the exported CSV.
    palette : str or sequence of colours, optional
        Colours of categories, as for :func:`unimap.plotting.scatter`.
    percentiles : (float, float) or None, default=(1, 99)
        The colour scale of a continuous column spans these percentiles of its values (the
        legend marks clipped ends with ≤ and ≥); None: minimum to maximum.
    X : array-like of shape (n_samples, n_features), optional
        The data the embedding was made from. When given, a colour column ``"trust"`` is added:
        for each point the share of its ``n_neighbors`` nearest neighbours in ``X`` that are
        also among its nearest on the map
        (:func:`unimap.plotting.trust.neighborhood_preservation`), on a fixed 0-1 scale.
    n_neighbors : int, default=15
        ``k`` of the trust layer.
    metric : str, default="euclidean"
        The distance in ``X`` for the trust layer.
    debug : bool, default=False
        Show the frame time in the page's footer.
    names_on_map : bool, default=True
        Write the names of the coloured column's categories on the map (a checkbox in the
        page turns them off and on): each at the member of its category nearest the median
        of its points, dark on a white halo, the largest categories first; a name that would
        overlap one already written is left out until a zoom makes room for it.

    Returns
    -------
    Path

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.plotting import save_html
    >>> X = np.random.default_rng(0).normal(size=(500, 20))
    >>> save_html(tmp / "map.html", X[:, :2], labels=np.arange(500) % 7,  # doctest: +SKIP
    ...           ids=[f"cell-{i}" for i in range(500)], X=X, color_by="trust").name
    'map.html'
    """
    path = Path(path)
    text = html_map(embedding, labels=labels, columns=columns, ids=ids, color_by=color_by,
                    hover=hover, title=title, id_name=id_name, palette=palette,
                    percentiles=percentiles, X=X, n_neighbors=n_neighbors, metric=metric,
                    debug=debug, names_on_map=names_on_map)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def linked_html_map(
    embeddings: Mapping[str, Any],
    labels: Any = None,
    columns: Any = None,
    ids: Any = None,
    color_by: str | None = None,
    hover: Sequence[str] | None = None,
    title: str = "unimap",
    id_name: str = "id",
    *,
    align: bool = True,
    palette: Any = None,
    percentiles: tuple[float, float] | None = DEFAULT_PERCENTILES,
    X: Any = None,
    n_neighbors: int = 15,
    metric: str = "euclidean",
    debug: bool = False,
    names_on_map: bool = True,
) -> str:
    """The HTML text of two linked maps side by side (see :func:`save_linked_html`).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).normal(size=(100, 2))
    >>> text = linked_html_map({"seed 0": a, "seed 1": -a})
    >>> "seed 1 (aligned)" in text  # the second map is aligned to the first
    True
    """
    if not isinstance(embeddings, Mapping) or len(embeddings) != 2:
        raise ValueError("embeddings must be a mapping of two names to embeddings, got "
                         f"{type(embeddings).__name__} of {len(embeddings)}")
    (name_a, first), (name_b, second) = embeddings.items()
    xy_a = check_xy(first, f"embedding {name_a!r}")
    xy_b = check_xy(second, f"embedding {name_b!r}")
    if xy_a.shape != xy_b.shape:
        raise ValueError(f"the embeddings must be of the same points: {name_a!r} has "
                         f"{xy_a.shape[0]} rows, {name_b!r} has {xy_b.shape[0]}")
    if align:
        xy_b = procrustes_align(xy_a, xy_b).astype(np.float32)
        name_b = f"{name_b} (aligned)"
    data = _page_data([(str(name_a), xy_a), (str(name_b), xy_b)], labels, columns, ids,
                      color_by, hover, id_name, palette, percentiles, X, n_neighbors, metric,
                      debug, names_on_map)
    return render_page(title, data)


def save_linked_html(
    path: str | os.PathLike,
    embeddings: Mapping[str, Any],
    labels: Any = None,
    columns: Any = None,
    ids: Any = None,
    color_by: str | None = None,
    hover: Sequence[str] | None = None,
    title: str = "unimap",
    id_name: str = "id",
    **kwargs: Any,
) -> Path:
    """Write two embeddings of the same points side by side in one offline HTML file.

    The two maps share their colour column, legend, search and selection: hovering a point in
    one rings it in the other, and a box, lasso or search selection shows in both. Before
    drawing, the second embedding is rotated or reflected, scaled and shifted onto the first
    (:func:`unimap.plotting.align.procrustes_align`), so that the same region sits in the same
    place; its shape is unchanged.

    Parameters
    ----------
    path : str or path-like
        The HTML file to write, atomically.
    embeddings : mapping of two str to array-like of shape (n_samples, >= 2)
        Panel name → embedding (two methods, two seeds, ...), row for row the same points.
    labels, columns, ids, color_by, hover, title, id_name
        As for :func:`save_html`.
    **kwargs
        ``align`` (default True: Procrustes alignment of the second map), and ``palette``,
        ``percentiles``, ``X``, ``n_neighbors``, ``metric``, ``debug``, ``names_on_map`` as for
        :func:`save_html`; with ``X``, each map gets its own trust values.

    Returns
    -------
    Path

    Examples
    --------
    >>> import numpy as np
    >>> from unimap import PCA, UMAP
    >>> from unimap.plotting import save_linked_html
    >>> X = np.random.default_rng(0).normal(size=(300, 10))
    >>> maps = {"PCA": PCA().fit_transform(X), "UMAP": UMAP().fit_transform(X)}  # doctest: +SKIP
    >>> save_linked_html(tmp / "pair.html", maps, X=X).name  # doctest: +SKIP
    'pair.html'
    """
    path = Path(path)
    text = linked_html_map(embeddings, labels=labels, columns=columns, ids=ids,
                           color_by=color_by, hover=hover, title=title, id_name=id_name,
                           **kwargs)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
