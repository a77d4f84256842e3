"""``unimap embed``: fit one method on a table or built-in dataset, write the embedding (and
optionally the model), then its picture (a static figure or the interactive map). Also which
options each method takes and how the command line becomes an estimator, which ``unimap
compare`` reuses.
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
    compile_notice,
    strict_json,
)
from unimap.cli.picture import (
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
        return _output_path(args.embedding, "--embedding")
    if args.write_back:
        return None
    default = (picture.with_suffix(".npy") if picture is not None
               else Path(f"{Path(args.input).stem}_{key}.npy"))
    if Path(args.input).is_file() and _same_file(default, args.input):
        # `embed x.npy -o x.png`: the embedding beside the picture, but never over the input
        default = default.with_name(f"{default.stem}.{args.method}.npy")
    return _output_path(str(default), "--embedding")


def _check_outputs(args, picture: Path | None, out_emb: Path | None) -> None:
    """Every output checked before the data are read: paths, formats, libraries, the
    picture's columns, and no output over an input or over another output."""
    if args.save_model:
        _file_path(args.save_model, "--save-model")
    outputs = {"--output": picture, "--embedding": out_emb, "--save-model": args.save_model}
    _refuse_overwriting_inputs(outputs, [args.input, getattr(args, "labels", None)])
    given = [(option, path) for option, path in outputs.items() if path is not None]
    for i, (option, path) in enumerate(given):
        for other, other_path in given[:i]:
            if _same_file(path, other_path):
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
        _file_path(str(picture), "--output")
    out_emb = _embedding_of(args, picture, key)
    _check_outputs(args, picture, out_emb)
    X, labels, name = _load_input(args)
    _check_supervision(args, labels)
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
