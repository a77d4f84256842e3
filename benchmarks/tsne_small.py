"""t-SNE on small data and short runs: unimap against scikit-learn and openTSNE (issue 56).

Usage::

    python benchmarks/tsne_small.py [--datasets random50 iris digits mnist5000]

For each dataset and schedule (early-exaggeration iterations + the rest), each library's
``TSNE`` with its defaults otherwise, seeded: the KL divergence it reports for its own P and
the 10-NN accuracy of the map (``unimap.metrics.knn_accuracy``, the same folds for all).
scikit-learn's early exaggeration is always 250 iterations, so it runs only the schedules that
start with 250. ``random50`` is 50 Gaussian points in 3-D, ``method="exact"``,
``perplexity=10``, ``init="random"`` (the case of the issue); ``mnist5000`` the first 5,000
MNIST digits. Run it twice to compare two versions of unimap (``PYTHONPATH=<checkout>``).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

SCHEDULES = [(25, 50), (250, 50), (250, 500), (250, 750)]


def datasets(names: list[str]) -> dict:
    from sklearn.datasets import load_iris

    from unimap.datasets import load_digits, load_mnist

    out = {}
    for name in names:
        if name == "random50":
            X = np.random.RandomState(0).randn(50, 3).astype(np.float32)
            out[name] = (X, None, {"method": "exact", "perplexity": 10.0, "init": "random"})
        elif name == "iris":
            X, y = load_iris(return_X_y=True)
            out[name] = (X.astype(np.float32), y, {})
        elif name == "digits":
            X, y = load_digits()
            out[name] = (X.astype(np.float32), y, {})
        elif name == "mnist5000":
            X, y = load_mnist()
            out[name] = (X[:5000].astype(np.float32), y[:5000], {})
    return out


def fit(library: str, X: np.ndarray, early: int, rest: int, extra: dict):
    """(embedding, KL) of one library's t-SNE, or None where it cannot run this schedule."""
    if library == "unimap":
        import unimap

        model = unimap.TSNE(random_state=0, early_exaggeration_iter=early,
                            max_iter=early + rest, **extra).fit(X)
        return model.embedding_, model.kl_divergence_
    if library == "scikit-learn":
        from sklearn.manifold import TSNE

        if early != 250:
            return None
        params = {k: v for k, v in extra.items() if k in ("method", "perplexity", "init")}
        model = TSNE(random_state=0, max_iter=early + rest, **params).fit(X)
        return model.embedding_, model.kl_divergence_
    import openTSNE

    params = {"perplexity": extra.get("perplexity", 30.0)}
    if extra.get("init") == "random":
        params["initialization"] = "random"
    if extra.get("method") == "exact":
        params["negative_gradient_method"] = "bh"
        params["theta"] = 0.0  # Barnes-Hut with theta 0: exact
    embedding = openTSNE.TSNE(random_state=0, early_exaggeration_iter=early, n_iter=rest,
                              **params).fit(X)
    return np.asarray(embedding), float(embedding.kl_divergence)


def main() -> None:
    from unimap.metrics import knn_accuracy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["random50", "iris", "digits", "mnist5000"])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print("| data | n | schedule | unimap KL | scikit-learn KL | openTSNE KL | unimap 10-NN | "
          "scikit-learn 10-NN | openTSNE 10-NN |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, (X, y, extra) in datasets(args.datasets).items():
        for early, rest in SCHEDULES:
            kl, acc = {}, {}
            for library in ("unimap", "scikit-learn", "openTSNE"):
                result = fit(library, X, early, rest, extra)
                if result is None:
                    kl[library] = acc[library] = "—"
                    continue
                Y, value = result
                kl[library] = f"{value:.3f}"
                acc[library] = "—" if y is None else f"{knn_accuracy(Y, y):.3f}"
            libs = ("unimap", "scikit-learn", "openTSNE")
            print(f"| {name} | {X.shape[0]:,} | {early} + {rest} | "
                  + " | ".join(kl[lib] for lib in libs) + " | "
                  + " | ".join(acc[lib] for lib in libs) + " |", flush=True)


if __name__ == "__main__":
    main()
