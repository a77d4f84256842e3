"""A fitted estimator as JSON values plus named arrays, and back (for :mod:`unimap.io.persistence`):
the value encoding, the consistency checks of loaded attributes, and the neighbour index.

Values are encoded as JSON with a few tagged objects, each a JSON object whose keys start
with ``__`` (a plain dict may not use such keys):

- ``{"__array__": name}``: a numeric array stored as the member ``<name>.npy``;
- ``{"__csr_matrix__": {"data": ..., "indices": ..., "indptr": ...}, "shape": [n, m]}``;
- ``{"__tuple__": [...]}``, ``{"__strings__": [...]}`` (an object array of str, e.g.
  ``feature_names_in_``), ``{"__float__": "nan" | "inf" | "-inf"}``;
- ``{"__scalar__": "float32", "value": 1.5}``: a numpy scalar keeps its dtype, so a parameter
  given as ``np.float32`` computes the same bits after loading;
- ``{"__streams__": [4 ints]}``: :class:`unimap.runtime.random_streams.FitStreams`, the seeds of a
fit's phases.

Decoding builds only these types: nothing named in the file is imported or called.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from unimap.runtime.random_streams import FitStreams

__all__ = ["ArrayStore", "TrainingDataDropped", "check_declared_sizes", "check_embedding",
           "check_pca", "decode", "encode", "export_index", "restore_index", "NAME_PATTERN"]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")
"""Names of stored arrays (and of their members, ``<name>.npy``)."""
NUMERIC_KINDS = "biuf"
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_SEED_LIMIT = 1 << 63


def numeric_dtype(text: Any) -> np.dtype:
    """``np.dtype(text)`` for a boolean, integer or float dtype; ValueError otherwise."""
    try:
        dtype = np.dtype(text) if isinstance(text, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in NUMERIC_KINDS or dtype.fields is not None:
        raise ValueError(f"unsupported dtype {text!r} (bool, integer and float only)")
    return dtype


class ArrayStore:
    """The arrays collected while encoding, under unique names."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, name: str, array: np.ndarray) -> dict:
        if not NAME_PATTERN.match(name) or name in self.arrays:
            name = f"array{len(self.arrays)}"
        self.arrays[name] = np.ascontiguousarray(array)
        return {"__array__": name}


def encode(value: Any, name: str, store: ArrayStore) -> Any:
    """``value`` as JSON, its arrays added to ``store``; TypeError for what cannot be stored."""
    import scipy.sparse as sp

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic):
        if value.dtype.kind not in NUMERIC_KINDS:
            raise TypeError(f"{name}: numpy scalar of dtype {value.dtype} cannot be stored")
        return {"__scalar__": value.dtype.name, "value": encode(value.item(), name, store)}
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else {"__float__": repr(float(value))}
    if isinstance(value, FitStreams):
        return {"__streams__": [value.neighbors, value.init, value.optimize, value.transform]}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, f"{name}.{i}", store) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, f"{name}.{i}", store) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if not all(isinstance(k, str) and not k.startswith("__") for k in value):
            raise TypeError(f"{name}: dict keys must be str not starting with '__'")
        return {k: encode(v, f"{name}.{k}", store) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        if value.dtype == object and value.ndim == 1 and all(isinstance(v, str) for v in value):
            return {"__strings__": [str(v) for v in value]}
        if value.dtype.kind not in NUMERIC_KINDS or value.dtype.fields is not None:
            raise TypeError(f"{name}: arrays of dtype {value.dtype} cannot be stored")
        return store.add(name, value)
    if sp.issparse(value) and type(value) is sp.csr_matrix:
        parts = {part: store.add(f"{name}.{part}", getattr(value, part))
                 for part in ("data", "indices", "indptr")}
        return {"__csr_matrix__": parts, "shape": list(value.shape)}
    raise TypeError(f"{name}: a value of type {type(value).__name__} cannot be stored")


def decode(value: Any, where: str, arrays: dict[str, np.ndarray]) -> Any:
    """The value that :func:`encode` encoded; ValueError naming ``where`` when malformed."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode(v, f"{where}[{i}]", arrays) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        raise ValueError(f"{where}: unexpected JSON value of type {type(value).__name__}")
    tags = [k for k in value if k.startswith("__")]
    if not tags:
        return {k: decode(v, f"{where}.{k}", arrays) for k, v in value.items()}
    try:
        return _decode_tagged(tags[0], value, arrays)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{where}: malformed {tags[0]} value {_short(value)} ({exc})") from None


def _decode_tagged(tag: str, value: dict, arrays: dict[str, np.ndarray]) -> Any:
    keys = {"__scalar__": {"__scalar__", "value"}, "__csr_matrix__": {"__csr_matrix__", "shape"}}
    if set(value) != keys.get(tag, {tag}):
        raise ValueError(f"unexpected keys {sorted(value)}")
    body = value[tag]
    if tag == "__array__":
        if body not in arrays:
            raise ValueError(f"no array {body!r} in the manifest")
        return arrays[body]
    if tag == "__tuple__":
        return tuple(decode(v, tag, arrays) for v in _typed(body, list))
    if tag == "__strings__":
        if not all(isinstance(v, str) for v in _typed(body, list)):
            raise ValueError("not a list of str")
        return np.array(body, dtype=object)
    if tag == "__float__":
        return _FLOATS[body]
    if tag == "__scalar__":
        inner = value["value"]
        if isinstance(inner, dict) and set(inner) == {"__float__"}:
            inner = _FLOATS[inner["__float__"]]
        if isinstance(inner, str) or not isinstance(inner, (bool, int, float)):
            raise ValueError("value is not a number")
        return numeric_dtype(body).type(inner)
    if tag == "__streams__":
        seeds = _typed(body, list)
        if len(seeds) != 4 or not all(_is_seed(s) for s in seeds):
            raise ValueError("need 4 integers in [0, 2**63)")
        return FitStreams(*seeds)
    if tag == "__csr_matrix__":
        return _csr(body, value["shape"], arrays)
    raise ValueError("unknown tag")


def _csr(parts: dict, shape: Any, arrays: dict[str, np.ndarray]):
    import scipy.sparse as sp

    got = {k: decode(v, k, arrays) for k, v in _typed(parts, dict).items()}
    if set(got) != {"data", "indices", "indptr"} or not _is_shape(shape, 2) or not all(
            isinstance(v, np.ndarray) and v.ndim == 1 for v in got.values()):
        raise ValueError("need 1-D arrays data, indices, indptr and a 2-D shape")
    if got["indices"].dtype.kind not in "iu" or got["indptr"].dtype.kind not in "iu":
        raise ValueError("indices and indptr must be integers")
    matrix = sp.csr_matrix((got["data"], got["indices"], got["indptr"]), shape=tuple(shape))
    matrix.check_format(full_check=True)  # sorted, in-range indices and a consistent indptr
    return matrix


def _typed(value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"expected a {kind.__name__}, got {type(value).__name__}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_seed(value: Any) -> bool:
    return type(value) is int and 0 <= value < _SEED_LIMIT


def _is_shape(value: Any, ndim: int | None = None) -> bool:
    return (isinstance(value, list) and (ndim is None or len(value) == ndim)
            and all(type(v) is int and v >= 0 for v in value))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# -- consistency of the fitted attributes ----------------------------------------------------
def check_pca(est: Any) -> None:
    """Check a loaded PCA's fitted attributes against each other and ``n_components``."""
    k, d = est.n_components_, est.n_features_in_
    _require(_count(k) and _count(d) and k == est.n_components and k <= d,
             f"n_components_={k!r}, n_features_in_={d!r} and n_components={est.n_components}"
             " disagree")
    for attr, shape in [("components_", (k, d)), ("mean_", (d,)), ("explained_variance_", (k,)),
                        ("explained_variance_ratio_", (k,)), ("singular_values_", (k,))]:
        _require_array(est, attr, shape, "f")
    _require(est.svd_solver_ in ("covariance", "full", "randomized"),
             f"unknown svd_solver_ {est.svd_solver_!r}")
    for attr in ("components_", "mean_", "explained_variance_", "singular_values_"):
        _require(np.isfinite(getattr(est, attr)).all(), f"{attr} has non-finite values")
    _check_feature_names(est, d)


def _distinct_count(est: Any) -> int:
    """The number of training points the index and the graph hold: the embedding's rows,
    or the distinct rows of a model fitted with ``unique=True`` (``unique_inverse_``)."""
    rows = est.embedding_.shape[0]
    if "unique_inverse_" not in vars(est):
        return rows
    _require_array(est, "unique_inverse_", (rows,), "iu")
    inverse = est.unique_inverse_.astype(np.int64)
    # codes number the distinct rows by first appearance: each new code is the next one
    seen = np.maximum.accumulate(np.concatenate([[-1], inverse[:-1]]))
    _require(rows > 0 and inverse[0] == 0 and (inverse >= 0).all()
             and (inverse <= seen + 1).all(),
             "unique_inverse_ does not number distinct rows by first appearance")
    return int(inverse.max()) + 1


def check_embedding(est: Any) -> int:
    """Check a loaded neighbour embedding's fitted attributes against each other and its
    parameters (``n_components``, ``metric``); return the number of indexed training points
    (the distinct rows with ``unique=True``)."""
    _require_array(est, "embedding_", (None, est.n_components), "f")
    _require(est.embedding_.dtype == np.float32, "embedding_ must be float32")
    # a NaN here would surface at transform as a blamed learning rate
    _require(np.isfinite(est.embedding_).all(), "embedding_ has non-finite values")
    n, d, k = _distinct_count(est), est.n_features_in_, est.n_neighbors_
    _require(n >= 2 and _count(d) and (est.metric != "precomputed" or d == n),
             f"n_features_in_={d!r} does not fit {n} training points")
    _require(_count(k) and k <= n, f"n_neighbors_={k!r} is not in [1, {n}]")
    for attr in ("a_", "b_"):
        value = vars(est).get(attr, 1.0)
        _require(isinstance(value, float) and 0 < value < np.inf, f"{attr}={value!r}")
    for attr, choices in type(est).declaration.fitted_choices.items():
        _require(vars(est).get(attr) in choices, f"unknown {attr} {vars(est).get(attr)!r}")
    for attr, shape in [("knn_indices_", (n, k)), ("knn_dists_", (n, k)), ("sigmas_", (n,)),
                        ("rhos_", (n,))]:
        if attr in vars(est):
            _require_array(est, attr, shape, "iuf")
    if "knn_dists_" in vars(est):
        _require(np.isfinite(est.knn_dists_).all(), "knn_dists_ has non-finite values")
    if "graph_" in vars(est):
        _require(getattr(est.graph_, "shape", None) == (n, n), f"graph_ is not {n} x {n}")
    _check_feature_names(est, d)
    return n


def _check_feature_names(est: Any, d: int) -> None:
    names = vars(est).get("feature_names_in_")
    _require(names is None or (names.dtype == object and names.shape == (d,)),
             f"feature_names_in_ must be {d} names")


def _require_array(est: Any, attr: str, shape: tuple, kinds: str) -> None:
    value = getattr(est, attr)
    ok = isinstance(value, np.ndarray) and value.dtype.kind in kinds and value.ndim == len(
        shape) and all(s is None or s == t for s, t in zip(shape, value.shape, strict=True))
    wanted = "(" + ", ".join("n" if s is None else str(s) for s in shape) + (
        ",)" if len(shape) == 1 else ")")
    _require(ok, f"{attr} must be an array of shape {wanted}, got "
                 f"{getattr(value, 'dtype', type(value).__name__)} {getattr(value, 'shape', '')}")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"inconsistent fitted attributes: {message}")


def _count(value: Any) -> bool:
    return _is_int(value) and value >= 1


# -- the neighbour index ---------------------------------------------------------------------
class TrainingDataDropped:
    """Stands in for the neighbour index of a model saved with ``include_training_data=False``:
    its fitted attributes are there, but placing new points needs the training data."""

    has_training_data = False

    def __init__(self, n_samples: int, metric: str, method: str) -> None:
        self.n_samples_, self.metric, self.method_ = n_samples, metric, method

    def missing(self, what: str) -> ValueError:
        """The error of ``what`` (``transform``, ``update``, ``inverse_transform``), which
        needs the dropped rows."""
        return ValueError(
            "this model was saved without its training data (save(..., "
            f"include_training_data=False)); {what} needs the training points and their "
            f"{self.method_!r} neighbour index: save the fitted model again with "
            "include_training_data=True")

    def query(self, *args: Any, **kwargs: Any):
        raise self.missing("transform")

    def with_threads(self, n_threads: int) -> TrainingDataDropped:
        return self


def export_index(index: Any, include_data: bool, store: ArrayStore) -> dict | None:
    """What rebuilds ``index`` (a :class:`unimap.neighbors.graph.NeighborIndex`, or None when fitted
    with ``precomputed_knn``): its settings, and its backend's state unless dropped
    (:meth:`unimap.neighbors.graph.NeighborIndex.export`).

    exact (and cuda, a graph built on the GPU): the prepared training rows (float32; unit rows
    for cosine/correlation). hnsw: the
    same rows, from which the faiss graphs are rebuilt at load time, and the PCA projection
    they were built on. nndescent: the rows pynndescent indexes, dense or sparse (it rebuilds
    on demand, as after unpickling). precomputed distances: nothing but the number of
    training points.
    """
    if index is None:
        return None
    info: dict[str, Any] = {
        "metric": index.metric, "method": index.method, "method_": index.method_,
        "n_jobs": encode(index.n_jobs, "n_jobs", store),
        "random_state": encode(index.random_state, "random_state", store),
        "n_samples": int(index.n_samples_), "data": None,
    }
    if include_data:
        index.export(info, lambda value, name: encode(value, name, store))
    return info


def restore_index(info: Any, arrays: dict[str, np.ndarray], n_samples: int,
                  n_features: int, metric: str, metric_kwds: dict | None = None) -> Any:
    """The index :func:`export_index` described, checked against the estimator's training
    size ``n_samples``, ``n_features`` and ``metric``; its backend rebuilds what it needs
    (hnsw graphs) here (:meth:`unimap.neighbors.graph.NeighborIndex.restore`)."""
    from unimap.neighbors.graph import INDEX_METHODS, METHODS, METRICS, NeighborIndex
    from unimap.neighbors.metrics import canonical_metric

    if info is None:
        return None
    info = _typed(info, dict)  # a JSON object
    data = decode(info.get("data"), "index.data", arrays)
    method = info.get("method_")
    if info.get("metric") != canonical_metric(metric) or metric not in METRICS:
        raise ValueError(f"index metric {info.get('metric')!r} is not the model's {metric!r}")
    if method not in INDEX_METHODS or (
            info.get("method") not in METHODS) or (
            metric == "precomputed" and method != "exact"):
        raise ValueError(f"unknown neighbour index method {info.get('method')!r} / {method!r}")
    if info.get("n_samples") != n_samples:
        raise ValueError(f"the index holds {info.get('n_samples')!r} points, the embedding "
                         f"{n_samples}")
    if data is None and metric != "precomputed":
        return TrainingDataDropped(n_samples, metric, method)
    n_jobs = decode(info.get("n_jobs"), "index.n_jobs", arrays)
    seed = decode(info.get("random_state"), "index.random_state", arrays)
    if not _is_int(n_jobs) or not (seed is None or _is_seed(seed)):
        raise ValueError("index n_jobs must be an int and random_state a seed")
    index = NeighborIndex(metric, info.get("method"), n_jobs, seed, metric_kwds=metric_kwds)

    def read(value: Any, where: str) -> Any:
        return decode(value, where, arrays)

    if metric == "precomputed":
        return index.restore(method, n_samples, None, info, read)
    import scipy.sparse as sp  # here: import unimap stays free of scipy

    sparse_rows = method in ("nndescent", "exact") and sp.issparse(data)
    if not (isinstance(data, np.ndarray) or sparse_rows) or data.dtype != np.float32 or (
            data.shape != (n_samples, n_features)):
        raise ValueError(f"index data must be float32 of shape ({n_samples}, {n_features})")
    values = data.data if sparse_rows else data
    if not np.isfinite(values).all():
        raise ValueError("index data has non-finite values")
    from unimap.runtime.validation import MAX_FEATURE_MAGNITUDE

    if values.size and float(np.abs(values).max()) > MAX_FEATURE_MAGNITUDE:
        raise ValueError(f"index data has values beyond {MAX_FEATURE_MAGNITUDE:.0e}, which "
                         "fit refuses (their squared distances overflow the float32 search)")
    if sparse_rows:  # the searches walk sorted, distinct columns
        from unimap.neighbors.sparse_rows import canonical_csr

        data = canonical_csr(data)
    return index.restore(method, n_samples, data, info, read)


DECLARED_SIZE_FACTOR = 4
"""How many times its points × columns a model's largest array may hold (the graph's 2·n·k
edges, the precomputed index's n × n distances and the HNSW projection all stay below it)."""


def check_declared_sizes(attributes: Any, entries: list[dict]) -> None:
    """Refuse, before any array is read, a manifest entry with more values than its model
    can hold: a member of zeros compresses about 1,000 times, so a 1 MB file may declare
    1 GiB, which reading would allocate before the shape checks refuse it. The bound is
    :data:`DECLARED_SIZE_FACTOR` × points × columns, read from the header's integers and the
    manifest's shape of ``embedding_`` (``n_components_`` × ``n_features_in_`` for PCA)."""
    if not isinstance(attributes, dict):
        return  # the restore names the malformed header
    shapes = {entry["name"]: entry["shape"] for entry in entries}

    def count(attr: str) -> int:
        value = attributes.get(attr)
        return value if type(value) is int and value > 0 else 1

    reference = attributes.get("embedding_")
    name = reference.get("__array__") if isinstance(reference, dict) else None
    embedding = shapes.get(name) if isinstance(name, str) else None
    columns = count("n_features_in_")
    if embedding is not None and len(embedding) == 2:
        rows = embedding[0]
        columns = max(columns, 4 * count("n_neighbors_"), embedding[1], 64)
    else:
        rows = count("n_components_")
    limit = DECLARED_SIZE_FACTOR * rows * columns + 4096
    for entry in entries:
        values = int(np.prod(entry["shape"], dtype=np.float64))
        if values > limit:
            raise ValueError(f"array {entry['name']!r} declares {values} values; a model of "
                             f"{rows} points and {columns} columns holds at most {limit} in "
                             "one array")
