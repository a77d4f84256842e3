"""``unimap plot`` and ``unimap compare``: draw an embedding (a static figure or an offline
interactive ``.html`` map, coloured and annotated by columns of a table), and embed one data
set with several methods side by side with their time and quality. Both draw with
:mod:`unimap.plotting`.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import numpy as np

from unimap.cli.common import UsageError, _load_input, _read_embedding
from unimap.cli.embed import _METHOD_OPTIONS, _make_estimator
from unimap.io.atomic import atomic_path
from unimap.io.read import column_names, read_columns, read_labels

# ---- unimap plot ----

_PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".html")


def _split_names(text: str | None) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()] if text else []


def _plot(args) -> int:
    out = Path(args.output)
    suffix = out.suffix.lower()
    if suffix not in _PLOT_SUFFIXES:
        raise UsageError(f"--output must end in {', '.join(_PLOT_SUFFIXES)}, got {out.name!r}")
    hover = _split_names(args.hover)
    if suffix != ".html" and (hover or args.id_column):
        raise UsageError("--hover and --id-column apply to .html output")
    if (hover or args.id_column) and not args.data:
        raise UsageError("--hover and --id-column name columns of --data TABLE")
    if args.color_by and not (args.data or args.labels):
        raise UsageError("--color-by names a column of --data TABLE (or 'label' with --labels)")
    embedding = _read_embedding(args.embedding, None)
    if embedding.ndim != 2 or embedding.shape[1] < 2:
        raise ValueError(f"{args.embedding}: an embedding needs at least 2 columns, got shape "
                         f"{embedding.shape}")
    n = embedding.shape[0]
    columns: dict[str, np.ndarray] = {}
    if args.labels:
        columns["label"] = read_labels(args.labels, n)
    if args.data:
        wanted = [name for name in dict.fromkeys([*hover, args.color_by, args.id_column])
                  if name and not (name == "label" and args.labels)]
        if suffix == ".html" and not hover:  # the table's columns, up to 12
            wanted = list(dict.fromkeys([*wanted, *column_names(args.data)]))[:12]
        columns.update(read_columns(args.data, wanted))
    for name, values in columns.items():
        if len(values) != n:
            raise ValueError(f"column {name!r} has {len(values)} rows but the embedding has "
                             f"{n}; they must correspond row for row")
    color_by = args.color_by or ("label" if "label" in columns else None)
    ids = columns.get(args.id_column) if args.id_column else None
    if args.id_column and args.id_column not in (*hover, color_by):
        del columns[args.id_column]  # shown as the tooltip's id, not again as a column
    title = args.title or Path(args.embedding).stem
    if suffix == ".html":
        from unimap.plotting.html_map import save_html

        save_html(out, embedding, columns=columns, ids=ids, color_by=color_by,
                  hover=hover or None, title=title, id_name=args.id_column or "row")
    else:
        from unimap.plotting.static import save_scatter

        save_scatter(out, embedding, columns[color_by] if color_by else None, title=title,
                     colorbar_label=color_by)
    if not args.quiet:
        print(f"wrote {out} ({n:,} points" + (f", coloured by {color_by}" if color_by else "")
              + ")")
    return 0


# ---- unimap compare ----

def _compare(args) -> int:
    from argparse import Namespace

    from unimap import metrics

    out = Path(args.output)
    if out.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise UsageError(f"--output must end in .png, .svg or .pdf, got {out.name!r}")
    methods = _split_names(args.methods)
    unknown = [m for m in methods if m not in _METHOD_OPTIONS]
    if unknown or not methods:
        raise UsageError(f"--methods takes a comma-separated list of {', '.join(_METHOD_OPTIONS)}"
                         f"; got {args.methods!r}")
    if len(set(methods)) != len(methods):
        raise UsageError(f"--methods lists a method twice: {args.methods!r}")
    X, labels, name = _load_input(args)
    k, seed = 15, args.random_state
    sample = min(args.sample_size, X.shape[0])
    embeddings, rows = {}, []
    for method in methods:
        options = Namespace(method=method, n_components=2, random_state=seed,
                            n_jobs=args.n_jobs, verbose=False, quiet=True, n_neighbors=None,
                            min_dist=None, perplexity=None, metric=None, metric_kwds=None,
                            target_weight=None, densmap=None,
                            n_epochs=None if method == "pca" else args.n_epochs)
        estimator = _make_estimator(options)
        start = time.perf_counter()
        embedding = estimator.fit_transform(X)
        seconds = time.perf_counter() - start
        row = {"method": method, "seconds": round(seconds, 3),
               f"trustworthiness@{k}": metrics.trustworthiness_sampled(
                   X, embedding, n_neighbors=k, n_samples=sample, random_state=seed).value,
               f"knn_recall@{k}": metrics.knn_recall(X, embedding, k, sample_size=sample,
                                                      random_state=seed)}
        if labels is not None:
            row["knn_accuracy@10"] = metrics.knn_accuracy_loo(embedding, labels, 10)
        rows.append(row)
        embeddings[f"{method.upper()}: {seconds:.1f} s, "
                   f"T={row[f'trustworthiness@{k}']:.3f}"] = embedding
    from unimap.plotting.static import save_comparison

    with contextlib.ExitStack() as stack:  # nothing is renamed into place unless all succeed
        if args.save_embeddings:
            folder = Path(args.save_embeddings)
            for method, embedding in zip(methods, embeddings.values(), strict=True):
                target = folder / f"{name}_{method}.npy"
                with open(stack.enter_context(atomic_path(target)), "wb") as fh:
                    np.save(fh, embedding)
        save_comparison(out, embeddings, labels)
    if args.json:
        print(json.dumps({"data": name, "n_samples": int(X.shape[0]),
                          "n_features": int(X.shape[1]), "results": rows,
                          "figure": str(out)}, indent=2))
        return 0
    headers = list(rows[0])
    print(f"{name}: {X.shape[0]:,} points × {X.shape[1]} features (seed {seed}; "
          f"neighbourhood scores on {sample} points)")
    print("  ".join(f"{h:>16}" if i else f"{h:<10}" for i, h in enumerate(headers)))
    for row in rows:
        print("  ".join(f"{row[h]:<10}" if i == 0 else f"{row[h]:>16.2f}" if i == 1 else
                        f"{row[h]:>16.4f}" for i, h in enumerate(headers)))
    print(f"wrote {out}")
    return 0
