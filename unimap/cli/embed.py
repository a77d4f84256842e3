"""``unimap embed``: fit one method on a table or built-in dataset, write the embedding (and
optionally the model), then its picture (a static figure or the interactive map). Also its
arguments (:func:`add_parser`), which options each method takes and how the command line
becomes an estimator, which ``unimap compare`` reuses.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
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
    checked_scales,
    compile_notice,
    file_path,
    load_input,
    output_path,
    refuse_overwriting_inputs,
    same_file,
    strict_json,
)
from unimap.cli.picture import (
    LEGEND_LOCATIONS,
    DrawingError,
    check_can_draw,
    check_dims,
    draw,
    parse_dims,
    parse_palette,
    picture_path,
    two_columns,
)
from unimap.io.atomic import atomic_path
from unimap.io.write import WRITE_FORMATS, check_output_path, write_embedding

# The method options of the command line (flags of `embed`, `compare` passes some): each
# variant of unimap.methods.registry names those it takes; giving another is an error, not
# silently ignored.
METHOD_OPTIONS = ("n_neighbors", "min_dist", "perplexity", "metric", "metric_kwds",
                  "n_epochs", "target_weight", "densmap", "disconnection_distance")
# The run's settings, passed to every estimator that has the parameter.
_RUN_SETTINGS = ("n_components", "random_state", "n_jobs", "verbose", "max_memory", "device")


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


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``embed`` and its arguments to ``subparsers`` (of :func:`unimap.cli.main.build_parser`):
    the choices and help of ``--method`` and of the method options come from the declared
    methods (:func:`unimap.methods.registry.variants`), each of which may name only options
    the command line has (a RuntimeError otherwise)."""
    from unimap.methods import registry

    variants = registry.variants()  # the declared methods: built in, or loaded from elsewhere
    for key, (_, variant) in variants.items():
        unknown = set(variant.options) - set(METHOD_OPTIONS)
        if unknown:
            raise RuntimeError(f"method {key!r} declares options the command line does not "
                               f"have: {sorted(unknown)} (it has {list(METHOD_OPTIONS)})")
    embed = subparsers.add_parser("embed", help="embed a table or built-in dataset; write the "
                                  "embedding and a picture", description=_EMBED_DESCRIPTION,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    embed.add_argument("input", help="a .npy/.npz/.csv/.tsv/.parquet/.h5ad file, or a built-in "
                       "dataset: digits, mnist, blobs")
    embed.add_argument("-o", "--output", metavar="FILE",
                       help="the picture: .png, .svg, .pdf (these need matplotlib: the 'plot' "
                       "extra) or .html, the interactive map; default: INPUT_METHOD.png in the "
                       "current folder when no other output is asked for")
    embed.add_argument("--no-plot", action="store_true",
                       help="write no picture (only the embedding, and the model if asked)")
    embed.add_argument("--dims", metavar="I,J", help=DIMS_HELP)
    embed.add_argument("--palette", metavar="NAME|C1,C2,...", help=PALETTE_HELP)
    embed.add_argument("--legend-loc", choices=LEGEND_LOCATIONS, default="right margin",
                       help=LEGEND_HELP)
    embed.add_argument("--embedding", metavar="FILE",
                       help="embedding file (.npy, .csv, .tsv, .parquet or .h5ad); default: "
                       "the picture's name with .npy, or INPUT_METHOD.npy in the current "
                       "folder (with .METHOD.npy where that would be the input; none with "
                       "--write-back)")
    embed.add_argument("--write-back", action="store_true",
                       help="write the embedding into the input .h5ad: obsm['X_<method>'] and "
                       "the parameters in uns['<method>'] (the file is rewritten atomically)")
    embed.add_argument("--use-rep", help=USE_REP_HELP)
    embed.add_argument("--method", choices=method_names(), default="umap",
                       help="; ".join(f"{v.key}: {v.summary}" for _, v in variants.values()))
    embed.add_argument("--label-column", help=LABEL_HELP)
    embed.add_argument("--drop-columns", metavar="NAMES", help=DROP_HELP)
    embed.add_argument("--standardize", action="store_true",
                       help="put every column on zero mean and unit variance before the fit "
                       "(a warning says when the columns' spreads differ a hundredfold)")
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
                       "--label-column) as y; -1, NaN, NA and empty or '-1' text entries "
                       "are unlabelled")
    embed.add_argument("--densmap", action="store_true", default=None,
                       help=_for("densmap", variants, defaults=False)
                       + ": densMAP, which keeps the data's local densities")
    embed.add_argument("--target-weight", type=float,
                       help="with --supervised: how much the labels count, 0 to 1 (0.5)")
    embed.add_argument("--n-epochs", type=int, help="epochs or iterations of "
                       + _for("n_epochs", variants, defaults=False) + "; default: the method's")
    embed.add_argument("--random-state", type=int, default=0, help=SEED_HELP)
    embed.add_argument("--n-jobs", type=int, default=-1, help=JOBS_HELP)
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
    embed.set_defaults(run=_embed)
    return embed


def method_names() -> list[str]:
    """What ``--method`` takes: every declared variant
    (:func:`unimap.methods.registry.variants`)."""
    from unimap.methods import registry

    return list(registry.variants())


def chosen_variant(method: str):
    """``(declaration, variant)`` of ``--method``; a UsageError names the choices."""
    from unimap.methods import registry

    try:
        return registry.variant(method)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_estimator(args):
    """The estimator of ``--method`` with the options given (``compare`` builds its
    estimators here too, without every option: hence ``getattr``'s defaults)."""
    from unimap.methods import registry

    declared, chosen = chosen_variant(args.method)
    given = {name for name in METHOD_OPTIONS if getattr(args, name, None) is not None}
    stray = sorted(given - set(chosen.options))
    if stray:
        flags = ", ".join("--" + name.replace("_", "-") for name in stray)
        raise UsageError(f"{flags} does not apply to --method {args.method}")
    options = {name: getattr(args, name) for name in given}
    if "metric_kwds" in options:
        options["metric_kwds"] = _metric_kwds(options["metric_kwds"])
    options = {chosen.renamed.get(name, name): value for name, value in options.items()}
    # progress bars and phase lines on a terminal, or anywhere with -v (never with -q/--json)
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
    max_memory = getattr(args, "max_memory", "available")
    settings = {"n_components": args.n_components, "random_state": args.random_state,
                "n_jobs": getattr(args, "n_jobs", -1),
                "verbose": getattr(args, "verbose", False) or (sys.stderr.isatty() and not quiet),
                "max_memory": None if max_memory.lower() == "none" else max_memory,
                "device": getattr(args, "device", "auto")}
    cls = registry.estimator_class(declared.name)
    accepted = set(cls().get_params(deep=False))
    settings = {name: value for name, value in settings.items() if name in accepted}
    return cls(**chosen.fixed, **settings, **options)


def _metric_kwds(text: str) -> dict:
    """``--metric-kwds``: a JSON object such as ``{"p": 3}``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--metric-kwds must be a JSON object such as '{{\"p\": 3}}': "
                         f"{exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--metric-kwds must be a JSON object such as '{{\"p\": 3}}', got "
                         f"{text!r}")
    return value


def _check_supervision(args, labels) -> None:
    if not getattr(args, "supervised", False):
        if getattr(args, "target_weight", None) is not None:
            raise UsageError("--target-weight needs --supervised")
        return
    if not chosen_variant(args.method)[1].supervised:
        from unimap.methods import registry

        takes = [key for key, (_, v) in registry.variants().items() if v.supervised]
        listed = ", ".join(takes[:-1]) + f" and {takes[-1]}" if len(takes) > 1 else takes[0]
        raise UsageError(f"--supervised applies to {listed}, not --method "
                         f"{args.method}")
    if labels is None:
        raise UsageError("--supervised needs labels: --labels FILE or --label-column NAME")


def _picture_of(args, key: str) -> Path | None:
    """Where ``embed`` draws its picture: ``-o``; else, when no other output is asked for,
    ``<input>_<method>.png`` in the current folder; never with ``--no-plot``."""
    if args.no_plot:
        if args.output is not None:
            raise UsageError("--no-plot asks for no picture but -o/--output names one; give "
                             "one of them")
        return None
    if args.output is not None:
        hint = ("; the embedding itself is written with --embedding FILE"
                if Path(args.output).suffix.lower() in WRITE_FORMATS else "")
        return picture_path(args.output, "--output", hint)
    if args.embedding or args.write_back or args.save_model:
        return None  # an embedding-only run: a picture only when -o asks for one
    return Path(f"{Path(args.input).stem}_{key}.png")


def _embedding_of(args, picture: Path | None, key: str) -> Path | None:
    """Where ``embed`` writes the embedding: ``--embedding``; else beside the picture with
    ``.npy``, or ``<input>_<method>.npy`` in the current folder; none with ``--write-back``
    alone. A default name that is the input's gets the method too."""
    if args.embedding:
        return output_path(args.embedding, "--embedding")
    if args.write_back:
        return None
    default = (picture.with_suffix(".npy") if picture is not None
               else Path(f"{Path(args.input).stem}_{key}.npy"))
    inputs = [args.input, getattr(args, "labels", None)]
    if any(source and Path(source).is_file() and same_file(default, source)
           for source in inputs):
        # `embed x.npy -o x.png` (or `--labels cells.npy -o cells.png`): the embedding beside
        # the picture, but never over an input
        default = default.with_name(f"{default.stem}.{args.method}.npy")
    return output_path(str(default), "--embedding")


def _check_outputs(args, picture: Path | None, out_emb: Path | None) -> None:
    """Every output checked before the data are read: paths, formats, libraries, the
    picture's columns, and no output over an input or over another output."""
    if args.save_model:
        file_path(args.save_model, "--save-model")
    outputs = {"--output": picture, "--embedding": out_emb, "--save-model": args.save_model}
    refuse_overwriting_inputs(outputs, [args.input, getattr(args, "labels", None)])
    given = [(option, path) for option, path in outputs.items() if path is not None]
    for i, (option, path) in enumerate(given):
        for other, other_path in given[:i]:
            if same_file(path, other_path):
                raise UsageError(f"{other} and {option} name the same file {str(path)!r}")
    if args.write_back:
        check_output_path(args.input)  # anndata is there (it read the input too)
    dims = parse_dims(args.dims)
    parse_palette(args.palette)  # a bad palette is refused before the fit
    if picture is None:
        if dims is not None:
            raise UsageError("--dims chooses the columns of the picture; there is none "
                             "without -o (or with --no-plot)")
        return
    check_dims(args.n_components, dims, f"--n-components {args.n_components}")
    check_can_draw(picture, "or add --no-plot to write only the embedding (an .html map "
                   "needs no extra)")


def _embed(args) -> int:
    chosen_variant(args.method)  # an unknown method is refused before any file is touched
    if args.write_back and Path(args.input).suffix.lower() != ".h5ad":
        raise UsageError(f"--write-back needs an .h5ad input, got {args.input!r}")
    key = args.method.replace("-", "_")
    picture = _picture_of(args, key)
    if picture is not None:
        file_path(str(picture), "--output")
    out_emb = _embedding_of(args, picture, key)
    _check_outputs(args, picture, out_emb)
    if args.standardize and args.save_model:
        raise UsageError("--standardize with --save-model: the model would place new rows "
                         "unscaled; standardise the file itself, then fit and save")
    X, labels, name = load_input(args)
    _check_supervision(args, labels)
    X = checked_scales(X, None if args.method == "pca" else args.metric, args.standardize)
    compile_notice(args.quiet or args.json)
    start = time.perf_counter()
    estimator = make_estimator(args)
    embedding = estimator.fit_transform(X, labels if args.supervised else None)
    elapsed = time.perf_counter() - start
    from unimap.io.anndata_input import fit_record
    from unimap.io.scanpy_layout import scanpy_params

    record = fit_record(estimator, args.method, **(
        {"use_rep": args.use_rep} if args.use_rep else {}))
    # an .h5ad gets scanpy's uns[<key>] (as unimap.tl writes it, so sc.pl.umap reads it)
    # and unimap's record in uns["unimap"][<key>]
    record_of = chosen_variant(args.method)[1].scanpy_record
    scanpy = (None if record_of is None
              else {"params": scanpy_params(record_of, estimator, args.use_rep)})
    files = []
    with contextlib.ExitStack() as stack:
        # The model is renamed into place only once the embedding is written.
        if args.save_model:
            estimator.save(stack.enter_context(atomic_path(args.save_model)))
        if out_emb is not None:
            files.append(str(write_embedding(out_emb, embedding, name=key, params=scanpy,
                                             record=record)))
        if args.write_back:
            write_embedding(args.input, embedding, name=key, params=scanpy, record=record)
            files.append(f"{args.input} (obsm['X_{key}'], uns['{key}'], uns['unimap']['{key}'])")
    files += [args.save_model] if args.save_model else []
    if picture is not None:
        # drawn last, so that a failed picture loses nothing the fit made
        _draw_embedding(args, picture, embedding, labels, name, X.shape, out_emb, files)
        files.append(str(picture))
    if args.json:
        print(json.dumps(strict_json(_summary(estimator, X, elapsed, files)), indent=2,
                         default=str, allow_nan=False))
    elif not args.quiet:
        print(f"embedded {X.shape[0]} points in {elapsed:.2f}s; wrote {' and '.join(files)}")
    return 0


def _draw_embedding(args, picture: Path, embedding: np.ndarray, labels, name: str,
                    shape: tuple[int, int], out_emb: Path | None, files: list[str]) -> None:
    title = f"{args.method.upper()} of {name} ({shape[0]:,} × {shape[1]})"
    column = args.label_column or "label"
    columns = {column: labels} if labels is not None else None
    try:
        draw(picture, two_columns(embedding, parse_dims(args.dims)), title, columns=columns,
             color_by=column if columns else None, palette=parse_palette(args.palette),
             legend_loc=args.legend_loc, basis=args.method.upper())
    except Exception as exc:  # whatever the drawing library raises: say what was kept
        source = (str(out_emb) if out_emb is not None
                  else f"{args.input} --basis X_{args.method.replace('-', '_')}")
        dims = f" --dims {args.dims}" if args.dims else ""
        raise DrawingError(
            f"drawing {picture} failed ({type(exc).__name__}: {exc}); the embedding is "
            f"saved ({', '.join(files)}): draw it again with `unimap plot {source}{dims} "
            f"-o {picture}`") from exc


def _summary(estimator, X, seconds: float, files: list[str]) -> dict:
    """What ``--json`` prints: the data's shape, the time and phases, the parameters and the
    resolved (fitted) settings, and the files written."""
    resolved = {name: value.item() if isinstance(value, np.generic) else value
                for name, value in vars(estimator).items()
                if name.endswith("_") and not name.startswith("_")
                and isinstance(value, (int, float, str, bool, np.generic))}
    return {"method": type(estimator).__name__, "n_samples": int(X.shape[0]),
            "n_features": int(X.shape[1]), "seconds": round(seconds, 3),
            "timings": getattr(estimator, "timings_", None),
            "params": {k: v for k, v in estimator.get_params().items()
                       if isinstance(v, (int, float, str, bool, type(None)))},
            "resolved": resolved, "files": files}
