"""The input-space metrics: their names, parameters and exact distances.

Two families:

- **native** (``euclidean``, ``cosine``, ``correlation``, ``manhattan``): every backend of
  :mod:`unimap.neighbors.graph` serves them with its own kernels (BLAS, faiss, the GPU);
- **general** (``chebyshev``, ``minkowski``, ``canberra``, ``braycurtis``, ``hamming``,
  ``jaccard``, ``dice``, ``hellinger``, ``haversine``, ``sqeuclidean``): exact distances by
  :func:`pairwise` (SciPy's ``cdist``, which defines them; hellinger and haversine written
  here with pynndescent's and scikit-learn's definitions) up to
  :data:`GENERAL_EXACT_MAX_SAMPLES` points, as umap-learn does, and pynndescent beyond (it
  defines the same metrics, compiled with numba).

A **user-defined** metric is a function of two rows (1-D float32 arrays) returning their
distance, as umap-learn and pynndescent take it: a numba-compiled function, or a plain one
numba can compile (it is compiled here). It is served as the general metrics are (exact
distances by :mod:`unimap.neighbors.custom_metric_numba`, pynndescent beyond), its
``metric_kwds`` values passed after the two rows, in order (pynndescent's ``dist_args``).

umap-learn's aliases (``l1``, ``l2``, ``cityblock``, ``taxicab``, ``linf``, ...) map to these
names (:func:`canonical_metric`). ``minkowski`` takes ``p`` (default 2) through the
estimators' ``metric_kwds`` (``metric_params`` for TSNE, scikit-learn's name).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["NATIVE_METRICS", "GENERAL_METRICS", "METRIC_ALIASES", "GENERAL_EXACT_MAX_SAMPLES",
           "canonical_metric", "check_metric_kwds", "pairwise", "is_general",
           "compiled_metric", "distance_only", "metric_name", "check_user_distances",
           "user_metric_failure",
           "probe_user_metric", "PAIRWISE_BLOCK_BYTES", "pairwise_bytes"]

NATIVE_METRICS = ("euclidean", "cosine", "correlation", "manhattan")
GENERAL_METRICS = ("chebyshev", "minkowski", "canberra", "braycurtis", "hamming", "jaccard",
                   "dice", "hellinger", "haversine", "sqeuclidean")
METRIC_ALIASES = {"l2": "euclidean", "l1": "manhattan", "cityblock": "manhattan",
                  "taxicab": "manhattan", "linf": "chebyshev", "linfinity": "chebyshev",
                  "linfty": "chebyshev", "infinity": "chebyshev"}
# Below this many points the general metrics are searched exactly (umap-learn's threshold).
GENERAL_EXACT_MAX_SAMPLES = 4096

_BOOLEAN = ("jaccard", "dice")  # non-zero entries are True, as in pynndescent


def canonical_metric(metric: Any) -> Any:
    """The metric's own name for an alias (``"l1"`` → ``"manhattan"``); a user-defined
    metric (a callable) as it is."""
    return METRIC_ALIASES.get(metric, metric) if isinstance(metric, str) else metric


def is_general(metric: Any) -> bool:
    """Whether the metric is served by exact distances and pynndescent only (a general or a
    user-defined one), not by every backend's own kernels."""
    return callable(metric) or metric in GENERAL_METRICS


def metric_name(metric: Any) -> str:
    """The metric as text: its name, or a user-defined function's qualified name."""
    if isinstance(metric, str):
        return metric
    function = getattr(metric, "py_func", metric)
    return getattr(function, "__qualname__", type(function).__name__)


def compiled_metric(metric: Any) -> Any:
    """A user-defined metric as a numba function: itself when numba compiled it already,
    else ``numba.njit`` of it (compiled at its first call)."""
    import numba
    from numba.extending import is_jitted

    return metric if is_jitted(metric) else numba.njit(metric)


def distance_only(metric: Any, rows: Any, kwds: Mapping[str, Any] | None) -> Any:
    """A compiled user metric that returns a float: itself, or, for one that returns
    ``(distance, gradient)`` (umap-learn's convention for metrics with a gradient), a numba
    function of its distance alone. Told apart by one call on the first two of ``rows``
    (dense; a sparse matrix is densified for the call), which compiles the metric for them as
    the search would."""
    import numba
    import scipy.sparse as sp

    sample = rows[:2]
    if sp.issparse(sample):
        sample = sample.toarray()
    sample = np.asarray(sample)
    if sample.shape[0] == 0:
        return metric
    args = tuple(dict(kwds or {}).values())
    try:
        value = metric(sample[0], sample[-1], *args)
    except Exception:  # noqa: BLE001  the search's own call reports it, with its context
        return metric
    if not isinstance(value, tuple):
        return metric

    @numba.njit
    def distance(x, y, *args):  # the first of (distance, gradient)
        return metric(x, y, *args)[0]

    distance.__qualname__ = getattr(getattr(metric, "py_func", metric), "__qualname__",
                                    "metric")
    return distance


def check_metric_kwds(metric: str, kwds: Mapping[str, Any] | None,
                      name: str = "metric_kwds") -> dict[str, Any]:
    """The metric's parameters checked: ``minkowski`` takes ``p`` > 0 (default 2), the
    others none. Raises ``ValueError`` naming an unknown or bad parameter."""
    kwds = dict(kwds or {})
    metric = canonical_metric(metric)
    if callable(metric):
        for key, value in kwds.items():
            if isinstance(value, bool) or not isinstance(value, (int, float, np.ndarray)):
                raise ValueError(f"{name}[{key!r}] of a user-defined metric must be a number "
                                 f"or a numpy array (passed after the two rows), got {value!r}")
        return kwds
    allowed = {"p"} if metric == "minkowski" else set()
    unknown = set(kwds) - allowed
    if unknown:
        takes = "takes only 'p'" if allowed else "takes no parameters"
        raise ValueError(f"{name} {sorted(unknown)} not understood: metric={metric!r} {takes}")
    if metric == "minkowski":
        p = kwds.setdefault("p", 2.0)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (
                0 < p < math.inf):
            raise ValueError(f"{name}['p'] of minkowski must be a positive number, got {p!r}")
        kwds["p"] = float(p)
    return kwds


def check_metric_data(metric: str, n_features: int) -> None:
    """Refuse data the metric is not defined on (haversine: 2 columns)."""
    if canonical_metric(metric) == "haversine" and n_features != 2:
        raise ValueError("metric='haversine' needs 2 columns (latitude, longitude in radians), "
                         f"got {n_features}")


PAIRWISE_BLOCK_BYTES = 1 << 27
"""The float64 copy of a block of rows that :func:`pairwise` hands SciPy at a time (128 MiB):
``cdist`` computes in float64, and a copy of all the rows of wide data (400 × 1,000,000:
3.2 GB, twice) outgrew every estimate; two such blocks live at once (:func:`pairwise_bytes`)."""


def pairwise_bytes(n: int, d: int) -> int:
    """The most :func:`pairwise` holds beside its inputs and output, for rows of ``d``
    features among ``n``: a float64 block of each side."""
    return 2 * min(PAIRWISE_BLOCK_BYTES, n * d * 8)


def pairwise(A: np.ndarray, B: np.ndarray, metric: str,
             kwds: Mapping[str, Any] | None = None) -> np.ndarray:
    """Distances between the rows of ``A`` (m, d) and ``B`` (n, d) for a general metric,
    float32 of shape (m, n), by blocks of rows whose float64 copies stay within
    ``PAIRWISE_BLOCK_BYTES`` (every metric here compares rows pair by pair)."""
    metric = canonical_metric(metric)
    kwds = dict(kwds or {})
    if callable(metric):
        return _custom(A, B, metric, kwds)
    rows = max(1, PAIRWISE_BLOCK_BYTES // (8 * max(1, A.shape[1])))
    if A.shape[0] <= rows and B.shape[0] <= rows:
        return _pairwise_block(A, B, metric, kwds)
    out = np.empty((A.shape[0], B.shape[0]), dtype=np.float32)
    for a in range(0, A.shape[0], rows):
        for b in range(0, B.shape[0], rows):
            out[a:a + rows, b:b + rows] = _pairwise_block(A[a:a + rows], B[b:b + rows],
                                                          metric, kwds)
    return out


def _pairwise_block(A: np.ndarray, B: np.ndarray, metric: str, kwds: dict) -> np.ndarray:
    from scipy.spatial.distance import cdist

    if metric == "hellinger":
        return _hellinger(A, B)
    if metric == "haversine":
        return _haversine(A, B)
    if metric in _BOOLEAN:
        return cdist(A != 0, B != 0, metric).astype(np.float32)
    return cdist(np.asarray(A, np.float64), np.asarray(B, np.float64), metric,
                 **kwds).astype(np.float32)


def _custom(A: np.ndarray, B: np.ndarray, metric: Any, kwds: dict) -> np.ndarray:
    """A user-defined metric's distances, float32; refuses a function numba cannot compile
    and distances that are negative or not finite, naming the function."""
    from numba.core.errors import NumbaError

    from unimap.neighbors.custom_metric_numba import custom_block

    out = np.empty((A.shape[0], B.shape[0]), dtype=np.float32)
    try:
        custom_block(np.ascontiguousarray(A, np.float32), np.ascontiguousarray(B, np.float32),
                     compiled_metric(metric), tuple(kwds.values()), out)
    except SystemError as exc:  # the metric raised inside numba's compiled loop
        raise user_metric_failure(metric, exc) from exc.__cause__
    except NumbaError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"metric={metric_name(metric)!r} could not be compiled by numba ({first}): a "
            "user-defined metric must be a function of two 1-D float32 arrays (and its "
            "metric_kwds values, in order) returning a number, in the Python numba compiles "
            "(https://numba.readthedocs.io/en/stable/reference/pysupported.html)") from exc
    check_user_distances(metric, out)
    return out


def check_user_distances(metric: Any, distances: np.ndarray,
                         indices: np.ndarray | None = None) -> None:
    """Refuse what a user-defined metric gave, by whichever search: a negative or non-finite
    distance, or (``indices``, pynndescent's graph) a point left without neighbours, which is
    what its NaN distances become there. The same rule at every size: the exact search up
    to ``GENERAL_EXACT_MAX_SAMPLES`` points and pynndescent beyond."""
    name = metric_name(metric)
    if indices is not None and (indices < 0).any():
        raise ValueError(f"metric={name!r} left points without neighbours in pynndescent's "
                         "search, where it returned NaN or infinite distances: a metric's "
                         "distances must be finite and non-negative")
    bad = ~(np.isfinite(distances) & (distances >= 0))
    if bad.any():
        raise ValueError(f"metric={name!r} returned the distance {float(distances[bad][0])!r}: "
                         "a metric's distances must be finite and non-negative")


def user_metric_failure(metric: Any, exc: SystemError) -> ValueError:
    """The error of a user-defined metric that raised inside numba's compiled loops, which
    numba surfaces as ``SystemError`` ("returned a result with an exception set"), with the
    metric's own exception (its ``__cause__``) named."""
    cause = exc.__cause__
    what = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
    return ValueError(f"metric={metric_name(metric)!r} raised {what}")


def probe_user_metric(metric: Any, rows: Any, kwds: Mapping[str, Any] | None,
                      n_probe: int = 64) -> None:
    """Run a user-defined metric on the first ``n_probe`` rows against each other, where the
    exact search would: a function numba cannot compile, one that raises, or distances that
    are negative or not finite are refused with the same errors before a search that would
    take them (pynndescent's) begins."""
    import scipy.sparse as sp

    sample = rows[:n_probe]
    if sp.issparse(sample):
        sample = sample.toarray()
    pairwise(sample, sample, metric, kwds)


def _hellinger(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """pynndescent's hellinger: ``sqrt(1 − Σ√(x·y) / √(Σx·Σy))`` on non-negative rows; 0
    between two zero rows, 1 between a zero row and another."""
    if (A < 0).any() or (B < 0).any():
        raise ValueError("metric='hellinger' needs non-negative data")
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    overlap = np.sqrt(A) @ np.sqrt(B).T
    norms = np.sqrt(np.outer(A.sum(axis=1), B.sum(axis=1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sqrt(np.maximum(1.0 - overlap / norms, 0.0))
    zero_a, zero_b = A.sum(axis=1) == 0, B.sum(axis=1) == 0
    out[zero_a[:, None] ^ zero_b[None, :]] = 1.0
    out[zero_a[:, None] & zero_b[None, :]] = 0.0
    return out.astype(np.float32)


def _haversine(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Great-circle distance on the unit sphere between (latitude, longitude) rows in
    radians (scikit-learn's and pynndescent's haversine)."""
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    lat = np.sin(0.5 * (A[:, None, 0] - B[None, :, 0])) ** 2
    lon = np.sin(0.5 * (A[:, None, 1] - B[None, :, 1])) ** 2
    inner = lat + np.cos(A[:, None, 0]) * np.cos(B[None, :, 0]) * lon
    return (2.0 * np.arcsin(np.sqrt(np.clip(inner, 0.0, 1.0)))).astype(np.float32)
