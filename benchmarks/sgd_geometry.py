"""How far apart UMAP's SGD puts the classes of a supervised fit: unimap's ``umap_sgd_fit`` as
a fit runs it, and umap-learn's own ``optimize_layout_euclidean``, on the same pruned supervised
graph of digits' 80% training split and the same spectral start, 500 epochs.

Printed per variant, mean over seeds: the mean distance of a class's points to its centroid
(radius), the mean distance from a class centroid to the nearest other one, and their ratio.
A layout whose classes are further apart makes ``transform`` need more epochs to bring a
held-out point from between two classes into one (``dropin_seeds.md``: supervised held-out
accuracy). Before classes run on one thread read their negative samples from live positions
(every class read them from the epoch's start), unimap's nearest other centroid was 10.02
here (10.58 calling the epoch kernel without the fit's locality relabelling; 9.32 with live
reads; umap-learn 9.22, 4 seeds).

Examples::

    python benchmarks/sgd_geometry.py             # 4 seeds, writes results/sgd_geometry.md
    python benchmarks/sgd_geometry.py --seeds 2 --no-save
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
from dropin import host_state, load, split

RESULTS = Path(__file__).parent / "results" / "sgd_geometry.md"
N_EPOCHS = 500


def geometry(embedding, labels):
    classes = np.unique(labels)
    centroids = np.vstack([embedding[labels == c].mean(0) for c in classes])
    radius = np.mean([np.linalg.norm(embedding[labels == c] - centroids[i], axis=1).mean()
                      for i, c in enumerate(classes)])
    gaps = np.linalg.norm(centroids[:, None] - centroids[None], axis=2)
    np.fill_diagonal(gaps, np.inf)
    return radius, gaps.min(1).mean()


def unimap_epochs(start, graph, a, b, seed):
    from unimap.optimizers.umap_sgd.fit import umap_sgd_fit

    return umap_sgd_fit(start, graph, n_epochs=N_EPOCHS, a=a, b=b, seed=seed)


def umap_learn_epochs(start, graph, a, b, seed):
    from umap.layouts import optimize_layout_euclidean
    from umap.umap_ import make_epochs_per_sample

    coo = graph.tocoo()
    rng_state = np.random.RandomState(seed).randint(-2**31 + 1, 2**31 - 1, 3).astype(np.int64)
    emb = start.copy()
    return optimize_layout_euclidean(emb, emb, coo.row, coo.col, N_EPOCHS, coo.shape[0],
                                     make_epochs_per_sample(coo.data, N_EPOCHS), a, b,
                                     rng_state, 1.0, 1.0, 5.0, parallel=False, move_other=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import umap

    import unimap
    from unimap.initialization.layouts import initialize
    from unimap.optimizers.umap_sgd.common import prune_graph

    X, _, y, _ = split(*load("digits", None))
    before = host_state()
    results = {"unimap": [], "umap-learn": []}
    for seed in range(args.seeds):
        model = unimap.UMAP(random_state=seed, n_epochs=1).fit(X, y)
        graph = prune_graph(model.graph_, N_EPOCHS)
        start, _ = initialize("spectral", X, graph, 2, seed, "box")
        layouts = (unimap_epochs(start, graph, model.a_, model.b_, seed),
                   umap_learn_epochs(start, graph, model.a_, model.b_, seed))
        for name, layout in zip(results, layouts, strict=True):
            results[name].append(geometry(layout, y))
    rows = []
    for name, values in results.items():
        values = np.array(values)
        rows.append(f"| {name} | {values[:, 0].mean():.3f} | {values[:, 1].mean():.3f} | "
                    f"{(values[:, 0] / values[:, 1]).mean():.4f} |")
        print(rows[-1], flush=True)
    text = (f"# UMAP's SGD and the spacing of a supervised fit's classes\n\n`python benchmarks/"
            f"sgd_geometry.py {' '.join(os.sys.argv[1:])}`; unimap {unimap.__version__}, "
            f"umap-learn {umap.__version__}; digits' training split, supervised, the same graph "
            f"and start for both, {N_EPOCHS} epochs, mean of {args.seeds} seeds.\n\n"
            f"Host before: {before}. After: {host_state()}.\n\n| SGD | class radius | nearest "
            "other centroid | ratio |\n|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nSee the script's docstring for what each column measures.\n")
    print(text)
    if not args.no_save:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
