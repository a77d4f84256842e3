"""The CSV/TSV reader of :func:`unimap.io.read.read_table`: a header row or none, a label
column split off by name or index, the features by NumPy's C parser when the file is clean and
row by row otherwise, so that an error names the line and column of the first bad cell.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_csv(path: Path, label_column: str | None, drop: list[str] | None = None
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """The features and labels of a CSV/TSV/text table (see
    :func:`unimap.io.read.read_table`); ``drop``: columns (header names, or 0-based indices
    without a header) left out of the features."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            first, first_line = next(((row, reader.line_num) for row in reader
                                      if any(c.strip() for c in row)), (None, 0))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"cannot read {path} as text ({delimiter!r}-separated): {exc}") \
            from None
    if first is None:
        raise ValueError(f"{path} is empty")
    width = len(first)
    label_index = None
    if label_column is not None and label_column.lstrip("-").isdigit():
        label_index = int(label_column) % width if -width <= int(label_column) < width \
            else None
    text_cells = [c for i, c in enumerate(first)
                  if i != label_index and c.strip() and not is_number(c)]
    header = [c.strip() for c in first] if text_cells else None
    names = ([repr(c) for c in header] if header
             else [f"{i} (0-based, no header)" for i in range(width)])
    labels_at = None if label_column is None else _column_index(label_column, header, width,
                                                                 path)
    dropped = _dropped_indices(drop or [], header, width, path)
    features = [i for i in range(width) if i != labels_at and i not in dropped]
    if not features:
        raise ValueError(f"{path} has no feature column besides the labels")
    X = _fast_csv(path, delimiter, first_line if header else first_line - 1, width,
                  features if labels_at is not None or dropped else None)
    labels = None
    if X is None or labels_at is not None:
        X_slow, labels = _slow_csv(path, delimiter, header is not None, width, features,
                                   labels_at, names, X is None)
        X = X_slow if X is None else X
    if X.shape[0] == 0:
        raise ValueError(f"{path} has a header but no rows")
    if labels is not None and all(is_number(v) for v in labels):
        numeric = labels.astype(np.float64)
        if np.all(numeric == np.round(numeric)):
            return X, numeric.astype(np.int64)
        return X, numeric
    return X, labels


def _fast_csv(path: Path, delimiter: str, skip: int, width: int, features: list[int] | None
              ) -> np.ndarray | None:
    """The feature columns (None: all, which checks that every row has as many) by NumPy's
    C parser, or None where anything is amiss: then :func:`_slow_csv` reads the file cell by
    cell and says what."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "input contained no data": said below
            X = np.loadtxt(path, delimiter=delimiter, skiprows=skip, usecols=features,
                           dtype=np.float64, ndmin=2, comments=None, quotechar='"',
                           encoding="utf-8-sig")
    except (ValueError, IndexError):
        return None
    width = len(features) if features is not None else width
    return X if X.shape == (X.shape[0], width) and X.size and np.isfinite(X).all() else None


def _slow_csv(path: Path, delimiter: str, has_header: bool, width: int, features: list[int],
              labels_at: int | None, names: list[str], parse: bool
              ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Read the file row by row: the labels, and (with ``parse``) the features, with an error
    that names the line and column of the first bad cell."""
    rows, labels = [], []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        seen_header = not has_header
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            if not seen_header:
                seen_header = True
                continue
            line = reader.line_num
            if len(row) != width:
                raise ValueError(f"{path}, line {line}: {len(row)} fields where the first row "
                                 f"has {width} (rows have different numbers of columns)")
            if labels_at is not None:
                labels.append(row[labels_at].strip())
            if parse:
                rows.append(_parse_row(row, features, names, path, line))
    X = np.array(rows, dtype=np.float64).reshape(len(rows), len(features)) if parse else None
    return X, (np.array(labels) if labels_at is not None else None)


def _parse_row(row: list[str], features: list[int], names: list[str], path: Path,
               line: int) -> list[float]:
    values = []
    for col in features:
        cell = row[col].strip()
        where = f"{path}, line {line}, column {names[col]}"
        if not cell:
            raise ValueError(f"{where}: empty cell (missing value); fill or drop it first")
        try:
            value = float(cell)
        except ValueError:
            raise ValueError(f"{where}: non-numeric value {cell[:40]!r} in feature column "
                             f"{names[col]}; pass the column as label_column (--label-column) "
                             "if it holds labels, or leave it out (drop_columns, "
                             "--drop-columns)") from None
        if not np.isfinite(value):
            raise ValueError(f"{where}: {'NaN' if value != value else 'infinite'} value "
                             f"{cell!r}; fill or drop it first")
        values.append(value)
    return values


def check_dropped(drop: list[str], names: list[str], path: Path) -> None:
    """Every column to drop must be one of the table's ``names`` (a typo would keep it)."""
    from unimap.runtime.validation import did_you_mean

    for name in drop:
        if name not in names:
            raise ValueError(f"{path} has no column {name!r} to drop; columns: "
                             f"{', '.join(names[:20])}" + did_you_mean(name, names))


def _dropped_indices(drop: list[str], header: list[str] | None, width: int,
                     path: Path) -> set[int]:
    """The indices of the columns ``drop`` names: header names, or 0-based indices."""
    if header is not None:
        check_dropped(drop, header, path)
        return {header.index(name) for name in drop}
    indices = [str(i) for i in range(width)]
    check_dropped(drop, indices, path)
    return {int(name) for name in drop}


def _column_index(label_column: str, header: list[str] | None, width: int, path: Path) -> int:
    if header is not None and label_column in header:
        return header.index(label_column)
    if label_column.lstrip("-").isdigit():
        col = int(label_column)
        if -width <= col < width:
            return col % width
    known = f"; columns: {', '.join(header)}" if header else f" ({width} columns, no header)"
    raise ValueError(f"label column {label_column!r} not found in {path}{known}")
