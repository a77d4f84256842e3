"""densMAP's epochs (Narayan, Berger & Cho 2021; umap-learn's ``densmap=True``): UMAP's SGD
plus a term that pulls the embedding's local radii towards the data's.

Each densMAP epoch first measures every point's local radius in the embedding,
``r_i = log(ε + Σ_j φ_ij d²_ij / Σ_j φ_ij)`` over its graph edges (:func:`density_stats`,
one serial pass over the edges, so the sums do not depend on the thread count), and the
correlation statistics of ``r`` with the data's standardised radii ``R``. Each sampled edge
then adds umap-learn's density gradient to its attraction (:func:`_density_attraction`,
``_optimize_layout_euclidean_single_epoch``'s ``densmap_flag`` branch, same expressions).
The epoch walks the edge colour classes of :mod:`unimap.optimizers.umap_sgd.epochs_numba` with
per-sample negatives, so it keeps their determinism for any thread count.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from unimap.lowdim.similarity_numba import sgd_attraction_coeff
from unimap.optimizers.umap_sgd.epochs_numba import (
    EDGE_BLOCK,
    SERIAL_CLASS_SIZE,
    advance_schedule,
    clip_grad,
    negatives_nd,
)
from unimap.runtime.distance_numba import sq_dist
from unimap.runtime.dynamic_numba import claim
from unimap.runtime.rng_numba import mix64

__all__ = ["DensityTerm", "density_stats", "sgd_epoch_edges_densmap"]

LOG_EPSILON = 1e-8  # umap-learn's ε inside the log of the radii


class DensityTerm(NamedTuple):
    """What the density gradient needs: the edges' weights ``mu`` (float32, in the epoch's
    edge order), the data's standardised log radii ``R`` (float32, n), scratch ``re_sum`` and
    ``phi_sum`` (float32, n), ``stats`` (float64[3]: the embedding radii's std, mean and
    covariance with ``R``, set by :func:`density_stats`), ``lam`` (dens_lambda) and
    ``weight_per_point`` (the edges' total weight over the number of points: umap-learn's
    ``dens_mu_tot / n_vertices``), float32."""

    mu: np.ndarray
    R: np.ndarray
    re_sum: np.ndarray
    phi_sum: np.ndarray
    stats: np.ndarray
    lam: np.float32
    weight_per_point: np.float32


@numba.njit(cache=True)
def density_stats(emb, heads, tails, a, b, var_shift, density):
    """The embedding's log radii into ``density.re_sum``, the kernel sums into
    ``density.phi_sum`` and ``(std, mean, covariance with R)`` into ``density.stats``."""
    re_sum, phi_sum, R = density.re_sum, density.phi_sum, density.R
    re_sum[:] = 0.0
    phi_sum[:] = 0.0
    for e in range(heads.shape[0]):
        j = heads[e]
        k = tails[e]
        d2 = sq_dist(emb, j, emb, k, np.float32(0.0))
        phi = 1.0 / (1.0 + a * d2 ** b)
        re_sum[j] += phi * d2
        re_sum[k] += phi * d2
        phi_sum[j] += phi
        phi_sum[k] += phi
    n = re_sum.shape[0]
    total = 0.0
    for i in range(n):
        re_sum[i] = math.log(LOG_EPSILON + re_sum[i] / phi_sum[i]) if phi_sum[i] > 0 else 0.0
        total += re_sum[i]
    mean = total / n
    var = 0.0
    cov = 0.0
    for i in range(n):
        var += (re_sum[i] - mean) ** 2
        cov += re_sum[i] * R[i]
    density.stats[0] = math.sqrt(var / n + var_shift)
    density.stats[1] = mean
    density.stats[2] = cov / (n - 1)


@numba.njit(inline="always", cache=True)
def _density_attraction(e, emb, heads, tails, epochs_per_sample, next_sample,
                        epochs_per_negative, next_negative, seed_hash, epoch, a, b, alpha,
                        density):
    """Edge ``e``'s attraction with the density gradient if it is due (both ends move);
    returns ``(head, n_neg, key)`` as
    :func:`unimap.optimizers.umap_sgd.epochs_numba._attract_edge`."""
    if next_sample[e] > epoch:
        return np.int64(-1), np.int64(-1), np.uint64(0)
    j = heads[e]
    k = tails[e]
    current = emb[j]
    other = emb[k]
    d2 = sq_dist(emb, j, emb, k, np.float32(0.0))
    coeff = sgd_attraction_coeff(d2, a, b)
    density_coeff = np.float32(0.0)
    if d2 > 0.0:
        re_sum, phi_sum, R = density.re_sum, density.phi_sum, density.R
        re_std, re_mean, re_cov = density.stats[0], density.stats[1], density.stats[2]
        pb = d2 ** b
        phi = 1.0 / (1.0 + a * pb)
        dphi_term = a * b * d2 ** (b - 1.0) / (1.0 + a * pb)
        q_jk = phi / phi_sum[k]
        q_kj = phi / phi_sum[j]
        drj = q_kj * ((1.0 - b * (1.0 - phi)) / math.exp(re_sum[j]) + dphi_term)
        drk = q_jk * ((1.0 - b * (1.0 - phi)) / math.exp(re_sum[k]) + dphi_term)
        weight_j = R[j] - re_cov * (re_sum[j] - re_mean) / (re_std * re_std)
        weight_k = R[k] - re_cov * (re_sum[k] - re_mean) / (re_std * re_std)
        density_coeff = np.float32(2.0 * density.lam * density.weight_per_point
                                   * (weight_j * drj + weight_k * drk)
                                   / (density.mu[e] * re_std))
    for d in range(current.shape[0]):
        diff = current[d] - other[d]
        g = (clip_grad(coeff * diff) + clip_grad(density_coeff * diff)) * alpha
        current[d] += g
        other[d] -= g
    return advance_schedule(e, j, epochs_per_sample, next_sample, epochs_per_negative,
                            next_negative, seed_hash, epoch)


@numba.njit(inline="always", cache=True)
def _density_edge(e, emb, snapshot, heads, tails, epochs_per_sample, next_sample,
                  epochs_per_negative, next_negative, seed_hash, epoch, a, b, gamma, alpha,
                  density):
    i, n_neg, key = _density_attraction(e, emb, heads, tails, epochs_per_sample, next_sample,
                                        epochs_per_negative, next_negative, seed_hash, epoch,
                                        a, b, alpha, density)
    if n_neg >= 0:
        negatives_nd(emb, i, i, snapshot, n_neg, key, a, b, gamma, alpha)


@numba.njit(parallel=True, cache=True, fastmath=True)
def sgd_epoch_edges_densmap(emb, snapshot, edges, schedule, kernel, density, seed, epoch,
                            alpha, n_workers):
    """One densMAP epoch: :func:`unimap.optimizers.umap_sgd.epochs_numba.sgd_epoch_edges_nd` with
    the density gradient on each attraction (``density``: :class:`DensityTerm`, its
    statistics set by :func:`density_stats` from this epoch's start)."""
    heads, tails, class_ptr = edges.heads, edges.tails, edges.class_ptr
    epochs_per_sample, next_sample = schedule.epochs_per_sample, schedule.next_sample
    epochs_per_negative, next_negative = schedule.epochs_per_negative, schedule.next_negative
    a, b, gamma = kernel.a, kernel.b, kernel.gamma
    seed_hash = mix64(np.uint64(seed))
    for c in range(class_ptr.shape[0] - 1):
        start, stop = class_ptr[c], class_ptr[c + 1]
        if stop - start < SERIAL_CLASS_SIZE:
            for e in range(start, stop):
                _density_edge(e, emb, snapshot, heads, tails, epochs_per_sample, next_sample,
                              epochs_per_negative, next_negative, seed_hash, epoch, a, b,
                              gamma, alpha, density)
        else:
            n_blocks = (stop - start + EDGE_BLOCK - 1) // EDGE_BLOCK
            next_block = np.zeros(1, np.int64)
            for _worker in numba.prange(n_workers):
                block = claim(next_block)
                while block < n_blocks:
                    first = start + block * EDGE_BLOCK
                    for e in range(first, min(stop, first + EDGE_BLOCK)):
                        _density_edge(e, emb, snapshot, heads, tails, epochs_per_sample,
                                      next_sample, epochs_per_negative, next_negative,
                                      seed_hash, epoch, a, b, gamma, alpha, density)
                    block = claim(next_block)
