"""AnnData: estimators take it, .h5ad files, unimap.tl (scanpy style) and scanpy's neighbours."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import unimap
from unimap.cli.main import main
from unimap.io.read import read_table
from unimap.io.write import write_embedding

ad = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def digits_small():
    from unimap.datasets import load_digits

    X, y = load_digits()
    return X[:300].astype(np.float32), y[:300]


def _adata(X, y=None, n_pcs=None):
    adata = ad.AnnData(X.copy(), obs=pd.DataFrame(index=[f"c{i}" for i in range(len(X))]),
                       var=pd.DataFrame(index=[f"g{j}" for j in range(X.shape[1])]))
    if y is not None:
        adata.obs["label"] = pd.Categorical([f"type{v}" for v in y])
    if n_pcs:
        adata.obsm["X_pca"] = unimap.PCA(n_components=n_pcs).fit_transform(X)
    return adata


def _scanpy_like_neighbors(adata, n_neighbors, use_rep="X", key="neighbors"):
    """The layout scanpy.pp.neighbors writes: uns[key] with the obsp keys and params, and
    obsp distances holding each cell's n_neighbors - 1 nearest other cells (itself left out)
    as a CSR matrix of distances (exact search, as scanpy does for small data)."""
    from sklearn.neighbors import NearestNeighbors

    X = adata.X if use_rep == "X" else adata.obsm[use_rep]
    dist, idx = NearestNeighbors(n_neighbors=n_neighbors).fit(X).kneighbors(X)
    dist, idx = dist[:, 1:], idx[:, 1:]  # drop the point itself
    n = X.shape[0]
    indptr = np.arange(0, n * (n_neighbors - 1) + 1, n_neighbors - 1)
    prefix = "" if key == "neighbors" else f"{key}_"
    adata.obsp[f"{prefix}distances"] = sp.csr_matrix((dist.ravel(), idx.ravel(), indptr),
                                                     shape=(n, n))
    adata.obsp[f"{prefix}connectivities"] = sp.csr_matrix((n, n))  # unused by unimap
    adata.uns[key] = {"connectivities_key": f"{prefix}connectivities",
                      "distances_key": f"{prefix}distances",
                      "params": {"n_neighbors": n_neighbors, "method": "umap",
                                 "metric": "euclidean", "use_rep": use_rep}}
    return adata


# -- estimators take AnnData -------------------------------------------------------------------
@pytest.mark.parametrize(
    "make", [lambda: unimap.PCA(), lambda: unimap.UMAP(n_epochs=30, random_state=0),
             lambda: unimap.TSNE(max_iter=100, perplexity=10, random_state=0),
             lambda: unimap.GDR(n_epochs=30, random_state=0)],
    ids=["PCA", "UMAP", "TSNE", "GDR"])
def test_every_estimator_uses_x_pca_else_x(digits_small, make):
    X, _ = digits_small
    adata = _adata(X, n_pcs=10)
    from_pca = make().fit(adata)
    assert from_pca.n_features_in_ == 10 and not hasattr(from_pca, "feature_names_in_")
    np.testing.assert_array_equal(make().fit_transform(adata),
                                  make().fit_transform(adata.obsm["X_pca"]))
    del adata.obsm["X_pca"]
    from_x = make().fit(adata)
    assert from_x.n_features_in_ == 64
    assert list(from_x.feature_names_in_[:2]) == ["g0", "g1"]  # var_names
    np.testing.assert_array_equal(make().fit_transform(adata), make().fit_transform(X))


def test_sparse_x_and_transform_checks_var_names(digits_small):
    X, _ = digits_small
    adata = _adata(X)
    adata.X = sp.csr_matrix(X)
    umap = unimap.UMAP(n_epochs=30, random_state=0)
    emb = umap.fit_transform(adata)
    np.testing.assert_array_equal(emb, unimap.UMAP(n_epochs=30, random_state=0)
                                  .fit_transform(sp.csr_matrix(X)))
    pca = unimap.PCA().fit(adata)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        plain = pca.transform(X[:5])
    np.testing.assert_allclose(pca.transform(adata[:5]), plain, rtol=1e-5, atol=1e-5)  # a view
    renamed = adata[:5].copy()
    renamed.var_names = [f"other{j}" for j in range(64)]
    with pytest.raises(ValueError, match="feature names should match"):
        pca.transform(renamed)
    frame = pca.set_output(transform="pandas").transform(adata[:3].copy())
    assert list(frame.index) == ["c0", "c1", "c2"] and list(frame.columns) == ["pca0", "pca1"]


# -- .h5ad files -------------------------------------------------------------------------------
def test_h5ad_reader_representations_labels_and_errors(tmp_path, digits_small):
    X, y = digits_small
    adata = _adata(X, y, n_pcs=5)
    adata.write_h5ad(tmp_path / "d.h5ad")
    Xr, labels = read_table(tmp_path / "d.h5ad", "label")
    np.testing.assert_array_equal(Xr, adata.obsm["X_pca"])  # X_pca by default
    assert labels[0] == f"type{y[0]}"
    np.testing.assert_array_equal(read_table(tmp_path / "d.h5ad", use_rep="X")[0], X)
    with pytest.raises(ValueError, match=r"d.h5ad: the AnnData has no representation "
                                         r"'X_umap'; available: 'X' \(300 × 64\), "
                                         r"'X_pca' \(300 × 5\)"):
        read_table(tmp_path / "d.h5ad", use_rep="X_umap")
    with pytest.raises(ValueError, match=r"obs has no column 'cell_type'; it has: label"):
        read_table(tmp_path / "d.h5ad", "cell_type")
    (tmp_path / "junk.h5ad").write_bytes(b"not hdf5")
    with pytest.raises(ValueError, match="cannot read .*junk.h5ad as .h5ad"):
        read_table(tmp_path / "junk.h5ad")


def test_h5ad_writer_adds_to_a_file_or_makes_one(tmp_path, digits_small):
    X, _ = digits_small
    _adata(X).write_h5ad(tmp_path / "d.h5ad")
    emb = np.arange(600, dtype=np.float32).reshape(300, 2)
    write_embedding(tmp_path / "d.h5ad", emb, name="umap", params={"params": {"k": 15}})
    back = ad.read_h5ad(tmp_path / "d.h5ad")
    np.testing.assert_array_equal(back.obsm["X_umap"], emb)
    np.testing.assert_array_equal(back.X, X)  # the rest is kept
    assert back.uns["umap"]["params"]["k"] == 15
    before = (tmp_path / "d.h5ad").read_bytes()
    with pytest.raises(ValueError, match="has 300 observations but the embedding has 10 rows"):
        write_embedding(tmp_path / "d.h5ad", emb[:10])
    assert (tmp_path / "d.h5ad").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.h5ad"]
    write_embedding(tmp_path / "new.h5ad", emb, name="tsne")
    assert ad.read_h5ad(tmp_path / "new.h5ad").obsm["X_tsne"].shape == (300, 2)


# -- unimap.tl -----------------------------------------------------------------------------------
def test_tl_embed_writes_obsm_and_uns_scanpy_style(tmp_path, digits_small):
    X, y = digits_small
    adata = _adata(X, n_pcs=10)
    assert unimap.tl.umap(adata, maxiter=30) is None
    emb = adata.obsm["X_umap"]
    assert emb.shape == (300, 2) and emb.dtype == np.float32
    np.testing.assert_array_equal(emb, unimap.UMAP(min_dist=0.5, n_epochs=30, random_state=0)
                                  .fit_transform(adata.obsm["X_pca"]))  # scanpy's min_dist
    assert list(adata.uns["umap"]) == ["params"]  # scanpy's layout; unimap's record beside it
    record = adata.uns["unimap"]["umap"]
    assert record["method"] == "umap" and record["estimator"] == "UMAP"
    assert record["params"]["n_epochs"] == 30 and record["params"]["use_rep"] == "X_pca"
    assert record["resolved"]["n_neighbors_"] == 15 and record["timings"]["total"] > 0
    copy = unimap.tl.gdr(adata, normalized=True, use_rep="X", key_added="X_mine",
                         n_epochs=30, copy=True)
    assert "X_mine" in copy.obsm and "X_mine" not in adata.obsm
    assert copy.uns["unimap"]["X_mine"]["params"]["normalized"] is True
    assert copy.uns["X_mine"]["params"]["use_rep"] == "X"  # tl.tsne's layout
    unimap.tl.embed(adata, "pca")  # as scanpy.pp.pca: X_pca, uns["pca"], varm["PCs"]
    assert adata.obsm["X_pca"].shape == (300, 2) and adata.varm["PCs"].shape == (64, 2)
    assert adata.uns["pca"]["variance_ratio"].shape == (2,)
    assert adata.uns["pca"]["params"]["zero_center"] is True
    adata.write_h5ad(tmp_path / "out.h5ad")  # everything written is storable
    back = ad.read_h5ad(tmp_path / "out.h5ad")
    assert back.uns["unimap"]["umap"]["params"]["min_dist"] == 0.5
    assert back.uns["umap"]["params"]["a"] == adata.uns["umap"]["params"]["a"]


def test_tl_embed_errors(digits_small):
    X, _ = digits_small
    adata = _adata(X)
    with pytest.raises(TypeError, match="adata must be an anndata.AnnData"):
        unimap.tl.umap(X)
    with pytest.raises(ValueError, match="method must be one of"):
        unimap.tl.embed(adata, "mds")
    with pytest.raises(ValueError, match=r"adata.uns has no 'neighbors': run "
                                         "scanpy.pp.neighbors first"):
        unimap.tl.umap(adata, use_neighbors=True)
    _scanpy_like_neighbors(adata, 10, key="nn10")
    with pytest.raises(ValueError, match=r"has no 'neighbors'.*found under 'nn10'"):
        unimap.tl.umap(adata, use_neighbors=True)
    with pytest.raises(ValueError, match="uses no neighbours"):
        unimap.tl.embed(adata, "pca", neighbors_key="nn10")
    with pytest.raises(ValueError, match="no representation 'X_scvi'"):
        unimap.tl.umap(adata, use_rep="X_scvi")
    assert "X_umap" not in adata.obsm and "umap" not in adata.uns


# -- scanpy's neighbours --------------------------------------------------------------------------
def test_scanpy_neighbours_give_the_estimators_own_knn_graph(blobs):
    X, _ = blobs  # continuous data: no tied distances, so the kNN graph is unique
    adata = _scanpy_like_neighbors(ad.AnnData(X), 15)
    indices, distances = unimap.tl.knn_from_neighbors(adata)
    own = unimap.UMAP(n_neighbors=15, n_epochs=10, random_state=0).fit(X)
    np.testing.assert_array_equal(indices, own.knn_indices_)
    # float32 BLAS distances (|x|^2 + |y|^2 - 2 x.y) against float64 ones
    np.testing.assert_allclose(distances, own.knn_dists_, rtol=1e-4)
    reused = unimap.UMAP(n_neighbors=15, n_epochs=10, random_state=0,
                         precomputed_knn=(indices, distances)).fit(X)
    assert (reused.graph_ != 0).sum() == (own.graph_ != 0).sum()
    assert abs(reused.graph_ - own.graph_).max() < 1e-3


def test_tl_reuses_neighbours_with_the_quality_of_its_own_search(digits_small):
    from unimap.metrics import trustworthiness

    X, _ = digits_small
    adata = _scanpy_like_neighbors(_adata(X, n_pcs=10), 15)
    unimap.tl.umap(adata, min_dist=0.1, maxiter=100)  # uns["neighbors"] reused unasked
    record = adata.uns["unimap"]["umap"]
    assert record["params"]["neighbors_key"] == "neighbors"
    assert record["params"]["use_rep"] == "X"  # what the neighbours were computed on
    assert record["resolved"]["knn_method_"] == "precomputed"
    own = unimap.UMAP(n_epochs=100, random_state=0).fit_transform(X)
    # Same graph up to tied distances (digits are integers): the embeddings are not bitwise
    # equal, but must preserve neighbourhoods as well. Measured on these 300 points,
    # trustworthiness@15 over seeds 0-3: own search 0.9795-0.9820, sklearn's exact
    # neighbours reused 0.9729-0.9806; 0.02 is twice the largest gap seen (0.009).
    t_reused = trustworthiness(X, adata.obsm["X_umap"], n_neighbors=15)
    t_own = trustworthiness(X, own, n_neighbors=15)
    assert t_reused > 0.95 and abs(t_reused - t_own) < 0.02


def test_neighbour_size_mismatch_warns_and_is_recorded(digits_small):
    X, _ = digits_small
    adata = _scanpy_like_neighbors(_adata(X), 10, key="nn10")
    with warnings.catch_warnings():
        # n_neighbors not asked for: the graph's size, silently
        warnings.filterwarnings("error", message=".*reused neighbours")
        unimap.tl.umap(adata, neighbors_key="nn10", maxiter=20)
    assert adata.uns["unimap"]["umap"]["params"]["n_neighbors"] == 10
    with pytest.warns(UserWarning, match="using n_neighbors=5, the 5 nearest of them"):
        unimap.tl.umap(adata, neighbors_key="nn10", n_neighbors=5, maxiter=20)
    assert adata.uns["unimap"]["umap"]["resolved"]["n_neighbors_"] == 5
    with pytest.warns(UserWarning, match="n_neighbors=20: using n_neighbors=10"):
        unimap.tl.umap(adata, neighbors_key="nn10", n_neighbors=20, maxiter=20)
    params = adata.uns["unimap"]["umap"]["params"]
    assert params["n_neighbors"] == 10 and params["requested_n_neighbors"] == 20
    with pytest.warns(UserWarning, match=r"perplexity=30 needs 90 neighbours .* have 9 .* "
                                         "using perplexity=3"):
        unimap.tl.tsne(adata, neighbors_key="nn10", max_iter=100)
    assert adata.uns["tsne"]["params"]["perplexity"] == 3.0
    assert adata.uns["unimap"]["tsne"]["resolved"]["n_neighbors_"] == 10
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unimap.tl.umap(adata, neighbors_key="nn10", n_neighbors=10, maxiter=20)
    assert not [w for w in caught if "reused neighbours" in str(w.message)]  # sizes agree


def test_real_scanpy_layout(blobs):
    sc = pytest.importorskip("scanpy")
    X, _ = blobs
    adata = ad.AnnData(X)
    sc.pp.neighbors(adata, n_neighbors=12, use_rep="X")
    indices, distances = unimap.tl.knn_from_neighbors(adata)
    own = unimap.UMAP(n_neighbors=12, n_epochs=10, random_state=0).fit(X)
    np.testing.assert_array_equal(indices, own.knn_indices_)
    np.testing.assert_allclose(distances, own.knn_dists_, rtol=1e-4, atol=1e-4)


# -- scanpy's defaults and layout ----------------------------------------------------------------
# scanpy 1.11's signatures (scanpy/tools/_umap.py, _tsne.py); checked against the installed
# scanpy where there is one
SCANPY_UMAP = {"min_dist": 0.5, "spread": 1.0, "n_components": 2, "maxiter": None,
               "alpha": 1.0, "gamma": 1.0, "negative_sample_rate": 5, "init_pos": "spectral",
               "random_state": 0, "a": None, "b": None, "key_added": None, "copy": False}
SCANPY_TSNE = {"n_pcs": None, "use_rep": None, "perplexity": 30, "metric": "euclidean",
               "early_exaggeration": 12, "learning_rate": 1000, "random_state": 0,
               "n_jobs": None, "key_added": None, "copy": False}


def _defaults(function):
    import inspect

    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if p.default is not inspect.Parameter.empty}


@pytest.mark.parametrize("ours, theirs, expected", [
    ("umap", "umap", SCANPY_UMAP), ("tsne", "tsne", SCANPY_TSNE)])
def test_tl_defaults_are_scanpys(ours, theirs, expected):
    defaults = _defaults(getattr(unimap.tl, ours))
    assert {name: defaults[name] for name in expected} == expected
    try:
        import scanpy as sc
    except ImportError:
        return
    scanpy_defaults = _defaults(getattr(sc.tl, theirs))
    shared = set(scanpy_defaults) & set(defaults) - {"neighbors_key"}  # None: "neighbors"
    assert {n: defaults[n] for n in shared} == {n: scanpy_defaults[n] for n in shared}
    assert set(expected) <= set(scanpy_defaults)


def test_tl_writes_scanpys_uns_and_keeps_its_own_record_apart(digits_small):
    from unimap.lowdim.ab_fit import find_ab_params

    X, _ = digits_small
    adata = _adata(X, n_pcs=10)
    unimap.tl.umap(adata, maxiter=20)
    a, b = find_ab_params(1.0, 0.5)  # scanpy's spread and min_dist
    assert adata.uns["umap"] == {"params": {"a": a, "b": b}}
    assert abs(a - 0.583) < 1e-3 and abs(b - 1.334) < 1e-3  # umap-learn's fit of these
    unimap.tl.umap(adata, maxiter=20, random_state=3, key_added="seed3")
    assert adata.uns["seed3"]["params"]["random_state"] == 3  # scanpy records seeds but 0
    assert "X_seed3" not in adata.obsm and adata.obsm["seed3"].shape == (300, 2)
    unimap.tl.tsne(adata, max_iter=60)
    assert adata.uns["tsne"] == {"params": {
        "perplexity": 30.0, "early_exaggeration": 12.0, "learning_rate": 1000.0,
        "n_jobs": -1, "metric": "euclidean"}}
    unimap.tl.tsne(adata, use_rep="X", n_pcs=5, perplexity=10, max_iter=60, key_added="t")
    assert adata.uns["t"]["params"]["use_rep"] == "X"  # given: recorded, as scanpy
    record = adata.uns["unimap"]["t"]
    assert record["params"]["use_rep"] == "X" and "n_pcs" not in record["params"]  # X: all
    assert record["resolved"]["learning_rate_"] == record["resolved"]["early_learning_rate_"]
    assert sorted(adata.uns["unimap"]) == ["seed3", "t", "tsne", "umap"]


def test_tl_umap_maps_scanpys_names(digits_small):
    X, _ = digits_small
    adata = _adata(X, n_pcs=10)
    adata.obsm["X_start"] = unimap.PCA(n_components=2).fit_transform(X)
    unimap.tl.umap(adata, maxiter=15, alpha=0.5, gamma=2.0, init_pos="X_start")
    params = adata.uns["unimap"]["umap"]["params"]
    assert (params["n_epochs"], params["learning_rate"], params["repulsion_strength"]) == \
        (15, 0.5, 2.0)
    expected = unimap.UMAP(min_dist=0.5, n_epochs=15, learning_rate=0.5, repulsion_strength=2.0,
                           init=adata.obsm["X_start"], random_state=0)
    np.testing.assert_array_equal(adata.obsm["X_umap"],
                                  expected.fit_transform(adata.obsm["X_pca"]))
    with pytest.raises(TypeError, match="pass maxiter .* or n_epochs, not both"):
        unimap.tl.umap(adata, maxiter=15, n_epochs=20)
    with pytest.raises(ValueError, match="init_pos='paga' is not supported"):
        unimap.tl.umap(adata, init_pos="paga")
    with pytest.raises(ValueError, match="use_neighbors=False contradicts"):
        unimap.tl.umap(adata, use_neighbors=False, neighbors_key="neighbors")


def test_tl_chooses_the_representation_as_scanpy(digits_small):
    X, _ = digits_small
    narrow = _adata(X[:, :40])  # at most 50 variables: X itself, even beside an X_pca
    narrow.obsm["X_pca"] = unimap.PCA(n_components=5).fit_transform(X[:, :40])
    unimap.tl.umap(narrow, maxiter=10)
    assert narrow.uns["unimap"]["umap"]["params"]["use_rep"] == "X"
    unimap.tl.umap(narrow, maxiter=10, use_rep="X_pca", n_pcs=3)
    assert narrow.uns["unimap"]["umap"]["resolved"]["n_features_in_"] == 3
    with pytest.raises(ValueError, match="n_pcs=8, but obsm\\['X_pca'\\] has 5 columns"):
        unimap.tl.umap(narrow, maxiter=10, use_rep="X_pca", n_pcs=8)

    wide = _adata(X)  # 64 variables and no X_pca: scanpy's PCA first, stored as scanpy does
    with pytest.warns(UserWarning, match="principal components"), \
            pytest.raises(ValueError, match="max_iter must be in"):  # a failed fit writes nothing
        unimap.tl.tsne(wide, n_pcs=20, max_iter=0)
    assert "X_pca" not in wide.obsm and "unimap" not in wide.uns
    with pytest.warns(UserWarning, match="64 variables and no obsm\\['X_pca'\\]: embedding its "
                                         "first 20 principal components"):
        unimap.tl.tsne(wide, n_pcs=20, max_iter=60, perplexity=10)
    assert wide.obsm["X_pca"].shape == (300, 20) and wide.varm["PCs"].shape == (64, 20)
    assert wide.uns["pca"]["params"]["zero_center"] is True
    assert wide.uns["unimap"]["tsne"]["params"]["use_rep"] == "X_pca"
    assert wide.uns["unimap"]["tsne"]["resolved"]["n_features_in_"] == 20


def test_tl_warns_when_scanpys_connectivities_are_not_umaps(digits_small):
    X, _ = digits_small
    adata = _scanpy_like_neighbors(_adata(X, n_pcs=10), 15)
    adata.uns["neighbors"]["params"]["method"] = "gauss"
    with pytest.warns(UserWarning, match="method='gauss'; unimap reads the graph's distances"):
        unimap.tl.umap(adata, maxiter=10)
    unimap.tl.tsne(adata, max_iter=30, perplexity=5)  # t-SNE searches its own: no warning
    assert adata.uns["unimap"]["tsne"]["resolved"]["knn_method_"] != "precomputed"


def test_scanpy_plots_and_reads_tl_output(blobs, tmp_path):
    sc = pytest.importorskip("scanpy")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X, y = blobs
    adata = _adata(X, y)
    sc.pp.neighbors(adata, n_neighbors=15, use_rep="X")
    unimap.tl.umap(adata, maxiter=30)
    assert adata.uns["unimap"]["umap"]["resolved"]["knn_method_"] == "precomputed"
    unimap.tl.tsne(adata, max_iter=100)
    for plot in (sc.pl.umap, sc.pl.tsne):
        ax = plot(adata, color="label", show=False)
        assert len(ax.collections) >= 1 and len(ax.get_legend_handles_labels()[1]) == 4
        plt.close("all")
    adata.write_h5ad(tmp_path / "a.h5ad")
    back = ad.read_h5ad(tmp_path / "a.h5ad")
    assert back.uns["umap"]["params"].keys() == {"a", "b"}
    ours = adata.uns["umap"]["params"]
    sc.tl.umap(back)  # scanpy's own writes the same layout
    assert back.uns["umap"]["params"].keys() == ours.keys()
    np.testing.assert_allclose([back.uns["umap"]["params"]["a"],
                                back.uns["umap"]["params"]["b"]], [ours["a"], ours["b"]],
                               rtol=1e-3)


# -- the command line -------------------------------------------------------------------------
def test_cli_embed_h5ad_write_back_and_evaluate(tmp_path, digits_small, capsys):
    X, y = digits_small
    path = tmp_path / "d.h5ad"
    _adata(X, y, n_pcs=10).write_h5ad(path)
    assert main(["embed", str(path), "--write-back", "--label-column", "label", "--use-rep",
                 "X", "--n-epochs", "20", "-o", str(tmp_path / "m.png"), "-q"]) == 0
    back = ad.read_h5ad(path)
    assert back.obsm["X_umap"].shape == (300, 2)
    assert back.uns["unimap"]["umap"]["params"]["n_epochs"] == 20
    assert back.uns["unimap"]["umap"]["params"]["use_rep"] == "X"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.h5ad", "m.png"]  # no .npy
    assert main(["evaluate", str(path), str(path), "--use-rep", "X", "--embedding-rep",
                 "X_umap", "--label-column", "label", "--json"]) == 0
    assert '"knn_accuracy@10"' in capsys.readouterr().out
    assert main(["evaluate", str(path), str(path)]) == 2
    assert "--embedding-rep" in capsys.readouterr().err
    assert main(["embed", str(path), "--use-rep", "X_umapp", "-o", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err
    assert "no representation 'X_umapp'; available: 'X' (300 × 64)" in err
    assert err.count("\n") == 1 and not (tmp_path / "x.png").exists()


def test_scanpy_n_pcs_is_honoured_and_tuples_recorded(digits_small):
    """scanpy.pp.neighbors(n_pcs=k) searches the first k PCs: the embedding must use those
    too (as sc.tl.umap does), and TSNE's resolved learning rates reach uns."""
    X, _ = digits_small
    adata = _adata(X, n_pcs=20)
    pcs = adata.obsm["X_pca"]
    adata.obsm["X_pca10"] = pcs[:, :10]
    _scanpy_like_neighbors(adata, 15, use_rep="X_pca10")
    adata.uns["neighbors"]["params"].update(use_rep="X_pca", n_pcs=10)
    unimap.tl.umap(adata, use_neighbors=True, maxiter=20)
    record = adata.uns["unimap"]["umap"]
    assert record["params"]["n_pcs"] == 10 and record["params"]["use_rep"] == "X_pca"
    assert record["resolved"]["n_features_in_"] == 10
    unimap.tl.tsne(adata, max_iter=60, perplexity=5, learning_rate="auto")
    resolved = adata.uns["unimap"]["tsne"]["resolved"]
    assert resolved["learning_rate_"] == 75.0 and resolved["early_learning_rate_"] == 50.0


def test_transform_reads_the_representation_fit_used(digits_small):
    X, _ = digits_small
    train = _adata(X[:200], n_pcs=10)
    model = unimap.UMAP(n_epochs=20, random_state=0).fit(train)
    assert model.use_rep_ == "X_pca" and model.n_features_in_ == 10
    new = _adata(X[200:])  # no X_pca: the default would be X (64 features)
    with pytest.raises(ValueError, match=r"no representation 'X_pca'.*fitted on 'X_pca'"):
        model.transform(new)
    new.obsm["X_pca"] = unimap.PCA(n_components=10).fit(X[:200]).transform(X[200:])
    assert model.transform(new).shape == (100, 2)
    refit = model.fit(X[:200])  # a refit on an array forgets the representation
    assert not hasattr(refit, "use_rep_")


def test_cli_write_back_writes_the_layout_tl_writes(tmp_path, digits_small):
    # `unimap embed cells.h5ad --write-back` and unimap.tl.umap leave the same uns layout:
    # scanpy's uns["umap"] (read by sc.pl.umap) and unimap's record in uns["unimap"]
    from unimap.cli import main

    X, _ = digits_small
    _adata(X).write_h5ad(tmp_path / "d.h5ad")
    assert main(["embed", str(tmp_path / "d.h5ad"), "--write-back", "--n-epochs", "30"]) == 0
    back = ad.read_h5ad(tmp_path / "d.h5ad")
    assert back.obsm["X_umap"].shape == (300, 2)
    assert list(back.uns["umap"]) == ["params"]
    assert set(back.uns["umap"]["params"]) == {"a", "b"}
    assert back.uns["unimap"]["umap"]["method"] == "umap"
    assert back.uns["unimap"]["umap"]["params"]["n_epochs"] == 30


def test_raw_counts_in_x_are_warned_about_and_normalised_data_are_not(digits_small):
    rng = np.random.default_rng(0)
    depth = rng.integers(500, 5_000, 300)[:, None]  # cells sequenced to different depths
    counts = rng.poisson(depth * rng.dirichlet(np.ones(40), 300)).astype(np.float32)
    adata = _adata(counts)
    with pytest.warns(UserWarning, match=r"adata.X looks like raw counts .*normalize_total"):
        unimap.PCA(n_components=2).fit(adata)
    adata.X = sp.csr_matrix(counts)  # stored sparse, as counts usually are
    with pytest.warns(UserWarning, match="raw counts"):
        read_representation = unimap.io.anndata_input.representation(adata)
    assert read_representation[2] == "X"
    # the same cells normalised and log-transformed, the digits' pixels, and X_pca: no warning
    for data in (np.log1p(counts / counts.sum(axis=1, keepdims=True) * 1e4),
                 digits_small[0]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            unimap.PCA(n_components=2).fit(_adata(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unimap.PCA(n_components=2).fit(_adata(counts, n_pcs=5))  # X_pca is used
