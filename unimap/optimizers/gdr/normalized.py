"""GDR's normalized (t-SNE-like) optimizer: KL(P‖Q) with Z estimated from negative samples.

``gdr_normalized`` is the entry point a method calls. The points are relabelled along a
Z-order curve of their start (a row's neighbours then lie close in memory and the near field
reads them from cache; the order depends on the start only, so the result does not depend on
the thread count). The forces are :class:`unimap.optimizers.gdr.forces.SampledForces`; the
iterations are t-SNE's full-batch gradient descent (early exaggeration, momentum, gains), on
the CPU (:func:`unimap.optimizers.gradient_descent.descent.gradient_descent`) or on the GPU
(:mod:`unimap.optimizers.gdr.normalized_cuda`, the same row code).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.runtime.ordering import in_input_order, locality_order

__all__ = ["gdr_normalized", "gdr_normalized_memory", "DECAY_FRACTION", "CENTER_EVERY",
           "INITIAL_MOMENTUM"]

BYTES_PER_EDGE = 40
"""The Z-ordered copies of P (and Pᵀ), bytes per kNN edge (measured:
benchmarks/results/fit_memory.md)."""


def gdr_normalized_memory(n_samples: int, n_edges: int, n_components: int) -> int:
    """Bytes :func:`gdr_normalized` allocates for a fit of ``n_samples`` points, ``n_edges``
    kNN edges (n × k) and ``n_components`` dimensions: the copies of P, float64 positions and
    gains."""
    return n_edges * BYTES_PER_EDGE + n_samples * n_components * 64

# Sampled forces are noisy: decaying the step over the last third (Robbins-Monro) lets the
# points settle instead of jittering at the scale of the fine structure.
DECAY_FRACTION = 1.0 / 3.0
CENTER_EVERY = 50  # recentre the embedding (translation does not change the loss)
INITIAL_MOMENTUM = 0.5  # momentum during early exaggeration, at most


def gdr_normalized(init: np.ndarray, P: sp.csr_matrix, *, symmetric_attraction: bool,
                   directed: bool, n_epochs: int, n_early: int, exaggeration: float,
                   a: float, b: float, seed: int, learning_rate: float,
                   early_learning_rate: float, momentum: float, n_negatives: float,
                   shared_negatives: bool, repulsion_strength: float, guard: Any = None,
                   device: str = "cpu") -> tuple[np.ndarray, float]:
    """Optimize ``init`` (n, dim) over the normalized affinities ``P`` (n, n).

    Parameters
    ----------
    n_early, exaggeration : int, float
        Iterations of early exaggeration and its factor. With shared samples the early
        iterations draw ``exaggeration`` times fewer (docs/gdr.md).
    learning_rate, early_learning_rate : float
        Steps after and during early exaggeration.
    n_negatives : float
        Negative samples per edge (per-row samples) or per row on average (shared samples).

    Returns
    -------
    embedding : ndarray of shape (n, dim), float32, centred, in the input's row order
    z : float
        The last estimate of the normalisation Z.
    """
    from unimap.optimizers.gdr.forces import SampledForces, gdr_edge_arrays
    from unimap.optimizers.gradient_descent.descent import (
        MAX_STEP_NORM,
        MIN_GAIN,
        Phase,
        gradient_descent,
    )
    from unimap.runtime.threads import adaptive_threads

    order = locality_order(init)
    edges, transposed, scale = gdr_edge_arrays(P, symmetric_attraction, directed, order)
    n = init.shape[0]
    early_negatives = n_negatives
    if shared_negatives and exaggeration > 1.0:
        early_negatives = n_negatives / exaggeration
    forces = SampledForces(edges, transposed, scale, n, init.shape[1], a, b, repulsion_strength,
                           n_negatives, early_negatives, n_early, shared_negatives, seed)
    decay_start = max(n_early, n_epochs - int(round(n_epochs * DECAY_FRACTION)))
    phases = [
        Phase(n_early, exaggeration, min(INITIAL_MOMENTUM, momentum), early_learning_rate),
        Phase(decay_start - n_early, 1.0, momentum, learning_rate),
        Phase(n_epochs - decay_start, 1.0, momentum, learning_rate, decay=True),
    ]
    start = np.array(init[order], dtype=np.float32)
    if device == "cuda":
        from unimap.optimizers.gdr.normalized_cuda import gradient_descent_cuda

        Y = gradient_descent_cuda(start, forces, phases, MIN_GAIN, MAX_STEP_NORM, CENTER_EVERY,
                                  guard, order)
    else:
        Y, _ = gradient_descent(start, forces, phases, MIN_GAIN, None, MAX_STEP_NORM,
                                center_every=CENTER_EVERY, threads=adaptive_threads(n),
                                guard=guard, row_ids=order)
    return in_input_order(Y - Y.mean(axis=0), order), forces.z
