"""unimap: fast dimensionality reduction for visual exploration.

The estimators (``PCA``, ``UMAP``, ``TSNE``, ``GDR``) and the submodules (``datasets``,
``metrics``, ``analysis``, ...) are imported lazily, so ``import unimap`` stays fast and numba is
only loaded when a method that needs it is used. ``unimap.load`` reads a model written by
``est.save`` (:mod:`unimap.io.persistence`). ``unimap.io`` reads and writes tables (npy, npz,
csv, parquet, h5ad); ``unimap.tl`` embeds AnnData objects scanpy style; ``unimap.dask``
fits a sample and places every row of a dask array (``transform`` takes dask arrays).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from unimap._version import __version__

_LAZY_ATTRS = {
    "PCA": "unimap.methods.pca",
    "UMAP": "unimap.methods.umap",
    "TSNE": "unimap.methods.tsne",
    "GDR": "unimap.methods.gdr",
    "load": "unimap.io.persistence",
    "InvalidParameterError": "unimap.runtime.params",
}
_LAZY_MODULES = {"analysis", "datasets", "metrics", "neighbors", "affinity", "initialization",
                 "plotting", "io", "tl", "dask"}

__all__ = ["PCA", "UMAP", "TSNE", "GDR", "load", "InvalidParameterError", "analysis",
           "datasets", "metrics", "io", "tl", "dask", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from unimap import dask, datasets, io, metrics, tl
    from unimap.io.persistence import load
    from unimap.methods.pca import PCA
    from unimap.methods.tsne import TSNE
    from unimap.methods.umap import UMAP


def __getattr__(name: str) -> Any:
    if name in _LAZY_ATTRS:
        return getattr(importlib.import_module(_LAZY_ATTRS[name]), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"unimap.{name}")
    raise AttributeError(f"module 'unimap' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_ATTRS) | _LAZY_MODULES)
