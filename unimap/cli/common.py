"""What the ``unimap`` commands share: the usage error (exit status 2), the help texts of the
options several commands have, reading the input data (a table or a built-in dataset, with its
labels) and an embedding file, and checking an output path before any work is done. Each
command's own module imports these.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from unimap.io.read import read_labels, read_table
from unimap.io.write import WRITE_FORMATS, check_output_path

__all__ = ["UsageError", "USE_REP_HELP", "LABEL_HELP", "SEED_HELP", "JOBS_HELP", "PALETTE_HELP",
           "LEGEND_HELP", "DIMS_HELP", "load_input", "output_path", "file_path", "same_file",
           "refuse_overwriting_inputs", "strict_json", "read_embedding", "kernels_look_cached",
           "compile_notice"]


class UsageError(ValueError):
    """A command line that cannot work as given (exit status 2; other failures exit 1)."""


# The help of the options that several commands have.
USE_REP_HELP = ("the data of an .h5ad: X or an obsm key (default X_pca when present, else X); "
                "of an .npz: the array's name")
LABEL_HELP = ("labels: a CSV column (name or 0-based index), a Parquet column, an .h5ad obs "
              "column, or an .npz array")
DROP_HELP = ("CSV, Parquet: columns left out of the features, comma-separated (names, or "
             "0-based indices without a header), such as sample ids or free text")
SEED_HELP = "seed of the random numbers: the same seed gives the same result (default 0)"
JOBS_HELP = "threads to use (default -1: all cores)"
PALETTE_HELP = ("the colours of the categories: a matplotlib colour map name (tab20, Set2, "
                "...) or colours separated by commas (default: a 102-colour palette that "
                "keeps 50 categories apart)")
LEGEND_HELP = ("static pictures: where the category names go: 'right margin' (default), "
               "'on data' (at each category's centre, as scanpy's legend_loc) or 'none'")
DIMS_HELP = ("the two columns of the embedding to draw, counted from 0, e.g. 0,1 or 1,2 "
             "(needed when it has more than two)")


def load_input(args) -> tuple[np.ndarray, np.ndarray | None, str]:
    from unimap.datasets import BUILTIN, load_builtin

    if args.input in BUILTIN and not Path(args.input).exists():
        if args.use_rep is not None:
            raise UsageError("--use-rep applies to .h5ad and .npz input, not a built-in dataset")
        X, y = load_builtin(args.input)
        return X, y, args.input
    if not Path(args.input).exists():
        from unimap.runtime.validation import did_you_mean

        hint = did_you_mean(args.input, list(BUILTIN))
        if hint:  # `embed digit`: the built-in dataset meant
            raise FileNotFoundError(f"input file not found: {args.input}"
                                    + hint.replace("did you mean", "did you mean the built-in "
                                                   "dataset", 1))
    drop = getattr(args, "drop_columns", None)
    X, labels = read_table(args.input, args.label_column, use_rep=args.use_rep,
                           drop_columns=[c.strip() for c in drop.split(",")] if drop else None)
    if args.labels:
        labels = read_labels(args.labels, X.shape[0])
    return X, labels, Path(args.input).stem


def output_path(path: str, option: str) -> Path:
    """An output file's path, its format checked (a UsageError) and its library present
    (an ImportError naming the extra) before any work is done."""
    if Path(path).suffix.lower() not in WRITE_FORMATS:
        raise UsageError(f"{option} must end in {', '.join(WRITE_FORMATS)}, got "
                         f"{Path(path).name!r}")
    return check_output_path(file_path(path, option))


def file_path(path: str, option: str) -> Path:
    """An output file's path checked before any work is done: not a folder, and not under
    an existing file (a missing folder is created when the file is written)."""
    out = Path(path)
    if out.is_dir():
        raise UsageError(f"{option} {path!r} is a folder; name a file in it")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{option} {path!r}: {str(parent)!r} is a file, not a folder")
            break
    return out


def same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # either is missing: compare the paths they would be
        return Path(a).resolve() == Path(b).resolve()


def refuse_overwriting_inputs(outputs: dict[str, str | Path | None],
                              inputs: list[str | None]) -> None:
    """A UsageError where an output would replace an input file (before any work)."""
    for option, out in outputs.items():
        for source in inputs:
            if out is not None and source and Path(source).is_file() and same_file(out, source):
                raise UsageError(f"{option} {str(out)!r} is an input of this command; "
                                 "refusing to overwrite it (choose another name)")


def strict_json(value):
    """``value`` with every non-finite float replaced by None: JSON has no NaN or
    infinity (``json.dumps`` would write the non-standard ``NaN``)."""
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(item) for item in value]
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    return value


def read_embedding(path: str, use_rep: str | None) -> np.ndarray:
    if not Path(path).is_file():
        raise FileNotFoundError(f"no embedding file {path!r}")
    return read_table(path, use_rep=use_rep)[0]


def kernels_look_cached() -> bool:
    """Whether numba's disk cache seems to hold unimap's kernels: any cache index of the
    optimizers beside the package, or under ``NUMBA_CACHE_DIR``. A cheap look at files (no
    import of the kernel modules), for one line before a first run that would otherwise
    compile for tens of seconds without a word; ``unimap info`` checks each kernel."""
    import unimap

    places = [Path(unimap.__file__).parent / "optimizers" / "umap_sgd" / "__pycache__"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        places.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    # UMAP's 2-D fit epoch (unimap/optimizers/umap_sgd/epochs_numba.py), found by its name
    return any(place.is_dir() and next(place.rglob("*.sgd_epoch_edges_2d-*.nbi"), None) is not None
               for place in places)


def compile_notice(quiet: bool) -> None:
    """On stderr, before a fit on a machine whose kernels are not compiled yet: why the first
    run waits, and how to compile them all at once."""
    import sys

    if not quiet and not kernels_look_cached():
        print("unimap: first run here: compiling its kernels for this machine (about half a "
              "minute on 2 cores, once; later runs load them). `unimap precompile` compiles "
              "them all ahead.", file=sys.stderr, flush=True)


SCALE_RATIO = 100.0
"""Largest ratio of the widest column's standard deviation to the median one's that ``embed``
takes without a warning: well above image and expression tables, well below raw tables whose
unscaled maps lose their classes (measured: benchmarks/results/library_notes.md,
"unimap/cli/common.py")."""
SPREAD_METRICS = (None, "euclidean", "l2", "sqeuclidean", "manhattan", "l1", "cityblock",
                  "taxicab", "chebyshev", "linf", "linfinity", "linfty", "infinity",
                  "minkowski")
"""Metrics whose distances add up the columns as they are: a wide column decides them."""


def checked_scales(X, metric: str | None, standardize: bool):
    """``X`` with every varying column on unit variance (``--standardize``), or as it is with
    a one-line warning where the columns' spreads differ more than :data:`SCALE_RATIO`-fold
    under a metric that adds them up (raw tables: a price column beside ratios)."""
    import numpy as np
    import scipy.sparse as sp

    from unimap.runtime.user_warnings import warn_user

    if standardize and (metric == "precomputed" or sp.issparse(X)):
        raise UsageError("--standardize scales the columns of a dense table; this input is "
                         + ("a distance matrix" if metric == "precomputed" else "sparse"))
    if sp.issparse(X) or metric == "precomputed" or X.shape[0] < 2:
        return X
    std = X.std(axis=0, dtype=np.float64)
    varying = std > 0
    if standardize:
        scaled = np.array(X, dtype=np.float64)
        mean = scaled[:, varying].mean(axis=0)
        scaled[:, varying] = (scaled[:, varying] - mean) / std[varying]
        return scaled.astype(np.float32 if X.dtype != np.float64 else np.float64)
    if metric in SPREAD_METRICS and varying.sum() >= 2:
        ratio = float(std[varying].max() / np.median(std[varying]))
        if ratio > SCALE_RATIO:
            warn_user(f"the columns' spreads differ up to {ratio:,.0f}-fold (column "
                      f"{int(np.argmax(std))}, 0-based, is the widest): the widest columns "
                      "decide the distances; --standardize puts every column on unit "
                      "variance (or scale the file first)")
    return X
