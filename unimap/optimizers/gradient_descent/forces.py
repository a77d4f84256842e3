"""The forces of a full-batch optimizer: attraction over P and repulsion over all pairs.

:func:`unimap.optimizers.gradient_descent.descent.gradient_descent` moves the points; a forces
object tells it, at each iteration, ``(attraction, repulsion, 1/Z)`` so that the KL gradient is
``4 (E·attraction − repulsion/Z)`` (E the exaggeration; see
:mod:`unimap.optimizers.gradient_descent.gradient_numba`).

- :class:`TSNEForces`: t-SNE's. Attraction exact over the sparse P; repulsion and Z exact
  (O(n²), any dimension), by Barnes-Hut
  (:mod:`unimap.optimizers.gradient_descent.repulsion.barnes_hut`, 2-D/3-D) or by FFT interpolation
  (:mod:`unimap.optimizers.gradient_descent.repulsion.fft`, FIt-SNE, 1-D/2-D).
- GDR's normalized mode has its own forces object,
  :class:`unimap.optimizers.gdr.forces.SampledForces` (repulsion and Z estimated from uniform
  negative samples, O(|E|)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["RepulsionParams", "repulsion", "kl_divergence", "TSNEForces", "tsne_forces_memory"]

BYTES_PER_EDGE = 8
"""The optimizer's copies of P, bytes per kNN edge (measured: benchmarks/results/fit_memory.md)."""
BH_BYTES_PER_POINT = 2 * 96  # the Barnes-Hut tree's nodes


def tsne_forces_memory(n_samples: int, n_edges: int, n_components: int, method: str) -> int:
    """Bytes a t-SNE gradient descent allocates for ``n_samples`` points, ``n_edges`` kNN
    edges (n × k), ``n_components`` dimensions and the repulsion ``method``: float64
    position, update, gains and gradient parts, the copies of P, and the repulsion's FFT
    grid (2-D, :func:`unimap.optimizers.gradient_descent.repulsion.fft.grid_bytes`) or
    Barnes-Hut tree."""
    arrays = n_samples * n_components * 8 * 8 + n_edges * BYTES_PER_EDGE
    if method == "fft" and n_components == 2:
        from unimap.optimizers.gradient_descent.repulsion.fft import grid_bytes

        arrays += grid_bytes(n_samples)
    elif method == "barnes_hut":
        arrays += n_samples * BH_BYTES_PER_POINT
    return arrays


@dataclass(frozen=True)
class RepulsionParams:
    """How the all-pairs repulsion is computed (see the module docstring)."""

    method: str = "fft"
    theta: float = 0.5
    dof: float = 1.0
    n_interpolation_points: int = 3
    min_num_intervals: int = 50
    ints_in_interval: float = 1.0


def repulsion(Y: np.ndarray, params: RepulsionParams,
              workspace: Any = None) -> tuple[np.ndarray, float]:
    """``(Σ_j w_ij t_ij (y_i − y_j) for each i, Z = Σ_{i≠j} w_ij)`` of a float64 embedding.

    ``workspace``: a :class:`unimap.optimizers.gradient_descent.repulsion.fft.FFTWorkspace` reused
    across the calls of one run (FFT method only; saves reallocating its grids every iteration).
    """
    if params.method == "exact":
        from unimap.optimizers.gradient_descent.gradient_numba import exact_repulsion_rows

        forces = np.empty_like(Y)
        z_rows = np.empty(Y.shape[0])
        exact_repulsion_rows(Y, Y, params.dof, True, forces, z_rows)
        return forces, float(z_rows.sum())
    if params.method == "barnes_hut":
        from unimap.optimizers.gradient_descent.repulsion.barnes_hut import bh_repulsion

        return bh_repulsion(Y, params.theta, params.dof)
    from unimap.optimizers.gradient_descent.repulsion.fft import fft_repulsion

    return fft_repulsion(Y, params.dof, params.n_interpolation_points,
                         params.min_num_intervals, params.ints_in_interval,
                         workspace=workspace)


def kl_divergence(P: sp.csr_matrix, Y: np.ndarray, z: float, dof: float) -> float:
    """KL(P‖Q) with ``Q = w/Z``, given Z (exact or estimated); P must sum to 1."""
    from unimap.optimizers.gradient_descent.gradient_numba import attractive_kl, kl_value

    return kl_value(attractive_kl(P.indptr, P.indices, P.data, Y, float(dof)), np.log(z))


class TSNEForces:
    """t-SNE's forces for a symmetric P summing to 1 (``loss`` is KL(P‖Q))."""

    def __init__(self, P: sp.csr_matrix, params: RepulsionParams, n_points: int,
                 dim: int) -> None:
        P = P.tocsr()
        self.P = P
        self.params = params
        self._data = np.ascontiguousarray(P.data, dtype=np.float32)  # half float64's traffic
        self._attraction = np.empty((n_points, dim))
        self._inv_z = np.empty(1)
        self._workspace = _workspace(params)

    def __call__(self, Y: np.ndarray, iteration: int):
        from unimap.optimizers.gradient_descent.gradient_numba import attraction

        rep, z = repulsion(Y, self.params, self._workspace)
        attraction(self.P.indptr, self.P.indices, self._data, Y, Y, self.params.dof,
                   self._attraction)
        # Z underflows to 0 when the points fly apart: 1/Z = inf, which the guard reports.
        self._inv_z[0] = 1.0 / z if z > 0 else np.inf
        return self._attraction, rep, self._inv_z

    def loss(self, Y: np.ndarray) -> float:
        """KL(P‖Q) of ``Y``, with Z from the repulsion method."""
        z = repulsion(Y, self.params, self._workspace)[1]
        return kl_divergence(self.P, Y, z, self.params.dof)


def _workspace(params: RepulsionParams) -> Any:
    if params.method != "fft":
        return None
    from unimap.optimizers.gradient_descent.repulsion.fft import FFTWorkspace

    return FFTWorkspace()
