"""The full-batch optimizer of t-SNE and of GDR's normalized mode.

Gradient descent with momentum and per-coordinate gains (Jacobs 1988), through phases of fixed
exaggeration, momentum and step (early exaggeration, then the rest; a phase may decay its
step linearly to 0), with per-point clipping of the gradient and of the step. What the forces
are is the caller's: a :mod:`unimap.optimizers.gradient_descent.forces` object returns
``(attraction, repulsion, 1/Z)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.optimizers.gradient_descent.forces import RepulsionParams
from unimap.optimizers.gradient_descent.stopping import CHECK_EVERY, StoppingRule, gradient_norm
from unimap.optimizers.schedule import decayed_step
from unimap.runtime.guards import TSNE_CAUSES, FiniteGuard

__all__ = ["Phase", "MIN_GAIN", "MAX_STEP_NORM", "Checkpoints", "gradient_descent",
           "place_points"]

MIN_GAIN = 0.01  # floor of the per-coordinate gains
MAX_STEP_NORM = 5.0  # per-point step clip (FIt-SNE, openTSNE): keeps points and FFT grid near


@dataclass(frozen=True)
class Phase:
    """A run of iterations with fixed exaggeration and momentum; the step is
    ``learning_rate``, or decays linearly from it towards 0 when ``decay``."""

    n_iter: int
    exaggeration: float
    momentum: float
    learning_rate: float
    decay: bool = False

    def step_size(self, i: int) -> float:
        """The step at the phase's iteration ``i``."""
        if self.decay:
            return decayed_step(self.learning_rate, i, self.n_iter)
        return self.learning_rate


def iterations(phases: Sequence[Phase]) -> Iterator[tuple[int, Phase, float, bool]]:
    """Every iteration of ``phases`` in order: ``(its number over all phases, its phase, its
    step, restart)``; the CPU's loop and the GPU's (:mod:`unimap.optimizers.gdr.normalized_cuda`,
    :mod:`.tsne_cuda`).

    ``restart`` is True at the first iteration of a phase whose exaggeration differs from the
    previous phase's: the loops then zero the momentum's update and set the gains back to 1,
    as scikit-learn starts its descent afresh after early exaggeration. The velocity and gains
    grown under exaggerated attraction overshoot once it is lifted; with scikit-learn's floor
    of 50 on the step (far above ``n / 12 / 4`` on small data) carrying them over left a
    50-point t-SNE at KL 1.93 where scikit-learn reaches 0.69 (measured:
    benchmarks/results/tsne_small.md). A phase that only decays the step keeps them.
    """
    iteration = 0
    previous = None
    for phase in phases:
        restart = previous is not None and phase.exaggeration != previous.exaggeration
        for i in range(phase.n_iter):
            yield iteration, phase, phase.step_size(i), restart and i == 0
            iteration += 1
        if phase.n_iter > 0:
            previous = phase


def gradient_descent(
    Y: np.ndarray,
    forces: Callable[[np.ndarray, int], tuple],
    phases: Sequence[Phase],
    min_gain: float = MIN_GAIN,
    max_grad_norm: float | None = None,
    max_step_norm: float | None = MAX_STEP_NORM,
    center_every: int = 1,
    threads: Any = None,
    callback: Callable[[int, float, np.ndarray], object] | None = None,
    callback_every: int = 50,
    log: Callable[[str], None] | None = None,
    guard: Any = None,
    row_ids: np.ndarray | None = None,
    stopping: StoppingRule | None = None,
) -> tuple[np.ndarray, int]:
    """Move ``Y`` down the gradient ``4 (E·attraction − repulsion/Z)`` through ``phases``.

    Parameters
    ----------
    Y : ndarray of shape (n_samples, n_components)
        Start, copied (its dtype is kept: float64 for t-SNE, float32 for GDR).
    forces : callable ``(Y, iteration) -> (attraction, repulsion, inv_z)``
        With an optional ``loss(Y)`` attribute (None: no loss to report).
    phases : sequence of Phase
        Run one after the other; the momentum's update and the gains start afresh where the
        exaggeration changes (scikit-learn's rule, see :func:`iterations`) and carry over
        otherwise.
    min_gain : float, default=0.01
    max_grad_norm, max_step_norm : float or None
        Per-point clipping of the gradient and of the step (None: off).
    center_every : int, default=1
        Recentre the embedding after every ``center_every``-th iteration (translation does
        not change the loss; the check costs a pass over Y).
    threads : :class:`unimap.runtime.threads.AdaptiveThreads`, optional
        Chooses the thread count of each iteration.
    callback : callable ``(iteration, loss, embedding) -> stop``, optional
        Called every ``callback_every`` iterations with the loss and a copy of the
        embedding; a truthy return value stops the optimization.
    log : callable, optional
        Receives a progress line every 50 iterations: the iteration, the loss (KL(P‖Q) of the
        current embedding, P not exaggerated) marked with the phase's exaggeration when it is
        not 1, and the seconds since the last line.
    guard : :class:`unimap.runtime.guards.FiniteGuard`, optional
        Checks the forces, ``1/Z`` and the embedding every iteration (``row_ids``: the input
        row of each row of ``Y``, for its message).
    stopping : :class:`unimap.optimizers.gradient_descent.stopping.StoppingRule`, optional
        scikit-learn's stopping rules, checked every 50 iterations.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components)
    n_iter : int
        Iterations run.
    """
    from unimap.optimizers.gradient_descent.gradient_numba import gradient_step

    Y = np.array(Y, order="C")
    update = np.zeros_like(Y)
    gains = np.ones_like(Y)
    grad_clip = -1.0 if max_grad_norm is None else float(max_grad_norm)
    step_clip = -1.0 if max_step_norm is None else float(max_step_norm)
    loss = getattr(forces, "loss", None)
    checkpoints = Checkpoints(phases, log, callback, callback_every, stopping)
    done = 0
    for iteration, phase, rate, restart in iterations(phases):
        if restart:
            update[:] = 0.0
            gains[:] = 1.0
        if threads is not None:
            threads.start_epoch(iteration)
        attraction, repulsion, inv_z = forces(Y, iteration)
        gradient_step(Y, attraction, repulsion, inv_z, phase.exaggeration, update, gains,
                      phase.momentum, rate, min_gain, grad_clip, step_clip)
        if threads is not None:
            threads.end_epoch()
        if guard is not None:
            guard.check(iteration, Y, row_ids, **{"the attraction": attraction,
                                                  "the repulsion": repulsion, "1/Z": inv_z})
        if iteration % center_every == 0:
            Y -= Y.mean(axis=0)
        done = iteration + 1
        if checkpoints.stop_after(
                done, phase, partial(loss, Y) if loss is not None else _no_loss, Y.copy,
                partial(gradient_norm, attraction, repulsion, inv_z, phase.exaggeration)):
            break
    return Y, done


def _no_loss() -> float:
    return float("nan")


class Checkpoints:
    """What a full-batch descent does between iterations, on the CPU (:func:`gradient_descent`)
    and the GPU (:mod:`unimap.optimizers.gradient_descent.tsne_cuda`): a log line every 50
    iterations and the callback every ``callback_every`` (both with the loss), and scikit-learn's
    stopping rules every ``CHECK_EVERY``."""

    def __init__(self, phases: Sequence[Phase], log: Callable[[str], None] | None,
                 callback: Callable[[int, float, np.ndarray], object] | None,
                 callback_every: int, stopping: StoppingRule | None) -> None:
        self.phases, self.log, self.callback = phases, log, callback
        self.callback_every, self.stopping = callback_every, stopping
        self._tic = time.perf_counter()

    def stop_after(self, done: int, phase: Phase, loss: Callable[[], float],
                   embedding: Callable[[], np.ndarray],
                   grad_norm: Callable[[], float]) -> bool:
        """Whether to stop after ``done`` iterations of ``phase``; ``loss``, ``embedding`` (a
        copy for the callback) and ``grad_norm`` are evaluated only when needed."""
        report = self.log is not None and done % 50 == 0
        call = self.callback is not None and done % self.callback_every == 0
        if report or call:
            value = loss()
            if report:
                self.log(f"iteration {done:5d}  KL {value:.4f}"
                         f"{_exaggeration_note(phase, self.phases)}"
                         f"  {time.perf_counter() - self._tic:.2f}s")
                self._tic = time.perf_counter()
            if call and self.callback(done, value, embedding()):
                return True
        return self.stopping is not None and done % CHECK_EVERY == 0 and \
            self.stopping.should_stop(done, loss, grad_norm)


def _exaggeration_note(phase: Phase, phases: Sequence[Phase]) -> str:
    """The log line's mark of an exaggerated phase: its KL (of the plain P) stays high while
    the gradient pulls with an exaggerated P, and drops when the exaggeration ends."""
    if phase.exaggeration == 1.0:
        return ""
    early = phase is phases[0] and len(phases) > 1
    return f"  ({'early ' if early else ''}exaggeration x{phase.exaggeration:g})"


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
    from unimap.optimizers.gradient_descent.gradient_numba import (
        attraction,
        exact_repulsion_rows,
        gradient_step,
    )

    Y = np.array(Y, dtype=np.float64, order="C")
    reference = np.ascontiguousarray(reference, dtype=np.float64)
    P = P.tocsr()
    data = np.ascontiguousarray(P.data, dtype=np.float32)
    use_tree = params.method != "exact" and Y.shape[1] in (2, 3)
    if use_tree:
        from unimap.optimizers.gradient_descent.repulsion.barnes_hut import (
            bh_repulsion_query,
            build_tree,
        )

        tree = build_tree(reference)
    update, gains, attr = np.zeros_like(Y), np.ones_like(Y), np.empty_like(Y)
    rep, z_rows = np.empty_like(Y), np.empty(Y.shape[0])
    grad_clip = -1.0 if max_grad_norm is None else float(max_grad_norm)
    guard = FiniteGuard("transform", TSNE_CAUSES)
    for iteration in range(n_iter):
        if use_tree:
            rep, z_rows = bh_repulsion_query(tree, Y, params.theta, params.dof)
        else:
            exact_repulsion_rows(Y, reference, params.dof, False, rep, z_rows)
        attraction(P.indptr, P.indices, data, Y, reference, params.dof, attr)
        gradient_step(Y, attr, rep, 1.0 / z_rows, exaggeration, update, gains, momentum,
                      learning_rate, MIN_GAIN, grad_clip, -1.0)
        guard.check(iteration, Y, **{"the repulsion": rep, "Z": z_rows})
    return Y
