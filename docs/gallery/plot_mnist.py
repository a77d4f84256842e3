"""MNIST: 70,000 handwritten digits with UMAP.

The 70,000 images of MNIST (28 x 28 pixels, 784 columns) embedded by ``unimap.UMAP`` with its
defaults and coloured by digit, the names of the digits on their clusters. The fit takes about
10 s on 2 quiet cores (``benchmarks/results/umap_mnist.md``; 52 s when this picture was drawn,
on cores shared with other work); the figure draws every point.

``unimap.datasets.load_mnist`` reads the four IDX files from ``UNIMAP_MNIST_DIR``, a
``shared/datasets/mnist`` folder beside the checkout or the user cache, and downloads them
into the cache if none holds them.

Run ``python docs/gallery/plot_mnist.py [OUT.png]``: it writes ``plot_mnist.png`` beside itself
unless told otherwise.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import unimap
from unimap.datasets import load_mnist
from unimap.plotting import save_scatter


def main(out: Path) -> Path:
    X, y = load_mnist()
    start = time.perf_counter()
    embedding = unimap.UMAP(random_state=0).fit_transform(X)
    print(f"UMAP of {X.shape[0]:,} x {X.shape[1]}: {time.perf_counter() - start:.1f} s")
    return save_scatter(out, embedding, y, title="MNIST-70k, unimap.UMAP", dpi=90,
                        legend_loc="on data", basis="UMAP")


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")))
