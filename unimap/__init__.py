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
from unimap.methods import registry as _registry

# The methods come from their declarations (unimap.methods.registry: plain data, no numpy);
# a method defined outside unimap is reached here once its module is imported.
_LAZY_ATTRS = {
    "load": "unimap.io.persistence",
    "InvalidParameterError": "unimap.runtime.params",
}
_LAZY_MODULES = {"analysis", "datasets", "metrics", "neighbors", "affinity", "initialization",
                 "plotting", "io", "tl", "dask"}

__all__ = [*(d.name for d in _registry.BUILT_IN), "load", "InvalidParameterError", "analysis",
           "datasets", "metrics", "io", "tl", "dask", "__version__"]

if TYPE_CHECKING:  # pragma: no cover: for type checkers, which do not run the registry
    from unimap import dask, datasets, io, metrics, tl
    from unimap.io.persistence import load
    from unimap.methods.gdr import GDR as GDR
    from unimap.methods.pca import PCA as PCA
    from unimap.methods.tsne import TSNE as TSNE
    from unimap.methods.umap import UMAP as UMAP


def __getattr__(name: str) -> Any:
    cls = _registry.estimator_class(name) if name[:1].isupper() else None
    if cls is not None:
        return cls
    if name in _LAZY_ATTRS:
        return getattr(importlib.import_module(_LAZY_ATTRS[name]), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"unimap.{name}")
    raise AttributeError(f"module 'unimap' has no attribute {name!r}")


def __dir__() -> list[str]:
    methods = {d.name for d in _registry.declarations()}
    return sorted(set(globals()) | methods | set(_LAZY_ATTRS) | _LAZY_MODULES)
