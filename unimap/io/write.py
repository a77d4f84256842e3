"""Writing embeddings: ``.npy``, ``.csv``/``.tsv`` (with a header), ``.parquet``, or into an
``.h5ad`` (``obsm["X_<name>"]`` plus the parameters in ``uns``). :func:`check_output_path`
checks a target (its suffix, the optional library it needs) before any work is done, and
:func:`write_embedding` writes it atomically: the whole file is written beside the target and
renamed into place, so a failure leaves no partial file and keeps the previous one. pyarrow
and anndata are imported only when such a file is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from unimap.io.atomic import atomic_path
from unimap.io.read import import_optional, read_anndata

__all__ = ["WRITE_FORMATS", "write_embedding", "check_output_path", "embedding_columns"]


WRITE_FORMATS = (".npy", ".csv", ".tsv", ".parquet", ".h5ad")
"""File suffixes :func:`write_embedding` writes."""


def embedding_columns(n_components: int, name: str = "unimap") -> list[str]:
    """Column names of a written embedding: ``<name>1, <name>2, ...`` (``umap1, umap2``).

    Examples
    --------
    >>> from unimap.io import embedding_columns
    >>> embedding_columns(3, "umap")
    ['umap1', 'umap2', 'umap3']
    """
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

    Examples
    --------
    >>> from unimap.io import check_output_path
    >>> check_output_path("map.csv").name
    'map.csv'
    >>> check_output_path("map.xlsx")
    Traceback (most recent call last):
    ValueError: cannot write an embedding as 'map.xlsx': use one of ...
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in WRITE_FORMATS:
        raise ValueError(f"cannot write an embedding as {path.name!r}: use one of "
                         f"{', '.join(WRITE_FORMATS)}")
    if suffix == ".parquet":
        import_optional("pyarrow.parquet")
    elif suffix == ".h5ad":
        import_optional("anndata")
    return path


def write_embedding(
    path: str | os.PathLike,
    embedding: Any,
    *,
    name: str = "unimap",
    params: dict[str, Any] | None = None,
    key_added: str | None = None,
    record: dict[str, Any] | None = None,
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
    record : dict or None, default=None
        ``.h5ad`` only: unimap's record of the fit, stored as ``uns["unimap"][<name>]``
        beside scanpy's ``uns[<name>]`` (as :mod:`unimap.tl` writes it).

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

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.io import read_table, write_embedding
    >>> embedding = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> write_embedding("map.csv", embedding, name="umap").name
    'map.csv'
    >>> print(open("map.csv").read().splitlines()[0])
    umap1,umap2
    >>> X, _ = read_table("map.csv")
    >>> bool(np.array_equal(X, embedding))
    True
    """
    path = check_output_path(path)
    embedding = np.asarray(embedding)
    if embedding.ndim != 2:
        raise ValueError(f"an embedding must be 2-D, got shape {embedding.shape}")
    suffix = path.suffix.lower()
    columns = embedding_columns(embedding.shape[1], name)
    if suffix == ".h5ad":
        _write_h5ad(path, embedding, key_added or f"X_{name}", key_added or name, params,
                    record)
        return path
    with atomic_path(path) as tmp:
        if suffix == ".npy":
            with open(tmp, "wb") as fh:
                np.save(fh, embedding)
        elif suffix in (".csv", ".tsv"):
            delimiter = "\t" if suffix == ".tsv" else ","
            # 9 significant digits give back every float32 exactly, 17 every float64
            digits = 9 if embedding.dtype.itemsize <= 4 else 17
            np.savetxt(tmp, embedding, delimiter=delimiter, fmt=f"%.{digits}g",
                       header=delimiter.join(columns), comments="")
        else:
            pa = import_optional("pyarrow")
            pq = import_optional("pyarrow.parquet")
            table = pa.table({c: np.ascontiguousarray(embedding[:, i])
                              for i, c in enumerate(columns)})
            pq.write_table(table, tmp)
    return path


def _write_h5ad(path: Path, embedding: np.ndarray, obsm_key: str, uns_key: str,
                params: dict[str, Any] | None, record: dict[str, Any] | None) -> None:
    anndata = import_optional("anndata")
    if path.exists():
        adata = read_anndata(path)
        if adata.n_obs != embedding.shape[0]:
            raise ValueError(f"{path} has {adata.n_obs} observations but the embedding has "
                             f"{embedding.shape[0]} rows")
    else:
        import pandas as pd  # a dependency of anndata

        adata = anndata.AnnData(obs=pd.DataFrame(index=np.arange(embedding.shape[0]).astype(str)))
    adata.obsm[obsm_key] = embedding
    if params is not None:
        adata.uns[uns_key] = params
    if record is not None:
        if not isinstance(adata.uns.get("unimap"), dict):
            adata.uns["unimap"] = {}
        adata.uns["unimap"][uns_key] = record
    with atomic_path(path) as tmp:
        adata.write_h5ad(tmp)
