"""Shared pieces of :mod:`unimap.analysis`: input checks, the point sample, distances, bins,
the short repr of the results and the matplotlib import."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np

from unimap.metrics import common as _metrics_common
from unimap.metrics.checks import check_pair as check_metric_pair
from unimap.metrics.common import prepare_rows
from unimap.runtime.validation import check_int

__all__ = ["check_pair", "sample_points", "sample_pair_distances", "rows_per_block",
           "RowOrder", "binned_mean", "ShortRepr", "pyplot", "new_axes", "point_size"]

_PDIST_METRICS = {"euclidean": "euclidean", "manhattan": "cityblock"}


def check_pair(X: Any, embedding: Any, metric: str, min_samples: int = 1):
    """The data and its embedding, validated row for row (see :mod:`unimap.metrics`)."""
    return check_metric_pair(X, embedding, metric, min_samples=min_samples)


def sample_points(n: int, n_samples: Any, rng: np.random.Generator, low: int = 1) -> np.ndarray:
    """Sorted ids of ``min(n, n_samples)`` distinct points drawn uniformly (all when ``n`` is
    not larger than ``n_samples``)."""
    m = check_int(n_samples, "n_samples", low)
    if n <= m:
        return np.arange(n)
    return np.sort(rng.choice(n, size=m, replace=False))


def _within_distances(A: np.ndarray, metric: str) -> np.ndarray:
    """Condensed (``pdist`` order) ``metric`` distances between the rows of ``A``, float64."""
    from scipy.spatial.distance import pdist

    if metric in _PDIST_METRICS:
        return pdist(np.asarray(A, dtype=np.float64), metric=_PDIST_METRICS[metric])
    P = prepare_rows(A, metric)  # cosine, correlation: 1 - cosine of (centred) unit rows
    rows, cols = np.triu_indices(P.shape[0], 1)
    return 1.0 - (P @ P.T)[rows, cols]


def sample_pair_distances(X: np.ndarray, embedding: np.ndarray, ids: np.ndarray, metric: str):
    """Every pair of the sampled points, sorted by increasing input-space distance.

    Returns ``(pairs, high, low)``: point ids of shape ``(P, 2)`` and the ``metric`` distances
    in the input space and euclidean distances in the embedding, both of shape ``(P,)`` and
    float64, ``P = m (m - 1) / 2`` for ``m`` sampled points. Ties keep ``pdist`` order.
    """
    rows, cols = np.triu_indices(ids.shape[0], 1)
    if metric == "precomputed":
        high = np.asarray(X[ids[rows], ids[cols]], dtype=np.float64)
    else:
        high = _within_distances(X[ids], metric)
    low = _within_distances(embedding[ids], "euclidean")
    order = np.argsort(high, kind="stable")
    pairs = np.stack([ids[rows[order]], ids[cols[order]]], axis=1)
    return pairs, high[order], low[order]


def rows_per_block(n: int, arrays: int = 4) -> int:
    """Rows of ``n`` float64 distances that fit ``arrays`` times in the metrics' block size."""
    return max(1, _metrics_common.BLOCK_BYTES // (8 * arrays * max(n, 1)))


class RowOrder:
    """Values that order the points by their ``metric`` distance from chosen points.

    ``RowOrder(data, metric)(rows)`` has shape ``(len(rows), n)``, float64, and increases with
    the distance from ``data[rows[i]]`` to ``data[j]``: squared euclidean distances (of the
    centred data, which keeps BLAS's ``|a|² + |b|² - 2 a·b`` accurate; float32 data is
    multiplied in float32), ``1 - cosine`` of (centred) unit rows for cosine and
    correlation, manhattan distances, or the rows of a precomputed matrix. Holds one
    prepared copy of ``data``.
    """

    def __init__(self, data: np.ndarray, metric: str) -> None:
        self.metric = metric
        self.sq_norms = None
        if metric in ("cosine", "correlation"):
            self.data = prepare_rows(data, metric)
        elif metric == "euclidean":
            self.data = data - data.mean(axis=0, dtype=np.float64).astype(data.dtype)
            self.sq_norms = np.einsum("ij,ij->i", self.data, self.data, dtype=np.float64)
        else:
            self.data = data

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        if self.metric == "precomputed":
            return np.array(self.data[rows], dtype=np.float64)
        if self.metric == "manhattan":
            from scipy.spatial.distance import cdist

            return cdist(self.data[rows], self.data, metric="cityblock")
        out = np.asarray(self.data[rows] @ self.data.T, dtype=np.float64)
        if self.metric == "euclidean":
            out *= -2.0
            out += self.sq_norms[rows, None]
            out += self.sq_norms[None, :]
            return out
        return np.subtract(1.0, out, out=out)


def binned_mean(values: np.ndarray, n_bins: Any) -> tuple[np.ndarray, np.ndarray]:
    """Mean position and mean value of ``n_bins`` consecutive, (almost) equal-count bins.

    Returns ``(positions, means)``, each of shape ``(min(n_bins, len(values)),)``: the running
    average drawn over the scatter of every analysis.
    """
    n_bins = check_int(n_bins, "n_bins", 1)
    size = values.shape[0]
    bins = min(n_bins, size)
    if bins == 0:
        return np.empty(0), np.empty(0)
    starts = (np.arange(bins) * size) // bins
    counts = np.diff(np.append(starts, size))
    positions = np.add.reduceat(np.arange(size, dtype=np.float64), starts) / counts
    means = np.add.reduceat(np.asarray(values, dtype=np.float64), starts) / counts
    return positions, means


class ShortRepr:
    """A few lines for the repr of a result dataclass (declared with ``repr=False``).

    A result holds arrays of every sampled pair (millions of numbers): the default dataclass
    repr prints them all, tens of kilobytes in a notebook. This one shows the numbers by
    value, the arrays by shape and nested results by their numbers; the data stay in the
    attributes.
    """

    def __repr__(self) -> str:
        scalars, arrays, nested = self._summary_parts()
        head = f"{type(self).__name__}({', '.join(scalars)})"
        lines = [head] + [f"  {name}: {text}" for name, text in nested]
        if arrays:
            lines += _wrap_items("  arrays: ", arrays)
        elif nested:
            lines.append(f"  (arrays by attribute, e.g. .{nested[0][0]}."
                         f"{fields(getattr(self, nested[0][0]))[0].name})")
        return "\n".join(lines)

    def _summary_parts(self) -> tuple[list[str], list[str], list[tuple[str, str]]]:
        """``(name=value texts, name shape texts, (name, one-line summary) of nested results)``."""
        scalars: list[str] = []
        arrays: list[str] = []
        nested: list[tuple[str, str]] = []
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, ShortRepr):
                inner, inner_arrays, _ = value._summary_parts()
                parts = [", ".join(inner)] if inner else []
                parts += inner_arrays[:1]  # its sample's size
                nested.append((field.name, f"{type(value).__name__}({'; '.join(parts)})"))
            elif isinstance(value, np.ndarray):
                arrays.append(f"{field.name} {_shape_text(value.shape)}")
            elif isinstance(value, dict):
                shapes = {_shape_text(np.shape(v)) for v in value.values()}
                shape = shapes.pop() if len(shapes) == 1 else "various shapes"
                arrays.append(f"{field.name} {{{', '.join(map(str, value))}}} of {shape}")
            else:
                scalars.append(f"{field.name}={_value_text(value)}")
        return scalars, arrays, nested


def _wrap_items(first: str, items: list[str], width: int = 88) -> list[str]:
    """``items`` joined by commas after ``first``, in lines of at most ``width`` characters
    (an item is never split)."""
    lines, line = [], first
    for i, item in enumerate(items):
        text = item + ("," if i < len(items) - 1 else "")
        if len(line) + len(text) > width and line.strip():
            lines.append(line.rstrip())
            line = "    "
        line += text + " "
    return lines + [line.rstrip()]


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _value_text(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def pyplot():
    """``matplotlib.pyplot``, imported on first use (matplotlib is an optional extra).

    The backend is left as the user (or matplotlib's automatic choice) set it, so the figures
    show in notebooks as usual.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("plotting needs matplotlib: pip install 'unimap[plot]'") from exc
    return plt


def new_axes(ax: Any, figsize: tuple[float, float] = (6.0, 4.5)):
    """``(figure, ax)``: the given axes and its figure, or a new figure with one axes."""
    if ax is not None:
        return ax.figure, ax
    fig, ax = pyplot().subplots(figsize=figsize)
    return fig, ax


def point_size(n: int) -> float:
    """Marker area for scatters of ``n`` points: the total ink stays roughly constant."""
    return float(np.clip(40.0 / np.sqrt(max(n, 1)), 0.05, 10.0))
