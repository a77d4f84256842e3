"""The seed-sensitive columns of ``dropin.py``, over many seeds, unimap against umap-learn.

One seed's k-means ARI is nearly a yes/no on whether a small group of a class starts (and so
ends) beside its class: on digits, supervised, it takes the values 0.92, 0.96 or 0.99 by seed
for both libraries. This script refits each library with ``random_state`` 0..N-1 on the same
80% training split as ``dropin.py`` and reports the mean, minimum and maximum:

- digits, unsupervised, supervised and semi-supervised (50% of the labels hidden): ARI of
  k-means (k = 10, 5 starts) on the training embedding against the true labels, 10-NN
  accuracy of the held-out points placed by ``transform``, and of the points whose labels
  were hidden;
- iris and digits, densMAP: Spearman correlation of the embedding's log local radii with the
  data's (``rad_orig``) by three measures, each applied to both libraries' embeddings:
  the library's own ``rad_emb``; squared distances (the densMAP paper's and the objective's
  definition, unimap's ``rad_emb_``); plain distances (umap-learn's ``rad_emb``: its
  ``rad_orig`` squares the distances and its ``rad_emb`` does not).

Examples::

    python benchmarks/dropin_seeds.py               # 16 seeds (about 6 minutes on 2 cores)
    python benchmarks/dropin_seeds.py --seeds 64    # the committed table
    python benchmarks/dropin_seeds.py --seeds 4 --no-save
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np
from dropin import ari, embedding_radii, host_state, knn_score, load, split

RESULTS = Path(__file__).parent / "results" / "dropin_seeds.md"


def estimator(lib: str, seed: int, **params):
    if lib == "unimap":
        import unimap

        return unimap.UMAP(random_state=seed, **params)
    import umap

    return umap.UMAP(random_state=seed, **params)


def supervised_scores(lib, data, seeds, hide: bool | None) -> dict[str, list[float]]:
    """ARI, held-out 10-NN accuracy and (with hidden labels) the hidden points' 10-NN
    accuracy, as ``dropin.py`` computes them, for each seed; ``hide=None``: fitted without
    labels."""
    X, X_te, y, y_te = data
    hidden = np.random.default_rng(0).random(len(y)) < 0.5
    labels = None if hide is None else np.where(hidden, -1, y) if hide else y
    out: dict[str, list[float]] = {"ARI": [], "held-out acc": []}
    if hide:
        out["unlabelled acc"] = []
    for s in seeds:
        model = estimator(lib, s)
        emb = model.fit_transform(X, labels)
        out["ARI"].append(ari(emb, y))
        out["held-out acc"].append(knn_score(emb, y, model.transform(X_te), y_te))
        if hide:
            out["unlabelled acc"].append(knn_score(emb[~hidden], y[~hidden], emb[hidden],
                                                   y[hidden]))
    return out


def densmap_rho(lib, X, seeds) -> dict[str, list[float]]:
    from scipy.stats import spearmanr

    out: dict[str, list[float]] = {"own rad_emb": [], "squared (unimap's)": [],
                                   "plain (umap-learn's)": []}
    for s in seeds:
        emb, r_orig, r_emb = estimator(lib, s, densmap=True, output_dens=True).fit_transform(X)
        out["own rad_emb"].append(spearmanr(r_orig, r_emb).statistic)
        out["squared (unimap's)"].append(spearmanr(r_orig, embedding_radii(emb, True)).statistic)
        out["plain (umap-learn's)"].append(spearmanr(r_orig, embedding_radii(emb, False)).statistic)
    return out


def cell(values: list[float]) -> str:
    return f"{np.mean(values):.4f} ({np.min(values):.3f}-{np.max(values):.3f})"


def difference(ours: list[float], theirs: list[float]) -> str:
    """unimap's mean minus umap-learn's, ± two standard errors of that difference (the seeds
    of the two libraries are independent draws): a gap inside it is seed noise."""
    gap = np.mean(ours) - np.mean(theirs)
    se = np.sqrt(np.var(ours, ddof=1) / len(ours) + np.var(theirs, ddof=1) / len(theirs))
    return f"{gap:+.4f} ± {2 * se:.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import umap

    import unimap

    seeds = range(args.seeds)
    before = host_state()
    rows = []
    X_tr, X_te, y_tr, y_te = split(*load("digits", None))
    for task, hide in (("unsupervised", None), ("supervised", False),
                       ("semi-supervised (50%)", True)):
        ours, theirs = (supervised_scores(lib, (X_tr, X_te, y_tr, y_te), seeds, hide)
                        for lib in ("unimap", "umap"))
        for column in ours:
            rows.append(f"| digits | {task} | {column} | {cell(ours[column])} | "
                        f"{cell(theirs[column])} | {difference(ours[column], theirs[column])} |")
            print(rows[-1], flush=True)
    for name in ("iris", "digits"):
        X_tr = split(*load(name, None))[0]
        ours, theirs = densmap_rho("unimap", X_tr, seeds), densmap_rho("umap", X_tr, seeds)
        for measure in ours:
            rows.append(f"| {name} | densMAP | radii rho, {measure} | {cell(ours[measure])} | "
                        f"{cell(theirs[measure])} | "
                        f"{difference(ours[measure], theirs[measure])} |")
            print(rows[-1], flush=True)
    text = (f"# The seed-sensitive columns of dropin.md over {args.seeds} seeds\n\n"
            f"`python benchmarks/dropin_seeds.py {' '.join(os.sys.argv[1:])}`; unimap "
            f"{unimap.__version__}, umap-learn {umap.__version__}, `random_state` 0-"
            f"{args.seeds - 1}. Mean (min-max); the difference of the means ± two standard "
            f"errors.\n\nHost before: {before}. After: "
            f"{host_state()}.\n\n| data | task | column | unimap | umap-learn | difference |\n"
            f"|---|---|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nSee the script's docstring for what each column measures.\n")
    print(text)
    if not args.no_save:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
