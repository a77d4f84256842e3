"""t-SNE's gradient pieces and its gains/momentum step (numba).

Kernel: ``w_ij = (1 + d_ij²/α)^-α`` (α = ``dof``; α = 1 is the Cauchy kernel of t-SNE), written
through ``t_ij = 1/(1 + d_ij²/α)``: ``w = t^α`` (:mod:`unimap.lowdim.similarity_numba`). The KL
gradient is

    ∂C/∂y_i = 4 Σ_j (p_ij − w_ij/Z) t_ij (y_i − y_j)
            = 4 [attraction_i − repulsion_i / Z],

with ``attraction_i = Σ_j p_ij t_ij (y_i − y_j)`` over the sparse P and
``repulsion_i = Σ_j w_ij t_ij (y_i − y_j)``, ``Z = Σ_{k≠l} w_kl`` over all pairs (exact here,
Barnes-Hut or FFT elsewhere). Every loop owns its output row, so results do not depend on the
number of threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from unimap.lowdim.similarity_numba import student_t, student_t_pair
from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.dynamic_numba import ROW_BLOCK, claim, workers


def attraction(indptr, indices, data, Yq, Yref, dof, out):
    """``out[i] = Σ_j p_ij t_ij (y_i − y_j)`` over row i of the CSR matrix P, with ``y_i`` from
    ``Yq`` and ``y_j`` from ``Yref`` (the same array in fit, the fixed embedding in transform).

    The hottest loop of t-SNE after the repulsion (MNIST-70k: ~9M non-zeros per iteration):
    2-D has its own path with the accumulators in registers. Numba's current threads claim
    blocks of rows (:mod:`unimap.runtime.dynamic_numba`).
    """
    _attraction_rows(indptr, indices, data, Yq, Yref, dof, out, np.int64(workers()))


@numba.njit(parallel=True, cache=True)
def _attraction_rows(indptr, indices, data, Yq, Yref, dof, out, n_workers):
    m, dim = Yq.shape
    n_blocks = (m + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, np.int64)
    for _worker in numba.prange(n_workers):
        block = claim(next_block)
        while block < n_blocks:
            for i in range(block * ROW_BLOCK, min(m, (block + 1) * ROW_BLOCK)):
                if dim == 2:
                    attraction_row_2d(indptr, indices, data, Yq, Yref, dof, out, i)
                else:
                    _attraction_row_nd(indptr, indices, data, Yq, Yref, dof, out, i)
            block = claim(next_block)


@numba.njit(inline="always", cache=True)
def attraction_row_2d(indptr, indices, data, Yq, Yref, dof, out, i):
    yi0, yi1 = Yq[i, 0], Yq[i, 1]
    acc0, acc1 = 0.0, 0.0
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        d0 = yi0 - Yref[j, 0]
        d1 = yi1 - Yref[j, 1]
        f = data[e] * student_t(d0 * d0 + d1 * d1, dof)
        acc0 += f * d0
        acc1 += f * d1
    out[i, 0] = acc0
    out[i, 1] = acc1


@numba.njit(inline="always", cache=True)
def _attraction_row_nd(indptr, indices, data, Yq, Yref, dof, out, i):
    dim = Yq.shape[1]
    for c in range(dim):
        out[i, c] = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        f = data[e] * student_t(sq_dist(Yq, i, Yref, j, 0.0), dof)
        for c in range(dim):
            out[i, c] += f * (Yq[i, c] - Yref[j, c])


@numba.njit(inline="always", cache=True)
def kl_term(p, log_w):
    """``p (log p − log w)``: a pair's term of KL(P‖Q) (see :func:`kl_value`), for p > 0.

    Numba compiles it for scalars; :func:`unimap.metrics.tsne_kl_divergence` evaluates its
    Python body (``kl_term.py_func``) on numpy arrays of pairs.
    """
    return p * (np.log(p) - log_w)


def kl_value(attractive, log_z, p_total=1.0):
    """KL(P‖Q) with ``q = w/Z``: ``Σ p log(p/w) + (Σ p) log Z``, from ``attractive`` (the
    sum of :func:`kl_term` over the pairs with p > 0), ``log Z`` and ``Σ p`` (1 for a
    joint distribution)."""
    return float(attractive + p_total * log_z)


@numba.njit(parallel=True, cache=True)
def _attractive_kl_rows(indptr, indices, data, Y, dof, rows):
    n = Y.shape[0]
    for i in numba.prange(n):
        acc = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            p = data[e]
            if p <= 0.0:
                continue
            j = indices[e]
            acc += kl_term(p, np.log(student_t_pair(sq_dist(Y, i, Y, j, 0.0), dof)[0]))
        rows[i] = acc


@numba.njit(cache=True)
def attractive_kl(indptr, indices, data, Y, dof):
    """``Σ_ij kl_term(p_ij, log w_ij)``, the first part of :func:`kl_value`."""
    rows = np.empty(Y.shape[0])
    _attractive_kl_rows(indptr, indices, data, Y, dof, rows)
    return rows.sum()


@numba.njit(parallel=True, cache=True)
def exact_repulsion_rows(Yq, Yref, dof, skip_self, forces, z_rows):
    """Exact ``Σ_j w_ij t_ij (y_i − y_j)`` and ``Σ_j w_ij`` of each query row against every
    reference row (O(m·n)); ``skip_self`` drops the pair (i, i) when ``Yq`` is ``Yref``."""
    m, dim = Yq.shape
    n = Yref.shape[0]
    for i in numba.prange(m):
        for c in range(dim):
            forces[i, c] = 0.0
        z = 0.0
        for j in range(n):
            if skip_self and j == i:
                continue
            w, f = student_t_pair(sq_dist(Yq, i, Yref, j, 0.0), dof)
            z += w
            for c in range(dim):
                forces[i, c] += f * (Yq[i, c] - Yref[j, c])
        z_rows[i] = z


def gradient_step(Y, attr, rep, inv_z, exaggeration, update, gains, momentum, learning_rate,
                  min_gain, max_grad_norm, max_step_norm):
    """One step of gradient descent with momentum and per-coordinate gains (Jacobs 1988, as in
    the reference t-SNE implementations), updating ``Y``, ``update`` and ``gains`` in place.

    ``grad_i = 4 (exaggeration · attr_i − rep_i · inv_z)``; ``inv_z`` has one entry (fit: one
    Z for all pairs) or one per row (transform: each new point has its own Z). A gradient
    longer than ``max_grad_norm`` and a step longer than ``max_step_norm`` are scaled down
    (non-positive: no clipping); this keeps a point that sits on top of others from being
    thrown far away, which would also blow up the FFT grid.
    """
    _gradient_step_rows(Y, attr, rep, inv_z, exaggeration, update, gains, momentum,
                        learning_rate, min_gain, max_grad_norm, max_step_norm,
                        np.int64(workers()))


@numba.njit(parallel=True, cache=True)
def _gradient_step_rows(Y, attr, rep, inv_z, exaggeration, update, gains, momentum,
                        learning_rate, min_gain, max_grad_norm, max_step_norm, n_workers):
    n = Y.shape[0]
    per_row = inv_z.shape[0] > 1
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    next_block = np.zeros(1, np.int64)
    for _worker in numba.prange(n_workers):
        block = claim(next_block)
        while block < n_blocks:
            for i in range(block * ROW_BLOCK, min(n, (block + 1) * ROW_BLOCK)):
                scale_z = inv_z[i] if per_row else inv_z[0]
                gradient_step_row(Y, attr, rep, scale_z, exaggeration, update, gains, momentum,
                                  learning_rate, min_gain, max_grad_norm, max_step_norm, i)
            block = claim(next_block)


@numba.njit(inline="always", cache=True)
def gradient_step_row(Y, attr, rep, scale_z, exaggeration, update, gains, momentum,
                      learning_rate, min_gain, max_grad_norm, max_step_norm, i):
    """Row i of :func:`gradient_step` (also the GPU's:
    :mod:`unimap.optimizers.gdr.normalized_cuda`)."""
    dim = Y.shape[1]
    # math.sqrt, not np.sqrt: the same correctly rounded square root, and CUDA's ufunc table
    # lacks np.sqrt. The gradient is computed twice instead of kept in a per-row array: an
    # allocation inside the parallel loop costs a malloc per row, and two threads' buffers
    # can share a cache line (see _normalized_forces_2d's tiles). Same expression, so the same bits.
    norm2 = 0.0
    for c in range(dim):
        g = 4.0 * (exaggeration * attr[i, c] - rep[i, c] * scale_z)
        norm2 += g * g
    shrink = 1.0
    if max_grad_norm > 0.0 and norm2 > max_grad_norm * max_grad_norm:
        shrink = max_grad_norm / math.sqrt(norm2)
    step2 = 0.0
    for c in range(dim):
        g = 4.0 * (exaggeration * attr[i, c] - rep[i, c] * scale_z) * shrink
        if (g > 0.0) != (update[i, c] > 0.0):
            gains[i, c] += 0.2
        else:
            gains[i, c] = max(gains[i, c] * 0.8, min_gain)
        update[i, c] = momentum * update[i, c] - learning_rate * gains[i, c] * g
        step2 += update[i, c] * update[i, c]
    if max_step_norm > 0.0 and step2 > max_step_norm * max_step_norm:
        shrink = max_step_norm / math.sqrt(step2)
        for c in range(dim):
            update[i, c] *= shrink
    for c in range(dim):
        Y[i, c] += update[i, c]
