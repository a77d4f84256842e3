"""``fit(X, y)`` of UMAP and GDR: supervised and semi-supervised embeddings, umap-learn's
parameters and meaning (``target_metric``, ``target_weight``, ``target_n_neighbors``).

The pipeline checks ``y`` before any phase runs (:func:`check_target`) and the method's
``_affinities`` intersects its graph with the labels' (:func:`supervised_graph`, on
:mod:`unimap.affinity.supervised`) before the graph is pruned or normalised.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["check_target", "supervised_graph"]

_NUMERIC_METRIC = {"euclidean": "euclidean", "l2": "euclidean", "manhattan": "manhattan",
                   "l1": "manhattan"}


def check_target(estimator: Any, y: Any, n: int) -> np.ndarray | None:
    """``y`` checked against the ``n`` samples: category codes (``-1``: unlabelled) for
    ``target_metric="categorical"``, float32 targets of shape (n, t) otherwise; None without
    ``y``. Raises ``ValueError`` naming what is wrong."""
    if y is None:
        return None
    if estimator.target_n_neighbors in (0, 1):
        from unimap.runtime.params import InvalidParameterError

        raise InvalidParameterError("target_n_neighbors must be -1 (n_neighbors) or at least "
                                    f"2, got {estimator.target_n_neighbors}")
    if estimator.target_metric == "categorical":
        from unimap.affinity.supervised import encode_labels

        return encode_labels(y, n)
    from unimap.runtime.validation import check_array

    target = np.asarray(y)
    if target.ndim == 1:
        target = target[:, None]
    if target.shape[0] != n:
        raise ValueError(f"y must hold one target per sample: expected {n} rows, got "
                         f"{target.shape[0]}")
    target = check_array(target, "y")  # numbers, finite, 2-D
    return np.ascontiguousarray(target, dtype=np.float32)


def supervised_graph(estimator: Any, graph: sp.csr_matrix, target: np.ndarray,
                     n_jobs: int, seed: int) -> sp.csr_matrix:
    """``graph`` (the symmetric fuzzy graph of the data) intersected with the labels' or the
    targets' (:mod:`unimap.affinity.supervised`), in ``graph``'s dtype."""
    from unimap.affinity import supervised

    weight = float(estimator.target_weight)
    if estimator.target_metric == "categorical":
        return supervised.categorical_intersection(graph, target,
                                                   supervised.far_distance(weight))
    from unimap.affinity.fuzzy import fuzzy_simplicial_set
    from unimap.neighbors.graph import NeighborIndex

    k = estimator.target_n_neighbors
    k = min(estimator.n_neighbors if k == -1 else k, target.shape[0])
    index = NeighborIndex(_NUMERIC_METRIC[estimator.target_metric], "auto", n_jobs,
                          seed).build(target)
    knn = index.knn_graph(k)
    target_graph, _, _ = fuzzy_simplicial_set(knn.indices, knn.distances)
    return supervised.weighted_intersection(graph, target_graph, weight)
