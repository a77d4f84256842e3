"""What the ``unimap`` commands share: the usage error (exit status 2), reading the input
data (a table or a built-in dataset, with its labels) and an embedding file, and checking an
output path before any work is done. Each command's own module imports these.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from unimap.io.read import read_table
from unimap.io.write import WRITE_FORMATS, check_output_path

__all__ = ["UsageError"]


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


def _read_embedding(path: str, use_rep: str | None) -> np.ndarray:
    if not Path(path).is_file():
        raise FileNotFoundError(f"no embedding file {path!r}")
    return read_table(path, use_rep=use_rep)[0]
