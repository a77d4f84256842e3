"""The k-nearest-neighbour graph: the first stage of every neighbour embedding.

``graph`` is the driver (exact, HNSW, sharded cells, pynndescent, precomputed, and the GPU's
brute force); ``*_numba`` modules hold its CPU kernels, ``*_cuda`` its GPU kernels.
"""

from unimap.neighbors.graph import (
    EXACT_MAX_SAMPLES,
    METRICS,
    KNNGraph,
    NeighborIndex,
    nearest_neighbors,
)

__all__ = ["KNNGraph", "NeighborIndex", "nearest_neighbors", "METRICS", "EXACT_MAX_SAMPLES"]
