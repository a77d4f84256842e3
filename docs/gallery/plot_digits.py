"""Digits: every method side by side.

scikit-learn's 1,797 handwritten digits (8 x 8 pixels, shipped with scikit-learn: no download)
embedded by UMAP, t-SNE, GDR in its two modes and PCA, each with the same seed, one panel per
method, coloured by digit. About 10 s on 2 cores with numba's kernels compiled.

Run ``python docs/gallery/plot_digits.py [OUT.png]``: it writes ``plot_digits.png`` beside
itself unless told otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import unimap
from unimap.datasets import load_digits
from unimap.plotting import save_comparison


def main(out: Path) -> Path:
    X, y = load_digits()
    methods = {
        "UMAP": unimap.UMAP(random_state=0),
        "t-SNE": unimap.TSNE(random_state=0),
        "GDR": unimap.GDR(random_state=0),
        "GDR(normalized=True)": unimap.GDR(normalized=True, random_state=0),
        "PCA": unimap.PCA(),
    }
    embeddings = {name: method.fit_transform(X) for name, method in methods.items()}
    return save_comparison(out, embeddings, y, dpi=90, panel_size=3.6, legend_loc="on data")


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")))
