"""UMAP's non-euclidean output spaces, unimap against umap-learn (``output_metric``).

Digits, the first 1,200 rows fitted and the next 300 placed by ``transform``; for each library,
output space and seed: the 10-NN accuracy of the placed points by the output space's own
distance (great-circle on the sphere, hyperbolic on the hyperboloid) and the fit's seconds,
warm (each library fitted once before on 300 rows). umap-learn runs on one thread when seeded;
unimap on all cores.

Examples::

    python benchmarks/output_metric.py             # 3 seeds, writes results/output_metric.md
    python benchmarks/output_metric.py --seeds 1 --no-save
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from dropin import host_state
from sklearn.metrics.pairwise import haversine_distances

RESULTS = Path(__file__).parent / "results" / "output_metric.md"


def great_circle(P, Q):
    """Distances between rows (θ, φ) (polar and azimuthal angles, umap-learn's layout)."""
    return haversine_distances(np.c_[np.pi / 2 - P[:, 0], P[:, 1]],
                               np.c_[np.pi / 2 - Q[:, 0], Q[:, 1]])


def hyperbolic(P, Q):
    s = np.sqrt(1 + (P ** 2).sum(1))[:, None]
    t = np.sqrt(1 + (Q ** 2).sum(1))[None, :]
    return np.arccosh(np.maximum(s * t - P @ Q.T, 1.0))


def euclidean(P, Q):
    return np.linalg.norm(P[:, None] - Q[None], axis=2)


DISTANCES = {"euclidean": euclidean, "haversine": great_circle, "hyperboloid": hyperbolic}


def accuracy(D, y_train, y_test, k=10):
    votes = y_train[np.argsort(D, axis=1)[:, :k]]
    return float(np.mean([np.bincount(v, minlength=10).argmax() == t
                          for v, t in zip(votes, y_test, strict=True)]))


def estimator(lib, **params):
    if lib == "unimap":
        import unimap

        return unimap.UMAP(**params)
    import umap

    return umap.UMAP(**params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import umap
    from sklearn.datasets import load_digits

    import unimap

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    X_fit, y_fit, X_new, y_new = X[:1200], y[:1200], X[1200:1500], y[1200:1500]
    before = host_state()
    rows = []
    for metric, distance in DISTANCES.items():
        cells = []
        for lib in ("unimap", "umap-learn"):
            estimator(lib, output_metric=metric, n_epochs=10).fit(X_fit[:300])  # compile
            accs, secs = [], []
            for seed in range(args.seeds):
                model = estimator(lib, output_metric=metric, random_state=seed)
                tic = time.perf_counter()
                model.fit(X_fit)
                secs.append(time.perf_counter() - tic)
                accs.append(accuracy(distance(model.transform(X_new), model.embedding_),
                                     y_fit, y_new))
            cells.append((np.mean(accs), np.median(secs)))
        (acc, sec), (acc_u, sec_u) = cells
        rows.append(f"| {metric} | {acc:.4f} | {acc_u:.4f} | {sec:.2f} | {sec_u:.2f} | "
                    f"{sec_u / sec:.1f}x |")
        print(rows[-1], flush=True)
    text = (f"# UMAP's output spaces: unimap against umap-learn\n\n`python benchmarks/"
            f"output_metric.py {' '.join(os.sys.argv[1:])}`; unimap {unimap.__version__}, "
            f"umap-learn {umap.__version__}; {args.seeds} seeds, mean accuracy, median seconds."
            f"\n\nHost before: {before}. After: {host_state()}.\n\n"
            "| output_metric | unimap 10-NN acc | umap-learn 10-NN acc | unimap s | "
            "umap-learn s | speed-up |\n|---|---|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nSee the script's docstring for what each column measures.\n")
    print(text)
    if not args.no_save:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
