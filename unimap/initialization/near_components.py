"""The spectral start of a nearly disconnected graph: groups of points joined to each other by
very weak edges only, as a supervised fit's classes are (edges between labels are scaled by
about e^-5), or clusters that touch at a few points.

Such a graph has one eigenvalue of its normalised adjacency just below 1 per group, all
nearly equal, so the d eigenvectors a spectral start takes are an arbitrary mix from that
nearly degenerate space. Groups then start on top of each other, or a small group far from the
one it is attached to, and the optimizer does not undo it (on digits, supervised, a group of
ones started beside the twos and stayed there). Here the groups are read off the leading
eigenvectors (column-pivoted QR, Damle, Minden & Ying 2019: deterministic, no k-means
restarts), placed by the spectral layout of the graph between the groups (its weights summed),
and each group is laid out on its own inside a box around its place, as disconnected
components are: the classes' ARI rose above umap-learn's (measured:
``benchmarks/results/dropin.md``; benchmarks/results/library_notes.md,
"unimap/initialization/near_components.py").

The check costs nothing on a well-connected graph: it reads the eigenvalues the spectral start
computed anyway, and only when the last of them is within ``NEAR_GAP`` of 1 does it ask ARPACK
for ``MAX_GROUPS + 1`` eigenpairs (about the time of the plain spectral start, measured as
above).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from unimap.initialization.eigenpairs import (
    DENSE_EIGH_MAX,
    arpack_largest,
    normalized_adjacency,
    oriented_layouts,
    unit_box,
)
from unimap.runtime.blas import one_blas_thread

__all__ = ["nearly_disconnected", "near_components", "group_positions", "within_groups"]


NEAR_GAP = 2e-3  # 1 - λ of the last eigenvector the layout uses below this: look for groups
# (between the gaps measured on supervised and unsupervised graphs: library_notes.md, as above)
GAP_RATIO = 2.0  # the eigenvalue after the groups' is at least this much further from 1
MAX_GROUPS = 32  # groups looked for at most (eigenpairs asked of ARPACK: one more)
# (All at once: fewer asked first was faster, but Lanczos then missed nearly equal
# eigenvalues and found too few groups; measured: library_notes.md, as above.)


def nearly_disconnected(evals: np.ndarray, n_components: int) -> bool:
    """Whether the ``n_components + 1`` leading eigenvalues of a connected graph's normalised
    adjacency (trivial one included) are all within ``NEAR_GAP`` of 1."""
    return bool(1.0 - np.sort(evals)[::-1][n_components] < NEAR_GAP)


def near_components(graph: sp.csr_matrix, n_components: int,
                    seed: int) -> tuple[int, np.ndarray] | None:
    """The groups of a nearly disconnected connected graph: their count m and each vertex's
    group (int32, numbered in order of their first vertex); None when there are at most
    ``n_components + 1`` of them (the plain spectral layout separates those) or no clear gap.

    Where there are more groups than ``MAX_GROUPS``, or ARPACK misses some of many nearly
    equal eigenvalues (Lanczos does: 24 of 40 in a test), the m vectors span the indicators of
    unions of groups; every vertex of a group has the same direction in them, so a group is
    never split, and the layout inside each union separates its members.

    m is where ``1 - λ`` jumps most, by at least ``GAP_RATIO``, to a value at least
    ``NEAR_GAP``, among m > d + 1. Each vertex then goes to the group of the pivot row whose
    direction its row of the m leading eigenvectors is closest to (Damle, Minden & Ying's
    CPQR rounding), on one BLAS thread so that the groups do not depend on the core count.
    """
    n = graph.shape[0]
    k = min(n - 1, MAX_GROUPS + 1)
    if k <= n_components + 2:
        return None
    adjacency, degrees = normalized_adjacency(graph)
    try:
        if n <= DENSE_EIGH_MAX:
            evals, evecs = np.linalg.eigh(adjacency.toarray())
        else:
            evals, evecs = arpack_largest(adjacency, k, degrees, seed)
    except Exception:  # noqa: BLE001 - the solver failed: keep the plain spectral start
        return None
    order = np.argsort(evals)[::-1][:k]
    m = _group_count(1.0 - evals[order].astype(np.float64), n_components)
    if m is None:
        return None
    vectors = np.asarray(evecs[:, order[:m]], dtype=np.float64)
    with one_blas_thread():
        _, pivots = scipy.linalg.qr(vectors.T, mode="r", pivoting=True)
        u, _, vt = np.linalg.svd(vectors[pivots[:m]].T)
        nearest = np.argmax(np.abs(vectors @ (u @ vt)), axis=1)
    _, first_vertex, labels = np.unique(nearest, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first_vertex, kind="stable"), kind="stable")
    m = first_vertex.size
    if m <= n_components + 1:
        return None
    return m, rank[labels].astype(np.int32)


def group_positions(graph: sp.csr_matrix, labels: np.ndarray, n_groups: int,
                    n_components: int) -> np.ndarray:
    """Each group's place, (n_groups, n_components) with max|coordinate| 1: the spectral
    layout of the graph between the groups (the weights between two groups summed), so that
    a group starts beside the groups it has most weight with.

    The normalised adjacency's eigenvectors, as for a whole graph; the random walk's
    (``D^-1/2 v``, which keeps the ends of a chain of groups from folding back) gave a lower
    supervised digits ARI
    (measured: benchmarks/results/library_notes.md, "unimap/initialization/near_components.py")."""
    coo = graph.tocoo()
    a, b = labels[coo.row].astype(np.int64), labels[coo.col].astype(np.int64)
    between = a != b
    weights = np.bincount(a[between] * n_groups + b[between], weights=coo.data[between],
                          minlength=n_groups * n_groups).reshape(n_groups, n_groups)
    weights = (weights + weights.T) / 2.0
    scale = 1.0 / np.sqrt(np.maximum(weights.sum(axis=1), 1e-300))
    with one_blas_thread():
        evals, evecs = np.linalg.eigh(weights * scale[:, None] * scale[None, :])
    layouts, finite = oriented_layouts(evals[None], evecs[None], n_components)
    if not finite[0]:  # cannot happen for a connected graph; the ± axes would do
        raise FloatingPointError("the layout of the groups is not finite")
    return unit_box(layouts)[0].astype(np.float64)


def within_groups(graph: sp.csr_matrix, labels: np.ndarray) -> sp.csr_matrix:
    """The graph without its edges between groups (each group is then a component of it)."""
    coo = graph.tocoo()
    keep = labels[coo.row] == labels[coo.col]
    return sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=graph.shape)


def _group_count(gaps: np.ndarray, n_components: int) -> int | None:
    """m from the sorted ``1 - λ`` of the leading eigenpairs (see :func:`near_components`),
    or None."""
    first = n_components + 2  # fewer groups than this: the plain layout separates them
    # Only jumps to a value of at least NEAR_GAP count: below it the float32 eigenvalues'
    # differences are rounding (ratios of 1e5 between 0 and 1e-7).
    ratios = np.where(gaps[first:] >= NEAR_GAP,
                      gaps[first:] / np.maximum(gaps[first - 1:-1], 1e-12), 0.0)
    if ratios.size == 0 or ratios.max() < GAP_RATIO:
        return None
    return first + int(np.argmax(ratios))
