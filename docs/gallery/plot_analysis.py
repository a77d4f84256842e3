"""Judging the maps: the five distance analyses, PCA against UMAP and t-SNE.

``unimap.analysis.embedding_analysis`` on the digits' PCA, UMAP and t-SNE embeddings (one row
each): how far pairs move in the order of all distances, embedding against data distance, the
embedding's distances in the data's order, the share of neighbours kept at growing ``k``, and
the relative error of the normalised distances. PCA keeps few of each point's nearest
neighbours, UMAP and t-SNE about half of them. About 15 s on 2 cores.

Run ``python docs/gallery/plot_analysis.py [OUT.png]``: it writes ``plot_analysis.png`` beside
itself unless told otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _png import save_figure  # beside this script

import unimap
from unimap import analysis
from unimap.datasets import load_digits


def main(out: Path) -> Path:
    import matplotlib.pyplot as plt

    X, _ = load_digits()
    methods = {"PCA": unimap.PCA(), "UMAP": unimap.UMAP(random_state=0),
               "t-SNE": unimap.TSNE(random_state=0)}
    results = {name: analysis.embedding_analysis(X, method.fit_transform(X), n_samples=400,
                                              random_state=0)
               for name, method in methods.items()}
    fig = analysis.plot_embedding_analysis(results)
    save_figure(fig, out, dpi=64)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")))
