"""t-SNE's optimizer: full-batch gradient descent with momentum, gains and exaggeration phases.

The gradient is split as in :mod:`unimap._kernels.tsne_gd`: attraction over the sparse P
(exact, O(nnz)) and repulsion over all pairs, computed by one of three methods:

- ``"exact"``: O(n²) sums (ground truth, small data, any dimension);
- ``"barnes_hut"``: a quadtree (2-D) or octree (3-D) summarises far cells
  (:mod:`unimap.barnes_hut`);
- ``"fft"``: polynomial interpolation on an equispaced grid with FFT convolution
  (FIt-SNE; :mod:`unimap.tsne_fft`), 1-D and 2-D.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["Phase", "RepulsionParams", "repulsion", "kl_divergence", "gradient_descent"]


@dataclass(frozen=True)
class RepulsionParams:
    """How the all-pairs repulsion is computed (see the module docstring)."""

    method: str = "fft"
    theta: float = 0.5
    dof: float = 1.0
    n_interpolation_points: int = 3
    min_num_intervals: int = 50
    ints_in_interval: float = 1.0


@dataclass(frozen=True)
class Phase:
    """A run of iterations with fixed exaggeration, momentum and learning rate."""

    n_iter: int
    exaggeration: float
    momentum: float
    learning_rate: float


def repulsion(Y: np.ndarray, params: RepulsionParams,
              workspace: Any = None) -> tuple[np.ndarray, float]:
    """``(Σ_j w_ij t_ij (y_i − y_j) for each i, Z = Σ_{i≠j} w_ij)`` of a float64 embedding.

    ``workspace``: a :class:`unimap.tsne_fft.FFTWorkspace` reused across the calls of one run
    (FFT method only; saves reallocating its grids every iteration).
    """
    if params.method == "exact":
        from unimap._kernels.tsne_gd import exact_repulsion_rows

        forces = np.empty_like(Y)
        z_rows = np.empty(Y.shape[0])
        exact_repulsion_rows(Y, Y, params.dof, True, forces, z_rows)
        return forces, float(z_rows.sum())
    if params.method == "barnes_hut":
        from unimap.barnes_hut import bh_repulsion

        return bh_repulsion(Y, params.theta, params.dof)
    from unimap.tsne_fft import fft_repulsion

    return fft_repulsion(Y, params.dof, params.n_interpolation_points,
                         params.min_num_intervals, params.ints_in_interval,
                         workspace=workspace)


def kl_divergence(P: sp.csr_matrix, Y: np.ndarray, z: float, dof: float) -> float:
    """KL(P‖Q) with ``Q = w/Z``, given Z (exact or estimated); P must sum to 1."""
    from unimap._kernels.tsne_gd import attractive_kl

    return float(attractive_kl(P.indptr, P.indices, P.data, Y, float(dof)) + np.log(z))


def gradient_descent(
    Y: np.ndarray,
    P: sp.csr_matrix,
    phases: Sequence[Phase],
    params: RepulsionParams,
    min_gain: float = 0.01,
    max_grad_norm: float | None = None,
    max_step_norm: float | None = 5.0,
    callback: Callable[[int, float, np.ndarray], object] | None = None,
    callback_every: int = 50,
    log: Callable[[str], None] | None = None,
) -> tuple[np.ndarray, float, int]:
    """Minimise KL(P‖Q) from the start ``Y`` through the given phases.

    Parameters
    ----------
    Y : ndarray of shape (n_samples, n_components)
        Start; copied to float64 (the result is a new array).
    P : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        Symmetric joint probabilities summing to 1.
    phases : sequence of Phase
        Run one after the other (early exaggeration, then the rest); momentum and gains carry
        over between phases as in the reference implementations.
    params : RepulsionParams
    min_gain : float, default=0.01
    max_grad_norm, max_step_norm : float or None
        Per-point clipping of the gradient and of the step (None: off).
    callback : callable ``(iteration, kl_divergence, embedding) -> stop``, optional
        Called every ``callback_every`` iterations with the current (unexaggerated) KL and a
        copy of the embedding; a truthy return value stops the optimization.
    log : callable, optional
        Receives a progress line every 50 iterations.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components), float64
    kl_divergence : float
        Of the returned embedding, with Z from ``params.method``.
    n_iter : int
        Iterations run.
    """
    from unimap._kernels.tsne_gd import attraction, gradient_step

    Y = np.array(Y, dtype=np.float64, order="C")
    P = P.tocsr()
    indptr, indices = P.indptr, P.indices
    data = np.ascontiguousarray(P.data, dtype=np.float32)  # half the memory traffic of float64
    update = np.zeros_like(Y)
    gains = np.ones_like(Y)
    attr = np.empty_like(Y)
    inv_z = np.empty(1)
    grad_clip = -1.0 if max_grad_norm is None else float(max_grad_norm)
    step_clip = -1.0 if max_step_norm is None else float(max_step_norm)
    workspace = _workspace(params)
    iteration, tic = 0, time.perf_counter()
    for phase in phases:
        for _ in range(phase.n_iter):
            rep, z = repulsion(Y, params, workspace)
            attraction(indptr, indices, data, Y, Y, params.dof, attr)
            inv_z[0] = 1.0 / z
            gradient_step(Y, attr, rep, inv_z, phase.exaggeration, update, gains,
                          phase.momentum, phase.learning_rate, min_gain, grad_clip, step_clip)
            Y -= Y.mean(axis=0)
            iteration += 1
            report = log is not None and iteration % 50 == 0
            call = callback is not None and iteration % callback_every == 0
            if report or call:
                kl = kl_divergence(P, Y, repulsion(Y, params, workspace)[1], params.dof)
                if report:
                    log(f"iteration {iteration:5d}  KL {kl:.4f}  "
                        f"({time.perf_counter() - tic:.2f}s)")
                    tic = time.perf_counter()
                if call and callback(iteration, kl, Y.copy()):
                    return Y, kl, iteration
    z = repulsion(Y, params, workspace)[1]
    return Y, kl_divergence(P, Y, z, params.dof), iteration


def _workspace(params: RepulsionParams) -> Any:
    if params.method != "fft":
        return None
    from unimap.tsne_fft import FFTWorkspace

    return FFTWorkspace()


def place_points(
    Y: np.ndarray,
    P: sp.csr_matrix,
    reference: np.ndarray,
    n_iter: int,
    learning_rate: float,
    exaggeration: float,
    momentum: float,
    params: RepulsionParams,
    max_grad_norm: float | None,
) -> np.ndarray:
    """Optimize new points against a fixed embedding (transform), each point on its own.

    Point i minimises KL(P_i‖Q_i) with ``P_i`` its conditional probabilities over the reference
    points (a row of ``P``, summing to 1) and ``Q_i = w_ij / Σ_j w_ij`` over the reference
    points only, so the new points neither attract nor repel one another and a point's
    result does not depend on the batch it comes in. Repulsion uses a Barnes-Hut tree of the
    reference built once (2-D, 3-D; exact sums in other dimensions or with ``method="exact"``).

    Parameters
    ----------
    Y : ndarray of shape (m, n_components)
        Start of the new points.
    P : scipy.sparse.csr_matrix of shape (m, n_reference)
    reference : ndarray of shape (n_reference, n_components)
    n_iter, learning_rate, exaggeration, momentum, max_grad_norm
        As in :func:`gradient_descent` (one phase).
    params : RepulsionParams
        ``theta`` and ``dof`` are used; ``method="exact"`` forces exact sums.

    Returns
    -------
    ndarray of shape (m, n_components), float64
    """
    from unimap._kernels.tsne_gd import attraction, exact_repulsion_rows, gradient_step

    Y = np.array(Y, dtype=np.float64, order="C")
    reference = np.ascontiguousarray(reference, dtype=np.float64)
    P = P.tocsr()
    data = np.ascontiguousarray(P.data, dtype=np.float32)
    use_tree = params.method != "exact" and Y.shape[1] in (2, 3)
    if use_tree:
        from unimap.barnes_hut import bh_repulsion_query, build_tree

        tree = build_tree(reference)
    update, gains, attr = np.zeros_like(Y), np.ones_like(Y), np.empty_like(Y)
    rep, z_rows = np.empty_like(Y), np.empty(Y.shape[0])
    grad_clip = -1.0 if max_grad_norm is None else float(max_grad_norm)
    for _ in range(n_iter):
        if use_tree:
            rep, z_rows = bh_repulsion_query(tree, Y, params.theta, params.dof)
        else:
            exact_repulsion_rows(Y, reference, params.dof, False, rep, z_rows)
        attraction(P.indptr, P.indices, data, Y, reference, params.dof, attr)
        gradient_step(Y, attr, rep, 1.0 / z_rows, exaggeration, update, gains, momentum,
                      learning_rate, 0.01, grad_clip, -1.0)
    return Y
