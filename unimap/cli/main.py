"""The ``unimap`` command: embed high-dimensional data in 2-D (UMAP, t-SNE, GDR, PCA), draw it
and judge it.

``unimap embed INPUT -o map.png`` reads a table (``.npy``, ``.npz``, ``.csv``/``.tsv``,
``.parquet``, ``.h5ad``; :func:`unimap.io.read.read_table`) or a built-in dataset (``digits``,
``mnist``, ``blobs``), embeds it and writes the embedding (``.npy``, ``.csv``, ``.parquet``,
``.h5ad``; or into the input ``.h5ad`` with ``--write-back``), the model with
``--save-model``, and a picture (``.png``/``.svg``/``.pdf``, or the interactive ``.html`` map)
when ``-o`` names one or no other output is asked for (:mod:`unimap.cli.picture`).
``unimap transform MODEL INPUT -o out.npy`` places new points with a saved model. ``unimap
evaluate DATA EMBEDDING`` scores an embedding with ``unimap.metrics``. ``unimap plot EMBEDDING
-o map.html`` draws an embedding file or the embedding an ``.h5ad`` stores (.png/.svg/.pdf, or
an interactive offline .html map). ``unimap compare DATA --methods umap,tsne,gdr`` embeds with
several methods and prints their time and quality beside a side-by-side figure. ``unimap
info`` says what this
installation has. Files are written atomically: a failed run leaves no partial output.

This module holds the parser and the dispatch; each command lives in its own module
(:mod:`unimap.cli.embed`, ``transform``, ``evaluate``, ``info``, ``plot``), sharing
:mod:`unimap.cli.common` and, for pictures, :mod:`unimap.cli.picture`.
"""

from __future__ import annotations

import argparse
import sys

from unimap.cli.common import UsageError
from unimap.cli.embed import METHOD_OPTIONS, _embed, method_names
from unimap.cli.evaluate import _evaluate
from unimap.cli.info import _info, _precompile
from unimap.cli.picture import LEGEND_LOCATIONS, DrawingError
from unimap.cli.plot import _compare, _plot
from unimap.cli.transform import _transform
from unimap.runtime.device import DeviceUnavailableError

__all__ = ["build_parser", "main"]


_USE_REP_HELP = ("the data of an .h5ad: X or an obsm key (default X_pca when present, else X); "
                 "of an .npz: the array's name")
_LABEL_HELP = ("labels: a CSV column (name or 0-based index), a Parquet column, an .h5ad obs "
               "column, or an .npz array")
_SEED_HELP = "seed of the random numbers: the same seed gives the same result (default 0)"
_JOBS_HELP = "threads to use (default -1: all cores)"
_PALETTE_HELP = ("the colours of the categories: a matplotlib colour map name (tab20, Set2, "
                 "...) or colours separated by commas (default: a 102-colour palette that "
                 "keeps 50 categories apart)")
_LEGEND_HELP = ("static pictures: where the category names go: 'right margin' (default), "
                "'on data' (at each category's centre, as scanpy's legend_loc) or 'none'")
_DIMS_HELP = ("the two columns of the embedding to draw, counted from 0, e.g. 0,1 or 1,2 "
              "(needed when it has more than two)")
_DESCRIPTION = ("Embed high-dimensional data in 2-D (UMAP, t-SNE, GDR, PCA), draw it and judge "
                "it.")
_EPILOG = """examples:
  unimap embed cells.h5ad --label-column cell_type -o map.html
  unimap plot cells.h5ad --basis X_umap --color-by cell_type -o map.png

'unimap COMMAND --help' describes each command."""
_EMBED_DESCRIPTION = """Fit one method and write the embedding, and a picture of it.

What is written:
  the embedding  --embedding FILE; default: the picture's name with .npy, or
                 INPUT_METHOD.npy in the current folder without a picture; none with
                 --write-back alone (it goes into the input .h5ad)
  the model      --save-model FILE (for 'unimap transform')
  a picture      -o FILE (.png, .svg, .pdf, or .html: the interactive map); without -o,
                 INPUT_METHOD.png in the current folder (cells.h5ad -> cells_umap.png), but
                 only when no other output (--embedding, --write-back, --save-model) is
                 asked for; never with --no-plot

Every output is checked before the fit (a static picture needs matplotlib: pip install
"unimap[plot]"), no output replaces an input, and the embedding and the model are written
before the picture, so a failed picture loses neither."""


def _for(option: str, variants: dict, *, defaults: bool = True) -> str:
    """The methods that take ``option``, each with the default its declaration states."""
    return ", ".join(key + (f" (default {v.options[option]})"
                            if defaults and v.options[option] else "")
                     for key, (_, v) in variants.items() if option in v.options)


def build_parser() -> argparse.ArgumentParser:
    from unimap.methods import registry

    variants = registry.variants()  # the declared methods: built in, or loaded from elsewhere
    for key, (_, variant) in variants.items():
        unknown = set(variant.options) - set(METHOD_OPTIONS)
        if unknown:
            raise RuntimeError(f"method {key!r} declares options the command line does not "
                               f"have: {sorted(unknown)} (it has {list(METHOD_OPTIONS)})")
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="unimap", description=_DESCRIPTION, epilog=_EPILOG,
                                     formatter_class=raw)
    sub = parser.add_subparsers(dest="command", required=True)
    embed = sub.add_parser("embed", help="embed a table or built-in dataset; write the "
                           "embedding and a picture", description=_EMBED_DESCRIPTION,
                           formatter_class=raw)
    embed.add_argument("input", help="a .npy/.npz/.csv/.tsv/.parquet/.h5ad file, or a built-in "
                       "dataset: digits, mnist, blobs")
    embed.add_argument("-o", "--output", metavar="FILE",
                       help="the picture: .png, .svg, .pdf (these need matplotlib: the 'plot' "
                       "extra) or .html, the interactive map; default: INPUT_METHOD.png in the "
                       "current folder when no other output is asked for")
    embed.add_argument("--no-plot", action="store_true",
                       help="write no picture (only the embedding, and the model if asked)")
    embed.add_argument("--dims", metavar="I,J", help=_DIMS_HELP)
    embed.add_argument("--palette", metavar="NAME|C1,C2,...", help=_PALETTE_HELP)
    embed.add_argument("--legend-loc", choices=LEGEND_LOCATIONS, default="right margin",
                       help=_LEGEND_HELP)
    embed.add_argument("--embedding", metavar="FILE",
                       help="embedding file (.npy, .csv, .tsv, .parquet or .h5ad); default: "
                       "the picture's name with .npy, or INPUT_METHOD.npy in the current "
                       "folder (with .METHOD.npy where that would be the input; none with "
                       "--write-back)")
    embed.add_argument("--write-back", action="store_true",
                       help="write the embedding into the input .h5ad: obsm['X_<method>'] and "
                       "the parameters in uns['<method>'] (the file is rewritten atomically)")
    embed.add_argument("--use-rep", help=_USE_REP_HELP)
    embed.add_argument("--method", choices=method_names(), default="umap",
                       help="; ".join(f"{v.key}: {v.summary}" for _, v in variants.values()))
    embed.add_argument("--label-column", help=_LABEL_HELP)
    embed.add_argument("--labels", help="a .npy/.csv file of labels to colour by")
    embed.add_argument("--n-neighbors", type=int, help=_for("n_neighbors", variants))
    embed.add_argument("--n-components", type=int, default=2,
                       help="dimensions of the embedding (default 2; a picture of more needs "
                       "--dims)")
    embed.add_argument("--min-dist", type=float, help=_for("min_dist", variants))
    embed.add_argument("--perplexity", type=float, help=_for("perplexity", variants))
    embed.add_argument("--metric", help=_for("metric", variants) + "; also chebyshev, "
                       "minkowski, canberra, braycurtis, hamming, jaccard, dice, hellinger, "
                       "haversine, sqeuclidean, l1, l2")
    embed.add_argument("--metric-kwds", help="the metric's parameters as JSON, e.g. "
                       "'{\"p\": 3}' for minkowski (" + _for("metric_kwds", variants) + ")")
    embed.add_argument("--disconnection-distance", type=float,
                       help=_for("disconnection_distance", variants, defaults=False)
                       + ": cut the neighbour edges at least this long "
                       "(default: 2 for cosine and correlation, 1 for hellinger, jaccard and "
                       "dice, else none)")
    embed.add_argument("--supervised", action="store_true",
                       help=", ".join(k for k, (_, v) in variants.items() if v.supervised)
                       + ": fit with the labels (--labels or "
                       "--label-column) as y; -1 or empty entries are unlabelled")
    embed.add_argument("--densmap", action="store_true", default=None,
                       help=_for("densmap", variants, defaults=False)
                       + ": densMAP, which keeps the data's local densities")
    embed.add_argument("--target-weight", type=float,
                       help="with --supervised: how much the labels count, 0 to 1 (0.5)")
    embed.add_argument("--n-epochs", type=int, help="epochs or iterations of "
                       + _for("n_epochs", variants, defaults=False) + "; default: the method's")
    embed.add_argument("--random-state", type=int, default=0, help=_SEED_HELP)
    embed.add_argument("--n-jobs", type=int, default=-1, help=_JOBS_HELP)
    embed.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                       help="where the phases with CUDA kernels run (all but pca): auto "
                       "(default: the GPU when the 'gpu' extra and a GPU are present), cpu, cuda")
    embed.add_argument("--max-memory", default="available",
                       help="refuse a fit whose estimated peak memory exceeds this: 'available' "
                       "(default), a size such as 8GB, or 'none' (no check)")
    output = embed.add_mutually_exclusive_group()
    output.add_argument("-v", "--verbose", action="store_true",
                        help="phase lines and progress bars (the default on a terminal)")
    output.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    output.add_argument("--json", action="store_true",
                        help="print a machine-readable summary (timings, parameters, files)")
    embed.add_argument("--save-model", metavar="FILE", help="also save the fitted model here (see "
                       "unimap.load; for 'unimap transform')")
    transform = sub.add_parser("transform", help="place new points with a saved model")
    transform.add_argument("model", help="a file written by --save-model or est.save")
    transform.add_argument("input", help="a .npy/.npz/.csv/.tsv/.parquet/.h5ad file, or a "
                           "built-in dataset")
    transform.add_argument("-o", "--output", default="transformed.npy",
                           help="embedding of the new points (.npy, .csv, .tsv, .parquet or "
                           ".h5ad)")
    transform.add_argument("--label-column", help="a label column to leave out (CSV, Parquet)")
    transform.add_argument("--use-rep", help=_USE_REP_HELP)
    transform.set_defaults(labels=None)
    evaluate = sub.add_parser("evaluate", help="score an embedding of a data set "
                              "(unimap.metrics; labels add the 10-NN accuracy)")
    evaluate.add_argument("input", help="the data: a .npy/.npz/.csv/.tsv/.parquet/.h5ad file, "
                          "or a built-in dataset")
    evaluate.add_argument("embedding", help="its embedding, row for row (any input format)")
    evaluate.add_argument("--label-column", help=_LABEL_HELP)
    evaluate.add_argument("--use-rep", help=_USE_REP_HELP)
    evaluate.add_argument("--embedding-rep", help="the obsm key of an .h5ad embedding "
                          "(e.g. X_umap), or the array of an .npz one")
    evaluate.add_argument("--labels", help="a .npy/.csv file of labels")
    evaluate.add_argument("--n-neighbors", type=int, default=15,
                          help="the neighbourhood size the scores compare (default 15)")
    evaluate.add_argument("--sample-size", type=int, default=2000,
                          help="points the neighbourhood scores are estimated on (2000)")
    evaluate.add_argument("--random-state", type=int, default=0, help=_SEED_HELP)
    evaluate.add_argument("--json", action="store_true", help="machine-readable output")
    info = sub.add_parser("info", help="version, threads, and which optional parts are here")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    precompile = sub.add_parser(
        "precompile", help="compile the numba kernels now, so later runs start at once (an "
        "install built here has them already; run this where it did not: another CPU, a "
        "read-only install)")
    precompile.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    plot = sub.add_parser("plot", help="draw an embedding: a static figure (.png/.svg/.pdf) or "
                          "an interactive map (.html, one offline file)")
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
    plot.add_argument("--dims", metavar="I,J", help=_DIMS_HELP)
    plot.add_argument("--palette", metavar="NAME|C1,C2,...", help=_PALETTE_HELP)
    plot.add_argument("--legend-loc", choices=LEGEND_LOCATIONS, default="right margin",
                      help=_LEGEND_HELP)
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
    compare = sub.add_parser("compare", help="embed one data set with several methods (same "
                             "seed): a side-by-side figure and a table of time and quality")
    compare.add_argument("input", help="a table (.npy, .npz, .csv, .tsv, .parquet, .h5ad), or "
                         "a built-in dataset")
    compare.add_argument("--use-rep", help=_USE_REP_HELP)
    compare.add_argument("--methods", default="umap,tsne,gdr",
                         help=f"comma-separated, of {', '.join(variants)} "
                         "(default umap,tsne,gdr)")
    compare.add_argument("-o", "--output", default="compare.png",
                         help="the figure (.png/.svg/.pdf)")
    compare.add_argument("--label-column", help=_LABEL_HELP)
    compare.add_argument("--labels", help="a .npy/.csv file of labels (adds 10-NN accuracy)")
    compare.add_argument("--n-epochs", type=int, help="epochs or iterations of every method "
                         "but pca; default: each method's")
    compare.add_argument("--sample-size", type=int, default=2000,
                         help="points the neighbourhood scores are estimated on (2000)")
    compare.add_argument("--random-state", type=int, default=0, help=_SEED_HELP)
    compare.add_argument("--n-jobs", type=int, default=-1, help=_JOBS_HELP)
    compare.add_argument("--save-embeddings", metavar="DIR",
                         help="also write each embedding to DIR/<data>_<method>.npy")
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = {"embed": _embed, "transform": _transform, "evaluate": _evaluate,
           "info": _info, "plot": _plot, "compare": _compare,
           "precompile": _precompile}[args.command]
    try:
        return run(args)
    except KeyboardInterrupt:
        # one line, as for any other failure; every file is written atomically, so none is
        # left half-written (those finished before the interrupt stay)
        print("unimap: error: interrupted", file=sys.stderr)
        return 130
    except UsageError as exc:
        print(f"unimap: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError, MemoryError,
            DeviceUnavailableError, DrawingError) as exc:
        print(f"unimap: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
