"""High-dimensional affinities P from the kNN graph: UMAP's fuzzy simplicial set (``fuzzy``),
t-SNE's perplexity-calibrated probabilities (``perplexity``) and GDR's joint affinities
(``joint``), as functions and as the stage objects the methods declare
(:class:`FuzzyAffinity`, :class:`PerplexityAffinity`, :class:`JointAffinity`; their interface
:class:`Affinity`, :mod:`unimap.affinity.stage`).
"""

from unimap.affinity.fuzzy import (
    FuzzyAffinity,
    fuzzy_simplicial_set,
    fuzzy_union,
    membership_weights,
    smooth_knn_dist,
)
from unimap.affinity.joint import JointAffinity, joint_affinities, knn_affinities
from unimap.affinity.perplexity import (
    PerplexityAffinity,
    conditional_probabilities,
    effective_perplexity,
    perplexity_affinities,
    perplexity_neighbors,
    symmetrize_tsne,
)
from unimap.affinity.stage import Affinity

__all__ = ["Affinity", "FuzzyAffinity", "PerplexityAffinity", "JointAffinity",
           "effective_perplexity", "perplexity_neighbors", "knn_affinities", "joint_affinities",
           "smooth_knn_dist", "fuzzy_simplicial_set", "membership_weights", "fuzzy_union",
           "conditional_probabilities", "perplexity_affinities", "symmetrize_tsne"]
