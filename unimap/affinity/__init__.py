"""High-dimensional affinities P from the kNN graph: UMAP's fuzzy simplicial set (``fuzzy``),
t-SNE's perplexity-calibrated probabilities (``perplexity``) and GDR's joint affinities
(``joint``).
"""

from unimap.affinity.fuzzy import (
    fuzzy_simplicial_set,
    fuzzy_union,
    membership_weights,
    smooth_knn_dist,
)
from unimap.affinity.joint import joint_affinities, knn_affinities
from unimap.affinity.perplexity import (
    conditional_probabilities,
    effective_perplexity,
    perplexity_affinities,
    perplexity_neighbors,
    symmetrize_tsne,
)

__all__ = ["effective_perplexity", "perplexity_neighbors", "knn_affinities", "joint_affinities",
           "smooth_knn_dist", "fuzzy_simplicial_set", "membership_weights", "fuzzy_union",
           "conditional_probabilities", "perplexity_affinities", "symmetrize_tsne"]
