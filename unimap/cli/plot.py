"""``unimap plot`` and ``unimap compare``: draw an embedding (a static figure or an offline
interactive ``.html`` map, coloured and annotated by columns of a table), and embed one data
set with several methods side by side with their time and quality. Both draw with
:mod:`unimap.plotting`. Their arguments: :func:`add_plot_parser`, :func:`add_compare_parser`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

import numpy as np

from unimap.cli.common import (
    DIMS_HELP,
    DROP_HELP,
    JOBS_HELP,
    LABEL_HELP,
    LEGEND_HELP,
    PALETTE_HELP,
    SEED_HELP,
    USE_REP_HELP,
    UsageError,
    file_path,
    load_input,
    read_embedding,
    refuse_overwriting_inputs,
)
from unimap.cli.embed import METHOD_OPTIONS, chosen_variant, make_estimator, method_names
from unimap.cli.picture import (
    LEGEND_LOCATIONS,
    check_can_draw,
    check_dims,
    draw,
    parse_dims,
    parse_palette,
    picture_path,
    two_columns,
)
from unimap.io.atomic import atomic_path
from unimap.io.read import column_names, read_columns, read_labels

# ---- unimap plot ----

# obsm keys of 2-D layouts by other tools (after "X_"); with the keys of unimap's neighbour
# embeddings, the layouts --basis chooses from by default
_OTHER_LAYOUTS = ("draw_graph", "densmap", "phate", "mde", "trimap", "pacmap", "spring")


def _layout_prefixes() -> tuple[str, ...]:
    from unimap.methods import registry

    ours = (key.replace("-", "_") for key, (declared, _) in registry.variants().items()
            if declared.neighbor_index)
    return (*ours, *_OTHER_LAYOUTS)


def _split_names(text: str | None) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()] if text else []


def _stored_embedding(path: str, basis: str | None) -> tuple[np.ndarray, str]:
    """The embedding an ``.h5ad`` stores in ``obsm``: ``basis`` (``X_umap``, or scanpy's
    ``umap``), or else the one layout among its keys. The error lists the keys: a ValueError
    when ``basis`` is not one, a UsageError when there are no or several layouts to choose
    from."""
    from unimap.io.anndata_input import representation

    try:
        import anndata
    except ImportError:
        raise ImportError(f'reading {path} needs anndata: pip install "unimap[anndata]"'
                          ) from None
    try:
        adata = anndata.read_h5ad(path, backed="r")  # obsm in memory, X left on disk
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read {path} as .h5ad: {exc}") from None
    try:
        shapes = {str(key): getattr(adata.obsm[key], "shape", ()) for key in adata.obsm}
        listed = ", ".join(f"{key} ({' × '.join(map(str, shape))})"
                           for key, shape in shapes.items()) or "none"
        if basis is not None:
            key = basis if basis in shapes or f"X_{basis}" not in shapes else f"X_{basis}"
            if key not in shapes:
                raise ValueError(f"{path} has no obsm[{basis!r}]; its obsm: {listed}")
        else:
            layouts = [key for key, shape in shapes.items() if len(shape) == 2
                       and shape[1] >= 2 and key.lower().removeprefix("x_").startswith(
                           _layout_prefixes())]
            if len(layouts) != 1:
                found = "no embedding" if not layouts else "several embeddings"
                raise UsageError(f"{path} has {found} to draw by default; choose one with "
                                 f"--basis KEY; its obsm: {listed}")
            key = layouts[0]
        X, _, _ = representation(adata, key)
        return np.asarray(X.toarray() if hasattr(X, "toarray") else X), key
    finally:
        if getattr(adata, "file", None) is not None:
            adata.file.close()


def _plot(args) -> int:
    out = picture_path(args.output)
    suffix = out.suffix.lower()
    hover = _split_names(args.hover)
    is_h5ad = Path(args.embedding).suffix.lower() == ".h5ad"
    if args.basis and not is_h5ad:
        raise UsageError("--basis names an obsm key of an .h5ad embedding file")
    # an .h5ad holds its own metadata: its obs columns, unless --data names another table
    data = args.data or (args.embedding if is_h5ad else None)
    if suffix != ".html" and (hover or args.id_column):
        raise UsageError("--hover and --id-column apply to .html output")
    if (hover or args.id_column) and not data:
        raise UsageError("--hover and --id-column name columns of --data TABLE")
    if args.color_by and not (data or args.labels):
        raise UsageError("--color-by names a column of --data TABLE (or 'label' with --labels)")
    dims = parse_dims(args.dims)
    palette = parse_palette(args.palette)
    file_path(args.output, "--output")
    refuse_overwriting_inputs({"--output": out}, [args.embedding, args.labels, args.data])
    check_can_draw(out, "or write the interactive map instead: -o map.html (no extra)")
    if not Path(args.embedding).is_file():
        raise FileNotFoundError(f"no embedding file {args.embedding!r}")
    if is_h5ad:
        embedding, basis = _stored_embedding(args.embedding, args.basis)
        source = f"{args.embedding} obsm[{basis!r}]"
    else:
        embedding, source = read_embedding(args.embedding, None), args.embedding
    if embedding.ndim != 2:
        raise ValueError(f"{source}: an embedding is a table, got shape {embedding.shape}")
    check_dims(embedding.shape[1], dims, source, is_file=True)
    embedding = two_columns(embedding, dims)
    n = embedding.shape[0]
    columns: dict[str, np.ndarray] = {}
    if args.labels:
        columns["label"] = read_labels(args.labels, n)
    if data:
        wanted = [name for name in dict.fromkeys([*hover, args.color_by, args.id_column])
                  if name and not (name == "label" and args.labels)]
        if suffix == ".html" and not hover:  # the table's columns, up to 12
            wanted = list(dict.fromkeys([*wanted, *column_names(data)]))[:12]
        columns.update(read_columns(data, wanted))
    for name, values in columns.items():
        if len(values) != n:
            raise ValueError(f"column {name!r} has {len(values)} rows but the embedding has "
                             f"{n}; they must correspond row for row")
    color_by = args.color_by or ("label" if "label" in columns else None)
    ids = columns.get(args.id_column) if args.id_column else None
    if args.id_column and args.id_column not in (*hover, color_by):
        del columns[args.id_column]  # shown as the tooltip's id, not again as a column
    title = args.title or Path(args.embedding).stem
    axis = "Dim"
    if is_h5ad:  # X_umap -> "UMAP 1"/"UMAP 2", as scanpy labels its axes
        axis = basis.removeprefix("X_").upper()
    draw(out, embedding, title, columns=columns, color_by=color_by, hover=hover or None,
         ids=ids, id_name=args.id_column or "row", palette=palette,
         legend_loc=args.legend_loc, basis=axis)
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
    known = method_names()
    unknown = [m for m in methods if m not in known]
    if unknown or not methods:
        raise UsageError(f"--methods takes a comma-separated list of {', '.join(known)}"
                         f"; got {args.methods!r}")
    if len(set(methods)) != len(methods):
        raise UsageError(f"--methods lists a method twice: {args.methods!r}")
    file_path(args.output, "--output")
    refuse_overwriting_inputs({"--output": out}, [args.input, args.labels])
    check_can_draw(out, "then run the comparison again")
    X, labels, name = load_input(args)
    saved = {}  # each method's embedding file, checked against every input before any fit
    if args.save_embeddings:
        folder = Path(args.save_embeddings)
        saved = {method: file_path(str(folder / f"{name}_{method}.npy"), "--save-embeddings")
                 for method in methods}
        refuse_overwriting_inputs({f"--save-embeddings ({method})": target
                                   for method, target in saved.items()},
                                  [args.input, args.labels])
    k, seed = 15, args.random_state
    sample = min(args.sample_size, X.shape[0])
    embeddings, rows = {}, []
    for method in methods:
        options = Namespace(**dict.fromkeys(METHOD_OPTIONS), method=method, n_components=2,
                            random_state=seed, n_jobs=args.n_jobs, verbose=False, quiet=True)
        if "n_epochs" in chosen_variant(method)[1].options:
            options.n_epochs = args.n_epochs
        estimator = make_estimator(options)
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
    import unimap.plotting as plotting

    with contextlib.ExitStack() as stack:  # nothing is renamed into place unless all succeed
        for method, embedding in zip(methods, embeddings.values(), strict=True):
            if method in saved:
                with open(stack.enter_context(atomic_path(saved[method])), "wb") as fh:
                    np.save(fh, embedding)
        plotting.save_comparison(out, embeddings, labels)
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


# ---- their arguments ----

def add_plot_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``plot`` and its arguments to ``subparsers`` (of
    :func:`unimap.cli.main.build_parser`)."""
    plot = subparsers.add_parser("plot", help="draw an embedding: a static figure "
                                 "(.png/.svg/.pdf) or an interactive map (.html, one offline "
                                 "file)")
    plot.add_argument("embedding", help="an embedding, one row per point (.npy, .npz, .csv, "
                      ".tsv, .parquet), or an .h5ad with one in obsm (its obs columns are "
                      "the --data)")
    plot.add_argument("-o", "--output", default="map.html", metavar="FILE",
                      help="the picture: .png, .svg, .pdf (these need matplotlib: the 'plot' "
                      "extra) or .html, the interactive map (default map.html)")
    plot.add_argument("--basis", metavar="KEY", help=".h5ad: the obsm key to draw (X_umap, or "
                      "umap); default: the one embedding among X_umap, X_tsne, X_gdr, "
                      "X_draw_graph_*, ... (never X_pca); an error lists the keys when there "
                      "are none or several")
    plot.add_argument("--dims", metavar="I,J", help=DIMS_HELP)
    plot.add_argument("--palette", metavar="NAME|C1,C2,...", help=PALETTE_HELP)
    plot.add_argument("--legend-loc", choices=LEGEND_LOCATIONS, default="right margin",
                      help=LEGEND_HELP)
    plot.add_argument("--labels", help="a .npy/.csv file of labels (the column 'label')")
    plot.add_argument("--data", metavar="TABLE",
                      help="a table (.csv/.tsv/.parquet/.h5ad/.npy) row for row with the "
                      "embedding, for --color-by, --hover and --id-column (default: the "
                      "embedding's .h5ad itself)")
    plot.add_argument("--color-by", help="the column to colour by (default: label)")
    plot.add_argument("--hover", help=".html: comma-separated --data columns shown on hover "
                      "(default: the table's first 12)")
    plot.add_argument("--id-column", help=".html: the --data column that identifies a point "
                      "(default: its row number)")
    plot.add_argument("--title", help="the picture's title (default: the embedding file's "
                      "name)")
    plot.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    plot.set_defaults(run=_plot)
    return plot


def add_compare_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``compare`` and its arguments to ``subparsers``; the help of ``--methods`` lists the
    declared methods (:func:`unimap.methods.registry.variants`)."""
    from unimap.methods import registry

    variants = registry.variants()
    compare = subparsers.add_parser("compare", help="embed one data set with several methods (same "
                                    "seed): a side-by-side figure and a table of time and quality")
    compare.add_argument("input", help="a table (.npy, .npz, .csv, .tsv, .parquet, .h5ad), or "
                         "a built-in dataset")
    compare.add_argument("--use-rep", help=USE_REP_HELP)
    compare.add_argument("--methods", default="umap,tsne,gdr",
                         help=f"comma-separated, of {', '.join(variants)} "
                         "(default umap,tsne,gdr)")
    compare.add_argument("-o", "--output", default="compare.png",
                         help="the figure (.png/.svg/.pdf)")
    compare.add_argument("--label-column", help=LABEL_HELP)
    compare.add_argument("--drop-columns", metavar="NAMES", help=DROP_HELP)
    compare.add_argument("--labels", help="a .npy/.csv file of labels (adds 10-NN accuracy)")
    compare.add_argument("--n-epochs", type=int, help="epochs or iterations of every method "
                         "but pca; default: each method's")
    compare.add_argument("--sample-size", type=int, default=2000,
                         help="points the neighbourhood scores are estimated on (2000)")
    compare.add_argument("--random-state", type=int, default=0, help=SEED_HELP)
    compare.add_argument("--n-jobs", type=int, default=-1, help=JOBS_HELP)
    compare.add_argument("--save-embeddings", metavar="DIR",
                         help="also write each embedding to DIR/<data>_<method>.npy")
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    compare.set_defaults(run=_compare)
    return compare
