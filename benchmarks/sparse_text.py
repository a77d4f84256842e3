"""Sparse rows too large to densify: a bag-of-words corpus, unimap against umap-learn.

A synthetic corpus of ``--n`` documents over a 100,000-word vocabulary (float32 dense: 7.5 GiB
at 20,000 documents, over unimap's 4 GiB densification limit): 20 topics, each concentrated on
its own 2,000 words; a document draws 60 words, 80% from its topic and 20% from the whole
vocabulary; entries ``log1p(count)``. Neither library densifies the rows: umap-learn indexes
them with pynndescent's sparse cosine kernel; unimap searches them exactly by sparse products
up to 20,000 training rows, with pynndescent beyond (the 60,000-document row), and places new
rows by exact queries up to 100,000 training rows. Each library
runs in a fresh process: ``s`` is its fit (first call, compiling included, as a user's script
would run it). ``acc``: 5-fold 10-NN accuracy of the topics in the embedding
(``unimap.metrics.knn_accuracy``); ``held-out acc``: the last 10% of the documents placed by
``transform``, 10-NN accuracy against the training embedding.

Examples::

    python benchmarks/sparse_text.py             # writes results/sparse_text.md
    python benchmarks/sparse_text.py --n 5000 --no-save
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

RESULTS = Path(__file__).parent / "results" / "sparse_text.md"
VOCABULARY, TOPICS, TOPIC_WORDS, WORDS_PER_DOCUMENT = 100_000, 20, 2_000, 60


def corpus(n: int, seed: int = 0) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    topic_words = rng.choice(VOCABULARY, size=(TOPICS, TOPIC_WORDS), replace=False)
    labels = rng.integers(TOPICS, size=n)
    own = rng.random((n, WORDS_PER_DOCUMENT)) < 0.8
    words = np.where(own, topic_words[labels[:, None],
                                      rng.integers(TOPIC_WORDS, size=(n, WORDS_PER_DOCUMENT))],
                     rng.integers(VOCABULARY, size=(n, WORDS_PER_DOCUMENT)))
    rows = np.repeat(np.arange(n), WORDS_PER_DOCUMENT)
    X = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, words.ravel())),
                      shape=(n, VOCABULARY))
    X.sum_duplicates()
    X.data = np.log1p(X.data)
    return X, labels


def worker(lib: str, n: int) -> dict:
    warnings.filterwarnings("ignore")
    from sklearn.neighbors import KNeighborsClassifier

    from unimap.metrics import knn_accuracy

    X, y = corpus(n)
    cut = int(0.9 * n)
    if lib == "unimap":
        from unimap import UMAP
    else:
        from umap import UMAP
    model = UMAP(metric="cosine", random_state=0)
    tic = time.perf_counter()
    model.fit(X[:cut])
    seconds = time.perf_counter() - tic
    placed = model.transform(X[cut:])
    held_out = KNeighborsClassifier(10).fit(model.embedding_, y[:cut]).score(placed, y[cut:])
    return {"s": seconds, "acc": knn_accuracy(model.embedding_, y[:cut]),
            "held": float(held_out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="20000,60000", help="corpus sizes, comma-separated")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, int(args.n))))
        return
    import umap
    from dropin import host_state

    import unimap

    before = host_state()
    rows = []
    for n in [int(v) for v in args.n.split(",")]:
        cells = {}
        for lib in ("unimap", "umap-learn"):
            out = subprocess.run([sys.executable, __file__, "--n", str(n), "--worker", lib],
                                 capture_output=True, text=True, check=True,
                                 cwd=Path(__file__).parent)
            cells[lib] = json.loads(out.stdout.strip().splitlines()[-1])
            print(n, lib, cells[lib], flush=True)
        a, b = cells["unimap"], cells["umap-learn"]
        X, _ = corpus(n)
        rows.append(f"| {n:,} | {X.nnz:,} | {X.shape[0] * X.shape[1] * 4 / 2**30:.1f} | "
                    f"{a['acc']:.4f} | {b['acc']:.4f} | {a['held']:.4f} | {b['held']:.4f} | "
                    f"{a['s']:.1f} | {b['s']:.1f} | {b['s'] / a['s']:.1f}x |")
    text = (f"# Sparse rows too large to densify: unimap against umap-learn\n\n`python "
            f"benchmarks/sparse_text.py {' '.join(sys.argv[1:])}`; unimap "
            f"{unimap.__version__}, umap-learn {umap.__version__}; documents x "
            f"{VOCABULARY:,} words; metric='cosine', seed 0.\n\n"
            f"Host before: {before}. After: {host_state()}.\n\n"
            "| documents | stored values | dense GiB | unimap 10-NN acc | umap-learn 10-NN acc "
            "| unimap held-out acc | umap-learn held-out acc | unimap fit s | umap-learn fit s "
            "| speed-up |\n|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nSee the script's docstring for the columns.\n")
    print(text)
    if not args.no_save:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
