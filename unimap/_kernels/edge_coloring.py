"""Greedy edge colouring: split directed edges into classes that share no vertex.

Edges of one class can be processed in parallel, each moving both of its endpoints, with no
two threads ever touching the same point: the basis of UMAP's deterministic threaded SGD.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def greedy_edge_coloring(indptr, indices, n_vertices):
    """Colour each directed edge (i, indices[e]) with the smallest colour unused at both ends.

    Returns
    -------
    colors : int32 array of shape (n_edges,)
    n_colors : int
    """
    n_edges = indices.shape[0]
    degree = np.zeros(n_vertices, dtype=np.int64)
    for i in range(n_vertices):
        for e in range(indptr[i], indptr[i + 1]):
            degree[i] += 1
            degree[indices[e]] += 1
    # A vertex of degree d uses at most d colours; the greedy choice needs at most
    # 2 * max_degree - 1 colours in total.
    n_words = (2 * max(degree.max(), 1)) // 64 + 1
    used = np.zeros((n_vertices, n_words), dtype=np.uint64)
    colors = np.empty(n_edges, dtype=np.int32)
    n_colors = 0
    for i in range(n_vertices):
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            for w in range(n_words):
                free = ~(used[i, w] | used[j, w])
                if free != 0:
                    bit = 0
                    while (free >> np.uint64(bit)) & np.uint64(1) == 0:
                        bit += 1
                    color = w * 64 + bit
                    mask = np.uint64(1) << np.uint64(bit)
                    used[i, w] |= mask
                    used[j, w] |= mask
                    colors[e] = color
                    n_colors = max(n_colors, color + 1)
                    break
    return colors, n_colors
