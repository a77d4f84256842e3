"""Keeps the walk-through ``docs/pbmc68k.md`` honest: its code cells are the script's code, and
the script's unimap cells still run on scanpy's shipped ``pbmc68k_reduced`` and give what the
page says (keys in obsm/uns, trustworthiness well above the first two PCs').

The second test needs scanpy (in the ``test`` extra; skipped without it): ~5 s with numba's
cache warm.
"""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "scripts" / "pbmc68k.py"
PAGE = ROOT / "docs" / "pbmc68k.md"

# fewer epochs than the defaults (500, 750, 500, 600): the fits take ~1 s together
SHORT = {"umap": {"n_epochs": 100}, "tsne": {"max_iter": 400}, "gdr": {"n_epochs": 100},
         "gdr_tsne": {"n_epochs": 200}}


def _example():
    spec = importlib.util.spec_from_file_location("pbmc68k_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_page_cells_are_the_script_code():
    code = SCRIPT.read_text(encoding="utf-8")
    cells = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(cells) >= 9
    for cell in cells:
        assert cell.strip() in code, f"a cell of {PAGE.name} is not in {SCRIPT.name}:\n{cell}"


def test_pbmc68k_example_runs(tmp_path):
    pytest.importorskip("scanpy")
    example = _example()
    adata = example.load()
    assert adata.n_obs == 700
    assert example.shipped_graph(adata) == 10  # 9 neighbours + the cell itself
    example.embed(adata, SHORT)

    for key, method, estimator in (("umap", "umap", "UMAP"), ("tsne", "tsne", "TSNE"),
                                   ("gdr", "gdr", "GDR"), ("gdr_tsne", "gdr-tsne", "GDR"),
                                   ("X_umap_graph", "umap", "UMAP")):
        obsm_key = key if key.startswith("X_") else f"X_{key}"
        embedding = adata.obsm[obsm_key]
        assert embedding.shape == (700, 2) and embedding.dtype == np.float32
        assert np.isfinite(embedding).all()
        assert list(adata.uns[key]) == ["params"]  # scanpy's layout
        record = adata.uns["unimap"][key]
        assert (record["method"], record["estimator"]) == (method, estimator)
        assert record["timings"]["total"] > 0
        assert record["params"]["random_state"] == 0
    records = adata.uns["unimap"]
    assert records["umap"]["resolved"]["n_epochs_"] == 100
    assert records["tsne"]["resolved"]["n_iter_"] == 400
    assert records["gdr_tsne"]["params"]["normalized"] is True
    graph = records["X_umap_graph"]
    assert graph["params"]["neighbors_key"] == "neighbors"
    assert graph["params"]["use_rep"] == "X_pca30"
    assert graph["resolved"]["knn_method_"] == "precomputed"
    assert graph["resolved"]["n_neighbors_"] == 10

    X = adata.obsm["X_pca"]
    scores = example.evaluate(adata, list(example.EMBEDDINGS), X)
    # Measured with these epochs, seeds 0-2: trust@15 0.916-0.925 (UMAP, GDR), 0.932-0.943
    # (t-SNE, GDR normalized); with the defaults 0.926-0.942. The first two PCs score 0.886,
    # random points 0.50: the floors keep the neighbour embeddings above a linear projection.
    floors = {"X_umap": 0.90, "X_gdr": 0.90, "X_tsne": 0.92, "X_gdr_tsne": 0.92}
    for key, floor in floors.items():
        assert scores[key]["trust"] > floor, (key, scores[key])
        assert 0.7 < scores[key]["acc"] <= 1.0, (key, scores[key])  # measured 0.79-0.82

    path = example.interactive_map(adata, tmp_path / "map.html")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "bulk_labels" in text
