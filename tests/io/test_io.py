"""unimap.io: readers and writers of every format, their errors, and the CLI on them."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import unimap
from unimap.cli.main import main
from unimap.io.read import read_table
from unimap.io.write import write_embedding


@pytest.fixture
def table(blobs):
    X, y = blobs
    return X[:40].astype(np.float64), y[:40]


def _write_csv(path, X, labels=None, header=True, delimiter=","):
    names = [f"f{i}" for i in range(X.shape[1])] + (["kind"] if labels is not None else [])
    lines = [delimiter.join(names)] if header else []
    for i, row in enumerate(X):
        cells = [repr(float(v)) for v in row] + ([f"type{labels[i]}"] if labels is not None
                                                 else [])
        lines.append(delimiter.join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


# -- round trips -----------------------------------------------------------------------------
def test_npy_round_trip(tmp_path, table):
    X, _ = table
    write_embedding(tmp_path / "e.npy", X[:, :2].astype(np.float32))
    back, labels = read_table(tmp_path / "e.npy")
    assert labels is None and back.dtype == np.float32
    np.testing.assert_array_equal(back, X[:, :2].astype(np.float32))


def test_csv_and_tsv_round_trip_with_header(tmp_path, table):
    X, _ = table
    for suffix in (".csv", ".tsv"):
        path = write_embedding(tmp_path / f"e{suffix}", X[:, :3], name="umap")
        delimiter = "\t" if suffix == ".tsv" else ","
        assert path.read_text().splitlines()[0] == delimiter.join(["umap1", "umap2", "umap3"])
        back, labels = read_table(path)
        assert labels is None and back.shape == (40, 3)
        np.testing.assert_allclose(back, X[:, :3], rtol=1e-5)  # written with %.6g


def test_csv_features_and_labels_by_name_index_or_none(tmp_path, table):
    X, y = table
    path = _write_csv(tmp_path / "d.csv", X, y)
    Xr, labels = read_table(path, "kind")
    np.testing.assert_array_equal(Xr, X)
    assert list(labels[:3]) == [f"type{v}" for v in y[:3]]
    Xi, labels_i = read_table(path, -1)  # by index, from the end
    np.testing.assert_array_equal(Xi, X)
    assert list(labels_i) == list(labels)
    # no header, the label column numeric: integer labels
    plain = tmp_path / "plain.csv"
    plain.write_text("".join(f"{a},{b},{c}\n" for a, b, c in
                             zip(X[:, 0], X[:, 1], y, strict=True)))
    Xp, yp = read_table(plain, "2")
    np.testing.assert_array_equal(Xp, X[:, :2])
    assert yp.dtype == np.int64 and list(yp) == list(y)


def test_npz_dense_by_key_labels_and_sparse(tmp_path, table):
    X, y = table
    np.savez(tmp_path / "one.npz", data=X)
    np.testing.assert_array_equal(read_table(tmp_path / "one.npz")[0], X)
    np.savez(tmp_path / "two.npz", features=X, y=y)
    Xr, labels = read_table(tmp_path / "two.npz", "y", use_rep="features")
    np.testing.assert_array_equal(Xr, X)
    np.testing.assert_array_equal(labels, y)
    Xr, _ = read_table(tmp_path / "two.npz", "y")  # the one array besides the labels
    np.testing.assert_array_equal(Xr, X)
    S = sp.random(40, 30, density=0.1, format="csr", random_state=0)
    sp.save_npz(tmp_path / "sparse.npz", S)
    back, _ = read_table(tmp_path / "sparse.npz")
    assert sp.issparse(back) and back.format == "csr"
    np.testing.assert_array_equal(back.toarray(), S.toarray())


def test_parquet_round_trip_and_labels(tmp_path, table):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X, y = table
    path = write_embedding(tmp_path / "e.parquet", X[:, :2].astype(np.float32), name="tsne")
    frame = pd.read_parquet(path)
    assert list(frame.columns) == ["tsne1", "tsne2"]
    back, _ = read_table(path)
    np.testing.assert_array_equal(back, X[:, :2].astype(np.float32))
    data = pd.DataFrame(X[:, :3], columns=["a", "b", "c"], index=[f"cell{i}" for i in range(40)])
    data["kind"] = [f"type{v}" for v in y]
    data.to_parquet(tmp_path / "d.parquet")  # the string index becomes a column: not a feature
    Xr, labels = read_table(tmp_path / "d.parquet", "kind")
    np.testing.assert_array_equal(Xr, X[:, :3])
    assert labels[0] == f"type{y[0]}"


# -- bad files -------------------------------------------------------------------------------
def test_missing_and_empty_files_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="none.csv"):
        read_table(tmp_path / "none.csv")
    for name in ("e.csv", "e.npy", "e.npz", "e.parquet", "e.h5ad"):
        (tmp_path / name).write_bytes(b"")
        with pytest.raises(ValueError, match=rf"{name} is empty"):
            read_table(tmp_path / name)
    (tmp_path / "blank.csv").write_text("\n \n\n")
    with pytest.raises(ValueError, match="blank.csv is empty"):
        read_table(tmp_path / "blank.csv")
    (tmp_path / "head.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="head.csv has a header but no rows"):
        read_table(tmp_path / "head.csv")


@pytest.mark.parametrize(
    ("content", "message"),
    [("a,b\n1,2\n3\n", r"bad.csv, line 3: 1 fields where the first row has 2"),
     ("a,b\n1,2\n3,4,5\n", r"line 3: 3 fields"),
     ("a,b\n1,2\n3,nan\n", r"line 3, column 'b': NaN value"),
     ("1,2\ninf,4\n", r"line 2, column 0 \(0-based, no header\): infinite value"),
     ("a,b\n1,2\n3,\n", r"line 3, column 'b': empty cell"),
     ("a,b,c\n1,2,3\n4,x5,6\n", r"line 3, column 'b': non-numeric value 'x5' in feature column"
      r" 'b'")],
)
def test_bad_csv_cells_name_line_and_column(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        read_table(path)


def test_text_column_is_an_error_unless_it_is_the_label_column(tmp_path, table):
    X, y = table
    path = _write_csv(tmp_path / "d.csv", X, y)
    with pytest.raises(ValueError, match=r"line 2, column 'kind': non-numeric value 'type"):
        read_table(path)
    with pytest.raises(ValueError, match=r"label column 'cell' not found in .*d.csv; columns: "
                                         r"f0, f1"):
        read_table(path, "cell")


def test_bad_npz_npy_and_formats(tmp_path, table):
    X, y = table
    np.savez(tmp_path / "two.npz", features=X, y=y)
    with pytest.raises(ValueError, match=r"two.npz has no array 'feat'; it has: features, y"):
        read_table(tmp_path / "two.npz", use_rep="feat")
    with pytest.raises(ValueError, match=r"two.npz holds several arrays \(features, y\)"):
        read_table(tmp_path / "two.npz")
    with pytest.raises(ValueError, match="no label array 'label'"):
        read_table(tmp_path / "two.npz", "label", use_rep="features")
    np.savez(tmp_path / "obj.npz", data=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="obj.npz holds Python objects"):
        read_table(tmp_path / "obj.npz")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="obj.npy holds Python objects"):
        read_table(tmp_path / "obj.npy")
    np.save(tmp_path / "flat.npy", np.arange(5.0))
    with pytest.raises(ValueError, match=r"flat.npy holds an array of shape \(5,\); expected "
                                         "a 2-D table"):
        read_table(tmp_path / "flat.npy")
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(ValueError, match="cannot read .*junk.npy as .npy"):
        read_table(tmp_path / "junk.npy")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="cannot read .*junk.npz as .npz"):
        read_table(tmp_path / "junk.npz")
    (tmp_path / "x.xlsx").write_bytes(b"x")
    with pytest.raises(ValueError, match=r"unsupported input format '.xlsx'"):
        read_table(tmp_path / "x.xlsx")
    with pytest.raises(ValueError, match="does not apply to .npy"):
        read_table(tmp_path / "flat.npy", "kind")
    _write_csv(tmp_path / "d.csv", X)
    with pytest.raises(ValueError, match="applies to .h5ad and .npz"):
        read_table(tmp_path / "d.csv", use_rep="X")


def test_bad_parquet_names_the_column(tmp_path, table):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X, y = table
    frame = pd.DataFrame({"a": X[:, 0], "name": [f"c{i}" for i in range(40)], "b": X[:, 1]})
    frame.to_parquet(tmp_path / "text.parquet")
    with pytest.raises(ValueError, match=r"text.parquet: column 'name' is not numeric"):
        read_table(tmp_path / "text.parquet")
    np.testing.assert_array_equal(read_table(tmp_path / "text.parquet", "name")[0], X[:, :2])
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1]})
    frame.loc[7, "b"] = None
    frame.to_parquet(tmp_path / "nan.parquet")
    with pytest.raises(ValueError, match=r"column 'b' has (missing|NaN).* \(first in row 7\)"):
        read_table(tmp_path / "nan.parquet")
    with pytest.raises(ValueError, match=r"label column 'kind' not found .* columns: a, b"):
        read_table(tmp_path / "nan.parquet", "kind")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 but not really")
    with pytest.raises(ValueError, match="cannot read .*junk.parquet as Parquet"):
        read_table(tmp_path / "junk.parquet")


def test_missing_optional_library_names_the_extra(tmp_path, monkeypatch, table):
    (tmp_path / "x.parquet").write_bytes(b"x")
    (tmp_path / "x.h5ad").write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setitem(sys.modules, "anndata", None)
    with pytest.raises(ImportError, match=r'pip install "unimap\[io\]"'):
        read_table(tmp_path / "x.parquet")
    with pytest.raises(ImportError, match=r'pip install "unimap\[anndata\]"'):
        read_table(tmp_path / "x.h5ad")
    with pytest.raises(ImportError, match=r"unimap\[io\]"):
        write_embedding(tmp_path / "e.parquet", np.zeros((3, 2)))
    assert not (tmp_path / "e.parquet").exists()


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = write_embedding(tmp_path / "e.npy", np.ones((4, 2)))
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        write_embedding(path, np.zeros((4, 2)))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["e.npy"]
    with pytest.raises(ValueError, match="must be 2-D"):
        write_embedding(tmp_path / "flat.csv", np.zeros(3))
    with pytest.raises(ValueError, match=r"cannot write an embedding as 'e.txt'"):
        write_embedding(tmp_path / "e.txt", np.zeros((3, 2)))
    assert [p.name for p in tmp_path.iterdir()] == ["e.npy"]


def test_import_unimap_loads_no_optional_io_library():
    code = ("import sys, unimap, unimap.io.read, unimap.io.write, unimap.tl, unimap.cli.main; "
            "print(sorted(m for m in ('anndata', 'pyarrow', 'h5py', 'pandas') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


# -- the command line --------------------------------------------------------------------------
def test_cli_reads_and_writes_every_format(tmp_path, table, capsys):
    pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    X, y = table
    np.savez(tmp_path / "d.npz", features=X, y=y)
    out = tmp_path / "map.png"
    assert main(["embed", str(tmp_path / "d.npz"), "--use-rep", "features", "--label-column",
                 "y", "--method", "pca", "-o", str(out), "--embedding",
                 str(tmp_path / "e.parquet"), "-q"]) == 0
    emb = pd.read_parquet(tmp_path / "e.parquet")
    assert list(emb.columns) == ["pca1", "pca2"] and emb.shape == (40, 2)
    assert main(["evaluate", str(tmp_path / "d.npz"), str(tmp_path / "e.parquet"),
                 "--use-rep", "features", "--json"]) == 0
    assert '"n_samples": 40' in capsys.readouterr().out
    frame = pd.DataFrame(X, columns=[f"g{i}" for i in range(X.shape[1])])
    frame["kind"] = [f"t{v}" for v in y]
    frame.to_parquet(tmp_path / "d.parquet")
    assert main(["embed", str(tmp_path / "d.parquet"), "--label-column", "kind", "--method",
                 "pca", "-o", str(out), "--embedding", str(tmp_path / "e.csv"), "-q"]) == 0
    assert (tmp_path / "e.csv").read_text().startswith("pca1,pca2\n")
    model = tmp_path / "m.unimap"
    assert main(["embed", str(tmp_path / "d.parquet"), "--label-column", "kind", "--method",
                 "pca", "-o", str(out), "--save-model", str(model), "-q"]) == 0
    assert main(["transform", str(model), str(tmp_path / "d.parquet"), "--label-column",
                 "kind", "-o", str(tmp_path / "t.parquet")]) == 0
    placed = read_table(tmp_path / "t.parquet")[0]
    np.testing.assert_allclose(placed, unimap.load(model).transform(X), rtol=1e-6)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [("x.npy", b"", "x.npy is empty"), ("x.parquet", b"garbage", "as Parquet"),
     ("x.csv", b"a,b\n1,oops\n", "column 'b'"), ("x.npz", b"junk", "as .npz")],
)
def test_cli_bad_files_fail_in_one_line_with_status_1(tmp_path, capsys, name, content,
                                                     message):
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    (tmp_path / name).write_bytes(content)
    assert main(["embed", str(tmp_path / name), "-o", str(tmp_path / "m.png")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("unimap: error: ") and message in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_cli_output_formats_are_usage_errors(tmp_path, capsys):
    assert main(["embed", "blobs", "-o", str(tmp_path / "m.png"), "--embedding",
                 str(tmp_path / "e.txt")]) == 2
    assert "--embedding must end in .npy, .csv" in capsys.readouterr().err
    assert main(["embed", "blobs", "-o", str(tmp_path / "m.png"), "--write-back"]) == 2
    assert "--write-back needs an .h5ad input" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_read_columns_keeps_text_and_numbers_of_every_format(tmp_path):
    from unimap.io.read import column_names, read_columns

    csv_path = tmp_path / "meta.csv"
    csv_path.write_text("name,parity,score\na,even,1.5\nb,odd,2\n")
    assert column_names(csv_path) == ["name", "parity", "score"]
    cols = read_columns(csv_path, ["parity", "score"])
    assert cols["parity"].tolist() == ["even", "odd"] and cols["score"].tolist() == [1.5, 2.0]
    with pytest.raises(ValueError, match="no column 'colour'; its columns: name, parity, score"):
        read_columns(csv_path, ["colour"])
    (tmp_path / "ragged.csv").write_text("a,b\n1,2\n3\n")
    with pytest.raises(ValueError, match="line 3 has 1 fields, expected 2"):
        read_columns(tmp_path / "ragged.csv", ["a"])

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"kind": ["x", "y", "x"], "count": [1, 2, 3]}), tmp_path / "m.parquet")
    cols = read_columns(tmp_path / "m.parquet", ["kind", "count"])
    assert cols["kind"].tolist() == ["x", "y", "x"] and cols["count"].dtype == np.int64

    anndata = pytest.importorskip("anndata")
    import pandas as pd

    obs = pd.DataFrame({"cell_type": pd.Categorical(["T", "B", "T"])}, index=["c1", "c2", "c3"])
    anndata.AnnData(np.zeros((3, 2), np.float32), obs=obs).write_h5ad(tmp_path / "a.h5ad")
    assert "cell_type" in column_names(tmp_path / "a.h5ad")
    assert read_columns(tmp_path / "a.h5ad", ["cell_type"])["cell_type"].tolist() == ["T", "B", "T"]


def test_columns_can_be_left_out_of_the_features(tmp_path):
    # Issue 60, item 3: an id or text column made a real table unreadable ("non-numeric
    # value 's000'"), with no way to leave it out.
    from unimap.io.read import read_table

    path = tmp_path / "wine.csv"
    path.write_text("sample_id,alcohol,ash,note,cultivar\ns000,13.2,2.4,fine,a\n"
                    "s001,12.1,2.1,,b\ns002,13.8,2.6,dry,a\n")
    with pytest.raises(ValueError, match="or leave it out .drop_columns, --drop-columns"):
        read_table(path, "cultivar")
    X, labels = read_table(path, "cultivar", drop_columns=["sample_id", "note"])
    np.testing.assert_array_equal(X, [[13.2, 2.4], [12.1, 2.1], [13.8, 2.6]])
    assert labels.tolist() == ["a", "b", "a"]
    with pytest.raises(ValueError, match="no column 'sampleid' to drop.*did you mean 'sample_id'"):
        read_table(path, "cultivar", drop_columns=["sampleid"])
    headerless = tmp_path / "plain.csv"
    headerless.write_text("1,9,2\n3,8,4\n")
    X, _ = read_table(headerless, drop_columns=["1"])
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    np.save(tmp_path / "x.npy", X)
    with pytest.raises(ValueError, match="applies to CSV and Parquet"):
        read_table(tmp_path / "x.npy", drop_columns=["0"])


def test_parquet_columns_can_be_left_out(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from unimap.io.read import read_table

    frame = pd.DataFrame({"id": ["a", "b", "c"], "x": [1.0, 2.0, 3.0], "y": [0.0, 1.0, 0.5]})
    frame.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="not numeric"):
        read_table(tmp_path / "t.parquet")
    X, _ = read_table(tmp_path / "t.parquet", drop_columns=["id"])
    np.testing.assert_array_equal(X, frame[["x", "y"]].to_numpy())
