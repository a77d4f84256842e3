"""Supervised and semi-supervised affinities: the data's graph intersected with the labels'.

umap-learn's construction (McInnes et al., ``umap_.py``: ``discrete_metric_simplicial_set_
intersection``, ``general_simplicial_set_intersection``, ``reset_local_connectivity``):

- **categorical** labels (:func:`categorical_intersection`): an edge between two points of
  different labels is multiplied by ``exp(-far_dist)``, an edge touching an unlabelled point by
  ``exp(-unknown_dist)``; ``far_dist = 2.5 / (1 - target_weight)`` (1e12 at weight 1);
- **numeric** targets (:func:`weighted_intersection`): the data's graph and the fuzzy graph of
  the targets' own kNN graph are combined edge by edge, ``w_X · w_y^(t/(1-t))`` for
  ``t = target_weight < 0.5``, else ``w_X^((1-t)/t) · w_y``, an edge missing from one graph
  taking half that graph's smallest weight;

then each row is rescaled to a maximum of 1 and the graph symmetrised again by the fuzzy
union, so every point keeps a neighbour at full strength. Labels are plain arrays here;
:func:`encode_labels` turns the user's ``y`` into codes with ``-1`` for unlabelled points.
Vectorised NumPy and SciPy: the cost is a few passes over the graph's edges.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.affinity.edge_keys import edge_keys, values_at

__all__ = ["TARGET_METRICS", "encode_labels", "categorical_intersection",
           "weighted_intersection", "reset_local_connectivity", "far_distance"]

TARGET_METRICS = ("categorical", "euclidean", "l2", "manhattan", "l1")
UNKNOWN_DIST = 1.0  # umap-learn's unknown_dist: an edge to an unlabelled point, ×exp(-1)


def far_distance(target_weight: float) -> float:
    """umap-learn's ``far_dist``: how far apart two labels are put (``2.5/(1 - w)``)."""
    return 2.5 / (1.0 - target_weight) if target_weight < 1.0 else 1.0e12


def encode_labels(y: Any, n: int) -> np.ndarray:
    """Category codes (int64, ``-1``: unlabelled) of ``y``, one label per sample.

    Unlabelled points are marked as umap-learn marks them, by ``-1``, or by NaN, None,
    pandas' ``NA`` or an empty text (also ``"-1"`` as text: a labels file read as text);
    the one rule of every reader of labels (``fit(X, y)``, the CLI's labels files and
    columns, ``unimap.tl``). Labels may be numbers or strings.
    """
    labels = np.asarray(y)
    if labels.ndim != 1:
        labels = labels.reshape(-1) if labels.ndim == 2 and labels.shape[1] == 1 else labels
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"y must hold one label per sample: expected shape ({n},), got "
                         f"{np.asarray(y).shape}")
    unlabelled = _unlabelled(labels)
    codes = np.full(n, -1, dtype=np.int64)
    if (~unlabelled).any():
        kept = labels[~unlabelled]
        if kept.dtype == object:
            kept = kept.astype(str)
        _, codes[~unlabelled] = np.unique(kept, return_inverse=True)
    else:
        raise ValueError("y has no labelled sample (every entry is -1, NaN or None)")
    return codes


def _unlabelled(labels: np.ndarray) -> np.ndarray:
    """Which entries mark an unlabelled point (see :func:`encode_labels`)."""
    if labels.dtype.kind in "iu":
        return labels == -1
    if labels.dtype.kind == "f":
        return np.isnan(labels) | (labels == -1)
    if labels.dtype.kind == "b":
        return np.zeros(labels.shape, dtype=bool)
    if labels.dtype.kind == "U":
        text = np.char.strip(labels)
        return (text == "") | (text == "-1")
    return np.array([_is_unlabelled(v) for v in labels], dtype=bool)


def _is_unlabelled(value: Any) -> bool:
    """One entry of an object array of labels."""
    if value is None:
        return True
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (float, np.floating)):
        return math.isnan(value) or value == -1
    if isinstance(value, (int, np.integer)):
        return value == -1
    if isinstance(value, str):
        return value.strip() in ("", "-1")
    pandas = sys.modules.get("pandas")  # pd.NA, pd.NaT: only where pandas made them
    return pandas is not None and (value is pandas.NA or value is pandas.NaT)


def categorical_intersection(graph: sp.csr_matrix, codes: np.ndarray, far_dist: float,
                             unknown_dist: float = UNKNOWN_DIST) -> sp.csr_matrix:
    """``graph`` with edges across labels weakened by ``exp(-far_dist)`` and edges touching an
    unlabelled point (code -1) by ``exp(-unknown_dist)``, then :func:`reset_local_connectivity`.
    """
    coo = graph.tocoo()
    left, right = codes[coo.row], codes[coo.col]
    factor = np.ones(coo.nnz, dtype=np.float64)
    unknown = (left == -1) | (right == -1)
    factor[unknown] = math.exp(-unknown_dist)
    factor[~unknown & (left != right)] = math.exp(-far_dist)
    weighted = sp.csr_matrix((coo.data * factor, (coo.row, coo.col)), shape=graph.shape)
    return reset_local_connectivity(weighted, graph.dtype)


def weighted_intersection(left: sp.csr_matrix, right: sp.csr_matrix,
                          weight: float) -> sp.csr_matrix:
    """umap-learn's ``general_simplicial_set_intersection`` of two graphs on the same points
    (see the module docstring), then :func:`reset_local_connectivity`."""
    n = left.shape[0]
    lkeys, lvals = edge_keys(left)
    rkeys, rvals = edge_keys(right)
    keys = np.union1d(lkeys, rkeys)
    left_min = max(float(lvals.min()) / 2.0, 1.0e-8) if lvals.size else 1.0e-8
    right_min = max(float(rvals.min()) / 2.0, 1.0e-8) if rvals.size else 1.0e-8
    lv = values_at(keys, lkeys, lvals, left_min)
    rv = values_at(keys, rkeys, rvals, right_min)
    if weight < 0.5:
        mixed = lv * rv ** (weight / (1.0 - weight))
    else:
        mixed = lv ** ((1.0 - weight) / weight) * rv
    # umap-learn keeps the sum where both graphs miss the edge; a union key is always in one
    rows, cols = np.divmod(keys, n)
    combined = sp.csr_matrix((mixed, (rows, cols)), shape=left.shape)
    return reset_local_connectivity(combined, left.dtype)


def reset_local_connectivity(graph: sp.csr_matrix, dtype: Any = np.float32) -> sp.csr_matrix:
    """Each row divided by its largest weight, then the fuzzy union ``A + Aᵀ − A∘Aᵀ``
    (umap-learn's ``reset_local_connectivity``); zeros removed, rows sorted."""
    graph = sp.csr_matrix(graph, dtype=np.float64)
    graph.eliminate_zeros()
    counts = np.diff(graph.indptr)
    row_max = np.zeros(graph.shape[0])
    nonempty = counts > 0
    row_max[nonempty] = np.maximum.reduceat(graph.data, graph.indptr[:-1][nonempty])
    graph.data /= np.repeat(np.where(nonempty, row_max, 1.0), counts)
    transpose = graph.T.tocsr()
    union = (graph + transpose - graph.multiply(transpose)).tocsr()
    union.eliminate_zeros()
    union.sort_indices()
    return union.astype(dtype)
