import numpy as np
import pytest

from unimap.cli.main import main
from unimap.io.read import read_table


def test_embed_builtin_digits_writes_embedding_and_png(tmp_path):
    out = tmp_path / "out" / "digits.png"
    assert main(["embed", "digits", "-o", str(out), "--n-epochs", "50"]) == 0
    emb = np.load(out.with_suffix(".npy"))
    assert emb.shape == (1797, 2) and np.isfinite(emb).all()
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_embed_csv_with_header_and_label_column(tmp_path, blobs):
    X, y = blobs
    path = tmp_path / "data.csv"
    with open(path, "w") as fh:
        fh.write(",".join([f"f{i}" for i in range(X.shape[1])] + ["kind"]) + "\n")
        for row, label in zip(X, y, strict=True):
            fh.write(",".join(f"{v:.5f}" for v in row) + f",type{label}\n")
    out = tmp_path / "map.png"
    emb_path = tmp_path / "map.csv"
    code = main(["embed", str(path), "-o", str(out), "--label-column", "kind",
                 "--embedding", str(emb_path), "--method", "pca"])
    assert code == 0
    assert emb_path.read_text().splitlines()[0] == "pca1,pca2"  # a header, then the rows
    assert np.loadtxt(emb_path, delimiter=",", skiprows=1).shape == (300, 2)
    Xr, labels = read_table(path, "kind")
    assert Xr.shape == (300, 8) and labels[0].startswith("type")


def test_embed_npy(tmp_path, blobs):
    path = tmp_path / "x.npy"
    np.save(path, blobs[0])
    assert main(["embed", str(path), "-o", str(tmp_path / "x.png"), "--n-epochs", "30"]) == 0
    # the default embedding file x.npy would be the input: it is named after the method
    assert np.load(tmp_path / "x.umap.npy").shape == (300, 2)
    assert np.array_equal(np.load(path), blobs[0])


def test_embed_device_option(tmp_path, blobs, capsys):
    from unimap.runtime.device import cuda_status

    path = tmp_path / "x.npy"
    np.save(path, blobs[0])
    args = ["embed", str(path), "-o", str(tmp_path / "x.png"), "--n-epochs", "20"]
    assert main(args + ["--device", "cpu"]) == 0
    if not cuda_status()[0]:  # no GPU here: asking for one fails and names why
        capsys.readouterr()
        assert main(args + ["--device", "cuda"]) == 1
        assert "device='cuda', but" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [("1,2\n3,nan\n5,6\n", "NaN"), ("1,2\n3\n", "different numbers of columns"),
     ("a,b\n1,x\n", "non-numeric")],
)
def test_bad_input_fails_cleanly_and_writes_nothing(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    out = tmp_path / "res" / "bad.png"
    assert main(["embed", str(path), "-o", str(out)]) == 1  # a failure, not a usage error
    assert message in capsys.readouterr().err
    assert not out.exists() and not out.with_suffix(".npy").exists()
    if out.parent.exists():
        assert list(out.parent.iterdir()) == []


def test_missing_file_and_bad_output_name(tmp_path, capsys):
    assert main(["embed", str(tmp_path / "none.csv"), "-o", str(tmp_path / "a.png")]) == 1
    assert "not found" in capsys.readouterr().err
    assert main(["embed", "digits", "-o", str(tmp_path / "a.txt")]) == 2
    assert "--output must end in" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("method", "options"),
    [("tsne", ["--perplexity", "20", "--n-epochs", "300"]),
     ("gdr", ["--n-neighbors", "10", "--min-dist", "0.2", "--n-epochs", "50"]),
     ("gdr-tsne", ["--perplexity", "30"]),
     ("pca", [])],
)
def test_every_method_embeds_from_the_command_line(tmp_path, blobs, method, options):
    X, y = blobs
    data, out = tmp_path / "x.npy", tmp_path / f"{method}.png"
    np.save(data, X)
    assert main(["embed", str(data), "-o", str(out), "--method", method, *options]) == 0
    emb = np.load(out.with_suffix(".npy"))
    assert emb.shape == (len(X), 2) and np.isfinite(emb).all()
    # the four blobs stay apart: each point's nearest other point shares its blob
    d = np.linalg.norm(emb[:, None] - emb[None], axis=2)
    np.fill_diagonal(d, np.inf)
    assert (y[d.argmin(axis=1)] == y).mean() > 0.95


@pytest.mark.parametrize(
    ("method", "option", "flag"),
    [("tsne", ["--min-dist", "0.3"], "--min-dist"), ("umap", ["--perplexity", "5"],
     "--perplexity"), ("pca", ["--n-neighbors", "5"], "--n-neighbors")],
)
def test_option_of_another_method_is_an_error(tmp_path, capsys, method, option, flag):
    out = tmp_path / "x.png"
    assert main(["embed", "blobs", "-o", str(out), "--method", method, *option]) == 2
    assert f"{flag} does not apply to --method {method}" in capsys.readouterr().err
    assert not out.exists() and not out.with_suffix(".npy").exists()


def test_save_model_then_transform_new_points(tmp_path, blobs):
    import unimap

    X, _ = blobs
    np.save(tmp_path / "train.npy", X[:250])
    np.save(tmp_path / "new.npy", X[250:])
    model_path = tmp_path / "model.unimap"
    assert main(["embed", str(tmp_path / "train.npy"), "-o", str(tmp_path / "map.png"),
                 "--n-epochs", "30", "--save-model", str(model_path)]) == 0
    out = tmp_path / "placed.csv"
    assert main(["transform", str(model_path), str(tmp_path / "new.npy"), "-o", str(out)]) == 0
    placed = np.loadtxt(out, delimiter=",", skiprows=1)  # below the header umap1,umap2
    expected = unimap.load(model_path).transform(X[250:])
    assert placed.shape == (50, 2)
    np.testing.assert_allclose(placed, expected, rtol=1e-5, atol=1e-4)  # %.6g in the CSV


def test_transform_errors_are_clean(tmp_path, capsys):
    assert main(["transform", str(tmp_path / "none.unimap"), "digits"]) == 1
    assert "no model file" in capsys.readouterr().err
    (tmp_path / "bad.unimap").write_text("not a model")
    assert main(["transform", str(tmp_path / "bad.unimap"), "digits",
                 "-o", str(tmp_path / "o.npy")]) == 1
    assert "unimap: error:" in capsys.readouterr().err
    assert not (tmp_path / "o.npy").exists()
    assert main(["transform", str(tmp_path / "bad.unimap"), "digits", "-o", "x.txt"]) == 2


def test_transform_refuses_a_model_whose_transform_returns_a_graph(tmp_path, blobs, capsys):
    import unimap

    X, _ = blobs
    unimap.UMAP(transform_mode="graph", n_epochs=10, random_state=0).fit(X[:250]).save(
        tmp_path / "graph.unimap")
    np.save(tmp_path / "new.npy", X[250:])
    out = tmp_path / "placed.npy"
    assert main(["transform", str(tmp_path / "graph.unimap"), str(tmp_path / "new.npy"),
                 "-o", str(out)]) == 2
    assert "transform_mode='graph'" in capsys.readouterr().err
    assert not out.exists()


def test_info_text_and_json(capsys):
    import json

    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("unimap ") and "faiss-cpu" in text
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["core"]["numpy"] and info["cpus"] >= 1 and "optional" in info
    from unimap.runtime.device import cuda_status

    assert info["gpu"]["usable"] == cuda_status()[0]  # this machine's answer, whatever it is
    assert "GPU: " in text


def test_evaluate_scores_an_embedding(tmp_path, blobs, capsys):
    import json

    from unimap.metrics import knn_accuracy_loo

    X, y = blobs
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", y)
    assert main(["embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "e.png"),
                 "--method", "pca"]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "x.npy"), str(tmp_path / "e.npy"),
                 "--labels", str(tmp_path / "y.npy"), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["n_samples"] == 300
    assert 0.5 < scores["trustworthiness@15"] <= 1.0
    assert scores["knn_accuracy@10"] == knn_accuracy_loo(np.load(tmp_path / "e.npy"), y, 10)
    assert main(["evaluate", str(tmp_path / "x.npy"), str(tmp_path / "e.npy")]) == 0
    assert "trustworthiness@15" in capsys.readouterr().out


def test_evaluate_refuses_mismatched_or_missing_files(tmp_path, blobs, capsys):
    X, _ = blobs
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "short.npy", np.zeros((10, 2)))
    assert main(["evaluate", str(tmp_path / "x.npy"), str(tmp_path / "short.npy")]) == 1
    assert "row for row" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "x.npy"), str(tmp_path / "none.npy")]) == 1
    assert "no embedding file" in capsys.readouterr().err


def test_embed_quiet_and_json_summary(tmp_path, blobs, capsys):
    import json

    np.save(tmp_path / "x.npy", blobs[0])
    assert main(["embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "q.png"), "-q",
                 "--n-epochs", "10"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "j.png"), "--json",
                 "--method", "gdr", "--n-epochs", "10"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["method"] == "GDR" and summary["n_samples"] == 300
    assert summary["params"]["n_epochs"] == 10 and summary["resolved"]["n_epochs_"] == 10
    assert set(summary["timings"]) >= {"neighbors", "affinities", "init", "optimize", "total"}
    assert summary["files"] == [str(tmp_path / "j.npy"), str(tmp_path / "j.png")]
    with pytest.raises(SystemExit) as usage:  # --quiet and --json exclude each other
        main(["embed", "blobs", "-q", "--json"])
    assert usage.value.code == 2


def test_supervised_embed_uses_the_labels_as_y(tmp_path, blobs):
    import unimap

    X, y = blobs
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", y)
    args = ["embed", str(tmp_path / "x.npy"), "--labels", str(tmp_path / "y.npy"), "-q",
            "--n-epochs", "30", "--random-state", "0"]
    assert main([*args, "-o", str(tmp_path / "s.png"), "--supervised",
                 "--target-weight", "0.9"]) == 0
    expected = unimap.UMAP(n_epochs=30, random_state=0, target_weight=0.9).fit_transform(X, y)
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), expected)
    assert main([*args, "-o", str(tmp_path / "p.png")]) == 0  # labels only colour
    assert not np.array_equal(np.load(tmp_path / "p.npy"), expected)


@pytest.mark.parametrize(("argv", "message"), [
    (["--supervised"], "--supervised needs labels"),
    (["--target-weight", "0.5"], "--target-weight needs --supervised"),
    (["--supervised", "--labels", "LABELS", "--method", "tsne"], "umap, gdr and gdr-tsne"),
    (["--metric-kwds", "{p: 3}"], "JSON object"),
    (["--metric", "canberra", "--metric-kwds", '{"p": 3}'], "takes no parameters"),
])
def test_supervision_and_metric_flags_are_checked(tmp_path, blobs, capsys, argv, message):
    np.save(tmp_path / "x.npy", blobs[0])
    np.save(tmp_path / "y.npy", blobs[1])
    argv = [a.replace("LABELS", str(tmp_path / "y.npy")) for a in argv]
    assert main(["embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "e.png"),
                 "--n-epochs", "5", *argv]) != 0
    assert message in capsys.readouterr().err
    assert not (tmp_path / "e.png").exists()


def test_metric_with_parameters_from_the_command_line(tmp_path, blobs):
    import unimap

    np.save(tmp_path / "x.npy", blobs[0])
    assert main(["embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "m.png"), "-q",
                 "--metric", "minkowski", "--metric-kwds", '{"p": 3}', "--n-epochs", "20",
                 "--save-model", str(tmp_path / "m.unimap")]) == 0
    assert unimap.load(tmp_path / "m.unimap").metric_kwds == {"p": 3}


def test_disconnection_distance_from_the_command_line(tmp_path, blobs, monkeypatch):
    import unimap

    monkeypatch.chdir(tmp_path)  # the embedding's default file goes to the current folder
    np.save(tmp_path / "x.npy", blobs[0])
    assert main(["embed", str(tmp_path / "x.npy"), "--no-plot", "-q", "--method", "gdr",
                 "--disconnection-distance", "1e6", "--n-epochs", "20",
                 "--save-model", str(tmp_path / "m.unimap")]) == 0
    assert unimap.load(tmp_path / "m.unimap").disconnection_distance == 1e6
    assert main(["embed", str(tmp_path / "x.npy"), "--no-plot", "-q", "--method", "tsne",
                 "--disconnection-distance", "2"]) == 2


def test_densmap_from_the_command_line(tmp_path, blobs, capsys):
    import unimap

    np.save(tmp_path / "x.npy", blobs[0])
    assert main(["embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "d.png"), "-q",
                 "--densmap", "--n-epochs", "30", "--random-state", "0"]) == 0
    expected = unimap.UMAP(densmap=True, n_epochs=30, random_state=0).fit_transform(blobs[0])
    np.testing.assert_array_equal(np.load(tmp_path / "d.npy"), expected)
    assert main(["embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "t.png"),
                 "--densmap", "--method", "tsne"]) != 0
    assert "--densmap does not apply to --method tsne" in capsys.readouterr().err
