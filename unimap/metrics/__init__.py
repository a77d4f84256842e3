"""Quality measures of an embedding: how well it keeps the neighbourhoods, labels, orderings,
distances and objective values of the data it came from.

Local structure
    :func:`trustworthiness` and :func:`continuity` (exact, identical to scikit-learn's
    ``trustworthiness``), :func:`trustworthiness_sampled` (unbiased estimate with a standard
    error, linear in the number of points) and :func:`knn_recall`.
The kNN graph itself
    :func:`knn_graph_recall`: how many true neighbours an approximate graph holds (sampled).
Class structure
    :func:`knn_accuracy` (k-fold) and :func:`knn_accuracy_loo` (leave-one-out).
Global structure
    :func:`triplet_accuracy` and :func:`distance_correlation`, on random triplets and pairs.
Objectives
    :func:`tsne_kl_divergence` and :func:`umap_cross_entropy`, exact over all pairs.

Every function takes the data ``X`` (or an affinity matrix) and the ``embedding`` row for row,
and returns a float (or a :class:`SampledScore`); none of them builds an ``n × n`` matrix
except the exact trustworthiness on data small enough to hold one block of rows.

The code lives in private modules: ``_trustworthiness`` (trustworthiness, continuity, the
sampled estimate), ``_neighborhood`` (kNN recall and accuracy), ``_global`` (triplets,
distance correlation), ``_graph`` (the kNN graph's recall) and ``_objectives`` (KL
divergence, cross-entropy). What they share, which :mod:`unimap.analysis` and
:mod:`unimap.dask` use too, is in ``checks`` (input checks) and ``common`` (the block size
of all blocked computations, seeding, row preparation).
"""

from unimap.metrics._global import distance_correlation, triplet_accuracy
from unimap.metrics._graph import knn_graph_recall
from unimap.metrics._neighborhood import knn_accuracy, knn_accuracy_loo, knn_recall
from unimap.metrics._objectives import tsne_kl_divergence, umap_cross_entropy
from unimap.metrics._trustworthiness import (
    SampledScore,
    continuity,
    trustworthiness,
    trustworthiness_sampled,
)

__all__ = [
    "SampledScore",
    "trustworthiness",
    "continuity",
    "trustworthiness_sampled",
    "knn_recall",
    "knn_graph_recall",
    "knn_accuracy",
    "knn_accuracy_loo",
    "triplet_accuracy",
    "distance_correlation",
    "tsne_kl_divergence",
    "umap_cross_entropy",
]
