"""A user-defined metric (a numba function), unimap against umap-learn.

The same ``@numba.njit`` taxicab distance (a loop over the coordinates) given as ``metric`` to
both libraries' ``UMAP``, on digits (1,797 rows: both search exactly) and the first 10,000 rows
of MNIST (both search with pynndescent). 80/20 split; the held-out rows placed by
``transform``. Each library runs in a fresh process per data set: ``first s`` is its first
fit there (compiling the user's function and the kernels that call it), ``warm s`` the median
of the seeded fits after it. ``held-out acc``: 10-NN accuracy of the placed rows against the
training embedding, mean over seeds. umap-learn runs on one thread when seeded; unimap on all
cores.

Examples::

    python benchmarks/custom_metric.py             # 3 seeds, writes results/custom_metric.md
    python benchmarks/custom_metric.py --seeds 1 --no-save
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np

RESULTS = Path(__file__).parent / "results" / "custom_metric.md"


@numba.njit
def taxicab(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += abs(a[i] - b[i])
    return total


def load(name: str):
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
    else:
        from unimap.datasets import load_mnist

        X, y = load_mnist(n_samples=10_000)
    X = np.asarray(X, np.float32)
    cut = int(0.8 * len(X))
    return X[:cut], np.asarray(y[:cut]), X[cut:], np.asarray(y[cut:])


def held_out_accuracy(train, y_train, placed, y_placed, k=10):
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(k).fit(train, y_train).score(placed, y_placed))


def worker(lib: str, data: str, seeds: int) -> dict:
    warnings.filterwarnings("ignore")
    X, y, X_new, y_new = load(data)
    if lib == "unimap":
        from unimap import UMAP
    else:
        from umap import UMAP
    runs = []
    for seed in [0, *range(seeds)]:  # seed 0 twice: the first fit compiles
        model = UMAP(metric=taxicab, random_state=seed)
        tic = time.perf_counter()
        model.fit(X)
        seconds = time.perf_counter() - tic
        runs.append((seconds, held_out_accuracy(model.embedding_, y, model.transform(X_new),
                                                y_new)))
    return {"first": runs[0][0], "warm": float(np.median([s for s, _ in runs[1:]])),
            "acc": float(np.mean([a for _, a in runs[1:]]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", default="digits,mnist")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker, args.seeds)))
        return
    import umap
    from dropin import host_state

    import unimap

    before = host_state()
    rows = []
    for data in args.datasets.split(","):
        cells = {}
        for lib in ("unimap", "umap-learn"):
            out = subprocess.run([sys.executable, __file__, "--seeds", str(args.seeds),
                                  "--worker", lib, data], capture_output=True, text=True,
                                 check=True, cwd=Path(__file__).parent)
            cells[lib] = json.loads(out.stdout.strip().splitlines()[-1])
        a, b = cells["unimap"], cells["umap-learn"]
        rows.append(f"| {data} | {a['acc']:.4f} | {b['acc']:.4f} | {a['first']:.2f} | "
                    f"{b['first']:.2f} | {a['warm']:.2f} | {b['warm']:.2f} | "
                    f"{b['warm'] / a['warm']:.1f}x |")
        print(rows[-1], flush=True)
    text = (f"# A user-defined metric: unimap against umap-learn\n\n`python benchmarks/"
            f"custom_metric.py {' '.join(sys.argv[1:])}`; unimap {unimap.__version__}, "
            f"umap-learn {umap.__version__}; {args.seeds} seeds.\n\nHost before: {before}. "
            f"After: {host_state()}.\n\n| data | unimap held-out acc | umap-learn held-out acc "
            "| unimap first s | umap-learn first s | unimap warm s | umap-learn warm s | "
            "warm speed-up |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nSee the script's docstring for what each column measures.\n")
    print(text)
    if not args.no_save:
        RESULTS.write_text(text)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
