"""unimap against umap-learn on the features umap-learn users rely on (issue 41).

One process, both libraries side by side, each warmed up first on a small fit (so that numba's
compilation is not timed; a fresh process pays it once, see ``first_run.py``). Per data set,
80% of the points train and 20% are held out (stratified, seed 0):

- ``unsupervised``: ``fit(X)``; the reference row;
- ``supervised``: ``fit(X, y)``;
- ``semi-supervised``: ``fit(X, y)`` with half the training labels replaced by -1;
- ``inverse``: ``inverse_transform(transform(held-out))`` of the unsupervised model;
- ``update``: fit on half the training points, ``update`` with the other half, against a
  refit on all of them.

Quality columns:

- ``ARI``: adjusted Rand index of k-means (k = the number of classes, 5 starts) on the
  training embedding against the true labels;
- ``held-out acc``: 10-NN accuracy of the held-out points placed by ``transform``, the
  classifier fitted on the training embedding and labels;
- ``unlabelled acc`` (semi-supervised): 10-NN accuracy of the training points whose labels
  were hidden, classified by the labelled ones in the embedding;
- ``error`` (inverse): mean euclidean distance between a held-out row and its
  reconstruction, relative to the mean distance to the training mean (1: no better than the
  mean);
- ``acc`` (update): 5-fold 10-NN accuracy of the grown embedding (``unimap.metrics.knn_accuracy``).

Time columns are seconds of the call (fit, fit + transform, inverse_transform, update), and
``speed-up`` is umap-learn's time over unimap's.

densMAP rows (``densmap=True, output_dens=True`` on the training points): Spearman
correlation of the embedding's local radii with the data's, by each library's own
``rad_orig``/``rad_emb`` and by two measures applied to both (:func:`embedding_radii`
against unimap's ``rad_orig``, which equals umap-learn's up to float rounding): squared
distances (unimap's ``rad_emb_``; "one measure") and plain distances (umap-learn's
``rad_emb``, whose ``rad_orig`` squares them and whose ``rad_emb`` does not); and of the
two libraries' embedding radii with each other. ``dropin_seeds.py`` repeats the
seed-sensitive columns over 16 seeds.

Examples::

    python benchmarks/dropin.py                         # iris, digits, MNIST-70k
    python benchmarks/dropin.py --datasets iris,digits  # quick
    python benchmarks/dropin.py --mnist-n 20000 --no-save
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results" / "dropin.md"
INVERSE_POINTS = 1000  # umap-learn's inverse_transform costs seconds per hundred points


def load(name: str, mnist_n: int | None):
    from sklearn.datasets import load_digits, load_iris

    if name == "iris":
        X, y = load_iris(return_X_y=True)
    elif name == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        from unimap.datasets import load_mnist

        X, y = load_mnist(n_samples=mnist_n)
    return np.asarray(X, dtype=np.float32), np.asarray(y)


def split(X, y, seed=0):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=0.2, stratify=y, random_state=seed)


def make(lib: str):
    if lib == "unimap":
        import unimap

        return unimap.UMAP(random_state=0)
    import umap

    return umap.UMAP(random_state=0)


def ari(embedding, labels):
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    k = len(np.unique(labels))
    return adjusted_rand_score(labels, KMeans(k, n_init=5, random_state=0).fit_predict(embedding))


def knn_score(train_emb, train_labels, test_emb, test_labels):
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(10).fit(train_emb, train_labels).score(test_emb, test_labels)


def timed(fn):
    tic = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - tic


def run_lib(lib, data):
    """Every task of one library; a task that raises gets NaN columns and its error."""
    rows, errors = {}, {}
    for task in (_unsupervised, _supervised, _semi_supervised, _update):
        try:
            rows.update(task(lib, data))
        except Exception as exc:  # a peer's failure is a result too
            name = task.__name__.strip("_").replace("_", "-")
            errors[name] = f"{type(exc).__name__}: {exc}"
            print(f"{lib} {name} failed: {errors[name]}", flush=True)
    return rows, errors


def _unsupervised(lib, data):
    X_tr, X_te, y_tr, y_te = data
    rows = {}
    # unsupervised reference, also the model inverted below
    model = make(lib)
    emb, t_fit = timed(lambda: model.fit_transform(X_tr))
    placed, t_tr = timed(lambda: model.transform(X_te))
    rows["unsupervised"] = {"ARI": ari(emb, y_tr), "held-out acc": knn_score(emb, y_tr, placed,
                                                                              y_te),
                            "s": t_fit + t_tr}
    m = min(INVERSE_POINTS, len(X_te))
    rebuilt, t_inv = timed(lambda: model.inverse_transform(placed[:m]))
    baseline = np.linalg.norm(X_te[:m] - X_tr.mean(axis=0), axis=1).mean()
    rows["inverse"] = {"error": float(np.linalg.norm(rebuilt - X_te[:m], axis=1).mean()
                                      / baseline), "s": t_inv}
    return rows


def _supervised(lib, data):
    X_tr, X_te, y_tr, y_te = data
    rows = {}
    model = make(lib)
    emb, t_fit = timed(lambda: model.fit_transform(X_tr, y_tr))
    placed, t_tr = timed(lambda: model.transform(X_te))
    rows["supervised"] = {"ARI": ari(emb, y_tr), "held-out acc": knn_score(emb, y_tr, placed,
                                                                            y_te),
                          "s": t_fit + t_tr}
    return rows


def _semi_supervised(lib, data):
    X_tr, X_te, y_tr, y_te = data
    rows = {}
    hidden = np.random.default_rng(0).random(len(y_tr)) < 0.5
    y_semi = np.where(hidden, -1, y_tr)
    model = make(lib)
    emb, t_fit = timed(lambda: model.fit_transform(X_tr, y_semi))
    placed, t_tr = timed(lambda: model.transform(X_te))
    rows["semi-supervised"] = {
        "ARI": ari(emb, y_tr),
        "unlabelled acc": knn_score(emb[~hidden], y_tr[~hidden], emb[hidden], y_tr[hidden]),
        "held-out acc": knn_score(emb, y_tr, placed, y_te), "s": t_fit + t_tr}
    return rows


def _update(lib, data):
    """Fit on half the training points, ``update`` with the other half; a refit on all."""
    from unimap.metrics import knn_accuracy

    X_tr, _, y_tr, _ = data
    rows = {}
    half = len(X_tr) // 2
    model = make(lib)
    model.fit(X_tr[:half])
    _, t_upd = timed(lambda: model.update(X_tr[half:]))
    refit = make(lib)
    refit_emb, t_refit = timed(lambda: refit.fit_transform(X_tr))
    rows["update"] = {"acc": knn_accuracy(model.embedding_, y_tr),
                      "refit acc": knn_accuracy(refit_emb, y_tr), "s": t_upd,
                      "refit s": t_refit}
    return rows


def embedding_radii(embedding, squared=True):
    """One measure for both libraries' embeddings: unimap's log local radii
    (``unimap.affinity.density.log_radii``) over the embedding's own 15-NN fuzzy graph, of
    squared distances (unimap's ``rad_emb_``, the densMAP paper's definition) or, given
    their square roots, of plain ones (umap-learn's ``rad_emb``, whose ``rad_orig`` squares
    them)."""
    from unimap.affinity.density import log_radii
    from unimap.affinity.fuzzy import fuzzy_simplicial_set
    from unimap.neighbors.graph import NeighborIndex

    knn = NeighborIndex("euclidean", "auto", random_state=0).build(embedding).knn_graph(15)
    graph, _, _ = fuzzy_simplicial_set(knn.indices, knn.distances)
    dists = knn.distances if squared else np.sqrt(knn.distances)
    return log_radii(graph, knn.indices, dists)


def densmap_rows(X_tr):
    """densMAP of both libraries: Spearman correlation of the embedding's local radii with
    the data's (each library's own ``output_dens`` radii, and one measure for both), and of
    the two embeddings' radii with each other."""
    import umap
    from scipy.stats import spearmanr

    import unimap

    ours = unimap.UMAP(random_state=0, densmap=True, output_dens=True)
    (emb, r_orig, r_emb), t_ours = timed(lambda: ours.fit_transform(X_tr))
    theirs = umap.UMAP(random_state=0, densmap=True, output_dens=True)
    (emb_u, r_orig_u, r_emb_u), t_theirs = timed(lambda: theirs.fit_transform(X_tr))
    common, common_u = embedding_radii(emb), embedding_radii(emb_u)
    row = {"radii rho (own)": (spearmanr(r_orig, r_emb).statistic,
                               spearmanr(r_orig_u, r_emb_u).statistic),
           "radii rho (one measure)": (spearmanr(r_orig, common).statistic,
                                       spearmanr(r_orig, common_u).statistic),
           "radii rho (umap-learn's measure)": (
               spearmanr(r_orig, embedding_radii(emb, squared=False)).statistic,
               spearmanr(r_orig, embedding_radii(emb_u, squared=False)).statistic),
           "rho with the other's radii": (spearmanr(common, common_u).statistic,) * 2}
    return ({k: v[0] for k, v in row.items()} | {"s": t_ours},
            {k: v[1] for k, v in row.items()} | {"s": t_theirs})


def warm_up():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8)).astype(np.float32)
    y = rng.integers(0, 3, 300)
    for lib in ("unimap", "umap-learn"):
        make(lib).fit(X[:200], y[:200])
        model = make(lib)
        model.fit(X[:200])
        model.transform(X[200:])
        model.inverse_transform(model.embedding_[:5])
        model.update(X[200:])
    import umap

    import unimap

    unimap.UMAP(densmap=True, output_dens=True, n_epochs=20).fit(X)
    umap.UMAP(densmap=True, output_dens=True, n_epochs=20).fit(X)


def host_state() -> str:
    load = os.getloadavg()
    steal = "?"
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        steal = f"{100 * fields[7] / max(sum(fields), 1):.1f}% since boot"
    except (OSError, IndexError, ValueError):
        pass
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
            f"average {load[0]:.1f} / {load[1]:.1f}, steal {steal}")


def table(results) -> str:
    lines = ["| data | task | column | unimap | umap-learn | unimap s | umap-learn s | "
             "speed-up |", "|---|---|---|---|---|---|---|---|"]
    failed = "failed"
    for data, by_lib in results.items():
        ours, theirs = by_lib["unimap"][0], by_lib["umap-learn"][0]
        for task in dict.fromkeys([*ours, *theirs]):
            row, other_row = ours.get(task), theirs.get(task)
            for column in (row or other_row):
                if column in ("s", "refit s"):
                    continue
                time_key = "refit s" if column.startswith("refit") else "s"
                cells = []
                for r in (row, other_row):
                    cells.append((f"{r[column]:.4f}", f"{r[time_key]:.2f}") if r else
                                 (failed, failed))
                ratio = (f"{other_row[time_key] / row[time_key]:.1f}x" if row and other_row
                         else "")
                lines.append(f"| {data} | {task} | {column} | {cells[0][0]} | {cells[1][0]} | "
                             f"{cells[0][1]} | {cells[1][1]} | {ratio} |")
    for data, by_lib in results.items():
        for lib, (_, errors) in by_lib.items():
            for task, error in errors.items():
                lines.append(f"\n{lib} {task} on {data} failed: `{error}`")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="iris,digits,mnist")
    parser.add_argument("--mnist-n", type=int, default=None)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import umap

    import unimap

    before = host_state()
    warm_up()
    results = {}
    for name in args.datasets.split(","):
        data = split(*load(name, args.mnist_n))
        label = name if name != "mnist" or not args.mnist_n else f"mnist-{args.mnist_n}"
        results[label] = {lib: run_lib(lib, data) for lib in ("unimap", "umap-learn")}
        try:
            ours, theirs = densmap_rows(data[0])
            results[label]["unimap"][0]["densMAP"] = ours
            results[label]["umap-learn"][0]["densMAP"] = theirs
        except Exception as exc:  # reported, not fatal
            results[label]["umap-learn"][1]["densMAP"] = f"{type(exc).__name__}: {exc}"
        print(table({label: results[label]}), flush=True)
    text = (f"# unimap against umap-learn: supervised, semi-supervised, inverse_transform, "
            f"update\n\n`python benchmarks/dropin.py {' '.join(os.sys.argv[1:])}`; unimap "
            f"{unimap.__version__}, umap-learn {umap.__version__}, both `random_state=0`, "
            f"in one process after a warm-up fit.\n\nHost before: {before}. After: "
            f"{host_state()}.\n\n{table(results)}\n\nSee the script's docstring for what each "
            "column measures.\n")
    print(text)
    if not args.no_save:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
