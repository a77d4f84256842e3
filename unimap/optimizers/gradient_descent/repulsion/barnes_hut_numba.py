"""Barnes-Hut repulsion for t-SNE (van der Maaten 2014): the tree's traversal, in numba.

The tree (a compressed 2-D quadtree / 3-D octree whose nodes own contiguous ranges of the
reordered points, stored in pre-order with skip indices) is built by
:mod:`unimap.optimizers.gradient_descent.repulsion.bh_tree_numba`; its layout is described there.
The kernel is the Student-t ``w = (1 + d²/dof)^-dof`` with the force factor ``w^((dof+1)/dof)``
(:func:`unimap.lowdim.similarity_numba.student_t_pair`).

Summary criterion (openTSNE's and sklearn's): a node is summarised by its centre of mass when
``cell side width / distance(point, centre of mass) < theta``. With ``theta = 0`` no node is
summarised and the sums are exact.

Self-exclusion in fit mode is exact: point ``i`` (at position ``p`` of the tree's order) never
takes a node whose range contains ``p`` as a summary, it descends to ``p``'s leaf and skips
``p`` there. (For ``theta < 1/sqrt(dim)`` such a node is never accepted anyway, since its side
is at least ``distance / sqrt(dim)``.) Other points coinciding with ``i`` count ``w = 1`` in
``z`` and add no force, as in the exact sum.

Each point's sums are computed by one thread from its own traversal, and ``z`` is summed
serially in tree order, so results are bitwise identical for any thread count.
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.lowdim.similarity_numba import student_t_pair
from unimap.optimizers.gradient_descent.repulsion.bh_tree_numba import (
    CODE_BITS,
    LEAF_SIZE,
    build_tree,
    code_frame,
    morton_sort,
)

__all__ = ["LEAF_SIZE", "build_tree", "repulsion_fit", "repulsion_query"]


@numba.njit(inline="always", cache=True)
def _offset(y0, y1, y2, three, xyz, k):
    """``(d0, d1, d2, |d|²)`` from row k of ``xyz`` to the point; ``d2 = 0`` unless ``three``.
    Unrolled, not :func:`unimap.runtime.distance_numba.sq_dist`: the differences stay in
    registers for the force."""
    d0 = y0 - xyz[k, 0]
    d1 = y1 - xyz[k, 1]
    r2 = d0 * d0 + d1 * d1
    d2 = 0.0
    if three:
        d2 = y2 - xyz[k, 2]
        r2 += d2 * d2
    return d0, d1, d2, r2


@numba.njit(inline="always", cache=True)
def _repel(y0, y1, y2, three, p, points, start, end, skip, com, count, side2, theta2, dof):
    """Repulsion sums ``(f0, f1, f2, z)`` on ``(y0, y1, y2)``, leaving out tree position ``p``
    (-1: none); ``three`` (a constant at each call, so that the compiler drops the other
    dimension's code and unrolls the coordinates) says whether the points are 3-D.

    Walks the nodes in pre-order: a node that does not hold ``p`` and passes the criterion is
    taken whole (its subtree skipped); otherwise a leaf is summed point by point and an
    internal node opened (its first child is next).
    """
    f0 = 0.0
    f1 = 0.0
    f2 = 0.0
    z = 0.0
    n_nodes = skip.shape[0]
    k = 0
    while k < n_nodes:
        s = start[k]
        e = end[k]
        if p < s or p >= e:
            d0, d1, d2, r2 = _offset(y0, y1, y2, three, com, k)
            if side2[k] < theta2 * r2:
                w, wf = student_t_pair(r2, dof)
                m = count[k]
                z += m * w
                wf *= m
                f0 += wf * d0
                f1 += wf * d1
                if three:
                    f2 += wf * d2
                k = skip[k]
                continue
        nxt = skip[k]
        if nxt == k + 1:
            for q in range(s, e):
                if q != p:
                    d0, d1, d2, r2 = _offset(y0, y1, y2, three, points, q)
                    w, wf = student_t_pair(r2, dof)
                    z += w
                    f0 += wf * d0
                    f1 += wf * d1
                    if three:
                        f2 += wf * d2
            k = nxt
        else:
            k += 1
    return f0, f1, f2, z


@numba.njit(parallel=True, cache=True, fastmath=True)
def repulsion_fit(points, order, start, end, skip, com, count, side2, theta, dof, forces):
    """Fit mode: ``forces[order[p]]`` for every tree point ``p`` (self excluded); return z.

    Points run in tree order (spatially coherent, so neighbouring iterations walk the same
    nodes); ``z`` is the serial sum of the per-point sums in that order.
    """
    n, dim = points.shape
    theta2 = theta * theta
    z_point = np.empty(n)
    if dim == 2:
        for p in numba.prange(n):
            f0, f1, _, z = _repel(points[p, 0], points[p, 1], 0.0, False, p, points, start, end,
                                  skip, com, count, side2, theta2, dof)
            i = order[p]
            forces[i, 0] = f0
            forces[i, 1] = f1
            z_point[p] = z
    else:
        for p in numba.prange(n):
            f0, f1, f2, z = _repel(points[p, 0], points[p, 1], points[p, 2], True, p, points,
                                   start, end, skip, com, count, side2, theta2, dof)
            i = order[p]
            forces[i, 0] = f0
            forces[i, 1] = f1
            forces[i, 2] = f2
            z_point[p] = z
    total = 0.0
    for p in range(n):
        total += z_point[p]
    return total


@numba.njit(parallel=True, cache=True, fastmath=True)
def repulsion_query(queries, points, start, end, skip, com, count, side2, theta, dof, forces,
                    z_out):
    """Transform mode: sums on each row of ``queries`` from all tree points.

    Queries run in their own Morton order (faster than in arbitrary order, since consecutive
    ones walk the same nodes; measured: benchmarks/results/library_notes.md,
    "unimap/optimizers/gradient_descent/repulsion/barnes_hut_numba.py"); each writes its own row.
    """
    m, dim = queries.shape
    theta2 = theta * theta
    bits = CODE_BITS[dim]
    lo, _, scale = code_frame(queries, bits)
    _, qorder = morton_sort(queries, lo, scale, bits)
    if dim == 2:
        for r in numba.prange(m):
            i = qorder[r]
            f0, f1, _, z = _repel(queries[i, 0], queries[i, 1], 0.0, False, -1, points, start,
                                  end, skip, com, count, side2, theta2, dof)
            forces[i, 0] = f0
            forces[i, 1] = f1
            z_out[i] = z
    else:
        for r in numba.prange(m):
            i = qorder[r]
            f0, f1, f2, z = _repel(queries[i, 0], queries[i, 1], queries[i, 2], True, -1,
                                   points, start, end, skip, com, count, side2, theta2, dof)
            forces[i, 0] = f0
            forces[i, 1] = f1
            forces[i, 2] = f2
            z_out[i] = z
