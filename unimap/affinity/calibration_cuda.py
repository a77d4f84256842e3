"""The per-point calibrations of the affinities on a GPU: one thread per row, running the CPU
kernels' row functions (:func:`unimap.affinity.fuzzy_numba.smooth_row`,
:func:`~unimap.affinity.fuzzy_numba.membership_row`,
:func:`unimap.affinity.perplexity_numba.perplexity_row`), so each formula is written once.

Rows are independent and no thread reads another's result, so the outputs do not depend on
the schedule; they equal the CPU's up to the GPU's rounding of ``exp`` and ``log``.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from unimap.affinity.fuzzy_numba import membership_row, smooth_row
from unimap.affinity.perplexity_numba import perplexity_row
from unimap.runtime.common_cuda import as_device, on_target, rows_launch

__all__ = ["fuzzy_memberships_cuda", "conditional_probabilities_cuda"]

_smooth, _membership, _perplexity = (on_target(f) for f in
                                     (smooth_row, membership_row, perplexity_row))


@cuda.jit(cache=True)
def _smooth_rows(distances, local_connectivity, target, mean_all, rhos, sigmas):
    i = cuda.grid(1)
    if i < distances.shape[0]:
        _smooth(distances[i], local_connectivity, target, mean_all, rhos, sigmas, i)


@cuda.jit(fastmath=True, cache=True)
def _membership_rows(indices, distances, rhos, sigmas, skip_self, weights):
    i = cuda.grid(1)
    if i < distances.shape[0]:
        _membership(indices, distances, rhos, sigmas, skip_self, weights, i)


@cuda.jit(cache=True)
def _perplexity_rows(sq_distances, target, probabilities, betas):
    i = cuda.grid(1)
    if i < sq_distances.shape[0]:
        _perplexity(sq_distances[i], target, probabilities, betas, i)


def fuzzy_memberships_cuda(indices: np.ndarray, distances: np.ndarray, n_target: float,
                           local_connectivity: float, bandwidth: float = 1.0,
                           skip_self: bool = True):
    """UMAP's directed memberships on the GPU: ``(weights, sigmas, rhos)``, the weights a
    device array of shape (n, k) float32 (they feed the symmetrisation there), σ and ρ host
    arrays (fitted attributes). As :func:`unimap.affinity.fuzzy.smooth_knn_dist` followed by
    :func:`unimap.affinity.fuzzy.membership_weights`."""
    from unimap.affinity.fuzzy_numba import array_mean

    distances = np.ascontiguousarray(distances, dtype=np.float32)
    n = distances.shape[0]
    target = np.log2(n_target) * bandwidth
    d_distances, d_indices = as_device(distances), as_device(
        np.ascontiguousarray(indices, dtype=np.int32))
    rhos = cuda.device_array(n, dtype=np.float32)
    sigmas = cuda.device_array(n, dtype=np.float32)
    launch = rows_launch(n)
    # the mean of all distances (σ's floor for rows without a positive ρ) as the CPU sums it
    _smooth_rows[launch](d_distances, float(local_connectivity), float(target),
                         array_mean(distances), rhos, sigmas)
    weights = cuda.device_array(distances.shape, dtype=np.float32)
    _membership_rows[launch](d_indices, d_distances, rhos, sigmas, skip_self, weights)
    return weights, sigmas.copy_to_host(), rhos.copy_to_host()


def conditional_probabilities_cuda(distances: np.ndarray, perplexity: float):
    """t-SNE's conditional probabilities on the GPU: ``(probabilities, sigmas)``, the first a
    device array (n, k) float64, the second on the host; as
    :func:`unimap.affinity.perplexity.conditional_probabilities`."""
    sq = np.ascontiguousarray(np.square(np.asarray(distances, dtype=np.float64)))
    n = sq.shape[0]
    probabilities = cuda.device_array(sq.shape, dtype=np.float64)
    betas = cuda.device_array(n, dtype=np.float64)
    _perplexity_rows[rows_launch(n)](as_device(sq), float(np.log(perplexity)), probabilities,
                                     betas)
    with np.errstate(divide="ignore"):
        sigmas = np.sqrt(0.5 / betas.copy_to_host())
    return probabilities, sigmas
