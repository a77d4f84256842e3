"""scikit-learn's stopping rules of t-SNE's gradient descent (``n_iter_without_progress`` and
``min_grad_norm``), checked every ``CHECK_EVERY`` iterations by
:func:`unimap.optimizers.gradient_descent.descent.gradient_descent`.

As in scikit-learn's ``_gradient_descent``: the gradient's norm is checked in every phase; the
loss only after early exaggeration (scikit-learn runs that phase with its own counter, whose
limit is the phase's length, so it never stops it for lack of progress).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CHECK_EVERY", "StoppingRule", "gradient_norm"]

CHECK_EVERY = 50  # scikit-learn's n_iter_check


def gradient_norm(attraction: np.ndarray, repulsion: np.ndarray, inv_z: float,
                  exaggeration: float) -> float:
    """The norm of the whole gradient ``4 (E·attraction − repulsion/Z)`` (the one the step
    follows, :func:`unimap.optimizers.gradient_descent.gradient_numba.gradient_step`)."""
    grad = exaggeration * attraction.astype(np.float64) - repulsion.astype(np.float64) * inv_z
    return 4.0 * float(np.linalg.norm(grad))


@dataclass
class StoppingRule:
    """Stop when the loss has not improved for ``n_iter_without_progress`` iterations after
    ``first_iteration`` (the end of early exaggeration), or when the gradient's norm is at
    most ``min_grad_norm``; either may be None (off)."""

    n_iter_without_progress: int | None
    min_grad_norm: float | None
    first_iteration: int
    best_loss: float = math.inf
    best_iteration: int = field(default=0)

    @classmethod
    def of(cls, n_iter_without_progress: int | None, min_grad_norm: float | None,
           first_iteration: int) -> StoppingRule | None:
        """The rule, or None when both parts are off (the loop then checks nothing)."""
        if n_iter_without_progress is None and min_grad_norm is None:
            return None
        return cls(n_iter_without_progress, min_grad_norm, first_iteration)

    def should_stop(self, done: int, loss: Callable[[], float],
                    grad_norm: Callable[[], float]) -> bool:
        """Whether to stop after ``done`` iterations (called every ``CHECK_EVERY``);
        ``loss`` and ``grad_norm`` are evaluated only when a part of the rule needs them."""
        if self.min_grad_norm is not None and grad_norm() <= self.min_grad_norm:
            return True
        if self.n_iter_without_progress is None or done <= self.first_iteration:
            return False
        value = loss()
        if value < self.best_loss:
            self.best_loss, self.best_iteration = value, done
            return False
        return done - self.best_iteration > self.n_iter_without_progress
