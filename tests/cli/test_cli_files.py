"""What the command line writes, and what it refuses to (issue 42's item 7): outputs checked
before the fit, inputs never overwritten, one line on Ctrl-C, strict JSON, CSV that gives
back the numbers it was given."""

from __future__ import annotations

import json

import numpy as np
import pytest

from unimap.cli.main import main
from unimap.io.read import read_table
from unimap.io.write import write_embedding


@pytest.fixture
def data(tmp_path, blobs):
    np.save(tmp_path / "x.npy", blobs[0])
    return tmp_path / "x.npy"


def _fit_must_not_run(monkeypatch):
    import unimap

    def refuse(*args, **kwargs):
        raise AssertionError("the fit ran before the outputs were checked")

    monkeypatch.setattr(unimap.UMAP, "fit", refuse)


def test_an_embedding_over_the_input_is_refused_before_the_fit(tmp_path, data, capsys,
                                                               monkeypatch):
    _fit_must_not_run(monkeypatch)
    before = data.read_bytes()
    assert main(["embed", str(data), "-o", str(tmp_path / "m.png"),
                 "--embedding", str(data)]) == 2
    assert "is an input of this command" in capsys.readouterr().err
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_a_save_model_folder_is_refused_before_the_fit(tmp_path, data, capsys, monkeypatch):
    _fit_must_not_run(monkeypatch)
    (tmp_path / "models").mkdir()
    assert main(["embed", str(data), "-o", str(tmp_path / "m.png"),
                 "--save-model", str(tmp_path / "models")]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models", "x.npy"]
    # an output below an existing file cannot be written either
    assert main(["embed", str(data), "-o", str(data / "m.png")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_transform_refuses_to_overwrite_its_input(tmp_path, data, capsys):
    model = tmp_path / "m.unimap"
    assert main(["embed", str(data), "-o", str(tmp_path / "m.png"), "--n-epochs", "5",
                 "--save-model", str(model)]) == 0
    capsys.readouterr()
    before = data.read_bytes()
    # the same file under another spelling of its path
    assert main(["transform", str(model), str(data), "-o",
                 str(tmp_path / "." / "x.npy")]) == 2
    assert "is an input of this command" in capsys.readouterr().err
    assert data.read_bytes() == before


def test_ctrl_c_ends_with_one_line_and_no_file(tmp_path, data, capsys, monkeypatch):
    import unimap

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(unimap.UMAP, "fit", interrupted)
    assert main(["embed", str(data), "-o", str(tmp_path / "m.png"),
                 "--save-model", str(tmp_path / "m.unimap")]) == 130
    err = capsys.readouterr().err
    assert err == "unimap: error: interrupted\n"  # no traceback
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_evaluate_json_is_strict(tmp_path, data, capsys):
    # a collapsed embedding: its distance correlation is undefined (NaN)
    np.save(tmp_path / "flat.npy", np.zeros((300, 2), dtype=np.float32))
    assert main(["evaluate", str(data), str(tmp_path / "flat.npy"), "--json"]) == 0
    text = capsys.readouterr().out

    def no_constants(name):
        raise ValueError(f"not JSON: {name}")

    scores = json.loads(text, parse_constant=no_constants)
    assert any(value is None for value in scores.values())  # NaN written as null


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_text_embeddings_round_trip_exactly(tmp_path, dtype, suffix):
    rng = np.random.default_rng(0)
    # coordinates near 2e4 lost 0.05 with 6 significant digits
    embedding = (rng.standard_normal((200, 2)) * 1e4 + 2e4).astype(dtype)
    embedding[0] = [np.finfo(dtype).tiny, -np.finfo(dtype).max]
    path = write_embedding(tmp_path / f"e{suffix}", embedding)
    read, _ = read_table(path)
    assert np.array_equal(read.astype(dtype), embedding)


def test_metadata_tables_with_a_byte_order_mark_or_no_content(tmp_path, capsys):
    # issue 42: a UTF-8 BOM renamed the first column; an empty table gave an IndexError
    from unimap.io.read import column_names, read_columns

    table = tmp_path / "meta.csv"
    table.write_bytes("\ufeffcell_type,sample\nT,a\nB,b\n".encode())
    assert column_names(table) == ["cell_type", "sample"]
    assert list(read_columns(table, ["cell_type"])["cell_type"]) == ["T", "B"]
    np.save(tmp_path / "e.npy", np.zeros((2, 2), np.float32) + [[0, 0], [1, 1]])
    assert main(["plot", str(tmp_path / "e.npy"), "-o", str(tmp_path / "m.png"),
                 "--data", str(table), "--color-by", "cell_type"]) == 0
    (tmp_path / "empty.csv").write_text("")
    assert main(["plot", str(tmp_path / "e.npy"), "-o", str(tmp_path / "m2.png"),
                 "--data", str(tmp_path / "empty.csv"), "--color-by", "x"]) == 1
    assert "is empty" in capsys.readouterr().err
    assert not (tmp_path / "m2.png").exists()


def test_embed_takes_text_labels_as_plot_does(tmp_path, data, blobs):
    # issue 42: `embed --labels` refused the text labels that `plot --labels` took
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(f"type{v}" for v in blobs[1]) + "\n")
    assert main(["embed", str(data), "-o", str(tmp_path / "m.png"), "--method", "pca",
                 "--labels", str(labels)]) == 0
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(tmp_path / "m.npy"), "-o", str(tmp_path / "p.png"),
                 "--labels", str(labels)]) == 0
    from unimap.io.read import read_labels

    with_header = tmp_path / "with_header.csv"
    with_header.write_text("kind\n" + labels.read_text())  # n + 1 rows: a header first
    assert np.array_equal(read_labels(with_header, 300), read_labels(labels, 300))
    assert read_labels(labels, 300)[0] == f"type{blobs[1][0]}"
    with pytest.raises(ValueError, match="labels were expected"):
        read_labels(labels, 299 - 1)
    # Issue 58: a blank line was dropped, so a header and 300 labels one of which is empty
    # read as 300 rows without a header, every label before the gap a row late. A blank
    # line is an empty label (unlabelled); blank lines at the end are not rows.
    gap = tmp_path / "gap.csv"
    body = labels.read_text().splitlines()
    gap.write_text("kind\n" + "\n".join(body[:10] + [""] + body[11:]) + "\n\n\n")
    read = read_labels(gap, 300)
    assert read[10] == "" and np.array_equal(np.delete(read, 10),
                                             np.delete(read_labels(labels, 300), 10))


@pytest.mark.parametrize("labels", [np.arange(299) % 3, np.zeros((300, 2)), np.zeros((1, 300))])
def test_labels_of_the_wrong_shape_are_refused_before_the_fit(tmp_path, data, labels, capsys,
                                                              monkeypatch):
    # Issue 58: a .npy of 299 labels (or a 2-D one) for 300 points ran the fit, wrote o.npy,
    # then failed with "drawing failed".
    _fit_must_not_run(monkeypatch)
    np.save(tmp_path / "y.npy", labels)
    assert main(["embed", str(data), "--labels", str(tmp_path / "y.npy"),
                 "-o", str(tmp_path / "o.png")]) == 1
    assert f"labels of shape {labels.shape}; 300 labels were expected" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy", "y.npy"]


def test_the_default_embedding_file_never_lands_on_the_labels(tmp_path, data, capsys):
    # Issue 58: `embed x.npy --labels cells.npy -o cells.png` failed with "--embedding
    # 'cells.npy' is an input" though no --embedding was given; the default name beside the
    # picture now steps aside for the labels as it does for the input.
    labels = tmp_path / "cells.npy"
    np.save(labels, np.arange(300) % 3)
    before = labels.read_bytes()
    assert main(["embed", str(data), "--labels", str(labels), "-o", str(tmp_path / "cells.png"),
                 "--n-epochs", "10"]) == 0
    assert labels.read_bytes() == before
    assert np.load(tmp_path / "cells.umap.npy").shape == (300, 2)
    np.testing.assert_array_equal(np.load(labels), np.arange(300) % 3)


def test_quiet_prints_nothing_not_even_a_warning(tmp_path, data, capsys):
    # Issue 58: -q still printed the n_neighbors warning.
    import warnings

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert main(["embed", str(data), "-q", "--n-neighbors", "500", "--no-plot",
                     "--embedding", str(tmp_path / "e.npy"), "--n-epochs", "10"]) == 0
    assert shown == [] and capsys.readouterr() == ("", "")
    # without -q: one line, no library path or source line (issue 60, item 3)
    assert main(["embed", str(data), "--n-neighbors", "500", "--no-plot",
                 "--embedding", str(tmp_path / "f.npy"), "--n-epochs", "10"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("unimap: warning: n_neighbors=500 is larger than the number of "
                          "samples (300)")
    assert all(line.startswith("unimap: warning: ") for line in err.splitlines()), err


def test_plot_of_a_one_column_file_is_a_bad_input(tmp_path, capsys):
    # Issue 58: exit 2 (a usage error) where docs/cli.md gives 1 for a bad file
    np.save(tmp_path / "one.npy", np.arange(10.0)[:, None])
    assert main(["plot", str(tmp_path / "one.npy"), "-o", str(tmp_path / "one.png")]) == 1
    assert "has 1 column; a picture needs 2" in capsys.readouterr().err
    # asking for one component where a picture is drawn stays a usage error
    assert main(["embed", str(tmp_path / "one.npy"), "--n-components", "1",
                 "-o", str(tmp_path / "e.png")]) == 2


def test_embed_leaves_out_the_columns_it_is_told_to(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = ["sample_id,a,b,c,note,kind"] + [
        f"s{i:03d},{rng.normal():.4f},{rng.normal():.4f},{rng.normal():.4f},text {i},{i % 2}"
        for i in range(40)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "e.npy"
    assert main(["embed", str(tmp_path / "t.csv"), "--label-column", "kind", "--drop-columns",
                 "sample_id, note", "--no-plot", "--embedding", str(out), "--method",
                 "pca"]) == 0
    assert np.load(out).shape == (40, 2)


def test_badly_scaled_columns_are_warned_about_and_standardized_on_request(tmp_path, capsys):
    # Issue 60, item 3: the raw wine table (proline in the hundreds beside ratios) gave a
    # strung-out map with no word; standardised, its 10-NN accuracy is far higher.
    import csv

    from sklearn.datasets import load_wine

    from unimap.metrics import knn_accuracy_loo

    wine = load_wine()
    path = tmp_path / "wine.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([*wine.feature_names, "cultivar"])
        writer.writerows([*row, t] for row, t in zip(wine.data, wine.target, strict=True))
    raw, scaled = tmp_path / "raw.npy", tmp_path / "scaled.npy"
    base = ["embed", str(path), "--label-column", "cultivar", "--no-plot", "--embedding"]
    assert main([*base, str(raw)]) == 0
    assert "unimap: warning: the columns' spreads differ up to 388-fold" in \
        capsys.readouterr().err
    assert main([*base, str(scaled), "--standardize"]) == 0
    assert "spreads differ" not in capsys.readouterr().err
    raw_score = knn_accuracy_loo(np.load(raw), wine.target, 10)
    scaled_score = knn_accuracy_loo(np.load(scaled), wine.target, 10)
    assert scaled_score > 0.9 and scaled_score > raw_score + 0.15, (raw_score, scaled_score)
    # a saved model would place new rows unscaled: refused before the fit
    assert main([*base, str(tmp_path / "m.npy"), "--standardize", "--save-model",
                 str(tmp_path / "m.unimap")]) == 2
    assert not (tmp_path / "m.unimap").exists()


def test_evenly_spread_columns_get_no_scale_warning(tmp_path, data, capsys):
    assert main(["embed", str(data), "--no-plot", "--embedding", str(tmp_path / "e.npy"),
                 "--n-epochs", "10"]) == 0
    assert "spreads differ" not in capsys.readouterr().err
