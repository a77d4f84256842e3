"""Runtime profile by input dimension (reference 004, table 4.1): embed Gaussian data of
growing dimension ``D`` and record the share of the time spent in each phase of the fit,
the nearest-neighbour search above all, which dominates for large ``D``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from unimap.analysis._common import ShortRepr, pyplot
from unimap.analysis._stability import clone_estimator
from unimap.metrics.common import make_rng
from unimap.runtime.validation import check_int

__all__ = ["RuntimeProfile", "runtime_profile", "plot_runtime_profile"]

_KNN_PHASE = "neighbors"


@dataclass(frozen=True, eq=False, repr=False)
class RuntimeProfile(ShortRepr):
    """Seconds and shares of the phases of a fit, by input dimension.

    Attributes
    ----------
    dims : ndarray of shape (n_dims,)
        Input dimensions ``D``.
    n_samples : int
        Points of every data set.
    phases : tuple of str
        Phases the estimator times (the keys of its ``timings_`` but ``total``), in its
        order, then ``"other"``: time of the fit outside them (input checks and the like).
    seconds : dict of str -> ndarray of shape (n_dims,)
        Seconds of each phase (median over the repeats).
    total : ndarray of shape (n_dims,)
        Seconds of the whole fit (the estimator's ``timings_["total"]`` when it has one, else
        the wall-clock time of ``fit``).
    shares : dict of str -> ndarray of shape (n_dims,)
        ``seconds[phase] / total``, in [0, 1]; they sum to 1 over ``phases``.
    knn_share : ndarray of shape (n_dims,)
        Share of the nearest-neighbour search (``shares["neighbors"]``).
    rest_share : ndarray of shape (n_dims,)
        ``1 - knn_share``.
    """

    dims: np.ndarray
    n_samples: int
    phases: tuple
    seconds: dict
    total: np.ndarray
    shares: dict
    knn_share: np.ndarray
    rest_share: np.ndarray

    def table(self) -> str:
        """The profile as a text table (one row per ``D``), like table 4.1 of reference 004."""
        header = ["D", "total s"] + [f"{phase} %" for phase in self.phases]
        rows = [[str(d), f"{t:.3f}"] + [f"{100 * self.shares[p][i]:.1f}" for p in self.phases]
                for i, (d, t) in enumerate(zip(self.dims, self.total, strict=True))]
        widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
        return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True))
                         for r in [header, *rows])

    def plot(self, axes: Any = None):
        """See :func:`plot_runtime_profile`."""
        return plot_runtime_profile(self, axes)


def _check_dims(dims: Any) -> np.ndarray:
    arr = np.asarray(dims)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"dims must be a non-empty 1-D sequence of integers, got {dims!r}")
    if arr.min() < 1:
        raise ValueError(f"dims must be positive, got {arr.min()}")
    return arr.astype(np.int64)


def _timed_fit(estimator: Any, X: np.ndarray) -> tuple[dict, float]:
    tic = time.perf_counter()
    estimator.fit(X)
    wall = time.perf_counter() - tic
    timings = getattr(estimator, "timings_", None)
    if not isinstance(timings, dict) or _KNN_PHASE not in timings:
        raise ValueError(
            f"{type(estimator).__name__} does not record the time of its phases: "
            f"runtime_profile needs a fitted timings_ dict with a {_KNN_PHASE!r} entry "
            "(as unimap.UMAP has)"
        )
    return dict(timings), wall


def runtime_profile(
    dims: Any = (100, 1000, 10000, 50000),
    n_samples: int = 2000,
    estimator: Any = None,
    n_repeats: int = 1,
    random_state: Any = None,
    *,
    warmup: bool = True,
) -> RuntimeProfile:
    """Profile a fit on standard Gaussian data of each input dimension in ``dims``.

    Reference 004 (table 4.1) profiled UMAP on 10,000 Gaussian points with ``D`` from 100 to
    50,000: the nearest-neighbour search took 9% of the time at ``D = 100`` and 79% at
    ``D = 50,000``. The defaults here are smaller (the data of the largest ``D`` takes
    ``4 · n_samples · D`` bytes: 400 MB).

    Parameters
    ----------
    dims : sequence of int, default=(100, 1000, 10000, 50000)
        Input dimensions.
    n_samples : int, default=2000
        Points of every data set. At least 2.
    estimator : estimator, estimator class or function of no arguments, optional
        What is profiled, copied for every fit (see :func:`clone_estimator`); it must record
        ``timings_`` with a ``"neighbors"`` entry. Default: ``unimap.UMAP`` seeded from
        ``random_state``.
    n_repeats : int, default=1
        Fits per dimension; the median of each phase is kept.
    random_state : int, numpy Generator or None, default=None
        Seed of the data (and of the default estimator).
    warmup : bool, default=True
        Fit once first (``n_samples`` points of the smallest dimension, not recorded), so that
        one-time costs (numba compilation, first calls of the solvers) are not counted in
        the first dimension.

    Returns
    -------
    RuntimeProfile

    Examples
    --------
    >>> from unimap import analysis
    >>> profile = analysis.runtime_profile(dims=(10, 100), n_samples=300, random_state=0)
    >>> profile.dims.tolist(), profile.phases[0]
    ([10, 100], 'neighbors')
    >>> bool(((0 <= profile.knn_share) & (profile.knn_share <= 1)).all())
    True
    """
    dims = _check_dims(dims)
    n_samples = check_int(n_samples, "n_samples", 2)
    n_repeats = check_int(n_repeats, "n_repeats", 1)
    rng = make_rng(random_state)
    if estimator is None:
        from unimap.methods.umap import UMAP

        estimator = UMAP(random_state=int(rng.integers(0, 2**31 - 1)))
    if warmup:
        # Same number of points, so that size-dependent code paths are warmed up too.
        small = rng.standard_normal((n_samples, int(dims.min())), dtype=np.float32)
        _timed_fit(clone_estimator(estimator), small)
        del small
    runs: list[list[tuple[dict, float]]] = []
    for d in dims:
        X = rng.standard_normal((n_samples, int(d)), dtype=np.float32)
        runs.append([_timed_fit(clone_estimator(estimator), X) for _ in range(n_repeats)])
        del X
    phases = [key for key in runs[0][0][0] if key != "total"]
    total = np.array([np.median([t.get("total", wall) for t, wall in reps]) for reps in runs])
    seconds = {p: np.array([np.median([t.get(p, 0.0) for t, _ in reps]) for reps in runs])
               for p in phases}
    seconds["other"] = np.maximum(total - sum(seconds.values()), 0.0)
    total = np.maximum(total, sum(seconds.values()))  # medians of parts may exceed the total's
    safe = np.where(total > 0, total, 1.0)
    shares = {p: seconds[p] / safe for p in seconds}
    knn = shares[_KNN_PHASE]
    return RuntimeProfile(dims, n_samples, tuple(seconds), seconds, total, shares, knn,
                          1.0 - knn)


def plot_runtime_profile(result: RuntimeProfile, axes: Any = None):
    """Two panels: the share of each phase by input dimension (stacked bars, as table 4.1 of
    reference 004) and the seconds of the nearest-neighbour search and of the whole fit.

    Parameters
    ----------
    result : RuntimeProfile
    axes : sequence of two matplotlib Axes, optional
        Where to draw; default: a new figure.

    Returns
    -------
    matplotlib Figure

    Examples
    --------
    >>> from unimap import analysis
    >>> profile = analysis.runtime_profile(dims=(10, 100), n_samples=300, random_state=0)
    >>> fig = analysis.plot_runtime_profile(profile)  # or profile.plot()
    >>> len(fig.axes) >= 2
    True
    """
    plt = pyplot()
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.5))
    else:
        fig = axes[0].figure
    ax_share, ax_time = axes
    positions = np.arange(result.dims.shape[0])
    bottom = np.zeros(result.dims.shape[0])
    cmap = plt.get_cmap("tab10")
    for i, phase in enumerate(result.phases):
        ax_share.bar(positions, 100 * result.shares[phase], bottom=100 * bottom,
                     color=cmap(i % cmap.N), label=phase)
        bottom += result.shares[phase]
    ax_share.set_xticks(positions, [f"{d:,}" for d in result.dims])
    ax_share.set_xlabel("input dimension D")
    ax_share.set_ylabel("% of fit time")
    ax_share.set_ylim(0, 100)
    ax_share.legend(loc="best", fontsize=8, frameon=False)
    ax_share.set_title(f"Time by phase ({result.n_samples:,} points)")
    ax_time.plot(result.dims, result.total, marker="o", label="total")
    ax_time.plot(result.dims, result.seconds[_KNN_PHASE], marker="o", label=_KNN_PHASE)
    ax_time.set_xscale("log")
    ax_time.set_yscale("log")
    ax_time.set_xlabel("input dimension D")
    ax_time.set_ylabel("seconds")
    ax_time.legend(loc="best", fontsize=8, frameon=False)
    ax_time.set_title("Fit time")
    return fig
