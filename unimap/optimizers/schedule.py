"""The step schedule shared by the optimizers: a step that decays linearly to 0.

UMAP's SGD and GDR's unnormalized epochs decay their step over all epochs; t-SNE's and GDR's
normalized mode decay it over their last phase (:class:`unimap.optimizers.gradient_descent.descent.
Phase`). All use ``α_t = α (1 − t / T)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["decayed_step", "linear_decay"]


def decayed_step(learning_rate: float, t: int, n_steps: int) -> float:
    """``learning_rate · (1 − t / n_steps)``: the step at iteration ``t`` of ``n_steps``."""
    return learning_rate * (1.0 - t / n_steps)


def linear_decay(learning_rate: float, n_epochs: int) -> list[np.float32]:
    """The float32 step of every epoch (:func:`decayed_step` over ``n_epochs``)."""
    return [np.float32(decayed_step(learning_rate, epoch, n_epochs)) for epoch in range(n_epochs)]
