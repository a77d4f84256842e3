"""Aligning one embedding of points to another of the same points, so that two maps (two
methods, two seeds) can be read side by side: the orthogonal Procrustes problem with scale."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["procrustes_align"]


def procrustes_align(reference: Any, other: Any) -> np.ndarray:
    """Rotate (or reflect), scale and shift ``other`` onto ``reference``.

    Finds the orthogonal ``R``, the scale ``s`` and the shift ``t`` that minimise
    ``‖s · other · R + t − reference‖²`` over all points (Schönemann's solution: ``R = U Vᵀ``
    from the SVD ``U Σ Vᵀ`` of the centred ``otherᵀ · reference``, ``s = trace(Σ) / ‖other‖²``
    centred). The shape of ``other`` is unchanged: distances within it are all multiplied by
    ``s``, nothing else.

    Parameters
    ----------
    reference : array-like of shape (n_samples, n_components)
    other : array-like of shape (n_samples, n_components)
        The same points, row for row.

    Returns
    -------
    ndarray of float64, shape (n_samples, n_components)
        ``other`` aligned to ``reference``.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.random.default_rng(0).normal(size=(50, 2))
    >>> turned = 3 * a @ np.array([[0.0, 1.0], [1.0, 0.0]]) + 7  # a reflection, scaled, moved
    >>> bool(np.allclose(procrustes_align(a, turned), a))
    True
    """
    reference = np.asarray(reference, dtype=np.float64)
    other = np.asarray(other, dtype=np.float64)
    if reference.ndim != 2 or reference.shape != other.shape:
        raise ValueError(f"procrustes_align needs two embeddings of the same shape (n, d), got "
                         f"{reference.shape} and {other.shape}")
    if not (np.isfinite(reference).all() and np.isfinite(other).all()):
        raise ValueError("procrustes_align: the embeddings contain NaN or infinite values")
    ref_mean, other_mean = reference.mean(axis=0), other.mean(axis=0)
    ref_c, other_c = reference - ref_mean, other - other_mean
    norm = float((other_c ** 2).sum())
    if norm == 0.0:  # all points in one place: only the shift is defined
        return np.broadcast_to(ref_mean, other.shape).copy()
    u, sigma, vt = np.linalg.svd(other_c.T @ ref_c)
    rotation = u @ vt
    scale = float(sigma.sum()) / norm
    return scale * other_c @ rotation + ref_mean
