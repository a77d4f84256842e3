"""Greedy edge colouring: split directed edges into classes that share no vertex.

Edges of one class can be processed in parallel, each moving both of its endpoints, with no
two threads ever touching the same point: the basis of UMAP's deterministic threaded SGD.
"""

from __future__ import annotations

import math

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
    # 2 * max_degree - 1 colours in total. The bit sets are stored word-major: the first
    # word of every vertex is one contiguous array that stays in cache, and the later words
    # (colours 64+, reached at the hubs' edges) are rarely touched. Vertex-major sets put
    # each vertex's words in their own cache lines, several times slower on a graph with hubs
    # (measured: benchmarks/results/library_notes.md,
    # "unimap/optimizers/umap_sgd/edge_coloring_numba.py").
    n_words = (2 * max(degree.max(), 1)) // 64 + 1
    used = np.zeros((n_words, n_vertices), dtype=np.uint64)
    colors = np.empty(n_edges, dtype=np.int32)
    n_colors = 0
    for i in range(n_vertices):
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            for w in range(n_words):
                free = ~(used[w, i] | used[w, j])
                if free != 0:
                    mask = free & (~free + np.uint64(1))  # the lowest free colour's bit
                    color = w * 64 + _bit_index(mask)
                    used[w, i] |= mask
                    used[w, j] |= mask
                    colors[e] = color
                    n_colors = max(n_colors, color + 1)
                    break
    return colors, n_colors


@numba.njit(inline="always", cache=True)
def _bit_index(mask):
    """The index of the single set bit of ``mask`` (uint64): its float64 value is exactly
    2**index, whose binary exponent ``frexp`` reads off (frexp(2**k) = (0.5, k + 1))."""
    return np.int64(math.frexp(np.float64(mask))[1] - 1)


@numba.njit(cache=True)
def edges_by_class(indptr, indices, colors, n_colors):
    """The edges of the CSR graph ``indptr``/``indices`` grouped by colour, in edge order
    within a colour (a counting sort: what a stable argsort of ``colors`` gives).

    Returns
    -------
    heads, tails : int32 arrays of the edges in class order
    class_ptr : int64 array, class ``c`` is ``[class_ptr[c], class_ptr[c + 1])``
    order : int64 positions of the class-ordered edges in the CSR edge list
    """
    n_edges = colors.shape[0]
    class_ptr = np.zeros(n_colors + 1, dtype=np.int64)
    for e in range(n_edges):
        class_ptr[colors[e] + 1] += 1
    for c in range(n_colors):
        class_ptr[c + 1] += class_ptr[c]
    fill = class_ptr[:-1].copy()
    heads = np.empty(n_edges, dtype=np.int32)
    tails = np.empty(n_edges, dtype=np.int32)
    order = np.empty(n_edges, dtype=np.int64)
    for i in range(indptr.shape[0] - 1):
        for e in range(indptr[i], indptr[i + 1]):
            slot = fill[colors[e]]
            fill[colors[e]] += 1
            heads[slot] = i
            tails[slot] = indices[e]
            order[slot] = e
    return heads, tails, class_ptr, order
