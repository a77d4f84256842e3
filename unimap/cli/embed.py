"""``unimap embed``: fit one method on a table or built-in dataset, write the embedding, a
scatter plot and optionally the model. Also which options each method takes and how the
command line becomes an estimator, which ``unimap compare`` reuses.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from unimap.cli.common import (
    UsageError,
    _file_path,
    _load_input,
    _output_path,
    _refuse_overwriting_inputs,
    _same_file,
    strict_json,
)
from unimap.io.atomic import atomic_path
from unimap.io.write import check_output_path, write_embedding

# Which options each method takes; giving another is an error, not silently ignored.
_SUPERVISED = {"target_weight"}
_METHOD_OPTIONS = {
    "umap": {"n_neighbors", "min_dist", "metric", "metric_kwds", "n_epochs", "densmap",
             *_SUPERVISED},
    "gdr": {"n_neighbors", "min_dist", "metric", "metric_kwds", "n_epochs", *_SUPERVISED},
    "tsne": {"perplexity", "metric", "metric_kwds", "n_epochs"},
    "gdr-tsne": {"perplexity", "metric", "metric_kwds", "n_epochs", *_SUPERVISED},
    "pca": set(),
}
_OPTIONAL = ("n_neighbors", "min_dist", "perplexity", "metric", "metric_kwds", "n_epochs",
             "target_weight", "densmap")


def _make_estimator(args):
    import unimap

    given = {name for name in _OPTIONAL if getattr(args, name) is not None}
    stray = sorted(given - _METHOD_OPTIONS[args.method])
    if stray:
        flags = ", ".join("--" + name.replace("_", "-") for name in stray)
        raise UsageError(f"{flags} does not apply to --method {args.method}")
    options = {name: getattr(args, name) for name in given}
    if "metric_kwds" in options:
        options["metric_kwds"] = _metric_kwds(options["metric_kwds"])
    common = {"n_components": args.n_components, "random_state": args.random_state}
    if args.method == "pca":
        return unimap.PCA(**common, device=getattr(args, "device", "auto"))
    # progress bars and phase lines on a terminal, or anywhere with -v (never with -q/--json)
    quiet = getattr(args, "quiet", False) or getattr(args, "json", False)
    max_memory = getattr(args, "max_memory", "available")
    common.update(n_jobs=args.n_jobs, verbose=args.verbose or (sys.stderr.isatty() and not quiet),
                  max_memory=None if max_memory.lower() == "none" else max_memory,
                  device=getattr(args, "device", "auto"))
    if args.method == "tsne" and "n_epochs" in options:
        options["max_iter"] = options.pop("n_epochs")
    if args.method == "tsne" and "metric_kwds" in options:
        options["metric_params"] = options.pop("metric_kwds")  # scikit-learn's name
    if args.method == "umap":
        return unimap.UMAP(**common, **options)
    if args.method == "tsne":
        return unimap.TSNE(**common, **options)
    return unimap.GDR(normalized=args.method == "gdr-tsne", **common, **options)


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
    if args.method in ("tsne", "pca"):
        raise UsageError(f"--supervised applies to umap, gdr and gdr-tsne, not --method "
                         f"{args.method}")
    if labels is None:
        raise UsageError("--supervised needs labels: --labels FILE or --label-column NAME")


def _embed(args) -> int:
    out_png = Path(args.output)
    if out_png.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise UsageError(f"--output must end in .png, .pdf or .svg, got {out_png.name!r}")
    if args.write_back and Path(args.input).suffix.lower() != ".h5ad":
        raise UsageError(f"--write-back needs an .h5ad input, got {args.input!r}")
    _file_path(args.output, "--output")
    default_emb = out_png.with_suffix(".npy")
    if not args.embedding and Path(args.input).is_file() and _same_file(default_emb,
                                                                         args.input):
        # `embed x.npy -o x.png`: the embedding beside the picture, but never over the input
        default_emb = out_png.with_name(f"{out_png.stem}.{args.method}.npy")
    out_emb = None if args.write_back and not args.embedding else _output_path(
        args.embedding or str(default_emb), "--embedding")
    if args.save_model:
        _file_path(args.save_model, "--save-model")
    _refuse_overwriting_inputs({"--output": out_png, "--embedding": out_emb,
                                "--save-model": args.save_model},
                               [args.input, getattr(args, "labels", None)])
    if args.write_back:
        check_output_path(args.input)  # anndata is there (it read the input too)
    X, labels, name = _load_input(args)
    _check_supervision(args, labels)
    start = time.perf_counter()
    estimator = _make_estimator(args)
    embedding = estimator.fit_transform(X, labels if args.supervised else None)
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
        print(json.dumps(strict_json(_summary(estimator, X, elapsed, files)), indent=2,
                         default=str, allow_nan=False))
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
