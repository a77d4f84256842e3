"""``unimap plot`` and ``unimap compare``: files written, printed tables, exit statuses."""

import base64
import io
import json
import re

import numpy as np
import pytest

from unimap.cli.main import main

pytest.importorskip("matplotlib")


@pytest.fixture
def small(tmp_path, digits):
    """300 digits: data, labels, a PCA embedding and a metadata table with two text columns."""
    from unimap.methods.pca import PCA

    X, y = digits[0][:300], digits[1][:300]
    paths = {name: tmp_path / f"{name}.npy" for name in ("X", "y", "emb")}
    np.save(paths["X"], X)
    np.save(paths["y"], y)
    np.save(paths["emb"], PCA(random_state=0).fit_transform(X))
    meta = tmp_path / "meta.csv"
    with open(meta, "w") as fh:
        fh.write("name,digit,ink,parity\n")
        for i, (d, row) in enumerate(zip(y, X, strict=True)):
            fh.write(f"img{i},{d},{row.mean():.4f},{'even' if d % 2 == 0 else 'odd'}\n")
    paths["meta"] = meta
    return paths, y


def _data_block(text: str) -> dict:
    block = re.search(r'id="unimap-data">(.*?)</script>', text, re.S)
    assert block is not None
    return json.loads(block.group(1))


def _rgb(path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(path.read_bytes())).convert("RGB"))


def test_plot_html_with_labels_and_table_columns(tmp_path, small, capsys):
    paths, y = small
    out = tmp_path / "map.html"
    code = main(["plot", str(paths["emb"]), "-o", str(out), "--labels", str(paths["y"]),
                 "--data", str(paths["meta"]), "--hover", "parity,ink", "--id-column", "name",
                 "--color-by", "parity", "--title", "digits <300>"])
    assert code == 0
    assert "wrote" in capsys.readouterr().out
    text = out.read_text()
    assert "<title>digits &lt;300&gt;</title>" in text
    data = _data_block(text)
    assert [c["name"] for c in data["columns"]] == ["label", "parity", "ink"]
    assert data["hover"] == ["parity", "ink"] and data["colorBy"] == "parity"
    assert data["idName"] == "name" and data["ids"]["names"][:2] == ["img0", "img1"]
    parity = data["columns"][1]
    assert parity["kind"] == "cat" and parity["categories"] == ["even", "odd"]
    assert data["columns"][2]["kind"] == "num"
    codes = np.frombuffer(base64.b64decode(data["columns"][0]["codes"]), dtype=np.uint8)
    assert [int(data["columns"][0]["categories"][c]) for c in codes] == y.tolist()


def test_plot_html_defaults_to_every_table_column(tmp_path, small):
    paths, _ = small
    out = tmp_path / "map.html"
    assert main(["plot", str(paths["emb"]), "-o", str(out), "--data", str(paths["meta"]),
                 "-q"]) == 0
    data = _data_block(out.read_text())
    assert [c["name"] for c in data["columns"]] == ["name", "digit", "ink", "parity"]
    assert data["colorBy"] == "name" and data["ids"] is None


def test_plot_png_coloured_by_labels_is_not_blank(tmp_path, small):
    paths, _ = small
    out = tmp_path / "map.png"
    assert main(["plot", str(paths["emb"]), "-o", str(out), "--labels", str(paths["y"])]) == 0
    rgb = _rgb(out)
    ink = rgb.min(axis=2) < 235
    assert 0.005 < ink.mean() < 0.5
    assert len(np.unique((rgb[ink] // 32).reshape(-1, 3), axis=0)) > 8  # ten digit colours


def test_plot_svg_has_a_legend_of_the_table_column(tmp_path, small):
    paths, _ = small
    out = tmp_path / "map.svg"
    assert main(["plot", str(paths["emb"]), "-o", str(out), "--data", str(paths["meta"]),
                 "--color-by", "parity"]) == 0
    text = out.read_text()
    assert "<!-- even -->" in text and "<!-- odd -->" in text  # matplotlib labels its text


def test_plot_svg_of_200k_points_stays_small(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 7, 200_000)
    emb = rng.standard_normal((200_000, 2)) + 6 * rng.standard_normal((7, 2))[labels]
    np.save(tmp_path / "emb.npy", emb)
    np.save(tmp_path / "y.npy", labels)
    out = tmp_path / "big.svg"
    assert main(["plot", str(tmp_path / "emb.npy"), "-o", str(out), "--labels",
                 str(tmp_path / "y.npy"), "-q"]) == 0
    assert out.stat().st_size < 1_500_000


@pytest.mark.parametrize(
    ("extra", "status", "message"),
    [(["-o", "map.jpg"], 2, "--output must end in"),
     (["-o", "map.png", "--data", "META", "--hover", "ink"], 2, "apply to .html output"),
     (["-o", "map.html", "--hover", "ink"], 2, "name columns of --data"),
     (["-o", "map.png", "--color-by", "ink"], 2, "--color-by names a column"),
     (["-o", "map.html", "--data", "META", "--color-by", "nope"], 1, "has no column 'nope'"),
     (["-o", "map.html", "--labels", "SHORT"], 1, "holds labels of shape (10,); 300 labels"),
     (["-o", "map.html", "--data", "missing.csv"], 1, "not found")],
)
def test_plot_errors(tmp_path, small, capsys, extra, status, message):
    paths, y = small
    np.save(tmp_path / "short.npy", y[:10])
    swap = {"META": str(paths["meta"]), "SHORT": str(tmp_path / "short.npy")}
    args = [swap.get(a, str(tmp_path / a) if a.startswith(("map.", "missing")) else a)
            for a in extra]
    before = set(tmp_path.iterdir())
    assert main(["plot", str(paths["emb"]), *args]) == status
    assert message in capsys.readouterr().err
    assert set(tmp_path.iterdir()) == before  # nothing written


def test_plot_missing_embedding_fails(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "none.npy"), "-o", str(tmp_path / "m.html")]) == 1
    assert "no embedding file" in capsys.readouterr().err


def test_compare_prints_a_table_and_writes_the_figure(tmp_path, small, capsys):
    paths, _ = small
    out = tmp_path / "cmp.png"
    code = main(["compare", str(paths["X"]), "--labels", str(paths["y"]), "--methods",
                 "pca,umap,tsne", "--n-epochs", "100", "-o", str(out),
                 "--save-embeddings", str(tmp_path / "embs")])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1].split()
    assert header == ["method", "seconds", "trustworthiness@15", "knn_recall@15",
                      "knn_accuracy@10"]
    rows = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in lines[2:5]}
    assert list(rows) == ["pca", "umap", "tsne"]
    for seconds, trust, recall, accuracy in rows.values():
        assert seconds >= 0 and 0.5 < trust <= 1 and 0 < recall <= 1 and 0.5 < accuracy <= 1
    assert rows["umap"][1] > rows["pca"][1]  # the neighbour embedding keeps neighbourhoods
    assert lines[-1] == f"wrote {out}"
    rgb = _rgb(out)
    assert rgb.shape[1] > 2.5 * rgb.shape[0]  # three panels side by side
    saved = sorted(p.name for p in (tmp_path / "embs").iterdir())
    assert saved == ["X_pca.npy", "X_tsne.npy", "X_umap.npy"]
    assert np.load(tmp_path / "embs" / "X_umap.npy").shape == (300, 2)


def test_compare_json(tmp_path, small, capsys):
    paths, _ = small
    out = tmp_path / "cmp.svg"
    assert main(["compare", str(paths["X"]), "--methods", "pca,gdr", "--n-epochs", "50",
                 "-o", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_samples"] == 300 and result["figure"] == str(out)
    assert [r["method"] for r in result["results"]] == ["pca", "gdr"]
    assert "knn_accuracy@10" not in result["results"][0]  # no labels given
    assert out.stat().st_size > 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--methods", "umap,magic"], "--methods takes"), (["--methods", "pca,pca"], "twice"),
     (["--methods", "pca", "-o", "cmp.html"], "--output must end in")],
)
def test_compare_usage_errors_write_nothing(tmp_path, small, capsys, extra, message):
    paths, _ = small
    extra = [str(tmp_path / a) if a.startswith("cmp.") else a for a in extra]
    before = set(tmp_path.iterdir())
    if "-o" not in extra:
        extra += ["-o", str(tmp_path / "cmp.png")]
    assert main(["compare", str(paths["X"]), *extra]) == 2
    assert message in capsys.readouterr().err
    assert set(tmp_path.iterdir()) == before


def test_compare_refuses_to_save_an_embedding_over_its_labels(tmp_path, small, capsys):
    # Issue 58: `compare X.npy --labels out/X_umap.npy --save-embeddings out --methods umap`
    # replaced its own labels input with the embedding (exit 0). The saved files are checked
    # against every input before any fit.
    paths, y = small
    folder = tmp_path / "out"
    folder.mkdir()
    labels = folder / f"{paths['X'].stem}_umap.npy"
    np.save(labels, y)
    before = labels.read_bytes()
    assert main(["compare", str(paths["X"]), "--labels", str(labels), "--methods", "umap",
                 "--save-embeddings", str(folder), "-o", str(tmp_path / "cmp.png")]) == 2
    assert "is an input of this command" in capsys.readouterr().err
    assert labels.read_bytes() == before and not (tmp_path / "cmp.png").exists()
