"""``unimap evaluate``: score an embedding of a data set with ``unimap.metrics``
(trustworthiness, kNN recall, triplet accuracy, distance correlation; the 10-NN accuracy
when labels are given), as a table or JSON.
"""

from __future__ import annotations

import argparse
import json

import scipy.sparse as sp

from unimap.cli.common import (
    DROP_HELP,
    LABEL_HELP,
    SEED_HELP,
    USE_REP_HELP,
    UsageError,
    load_input,
    read_embedding,
    strict_json,
)


def _evaluate(args) -> int:
    from unimap import metrics

    if args.embedding.lower().endswith(".h5ad") and args.embedding_rep is None:
        raise UsageError("an .h5ad embedding needs --embedding-rep KEY (e.g. X_umap)")
    X, labels, _ = load_input(args)
    embedding = read_embedding(args.embedding, args.embedding_rep)
    if sp.issparse(X):
        X = X.toarray()
    if sp.issparse(embedding):
        embedding = embedding.toarray()
    if embedding.shape[0] != X.shape[0]:
        raise ValueError(f"the data has {X.shape[0]} rows but the embedding has "
                         f"{embedding.shape[0]}; they must correspond row for row")
    k, seed = args.n_neighbors, args.random_state
    sample = min(args.sample_size, X.shape[0])
    trust = metrics.trustworthiness_sampled(X, embedding, n_neighbors=k, n_samples=sample,
                                            random_state=seed)
    scores = {
        "n_samples": int(X.shape[0]),
        f"trustworthiness@{k}": trust.value,
        f"trustworthiness@{k}_stderr": trust.stderr,
        f"knn_recall@{k}": metrics.knn_recall(X, embedding, k, sample_size=sample,
                                               random_state=seed),
        "triplet_accuracy": metrics.triplet_accuracy(X, embedding, random_state=seed),
        "distance_correlation": metrics.distance_correlation(X, embedding, random_state=seed),
    }
    if labels is not None:
        scores["knn_accuracy@10"] = metrics.knn_accuracy_loo(embedding, labels, 10)
    if args.json:
        print(json.dumps(strict_json(scores), indent=2, allow_nan=False))  # NaN -> null
    else:
        for name, value in scores.items():
            print(f"{name:<28} {value:.4f}" if isinstance(value, float) else
                  f"{name:<28} {value}")
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``evaluate`` and its arguments to ``subparsers``."""
    evaluate = subparsers.add_parser("evaluate", help="score an embedding of a data set "
                                     "(unimap.metrics; labels add the 10-NN accuracy)")
    evaluate.add_argument("input", help="the data: a .npy/.npz/.csv/.tsv/.parquet/.h5ad file, "
                          "or a built-in dataset")
    evaluate.add_argument("embedding", help="its embedding, row for row (any input format)")
    evaluate.add_argument("--label-column", help=LABEL_HELP)
    evaluate.add_argument("--drop-columns", metavar="NAMES", help=DROP_HELP)
    evaluate.add_argument("--use-rep", help=USE_REP_HELP)
    evaluate.add_argument("--embedding-rep", help="the obsm key of an .h5ad embedding "
                          "(e.g. X_umap), or the array of an .npz one")
    evaluate.add_argument("--labels", help="a .npy/.csv file of labels")
    evaluate.add_argument("--n-neighbors", type=int, default=15,
                          help="the neighbourhood size the scores compare (default 15)")
    evaluate.add_argument("--sample-size", type=int, default=2000,
                          help="points the neighbourhood scores are estimated on (2000)")
    evaluate.add_argument("--random-state", type=int, default=0, help=SEED_HELP)
    evaluate.add_argument("--json", action="store_true", help="machine-readable output")
    evaluate.set_defaults(run=_evaluate)
    return evaluate
