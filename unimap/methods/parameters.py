"""The parameters the methods share: one constraint and one numpydoc entry each.

A parameter that several estimators take means the same in each (scikit-learn's rule), so its
check and its documentation have one home here. An estimator takes the constraints with
:func:`shared_constraints` and writes a marker line in its docstring's Parameters section::

    {shared: random_state, n_jobs, knn_method}

which :func:`document_shared` (a class decorator) replaces by the entries, at the marker's
indentation. Lines indented below the marker continue the last entry: that is where a method
adds what is particular to it (``device`` on t-SNE's GPU path, say). What differs between
methods in meaning (``learning_rate``, ``init``, ``n_epochs``) stays in each method's own file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from unimap.affinity.supervised import TARGET_METRICS
from unimap.neighbors.graph import METHODS, METRICS
from unimap.runtime.device import DEVICES
from unimap.runtime.params import (
    AnyOf,
    ArrayLike,
    Boolean,
    Integer,
    IntegerOrSentinel,
    IsCallable,
    Jobs,
    MemorySize,
    Optional,
    Options,
    Real,
    Seed,
)

__all__ = [
    "PIPELINE",
    "SHARED_PARAMETERS",
    "SUPERVISION",
    "SharedParameter",
    "document_shared",
    "shared_constraints",
]


@dataclass(frozen=True)
class SharedParameter:
    """A parameter several estimators take: its constraint (:mod:`unimap.runtime.params`) and
    its numpydoc entry (the ``name : type, default=...`` line, then the indented description,
    written at indentation 0)."""

    constraint: Any
    doc: str


SHARED_PARAMETERS: dict[str, SharedParameter] = {
    "n_components": SharedParameter(Integer(1), """\
n_components : int, default=2
    Dimension of the embedding."""),
    "metric": SharedParameter(AnyOf(Options(*METRICS), IsCallable()), """\
metric : str or callable, default="euclidean"
    Input-space metric: ``"euclidean"``, ``"cosine"``, ``"correlation"``,
    ``"manhattan"``, ``"chebyshev"``, ``"minkowski"``, ``"canberra"``, ``"braycurtis"``,
    ``"hamming"``, ``"jaccard"``, ``"dice"``, ``"hellinger"``, ``"haversine"``,
    ``"sqeuclidean"`` (umap-learn's aliases such as ``"l1"`` and ``"l2"`` too;
    :mod:`unimap.neighbors.metrics`), or ``"precomputed"``: ``X`` is a square distance
    matrix; or a user-defined metric, a function of two rows (1-D float32 arrays)
    returning their distance, compiled by numba (``@numba.njit``, or compiled here)."""),
    "random_state": SharedParameter(Seed(), """\
random_state : int, numpy Generator or None, default=None
    Seed of every random choice (kNN backend, initialization, negative sampling)."""),
    "n_jobs": SharedParameter(Jobs(), """\
n_jobs : int, default=-1
    Threads (-1: all cores). Does not change the result."""),
    "knn_method": SharedParameter(Options(*METHODS), """\
knn_method : {"auto", "exact", "hnsw", "nndescent"}, default="auto"
    Nearest-neighbour backend (see :mod:`unimap.neighbors.graph`)."""),
    "precomputed_knn": SharedParameter(Optional(ArrayLike()), """\
precomputed_knn : tuple (indices, distances), optional
    A kNN graph of ``X`` with shape (n_samples, >= ``n_neighbors_``) each, column 0 the
    point itself; skips the neighbour search (``transform`` is then unavailable)."""),
    "max_memory": SharedParameter(MemorySize(), """\
max_memory : "available", int, str or None, default="available"
    Refuse a fit whose estimated peak memory (``memory_estimate_``) exceeds this limit,
    before the large allocations, with the estimate and the parameter that lowers it:
    ``"available"`` is the memory the system has free (Linux; no check elsewhere), a number
    is bytes, a string a size such as ``"8GB"``; None turns the check off."""),
    "verbose": SharedParameter(AnyOf(Boolean(), Integer(0)), """\
verbose : bool or int, default=False
    Show a progress bar per phase and a line per finished phase with its time, then a
    summary, on stderr (through the ``unimap`` logger when logging shows INFO;
    :mod:`unimap.runtime.progress`). scikit-learn's integer levels are taken: any true
    value shows all of it."""),
    "device": SharedParameter(Options(*DEVICES), """\
device : {"auto", "cpu", "cuda"}, default="auto"
    Where the phases with CUDA kernels run (:mod:`unimap.runtime.device`): ``"cuda"`` on the GPU
    (an error if none is usable), ``"auto"`` there when the ``gpu`` extra and a GPU are
    present. Inputs and outputs stay NumPy arrays on the host."""),
    "target_metric": SharedParameter(Options(*TARGET_METRICS), """\
target_metric : {"categorical", "euclidean", "l2", "manhattan", "l1"}, default="categorical"
    How ``y`` of ``fit(X, y)`` is read (umap-learn's meaning): class labels
    (``-1``, NaN or None: unlabelled, for semi-supervised fits), or numeric targets of
    shape (n_samples,) or (n_samples, n_targets) whose own kNN graph is intersected with
    the data's."""),
    "target_weight": SharedParameter(Real(0.0, 1.0), """\
target_weight : float in [0, 1], default=0.5
    How much the labels count against the data: 0 keeps the data's graph nearly as it
    is, 1 separates the classes as far as they go."""),
    "target_n_neighbors": SharedParameter(IntegerOrSentinel(2), """\
target_n_neighbors : int, default=-1
    Neighbours of a numeric target's graph, at least 2 (-1: ``n_neighbors``), as in
    umap-learn."""),
    "disconnection_distance": SharedParameter(Optional(Real(0.0, low_inclusive=False)), """\
disconnection_distance : float, optional
    Edges of the neighbour graph at least this far apart are removed (umap-learn's
    parameter; :mod:`unimap.affinity.disconnect`), also between new points and the
    training points in ``transform``. Default: the largest distance of the bounded
    metrics (2 for cosine and correlation, 1 for hellinger, jaccard and dice), where an
    edge joins points with nothing in common; no cut for the others. Each point's scale is
    still calibrated on all of its neighbours."""),
    "unique": SharedParameter(Boolean(), """\
unique : bool, default=False
    Fit on the distinct rows only and give each duplicate its row's position
    (umap-learn's parameter; ``unique_inverse_`` maps rows to distinct rows). Data with
    many repeated rows otherwise make kNN graphs of identical points."""),
}
"""Every shared parameter, by name."""

PIPELINE = ("n_components", "metric", "random_state", "n_jobs", "knn_method",
            "precomputed_knn", "max_memory", "verbose", "device")
"""The parameters of the shared pipeline (:class:`unimap.methods._base.NeighborEmbedding`):
every neighbour embedding takes them."""

SUPERVISION = ("target_metric", "target_weight", "target_n_neighbors")
"""The parameters of ``fit(X, y)`` (:mod:`unimap.methods.supervision`)."""


def shared_constraints(*names: str) -> dict[str, Any]:
    """The constraints of the named shared parameters, for ``_parameter_constraints``."""
    return {name: SHARED_PARAMETERS[name].constraint for name in names}


_MARKER = re.compile(r"^(?P<indent>[ ]*)\{shared: (?P<names>[\w, ]+)\}[ ]*$")


def document_shared(cls: type) -> type:
    """Class decorator: replace each ``{shared: a, b}`` line of ``cls.__doc__`` by the shared
    entries of ``a`` and ``b``, at the line's indentation. Raises ``KeyError`` for a name that
    is not shared (at import: a typo cannot ship)."""
    lines = []
    for line in (cls.__doc__ or "").split("\n"):
        marker = _MARKER.match(line)
        if marker is None:
            lines.append(line)
            continue
        indent = marker["indent"]
        for name in (n.strip() for n in marker["names"].split(",")):
            if name not in SHARED_PARAMETERS:
                raise KeyError(f"{cls.__name__}'s docstring names {name!r}, which is not a "
                               f"shared parameter (unimap.methods.parameters)")
            lines.extend(indent + entry for entry in SHARED_PARAMETERS[name].doc.split("\n"))
    cls.__doc__ = "\n".join(lines)
    return cls
