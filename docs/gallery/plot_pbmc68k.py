"""Single cells: scanpy's pbmc68k_reduced, by cell type and by trust.

The 700 blood cells of scanpy's shipped ``pbmc68k_reduced`` embedded with ``unimap.tl.umap``,
scanpy style: it reuses the neighbours scanpy stored (``uns["neighbors"]``), as ``sc.tl.umap``
does, and the layout lands in ``obsm["X_umap"]``. Left, the cells coloured by their annotated
type; right, each cell coloured by the share of its 15 nearest neighbours in the PCA space that
stay among its 15 nearest on the map (``unimap.plotting.plot_trust``): dark cells are where the
map misleads. A few seconds on 2 cores.

Needs scanpy, which ships the dataset (no download), and matplotlib. Run
``python docs/gallery/plot_pbmc68k.py [OUT.png]``: it writes ``plot_pbmc68k.png`` beside
itself unless told otherwise. The full walk-through is ``docs/pbmc68k.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _png import save_figure  # beside this script

import unimap
from unimap.plotting import plot_trust, scatter


def main(out: Path) -> Path:
    import matplotlib.pyplot as plt
    import scanpy as sc

    adata = sc.datasets.pbmc68k_reduced()
    unimap.tl.umap(adata, random_state=0)
    layout, cell_types = adata.obsm["X_umap"], adata.obs["bulk_labels"]

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2), layout="constrained")
    scatter(layout, cell_types, ax=left, title="cell type", basis="UMAP",
            point_size=14)
    plot_trust(layout, adata.obsm["X_pca"], n_neighbors=15, ax=right, basis="UMAP",
               title="neighbourhood kept (trust)", point_size=14)
    save_figure(fig, out, dpi=90)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")))
