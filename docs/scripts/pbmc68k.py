"""The walk-through of ``docs/pbmc68k.md``: scanpy's shipped ``pbmc68k_reduced`` (700 cells)
embedded with unimap's UMAP, t-SNE and GDR through ``unimap.tl``, stored in the AnnData,
plotted, evaluated, and set against scanpy's own ``sc.tl.umap`` and ``sc.tl.tsne``.

Run from the repository root (needs scanpy, which ships the dataset: no download; umap-learn
for ``sc.tl.umap``; matplotlib for the figures)::

    python docs/scripts/pbmc68k.py            # ~1 min on 2 cores once numba's cache is warm

Writes ``docs/figures/pbmc68k_methods.png``, ``docs/figures/pbmc68k_scanpy.png`` and the
interactive map ``docs/figures/pbmc68k_umap.html``, and prints everything the page quotes.
Each function below is one cell of the page, shown there verbatim; ``main`` runs them in
order. ``tests/test_docs_pbmc68k.py`` runs the unimap cells with fewer epochs.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

import unimap
from unimap import metrics
from unimap.plotting import save_comparison, save_html

FIGURES = Path(__file__).resolve().parents[1] / "figures"
EMBEDDINGS = {"X_umap": "UMAP", "X_tsne": "t-SNE", "X_gdr": "GDR()",
              "X_gdr_tsne": "GDR(normalized=True)"}


def load():
    import scanpy as sc

    adata = sc.datasets.pbmc68k_reduced()  # bundled with scanpy: no download
    print(adata)
    print("neighbours:", dict(adata.uns["neighbors"]["params"]))
    print("labels:", adata.obs["bulk_labels"].value_counts().to_dict())
    return adata


def shipped_graph(adata):
    # Which representation were the shipped neighbours computed on? Their params record
    # neither use_rep nor n_pcs, so compare their distances with those of the first n PCs.
    indices, distances = unimap.tl.knn_from_neighbors(adata)
    X = adata.obsm["X_pca"]
    for n_pcs in (30, 50):
        Xn = X[:, :n_pcs]
        recomputed = np.linalg.norm(Xn[indices] - Xn[:, None, :], axis=2)
        print(f"first {n_pcs} PCs: max |distance difference| = "
              f"{np.abs(recomputed - distances).max():.2g}")
    # unimap.tl reads the representation from params["use_rep"] and "n_pcs", which these
    # neighbours lack, so name the one the graph came from; the record then says what it saw.
    adata.obsm["X_pca30"] = X[:, :30]
    return indices.shape[1]


def embed(adata, fit=None):
    fit = fit or {}  # per-method parameter overrides: none here, fewer epochs in the test
    # unimap's own choices, not scanpy's (the shipped graph, min_dist=0.5, learning rate 1000):
    # its 15-NN search, umap-learn's min_dist and t-SNE's "auto" learning rates
    unimap.tl.umap(adata, use_neighbors=False, min_dist=0.1,
                   **fit.get("umap", {}))  # obsm["X_umap"], uns["umap"], uns["unimap"]["umap"]
    unimap.tl.tsne(adata, learning_rate="auto", **fit.get("tsne", {}))  # obsm["X_tsne"], ...
    unimap.tl.gdr(adata, **fit.get("gdr", {}))  # obsm["X_gdr"], uns["gdr"]
    unimap.tl.gdr(adata, normalized=True, **fit.get("gdr_tsne", {}))  # "X_gdr_tsne"
    # UMAP once more, on scanpy's shipped graph instead of its own kNN search
    unimap.tl.umap(adata, use_rep="X_pca30", n_neighbors=10, min_dist=0.1,
                   key_added="X_umap_graph", **fit.get("umap", {}))


def show_records(adata):
    print("obsm:", list(adata.obsm))
    print("uns: ", list(adata.uns))
    print('uns["umap"]:', adata.uns["umap"])  # scanpy's layout
    record = adata.uns["unimap"]["umap"]  # unimap's record beside it
    print('uns["unimap"]["umap"]:', {k: record[k] for k in ("method", "estimator")})
    print("  params:  ", record["params"])
    print("  resolved:", record["resolved"])
    for key in ("umap", "tsne", "gdr", "gdr_tsne", "X_umap_graph"):
        record = adata.uns["unimap"][key]
        resolved = {k: v for k, v in record["resolved"].items()
                    if k in ("n_neighbors_", "perplexity_", "n_epochs_", "n_iter_",
                             "knn_method_", "init_")}
        seconds = {k: round(v, 3) for k, v in record["timings"].items()}
        print(f"{key:>12}: {record['estimator']}, use_rep={record['params']['use_rep']}, "
              f"{resolved}\n{'':>14}seconds {seconds}")


def evaluate(adata, keys, X, labels="bulk_labels", k=15):
    # Exact trustworthiness and kNN recall at k = 15 against X (700 points: no sampling needed;
    # trustworthiness_sampled would return the exact value with stderr 0), and the 10-NN
    # accuracy on the labels by 5-fold cross-validation (seeded folds) with its binomial
    # standard error sqrt(p(1 - p)/n).
    y = adata.obs[labels].to_numpy()
    n = len(y)
    rows = {}
    for key in keys:
        E = adata.obsm[key]
        acc = metrics.knn_accuracy(E, y, n_neighbors=10, random_state=0)
        rows[key] = {"trust": metrics.trustworthiness(X, E, n_neighbors=k),
                     "recall": metrics.knn_recall(X, E, n_neighbors=k),
                     "acc": acc, "acc_se": math.sqrt(acc * (1 - acc) / n)}
    return rows


def seed_spread(adata, X, seeds=(1, 2), fit=None):
    # The same four fits with other seeds (copy=True leaves adata as it is): the spread
    # between seeds is the honest error bar of one embedding of 700 cells.
    fit = fit or {}
    spread = {}
    for key, method in (("X_umap", "umap"), ("X_tsne", "tsne"), ("X_gdr", "gdr"),
                        ("X_gdr_tsne", "gdr-tsne")):
        runs = [adata] + [unimap.tl.embed(adata, method, random_state=seed, copy=True,
                                          **fit.get(method.replace("-", "_"), {}))
                          for seed in seeds]
        scores = [evaluate(run, [key], X)[key] for run in runs]
        spread[key] = {m: (min(s[m] for s in scores), max(s[m] for s in scores))
                       for m in ("trust", "recall", "acc")}
    return spread


def timed(function, *args, repeats=3, **kwargs):
    times = []
    for _ in range(1 + repeats):
        tic = time.perf_counter()
        function(*args, **kwargs)
        times.append(time.perf_counter() - tic)
    return times[0], float(np.median(times[1:])), min(times[1:]), max(times[1:])


def compare_scanpy(adata):
    import scanpy as sc
    from threadpoolctl import threadpool_limits

    # UMAP on one graph: scanpy's shipped 10-NN graph (first 30 PCs), min_dist=0.1 for both
    # (sc.tl.umap's default is 0.5), 500 epochs, spectral init, seed 0 for both.
    graph = {"use_neighbors": True, "use_rep": "X_pca30", "n_neighbors": 10, "min_dist": 0.1}
    # t-SNE on one representation (X_pca, 50 PCs), perplexity 30, seed 0; each searches its
    # own 90 neighbours. Defaults otherwise: unimap.TSNE 750 iterations, learning rates
    # max(n/12/4, 50) = 50 then n/4 = 175; sc.tl.tsne (scikit-learn) 1000 iterations, 1000.
    # Once on one thread (threadpool_limits caps scikit-learn's OpenMP and BLAS), then on all
    # cores. The warning ignored: sc.tl.tsne's "n_jobs > 1 used to mean MulticoreTSNE".
    times = {}
    for threads in (1, -1):
        with threadpool_limits(1 if threads == 1 else None), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            times["unimap.tl.umap", threads] = timed(unimap.tl.umap, adata, **graph,
                                                     n_jobs=threads, key_added="X_umap_graph")
            times["sc.tl.umap", threads] = timed(sc.tl.umap, adata, min_dist=0.1,
                                                 key_added="X_umap_scanpy")
            times["unimap.tl.tsne", threads] = timed(unimap.tl.tsne, adata, n_jobs=threads,
                                                     learning_rate="auto")
            times["sc.tl.tsne", threads] = timed(sc.tl.tsne, adata, n_jobs=threads,
                                                 key_added="X_tsne_scanpy")
    return times


def umap_seeds(adata, seeds=range(5)):
    # One seed is one draw: both UMAPs on the shipped graph with seeds 0-4, scored against
    # the graph's space (first 30 PCs). copy=True leaves adata as it is.
    import scanpy as sc

    X = adata.obsm["X_pca30"]
    scores = {"unimap.tl.umap": [], "sc.tl.umap": []}
    for seed in seeds:
        ours = unimap.tl.umap(adata, use_neighbors=True, use_rep="X_pca30", n_neighbors=10,
                              min_dist=0.1, random_state=seed, copy=True).obsm["X_umap"]
        theirs = sc.tl.umap(adata, min_dist=0.1, random_state=seed, copy=True).obsm["X_umap"]
        for name, E in (("unimap.tl.umap", ours), ("sc.tl.umap", theirs)):
            scores[name].append((metrics.trustworthiness(X, E, n_neighbors=15),
                                 metrics.knn_recall(X, E, n_neighbors=15)))
    return scores


def figures(adata, scores, folder=FIGURES):
    labels = adata.obs["bulk_labels"].to_numpy()

    def title(name, key):
        s = scores[key]
        return f"{name}\ntrust {s['trust']:.3f} · 10-NN acc {s['acc']:.3f}"

    save_comparison(folder / "pbmc68k_methods.png",
                    {title(name, key): adata.obsm[key] for key, name in EMBEDDINGS.items()},
                    labels, dpi=90, panel_size=4.0)
    save_comparison(folder / "pbmc68k_scanpy.png",
                    {title("unimap.tl.umap, shipped graph", "X_umap_graph"):
                         adata.obsm["X_umap_graph"],
                     title("sc.tl.umap (umap-learn), shipped graph", "X_umap_scanpy"):
                         adata.obsm["X_umap_scanpy"],
                     title("unimap.tl.tsne", "X_tsne"): adata.obsm["X_tsne"],
                     title("sc.tl.tsne (scikit-learn)", "X_tsne_scanpy"):
                         adata.obsm["X_tsne_scanpy"]},
                    labels, dpi=90, panel_size=4.0)


def interactive_map(adata, path=FIGURES / "pbmc68k_umap.html"):
    columns = {name: adata.obs[name].to_numpy()
               for name in ("bulk_labels", "louvain", "phase", "n_genes", "percent_mito")}
    save_html(path, adata.obsm["X_umap"], columns=columns, ids=adata.obs_names.to_numpy(),
              id_name="cell", title="pbmc68k_reduced, unimap.tl.umap")
    return path


def _steal() -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs from /proc/stat: what top's "st" is a rate of."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields[:8]]
    return values[7], sum(values)


def _table(rows, names, with_se=True):
    lines = ["| embedding | trust@15 | recall@15 | 10-NN accuracy |", "|---|---:|---:|---:|"]
    for key, s in rows.items():
        acc = f"{s['acc']:.3f} ± {s['acc_se']:.3f}" if with_se else f"{s['acc']:.3f}"
        lines.append(f"| {names.get(key, key)} | {s['trust']:.4f} | {s['recall']:.4f} | "
                     f"{acc} |")
    return "\n".join(lines)


def main() -> None:
    start = _steal()
    print("load average at start (1, 5, 15 min):", os.getloadavg())
    print("# load")
    adata = load()
    print("\n# shipped_graph")
    shipped_graph(adata)
    print("\n# embed")
    tic = time.perf_counter()
    embed(adata)
    print(f"five fits, first calls in this process: {time.perf_counter() - tic:.1f} s")
    print("\n# show_records")
    show_records(adata)

    print("\n# evaluate (input space: X_pca, 50 PCs)")
    X = adata.obsm["X_pca"]
    acc = metrics.knn_accuracy(X, adata.obs["bulk_labels"].to_numpy(), 10, random_state=0)
    print(f"10-NN accuracy in X_pca itself (50-D): {acc:.3f}")
    scores = evaluate(adata, list(EMBEDDINGS) + ["X_umap_graph"], X)
    print(_table(scores, {**EMBEDDINGS, "X_umap_graph": "UMAP, shipped graph"}))

    print("\n# seed_spread (seeds 0, 1, 2: min-max)")
    for key, s in seed_spread(adata, X).items():
        print(f"{EMBEDDINGS[key]:>22}: " + ", ".join(
            f"{m} {lo:.4f}-{hi:.4f}" for m, (lo, hi) in s.items()))

    print("\n# compare_scanpy (seconds: first call, then median [min-max] of 3 more)")
    for (name, threads), (first, median, lo, hi) in compare_scanpy(adata).items():
        print(f"{name:>15}, {'1 thread ' if threads == 1 else 'all cores'}: first {first:.2f}, "
              f"warm {median:.2f} [{lo:.2f}-{hi:.2f}]")
    same_graph = evaluate(adata, ["X_umap_graph", "X_umap_scanpy"], adata.obsm["X_pca30"])
    print("UMAP on the shipped graph, scored against its space (first 30 PCs):")
    print(_table(same_graph, {"X_umap_graph": "unimap.tl.umap",
                              "X_umap_scanpy": "sc.tl.umap (umap-learn)"}))
    print("\n# umap_seeds (trust@15 / recall@15 against the first 30 PCs, seeds 0-4)")
    for name, runs in umap_seeds(adata).items():
        trust, recall = np.array(runs).T
        print(f"{name:>15}: trust " + " ".join(f"{t:.4f}" for t in trust)
              + f" (mean {trust.mean():.4f}); recall " + " ".join(f"{r:.4f}" for r in recall)
              + f" (mean {recall.mean():.4f})")
    tsne = evaluate(adata, ["X_tsne", "X_tsne_scanpy"], X)
    print("t-SNE on X_pca (50 PCs):")
    print(_table(tsne, {"X_tsne": "unimap.tl.tsne", "X_tsne_scanpy": "sc.tl.tsne (sklearn)"}))

    print("\n# figures, interactive_map")
    figures(adata, {**scores, **same_graph, **tsne})
    path = interactive_map(adata)
    for name in ("pbmc68k_methods.png", "pbmc68k_scanpy.png", path.name):
        print(f"{name}: {(FIGURES / name).stat().st_size / 1024:.0f} kB")

    end = _steal()
    if start and end and end[1] > start[1]:
        print(f"\nCPU steal during the run (top's st): "
              f"{100 * (end[0] - start[0]) / (end[1] - start[1]):.1f}%")
    print("load average at end (1, 5, 15 min):", os.getloadavg())


if __name__ == "__main__":
    main()
