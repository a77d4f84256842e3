"""GDR's forces for the full-batch descent and the CSR arrays of both modes.

- :class:`SampledForces`: the normalized mode's forces object for
  :func:`unimap.optimizers.gradient_descent.descent.gradient_descent`. Attraction over P, and
  repulsion and Z estimated from uniform negative samples, O(|E|) (:mod:`unimap.optimizers.gdr`).
- :func:`gdr_edge_arrays`: P's (and Pᵀ's) CSR arrays as both modes' kernels take them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["SampledForces", "neighbour_marks", "gdr_edge_arrays"]


class SampledForces:
    """GDR's normalized forces: P's attraction and the repulsion and Z estimated from
    ``n_negatives`` uniform samples per edge, ``early_negatives`` during the first
    ``n_early`` iterations, shared by all rows of an epoch when ``shared`` (see
    :mod:`unimap.optimizers.gdr`). ``gamma`` weighs the repulsion; ``z`` is the last estimate.
    """

    def __init__(self, edges, transposed, attraction_scale: float, n_points: int, dim: int,
                 a: float, b: float, gamma: float, negatives: float, early_negatives: float,
                 n_early: int, shared: bool, seed: int) -> None:
        from unimap.optimizers.gdr.common_numba import CSR, TransposedCSR

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
        from unimap.optimizers.gdr.common_numba import SampledKernel
        from unimap.optimizers.gdr.normalized_numba import gdr_normalized_forces

        kernel = SampledKernel(self.scale, self.negatives_at(iteration), self.a, self.b)
        gdr_normalized_forces(Y, self._attraction, self._repulsion, self._z_rows, self._marks,
                              self.edges, self.transposed, kernel, self.seed, np.int64(iteration),
                              False, self.shared)
        self._inv_z[0] = self.inverse_z(self._z_rows.sum())
        return self._attraction, self._repulsion, self._inv_z

    loss = None  # the sampled Z gives no cheap exact loss


def neighbour_marks(n: int) -> np.ndarray:
    """Zeroed neighbour marks for
    :func:`unimap.optimizers.gdr.normalized_numba.gdr_normalized_forces`, one row of n bytes per
    worker thread (numba's current thread count: workers claim blocks of rows, so more rows would
    not balance the load better). The result does not depend on the count."""
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
