"""est.save / unimap.load: round trips, options, refusal of damaged or tampered files.

The version-1 fixtures in ``tests/data`` (``model_v1_*``) were written once by the unimap that
introduced the format; later versions must keep loading them. ``python
tests/io/test_persistence.py`` writes them: do not rerun it to "update" them (that would defeat
the test); a new format version gets new fixtures beside the old ones.
"""

from __future__ import annotations

import copy
import io
import json
import pickle
import re
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import unimap
from unimap import GDR, PCA, TSNE, UMAP
from unimap.io.persistence import FORMAT_VERSION

DATA = Path(__file__).parents[1] / "data"
N_FIT, N_NEW = 250, 20


def _cases():
    # n_jobs=1: the results do not depend on it, and a busy test host stalls parallel loops
    return {
        "pca": lambda: PCA(random_state=0),
        "umap": lambda: UMAP(n_epochs=30, random_state=0, n_jobs=1),
        "umap_hnsw_cosine": lambda: UMAP(n_epochs=30, random_state=0, knn_method="hnsw",
                                         metric="cosine", n_jobs=1),
        "tsne": lambda: TSNE(max_iter=60, early_exaggeration_iter=20, random_state=0, n_jobs=1),
        "gdr": lambda: GDR(n_epochs=30, random_state=0, n_jobs=1),
        "gdr_normalized": lambda: GDR(normalized=True, n_epochs=30, random_state=0, n_jobs=1),
    }


@pytest.fixture(scope="module")
def data(digits):
    X, y = digits
    return X[:N_FIT], X[N_FIT:N_FIT + N_NEW]


@pytest.fixture(scope="module")
def fitted(data):
    return {name: make().fit(data[0]) for name, make in _cases().items()}


@pytest.fixture(scope="module")
def placed(fitted, data):
    """Each fitted model's transform of the new points, computed once."""
    return {name: model.transform(data[1]) for name, model in fitted.items()}


@pytest.fixture(scope="module")
def umap_file(fitted, tmp_path_factory):
    return fitted["umap"].save(tmp_path_factory.mktemp("models") / "umap.unimap")


def assert_same(a, b, where="value"):
    """Equal values of the same types (arrays: dtype and bits)."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif sp.issparse(a):
        assert a.shape == b.shape, where
        for part in ("data", "indices", "indptr"):
            assert_same(getattr(a, part), getattr(b, part), f"{where}.{part}")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, z) in enumerate(zip(a, b, strict=True)):
            assert_same(x, z, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, where


def assert_same_model(model, loaded):
    assert_same(model.get_params(deep=False), loaded.get_params(deep=False), "params")
    state = {k: v for k, v in vars(model).items() if k != "_index"}
    assert_same(state, {k: v for k, v in vars(loaded).items() if k != "_index"}, "attributes")
    index, index2 = vars(model).get("_index"), vars(loaded).get("_index")
    if index is not None:
        assert (index2.metric, index2.method_, index2.n_samples_) == (
            index.metric, index.method_, index.n_samples_)
        assert_same(index.backend_.rows, index2.backend_.rows, "index data")


# -- round trips ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(_cases()))
def test_round_trip_is_bitwise(name, fitted, placed, data, tmp_path):
    model = fitted[name]
    path = model.save(tmp_path / f"{name}.unimap")
    loaded = unimap.load(path)
    assert type(loaded) is type(model)
    assert_same_model(model, loaded)
    assert_same(placed[name], loaded.transform(data[1]), "transform")
    # the loaded model saves the same header and arrays again
    again = loaded.save(tmp_path / "again.unimap")
    assert _members(path) == _members(again)


@pytest.mark.parametrize("name", list(_cases()))
def test_pickle_round_trip(name, fitted, placed, data, tmp_path):
    # pickle keeps working, for fitted models and for loaded ones
    model = fitted[name]
    restored = pickle.loads(pickle.dumps(unimap.load(model.save(tmp_path / "m.unimap"))))
    assert_same(placed[name], restored.transform(data[1]), "transform after pickle")
    assert_same_model(model, pickle.loads(pickle.dumps(model)))


def test_hnsw_graphs_are_rebuilt_byte_for_byte(fitted, data, tmp_path):
    import faiss

    model = fitted["umap_hnsw_cosine"]
    loaded = unimap.load(model.save(tmp_path / "m.unimap"))
    model.transform(data[1]), loaded.transform(data[1])  # same efSearch in both
    for a, b in zip(model._index.backend_.index.indexes, loaded._index.backend_.index.indexes,
                    strict=True):
        assert_same(faiss.serialize_index(a), faiss.serialize_index(b), "faiss index")


def test_without_training_data(fitted, data, tmp_path, umap_file):
    model = fitted["umap"]
    path = model.save(tmp_path / "small.unimap", include_training_data=False)
    assert path.stat().st_size < umap_file.stat().st_size
    assert "index.data.npy" not in _names(path)
    loaded = unimap.load(path)
    assert_same(model.embedding_, loaded.embedding_)
    assert_same(model.graph_, loaded.graph_)
    with pytest.raises(ValueError, match="saved without its training data"):
        loaded.transform(data[1])
    # PCA has no training data to drop
    pca = unimap.load(fitted["pca"].save(tmp_path / "pca.unimap", include_training_data=False))
    assert_same(fitted["pca"].transform(data[1]), pca.transform(data[1]))


def test_without_graph(fitted, placed, data, tmp_path):
    model = fitted["tsne"]
    path = model.save(tmp_path / "m.unimap", include_graph=False)
    loaded = unimap.load(path)
    for attr in ("graph_", "knn_indices_", "knn_dists_"):
        assert not hasattr(loaded, attr)
    assert_same(model.sigmas_, loaded.sigmas_)
    assert_same(placed["tsne"], loaded.transform(data[1]))


def test_precomputed_distances_store_no_matrix(data, tmp_path):
    X, X_new = data
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    D_new = np.sqrt(((X_new[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    model = UMAP(metric="precomputed", n_epochs=30, random_state=0, n_jobs=1).fit(D)
    for include in (True, False):  # transform needs no training data here
        path = model.save(tmp_path / "m.unimap", include_training_data=include)
        assert not any(n.startswith("index") for n in _names(path))
        assert_same(model.transform(D_new), unimap.load(path).transform(D_new))


def test_nndescent_index_keeps_the_rows_pynndescent_needs(fitted, data, tmp_path):
    # pynndescent is optional: fake its (lazily built) index state on an exact one. (Querying
    # it is not tested: pynndescent refuses the index's 63-bit seed, in fit as well.)
    from unimap.neighbors.nndescent import NNDescentBackend

    model = copy.deepcopy(fitted["umap"])
    index = model._index
    index.backend_ = NNDescentBackend(index.metric, 1).build(data[0].astype(np.float32))
    loaded = unimap.load(model.save(tmp_path / "m.unimap"))
    backend = loaded._index.backend_
    assert loaded._index.method_ == "nndescent" and backend.nnd is None
    assert_same(index.backend_.rows, backend.rows)  # the rows as given, not prepared


def test_precomputed_knn_parameter_is_stored_as_arrays(fitted, data, tmp_path):
    knn = (fitted["gdr"].knn_indices_, fitted["gdr"].knn_dists_)
    model = GDR(n_epochs=30, random_state=0, n_jobs=1, precomputed_knn=knn).fit(data[0])
    loaded = unimap.load(model.save(tmp_path / "m.unimap"))
    assert_same(knn, loaded.precomputed_knn)
    assert_same(model.embedding_, loaded.embedding_)
    with pytest.raises(ValueError, match="precomputed_knn"):
        loaded.transform(data[1])


def test_numpy_scalar_and_array_parameters_keep_their_types(fitted, tmp_path):
    model = copy.deepcopy(fitted["umap"])
    model.set_params(n_neighbors=np.int64(15), learning_rate=np.float32(1.0),
                     init=model.embedding_.copy(), spread=np.float64(1.0))
    model._index.n_jobs = np.int64(1)  # as fitted with n_jobs=np.int64(1)
    loaded = unimap.load(model.save(tmp_path / "m.unimap"))
    assert_same(model.get_params(deep=False), loaded.get_params(deep=False))
    assert_same(np.int64(1), loaded._index.n_jobs)


def test_callables_and_generators_are_dropped_with_a_warning(fitted, placed, data, tmp_path):
    model = copy.deepcopy(fitted["tsne"])
    model.set_params(callback=lambda *args: False, random_state=np.random.default_rng(0))
    with pytest.warns(UserWarning, match="cannot be saved") as record:
        path = model.save(tmp_path / "m.unimap")
    assert len(record) == 2
    header = _header(path)
    assert set(header["dropped_params"]) == {"callback", "random_state"}
    loaded = unimap.load(path)
    assert loaded.callback is None and loaded.random_state is None
    assert_same(placed["tsne"], loaded.transform(data[1]))


def test_feature_names_and_output_config_round_trip(data, tmp_path):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(data[0], columns=[f"px{i}" for i in range(data[0].shape[1])])
    model = PCA(3).set_output(transform="pandas").fit(X)
    loaded = unimap.load(model.save(tmp_path / "m.unimap"))
    assert_same(model.feature_names_in_, loaded.feature_names_in_)
    out = loaded.transform(X.iloc[:5])
    assert list(out.columns) == ["pca0", "pca1", "pca2"]
    pd.testing.assert_frame_equal(out, model.transform(X.iloc[:5]))


def test_unfitted_model_cannot_be_saved(tmp_path):
    with pytest.raises(NotFittedError):
        UMAP().save(tmp_path / "m.unimap")
    with pytest.raises(NotFittedError):
        PCA().save(tmp_path / "m.unimap")
    assert list(tmp_path.iterdir()) == []


def test_foreign_subclass_is_refused(data, tmp_path):
    class MyPCA(PCA):
        pass

    with pytest.raises(TypeError, match="unimap's estimators"):
        MyPCA().fit(data[0]).save(tmp_path / "m.unimap")


def test_failed_save_leaves_no_file_and_keeps_an_existing_one(fitted, tmp_path, monkeypatch):
    calls = []
    write_array = np.lib.format.write_array

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        return write_array(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", failing)
    target = tmp_path / "m.unimap"
    with pytest.raises(OSError, match="disk full"):
        fitted["umap"].save(target)
    assert list(tmp_path.iterdir()) == []
    target.write_bytes(b"previous model")
    calls.clear()
    with pytest.raises(OSError, match="disk full"):
        fitted["umap"].save(target)
    assert list(tmp_path.iterdir()) == [target]
    assert target.read_bytes() == b"previous model"


def test_load_keeps_import_light():
    code = ("import sys, unimap; unimap.load; "
            "print([m for m in ('numba', 'scipy', 'sklearn', 'faiss') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


# -- refusals -------------------------------------------------------------------------------
def _members(path):
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    header = json.loads(members.pop("header.json"))
    header.pop("unimap_version")
    arrays = {n: np.lib.format.read_array(io.BytesIO(b)) for n, b in members.items()}
    return json.dumps(header, sort_keys=True), {n: (a.dtype, a.tobytes()) for n, a in
                                                arrays.items()}


def _names(path):
    with zipfile.ZipFile(path) as archive:
        return archive.namelist()


def _reference_fingerprint():
    """``fingerprint`` of tests/methods/test_reference_embeddings.py, loaded by path (that
    folder is on sys.path only when pytest collected it too)."""
    import importlib.util

    path = Path(__file__).parents[1] / "methods" / "test_reference_embeddings.py"
    spec = importlib.util.spec_from_file_location("_reference_embeddings", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fingerprint


def _header(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("header.json"))


def _rewrite(source, target, edit, compression=zipfile.ZIP_DEFLATED):
    """Copy the archive ``source`` to ``target`` after ``edit(members, header)`` changed the
    member bytes and the header (as a dict) in place."""
    with zipfile.ZipFile(source) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    header = json.loads(members["header.json"])
    edit(members, header)
    if "header.json" in members and not isinstance(members["header.json"], bytes):
        members["header.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(target, "w", compression=compression) as archive:
        for name, raw in members.items():
            archive.writestr(name, raw)
    return target


def _npy(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _entry(header, name):
    return next(e for e in header["arrays"] if e["name"] == name)


def _set_header(members, header, **changes):
    header.update(changes)
    members["header.json"] = header  # re-encoded by _rewrite


def _replace_embedding(members, header, array, manifest=True):
    members["embedding_.npy"] = _npy(array)
    if manifest:
        _entry(header, "embedding_").update(dtype=array.dtype.str, shape=list(array.shape))
    members["header.json"] = header


TAMPERING = {
    "bad JSON": (lambda m, h: m.update({"header.json": b"{not json"}), "not valid JSON"),
    "not UTF-8": (lambda m, h: m.update({"header.json": b"\xff\xfe{}"}), "not valid JSON"),
    "NaN constant": (lambda m, h: m.update({"header.json": b'{"format": NaN}'}),
                     "non-standard JSON constant NaN"),
    "header not an object": (lambda m, h: m.update({"header.json": b"[1, 2]"}),
                             "not a unimap model file"),
    "wrong format name": (lambda m, h: _set_header(m, h, format="sklearn-model"),
                          "format 'sklearn-model', expected 'unimap-model'"),
    "newer version": (lambda m, h: _set_header(m, h, format_version=FORMAT_VERSION + 1),
                      f"format version {FORMAT_VERSION + 1} .*newer than format version "
                      f"{FORMAT_VERSION}"),
    "version as string": (lambda m, h: _set_header(m, h, format_version="1"),
                          "invalid format_version '1'"),
    "version zero": (lambda m, h: _set_header(m, h, format_version=0), "invalid format_version"),
    "unknown class": (lambda m, h: _set_header(m, h, **{"class": "os.system"}),
                      "unknown estimator class 'os.system'"),
    "unknown parameter": (lambda m, h: _set_header(m, h, params={**h["params"], "evil": 1}),
                          r"unknown parameter\(s\) \['evil'\]"),
    "invalid parameter value": (
        lambda m, h: _set_header(m, h, params={**h["params"], "n_neighbors": -3}),
        "invalid parameters"),
    "n_components mismatch": (
        lambda m, h: _set_header(m, h, params={**h["params"], "n_components": 3}),
        r"embedding_ must be an array of shape \(n, 3\)"),
    "unknown tag": (
        lambda m, h: _set_header(m, h, attributes={**h["attributes"],
                                                   "a_": {"__reduce__": "os.system"}}),
        "attributes.a_: malformed __reduce__ value"),
    "array not in manifest": (
        lambda m, h: _set_header(m, h, attributes={**h["attributes"],
                                                   "a_": {"__array__": "nope"}}),
        "no array 'nope' in the manifest"),
    "attribute shadowing a method": (
        lambda m, h: _set_header(m, h, attributes={**h["attributes"], "fit": 1}),
        "'fit' is not a fitted attribute of UMAP"),
    "missing transform attribute": (
        lambda m, h: _set_header(m, h, attributes={k: v for k, v in h["attributes"].items()
                                                   if k != "_streams"}),
        r"missing fitted attribute\(s\) \['_streams'\]"),
    "bad seeds": (
        lambda m, h: _set_header(m, h, attributes={**h["attributes"],
                                                   "_streams": {"__streams__": [-1, 0, 0, 0]}}),
        "malformed __streams__"),
    "unknown index method": (
        lambda m, h: _set_header(m, h, index={**h["index"], "method_": "annoy"}),
        "unknown neighbour index method"),
    "index not an object": (lambda m, h: _set_header(m, h, index=[1, 2]),
                            "expected a dict, got list"),
    "index missing": (lambda m, h: _set_header(m, h, index=None), "no neighbour index"),
    "HNSW projection not arrays": (
        lambda m, h: _set_header(m, h, index={**h["index"], "method_": "hnsw", "hnsw": {
            "n_parts": 2, "M": 16, "ef_construction": 20, "pca": {"components": 1}}}),
        "index PCA fields must be float arrays"),
    "HNSW settings": (
        lambda m, h: _set_header(m, h, index={**h["index"], "method_": "hnsw",
                                              "hnsw": {"n_parts": 2, "M": 64,
                                                       "ef_construction": 20, "pca": None}}),
        "HNSW settings .* differ"),
    "negative kernel parameter": (
        lambda m, h: _set_header(m, h, attributes={**h["attributes"], "a_": -1.0}),
        "inconsistent fitted attributes: a_=-1.0"),
    "n_neighbors_ too large": (
        lambda m, h: _set_header(m, h, attributes={**h["attributes"], "n_neighbors_": 10**6}),
        r"n_neighbors_=1000000 is not in \[1, 250\]"),
    "n_features_in_ zero": (
        lambda m, h: _set_header(m, h, attributes={**h["attributes"], "n_features_in_": 0}),
        "n_features_in_=0 does not fit 250 training points"),
    "trailing bytes": (lambda m, h: m.update({"embedding_.npy": m["embedding_.npy"] + b"\0" * 8}),
                       "member size .* does not match its shape and dtype"),
    "missing member": (lambda m, h: m.pop("embedding_.npy"),
                       r"missing member\(s\) \['embedding_.npy'\]"),
    "missing header": (lambda m, h: m.pop("header.json"), "no header.json member"),
    "unexpected member": (lambda m, h: m.update({"payload.py": b"import os"}),
                          r"unexpected member\(s\) \['payload.py'\]"),
    "manifest dtype": (lambda m, h: (_entry(h, "embedding_").update(dtype="<f8"),
                                     _set_header(m, h)),
                       "the member holds <f4 .*the manifest states <f8"),
    "manifest shape": (lambda m, h: (_entry(h, "embedding_").update(shape=[249, 2]),
                                     _set_header(m, h)),
                       r"the member holds <f4 \[250, 2\], the manifest states <f4 \[249, 2\]"),
    "manifest object dtype": (lambda m, h: (_entry(h, "embedding_").update(dtype="|O"),
                                            _set_header(m, h)),
                              "unsupported dtype '|O'"),
    "member replaced": (lambda m, h: _replace_embedding(m, h, np.zeros((250, 2)), False),
                        "the member holds <f8 .*the manifest states <f4"),
    "pickled object member": (
        lambda m, h: _replace_embedding(m, h, np.array([{"x": 1}] * 2, dtype=object), False),
        "the member holds |O"),
    "embedding rows vs index": (
        lambda m, h: _replace_embedding(m, h, np.zeros((249, 2), np.float32)),
        "inconsistent fitted attributes: .*249"),
    # issue 42: a parameter beyond its declared bound made transform run forever
    "endless epochs": (lambda m, h: h["params"].update(n_epochs=2**62)
                       or m.update({"header.json": h}),
                       "invalid parameters: n_epochs .*1000000"),
    # a NaN embedding loaded, and transform then blamed the learning rate
    "NaN embedding": (lambda m, h: _replace_embedding(m, h, np.full(
        _entry(h, "embedding_")["shape"], np.nan, np.float32)),
        "embedding_ has non-finite values"),
    "graph out of range": (
        lambda m, h: m.update({"graph_.indices.npy": _npy(np.full(
            _entry(h, "graph_.indices")["shape"], 10**6, np.int32))}),
        "malformed __csr_matrix__"),
}


@pytest.mark.parametrize("case", list(TAMPERING))
def test_tampered_file_is_refused(case, umap_file, tmp_path):
    edit, message = TAMPERING[case]
    path = _rewrite(umap_file, tmp_path / "bad.unimap", edit)
    with pytest.raises(ValueError, match=message):
        unimap.load(path)


def test_only_the_referenced_arrays_are_read(umap_file, placed, data, tmp_path):
    # An extra member in the manifest that nothing refers to: a tampered file could make it
    # large (1 GiB from 1 MB compressed). Garbled here, so reading it would raise.
    def add_unreferenced(members, header):
        members["extra.npy"] = b"\x93NUMPY garbage"
        header["arrays"].append({"name": "extra", "file": "extra.npy", "dtype": "<f4",
                                 "shape": [2**28]})
        members["header.json"] = header

    path = _rewrite(umap_file, tmp_path / "extra.unimap", add_unreferenced)
    model = unimap.load(path)
    assert np.array_equal(model.transform(data[1]), placed["umap"])


def test_index_that_does_not_match_the_embedding_is_refused(umap_file, tmp_path):
    def fewer_index_points(members, header):
        _set_header(members, header, index={**header["index"], "n_samples": 249})

    def fewer_embedding_rows_without_knn(members, header):
        _replace_embedding(members, header, np.zeros((249, 2), np.float32))
        for name in ("knn_indices_", "knn_dists_"):  # checked before the per-point arrays
            header["attributes"].pop(name)
            header["arrays"].remove(_entry(header, name))
            members.pop(f"{name}.npy")

    with pytest.raises(ValueError, match="the index holds 249 points, the embedding 250"):
        unimap.load(_rewrite(umap_file, tmp_path / "bad.unimap", fewer_index_points))
    with pytest.raises(ValueError, match=r"sigmas_ must be an array of shape \(249,\)"):
        unimap.load(_rewrite(umap_file, tmp_path / "bad.unimap",
                             fewer_embedding_rows_without_knn))


def test_garbled_npy_headers_are_refused(umap_file, tmp_path):
    # numpy's header parser raises ValueError or tokenize.TokenError, depending on the bytes
    rng = np.random.default_rng(0)
    for _ in range(6):
        def garble(members, header):
            raw = members["embedding_.npy"]
            members["embedding_.npy"] = raw[:10] + rng.bytes(len(raw) - 10)

        with pytest.raises(ValueError, match="array 'embedding_'"):
            unimap.load(_rewrite(umap_file, tmp_path / "bad.unimap", garble))


def test_duplicate_member_names_are_refused(umap_file, tmp_path):
    path = _rewrite(umap_file, tmp_path / "bad.unimap", lambda m, h: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile: "Duplicate name"
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("embedding_.npy", _npy(np.zeros((250, 2), np.float32)))
    with pytest.raises(ValueError, match="duplicate member names"):
        unimap.load(path)


def test_inconsistent_pca_is_refused(fitted, tmp_path):
    source = fitted["pca"].save(tmp_path / "pca.unimap")

    def three_components(members, header):
        _set_header(members, header, params={**header["params"], "n_components": 3})

    def short_mean(members, header):
        members["mean_.npy"] = _npy(np.zeros(10, np.float32))
        _entry(header, "mean_").update(shape=[10])
        _set_header(members, header)

    with pytest.raises(ValueError, match="n_components_=2, n_features_in_=64 and n_components=3"):
        unimap.load(_rewrite(source, tmp_path / "bad.unimap", three_components))
    with pytest.raises(ValueError, match=r"mean_ must be an array of shape \(64,\)"):
        unimap.load(_rewrite(source, tmp_path / "bad.unimap", short_mean))


@pytest.mark.parametrize("keep", [0.5, 0.99])
def test_truncated_file_is_refused(keep, umap_file, tmp_path):
    raw = umap_file.read_bytes()
    path = tmp_path / "cut.unimap"
    path.write_bytes(raw[: int(len(raw) * keep)])
    with pytest.raises(ValueError, match="not a readable zip archive"):
        unimap.load(path)


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_corrupted_member_is_refused(compression, umap_file, tmp_path):
    path = _rewrite(umap_file, tmp_path / "m.unimap", lambda m, h: None, compression)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("index.data.npy")
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + info.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="damaged zip member"):
        unimap.load(path)


def test_non_zip_files_are_refused(tmp_path):
    text = tmp_path / "text.unimap"
    text.write_text("not a model")
    with pytest.raises(ValueError, match="not a readable zip archive"):
        unimap.load(text)
    npz = tmp_path / "arrays.npz"
    np.savez(npz, embedding_=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="no header.json member"):
        unimap.load(npz)
    with pytest.raises(FileNotFoundError):
        unimap.load(tmp_path / "missing.unimap")


# -- files written by format version 1 ------------------------------------------------------
FIXTURES = {
    "umap": lambda: UMAP(n_epochs=30, random_state=0),
    "gdr_normalized": lambda: GDR(normalized=True, n_epochs=30, random_state=0),
}
N_FIXTURE_FIT, N_FIXTURE_NEW = 200, 20


def _fixture_data():
    from unimap.datasets import load_digits

    X, y = load_digits()
    end = N_FIXTURE_FIT + N_FIXTURE_NEW
    return X[:N_FIXTURE_FIT], y[:N_FIXTURE_FIT], X[N_FIXTURE_FIT:end], y[N_FIXTURE_FIT:end]


def _agreement(embedding, placed, y, y_new):
    dist = ((placed[:, None, :] - embedding[None, :, :]) ** 2).sum(-1)
    return float((y[np.argsort(dist, axis=1)[:, :10]] == y_new[:, None]).mean())


@pytest.mark.parametrize("name", list(FIXTURES))
def test_version_1_file_still_loads(name):
    fingerprint = _reference_fingerprint()

    path = DATA / f"model_v1_{name}.unimap"
    assert path.stat().st_size < 200_000
    assert _header(path)["format_version"] == 1
    model = unimap.load(path).set_params(n_jobs=1)  # same result, steadier on a busy host
    assert model.embedding_.shape == (N_FIXTURE_FIT, 2)
    _, y, X_new, y_new = _fixture_data()
    placed = model.transform(X_new)
    expected = np.load(DATA / f"model_v1_{name}_transform.npy")
    if (DATA / "model_v1_fingerprint.txt").read_text().strip() == fingerprint():
        assert_same(expected, placed, "transform")
    else:  # another CPU or library versions: bits may differ, the placement may not
        scale = np.ptp(model.embedding_, axis=0).max()
        assert np.median(np.linalg.norm(placed - expected, axis=1)) <= 0.05 * scale
        reference = _agreement(model.embedding_, expected, y, y_new)
        assert abs(_agreement(model.embedding_, placed, y, y_new) - reference) <= 0.1


def main() -> None:
    """Write the version-1 fixtures (once; see the module docstring)."""
    fingerprint = _reference_fingerprint()

    X, _, X_new, _ = _fixture_data()
    for name, make in FIXTURES.items():
        model = make().fit(X)
        path = model.save(DATA / f"model_v1_{name}.unimap")
        np.save(DATA / f"model_v1_{name}_transform.npy", unimap.load(path).transform(X_new))
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    (DATA / "model_v1_fingerprint.txt").write_text(fingerprint() + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()


def test_tsne_file_with_the_old_parameter_names_loads_under_the_new(tmp_path):
    """Files written before TSNE took scikit-learn's names hold n_iter and theta."""
    X = np.random.default_rng(0).normal(size=(120, 5)).astype(np.float32)
    model = TSNE(max_iter=60, angle=0.4, early_exaggeration_iter=20, random_state=0).fit(X)
    path = model.save(tmp_path / "new.unimap")

    def to_old_names(members, header):
        params = header["params"]
        for name in ("n_iter", "theta", "n_iter_without_progress", "min_grad_norm"):
            params.pop(name)
        params["n_iter"], params["theta"] = params.pop("max_iter"), params.pop("angle")
        members["header.json"] = header

    old = _rewrite(path, tmp_path / "old.unimap", to_old_names)
    loaded = unimap.load(old)
    assert (loaded.max_iter, loaded.angle, loaded.n_iter, loaded.theta) == (60, 0.4, None, None)
    np.testing.assert_array_equal(loaded.transform(X[:5]), model.transform(X[:5]))


def test_tampered_unique_inverse_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)[rng.integers(0, 60, 90)]
    path = UMAP(unique=True, n_epochs=10, random_state=0).fit(X).save(tmp_path / "u.unimap")
    header = _header(path)
    n = _entry(header, "unique_inverse_")["shape"][0]

    def scramble(members, header):
        bad = np.arange(n, dtype=np.int64)[::-1].copy()  # codes not by first appearance
        members["unique_inverse_.npy"] = _npy(bad)
        _entry(header, "unique_inverse_").update(dtype=bad.dtype.str, shape=[n])
        members["header.json"] = header

    with pytest.raises(ValueError, match="unique_inverse_"):
        unimap.load(_rewrite(path, tmp_path / "bad.unimap", scramble))


@pytest.mark.parametrize("value, message", [
    (np.nan, "index data has non-finite values"),
    (np.inf, "index data has non-finite values"),
    (3e30, "index data has values beyond 1e"),
])
def test_index_rows_that_fit_would_refuse_are_refused(value, message, umap_file, tmp_path):
    # Issue 58: NaN rows loaded and inverse_transform returned NaN; rows x 1e30 loaded and
    # transform failed deep in SciPy ("negative axis 1 index: -1").
    def taint(members, header):
        name = header["index"]["data"]["__array__"]
        with zipfile.ZipFile(umap_file) as archive:
            rows = np.lib.format.read_array(io.BytesIO(archive.read(f"{name}.npy")))
        rows = rows.copy()
        rows[3, 5] = value
        members[f"{name}.npy"] = _npy(rows)

    with pytest.raises(ValueError, match=message):
        unimap.load(_rewrite(umap_file, tmp_path / "bad.unimap", taint))


@pytest.mark.parametrize("name", ["knn_dists_", "index.data", "graph_.data"])
def test_an_oversized_declared_array_is_refused_before_it_is_read(name, umap_file, tmp_path,
                                                                   monkeypatch):
    # Issue 58: 1 GiB of zeros compresses to about 1 MB; load allocated it before the shape
    # check refused it. Now the manifest's size is refused before any array is read.
    huge = np.zeros(2**28, np.float32)  # 1 GiB declared
    header_only = _npy(huge[:0]).replace(b"(0,)", b"(268435456,)")

    def declare(members, header):
        _entry(header, name).update(shape=[2**28])
        members[f"{name}.npy"] = header_only  # never read: its size is refused first
        members["header.json"] = header

    import unimap.io.persistence as persistence

    read = []
    monkeypatch.setattr(persistence, "_read_array", lambda *a: read.append(a) or 1 / 0)
    with pytest.raises(ValueError, match=f"array '{re.escape(name)}' declares 268435456 values"):
        unimap.load(_rewrite(umap_file, tmp_path / "big.unimap", declare))
    assert read == []


def test_a_pca_model_with_an_oversized_array_is_refused(tmp_path):
    from sklearn.datasets import load_digits

    X, _ = load_digits(return_X_y=True)
    path = unimap.PCA(5).fit(X).save(tmp_path / "pca.unimap")

    def declare(members, header):
        _entry(header, "components_").update(shape=[5, 2**26])
        members["header.json"] = header

    with pytest.raises(ValueError, match="array 'components_' declares"):
        unimap.load(_rewrite(path, tmp_path / "big.unimap", declare))
