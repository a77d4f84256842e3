"""What each method declares about itself, and the one registry every table of methods reads.

A method is a class with a ``declaration`` (:class:`MethodDeclaration`): its name, the module
that defines it, the variants a user chooses by name (``unimap embed --method``,
``unimap.tl.embed``: GDR's ``gdr`` and ``gdr-tsne``), the fitted attributes ``transform``
needs after loading, and the fits that compile its kernels at install. The public namespace
(``unimap.UMAP``), the command line, ``unimap.tl``, ``save``/``load`` and ``precompile`` ask
this module instead of keeping their own lists, so a new method is its own module(s) plus,
for one shipped with unimap, one entry in :data:`BUILT_IN`.

The built-in declarations are plain data here, so that ``import unimap`` and the command
line's parser read them without importing numpy or numba. A method defined outside unimap
(a plugin, or a test) is found as a loaded subclass of the estimator base that carries its own
``declaration``: nothing is registered, so there is no global state to keep in step. Such a
class must be imported before a model of it is loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

__all__ = ["BUILT_IN", "MethodDeclaration", "PrecompileFit", "Variant", "built_in", "declaration",
           "declarations", "estimator_class", "variant", "variant_of", "variants"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Variant(NamedTuple):
    """One way to run a method that a user picks by name (``--method KEY``,
    ``tl.embed(adata, KEY)``): the class with some parameters fixed."""

    key: str
    """The name users type: lower case, words joined by ``-`` (``"gdr-tsne"``); ``_`` in
    place of ``-`` names its outputs (``obsm["X_gdr_tsne"]``)."""
    summary: str
    """One line for the command line's help."""
    fixed: Mapping[str, Any] = _EMPTY
    """Parameters the variant sets (GDR's ``{"normalized": True}``); an estimator whose
    parameters have these values is of this variant (:func:`variant_of`)."""
    options: Mapping[str, str] = _EMPTY
    """The command line's method options it takes (``unimap embed --n-neighbors``), each with
    the default its help states ("" for none); any other is refused."""
    renamed: Mapping[str, str] = _EMPTY
    """Command-line option -> the estimator's parameter where they differ (TSNE's
    ``n_epochs`` -> ``max_iter``)."""
    size_param: str | None = None
    """The parameter that sets the neighbourhood (``n_neighbors`` or ``perplexity``); None:
    no neighbours (PCA). ``unimap.tl`` reuses scanpy's neighbours for ``n_neighbors``."""
    scanpy_record: str | None = None
    """Which scanpy record ``uns[key]["params"]`` gets: ``"umap"`` (``tl.umap``'s ``a``,
    ``b``) or ``"tsne"`` (``tl.tsne``'s); None: none (PCA writes ``pp.pca``'s)."""
    supervised: bool = False
    """Whether ``fit(X, y)`` uses labels (``--supervised``)."""


class PrecompileFit(NamedTuple):
    """A fit (and ``transform``) that :mod:`unimap.cli.precompile` runs on small blobs to fill
    numba's cache with the kernels of this configuration."""

    label: str
    params: Mapping[str, Any]
    components: bool = False  # on 8 groups far apart (a disconnected graph), without transform


class MethodDeclaration(NamedTuple):
    """What a method says about itself (see the module docstring)."""

    name: str
    """The class name, as ``unimap.<name>`` and in model files."""
    module: str
    """The module that defines the class (imported only when the class is used)."""
    variants: tuple[Variant, ...]
    transform_needs: tuple[str, ...]
    """Fitted attributes ``transform`` reads, required of a loaded model (a neighbour
    embedding also needs its neighbour index)."""
    neighbor_index: bool = True
    """Whether fitted models keep a neighbour index (saved and restored with them)."""
    fitted_choices: Mapping[str, tuple[Any, ...]] = _EMPTY
    """Fitted attributes whose value is one of a few, checked on load (TSNE's ``method_``)."""
    renamed_params: Mapping[str, str] = _EMPTY
    """Parameters renamed since older model files were written: old -> new."""
    precompile: tuple[PrecompileFit, ...] = ()
    gpu_precompile: tuple[PrecompileFit, ...] = ()
    """Fits that compile the CUDA kernels, run where a GPU is usable."""


def _options(**defaults: str) -> Mapping[str, str]:
    return MappingProxyType(defaults)


_METRIC = {"metric": "euclidean", "metric_kwds": ""}
_NEIGHBOURS = {"n_neighbors": "15", "min_dist": "0.1", **_METRIC}
_CUT_AND_LABELS = {"disconnection_distance": "", "target_weight": "0.5"}
_CPU = {"random_state": 0, "max_memory": None, "device": "cpu"}
_GPU = {"random_state": 0, "max_memory": None, "device": "cuda"}
_SHORT_TSNE = {"max_iter": 60, "early_exaggeration_iter": 30}

BUILT_IN: tuple[MethodDeclaration, ...] = (
    MethodDeclaration(
        name="UMAP", module="unimap.methods.umap",
        variants=(Variant("umap", "UMAP (the default)", options=_options(
            **_NEIGHBOURS, n_epochs="", densmap="", **_CUT_AND_LABELS),
            size_param="n_neighbors", scanpy_record="umap", supervised=True),),
        transform_needs=("embedding_", "n_features_in_", "n_neighbors_", "a_", "b_",
                         "_streams"),
        precompile=(PrecompileFit("UMAP", {"n_epochs": 20, **_CPU}),
                    PrecompileFit("UMAP, hnsw", {"n_epochs": 20, "knn_method": "hnsw", **_CPU}),
                    PrecompileFit("UMAP densMAP", {"n_epochs": 20, "densmap": True,
                                                   "output_dens": True, **_CPU})),
        gpu_precompile=(PrecompileFit("UMAP cuda", {"n_epochs": 20, **_GPU}),)),
    MethodDeclaration(
        name="TSNE", module="unimap.methods.tsne",
        variants=(Variant("tsne", "t-SNE", options=_options(
            perplexity="30", **_METRIC, n_epochs=""),
            renamed=MappingProxyType({"n_epochs": "max_iter", "metric_kwds": "metric_params"}),
            size_param="perplexity", scanpy_record="tsne"),),
        transform_needs=("embedding_", "n_features_in_", "n_neighbors_", "method_"),
        fitted_choices=MappingProxyType({"method_": ("exact", "barnes_hut", "fft")}),
        # scikit-learn's names since format version 2
        renamed_params=MappingProxyType({"n_iter": "max_iter", "theta": "angle"}),
        precompile=(PrecompileFit("TSNE fft", {"method": "fft", **_SHORT_TSNE, **_CPU}),
                    PrecompileFit("TSNE barnes_hut", {"method": "barnes_hut", **_SHORT_TSNE,
                                                      **_CPU}),
                    PrecompileFit("TSNE exact", {"method": "exact", **_SHORT_TSNE, **_CPU}),
                    PrecompileFit("TSNE, hnsw", {"knn_method": "hnsw", **_SHORT_TSNE, **_CPU})),
        # its kNN graph, perplexity calibration and symmetrisation (its optimizer: the CPU's)
        gpu_precompile=(PrecompileFit("TSNE cuda", {**_SHORT_TSNE, **_GPU}),)),
    MethodDeclaration(
        name="GDR", module="unimap.methods.gdr",
        variants=(
            Variant("gdr", "GDR, UMAP-like", fixed=MappingProxyType({"normalized": False}),
                    options=_options(**_NEIGHBOURS, n_epochs="", **_CUT_AND_LABELS),
                    size_param="n_neighbors", scanpy_record="umap", supervised=True),
            Variant("gdr-tsne", "GDR's t-SNE-like normalized mode",
                    fixed=MappingProxyType({"normalized": True}),
                    options=_options(perplexity="10", **_METRIC, n_epochs="",
                                     **_CUT_AND_LABELS),
                    size_param="perplexity", scanpy_record="tsne", supervised=True)),
        transform_needs=("embedding_", "n_features_in_", "n_neighbors_", "a_", "b_",
                         "_streams"),
        precompile=(PrecompileFit("GDR", {"n_epochs": 20, **_CPU}),
                    PrecompileFit("GDR, hnsw", {"n_epochs": 20, "knn_method": "hnsw", **_CPU}),
                    PrecompileFit("GDR normalized", {"normalized": True, "n_epochs": 40,
                                                     **_CPU}),
                    PrecompileFit("GDR, components", {"n_epochs": 20, **_CPU},
                                  components=True)),
        gpu_precompile=(PrecompileFit("GDR cuda", {"n_epochs": 20, **_GPU}),
                        PrecompileFit("GDR normalized cuda", {"normalized": True,
                                                              "n_epochs": 40, **_GPU}))),
    MethodDeclaration(
        name="PCA", module="unimap.methods.pca",
        variants=(Variant("pca", "PCA"),),
        transform_needs=("components_", "mean_", "explained_variance_",
                         "explained_variance_ratio_", "singular_values_", "svd_solver_",
                         "n_components_", "n_features_in_"),
        neighbor_index=False,
        gpu_precompile=(PrecompileFit("PCA cuda", {"device": "cuda"}),)),
)


def built_in(name: str) -> MethodDeclaration:
    """The declaration a method shipped with unimap carries (``declaration = built_in(...)``)."""
    return next(d for d in BUILT_IN if d.name == name)


def declarations() -> tuple[MethodDeclaration, ...]:
    """Every method: the built-in ones, then those of loaded classes defined elsewhere."""
    found = list(BUILT_IN)
    owners = {d.name: d.module for d in BUILT_IN}
    for cls in _declared_classes():
        if any(cls.declaration is d for d in BUILT_IN):
            continue  # a built-in method's class
        name = cls.declaration.name
        if name in owners:
            raise RuntimeError(f"two methods are named {name!r}: in {owners[name]} and in "
                               f"{cls.__module__} ({cls.__qualname__})")
        owners[name] = f"{cls.__module__} ({cls.__qualname__})"
        found.append(cls.declaration)
    return tuple(found)


def declaration(name: str) -> MethodDeclaration | None:
    """The declaration of the method whose class is named ``name``, or None."""
    return next((d for d in declarations() if d.name == name), None)


def variants() -> dict[str, tuple[MethodDeclaration, Variant]]:
    """Every variant by its key, in declaration order."""
    return {v.key: (d, v) for d in declarations() for v in d.variants}


def variant(key: str) -> tuple[MethodDeclaration, Variant]:
    """The method and variant a user names (``"gdr-tsne"``); ValueError listing the names."""
    table = variants()
    if key not in table:
        raise ValueError(f"unknown method {key!r}; one of {', '.join(table)}")
    return table[key]


def variant_of(estimator: Any) -> Variant:
    """The variant an estimator's parameters make it (GDR(normalized=True): ``gdr-tsne``)."""
    decl = getattr(type(estimator), "declaration", None)
    if decl is None:
        raise TypeError(f"{type(estimator).__name__} is not a declared unimap method")
    params = estimator.get_params(deep=False)
    for candidate in decl.variants:
        if all(params.get(k) == v for k, v in candidate.fixed.items()):
            return candidate
    return decl.variants[0]


def estimator_class(name: str) -> type | None:
    """The class of the method named ``name`` (a built-in one imported from its declared
    module, never from a name read elsewhere), or None if no method has that name."""
    decl = declaration(name)  # also refuses two methods of one name
    if decl is None:
        return None
    if not any(decl is d for d in BUILT_IN):
        return next(cls for cls in _declared_classes() if cls.declaration is decl)
    module = sys.modules.get(decl.module)
    if module is None:
        import importlib

        module = importlib.import_module(decl.module)
    cls = getattr(module, name, None)
    if getattr(cls, "declaration", None) is not decl:
        raise RuntimeError(f"{decl.module}.{name} does not carry the declaration of {name}")
    return cls


def _declared_classes() -> Iterator[type]:
    """Loaded estimator classes that define a ``declaration`` of their own (the estimator base
    is looked for only where it is loaded already: a method's class would have loaded it)."""
    contract = sys.modules.get("unimap.methods._contract")
    if contract is None:
        return
    pending, seen = list(contract.EstimatorContract.__subclasses__()), set()
    while pending:
        cls = pending.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        if "declaration" in cls.__dict__ and isinstance(cls.__dict__["declaration"],
                                                        MethodDeclaration):
            yield cls
