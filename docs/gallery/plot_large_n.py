"""A million points: GDR on 1,000,000 x 50, drawn per pixel.

A mixture of 30 Gaussian blobs in 50 dimensions (``unimap.datasets.make_blobs``, 1,000,000
rows, the width of single-cell data after PCA) embedded by ``unimap.GDR`` with its defaults.
From 500,000 rows of at most 50 columns the kNN graph is searched in k-means cells of about
25,000 points, one small index each; the figure aggregates the points per pixel (above
``unimap.plotting.DENSITY_THRESHOLD`` points) instead of drawing a million markers. About 70 s
on 2 quiet cores and 1.4 GiB at the peak (``benchmarks/results/scale_gdr.md``); the picture here
took 279 s and 1.8 GB (the script's whole process) on 2 cores shared with other work.

Run ``python docs/gallery/plot_large_n.py [OUT.png]``: it writes ``plot_large_n.png`` beside
itself unless told otherwise.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import unimap
from unimap.datasets import make_blobs
from unimap.plotting import save_scatter

N_POINTS = 1_000_000


def main(out: Path) -> Path:
    X, y = make_blobs(n_samples=N_POINTS, n_features=50, centers=30, random_state=0)
    start = time.perf_counter()
    embedding = unimap.GDR(random_state=0).fit_transform(X)
    seconds = time.perf_counter() - start
    print(f"GDR of {X.shape[0]:,} x {X.shape[1]}: {seconds:.0f} s")
    return save_scatter(out, embedding, y, title=f"{N_POINTS:,} points, unimap.GDR", dpi=80,
                        legend=False, basis="GDR")


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")))
