"""Barnes-Hut tree for t-SNE's repulsion (:mod:`.barnes_hut_numba`): its build, in numba.

The tree is a *compressed* space-partitioning tree (2-D quadtree / 3-D octree) over a copy of
the points reordered so that every node owns a contiguous range ``[start, end)`` of them:

- A node's cell is the smallest dyadic sub-cell of the root square/cube that holds its points'
  bounding box, so chains of single-child cells (a tight cluster far from the rest) collapse
  into one node; a cell is opened into its non-empty children only, of which it has at least 2.
  Acceptance decisions are the same as in an uncompressed quadtree: a chain's cells share one
  centre of mass and the kept cell is the smallest of them.
- Nodes are stored in depth-first pre-order with a ``skip`` index (the node after the subtree):
  the first child of node ``k`` is ``k + 1``, a leaf has ``skip[k] == k + 1``. The traversal is
  then a loop without a stack that walks the node arrays forward.
- A leaf holds at most ``LEAF_SIZE`` points, or more when they coincide (zero bounding box) or
  when its cell is ``MAX_LEVEL`` halvings below the root (points closer than ~1e-38 of the
  data's span); so duplicates cannot recurse forever. Leaves that are not summarised are summed
  point by point, so the depth cap never costs exactness.
"""

from __future__ import annotations

import numba
import numpy as np

# Most points in a leaf that does not hold coinciding points: larger leaves build and walk
# faster, up to a power per exact pair with dof != 1 (measured:
# benchmarks/results/architecture_notes.md).
LEAF_SIZE = 8
MAX_LEVEL = 128  # most halvings of the root cell (then a leaf holds the points whatever they are)
CODE_BITS = (0, 0, 31, 21)  # Morton code bits per coordinate, by dimension (62 and 63 in all)


@numba.njit(cache=True)
def build_tree(Y):
    """Build the tree over ``Y`` (n, dim) float64; return its arrays (see ``BHTree``).

    Serial, in O(n) passes plus O(nodes log n): the points are sorted by Morton code
    (``CODE_BITS[dim]`` bits per coordinate, relative to the bounding square/cube), which
    orders them as a depth-first walk of the quadtree/octree, so that every cell's points are
    contiguous. Nodes are then made top-down from a work stack: a node's cell is the first
    level where its first and last codes differ, and its children are found by binary search.
    Points whose codes coincide but not their coordinates (closer than ``span / 2**bits``)
    are split further geometrically (bounding box, then a counting scatter into the child
    cells), down to ``MAX_LEVEL``. The node arrays are preallocated at their bound, ``2n - 1``
    (every internal node has two children or more, every leaf a point or more).
    """
    n, dim = Y.shape
    n, dim = Y.shape
    bits = CODE_BITS[dim]
    lo, span, scale = code_frame(Y, bits)
    codes, order = morton_sort(Y, lo, scale, bits)
    points = np.empty_like(Y)
    for p in range(n):
        for a in range(dim):
            points[p, a] = Y[order[p], a]
    start, end, parent, centre, half_width, n_nodes = _make_nodes(points, order, codes, lo,
                                                                  span, scale, bits)
    com, count, skip = _summarise(points, start[:n_nodes], end[:n_nodes], parent[:n_nodes])
    side2 = np.empty(n_nodes)
    for k in range(n_nodes):
        side2[k] = 4.0 * half_width[k] * half_width[k]
    return (points, order, start[:n_nodes].copy(), end[:n_nodes].copy(), skip, com, count,
            centre[:n_nodes].copy(), half_width[:n_nodes].copy(), side2)


@numba.njit(inline="always", cache=True)
def _make_nodes(points, order, codes, lo, span, scale, bits):
    """The nodes' ``(start, end, parent, centre, half_width)`` in pre-order, made top-down from
    a work stack, in arrays of the bound ``2n - 1`` whose first ``n_nodes`` (returned last)
    are used; ``points`` and ``order`` are reordered in place by geometric splits. Inlined:
    as a call, the build took longer (measured: benchmarks/results/architecture_notes.md)."""
    n, dim = points.shape
    max_nodes = max(2 * n - 1, 1)
    start = np.empty(max_nodes, dtype=np.int64)
    end = np.empty(max_nodes, dtype=np.int64)
    parent = np.empty(max_nodes, dtype=np.int64)
    centre = np.empty((max_nodes, dim))
    half_width = np.empty(max_nodes)
    # work stack: at most (2**dim - 1) pending siblings per level, plus the item in hand
    stack_size = ((1 << dim) - 1) * (MAX_LEVEL + 2) + 2
    st_start = np.empty(stack_size, dtype=np.int64)
    st_end = np.empty(stack_size, dtype=np.int64)
    st_parent = np.empty(stack_size, dtype=np.int64)
    st_level = np.empty(stack_size, dtype=np.int64)
    st_centre = np.empty((stack_size, dim))
    st_half = np.empty(stack_size)
    c = np.empty(dim)
    bounds = np.empty((1 << dim) + 1, dtype=np.int64)
    buf_points = np.empty((0, dim))
    buf_order = np.empty(0, dtype=np.int64)
    n_nodes = 0
    top = 0
    if n > 0:
        st_start[0] = 0
        st_end[0] = n
        st_parent[0] = -1
        st_level[0] = 0
        st_half[0] = 0.5 * span
        for a in range(dim):
            st_centre[0, a] = lo[a] + 0.5 * span
        top = 1
    while top > 0:
        top -= 1
        s = st_start[top]
        e = st_end[top]
        level = st_level[top]
        h = st_half[top]
        for a in range(dim):
            c[a] = st_centre[top, a]
        k = n_nodes
        n_nodes += 1
        start[k] = s
        end[k] = e
        parent[k] = st_parent[top]
        is_leaf = e - s <= LEAF_SIZE
        if not is_leaf and level < bits:
            level, h = _morton_cell(codes, points, s, e, level, h, lo, span, scale, bits, c,
                                    bounds)
        if not is_leaf and level >= bits:
            if buf_order.shape[0] == 0:
                buf_points = np.empty_like(points)
                buf_order = np.empty_like(order)
            level, h = _split_geometric(points, order, s, e, c, h, level, bounds, buf_points,
                                        buf_order)
            is_leaf = level >= MAX_LEVEL
        for a in range(dim):
            centre[k, a] = c[a]
        half_width[k] = h
        if not is_leaf:
            top = _push_children(st_start, st_end, st_parent, st_level, st_centre, st_half,
                                 top, bounds, k, level, h, c)
    return start, end, parent, centre, half_width, n_nodes


@numba.njit(inline="always", cache=True)
def _morton_cell(codes, points, s, e, level, h, lo, span, scale, bits, c, bounds):
    """Cell of the points ``[s, e)`` from their Morton codes: the first level from ``level`` on
    where their first and last codes differ. Sets its centre ``c`` and the children's ranges
    ``bounds`` (by binary search); returns the level and half-width. When the codes all
    coincide the level is ``bits`` and the cell the one at the codes' resolution (the caller
    then splits geometrically)."""
    dim = points.shape[1]
    n_child = 1 << dim
    top_q = (1 << bits) - 1
    first = codes[s]
    last = codes[e - 1]
    while level < bits and (first >> (dim * (bits - level - 1))) == (
            last >> (dim * (bits - level - 1))):
        level += 1
    if level < bits:
        h = 0.5 * span * 0.5 ** level
        for a in range(dim):
            cell = _quantize(points[s, a], lo[a], scale, top_q) >> (bits - level)
            c[a] = lo[a] + (2 * cell + 1) * h
        shift = dim * (bits - level - 1)
        prefix = (first >> (shift + dim)) << (shift + dim)
        bounds[0] = s
        bounds[n_child] = e
        for b in range(1, n_child):
            bounds[b] = _lower_bound(codes, bounds[b - 1], e, prefix | (b << shift))
    else:
        h = 0.5 * span * 0.5 ** bits
        for a in range(dim):
            c[a] = lo[a] + (2 * _quantize(points[s, a], lo[a], scale, top_q) + 1) * h
    return level, h


@numba.njit(inline="always", cache=True)
def _push_children(st_start, st_end, st_parent, st_level, st_centre, st_half, top, bounds, k,
                   level, h, c):
    """Push node k's non-empty children, last first, so that the first is popped next
    (pre-order numbering: the first child of node k is k + 1); returns the new top."""
    dim = c.shape[0]
    for b in range((1 << dim) - 1, -1, -1):
        if bounds[b] < bounds[b + 1]:
            st_start[top] = bounds[b]
            st_end[top] = bounds[b + 1]
            st_parent[top] = k
            st_level[top] = level + 1
            st_half[top] = 0.5 * h
            for a in range(dim):
                st_centre[top, a] = c[a] + (0.5 * h if (b >> a) & 1 else -0.5 * h)
            top += 1
    return top


@numba.njit(cache=True)
def code_frame(Y, bits):
    """Lower corner, side and quantisation scale of the bounding square/cube of ``Y``."""
    n, dim = Y.shape
    lo = np.zeros(dim)
    hi = np.zeros(dim)
    span = 0.0
    if n > 0:
        _bounding_box(Y, 0, n, lo, hi)
        for a in range(dim):
            span = max(span, hi[a] - lo[a])
    scale = (1 << bits) / span if span > 0.0 else 0.0
    return lo, span, scale


@numba.njit(cache=True)
def morton_sort(Y, lo, scale, bits):
    """Morton codes of the rows of ``Y``, sorted, and the sorting permutation."""
    n, dim = Y.shape
    top_q = (1 << bits) - 1
    codes = np.empty(n, dtype=np.int64)
    for i in range(n):
        code = 0
        for a in range(dim):
            code |= _spread_bits(_quantize(Y[i, a], lo[a], scale, top_q), dim) << a
        codes[i] = code
    return _radix_sort(codes, dim * bits)


@numba.njit(inline="always", cache=True)
def _quantize(v, lo, scale, top_q):
    """Integer cell of ``v`` at the codes' resolution (``v >= lo``)."""
    return min(np.int64((v - lo) * scale), top_q)


@numba.njit(inline="always", cache=True)
def _spread_bits(x, dim):
    """Put bit ``j`` of ``x`` at bit ``dim * j`` (31 bits for dim 2, 21 for dim 3)."""
    if dim == 2:
        x &= 0x7FFFFFFF
        x = (x | (x << 16)) & 0x0000FFFF0000FFFF
        x = (x | (x << 8)) & 0x00FF00FF00FF00FF
        x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0F
        x = (x | (x << 2)) & 0x3333333333333333
        return (x | (x << 1)) & 0x5555555555555555
    x &= 0x1FFFFF
    x = (x | (x << 32)) & 0x1F00000000FFFF
    x = (x | (x << 16)) & 0x1F0000FF0000FF
    x = (x | (x << 8)) & 0x100F00F00F00F00F
    x = (x | (x << 4)) & 0x10C30C30C30C30C3
    return (x | (x << 2)) & 0x1249249249249249


@numba.njit(cache=True)
def _radix_sort(keys, n_bits):
    """Stable LSD radix sort of non-negative int64 ``keys`` < 2**n_bits (11-bit digits; a
    digit all keys share is skipped). Returns the sorted keys and the permutation."""
    n = keys.shape[0]
    radix = 11
    mask = (1 << radix) - 1
    n_pass = (n_bits + radix - 1) // radix
    hist = np.zeros((n_pass, 1 << radix), dtype=np.int64)
    for i in range(n):
        key = keys[i]
        for d in range(n_pass):
            hist[d, (key >> (radix * d)) & mask] += 1
    src_keys = keys.copy()
    src_index = np.arange(n)
    dst_keys = np.empty_like(src_keys)
    dst_index = np.empty_like(src_index)
    for d in range(n_pass):
        h = hist[d]
        if n == 0 or h[(src_keys[0] >> (radix * d)) & mask] == n:
            continue
        pos = 0
        for b in range(1 << radix):
            count = h[b]
            h[b] = pos
            pos += count
        for i in range(n):
            key = src_keys[i]
            b = (key >> (radix * d)) & mask
            t = h[b]
            h[b] = t + 1
            dst_keys[t] = key
            dst_index[t] = src_index[i]
        src_keys, dst_keys = dst_keys, src_keys
        src_index, dst_index = dst_index, src_index
    return src_keys, src_index


@numba.njit(inline="always", cache=True)
def _lower_bound(values, lo, hi, key):
    """First position in ``values[lo:hi]`` (sorted) holding ``>= key``; ``hi`` if none."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _split_geometric(points, order, s, e, c, h, level, bounds, buf_points, buf_order):
    """Split ``[s, e)`` by coordinates, for points the Morton codes cannot tell apart:
    shrink cell ``(c, h)`` (``c`` in place) to the smallest sub-cell holding the points'
    bounding box and scatter them into its children, writing the child ranges to ``bounds``.
    Returns the new level and half-width; level ``MAX_LEVEL`` means a leaf (with ``h = 0``
    when all the points coincide)."""
    dim = points.shape[1]
    n_child = 1 << dim
    lo = np.empty(dim)
    hi = np.empty(dim)
    _bounding_box(points, s, e, lo, hi)
    flat = True
    for a in range(dim):
        if hi[a] > lo[a]:
            flat = False
    if flat:
        return MAX_LEVEL, 0.0
    level, h = _shrink_cell(c, h, level, lo, hi)
    if level >= MAX_LEVEL:
        return level, h
    counts = np.zeros(n_child, dtype=np.int64)
    for q in range(s, e):
        counts[_child_of(points, q, c)] += 1
    bounds[0] = s
    for b in range(n_child):
        bounds[b + 1] = bounds[b] + counts[b]
    offsets = bounds[:n_child].copy()
    for q in range(s, e):
        b = _child_of(points, q, c)
        t = offsets[b]
        offsets[b] = t + 1
        for a in range(dim):
            buf_points[t, a] = points[q, a]
        buf_order[t] = order[q]
    for q in range(s, e):
        for a in range(dim):
            points[q, a] = buf_points[q, a]
        order[q] = buf_order[q]
    return level, h


@numba.njit(inline="always", cache=True)
def _bounding_box(points, s, e, lo, hi):
    for a in range(points.shape[1]):
        lo[a] = points[s, a]
        hi[a] = points[s, a]
    for q in range(s + 1, e):
        for a in range(points.shape[1]):
            v = points[q, a]
            if v < lo[a]:
                lo[a] = v
            elif v > hi[a]:
                hi[a] = v


@numba.njit(inline="always", cache=True)
def _child_of(points, q, c):
    b = 0
    for a in range(points.shape[1]):
        if points[q, a] >= c[a]:
            b |= 1 << a
    return b


@numba.njit(inline="always", cache=True)
def _shrink_cell(c, h, level, lo, hi):
    """Descend from cell ``(c, h)`` while the bounding box ``[lo, hi]`` lies in one child.
    Updates ``c`` in place; returns the new level and half-width. Stops at ``MAX_LEVEL`` (the
    caller then makes a leaf), which also bounds the loop whatever the rounding of ``c``."""
    while level < MAX_LEVEL:
        for a in range(c.shape[0]):
            if lo[a] < c[a] <= hi[a]:
                return level, h
        for a in range(c.shape[0]):
            if lo[a] >= c[a]:
                c[a] += 0.5 * h
            else:
                c[a] -= 0.5 * h
        h *= 0.5
        level += 1
    return level, h


@numba.njit(cache=True)
def _summarise(points, start, end, parent):
    """Centres of mass, point counts and skip indices, bottom-up (children follow parents)."""
    n_nodes = start.shape[0]
    dim = points.shape[1]
    sums = np.zeros((n_nodes, dim))
    size = np.ones(n_nodes, dtype=np.int64)
    count = np.empty(n_nodes)
    for k in range(n_nodes - 1, -1, -1):
        if k + 1 < n_nodes and parent[k + 1] == k:
            pass  # internal: its children already added their sums and sizes
        else:
            for q in range(start[k], end[k]):
                for a in range(dim):
                    sums[k, a] += points[q, a]
        p = parent[k]
        if p >= 0:
            size[p] += size[k]
            for a in range(dim):
                sums[p, a] += sums[k, a]
    skip = np.empty(n_nodes, dtype=np.int64)
    for k in range(n_nodes):
        skip[k] = k + size[k]
        count[k] = end[k] - start[k]
        for a in range(dim):
            sums[k, a] /= count[k]
    return sums, count, skip
