"""``unimap evaluate``: score an embedding of a data set with ``unimap.metrics``
(trustworthiness, kNN recall, triplet accuracy, distance correlation; the 10-NN accuracy
when labels are given), as a table or JSON.
"""

from __future__ import annotations

import json

import scipy.sparse as sp

from unimap.cli.common import UsageError, _load_input, _read_embedding, strict_json


def _evaluate(args) -> int:
    from unimap import metrics

    if args.embedding.lower().endswith(".h5ad") and args.embedding_rep is None:
        raise UsageError("an .h5ad embedding needs --embedding-rep KEY (e.g. X_umap)")
    X, labels, _ = _load_input(args)
    embedding = _read_embedding(args.embedding, args.embedding_rep)
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
