"""Per-component sums of data rows, for the meta layout of a disconnected graph's components."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def add_rows_by_label(labels, rows, sums):
    """``sums[labels[p]] += rows[p]`` for p = 0, 1, ... in order (float64).

    Each component's sum runs over its points in ascending order, one at a time, as the
    product of a CSR indicator matrix with the rows does, so the sums are bitwise those of
    that product; but the rows are read once, in order (the product, one column block at a
    time, re-read every row per block, most of the meta layout's time; measured:
    benchmarks/results/library_notes.md, "unimap/initialization/components_numba.py")."""
    for p in range(rows.shape[0]):
        c = labels[p]
        for j in range(rows.shape[1]):
            sums[c, j] += rows[p, j]


@numba.njit(inline="always", cache=True)
def _root(parent, i):
    """The root of i's tree, halving the path on the way."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@numba.njit(cache=True)
def weak_components(indptr, indices, labels):
    """Connected components of a graph, its edges taken as undirected, by union-find over
    the CSR edges (scipy transposes the graph first, a fifth of a large spectral start;
    measured: benchmarks/results/library_notes.md, "unimap/initialization/components_numba.py").
    Components are numbered in the order of their smallest vertex, as scipy numbers them;
    returns their count."""
    n = labels.shape[0]
    parent = np.arange(n)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            a, b = _root(parent, i), _root(parent, indices[p])
            if a != b:  # the larger index hangs below the smaller
                parent[max(a, b)] = min(a, b)
    count = 0
    for i in range(n):  # a root is its component's smallest vertex, so it comes first
        root = _root(parent, i)
        if root == i:
            labels[i] = count
            count += 1
        else:
            labels[i] = labels[root]
    return count
