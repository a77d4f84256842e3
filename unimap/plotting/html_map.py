"""A standalone interactive HTML map of an embedding: one file, no server, no network.

:func:`save_html` writes a page that opens offline in any current browser. The points, the
colour columns and the hover columns are embedded compactly (base64 of little-endian
``Float32Array`` coordinates and numeric columns, ``Uint8``/``Uint16``/``Uint32`` category codes
with the category names once), and drawn by a small inlined script on a 2-D canvas: each frame
aggregates the points per pixel (mean colour, opacity rising with the count), so a million
points stay responsive without WebGL. Drag pans, the wheel zooms, hovering shows the nearest
point's id and columns (found through a uniform grid index), a drop-down switches the colour
column (categorical legend or continuous colour bar).

Nothing from the data reaches the page as markup: the data sit in a JSON block with ``<``,
``>`` and ``&`` escaped, and the script writes every name and value with ``textContent``.

For tests and automation the page sets ``window.unimapMap`` with ``ready``, ``n``,
``project(i)`` (the client coordinates of point ``i``), ``pick(clientX, clientY)``,
``setColor(name)``, ``tooltipId``, ``loadMs`` and ``renderMs``.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from unimap.io.atomic import atomic_path
from unimap.plotting.colors import (
    DEFAULT_COLOR,
    MISSING_COLOR,
    OTHER_COLOR,
    VIRIDIS_STOPS,
    color_column,
)

__all__ = ["save_html", "html_map"]

_MAX_HOVER_DEFAULT = 12


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def _code_array(codes: np.ndarray, n_categories: int) -> tuple[str, int]:
    for dtype, width in (("<u1", 1), ("<u2", 2), ("<u4", 4)):
        if n_categories <= np.iinfo(dtype).max + 1:
            return _b64(codes.astype(dtype)), width
    raise ValueError("too many categories")  # pragma: no cover - beyond uint32


def _columns_dict(columns: Any, n: int) -> dict[str, np.ndarray]:
    if columns is None:
        return {}
    if hasattr(columns, "columns") and hasattr(columns, "__getitem__"):  # a pandas DataFrame
        items = [(name, columns[name].to_numpy()) for name in columns.columns]
    elif isinstance(columns, Mapping):
        items = list(columns.items())
    else:
        raise TypeError("columns must be a mapping of name to values or a pandas DataFrame, "
                        f"got {type(columns).__name__}")
    out: dict[str, np.ndarray] = {}
    for name, values in items:
        name = str(name)
        if name in out:
            raise ValueError(f"column name {name!r} appears twice")
        values = np.asarray(values)
        if values.ndim != 1 or values.shape[0] != n:
            raise ValueError(f"column {name!r} has shape {values.shape}; expected ({n},) to "
                             "match the embedding")
        out[name] = values
    return out


def _encode_column(name: str, values: np.ndarray) -> dict[str, Any]:
    column = color_column(values)
    if column.kind == "continuous":
        finite = column.values[np.isfinite(column.values)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        return {"name": name, "kind": "num", "data": _b64(column.values.astype("<f4")),
                "min": lo, "max": hi}
    codes, width = _code_array(column.codes, len(column.categories))
    return {"name": name, "kind": "cat", "codes": codes, "width": width,
            "categories": column.categories, "colors": column.colors,
            "counts": column.counts.tolist()}


def _encode_ids(ids: Any, n: int) -> dict[str, Any] | None:
    if ids is None:
        return None
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"ids has shape {ids.shape}; expected ({n},)")
    if ids.dtype.kind in "iu" and (ids.size == 0 or (ids.min() >= -(2**31)
                                                     and ids.max() < 2**31)):
        return {"kind": "int", "data": _b64(ids.astype("<i4"))}
    names, codes = np.unique(ids.astype(str), return_inverse=True)
    data, width = _code_array(codes.reshape(-1), len(names))
    return {"kind": "str", "codes": data, "width": width, "names": names.tolist()}


def _json_for_script(data: Any) -> str:
    # ensure_ascii also escapes U+2028/U+2029; escaping < > & keeps "</script>" and "<!--"
    # from ever appearing inside the <script> element.
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def html_map(
    embedding: Any,
    labels: Any = None,
    columns: Any = None,
    ids: Any = None,
    color_by: str | None = None,
    hover: Sequence[str] | None = None,
    title: str = "unimap",
    id_name: str = "id",
) -> str:
    """The HTML text of the interactive map (see :func:`save_html`)."""
    embedding = np.asarray(embedding)
    if embedding.ndim != 2 or embedding.shape[1] < 2:
        raise ValueError(f"embedding must have shape (n, >= 2), got {embedding.shape}")
    if embedding.dtype.kind not in "iuf":
        raise ValueError(f"embedding must be numeric, got dtype {embedding.dtype}")
    xy = embedding[:, :2].astype(np.float32)
    if not np.isfinite(xy).all():
        raise ValueError("embedding contains NaN or infinite values (or values beyond float32)")
    n = xy.shape[0]
    if n == 0:
        raise ValueError("embedding has no points")
    cols = _columns_dict(columns, n)
    if labels is not None:
        if "label" in cols:
            raise ValueError("both labels and a column named 'label' were given")
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"labels has shape {labels.shape}; expected ({n},)")
        cols = {"label": labels, **cols}
    if color_by is not None and color_by not in cols:
        raise ValueError(f"color_by={color_by!r} is not a column; columns: {list(cols)}")
    if hover is None:
        hover = list(cols)[:_MAX_HOVER_DEFAULT]
    missing = [name for name in hover if name not in cols]
    if missing:
        raise ValueError(f"hover columns {missing} not found; columns: {list(cols)}")
    if color_by is None and cols:
        color_by = next(iter(cols))
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    data = {
        "n": n,
        "xy": _b64(xy.astype("<f4")),
        "bounds": [float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1])],
        "columns": [_encode_column(name, values) for name, values in cols.items()],
        "hover": list(hover),
        "colorBy": color_by,
        "ids": _encode_ids(ids, n),
        "idName": str(id_name),
        "viridis": list(VIRIDIS_STOPS),
        "defaultColor": DEFAULT_COLOR,
        "missingColor": MISSING_COLOR,
        "otherColor": OTHER_COLOR,
    }
    parts = {"TITLE": html.escape(str(title)), "DATA": _json_for_script(data),
             "SCRIPT": resources.files(__package__).joinpath("html_map.js").read_text("utf-8")}
    # one pass, so that nothing substituted (a title, say) is itself searched for slots
    return re.sub(r"\{\{(TITLE|SCRIPT|DATA)\}\}", lambda m: parts[m.group(1)], _PAGE)


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
        booleans and whole numbers with at most 30 values are categories (a legend; beyond 30
        categories the 29 most frequent keep a colour, the others are grey); other numbers are
        continuous (a colour bar).
    ids : array-like of shape (n_samples,), optional
        The id shown first in the tooltip; default: the row number.
    color_by : str, optional
        The column coloured at first (switchable in the page); default the first column.
    hover : sequence of str, optional
        The columns shown in the tooltip; default the first 12.
    title : str, default="unimap"
    id_name : str, default="id"
        How the id is labelled in the tooltip.

    Returns
    -------
    Path
    """
    path = Path(path)
    text = html_map(embedding, labels=labels, columns=columns, ids=ids, color_by=color_by,
                    hover=hover, title=title, id_name=id_name)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>
html, body { margin: 0; height: 100%; overflow: hidden; background: #fff;
  font: 13px/1.35 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; }
#unimap-bar { position: absolute; top: 0; left: 0; right: 0; height: 36px; display: flex;
  align-items: center; gap: 14px; padding: 0 12px; border-bottom: 1px solid #ddd;
  background: #fafafa; box-sizing: border-box; white-space: nowrap; }
#unimap-title { font-weight: 600; overflow: hidden; text-overflow: ellipsis; }
#unimap-status { color: #777; margin-left: auto; }
#unimap-canvas { position: absolute; top: 36px; left: 0; width: 100%;
  height: calc(100% - 36px); cursor: crosshair; touch-action: none; display: block; }
#unimap-canvas.dragging { cursor: grabbing; }
#unimap-legend { position: absolute; top: 46px; right: 10px; max-height: calc(100% - 66px);
  overflow-y: auto; background: rgba(255,255,255,0.9); border: 1px solid #ddd;
  border-radius: 4px; padding: 6px 8px; font-size: 12px; min-width: 90px; }
#unimap-legend:empty { display: none; }
.unimap-item { display: flex; align-items: center; gap: 6px; white-space: nowrap; }
.unimap-swatch { width: 10px; height: 10px; border-radius: 50%; flex: none; }
.unimap-gradient { width: 16px; height: 160px; border-radius: 2px; }
.unimap-scale { display: flex; gap: 6px; }
.unimap-ticks { display: flex; flex-direction: column; justify-content: space-between; }
#unimap-tooltip { position: fixed; pointer-events: none; background: rgba(255,255,255,0.96);
  border: 1px solid #999; border-radius: 4px; padding: 4px 7px; font-size: 12px;
  box-shadow: 0 1px 4px rgba(0,0,0,0.2); max-width: 360px; z-index: 10; }
#unimap-tooltip b { font-weight: 600; }
</style>
</head>
<body>
<div id="unimap-bar">
<span id="unimap-title">{{TITLE}}</span>
<label>colour by <select id="unimap-color"></select></label>
<button id="unimap-reset" type="button">reset view</button>
<span id="unimap-status">loading…</span>
</div>
<canvas id="unimap-canvas"></canvas>
<div id="unimap-legend"></div>
<div id="unimap-tooltip" role="tooltip" hidden></div>
<script type="application/json" id="unimap-data">{{DATA}}</script>
<script>
{{SCRIPT}}
</script>
</body>
</html>
"""
