"""The pictures of ``unimap embed`` and ``unimap plot``: which one is written (``-o``, the
default name, ``--no-plot``, embedding-only runs), every format (``.html`` too), a picture
that cannot be made refused before the fit, a failed picture that keeps the embedding, the
embedding an ``.h5ad`` stores (``--basis``), two columns of a wider one (``--dims``), and
the help texts."""

from __future__ import annotations

import base64
import json
import re
import sys

import numpy as np
import pytest

from unimap.cli.main import build_parser, main

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def data(tmp_path, blobs):
    np.save(tmp_path / "cells.npy", blobs[0])
    np.save(tmp_path / "y.npy", blobs[1])
    return tmp_path / "cells.npy"


def _files(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _map_data(path) -> dict:
    """The data block of an .html map."""
    block = re.search(r'id="unimap-data">(.*?)</script>', path.read_text(), re.S)
    assert block is not None
    return json.loads(block.group(1))


def _map_points(path) -> np.ndarray:
    """The points an .html map draws (its base64 float32 block)."""
    return np.frombuffer(base64.b64decode(_map_data(path)["xy"]), dtype="<f4").reshape(-1, 2)


def _fit_must_not_run(monkeypatch):
    import unimap

    def refuse(*args, **kwargs):
        raise AssertionError("the fit ran, though its picture could not be made")

    for estimator in (unimap.UMAP, unimap.PCA):
        monkeypatch.setattr(estimator, "fit", refuse)
        monkeypatch.setattr(estimator, "fit_transform", refuse)


def _without_matplotlib(monkeypatch):
    """As if matplotlib were not installed: importing it fails."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


# ---- which picture embed writes -------------------------------------------------------------

def test_embed_writes_the_interactive_map_for_html(tmp_path, data, capsys):
    out = tmp_path / "map.html"
    assert main(["embed", str(data), "-o", str(out), "--method", "pca",
                 "--labels", str(tmp_path / "y.npy")]) == 0
    assert f"wrote {tmp_path / 'map.npy'} and {out}" in capsys.readouterr().out
    np.testing.assert_allclose(_map_points(out), np.load(tmp_path / "map.npy"), rtol=1e-6)
    assert _map_data(out)["colorBy"] == "label"


@pytest.mark.parametrize(("suffix", "head"), [(".png", PNG), (".svg", b"<?xml"),
                                              (".pdf", b"%PDF")])
def test_embed_writes_each_static_format(tmp_path, data, suffix, head):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"map{suffix}"
    assert main(["embed", str(data), "-o", str(out), "--method", "pca", "-q"]) == 0
    assert out.read_bytes()[:len(head)] == head
    assert _files(tmp_path) == sorted(["cells.npy", "y.npy", "map.npy", out.name])


def test_without_o_the_picture_is_named_after_the_input(tmp_path, data, monkeypatch):
    pytest.importorskip("matplotlib")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # written in the current folder, not beside the input
    assert main(["embed", str(data), "--method", "pca", "-q"]) == 0
    assert _files(work) == ["cells_pca.npy", "cells_pca.png"]
    assert (work / "cells_pca.png").read_bytes()[:8] == PNG


def test_no_plot_writes_only_the_embedding(tmp_path, data, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["embed", str(data), "--method", "pca", "--no-plot"]) == 0
    assert capsys.readouterr().out.endswith("wrote cells_pca.npy\n")
    assert _files(tmp_path) == ["cells.npy", "cells_pca.npy", "y.npy"]


@pytest.mark.parametrize("option", [["--embedding", "e.csv"], ["--save-model", "m.unimap"]])
def test_an_embedding_only_run_draws_no_picture(tmp_path, data, monkeypatch, option):
    monkeypatch.chdir(tmp_path)
    assert main(["embed", str(data), "--method", "pca", "-q", *option]) == 0
    written = set(_files(tmp_path)) - {"cells.npy", "y.npy"}
    assert option[1] in written
    assert not [name for name in written if name.endswith((".png", ".svg", ".pdf", ".html"))]


def test_write_back_alone_draws_no_picture(tmp_path, blobs, monkeypatch):
    anndata = pytest.importorskip("anndata")
    monkeypatch.chdir(tmp_path)
    anndata.AnnData(blobs[0]).write_h5ad(tmp_path / "cells.h5ad")
    assert main(["embed", "cells.h5ad", "--method", "pca", "--write-back", "-q"]) == 0
    assert _files(tmp_path) == ["cells.h5ad"]
    assert anndata.read_h5ad(tmp_path / "cells.h5ad").obsm["X_pca"].shape == (300, 2)


@pytest.mark.parametrize(("argv", "message"), [
    (["--no-plot", "-o", "m.png"], "--no-plot asks for no picture"),
    (["--no-plot", "--dims", "0,1"], "--dims chooses the columns of the picture"),
    (["-o", "m.npy"], "the embedding itself is written with --embedding"),
    (["-o", "m.html", "--save-model", "m.html"], "name the same file"),
    (["-o", "m.png", "--n-components", "3"], "name the two to draw with --dims"),
    (["-o", "m.png", "--n-components", "3", "--dims", "0,3"], "numbered 0 to 2"),
    (["-o", "m.png", "--dims", "1"], "--dims takes two different column numbers"),
    (["-o", "sub.html"], "is a folder"),
])
def test_embed_picture_options_are_checked_before_the_fit(tmp_path, data, monkeypatch,
                                                          capsys, argv, message):
    _fit_must_not_run(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub.html").mkdir()
    before = _files(tmp_path)
    assert main(["embed", str(data), *argv]) == 2
    assert message in capsys.readouterr().err
    assert _files(tmp_path) == before


def test_an_html_map_over_an_input_is_refused(tmp_path, data, monkeypatch, capsys):
    _fit_must_not_run(monkeypatch)
    labels = tmp_path / "labels.html"  # an odd name, but an input of the command
    labels.write_text("\n".join(map(str, range(300))))
    assert main(["embed", str(data), "-o", str(labels), "--labels", str(labels)]) == 2
    assert "is an input of this command" in capsys.readouterr().err


def test_dims_draws_two_of_more_components(tmp_path, data):
    out = tmp_path / "m.html"
    assert main(["embed", str(data), "--method", "pca", "--n-components", "3",
                 "--dims", "2,0", "-o", str(out), "-q"]) == 0
    embedding = np.load(tmp_path / "m.npy")
    assert embedding.shape == (300, 3)
    np.testing.assert_allclose(_map_points(out), embedding[:, [2, 0]], rtol=1e-6)


# ---- without matplotlib, and a picture that fails --------------------------------------------

def test_without_matplotlib_a_static_picture_is_refused_before_the_fit(tmp_path, data,
                                                                       monkeypatch, capsys):
    _fit_must_not_run(monkeypatch)
    _without_matplotlib(monkeypatch)
    assert main(["embed", str(data), "-o", str(tmp_path / "m.png")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("unimap: error: drawing m.png needs")
    assert 'pip install "unimap[plot]"' in err and "--no-plot" in err
    assert _files(tmp_path) == ["cells.npy", "y.npy"]


def test_without_matplotlib_html_and_no_plot_still_work(tmp_path, data, monkeypatch):
    _without_matplotlib(monkeypatch)
    assert main(["embed", str(data), "--method", "pca", "-o", str(tmp_path / "m.html"),
                 "-q"]) == 0
    assert main(["embed", str(data), "--method", "pca", "--no-plot", "-q",
                 "--embedding", str(tmp_path / "e.npy")]) == 0
    assert _files(tmp_path) == ["cells.npy", "e.npy", "m.html", "m.npy", "y.npy"]
    assert "matplotlib" not in sys.modules or sys.modules["matplotlib"] is None


def test_a_picture_failing_after_the_fit_keeps_the_embedding_and_model(tmp_path, data,
                                                                       monkeypatch, capsys):
    import unimap
    import unimap.plotting

    def broken(*args, **kwargs):
        raise RuntimeError("the backend broke")

    monkeypatch.setattr(unimap.plotting, "save_scatter", broken)
    model = tmp_path / "m.unimap"
    assert main(["embed", str(data), "-o", str(tmp_path / "m.png"), "--n-epochs", "5",
                 "--save-model", str(model)]) == 1
    err = capsys.readouterr().err
    assert "RuntimeError: the backend broke" in err and "the embedding is saved" in err
    assert f"unimap plot {tmp_path / 'm.npy'} -o {tmp_path / 'm.png'}" in err
    assert _files(tmp_path) == ["cells.npy", "m.npy", "m.unimap", "y.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "m.npy"), unimap.load(model).embedding_)


def test_matplotlib_failing_only_when_drawing_keeps_the_embedding(tmp_path, data, monkeypatch,
                                                                  capsys):
    import unimap.cli.embed

    # the check before the fit passes, then matplotlib cannot be imported when drawing
    monkeypatch.setattr(unimap.cli.embed, "check_can_draw", lambda *args: None)
    _without_matplotlib(monkeypatch)
    assert main(["embed", str(data), "-o", str(tmp_path / "n.png"), "--method", "pca"]) == 1
    err = capsys.readouterr().err
    assert "ImportError" in err and f"the embedding is saved ({tmp_path / 'n.npy'})" in err
    assert _files(tmp_path) == ["cells.npy", "n.npy", "y.npy"]


# ---- unimap plot: the stored embedding and two columns ---------------------------------------

@pytest.fixture
def cells(tmp_path, blobs):
    """An .h5ad as scanpy leaves it: X, obsm X_pca (10 columns) and X_umap, an obs column."""
    anndata = pytest.importorskip("anndata")
    rng = np.random.default_rng(0)
    adata = anndata.AnnData(blobs[0])
    adata.obsm["X_pca"] = rng.standard_normal((300, 10)).astype(np.float32)
    adata.obsm["X_umap"] = rng.standard_normal((300, 2)).astype(np.float32)
    adata.obs["cell_type"] = [f"type{v}" for v in blobs[1]]
    adata.write_h5ad(tmp_path / "cells.h5ad")
    return tmp_path / "cells.h5ad", adata


def test_plot_h5ad_draws_its_umap_not_its_pca(tmp_path, cells, capsys):
    path, adata = cells
    out = tmp_path / "m.html"
    assert main(["plot", str(path), "-o", str(out), "--color-by", "cell_type", "-q"]) == 0
    np.testing.assert_array_equal(_map_points(out), adata.obsm["X_umap"])
    assert _map_data(out)["colorBy"] == "cell_type"  # the obs column, without --data
    assert main(["plot", str(path), "-o", str(out), "--basis", "umap", "-q"]) == 0
    np.testing.assert_array_equal(_map_points(out), adata.obsm["X_umap"])
    assert main(["plot", str(path), "-o", str(out), "--basis", "X_pca"]) == 2
    assert "obsm['X_pca'] has 10 columns; name the two to draw with --dims" in (
        capsys.readouterr().err)
    assert main(["plot", str(path), "-o", str(out), "--basis", "X_pca", "--dims", "3,1",
                 "-q"]) == 0
    np.testing.assert_array_equal(_map_points(out), adata.obsm["X_pca"][:, [3, 1]])


@pytest.mark.parametrize(("change", "argv", "message"), [
    ("drop_umap", [], "has no embedding to draw by default"),
    ("add_tsne", [], "has several embeddings to draw by default"),
    (None, ["--basis", "X_phate"], "has no obsm['X_phate']"),
])
def test_plot_h5ad_without_one_clear_embedding_lists_the_keys(tmp_path, cells, capsys,
                                                              change, argv, message):
    path, adata = cells
    if change == "drop_umap":
        del adata.obsm["X_umap"]
    if change == "add_tsne":
        adata.obsm["X_tsne"] = adata.obsm["X_umap"] * 2
    adata.write_h5ad(path)
    assert main(["plot", str(path), "-o", str(tmp_path / "m.html"), *argv]) != 0
    err = capsys.readouterr().err
    assert message in err and "X_pca (300 × 10)" in err
    assert not (tmp_path / "m.html").exists()


def test_plot_refuses_a_wider_array_unless_told_which_columns(tmp_path, capsys):
    wide = np.arange(30, dtype=np.float32).reshape(10, 3)
    np.savetxt(tmp_path / "e.csv", wide, delimiter=",")
    out = tmp_path / "m.html"
    assert main(["plot", str(tmp_path / "e.csv"), "-o", str(out)]) == 2
    assert "has 3 columns; name the two to draw with --dims" in capsys.readouterr().err
    assert not out.exists()
    assert main(["plot", str(tmp_path / "e.csv"), "-o", str(out), "--dims", "0,2", "-q"]) == 0
    np.testing.assert_array_equal(_map_points(out), wide[:, [0, 2]])
    assert main(["plot", str(tmp_path / "e.csv"), "-o", str(out), "--basis", "X_umap"]) == 2
    assert "--basis names an obsm key of an .h5ad" in capsys.readouterr().err


def test_plot_without_matplotlib_is_refused_before_reading(tmp_path, monkeypatch, capsys):
    _without_matplotlib(monkeypatch)
    np.save(tmp_path / "e.npy", np.zeros((5, 2), np.float32))
    assert main(["plot", str(tmp_path / "none.npy"), "-o", str(tmp_path / "m.svg")]) == 1
    err = capsys.readouterr().err
    assert 'needs matplotlib, which is not installed: pip install "unimap[plot]"' in err
    assert "-o map.html" in err
    assert main(["plot", str(tmp_path / "e.npy"), "-o", str(tmp_path / "m.html"), "-q"]) == 0


# ---- help -----------------------------------------------------------------------------------

def test_every_option_is_described_and_the_tool_has_examples():
    import argparse

    parser = build_parser()
    assert parser.description.startswith("Embed high-dimensional data")
    assert parser.epilog.count("  unimap ") == 2
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    undescribed = [f"{name} {action.option_strings or action.dest}"
                   for name, sub in commands.choices.items() for action in sub._actions
                   if not action.help]
    assert undescribed == []
    embed_help = commands.choices["embed"].format_help()
    assert "--no-plot" in embed_help and "cells.h5ad -> cells_umap.png" in embed_help


def test_a_first_run_says_why_it_waits(tmp_path, monkeypatch, capsys):
    # A run whose kernels are not compiled yet waits tens of seconds: one line says why.
    from unimap.cli import common

    monkeypatch.setattr(common, "kernels_look_cached", lambda: False)
    assert main(["embed", "digits", "--no-plot", "--embedding", str(tmp_path / "e.npy"),
                 "--method", "pca"]) == 0
    assert "compiling its kernels" in capsys.readouterr().err
    assert main(["embed", "digits", "--no-plot", "--embedding", str(tmp_path / "f.npy"),
                 "--method", "pca", "-q"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(common, "kernels_look_cached", lambda: True)
    assert main(["embed", "digits", "--no-plot", "--embedding", str(tmp_path / "g.npy"),
                 "--method", "pca"]) == 0
    assert "compiling" not in capsys.readouterr().err


def test_the_kernel_cache_is_found_where_numba_writes_it(tmp_path, monkeypatch):
    from unimap.cli.common import kernels_look_cached

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    found_beside_package = kernels_look_cached()  # this checkout may have its own cache
    index = tmp_path / "work" / "unimap" / "optimizers"
    index.mkdir(parents=True)
    (index / "umap_sgd_numba.sgd_epoch_edges_2d-247.py311.nbi").write_bytes(b"")
    assert kernels_look_cached()
    if not found_beside_package:
        (index / "umap_sgd_numba.sgd_epoch_edges_2d-247.py311.nbi").unlink()
        assert not kernels_look_cached()


def test_palette_and_legend_location_reach_the_picture(tmp_path, monkeypatch):
    import unimap.plotting as plotting

    seen = {}

    def record(path, xy, values, **kwargs):
        seen.update(kwargs)
        path.write_bytes(b"png")
        return path

    monkeypatch.setattr(plotting, "save_scatter", record)
    assert main(["embed", "digits", "--method", "pca", "-o", str(tmp_path / "m.png"),
                 "--palette", "red,#00ff00,blue", "--legend-loc", "on data", "-q"]) == 0
    assert seen["palette"] == ["red", "#00ff00", "blue"]
    assert seen["legend_loc"] == "on data" and seen["basis"] == "PCA"


def test_a_bad_palette_is_refused_before_the_fit(tmp_path, capsys):
    out = tmp_path / "m.png"
    assert main(["embed", "digits", "--method", "pca", "-o", str(out), "--palette", "nope"]) == 2
    assert "--palette 'nope'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing fitted, nothing written
    assert main(["embed", "digits", "--method", "pca", "-o", str(out), "--palette",
                 "red,notacolour"]) == 2
    assert list(tmp_path.iterdir()) == []
