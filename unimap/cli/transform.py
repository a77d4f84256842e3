"""``unimap transform``: place new points with a model saved by ``unimap embed --save-model``
(or ``est.save``) and write their embedding.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from unimap.cli.common import (
    DROP_HELP,
    USE_REP_HELP,
    UsageError,
    load_input,
    output_path,
    refuse_overwriting_inputs,
)
from unimap.io.write import write_embedding


def _transform(args) -> int:
    import unimap

    out = output_path(args.output, "--output")
    refuse_overwriting_inputs({"--output": out}, [args.input, args.model])
    if not Path(args.model).is_file():
        raise FileNotFoundError(f"no model file {args.model!r}")
    model = unimap.load(args.model)
    if getattr(model, "transform_mode", "embedding") != "embedding":
        raise UsageError(f"{args.model}: this model's transform_mode="
                         f"{model.transform_mode!r} returns a membership graph, not an "
                         "embedding; `unimap transform` places points: save the model with "
                         "transform_mode='embedding', or call its transform in Python")
    X, _, _ = load_input(args)
    start = time.perf_counter()
    embedding = model.transform(X)
    from unimap.methods.registry import variant_of

    # named as `embed` names it: GDR(normalized=True)'s is gdr_tsne
    write_embedding(out, embedding, name=variant_of(model).key.replace("-", "_"))
    print(f"placed {X.shape[0]} points with {type(model).__name__} in "
          f"{time.perf_counter() - start:.2f}s; wrote {out}")
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``transform`` and its arguments to ``subparsers``."""
    transform = subparsers.add_parser("transform", help="place new points with a saved model")
    transform.add_argument("model", help="a file written by --save-model or est.save")
    transform.add_argument("input", help="a .npy/.npz/.csv/.tsv/.parquet/.h5ad file, or a "
                           "built-in dataset")
    transform.add_argument("-o", "--output", default="transformed.npy",
                           help="embedding of the new points (.npy, .csv, .tsv, .parquet or "
                           ".h5ad)")
    transform.add_argument("--label-column", help="a label column to leave out (CSV, Parquet)")
    transform.add_argument("--drop-columns", metavar="NAMES", help=DROP_HELP)
    transform.add_argument("--use-rep", help=USE_REP_HELP)
    transform.set_defaults(labels=None, run=_transform)
    return transform
