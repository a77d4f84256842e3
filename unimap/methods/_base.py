"""Pieces every neighbour-embedding estimator (UMAP, TSNE, GDR) shares around its phases."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["PhaseTimer", "check_transform_width"]


class PhaseTimer:
    """Seconds spent in each phase of a fit (the estimators' ``timings_``).

    Parameters
    ----------
    log : callable(str)
        Receives one line per finished phase (the estimator's verbose printer).

    Examples
    --------
    >>> clock = PhaseTimer(print)
    >>> with clock.phase("neighbors", lambda: "exact"):
    ...     pass  # doctest: +ELLIPSIS
    neighbors (exact): 0.00s
    >>> sorted(clock.finish())
    ['neighbors', 'total']
    """

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log
        self._start = time.perf_counter()
        self.timings: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str, detail: Callable[[], str] | None = None) -> Iterator[None]:
        """Time the body as phase ``name``; ``detail()`` (called after the body, so it can
        report what the body resolved) is shown in brackets in the log line."""
        tic = time.perf_counter()
        yield
        elapsed = time.perf_counter() - tic
        self.timings[name] = elapsed
        extra = f" ({detail()})" if detail is not None else ""
        self._log(f"{name}{extra}: {elapsed:.2f}s")

    def finish(self) -> dict[str, float]:
        """The phases' seconds plus ``total`` since the timer was made."""
        self.timings["total"] = time.perf_counter() - self._start
        return dict(self.timings)


def check_transform_width(X: np.ndarray, estimator: str, metric: str, n_train: int,
                          n_features_in: int) -> None:
    """New points must have the fit's features (or, precomputed, one distance per training
    point)."""
    expected = n_train if metric == "precomputed" else n_features_in
    if X.shape[1] != expected:
        raise ValueError(f"X has {X.shape[1]} features, but {estimator} was fitted with "
                         f"{expected}")
