"""Dask arrays too large for one machine, reduced on the cluster: :func:`fit_sample_transform`
draws a uniform, seeded sample of the rows (:func:`sample_rows`), fits on it in memory and
places every row with the distributed ``transform`` (:mod:`unimap.dask.transform`);
:func:`scatter_moments` streams the blocks into the row count, mean and scatter matrix that
``PCA().fit`` of a dask array diagonalises, so that data too wide for one machine is reduced
to its principal components first. :func:`checked_rows` is the input check they share with
:mod:`unimap.dask.knn`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from unimap.dask.transform import check_numeric_matrix, is_dask_collection

__all__ = ["Moments", "SamplePlacement", "checked_rows", "fit_sample_transform", "sample_rows",
           "scatter_moments"]


class Moments(NamedTuple):
    """What :func:`scatter_moments` returns."""

    n: int
    """Rows."""
    mean: np.ndarray
    """(d,) float64."""
    scatter: np.ndarray
    """(d, d) float64: ``Σ (x − mean)(x − mean)ᵀ`` over the rows."""


def scatter_moments(X: Any) -> Moments:
    """Row count, mean and centred scatter matrix of a dask array's rows, in one pass.

    Each block's own moments are computed on its worker (centred on the block's mean, in the
    data's precision, summed in float64: :func:`unimap.decomposition.pca.centred_scatter`); pairs of
    blocks are merged on the workers in a fixed binary tree (Chan, Golub and LeVeque's
    update, exact for any offset of the data: no ``Σ x xᵀ − n μ μᵀ`` cancellation), so only
    one d × d matrix reaches the client and the result depends on the chunking, not on the
    cluster. This is what ``unimap.PCA().fit`` of a dask array runs.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), numeric, row counts known
        Integer and boolean blocks are read as float32, as ``check_array`` does.

    Returns
    -------
    Moments

    Raises
    ------
    ValueError
        Unknown row counts, no rows, or a NaN or infinity in some block (named by its row
        range).

    Examples
    --------
    >>> import dask.array as da, numpy as np, unimap
    >>> X = da.random.default_rng(0).standard_normal((10_000, 4), chunks=2_500)
    >>> moments = unimap.dask.scatter_moments(X)
    >>> int(moments.n), moments.mean.shape, moments.scatter.shape
    (10000, (4,), (4, 4))
    >>> dense = X.compute()
    >>> bool(np.allclose(moments.mean, dense.mean(axis=0)))
    True
    """
    import dask

    X = checked_rows(X, "scatter_moments")
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    parts = [dask.delayed(_block_moments)(block, int(starts[b]))
             for b, block in enumerate(X.to_delayed().ravel())]
    while len(parts) > 1:  # a fixed tree: the merge order, hence the rounding, is the chunking's
        parts = [dask.delayed(_merge_moments)(*parts[i:i + 2]) if i + 1 < len(parts)
                 else parts[i] for i in range(0, len(parts), 2)]
    return parts[0].compute()


def checked_rows(X: Any, what: str) -> Any:
    """``X`` as a 2-D numeric dask array with known, non-zero row count, one column chunk."""
    check_numeric_matrix(X, what)
    _check_known_rows(X)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{what} needs at least one row and one column, got shape {X.shape}")
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X  # moments need whole rows


def _check_known_rows(X: Any) -> None:
    if not np.isfinite(X.shape[0]):
        raise ValueError("X has unknown row counts (chunks of nan rows); call "
                         "X.compute_chunk_sizes() first, or build it with known lengths")


def _block_moments(block: Any, first_row: int) -> Moments:
    from unimap.decomposition.pca import centred_scatter
    from unimap.runtime.validation import check_finite_block

    block = np.asarray(block)
    if block.dtype not in (np.float32, np.float64):
        block = block.astype(np.float32)
    check_finite_block(block, first_row)
    d = block.shape[1]
    if block.shape[0] == 0:
        return Moments(0, np.zeros(d), np.zeros((d, d)))
    mean = block.mean(axis=0, dtype=np.float64)
    return Moments(block.shape[0], mean, centred_scatter(block, mean))


def _merge_moments(a: Moments, b: Moments) -> Moments:
    n = a.n + b.n
    if a.n == 0 or b.n == 0:
        return a if b.n == 0 else b
    delta = b.mean - a.mean
    mean = a.mean + delta * (b.n / n)
    scatter = a.scatter + b.scatter + np.outer(delta, delta) * (a.n * b.n / n)
    return Moments(n, mean, scatter)


class SamplePlacement(NamedTuple):
    """What :func:`fit_sample_transform` returns."""

    embedding: Any
    """dask.array.Array of shape (n_samples, n_components), float32: every row placed."""
    sample_indices: np.ndarray
    """The rows the estimator was fitted on, sorted (int64)."""


def sample_rows(X: Any, n_sample: int, random_state: Any = None) -> tuple[np.ndarray, Any]:
    """A uniform sample of ``n_sample`` distinct rows of a dask array, computed.

    Only the sampled rows come to the client (each block gives its own); the indices are
    drawn on the client from ``random_state``, so the sample depends on the seed and the row
    count only, not on the chunking.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features), row counts known
    n_sample : int
        At most ``n_samples``.
    random_state : int, numpy Generator or None

    Returns
    -------
    indices : ndarray of shape (n_sample,), int64, sorted
    rows : ndarray of shape (n_sample, n_features)

    Examples
    --------
    >>> import dask.array as da, unimap
    >>> X = da.arange(20_000, chunks=5_000).reshape(10_000, 2)
    >>> indices, rows = unimap.dask.sample_rows(X, 5, random_state=0)
    >>> rows.shape, bool((rows[:, 0] == 2 * indices).all())  # the rows named by the indices
    ((5, 2), True)
    """
    from unimap.runtime.random_streams import seed_from_random_state
    from unimap.runtime.validation import check_int

    _check_known_rows(X)
    n = X.shape[0]
    n_sample = check_int(n_sample, "n_sample", 2, int(n))
    rng = np.random.default_rng(seed_from_random_state(random_state))
    indices = np.sort(rng.choice(int(n), size=n_sample, replace=False)).astype(np.int64)
    return indices, np.asarray(X[indices].compute())


def fit_sample_transform(estimator: Any, X: Any, n_sample: int,
                         random_state: Any = None) -> SamplePlacement:
    """Fit ``estimator`` on a uniform sample of the rows of ``X``, then place every row.

    The recipe for data that does not fit one machine (``docs/dask.md``): the sample is
    fitted in this process, and every row of ``X`` (the sample's too) is placed block by
    block by the distributed ``transform``, which is lazy. ``X``'s blocks are read twice, to
    draw the sample and to place them, unless ``X`` is persisted.

    Parameters
    ----------
    estimator : PCA, UMAP, TSNE or GDR
        Fitted in place on the sample (``estimator.embedding_`` then holds the sample's
        fitted layout; its rows in ``embedding`` are their ``transform`` placement, near it).
    X : dask.array.Array of shape (n_samples, n_features), row counts known
    n_sample : int
        Rows to fit on (at most ``n_samples``).
    random_state : int, numpy Generator or None, default=None
        Seed of the sample (the estimator's own ``random_state`` seeds the fit).

    Returns
    -------
    SamplePlacement
        ``embedding`` (lazy dask array of every row) and ``sample_indices``.

    Examples
    --------
    >>> import dask.array as da, unimap
    >>> X = da.random.default_rng(0).standard_normal((20_000, 10), chunks=5_000)
    >>> est = unimap.PCA(n_components=2)
    >>> placed = unimap.dask.sample.fit_sample_transform(est, X, n_sample=2_000, random_state=0)
    >>> placed.embedding.chunks
    ((5000, 5000, 5000, 5000), (2,))
    """
    if not is_dask_collection(X):
        raise TypeError("fit_sample_transform takes a dask.array.Array; for a NumPy array "
                        "fit and transform directly")
    indices, rows = sample_rows(X, n_sample, random_state)
    estimator.fit(rows)
    return SamplePlacement(estimator.transform(X), indices)
