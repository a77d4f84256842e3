"""The ``unimap`` command.

``unimap embed INPUT -o map.png`` reads a table (``.npy``, ``.npz``, ``.csv``/``.tsv``,
``.parquet``, ``.h5ad``; :func:`unimap.io.tables.read_table`) or a built-in dataset (``digits``,
``mnist``, ``blobs``), embeds it and writes the embedding (``.npy``, ``.csv``, ``.parquet``,
``.h5ad``; or into the input ``.h5ad`` with ``--write-back``) and a scatter plot (and the model
with ``--save-model``). ``unimap transform MODEL INPUT -o out.npy`` places new points with a
saved model. ``unimap evaluate DATA EMBEDDING`` scores an embedding with ``unimap.metrics``.
``unimap plot EMBEDDING -o map.html`` draws an embedding (.png/.svg/.pdf, or an interactive
offline .html map). ``unimap compare DATA --methods umap,tsne,gdr`` embeds with several methods
and prints their time and quality beside a side-by-side figure. ``unimap info`` says what this
installation has. Files are written atomically: a failed run leaves no partial output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from unimap.io.atomic import atomic_path
from unimap.io.tables import (
    WRITE_FORMATS,
    check_output_path,
    column_names,
    read_columns,
    read_table,
    write_embedding,
)
from unimap.runtime.device import DeviceUnavailableError

__all__ = ["main", "read_table", "UsageError"]


class UsageError(ValueError):
    """A command line that cannot work as given (exit status 2; other failures exit 1)."""


def _load_input(args) -> tuple[np.ndarray, np.ndarray | None, str]:
    from unimap.datasets import BUILTIN, load_builtin

    if args.input in BUILTIN and not Path(args.input).exists():
        if args.use_rep is not None:
            raise UsageError("--use-rep applies to .h5ad and .npz input, not a built-in dataset")
        X, y = load_builtin(args.input)
        return X, y, args.input
    X, labels = read_table(args.input, args.label_column, use_rep=args.use_rep)
    if args.labels:
        labels = np.load(args.labels, allow_pickle=False) if args.labels.endswith(".npy") \
            else read_table(args.labels)[0].ravel()
    return X, labels, Path(args.input).stem


def _output_path(path: str, option: str) -> Path:
    """An output file's path, its format checked (a UsageError) and its library present
    (an ImportError naming the extra) before any work is done."""
    if Path(path).suffix.lower() not in WRITE_FORMATS:
        raise UsageError(f"{option} must end in {', '.join(WRITE_FORMATS)}, got "
                         f"{Path(path).name!r}")
    return check_output_path(path)


# Which options each method takes; giving another is an error, not silently ignored.
_METHOD_OPTIONS = {
    "umap": {"n_neighbors", "min_dist", "metric", "n_epochs"},
    "gdr": {"n_neighbors", "min_dist", "metric", "n_epochs"},
    "tsne": {"perplexity", "metric", "n_epochs"},
    "gdr-tsne": {"perplexity", "metric", "n_epochs"},
    "pca": set(),
}
_OPTIONAL = ("n_neighbors", "min_dist", "perplexity", "metric", "n_epochs")


def _make_estimator(args):
    import unimap

    given = {name for name in _OPTIONAL if getattr(args, name) is not None}
    stray = sorted(given - _METHOD_OPTIONS[args.method])
    if stray:
        flags = ", ".join("--" + name.replace("_", "-") for name in stray)
        raise UsageError(f"{flags} does not apply to --method {args.method}")
    options = {name: getattr(args, name) for name in given}
    common = {"n_components": args.n_components, "random_state": args.random_state}
    if args.method == "pca":
        return unimap.PCA(**common)
    # progress bars and phase lines on a terminal, or anywhere with -v (never with -q/--json)
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
    max_memory = getattr(args, "max_memory", "available")
    common.update(n_jobs=args.n_jobs, verbose=args.verbose or (sys.stderr.isatty() and not quiet),
                  max_memory=None if max_memory.lower() == "none" else max_memory,
                  device=getattr(args, "device", "auto"))
    if args.method == "tsne" and "n_epochs" in options:
        options["n_iter"] = options.pop("n_epochs")
    if args.method == "umap":
        return unimap.UMAP(**common, **options)
    if args.method == "tsne":
        return unimap.TSNE(**common, **options)
    return unimap.GDR(normalized=args.method == "gdr-tsne", **common, **options)


def _embed(args) -> int:
    out_png = Path(args.output)
    if out_png.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise UsageError(f"--output must end in .png, .pdf or .svg, got {out_png.name!r}")
    if args.write_back and Path(args.input).suffix.lower() != ".h5ad":
        raise UsageError(f"--write-back needs an .h5ad input, got {args.input!r}")
    out_emb = None if args.write_back and not args.embedding else _output_path(
        args.embedding or str(out_png.with_suffix(".npy")), "--embedding")
    if args.write_back:
        check_output_path(args.input)  # anndata is there (it read the input too)
    X, labels, name = _load_input(args)
    start = time.perf_counter()
    estimator = _make_estimator(args)
    embedding = estimator.fit_transform(X)
    elapsed = time.perf_counter() - start
    from unimap.io.anndata_input import fit_record
    from unimap.plotting.static import save_scatter

    key = args.method.replace("-", "_")
    record = fit_record(estimator, args.method, **(
        {"use_rep": args.use_rep} if args.use_rep else {}))
    title = f"{args.method.upper()} of {name} ({X.shape[0]:,} × {X.shape[1]})"
    files = []
    with contextlib.ExitStack() as stack:
        # The model is renamed into place only once the plot and the embedding are written.
        if args.save_model:
            estimator.save(stack.enter_context(atomic_path(args.save_model)))
        save_scatter(out_png, embedding, labels, title=title)
        if out_emb is not None:
            files.append(str(write_embedding(out_emb, embedding, name=key, params=record)))
        files.append(str(out_png))
        if args.write_back:
            write_embedding(args.input, embedding, name=key, params=record)
            files.append(f"{args.input} (obsm['X_{key}'], uns['{key}'])")
    files += [args.save_model] if args.save_model else []
    if args.json:
        print(json.dumps(_summary(estimator, X, elapsed, files), indent=2, default=str))
    elif not args.quiet:
        print(f"embedded {X.shape[0]} points in {elapsed:.2f}s; wrote {' and '.join(files)}")
    return 0


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


def _transform(args) -> int:
    import unimap

    out = _output_path(args.output, "--output")
    if not Path(args.model).is_file():
        raise FileNotFoundError(f"no model file {args.model!r}")
    model = unimap.load(args.model)
    X, _, _ = _load_input(args)
    start = time.perf_counter()
    embedding = model.transform(X)
    write_embedding(out, embedding, name=type(model).__name__.lower())
    print(f"placed {X.shape[0]} points with {type(model).__name__} in "
          f"{time.perf_counter() - start:.2f}s; wrote {out}")
    return 0


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
        print(json.dumps(scores, indent=2))
    else:
        for name, value in scores.items():
            print(f"{name:<28} {value:.4f}" if isinstance(value, float) else
                  f"{name:<28} {value}")
    return 0


def _read_embedding(path: str, use_rep: str | None) -> np.ndarray:
    if not Path(path).is_file():
        raise FileNotFoundError(f"no embedding file {path!r}")
    return read_table(path, use_rep=use_rep)[0]


def _precompile(args) -> int:
    from unimap.cli.precompile import main as precompile_main

    return precompile_main(["--quiet"] if args.quiet else [])


def _kernel_cache_summary() -> dict | None:
    from unimap.cli.precompile import cache_status

    status = cache_status()
    if status is None:
        return None
    return {"for_this_machine": sum(status.values()), "cached": len(status)}


def _info(args) -> int:
    import importlib.metadata
    import importlib.util
    import platform

    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    import numba

    core = ("numpy", "scipy", "numba", "scikit-learn", "faiss-cpu")
    optional = {"matplotlib": "plots (extra 'plot')", "pandas": "DataFrame output",
                "pynndescent": "knn_method='nndescent' (extra 'nndescent')",
                "pyarrow": "Parquet files (extra 'io')",
                "anndata": ".h5ad files, AnnData input (extra 'anndata')"}
    info = {
        "unimap": version("unimap"), "python": platform.python_version(),
        "platform": platform.platform(), "cpus": os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "core": {dist: version(dist) for dist in core},
        "optional": {dist: version(dist) for dist in optional},
        "gpu": _gpu_summary(version("numba-cuda")),
        "compiled_kernels": _kernel_cache_summary(),
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"unimap {info['unimap']} (Python {info['python']}, {info['platform']})")
    print(f"cores: {info['cpus']}; numba threads: {info['numba_threads']}")
    for dist, ver in info["core"].items():
        print(f"  {dist:<13} {ver or 'MISSING'}")
    for dist, use in optional.items():
        ver = info["optional"][dist]
        print(f"  {dist:<13} {ver or 'not installed'}  ({use})")
    gpu = info["gpu"]
    print(f"  numba-cuda    {gpu['numba_cuda'] or 'not installed'}  (device='cuda', extra 'gpu')")
    print(f"GPU: {gpu['description']}" + ("" if gpu["usable"] else "; fits run on the CPU"))
    kernels = info["compiled_kernels"]
    if kernels is None:
        print("compiled kernels: unknown (numba's cache is not readable here)")
    elif kernels["for_this_machine"]:
        print(f"compiled kernels: {kernels['for_this_machine']} cached for this machine "
              "(first calls load them)")
    else:
        print("compiled kernels: none for this machine: each method's first call compiles "
              "(10-20 s); `unimap precompile` does it once now")
    return 0


def _gpu_summary(numba_cuda: str | None) -> dict:
    """What ``device="auto"`` would find: the gpu extra's version and the GPU (or why none)."""
    from unimap.runtime.device import cuda_status, simulated

    if numba_cuda is None and not simulated():
        return {"numba_cuda": None, "usable": False,
                "description": "none usable (the gpu extra, numba-cuda, is not installed)"}
    usable, description = cuda_status()
    return {"numba_cuda": numba_cuda, "usable": usable, "description": description}


_USE_REP_HELP = ("the data of an .h5ad: X or an obsm key (default X_pca when present, else X); "
                 "of an .npz: the array's name")
_LABEL_HELP = ("labels: a CSV column (name or 0-based index), a Parquet column, an .h5ad obs "
               "column, or an .npz array")


# ---- unimap plot ----

_PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".html")


def _split_names(text: str | None) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()] if text else []


def _read_labels_file(path: str) -> np.ndarray:
    if not Path(path).is_file():
        raise FileNotFoundError(f"--labels file not found: {path}")
    if path.endswith(".npy"):
        return np.load(path, allow_pickle=False).reshape(-1)
    return read_table(path, label_column="0")[1]  # one column, text or numbers


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
        columns["label"] = _read_labels_file(args.labels)
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
                            min_dist=None, perplexity=None, metric=None,
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unimap", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    embed = sub.add_parser("embed", help="embed a table or built-in dataset, write a plot")
    embed.add_argument("input", help="a .npy/.npz/.csv/.tsv/.parquet/.h5ad file, or a built-in "
                       "dataset: digits, mnist, blobs")
    embed.add_argument("-o", "--output", default="unimap.png", help="plot file (.png/.pdf/.svg)")
    embed.add_argument("--embedding", help="embedding file (.npy, .csv, .tsv, .parquet or "
                       ".h5ad); default: the plot's name with .npy (none with --write-back)")
    embed.add_argument("--write-back", action="store_true",
                       help="write the embedding into the input .h5ad: obsm['X_<method>'] and "
                       "the parameters in uns['<method>'] (the file is rewritten atomically)")
    embed.add_argument("--use-rep", help=_USE_REP_HELP)
    embed.add_argument("--method", choices=tuple(_METHOD_OPTIONS), default="umap",
                       help="umap (default), tsne, gdr (UMAP-like), gdr-tsne (GDR's t-SNE-like "
                       "normalized mode) or pca")
    embed.add_argument("--label-column", help=_LABEL_HELP)
    embed.add_argument("--labels", help="a .npy/.csv file of labels to colour by")
    embed.add_argument("--n-neighbors", type=int, help="umap, gdr (default 15)")
    embed.add_argument("--n-components", type=int, default=2)
    embed.add_argument("--min-dist", type=float, help="umap, gdr (default 0.1)")
    embed.add_argument("--perplexity", type=float, help="tsne (default 30), gdr-tsne (default 10)")
    embed.add_argument("--metric", help="all but pca (default euclidean)")
    embed.add_argument("--n-epochs", type=int, help="epochs (umap, gdr, gdr-tsne) or "
                       "iterations (tsne); default: the method's")
    embed.add_argument("--random-state", type=int, default=0)
    embed.add_argument("--n-jobs", type=int, default=-1)
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
    embed.add_argument("--save-model", help="also save the fitted model here (see "
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
    evaluate.add_argument("--n-neighbors", type=int, default=15)
    evaluate.add_argument("--sample-size", type=int, default=2000,
                          help="points the neighbourhood scores are estimated on (2000)")
    evaluate.add_argument("--random-state", type=int, default=0)
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
    plot.add_argument("embedding", help="an embedding (.npy or .csv), one row per point")
    plot.add_argument("-o", "--output", default="map.html",
                      help="the figure: .png, .svg, .pdf or .html (default map.html)")
    plot.add_argument("--labels", help="a .npy/.csv file of labels (the column 'label')")
    plot.add_argument("--data", help="a table (.csv/.tsv/.npy) row for row with the embedding, "
                      "for --color-by, --hover and --id-column")
    plot.add_argument("--color-by", help="the column to colour by (default: label)")
    plot.add_argument("--hover", help=".html: comma-separated --data columns shown on hover "
                      "(default: the table's first 12)")
    plot.add_argument("--id-column", help=".html: the --data column that identifies a point "
                      "(default: its row number)")
    plot.add_argument("--title", help="default: the embedding file's name")
    plot.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    compare = sub.add_parser("compare", help="embed one data set with several methods (same "
                             "seed): a side-by-side figure and a table of time and quality")
    compare.add_argument("input", help="a table (.npy, .npz, .csv, .tsv, .parquet, .h5ad), or "
                         "a built-in dataset")
    compare.add_argument("--use-rep", help=_USE_REP_HELP)
    compare.add_argument("--methods", default="umap,tsne,gdr",
                         help=f"comma-separated, of {', '.join(_METHOD_OPTIONS)} "
                         "(default umap,tsne,gdr)")
    compare.add_argument("-o", "--output", default="compare.png",
                         help="the figure (.png/.svg/.pdf)")
    compare.add_argument("--label-column", help=_LABEL_HELP)
    compare.add_argument("--labels", help="a .npy/.csv file of labels (adds 10-NN accuracy)")
    compare.add_argument("--n-epochs", type=int, help="epochs or iterations of every method "
                         "but pca; default: each method's")
    compare.add_argument("--sample-size", type=int, default=2000,
                         help="points the neighbourhood scores are estimated on (2000)")
    compare.add_argument("--random-state", type=int, default=0)
    compare.add_argument("--n-jobs", type=int, default=-1)
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
    except UsageError as exc:
        print(f"unimap: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError, MemoryError,
            DeviceUnavailableError) as exc:
        print(f"unimap: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
