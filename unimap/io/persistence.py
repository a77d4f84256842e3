"""Saving and loading fitted estimators without pickle: ``est.save(path)``, ``unimap.load(path)``.

The file (format ``"unimap-model"``, version 2; ``docs/persistence.md``) is a zip archive of

- ``header.json``: format name and version, the unimap and numpy versions that wrote it, the
  class name, the parameters (``get_params(deep=False)``), the fitted attributes, the
  neighbour index's settings, and the manifest: name, dtype and shape of every array;
- one ``<name>.npy`` per array, written and read with ``allow_pickle=False``.

Values are JSON with a few tagged objects (:mod:`unimap.io.model_state`). A parameter that is a
callable (TSNE's ``callback``) or a numpy random generator cannot be stored: it is dropped
with a warning and recorded under ``dropped_params``; the loaded model has its default. A
user-defined ``metric`` is code that ``transform`` needs: a model fitted with one is refused
(``TypeError``, nothing written); pickle keeps it.

What is stored is what ``transform`` needs plus the fitted attributes: parameters, the
``_``-suffixed attributes (``graph_``, ``knn_indices_`` and ``knn_dists_`` may be left out
with ``include_graph=False``: ``transform`` does not read them), the seeds ``_seed`` and
``_streams`` (so ``transform`` after loading gives bitwise the same result), and the training
rows of the neighbour index (``include_training_data=False`` leaves them out: the model then
reports its attributes but cannot ``transform``).

Loading runs no code from the file: no pickle; the class comes from an allow-list of
unimap's estimators; the format name and version, every manifest entry (present, stated
dtype and shape, CRC) and the consistency of the fitted attributes are checked, and any
problem is a ``ValueError`` naming it.

Two choices were made by measurement (measured: benchmarks/results/library_notes.md,
"unimap/io/persistence.py"):

- The faiss HNSW graphs are rebuilt at load time from the stored rows and PCA projection,
  not stored with ``faiss.serialize_index``: serialized they would add megabytes, and loading
  them means parsing untrusted binary in C++. The rebuild takes about a second and gives
  graphs byte for byte equal to the fitted ones (each part is inserted on one thread;
  compared through ``serialize_index``), so ``transform`` is bitwise the same.
- Members are compressed with DEFLATE level 1: about a tenth of the stored size, a little
  slower to write than stored and much faster than level 6, which is hardly smaller.

Writing is atomic (:func:`unimap.io.atomic.atomic_path`): a failed save leaves no file and keeps an
existing one.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import struct
import zipfile
import zlib
from pathlib import Path
from tokenize import TokenError
from typing import Any

import numpy as np

from unimap.io.model_state import (
    NAME_PATTERN,
    ArrayStore,
    check_declared_sizes,
    check_embedding,
    check_pca,
    decode,
    encode,
    export_index,
    numeric_dtype,
    restore_index,
)
from unimap.runtime.user_warnings import warn_user

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load", "save"]

FORMAT_NAME = "unimap-model"
# 2: supervision, unique and metric parameters, unique_inverse_, TSNE's scikit-learn names
# (max_iter, angle; a version-1 file's n_iter and theta are read under them)
FORMAT_VERSION = 2
HEADER = "header.json"
_MAX_HEADER_BYTES = 64 << 20
_COMPRESSION, _LEVEL = zipfile.ZIP_DEFLATED, 1  # chosen by measurement: module docstring
_ZIP64_AT = 1 << 30  # members this large are written with zip64 sizes

_PRIVATE = ("_seed", "_streams", "_sklearn_output_config")
_GRAPH = ("graph_", "knn_indices_", "knn_dists_")
_FITTED_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*_$")
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
               struct.error)


def save(estimator: Any, path: str | os.PathLike, *, include_training_data: bool = True,
         include_graph: bool = True) -> Path:
    """Write a fitted unimap estimator to ``path`` (see the module docstring).

    Parameters
    ----------
    estimator : a fitted unimap estimator (PCA, UMAP, TSNE, GDR or another declared method)
    path : str or path-like
        The file to write (conventionally ``*.unimap``); replaced atomically.
    include_training_data : bool, default=True
        Store the training rows the neighbour index needs for ``transform``. False: a smaller
        file whose model reports its fitted attributes but whose ``transform`` raises.
    include_graph : bool, default=True
        Store ``graph_``, ``knn_indices_`` and ``knn_dists_`` (``transform`` does not use
        them).

    Returns
    -------
    path : pathlib.Path

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    TypeError
        If it is not one of unimap's estimators, or holds a value that cannot be stored.
    """
    methods = _registry()
    declared = getattr(type(estimator), "declaration", None)
    if (not isinstance(declared, methods.MethodDeclaration)
            or methods.estimator_class(declared.name) is not type(estimator)):
        raise TypeError(f"save stores unimap's estimators {_method_names()}, got "
                        f"{type(estimator).__qualname__}")
    estimator._check_fitted()
    header, arrays = _export(estimator, include_training_data, include_graph)
    text = json.dumps(header, indent=1, allow_nan=False)
    from unimap.io.atomic import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", compression=_COMPRESSION,
                                                  compresslevel=_LEVEL) as archive:
        archive.writestr(HEADER, text)
        for entry in header["arrays"]:
            array = arrays[entry["name"]]
            with archive.open(entry["file"], "w", force_zip64=array.nbytes >= _ZIP64_AT) as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
    return path


def load(path: str | os.PathLike) -> Any:
    """Read an estimator written by :func:`save` (or ``est.save``).

    Nothing in the file is executed: see the module docstring for what is checked.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    estimator : a fitted unimap estimator (PCA, UMAP, TSNE, GDR or another declared method)

    Raises
    ------
    ValueError
        If the file is not a unimap model file, is of a newer format version, or is damaged
        or inconsistent; the message names the problem.

    Examples
    --------
    >>> import numpy as np, unimap
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> model = unimap.UMAP(n_epochs=50, random_state=0).fit(X[:500])
    >>> path = model.save("digits.unimap")
    >>> again = unimap.load("digits.unimap")
    >>> type(again).__name__, bool(np.array_equal(again.transform(X[500:510]),
    ...                                           model.transform(X[500:510])))
    ('UMAP', True)
    """
    where = os.fspath(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, EOFError, struct.error, ValueError) as exc:
        raise ValueError(f"{where} is not a unimap model file: not a readable zip archive "
                         f"({exc})") from None
    try:
        with archive:
            header, cls = _read_header(archive)
            referenced = _referenced_arrays({k: v for k, v in header.items() if k != "arrays"})
            # only the arrays the parameters, attributes and index refer to are read: an
            # extra member of a tampered file (1 GiB from a 1 MB file) stays on disk
            entries = [entry for entry in _check_manifest(header, archive)
                       if entry["name"] in referenced]
            check_declared_sizes(header.get("attributes"), entries)
            arrays = {entry["name"]: _read_array(archive, entry) for entry in entries}
    except _ZIP_ERRORS as exc:  # truncated or corrupted members, CRC errors
        raise ValueError(f"cannot load {where}: damaged zip member ({exc})") from None
    except ValueError as exc:
        raise ValueError(f"cannot load {where}: {exc}") from None
    try:
        return _restore(cls, header, arrays)
    except ValueError as exc:
        raise ValueError(f"cannot load {where}: {exc}") from None


# -- writing ---------------------------------------------------------------------------------
def _export(est: Any, include_data: bool, include_graph: bool) -> tuple[dict, dict]:
    store = ArrayStore()
    params, dropped = {}, {}
    for name, value in est.get_params(deep=False).items():
        if name == "metric" and callable(value):
            from unimap.neighbors.metrics import metric_name

            raise TypeError(f"{type(est).__name__} with the user-defined metric "
                            f"{metric_name(value)!r} cannot be saved: the file holds no code "
                            "and transform needs the metric (pickle keeps it, or use one of "
                            "unimap's metrics)")
        if callable(value) or isinstance(value, (np.random.Generator, np.random.RandomState)):
            dropped[name] = f"{type(value).__name__}: {repr(value)[:80]}"
            warn_user(f"{type(est).__name__}.{name} (a {type(value).__name__}) cannot be "
                      "saved: it is left out (the loaded model has the default) and "
                      "recorded in the file's dropped_params", UserWarning)
            continue
        params[name] = encode(value, f"params.{name}", store)
    attributes = {}
    for name, value in vars(est).items():
        if name in params or name in dropped or name == "_index" or (
                name in _GRAPH and not include_graph):
            continue
        if name not in _PRIVATE and not _FITTED_NAME.match(name):
            raise TypeError(f"{type(est).__name__}.{name} is neither a parameter nor a fitted "
                            "attribute: unimap.io.persistence does not know how to store it")
        attributes[name] = encode(value, name, store)
    index = export_index(vars(est).get("_index"), include_data, store)
    header = {
        "format": FORMAT_NAME, "format_version": FORMAT_VERSION,
        "unimap_version": _unimap_version(), "numpy_version": np.__version__,
        "class": type(est).__name__, "params": params, "dropped_params": dropped,
        "attributes": attributes, "index": index, "training_data": bool(include_data),
        "graph": bool(include_graph),
        "arrays": [{"name": k, "file": f"{k}.npy", "dtype": a.dtype.str, "shape": list(a.shape)}
                   for k, a in store.arrays.items()],
    }
    return header, store.arrays


# -- reading ---------------------------------------------------------------------------------
def _read_header(archive: zipfile.ZipFile) -> tuple[dict, type]:
    names = archive.namelist()
    if len(set(names)) != len(names):
        raise ValueError("the zip archive holds duplicate member names")
    if HEADER not in names:
        raise ValueError(f"not a unimap model file: no {HEADER} member")
    if archive.getinfo(HEADER).file_size > _MAX_HEADER_BYTES:
        raise ValueError(f"{HEADER} is larger than {_MAX_HEADER_BYTES >> 20} MiB")
    try:
        header = json.loads(archive.read(HEADER).decode("utf-8"),
                            parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{HEADER} is not valid JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        found = header.get("format") if isinstance(header, dict) else None
        raise ValueError(f"not a unimap model file: format {found!r}, expected {FORMAT_NAME!r}")
    version = header.get("format_version")
    if type(version) is not int or version < 1:
        raise ValueError(f"invalid format_version {version!r} (a positive integer)")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"the file is format version {version} (written by unimap "
            f"{header.get('unimap_version')}), newer than format version {FORMAT_VERSION} that "
            f"this unimap {_unimap_version()} reads: upgrade unimap to load it")
    name = header.get("class")
    # the class is looked up among the declared methods, never imported by a name from the file
    cls = _registry().estimator_class(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown estimator class {name!r}; a unimap model file holds one of "
                         f"{_method_names()} (a method defined outside unimap: import its "
                         "module first)")
    return header, cls


def _check_manifest(header: dict, archive: zipfile.ZipFile) -> list[dict]:
    entries = header.get("arrays")
    if not isinstance(entries, list):
        raise ValueError("the header has no 'arrays' manifest list")
    checked, seen = [], set()
    for entry in entries:
        keys = {"name", "file", "dtype", "shape"}
        if not isinstance(entry, dict) or set(entry) != keys:
            raise ValueError(f"manifest entries have the keys {sorted(keys)}, got {entry!r}")
        name = entry["name"]
        if not isinstance(name, str) or not NAME_PATTERN.match(name) or name in seen:
            raise ValueError(f"invalid or repeated array name {name!r} in the manifest")
        if entry["file"] != f"{name}.npy":
            raise ValueError(f"array {name!r}: member {entry['file']!r} is not {name}.npy")
        shape = entry["shape"]
        if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
            raise ValueError(f"array {name!r}: invalid shape {shape!r}")
        try:
            dtype = numeric_dtype(entry["dtype"])
        except ValueError as exc:
            raise ValueError(f"array {name!r}: {exc}") from None
        seen.add(name)
        checked.append({**entry, "dtype": dtype, "shape": tuple(shape)})
    members = set(archive.namelist())
    expected = {HEADER} | {entry["file"] for entry in checked}
    if expected - members:
        raise ValueError(f"missing member(s) {sorted(expected - members)} listed in the "
                         "manifest")
    if members - expected:
        raise ValueError(f"unexpected member(s) {sorted(members - expected)} not in the "
                         "manifest")
    return checked


def _read_array(archive: zipfile.ZipFile, entry: dict) -> np.ndarray:
    """The member's array, after checking its .npy header against the manifest (so nothing
    is allocated for a size the manifest does not state)."""
    fmt = np.lib.format
    info, name = archive.getinfo(entry["file"]), entry["name"]
    with archive.open(info) as f:
        version = fmt.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"array {name!r}: unsupported .npy version {version}")
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else (
            fmt.read_array_header_2_0)
        try:
            shape, _, dtype = read_header(f)
        except (ValueError, SyntaxError, TokenError) as exc:  # numpy's, on a garbled header
            raise ValueError(f"array {name!r}: invalid .npy header ({str(exc)[:100]})") from None
        offset = f.tell()
    if dtype != entry["dtype"] or shape != entry["shape"]:
        raise ValueError(f"array {name!r}: the member holds {dtype.str} {list(shape)}, the "
                         f"manifest states {entry['dtype'].str} {list(entry['shape'])}")
    if info.file_size != offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        raise ValueError(f"array {name!r}: member size {info.file_size} does not match its "
                         "shape and dtype")
    with archive.open(info) as f:
        array = fmt.read_array(f, allow_pickle=False)
        if f.read(1):  # also completes the CRC check
            raise ValueError(f"array {name!r}: trailing bytes after the array")
    return array


def _restore(cls: type, header: dict, arrays: dict[str, np.ndarray]) -> Any:
    name, declared = cls.__name__, cls.declaration
    params, attributes = header.get("params"), header.get("attributes")
    if not isinstance(params, dict) or not isinstance(attributes, dict):
        raise ValueError("the header's params and attributes must be JSON objects")
    valid = set(cls._get_param_names())
    for old, new in declared.renamed_params.items():
        if old in params and new not in params:  # written before the rename
            params[new] = params.pop(old)
    if set(params) - valid:
        raise ValueError(f"unknown parameter(s) {sorted(set(params) - valid)} for {name}")
    est = cls(**{k: decode(v, f"params.{k}", arrays) for k, v in params.items()})
    try:
        est._validate_params()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"invalid parameters: {exc}") from None
    for attr, value in attributes.items():
        if attr in valid or not (attr in _PRIVATE or (
                _FITTED_NAME.match(attr) and not hasattr(cls, attr))):
            raise ValueError(f"{attr!r} is not a fitted attribute of {name}")
        est.__dict__[attr] = decode(value, f"attributes.{attr}", arrays)
    missing = [a for a in declared.transform_needs if a not in vars(est)]
    if missing:
        raise ValueError(f"missing fitted attribute(s) {missing}")
    if not declared.neighbor_index:
        check_pca(est)
        if header.get("index") is not None:
            raise ValueError(f"a {name} has no neighbour index")
        return est
    n = check_embedding(est)
    if header.get("index") is None and vars(est).get("knn_method_") != "precomputed":
        raise ValueError("no neighbour index, though the model was not fitted with "
                         "precomputed_knn")
    est._index = restore_index(header.get("index"), arrays, n, est.n_features_in_, est.metric,
                               est._metric_kwds)
    return est


def _referenced_arrays(value: Any) -> set[str]:
    """The names of the arrays a JSON value refers to (``{"__array__": name}`` anywhere)."""
    if isinstance(value, dict):
        names = {value["__array__"]} if isinstance(value.get("__array__"), str) else set()
        for item in value.values():
            names |= _referenced_arrays(item)
        return names
    if isinstance(value, list):
        return set().union(*(_referenced_arrays(item) for item in value)) if value else set()
    return set()


def _reject_constant(name: str) -> None:
    raise ValueError(f"{HEADER} holds the non-standard JSON constant {name}")


def _registry() -> Any:
    """The method registry (:mod:`unimap.methods.registry`): each method's declaration says
    what its model files hold. Reached by ``importlib``, as the estimators are, since io sits
    below them."""
    return importlib.import_module("unimap.methods.registry")


def _method_names() -> list[str]:
    return sorted(d.name for d in _registry().declarations())


def _unimap_version() -> str:
    from unimap._version import __version__

    return __version__
