"""The forces of a full-batch optimizer: attraction over P and repulsion over all pairs.

:func:`unimap.optimizers.gradient_descent.gradient_descent` moves the points; a forces object tells
it, at each iteration, ``(attraction, repulsion, 1/Z)`` so that the KL gradient is
``4 (E·attraction − repulsion/Z)`` (E the exaggeration; see :mod:`unimap.optimizers.tsne_gd_numba`).

- :class:`TSNEForces`: t-SNE's. Attraction exact over the sparse P; repulsion and Z exact
  (O(n²), any dimension), by Barnes-Hut (:mod:`unimap.optimizers.repulsion.barnes_hut`, 2-D/3-D) or
  by FFT interpolation (:mod:`unimap.optimizers.repulsion.fft`, FIt-SNE, 1-D/2-D).
- :class:`SampledForces`: GDR's normalized mode. Attraction over P and repulsion and Z
  estimated from uniform negative samples, O(|E|) (:mod:`unimap.optimizers.gdr_numba`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["RepulsionParams", "repulsion", "kl_divergence", "TSNEForces", "SampledForces",
           "gdr_edge_arrays"]


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

    ``workspace``: a :class:`unimap.optimizers.repulsion.fft.FFTWorkspace` reused across the calls
    of one run (FFT method only; saves reallocating its grids every iteration).
    """
    if params.method == "exact":
        from unimap.optimizers.tsne_gd_numba import exact_repulsion_rows

        forces = np.empty_like(Y)
        z_rows = np.empty(Y.shape[0])
        exact_repulsion_rows(Y, Y, params.dof, True, forces, z_rows)
        return forces, float(z_rows.sum())
    if params.method == "barnes_hut":
        from unimap.optimizers.repulsion.barnes_hut import bh_repulsion

        return bh_repulsion(Y, params.theta, params.dof)
    from unimap.optimizers.repulsion.fft import fft_repulsion

    return fft_repulsion(Y, params.dof, params.n_interpolation_points,
                         params.min_num_intervals, params.ints_in_interval,
                         workspace=workspace)


def kl_divergence(P: sp.csr_matrix, Y: np.ndarray, z: float, dof: float) -> float:
    """KL(P‖Q) with ``Q = w/Z``, given Z (exact or estimated); P must sum to 1."""
    from unimap.optimizers.tsne_gd_numba import attractive_kl, kl_value

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
        from unimap.optimizers.tsne_gd_numba import attraction

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
    from unimap.optimizers.repulsion.fft import FFTWorkspace

    return FFTWorkspace()


class SampledForces:
    """GDR's normalized forces: P's attraction and the repulsion and Z estimated from
    ``n_negatives`` uniform samples per edge, ``early_negatives`` during the first
    ``n_early`` iterations, shared by all rows of an epoch when ``shared`` (see
    :mod:`unimap.optimizers.gdr_numba`). ``gamma`` weighs the repulsion; ``z`` is the last estimate.
    """

    def __init__(self, edges, transposed, attraction_scale: float, n_points: int, dim: int,
                 a: float, b: float, gamma: float, negatives: float, early_negatives: float,
                 n_early: int, shared: bool, seed: int) -> None:
        from unimap.optimizers.gdr_common_numba import CSR, TransposedCSR

        # named groups once per fit (they unpack as the plain triples the GPU code reads)
        self.edges, self.transposed = CSR(*edges), TransposedCSR(*transposed)
        self.scale = np.float32(attraction_scale)
        self.a, self.b = np.float32(a), np.float32(b)
        self.gamma = float(gamma)
        self.negatives, self.early_negatives, self.n_early = negatives, early_negatives, n_early
        self.shared = shared
        self.seed = np.uint64(seed)
        self._attraction = np.empty((n_points, dim), dtype=np.float32)
        self._repulsion = np.empty_like(self._attraction)
        self._z_rows = np.empty(n_points, dtype=np.float64)
        self._marks = neighbour_marks(n_points)
        self._inv_z = np.empty(1, dtype=np.float64)
        self.z: float | None = None

    def negatives_at(self, iteration: int) -> float:
        """The negative samples of ``iteration`` (fewer during early exaggeration)."""
        return self.early_negatives if iteration < self.n_early else self.negatives

    def inverse_z(self, z_rows_sum: float) -> float:
        """``γ / Z`` from the rows' estimates of Z (kept in ``z``)."""
        self.z = float(z_rows_sum)
        return self.gamma / self.z

    def __call__(self, Y: np.ndarray, iteration: int):
        from unimap.optimizers.gdr_common_numba import SampledKernel
        from unimap.optimizers.gdr_numba import tsne_forces

        kernel = SampledKernel(self.scale, self.negatives_at(iteration), self.a, self.b)
        tsne_forces(Y, self._attraction, self._repulsion, self._z_rows, self._marks, self.edges,
                    self.transposed, kernel, self.seed, np.int64(iteration), False, self.shared)
        self._inv_z[0] = self.inverse_z(self._z_rows.sum())
        return self._attraction, self._repulsion, self._inv_z

    loss = None  # the sampled Z gives no cheap exact loss


def neighbour_marks(n: int) -> np.ndarray:
    """Zeroed neighbour marks for :func:`unimap.optimizers.gdr_numba.tsne_forces`, one row of n
    bytes per worker thread (numba's current thread count: workers claim blocks of rows, so more
    rows would not balance the load better). The result does not depend on the count."""
    import numba

    return np.zeros((max(1, numba.get_num_threads()), n), dtype=np.uint8)


def gdr_edge_arrays(P: sp.csr_matrix, symmetric_attraction: bool, directed: bool,
                    order: np.ndarray | None = None):
    """CSR arrays ``(indptr, indices, data)`` of P, of Pᵀ when symmetric attraction needs it
    (empty otherwise), and the factor on the row attraction; with ``order``, of
    ``P[order][:, order]`` (points relabelled). ``directed``: P is not symmetric."""
    if order is not None:
        from unimap.runtime.ordering import relabelled

        P = relabelled(P, order, sort_rows=True, dtype=np.float32)
    edges = (P.indptr.astype(np.int64, copy=False), P.indices.astype(np.int32, copy=False),
             P.data.astype(np.float32, copy=False))
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    if not symmetric_attraction:
        return edges, empty, 1.0
    if not directed:
        return edges, empty, 2.0  # Pᵀ = P: one pass, twice the pull
    T = P.T.tocsr()
    T.sort_indices()
    return edges, (T.indptr.astype(np.int64), T.indices.astype(np.int32),
                   T.data.astype(np.float32)), 1.0
