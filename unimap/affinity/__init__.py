"""High-dimensional affinities P from the kNN graph: UMAP's fuzzy simplicial set,
t-SNE's perplexity-calibrated probabilities and GDR's joint affinities.
"""

from unimap.affinity.joint import (
    conditional_probabilities,
    effective_perplexity,
    fuzzy_simplicial_set,
    fuzzy_union,
    joint_affinities,
    knn_affinities,
    membership_weights,
    perplexity_affinities,
    perplexity_neighbors,
    smooth_knn_dist,
    symmetrize_tsne,
)

__all__ = ["effective_perplexity", "perplexity_neighbors", "knn_affinities", "joint_affinities",
           "smooth_knn_dist", "fuzzy_simplicial_set", "membership_weights", "fuzzy_union",
           "conditional_probabilities", "perplexity_affinities", "symmetrize_tsne"]
