"""Guards inside the optimizers: a NaN or infinity is caught at the epoch it appears.

Every epoch the optimizers reduce the embedding to one float64 sum (and, for the full-batch
optimizer, the attraction and repulsion arrays and ``1/Z``): a NaN or infinity anywhere makes
the sum non-finite. GDR's 2-D epochs run ``EPOCH_CHUNK`` at a time
(:mod:`unimap.optimizers.gdr.unnormalized`) and are checked after each chunk: their error names
the chunk's epochs. The sum costs little beside the cheapest epoch, GDR's (measured:
benchmarks/results/library_notes.md, "unimap/runtime/guards.py"). On a hit the guard finds the first
bad row and raises :class:`NonFiniteError` naming the method, the epoch, what went non-finite and
the likely causes, so a run never ends with a silent NaN embedding.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["NonFiniteError", "FiniteGuard"]


class NonFiniteError(ValueError, FloatingPointError):
    """An optimizer produced NaN or infinity (a ValueError and a FloatingPointError)."""


class FiniteGuard:
    """Checks an optimizer's state every epoch (see the module docstring).

    Parameters
    ----------
    method : str
        Named in the error (``"UMAP"``, ``"TSNE"``, ``"GDR"``, ``"UMAP.transform"``, ...).
    causes : str
        The likely causes and remedies for this method, appended to the error message.
    progress : ProgressBar, optional
        Advanced to ``epoch + 1`` by every check: the guard is the optimizers' per-epoch hook.
    """

    def __init__(self, method: str, causes: str, progress: Any = None) -> None:
        self.method = method
        self.causes = causes
        self.progress = progress  # a ProgressBar over the epochs, advanced by each check

    def check(self, epoch: int, embedding: np.ndarray, row_ids: np.ndarray | None = None,
              since: int | None = None, **others: object) -> None:
        """Raise :class:`NonFiniteError` if ``embedding`` or any of ``others`` (arrays or
        scalars, named by their keyword) holds a NaN or infinity after ``epoch``.

        ``row_ids[r]`` is the input row of internal row ``r`` (when the optimizer reorders
        the points), so that the error names the user's row. ``since``: the first epoch run
        since the previous check, when the epochs ``since, ..., epoch`` ran unchecked.
        """
        for name, value in others.items():
            if value is not None and not _finite(value):
                self.fail(epoch, name, value, row_ids, since)
        if not _finite(embedding):
            self.fail(epoch, "the embedding", embedding, row_ids, since)
        self.passed(epoch)

    def passed(self, epoch: int) -> None:
        """Record that ``epoch`` was found finite by a check made elsewhere (a GPU kernel)."""
        if self.progress is not None:
            self.progress.advance_to(epoch + 1)

    def fail(self, epoch: int, what: str, value: object, row_ids: np.ndarray | None,
             since: int | None = None) -> None:
        """Raise :class:`NonFiniteError`: ``what`` (``value``, if an array, names its first bad
        row) went non-finite at ``epoch``, or between ``since`` and ``epoch``."""
        where = ""
        if isinstance(value, np.ndarray) and value.ndim == 2:
            rows = np.flatnonzero(~np.isfinite(value).all(axis=1))
            if rows.size:
                first = rows[0] if row_ids is None else np.min(row_ids[rows])
                where = f" (first in row {first}, {rows.size} rows in all)"
        when = (f"at epoch {epoch + 1}" if since is None or since >= epoch
                else f"between epochs {since + 1} and {epoch + 1}")
        raise NonFiniteError(
            f"{self.method}: {what} became NaN or infinite {when}{where}. {self.causes}")


def _finite(value: object) -> bool:
    if isinstance(value, np.ndarray):
        with np.errstate(over="ignore", invalid="ignore"):
            return math.isfinite(float(value.sum(dtype=np.float64)))
    return math.isfinite(float(value))


UMAP_CAUSES = ("Likely causes: a learning_rate too large for this data, extreme a/b "
               "(min_dist, spread), or input with huge magnitudes; try the default "
               "learning_rate and a/b, or standardise the input.")
TSNE_CAUSES = ("Likely causes: a learning_rate or exaggeration too large (try "
               "learning_rate='auto'), max_grad_norm/max_step_norm switched off, or many "
               "duplicate points (remove them or add tiny noise).")
