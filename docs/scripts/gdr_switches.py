"""Figures for ``docs/gdr.md``: how each switch of ``unimap.GDR`` moves the embedding between
UMAP and t-SNE (the analysis of reference 002), on an MNIST subset.

Run from the repository root::

    python docs/scripts/gdr_switches.py            # 20,000 MNIST points (~3 min on 2 cores)
    python docs/scripts/gdr_switches.py --n 5000   # quicker

Writes ``docs/figures/gdr_switches.png`` (one panel per configuration, coloured by digit) and
``docs/figures/gdr_switches.md`` (time, 10-NN accuracy, recall of the 15 exact input-space
neighbours on a 2,000-point sample, trustworthiness@15 on the same sample).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from unimap._io import atomic_path

import unimap
from unimap.datasets import load_mnist
from unimap.metrics import knn_accuracy_loo, knn_recall, trustworthiness

FIGURES = Path(__file__).resolve().parents[1] / "figures"

# (title, estimator factory): from UMAP through the framework's switches to t-SNE.
CONFIGS = [
    ("unimap.UMAP (reference)", lambda: unimap.UMAP(random_state=0)),
    ("GDR() — UMAP-like", lambda: unimap.GDR(random_state=0)),
    ("GDR, t-SNE symmetrisation", lambda: unimap.GDR(symmetrization="tsne", random_state=0)),
    ("GDR, asymmetric attraction",
     lambda: unimap.GDR(symmetric_attraction=False, random_state=0)),
    ("GDR, t-SNE kernel (a = b = 1)", lambda: unimap.GDR(a=1.0, b=1.0, random_state=0)),
    ("GDR(normalized) + UMAP kernel",
     lambda: unimap.GDR(normalized=True, min_dist=0.1, a=1.577, b=0.895, random_state=0)),
    ("GDR(normalized) + symmetric attraction",
     lambda: unimap.GDR(normalized=True, symmetric_attraction=True, random_state=0)),
    ("GDR(normalized) + UMAP symmetrisation",
     lambda: unimap.GDR(normalized=True, symmetrization="umap", random_state=0)),
    ("GDR(normalized), per-row negative samples",
     lambda: unimap.GDR(normalized=True, shared_negatives=False, random_state=0)),
    ("GDR(normalized), perplexity 30 (t-SNE's)",
     lambda: unimap.GDR(normalized=True, perplexity=30, random_state=0)),
    ("GDR(normalized=True) — t-SNE-like", lambda: unimap.GDR(normalized=True, random_state=0)),
    ("unimap.TSNE (reference)", lambda: unimap.TSNE(random_state=0)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    X, y = load_mnist()
    X, y = np.ascontiguousarray(X[: args.n], dtype=np.float32), y[: args.n]
    sample = np.random.default_rng(0).choice(X.shape[0], min(2000, X.shape[0]), replace=False)
    results = []
    for title, make in CONFIGS:
        tic = time.perf_counter()
        embedding = make().fit_transform(X)
        seconds = time.perf_counter() - tic
        row = {
            "title": title,
            "seconds": seconds,
            "acc": knn_accuracy_loo(embedding, y, 10),
            "recall": knn_recall(X, embedding, 15, sample_size=2000, random_state=0),
            "trust": trustworthiness(X[sample], embedding[sample], n_neighbors=15),
            "embedding": embedding,
        }
        print(f"{title}: {seconds:.1f} s, acc {row['acc']:.4f}, recall {row['recall']:.4f}, "
              f"trust {row['trust']:.4f}", flush=True)
        results.append(row)
    _figure(results, y, args.n)
    _table(results, args.n)


def _figure(results: list[dict], y: np.ndarray, n: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 5
    rows = -(-len(results) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 4.2 * rows))
    for ax, r in zip(axes.ravel(), results, strict=False):
        e = r["embedding"]
        ax.scatter(e[:, 0], e[:, 1], c=y, cmap="tab10", s=0.3, linewidths=0, rasterized=True)
        ax.set_title(f"{r['title']}\nacc {r['acc']:.3f} · recall {r['recall']:.3f}",
                     fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes.ravel()[len(results):]:
        ax.axis("off")
    fig.suptitle(f"GDR's switches between UMAP and t-SNE, MNIST ({n:,} points)")
    fig.tight_layout()
    with atomic_path(FIGURES / "gdr_switches.png") as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def _table(results: list[dict], n: int) -> None:
    lines = [f"MNIST, first {n:,} points; `python docs/scripts/gdr_switches.py --n {n}`.", "",
             "| configuration | time s | 10-NN acc | recall@15 | trust@15 |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['title']} | {r['seconds']:.1f} | {r['acc']:.4f} | {r['recall']:.4f} | "
              f"{r['trust']:.4f} |" for r in results]
    with atomic_path(FIGURES / "gdr_switches.md") as tmp:
        Path(tmp).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
