"""The data block of the HTML map: points, colour columns and ids encoded compactly (base64 of
little-endian ``Float32Array`` coordinates and numeric columns, ``Uint8``/``Uint16``/``Uint32``
category codes with the category names once), and JSON that is safe inside ``<script>``."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from unimap.plotting.colors import (
    DEFAULT_COLOR,
    MISSING_COLOR,
    OTHER_COLOR,
    VIRIDIS_STOPS,
    color_column,
    color_limits,
)


def b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def code_array(codes: np.ndarray, n_categories: int) -> tuple[str, int]:
    for dtype, width in (("<u1", 1), ("<u2", 2), ("<u4", 4)):
        if n_categories <= np.iinfo(dtype).max + 1:
            return b64(codes.astype(dtype)), width
    raise ValueError("too many categories")  # pragma: no cover - beyond uint32


def check_xy(embedding: Any, name: str = "embedding") -> np.ndarray:
    """The drawn two columns as float32, checked."""
    embedding = np.asarray(embedding)
    if embedding.ndim != 2 or embedding.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, >= 2), got {embedding.shape}")
    if embedding.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be numeric, got dtype {embedding.dtype}")
    xy = embedding[:, :2].astype(np.float32)
    if not np.isfinite(xy).all():
        raise ValueError(f"{name} contains NaN or infinite values (or values beyond float32)")
    if xy.shape[0] == 0:
        raise ValueError(f"{name} has no points")
    return xy


def encode_view(name: str, xy: np.ndarray) -> dict[str, Any]:
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    return {"name": name, "xy": b64(xy.astype("<f4")),
            "bounds": [float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1])]}


def columns_dict(columns: Any, n: int) -> dict[str, np.ndarray]:
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


def encode_column(name: str, values: np.ndarray | Sequence[np.ndarray], palette: Any = None,
                  percentiles: Any = (1.0, 99.0), limits: tuple[float, float] | None = None,
                  title: str | None = None) -> dict[str, Any]:
    """One colour column. ``values`` may be a list of arrays, one per view (a continuous
    column whose values differ between the views, such as each view's trust)."""
    per_view = values if isinstance(values, list) else [values]
    column = color_column(per_view[0], None if len(per_view) == 1 else False, palette)
    if column.kind == "continuous":
        arrays = [np.asarray(v, dtype=np.float64) for v in per_view]
        every = np.concatenate(arrays)
        lo, hi = limits if limits is not None else color_limits(every, percentiles)
        finite = every[np.isfinite(every)]
        return {"name": name, "kind": "num", "title": title or name,
                "data": [b64(v.astype("<f4")) for v in arrays], "min": lo, "max": hi,
                "clipLo": bool(finite.size and finite.min() < lo),
                "clipHi": bool(finite.size and finite.max() > hi)}
    codes, width = code_array(column.codes, len(column.categories))
    return {"name": name, "kind": "cat", "title": title or name, "codes": codes,
            "width": width, "categories": column.categories, "colors": column.colors,
            "counts": column.counts.tolist()}


def encode_ids(ids: Any, n: int) -> dict[str, Any] | None:
    if ids is None:
        return None
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"ids has shape {ids.shape}; expected ({n},)")
    if ids.dtype.kind in "iu" and (ids.size == 0 or (ids.min() >= -(2**31)
                                                     and ids.max() < 2**31)):
        return {"kind": "int", "data": b64(ids.astype("<i4"))}
    names, codes = np.unique(ids.astype(str), return_inverse=True)
    data, width = code_array(codes.reshape(-1), len(names))
    return {"kind": "str", "codes": data, "width": width, "names": names.tolist()}


def page_constants() -> dict[str, Any]:
    return {"viridis": list(VIRIDIS_STOPS), "defaultColor": DEFAULT_COLOR,
            "missingColor": MISSING_COLOR, "otherColor": OTHER_COLOR}


def json_for_script(data: Any) -> str:
    # ensure_ascii also escapes U+2028/U+2029; escaping < > & keeps "</script>" and "<!--"
    # from ever appearing inside the <script> element.
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
