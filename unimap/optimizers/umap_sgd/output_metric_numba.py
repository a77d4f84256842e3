"""UMAP's SGD in a non-euclidean output space (umap-learn's ``output_metric``): the embedding on
the sphere (``"haversine"``: each row ``(θ, φ)``, polar and azimuthal angles in radians, as
umap-learn's; ``x = sin θ cos φ, y = sin θ sin φ, z = cos θ``) or in the hyperboloid model of
hyperbolic space (``"hyperboloid"``: each row the spatial coordinates ``x``, the point being
``(sqrt(1 + |x|²), x)``).

Each step follows the gradient of the low-dimensional kernel ``w = 1/(1 + a·d^(2b))`` of the
output distance ``d``, written as umap-learn's ``optimize_layout_generic`` does: attraction
``2b(w − 1)/(d + ε)·∇d`` on both ends of a sampled edge, repulsion ``2γb·w/(d + ε)·∇d`` on its
head. The edges, their colour classes, schedules and negative-sample streams are those of the
euclidean kernels (:mod:`unimap.optimizers.umap_sgd.epochs_numba`), so a fit is deterministic for
any thread count too. The metric is an integer argument, not a function, so that numba's disk cache
serves the kernels.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from unimap.optimizers.umap_sgd.epochs_numba import (
    EDGE_BLOCK,
    SERIAL_CLASS_SIZE,
    advance_schedule,
    clip_grad,
    draw_negative,
)
from unimap.runtime.dynamic_numba import claim
from unimap.runtime.rng_numba import hash_combine, mix64

HAVERSINE = 1
HYPERBOLOID = 2
OUTPUT_METRICS = {"haversine": HAVERSINE, "hyperboloid": HYPERBOLOID}

_EPS = 1e-6  # umap-learn's: in the gradients' denominators


@numba.njit(cache=True)
def distance_grad(metric, x, y, grad):
    """The output distance ``d(x, y)`` (float64), its gradient in ``x`` written to ``grad``.

    haversine: ``d = 2 asin(sqrt(h))``, ``h = sin²((θx − θy)/2) + sin θx sin θy
    sin²((φx − φy)/2)``; hyperboloid: ``d = acosh(B)``, ``B = s·t − <x, y>`` with
    ``s = sqrt(1 + |x|²)``, ``t = sqrt(1 + |y|²)`` (umap-learn's ``haversine_grad`` and
    ``hyperboloid_grad``)."""
    if metric == HAVERSINE:
        sin_lat = math.sin(0.5 * (x[0] - y[0]))
        cos_lat = math.cos(0.5 * (x[0] - y[0]))
        sin_long = math.sin(0.5 * (x[1] - y[1]))
        cos_long = math.cos(0.5 * (x[1] - y[1]))
        sin_x, sin_y = math.sin(x[0]), math.sin(y[0])
        h = sin_lat * sin_lat + sin_x * sin_y * sin_long * sin_long
        d = 2.0 * math.asin(math.sqrt(min(max(abs(h), 0.0), 1.0)))
        denom = math.sqrt(abs(h - 1.0)) * math.sqrt(abs(h)) + _EPS
        grad[0] = (sin_lat * cos_lat + math.cos(x[0]) * sin_y * sin_long * sin_long) / denom
        grad[1] = sin_x * sin_y * sin_long * cos_long / denom
        return d
    s2 = 1.0
    t2 = 1.0
    dot = 0.0
    for k in range(x.shape[0]):
        s2 += x[k] * x[k]
        t2 += y[k] * y[k]
        dot += x[k] * y[k]
    s, t = math.sqrt(s2), math.sqrt(t2)
    B = max(s * t - dot, 1.0 + 1e-8)
    coeff = 1.0 / (math.sqrt(B - 1.0) * math.sqrt(B + 1.0))
    for k in range(x.shape[0]):
        grad[k] = coeff * (x[k] * t / s - y[k])
    return math.acosh(B)


@numba.njit(inline="always", cache=True)
def _kernel_weight(d, a, b):
    return 1.0 / (1.0 + a * d ** (2.0 * b)) if d > 0.0 else 1.0


@numba.njit(inline="always", cache=True)
def _repel(y, pool, k, a, b, gamma, alpha, metric, grad):
    d = distance_grad(metric, y, pool[k], grad)
    if d > 0.0:  # coincident points: no direction (umap-learn's gradient is 0 there too)
        coeff = gamma * 2.0 * b * _kernel_weight(d, a, b) / (d + _EPS)
        for m in range(y.shape[0]):
            y[m] += np.float32(clip_grad(coeff * grad[m]) * alpha)


@numba.njit(inline="always", cache=True)
def _edge(e, emb, snapshot, heads, tails, epochs_per_sample, next_sample, epochs_per_negative,
          next_negative, seed_hash, epoch, a, b, gamma, alpha, metric, grad, rev):
    if next_sample[e] > epoch:
        return
    i, j = heads[e], tails[e]
    current, other = emb[i], emb[j]
    d = distance_grad(metric, current, other, grad)
    distance_grad(metric, other, current, rev)
    coeff = 2.0 * b * (_kernel_weight(d, a, b) - 1.0) / (d + _EPS)
    for m in range(current.shape[0]):
        current[m] += np.float32(clip_grad(coeff * grad[m]) * alpha)
        other[m] += np.float32(clip_grad(coeff * rev[m]) * alpha)
    head, n_neg, key = advance_schedule(e, i, epochs_per_sample, next_sample,
                                        epochs_per_negative, next_negative, seed_hash, epoch)
    n_draw = snapshot.shape[0] - 1
    for s in range(n_neg):
        _repel(current, snapshot, draw_negative(key, s, n_draw, head, True), a, b, gamma, alpha,
               metric, grad)


@numba.njit(parallel=True, cache=True)
def sgd_epoch_edges_metric(emb, snapshot, edges, schedule, kernel, seed, epoch, alpha,
                           n_workers, metric):
    """One fit epoch in the output space ``metric`` (:data:`OUTPUT_METRICS`), otherwise as
    :func:`unimap.optimizers.umap_sgd.epochs_numba.sgd_epoch_edges_nd`."""
    heads, tails, class_ptr = edges.heads, edges.tails, edges.class_ptr
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = np.float64(kernel.a), np.float64(kernel.b), np.float64(kernel.gamma)
    alpha = np.float64(alpha)
    seed_hash = mix64(np.uint64(seed))
    dim = emb.shape[1]
    grad, rev = np.empty(dim), np.empty(dim)
    for c in range(class_ptr.shape[0] - 1):
        start, stop = class_ptr[c], class_ptr[c + 1]
        if stop - start < SERIAL_CLASS_SIZE:
            for e in range(start, stop):
                _edge(e, emb, snapshot, heads, tails, epochs_per_sample, next_sample,
                      epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha,
                      metric, grad, rev)
        else:
            n_blocks = (stop - start + EDGE_BLOCK - 1) // EDGE_BLOCK
            next_block = np.zeros(1, np.int64)
            for _worker in numba.prange(n_workers):
                own, own_rev = np.empty(dim), np.empty(dim)
                block = claim(next_block)
                while block < n_blocks:
                    first = start + block * EDGE_BLOCK
                    for e in range(first, min(stop, first + EDGE_BLOCK)):
                        _edge(e, emb, snapshot, heads, tails, epochs_per_sample, next_sample,
                              epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                              gamma, alpha, metric, own, own_rev)
                    block = claim(next_block)


@numba.njit(parallel=True, cache=True)
def sgd_epoch_rows_metric(head, tail, rows, schedule, kernel, row_keys, seed, epoch, alpha,
                          metric):
    """One transform epoch in the output space ``metric``, otherwise as
    :func:`unimap.optimizers.umap_sgd.epochs_numba.sgd_epoch_rows`."""
    indptr, indices = rows.indptr, rows.indices
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = np.float64(kernel.a), np.float64(kernel.b), np.float64(kernel.gamma)
    alpha = np.float64(alpha)
    seed_hash = mix64(np.uint64(seed))
    n_tail = tail.shape[0]
    for i in numba.prange(indptr.shape[0] - 1):
        y = head[i]
        grad = np.empty(head.shape[1])
        row_hash = hash_combine(seed_hash, row_keys[i])
        for e in range(indptr[i], indptr[i + 1]):
            if next_sample[e] > epoch:
                continue
            d = distance_grad(metric, y, tail[indices[e]], grad)
            coeff = 2.0 * b * (_kernel_weight(d, a, b) - 1.0) / (d + _EPS)
            for m in range(y.shape[0]):
                y[m] += np.float32(clip_grad(coeff * grad[m]) * alpha)
            next_sample[e] += epochs_per_sample[e]
            n_neg = int((epoch - next_negative[e]) / epochs_per_negative[e])
            key = hash_combine(hash_combine(row_hash, e - indptr[i]), epoch)
            for s in range(n_neg):
                _repel(y, tail, draw_negative(key, s, n_tail, -1, False), a, b, gamma, alpha,
                       metric, grad)
            next_negative[e] += n_neg * epochs_per_negative[e]
