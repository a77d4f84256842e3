"""Kernels of the FFT-interpolated t-SNE repulsion (FIt-SNE), driven by
:mod:`unimap.optimizers.gradient_descent.repulsion.fft`.

The embedding's bounding square is cut into ``nb`` boxes per dimension, each holding ``p``
equispaced interpolation nodes per dimension at ``(k + 0.5) / p`` of the box width. A point's
charges are spread onto the ``p^d`` nodes of its box with Lagrange weights (``scatter_*``), the
node-to-node kernel sums are an FFT convolution (done in numpy/scipy), and the node potentials
are interpolated back with the same weights and combined into the forces at once
(``gather_forces_*``).

Determinism for any thread count: points are counting-sorted by box (``sort_by_box``), the
scatter runs in parallel over *groups of box rows*, and only the points of box row ``r`` write
node rows ``r*p .. r*p+p-1``. So every grid cell is written by one thread, always from the same
points in the same order, whatever the grouping or the number of threads: no race, no private
grids to sum, and bitwise identical results. The gather owns one point per iteration; sums over
points or frequencies go through per-row partials added serially in a fixed order.

Point data are float64; the grids take the dtype the caller allocates (float64 in use).
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.lowdim.similarity_numba import student_t_pair
from unimap.runtime.dynamic_numba import ROW_BLOCK, claim, workers


@numba.njit(cache=True)
def _lagrange_denominators(p):
    """``1 / prod_{j != k} (x_k - x_j)`` for the nodes ``x_k = (k + 0.5) / p``."""
    inv = np.empty(p)
    for k in range(p):
        den = 1.0
        for j in range(p):
            if j != k:
                den *= (k - j) / p
        inv[k] = 1.0 / den
    return inv


@numba.njit(inline="always", cache=True)
def _lagrange(t, p, inv_den, out):
    """Lagrange basis on nodes ``(k + 0.5) / p`` at box-relative position ``t`` into ``out[:p]``."""
    for k in range(p):
        num = inv_den[k]
        for j in range(p):
            if j != k:
                num *= t - (j + 0.5) / p
        out[k] = num


@numba.njit(cache=True)
def bounds(Y):
    """Per-column min and max of ``Y`` (n, d), and whether all its values are finite.

    One pass instead of numpy's three (``isfinite(Y).all()`` and axis-0 ``min``/``max``;
    measured: benchmarks/results/library_notes.md,
    "unimap/optimizers/gradient_descent/repulsion/fft_numba.py").
    """
    n, dim = Y.shape
    lo = np.full(dim, np.inf)
    hi = np.full(dim, -np.inf)
    finite = True
    for i in range(n):
        for c in range(dim):
            v = Y[i, c]
            if not np.isfinite(v):
                finite = False
            if v < lo[c]:
                lo[c] = v
            if v > hi[c]:
                hi[c] = v
    return lo, hi, finite


@numba.njit(inline="always", cache=True)
def _box_of(v, origin, width, nb):
    """Box of coordinate ``v`` and its position in it (0..1); the upper edge goes to the last."""
    s = (v - origin) / width
    b = int(s)
    if b >= nb:
        b = nb - 1
    elif b < 0:
        b = 0
    return b, s - b


@numba.njit(cache=True)
def sort_by_box(Y, origin, width, nb):
    """Stable counting sort of the points by box, row-major (first coordinate slowest).

    Returns ``order`` (point indices in box order, int64) and ``row_ptr`` (nb + 1): box row
    ``r`` (first coordinate's box ``r``) holds the points ``order[row_ptr[r]:row_ptr[r + 1]]``.
    Serial, O(n + nb^d): cheap next to the FFTs (measured: library_notes.md as in
    :func:`bounds`).
    """
    n, dim = Y.shape
    n_keys = nb**dim
    counts = np.zeros(n_keys + 1, dtype=np.int64)
    keys = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = 0
        for c in range(dim):
            key = key * nb + _box_of(Y[i, c], origin[c], width, nb)[0]
        keys[i] = key
        counts[key + 1] += 1
    for k in range(n_keys):
        counts[k + 1] += counts[k]
    row_ptr = np.empty(nb + 1, dtype=np.int64)
    stride = n_keys // nb
    for r in range(nb + 1):
        row_ptr[r] = counts[r * stride]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = keys[i]
        order[counts[k]] = i
        counts[k] += 1
    return order, row_ptr


@numba.njit(inline="always", cache=True)
def _locate(Y, i, k, center, origin, width, nb, inv_den, yc, box, weights):
    """Row ``k`` (box order) of ``yc`` (centred coordinates), ``box`` and ``weights`` (Lagrange
    weights, (n, d, p)) for point ``i``."""
    p = weights.shape[2]
    for c in range(Y.shape[1]):
        v = Y[i, c]
        b, t = _box_of(v, origin[c], width, nb)
        yc[k, c] = v - center[c]
        box[k, c] = b
        _lagrange(t, p, inv_den, weights[k, c])


@numba.njit(cache=True)
def balanced_row_groups(row_ptr, n_groups):
    """Cut box rows into at most ``n_groups`` contiguous groups of about equal point counts.

    Only load balancing: the scatter's result does not depend on where the cuts fall.
    """
    nb = row_ptr.shape[0] - 1
    n = row_ptr[nb]
    bounds = np.empty(n_groups + 1, dtype=np.int64)
    bounds[0] = 0
    r = 0
    for g in range(1, n_groups):
        target = (n * g) // n_groups
        while r < nb and row_ptr[r] < target:
            r += 1
        bounds[g] = r
    bounds[n_groups] = nb
    return bounds


@numba.njit(cache=True)
def kernel_rows_2d(h, dof, out, a0, a1):
    """Rows ``a0:a1`` of both kernels at node offsets ``(a*h, b*h)``, ``0 <= a, b <= m``, in
    ``out`` (2, m+1, m+1).

    ``out[0] = w^((dof+1)/dof)`` (forces), ``out[1] = w`` (Z), ``w = (1 + r^2/dof)^-dof``.
    Offsets ``a == m`` or ``b == m`` are never needed (nodes are at most m-1 apart) and are 0.
    The DCT-I of these quadrants is the FFT of the kernels' even, circulant embedding of size
    2m. The kernels are :func:`~unimap.lowdim.similarity_numba.student_t_pair`'s (one ``pow`` per
    offset).
    """
    m = out.shape[1] - 1
    for a in range(a0, a1):
        for b in range(m + 1):
            if a == m or b == m:
                out[0, a, b] = 0.0
                out[1, a, b] = 0.0
                continue
            x = a * h
            y = b * h
            w, wt = student_t_pair(x * x + y * y, dof)
            out[0, a, b] = wt
            out[1, a, b] = w


@numba.njit(parallel=True, cache=True)
def scatter_2d(Y, center, origin, width, nb, order, row_ptr, group_bounds, yc, box, weights,
               grid, h, dof, kq):
    """Locate the points and spread their charges ``(1, yc_0, yc_1)`` onto ``grid[:, :, :m]``
    (grid (3, m, >= m), m = nb*p), zeroing it first; columns from ``m`` on (the FFT's zero
    padding) are left alone. Each group also evaluates its share of the kernel rows
    (``kernel_rows_2d`` into ``kq``): one parallel region instead of two, as each costs
    milliseconds when the machine is oversubscribed (numba's OpenMP layer waits for descheduled
    threads; measured: library_notes.md as in :func:`bounds`).

    Parallel over groups of box rows; each group owns the node rows of its box rows. Point ``k``
    in box order is ``Y[order[k]]``; its centred coordinates, box and Lagrange weights go to row
    ``k`` of ``yc`` (n, 2), ``box`` (n, 2) and ``weights`` (n, 2, p) for the gather, which
    then streams through them (in ``Y``'s order the scatter and gather were several times slower
    once the FFTs had flushed the caches; measured: as above).
    """
    p = weights.shape[2]
    m = grid.shape[1]
    inv_den = _lagrange_denominators(p)
    n_groups = group_bounds.shape[0] - 1
    for g in numba.prange(n_groups):
        kernel_rows_2d(h, dof, kq, g * (m + 1) // n_groups, (g + 1) * (m + 1) // n_groups)
        r0, r1 = group_bounds[g], group_bounds[g + 1]
        for t in range(3):
            for a in range(r0 * p, r1 * p):
                for b in range(m):
                    grid[t, a, b] = 0.0
        for k in range(row_ptr[r0], row_ptr[r1]):
            _locate(Y, order[k], k, center, origin, width, nb, inv_den, yc, box, weights)
            q1 = yc[k, 0]
            q2 = yc[k, 1]
            a0 = box[k, 0] * p
            b0 = box[k, 1] * p
            for a in range(p):
                wa = weights[k, 0, a]
                for b in range(p):
                    w = wa * weights[k, 1, b]
                    grid[0, a0 + a, b0 + b] += w
                    grid[1, a0 + a, b0 + b] += w * q1
                    grid[2, a0 + a, b0 + b] += w * q2


@numba.njit(parallel=True, cache=True)
def scatter_1d(Y, center, origin, width, nb, order, row_ptr, group_bounds, yc, box, weights,
               grid):
    """1-D ``scatter_2d``: charges ``(1, yc)`` onto ``grid`` (2, nb*p), zeroing it."""
    p = weights.shape[2]
    inv_den = _lagrange_denominators(p)
    for g in numba.prange(group_bounds.shape[0] - 1):
        r0, r1 = group_bounds[g], group_bounds[g + 1]
        for t in range(2):
            for a in range(r0 * p, r1 * p):
                grid[t, a] = 0.0
        for k in range(row_ptr[r0], row_ptr[r1]):
            _locate(Y, order[k], k, center, origin, width, nb, inv_den, yc, box, weights)
            q1 = yc[k, 0]
            a0 = box[k, 0] * p
            for a in range(p):
                w = weights[k, 0, a]
                grid[0, a0 + a] += w
                grid[1, a0 + a] += w * q1


@numba.njit(cache=True)
def kernel_quadrants_1d(h, m, dof, out):
    """1-D ``kernel_rows_2d``, all rows: ``out`` (2, m+1) at offsets ``a*h``, 0 at ``a == m``."""
    for a in range(m + 1):
        if a == m:
            out[0, a] = 0.0
            out[1, a] = 0.0
            continue
        x = a * h
        w, wt = student_t_pair(x * x, dof)
        out[0, a] = wt
        out[1, a] = w


@numba.njit(parallel=True, cache=True)
def apply_kernels_2d(spec, kspec, out):
    """Multiply the charge spectra by the force kernel's and return the Z-kernel energy.

    ``spec`` (3, L, m+1): rfft (last axis) / fft (middle axis) of the zero-padded charges, L = 2m.
    ``kspec`` (2, m+1, m+1): DCT-I of the ``kernel_rows_2d`` quadrants, i.e. the real, even kernel
    spectra at frequencies ``0..m``; frequency ``u > m`` reads ``L - u``. ``out`` (3, L, m+1)
    receives ``spec * kspec[0]`` (may be ``spec`` itself).

    Returns ``sum_nodes q0 * (K_Z conv q0) = sum_i sum_j w~_ij`` by Parseval, from the rfft half
    spectrum (columns 1..m-1 count twice): Z without inverse FFT or gather.
    """
    L = spec.shape[1]
    ncol = spec.shape[2]
    m = ncol - 1
    rows = np.empty(L)
    for u in numba.prange(L):
        uu = np.int64(u)
        if uu > m:
            uu = L - uu
        acc = 0.0
        for v in range(ncol):
            s0 = spec[0, u, v]
            e = (s0.real * s0.real + s0.imag * s0.imag) * kspec[1, uu, v]
            acc += e if (v == 0 or v == m) else 2.0 * e
            kf = kspec[0, uu, v]
            out[0, u, v] = s0 * kf
            out[1, u, v] = spec[1, u, v] * kf
            out[2, u, v] = spec[2, u, v] * kf
        rows[u] = acc
    total = 0.0
    for u in range(L):
        total += rows[u]
    return total / (L * L)


@numba.njit(cache=True)
def apply_kernels_1d(spec, kspec, out):
    """1-D ``apply_kernels_2d``: ``spec`` (2, m+1), ``kspec`` (2, m+1), ``out`` (2, m+1)."""
    ncol = spec.shape[1]
    m = ncol - 1
    L = 2 * m
    total = 0.0
    for v in range(ncol):
        s0 = spec[0, v]
        e = (s0.real * s0.real + s0.imag * s0.imag) * kspec[1, v]
        total += e if (v == 0 or v == m) else 2.0 * e
        kf = kspec[0, v]
        out[0, v] = s0 * kf
        out[1, v] = spec[1, v] * kf
    return total / L


def gather_forces_2d(yc, order, box, weights, pot, forces):
    """Interpolate the node potentials to the points and combine them into the forces.

    ``phi_t = sum_nodes W(node) pot[t, node]`` and ``forces[order[k]] = yc[k] * phi_0 -
    (phi_1, phi_2)`` = ``sum_j w~_ij^((dof+1)/dof) (y_i - y_j)``: point arrays in box order,
    ``forces`` in the caller's order; each point writes its own row, and numba's current
    threads claim blocks of points (:mod:`unimap.runtime.dynamic_numba`).
    """
    _gather_forces_2d(yc, order, box, weights, pot, forces, np.int64(workers()))


@numba.njit(parallel=True, cache=True)
def _gather_forces_2d(yc, order, box, weights, pot, forces, n_workers):
    n = order.shape[0]
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, np.int64)
    for _worker in numba.prange(n_workers):
        block = claim(next_block)
        while block < n_blocks:
            for k in range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK)):
                _gather_point_2d(yc, order, box, weights, pot, forces, k)
            block = claim(next_block)


@numba.njit(inline="always", cache=True)
def _gather_point_2d(yc, order, box, weights, pot, forces, k):
    p = weights.shape[2]
    a0 = box[k, 0] * p
    b0 = box[k, 1] * p
    f0 = 0.0
    f1 = 0.0
    f2 = 0.0
    for a in range(p):
        wa = weights[k, 0, a]
        g0 = 0.0
        g1 = 0.0
        g2 = 0.0
        for b in range(p):
            wb = weights[k, 1, b]
            g0 += wb * pot[0, a0 + a, b0 + b]
            g1 += wb * pot[1, a0 + a, b0 + b]
            g2 += wb * pot[2, a0 + a, b0 + b]
        f0 += wa * g0
        f1 += wa * g1
        f2 += wa * g2
    i = order[k]
    forces[i, 0] = yc[k, 0] * f0 - f1
    forces[i, 1] = yc[k, 1] * f0 - f2


@numba.njit(parallel=True, cache=True)
def gather_forces_1d(yc, order, box, weights, pot, forces):
    """1-D ``gather_forces_2d``: ``pot`` (2, nb*p)."""
    p = weights.shape[2]
    n = order.shape[0]
    for k in numba.prange(n):
        a0 = box[k, 0] * p
        f0 = 0.0
        f1 = 0.0
        for a in range(p):
            w = weights[k, 0, a]
            f0 += w * pot[0, a0 + a]
            f1 += w * pot[1, a0 + a]
        forces[order[k], 0] = yc[k, 0] * f0 - f1
