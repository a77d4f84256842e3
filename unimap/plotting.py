"""Static plots of embeddings (matplotlib, installed with ``pip install 'unimap[plot]'``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from unimap._io import atomic_path

__all__ = ["scatter", "save_scatter"]


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("plotting needs matplotlib: pip install 'unimap[plot]'") from exc
    return plt


def _point_size(n: int) -> float:
    # ~ 100 / sqrt(n) keeps the total ink roughly constant from 1e3 to 1e6 points.
    return float(np.clip(100.0 / np.sqrt(max(n, 1)), 0.05, 20.0))


def scatter(
    embedding: np.ndarray,
    labels: Any = None,
    ax: Any = None,
    title: str | None = None,
    point_size: float | None = None,
    legend: bool = True,
) -> Any:
    """Scatter plot of a 2-D embedding (the first two columns), coloured by ``labels``.

    Parameters
    ----------
    embedding : ndarray of shape (n_samples, >= 2)
    labels : array-like of shape (n_samples,), optional
        Categories (≤ 20 distinct values get a discrete palette and legend) or numbers
        (continuous colour map).
    ax : matplotlib Axes, optional
    title : str, optional
    point_size : float, optional
        Marker area; default scales with ``1/sqrt(n_samples)``.
    legend : bool, default=True

    Returns
    -------
    ax : matplotlib Axes
    """
    plt = _pyplot()
    embedding = np.asarray(embedding)
    if embedding.ndim != 2 or embedding.shape[1] < 2:
        raise ValueError(f"embedding must have shape (n, >= 2), got {embedding.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 7))
    size = _point_size(len(embedding)) if point_size is None else point_size
    x, y = embedding[:, 0], embedding[:, 1]
    if labels is None:
        ax.scatter(x, y, s=size, c="#3465a4", linewidths=0, rasterized=True)
    else:
        labels = np.asarray(labels)
        if labels.shape[0] != embedding.shape[0]:
            raise ValueError(
                f"labels has {labels.shape[0]} entries for {embedding.shape[0]} points"
            )
        categories = np.unique(labels)
        if labels.dtype.kind in "OUSb" or len(categories) <= 20:
            cmap = plt.get_cmap("tab10" if len(categories) <= 10 else "tab20")
            for i, cat in enumerate(categories):
                mask = labels == cat
                ax.scatter(x[mask], y[mask], s=size, color=cmap(i % cmap.N), label=str(cat),
                           linewidths=0, rasterized=True)
            if legend:
                ax.legend(markerscale=max(1.0, 4.0 / np.sqrt(size)), loc="best", fontsize=8,
                          frameon=False)
        else:
            points = ax.scatter(x, y, s=size, c=labels, cmap="viridis", linewidths=0,
                                rasterized=True)
            ax.figure.colorbar(points, ax=ax, shrink=0.7)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title)
    return ax


def save_scatter(path: str | os.PathLike, embedding: np.ndarray, labels: Any = None,
                 title: str | None = None, dpi: int = 150) -> Path:
    """Draw :func:`scatter` and write it to ``path`` atomically (never a half-written file)."""
    plt = _pyplot()
    path = Path(path)
    fig, ax = plt.subplots(figsize=(7, 7))
    try:
        scatter(embedding, labels, ax=ax, title=title)
        fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, format=(path.suffix.lstrip(".") or "png"))
    finally:
        plt.close(fig)
    return path
