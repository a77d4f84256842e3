"""Read data tables and write embeddings: ``.npy``, ``.npz``, ``.csv``/``.tsv``, ``.parquet``
and ``.h5ad``.

:func:`read_table` returns ``(X, labels)`` for any of these; :func:`write_embedding` writes an
embedding as ``.npy``, ``.csv``/``.tsv`` (with a header), ``.parquet``, or into an ``.h5ad``
(``obsm["X_<name>"]`` plus the parameters in ``uns``). Writes are atomic: the whole file is
written beside the target and renamed into place, so a failure leaves no partial file and
keeps the previous one.

Parquet needs pyarrow (``pip install "unimap[io]"``) and ``.h5ad`` needs anndata
(``pip install "unimap[anndata]"``); both are imported only when such a file is used.
"""

from __future__ import annotations

import csv
import importlib
import os
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.io.atomic import atomic_path

__all__ = ["READ_FORMATS", "WRITE_FORMATS", "read_table", "write_embedding",
           "column_names", "read_columns",
           "check_output_path", "embedding_columns"]

READ_FORMATS = (".npy", ".npz", ".csv", ".tsv", ".txt", ".parquet", ".h5ad")
"""File suffixes :func:`read_table` reads."""

WRITE_FORMATS = (".npy", ".csv", ".tsv", ".parquet", ".h5ad")
"""File suffixes :func:`write_embedding` writes."""

_EXTRAS = {"pyarrow": ("io", "Parquet files"), "anndata": ("anndata", ".h5ad files")}


def _optional(module: str) -> Any:
    """Import an optional dependency, or raise an ImportError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra, use = _EXTRAS[module.split(".")[0]]
        raise ImportError(f"{use} need {module.split('.')[0]}, which is not installed: "
                          f'pip install "unimap[{extra}]"') from exc


# -- reading ---------------------------------------------------------------------------------
def read_table(
    path: str | os.PathLike,
    label_column: str | int | None = None,
    *,
    use_rep: str | None = None,
) -> tuple[Any, np.ndarray | None]:
    """Read a data matrix (and optionally labels) from a file.

    Parameters
    ----------
    path : str or path-like
        ``.npy``; ``.npz`` (a dense array, or a sparse matrix written by
        ``scipy.sparse.save_npz``); ``.csv``, ``.tsv`` or ``.txt`` (comma-separated; ``.tsv``
        tab-separated), with or without a header row; ``.parquet``; ``.h5ad``.
    label_column : str, int or None, default=None
        Labels to split off the features: a CSV column (header name or 0-based index), a
        Parquet column name, a column of an ``.h5ad``'s ``obs``, or the name of another array
        in an ``.npz``. Not for ``.npy`` (use a separate labels file).
    use_rep : str or None, default=None
        ``.h5ad``: ``"X"`` or a key of ``obsm`` (default ``obsm["X_pca"]`` when present, else
        ``X``). ``.npz``: the name of the array (default: the only array, or the sparse
        matrix the file holds).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), or a scipy.sparse CSR matrix
        float64 from CSV and Parquet; the stored dtype from ``.npy``, ``.npz`` and ``.h5ad``.
    labels : ndarray of shape (n_samples,) or None
        Integers when every label is a whole number, else strings (or the stored values).

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        An empty or unreadable file, an unsupported suffix, or content that is not a numeric
        table; the message names the file and, for tables, the column and row at fault.
    ImportError
        pyarrow (``.parquet``) or anndata (``.h5ad``) is missing; the message names the extra.

    Examples
    --------
    >>> X, labels = read_table("cells.csv", label_column="cell_type")  # doctest: +SKIP
    >>> X, labels = read_table("pbmc.h5ad", "louvain", use_rep="X")  # doctest: +SKIP
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input file not found: {path}")
    if not path.is_file():
        raise ValueError(f"{path} is not a file")
    suffix = path.suffix.lower()
    if suffix not in READ_FORMATS:
        raise ValueError(f"unsupported input format {path.suffix!r} of {path}: use one of "
                         f"{', '.join(READ_FORMATS)}")
    if use_rep is not None and suffix not in (".h5ad", ".npz"):
        raise ValueError(f"use_rep (--use-rep) applies to .h5ad and .npz files, not {path.name}")
    if path.stat().st_size == 0:
        raise ValueError(f"{path} is empty")
    if isinstance(label_column, (int, np.integer)):
        label_column = str(label_column)
    if suffix == ".npy":
        if label_column is not None:
            raise ValueError("label_column (--label-column) does not apply to .npy input; "
                             "give the labels as a separate file (--labels FILE)")
        return _as_table(_read_npy(path), path), None
    if suffix == ".npz":
        return _read_npz(path, use_rep, label_column)
    if suffix == ".parquet":
        return _read_parquet(path, label_column)
    if suffix == ".h5ad":
        return _read_h5ad(path, use_rep, label_column)
    return _read_csv(path, label_column)


def _as_table(X: Any, path: Path) -> Any:
    if not sp.issparse(X) and getattr(X, "ndim", 2) != 2:
        raise ValueError(f"{path} holds an array of shape {X.shape}; expected a 2-D table "
                         "(rows × features)")
    if X.shape[0] == 0:
        raise ValueError(f"{path} has no rows")
    return X


def _read_npy(path: Path) -> np.ndarray:
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            raise ValueError(f"cannot read {path} as .npy: not a NumPy .npy file")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise ValueError(f"{path} holds Python objects (pickled); unimap reads numeric "
                             "arrays only") from None
        raise ValueError(f"cannot read {path} as .npy: {exc}") from None
    except (OSError, EOFError) as exc:
        raise ValueError(f"cannot read {path} as .npy: {exc}") from None


_SPARSE_KEYS = {"format", "shape", "data"}


def _read_npz(path: Path, key: str | None, label_column: str | None
              ) -> tuple[Any, np.ndarray | None]:
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"cannot read {path} as .npz: {exc}") from None
    with archive:
        names = list(archive.files)
        if not names:
            raise ValueError(f"{path} holds no arrays")
        if key is None and set(names) >= _SPARSE_KEYS:
            if label_column is not None:
                raise ValueError(f"{path} holds a sparse matrix; label_column does not apply")
            try:
                X = sp.load_npz(path).tocsr()
            except (ValueError, OSError, KeyError) as exc:
                raise ValueError(f"cannot read {path} as a sparse matrix: {exc}") from None
            return _as_table(X, path), None
        candidates = [n for n in names if n != label_column]
        if key is None:
            if len(candidates) != 1:
                raise ValueError(f"{path} holds several arrays ({', '.join(names)}); choose "
                                 "one with use_rep (--use-rep)")
            key = candidates[0]
        if key not in names:
            raise ValueError(f"{path} has no array {key!r}; it has: {', '.join(names)}")
        try:
            X = archive[key]
            labels = None if label_column is None else archive[_npz_label_key(
                path, label_column, names)]
        except ValueError as exc:
            if "allow_pickle" in str(exc):
                raise ValueError(f"{path} holds Python objects (pickled); unimap reads "
                                 "numeric arrays only") from None
            raise ValueError(f"cannot read {path}: {exc}") from None
    X = _as_table(X, path)
    if labels is not None and labels.shape != (X.shape[0],):
        raise ValueError(f"labels {label_column!r} of {path} have shape {labels.shape}; "
                         f"expected ({X.shape[0]},), one per row")
    return X, labels


def _npz_label_key(path: Path, label_column: str, names: list[str]) -> str:
    if label_column not in names:
        raise ValueError(f"{path} has no label array {label_column!r}; it has: "
                         f"{', '.join(names)}")
    return label_column


# CSV ----------------------------------------------------------------------------------------
def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_csv(path: Path, label_column: str | None) -> tuple[np.ndarray, np.ndarray | None]:
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
                  if i != label_index and c.strip() and not _is_number(c)]
    header = [c.strip() for c in first] if text_cells else None
    names = ([repr(c) for c in header] if header
             else [f"{i} (0-based, no header)" for i in range(width)])
    labels_at = None if label_column is None else _column_index(label_column, header, width,
                                                                 path)
    features = [i for i in range(width) if i != labels_at]
    if not features:
        raise ValueError(f"{path} has no feature column besides the labels")
    X = _fast_csv(path, delimiter, first_line if header else first_line - 1, width,
                  features if labels_at is not None else None)
    labels = None
    if X is None or labels_at is not None:
        X_slow, labels = _slow_csv(path, delimiter, header is not None, width, features,
                                   labels_at, names, X is None)
        X = X_slow if X is None else X
    if X.shape[0] == 0:
        raise ValueError(f"{path} has a header but no rows")
    if labels is not None and all(_is_number(v) for v in labels):
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
                             "if it holds labels, or drop it") from None
        if not np.isfinite(value):
            raise ValueError(f"{where}: {'NaN' if value != value else 'infinite'} value "
                             f"{cell!r}; fill or drop it first")
        values.append(value)
    return values


def _column_index(label_column: str, header: list[str] | None, width: int, path: Path) -> int:
    if header is not None and label_column in header:
        return header.index(label_column)
    if label_column.lstrip("-").isdigit():
        col = int(label_column)
        if -width <= col < width:
            return col % width
    known = f"; columns: {', '.join(header)}" if header else f" ({width} columns, no header)"
    raise ValueError(f"label column {label_column!r} not found in {path}{known}")


# Parquet ------------------------------------------------------------------------------------
def _read_parquet(path: Path, label_column: str | None) -> tuple[np.ndarray, np.ndarray | None]:
    pa = _optional("pyarrow")
    pq = _optional("pyarrow.parquet")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path} as Parquet: {exc}") from None
    # pandas' index, stored as a column by DataFrame.to_parquet, is no feature
    names = [n for n in table.column_names if not n.startswith("__index_level_")]
    if label_column is not None and label_column not in names:
        raise ValueError(f"label column {label_column!r} not found in {path}; columns: "
                         f"{', '.join(names)}")
    if table.num_rows == 0:
        raise ValueError(f"{path} has no rows")
    features = [n for n in names if n != label_column]
    if not features:
        raise ValueError(f"{path} has no feature column besides the labels")
    columns = []
    for name in features:
        column = table.column(name)
        kind = column.type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                or pa.types.is_boolean(kind) or pa.types.is_decimal(kind)):
            raise ValueError(f"{path}: column {name!r} is not numeric (type {kind}); pass it "
                             "as label_column (--label-column) if it holds labels, or drop it")
        if column.null_count:
            row = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"{path}: column {name!r} has missing values (first in row "
                             f"{row}); fill or drop them first")
        values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
        if not np.isfinite(values).all():
            row = int(np.flatnonzero(~np.isfinite(values))[0])
            raise ValueError(f"{path}: column {name!r} has NaN or infinite values (first in "
                             f"row {row}); fill or drop them first")
        columns.append(values)
    X = np.column_stack(columns)
    labels = None
    if label_column is not None:
        labels = np.asarray(table.column(label_column).to_numpy(zero_copy_only=False))
        if labels.dtype.kind == "O":
            labels = labels.astype(str)
    return X, labels


# h5ad ---------------------------------------------------------------------------------------
def _read_anndata(path: Path) -> Any:
    anndata = _optional("anndata")
    try:
        return anndata.read_h5ad(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read {path} as .h5ad: {exc}") from None


def _read_h5ad(path: Path, use_rep: str | None, label_column: str | None
               ) -> tuple[Any, np.ndarray | None]:
    from unimap.io.anndata_input import representation

    adata = _read_anndata(path)
    try:
        X, _, _ = representation(adata, use_rep)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    labels = None
    if label_column is not None:
        if label_column not in adata.obs.columns:
            raise ValueError(f"{path}: obs has no column {label_column!r}; it has: "
                             f"{', '.join(map(str, adata.obs.columns)) or 'none'}")
        column = adata.obs[label_column]
        labels = np.asarray(column.astype(str) if column.dtype.kind not in "biuf" else column)
    return _as_table(X, path), labels


# -- writing ---------------------------------------------------------------------------------
def column_names(path: str | os.PathLike) -> list[str]:
    """The column names of a table of metadata: a CSV/TSV header (else "0", "1", ...), a
    Parquet schema, an ``.h5ad``'s ``obs`` columns, or "0", "1", ... of an ``.npy``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        array = np.load(path, allow_pickle=False, mmap_mode="r")
        return [str(i) for i in range(array.shape[1] if array.ndim == 2 else 1)]
    if suffix == ".parquet":
        return list(_optional("pyarrow.parquet").read_schema(path).names)
    if suffix == ".h5ad":
        return [str(c) for c in _read_anndata(path).obs.columns]
    if suffix not in (".csv", ".tsv", ".txt"):
        raise ValueError(f"unsupported table format {path.suffix!r}: use .csv, .tsv, .parquet, "
                         ".h5ad or .npy")
    with open(path, newline="") as fh:
        first = next(csv.reader(fh, delimiter="\t" if suffix == ".tsv" else ","), [])
    if all(_is_number(c) for c in first):
        return [str(i) for i in range(len(first))]
    return [c.strip() for c in first]


def read_columns(path: str | os.PathLike, names: list[str]) -> dict[str, np.ndarray]:
    """Columns ``names`` of a metadata table (see :func:`column_names`): numbers as numbers
    (whole numbers as int64), anything else as text. Unlike :func:`read_table`, any number of
    text columns."""
    path = Path(path)
    available = column_names(path)
    missing = [name for name in names if name not in available]
    if missing:
        raise ValueError(f"{path.name} has no column {', '.join(map(repr, missing))}; "
                         f"its columns: {', '.join(available)}")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        array = np.load(path, allow_pickle=False)
        array = array.reshape(-1, 1) if array.ndim == 1 else array
        return {name: array[:, int(name)] for name in names}
    if suffix == ".parquet":
        table = _optional("pyarrow.parquet").read_table(path, columns=names)
        raw = {name: table.column(name).to_numpy(zero_copy_only=False) for name in names}
    elif suffix == ".h5ad":
        obs = _read_anndata(path).obs
        raw = {name: obs[name].to_numpy() for name in names}
    else:
        with open(path, newline="") as fh:
            rows = [r for r in csv.reader(fh, delimiter="\t" if suffix == ".tsv" else ",") if r]
        body = rows[1:] if not all(_is_number(c) for c in rows[0]) else rows
        for line, row in enumerate(body, start=len(rows) - len(body) + 1):
            if len(row) != len(available):
                raise ValueError(f"{path}: line {line} has {len(row)} fields, expected "
                                 f"{len(available)}")
        raw = {name: np.array([r[available.index(name)].strip() for r in body]) for name in names}
    columns = {}
    for name, values in raw.items():
        columns[name] = _as_number_column(values)
    return columns


def _as_number_column(values: np.ndarray) -> np.ndarray:
    """Text that is all numbers becomes numbers (int64 when whole), other values text."""
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    if values.dtype.kind == "f":
        return values
    text = values.astype(str)
    if not all(_is_number(v) for v in text):
        return text
    numbers = text.astype(np.float64)
    whole = np.isfinite(numbers).all() and np.all(numbers == np.round(numbers))
    return numbers.astype(np.int64) if whole else numbers


def embedding_columns(n_components: int, name: str = "unimap") -> list[str]:
    """Column names of a written embedding: ``<name>1, <name>2, ...`` (``umap1, umap2``)."""
    return [f"{name}{i + 1}" for i in range(n_components)]


def check_output_path(path: str | os.PathLike) -> Path:
    """Check that :func:`write_embedding` can write ``path`` (its suffix, and the optional
    library it needs), before any work is done. Returns it as a Path.

    Raises
    ------
    ValueError
        An unsupported suffix.
    ImportError
        pyarrow or anndata missing for ``.parquet`` or ``.h5ad``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in WRITE_FORMATS:
        raise ValueError(f"cannot write an embedding as {path.name!r}: use one of "
                         f"{', '.join(WRITE_FORMATS)}")
    if suffix == ".parquet":
        _optional("pyarrow.parquet")
    elif suffix == ".h5ad":
        _optional("anndata")
    return path


def write_embedding(
    path: str | os.PathLike,
    embedding: Any,
    *,
    name: str = "unimap",
    params: dict[str, Any] | None = None,
    key_added: str | None = None,
) -> Path:
    """Write an embedding atomically (a failure leaves no partial file).

    Parameters
    ----------
    path : str or path-like
        ``.npy``; ``.csv`` or ``.tsv`` with a header ``<name>1,<name>2,...``; ``.parquet``
        with those column names (float32); or ``.h5ad``: an existing file gets
        ``obsm["X_<name>"]`` and ``uns[<name>]`` added (the whole file is rewritten to a
        temporary file and renamed into place); a new one holds only the embedding.
    embedding : array of shape (n_samples, n_components)
    name : str, default="unimap"
        The method's name (``"umap"``, ``"tsne"``, ...): the column names and the h5ad keys.
    params : dict or None, default=None
        ``.h5ad`` only: stored as ``uns[<name>]`` (e.g. ``{"params": {...}}``).
    key_added : str or None, default=None
        ``.h5ad`` only: the ``obsm`` and ``uns`` key instead of ``X_<name>`` and ``<name>``.

    Returns
    -------
    path : pathlib.Path

    Raises
    ------
    ValueError
        An unsupported suffix, a non 2-D embedding, or an ``.h5ad`` whose number of
        observations differs from the embedding's rows.
    ImportError
        pyarrow or anndata missing (the message names the extra to install).
    """
    path = check_output_path(path)
    embedding = np.asarray(embedding)
    if embedding.ndim != 2:
        raise ValueError(f"an embedding must be 2-D, got shape {embedding.shape}")
    suffix = path.suffix.lower()
    columns = embedding_columns(embedding.shape[1], name)
    if suffix == ".h5ad":
        _write_h5ad(path, embedding, key_added or f"X_{name}", key_added or name, params)
        return path
    with atomic_path(path) as tmp:
        if suffix == ".npy":
            with open(tmp, "wb") as fh:
                np.save(fh, embedding)
        elif suffix in (".csv", ".tsv"):
            delimiter = "\t" if suffix == ".tsv" else ","
            np.savetxt(tmp, embedding, delimiter=delimiter, fmt="%.6g",
                       header=delimiter.join(columns), comments="")
        else:
            pa = _optional("pyarrow")
            pq = _optional("pyarrow.parquet")
            table = pa.table({c: np.ascontiguousarray(embedding[:, i])
                              for i, c in enumerate(columns)})
            pq.write_table(table, tmp)
    return path


def _write_h5ad(path: Path, embedding: np.ndarray, obsm_key: str, uns_key: str,
                params: dict[str, Any] | None) -> None:
    anndata = _optional("anndata")
    if path.exists():
        adata = _read_anndata(path)
        if adata.n_obs != embedding.shape[0]:
            raise ValueError(f"{path} has {adata.n_obs} observations but the embedding has "
                             f"{embedding.shape[0]} rows")
    else:
        import pandas as pd  # a dependency of anndata

        adata = anndata.AnnData(obs=pd.DataFrame(index=np.arange(embedding.shape[0]).astype(str)))
    adata.obsm[obsm_key] = embedding
    if params is not None:
        adata.uns[uns_key] = params
    with atomic_path(path) as tmp:
        adata.write_h5ad(tmp)
