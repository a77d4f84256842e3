"""The spectral start of an embedding: the leading eigenvectors of the graph's normalised
adjacency (ARPACK above a few dozen vertices, dense ``eigh`` below), oriented so that they do
not depend on the solver (:func:`spectral_layout`), and, for a disconnected graph, each
connected component laid out on its own inside a box around its place in a meta layout of the
components, small components in batches and large ones on the fit's threads
(:func:`spectral_init`). Kept apart from the other starts of
:mod:`unimap.initialization.layouts` for its size; its fallback is their random start.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.initialization.eigenpairs import (
    DENSE_EIGH_MAX,
    arpack_largest,
    normalized_adjacency,
    oriented_layouts,
    unit_box,
)
from unimap.initialization.near_components import (
    group_positions,
    near_components,
    nearly_disconnected,
    within_groups,
)
from unimap.initialization.random_layout import random_init
from unimap.runtime.blas import one_blas_thread
from unimap.runtime.ordering import relabelled
from unimap.runtime.random_streams import spawn_seeds, spawned_seeds_at
from unimap.runtime.user_warnings import warn_user

__all__ = ["spectral_init", "spectral_layout", "connected_components"]


def spectral_layout(graph: sp.spmatrix, n_components: int, seed: int,
                    limit_blas: bool = True, device: str = "cpu") -> np.ndarray | None:
    """Eigenvectors 2..(d+1) of the symmetric normalised Laplacian of a connected graph.

    The smallest eigenvectors of ``L = I − D^{-1/2} W D^{-1/2}`` are the largest of the
    normalised adjacency ``D^{-1/2} W D^{-1/2}``, which ARPACK finds much faster (no
    shift-invert needed). Returns None if the graph is too small or the solver fails.
    ``limit_blas=False``: the caller has already limited BLAS to one thread.
    ``device="cuda"``: LOBPCG on the GPU above ``DENSE_EIGH_MAX`` vertices
    (:mod:`unimap.initialization.spectral_cuda`), ARPACK here if it does not converge.
    """
    pairs = _leading_pairs(graph, n_components, seed, limit_blas, device)
    return None if pairs is None else _layout_of(pairs, n_components)


def _layout_of(pairs: tuple[np.ndarray, np.ndarray], n_components: int) -> np.ndarray | None:
    layouts, finite = oriented_layouts(pairs[0][None], pairs[1][None], n_components)
    return layouts[0] if finite[0] else None


def _leading_pairs(graph: sp.spmatrix, n_components: int, seed: int,
                   limit_blas: bool = True,
                   device: str = "cpu") -> tuple[np.ndarray, np.ndarray] | None:
    """The ``n_components + 1`` largest eigenpairs of the normalised adjacency (all of them
    below ``DENSE_EIGH_MAX`` vertices), or None (see :func:`spectral_layout`)."""
    n = graph.shape[0]
    k = n_components + 1
    if n <= k:
        return None
    if device == "cuda" and n > DENSE_EIGH_MAX:
        from unimap.initialization.spectral_cuda import spectral_layout_cuda

        found = spectral_layout_cuda(sp.csr_matrix(graph), n_components, seed)
        if found is not None:
            return found
        warn_user("LOBPCG on the GPU did not converge for the spectral initialization; "
                  "ARPACK computes it on the CPU")
    adjacency, degrees = normalized_adjacency(graph)
    try:
        if n <= DENSE_EIGH_MAX:
            return np.linalg.eigh(adjacency.toarray())
        return arpack_largest(adjacency, k, degrees, seed, limit_blas)
    except Exception as exc:  # ARPACK non-convergence or LAPACK failure
        warn_user(f"spectral initialization failed ({exc})")
        return None


def spectral_init(
    graph: sp.spmatrix,
    n_components: int,
    seed: int,
    data: np.ndarray | None = None,
    device: str = "cpu",
) -> tuple[np.ndarray, dict]:
    """Spectral embedding of a (possibly disconnected) affinity graph.

    Each connected component gets its own spectral layout (random if it is too small or the
    eigensolver fails), scaled into a box around the component's position in a meta layout:
    the ± coordinate axes for few components, else the PCA of the component centroids in
    ``data`` (random directions without data). ``data`` may instead be an object whose
    ``component_sums(labels, n_labels)`` returns the per-label sums of its rows, float64 of
    shape (n_labels, n_features) (rows that are not in memory).

    ``seed`` is split into three streams: the eigensolver's start vector, the tie-breaking
    noise, and the random layouts (fallback, meta positions, small components).
    ``device="cuda"`` lays out a connected graph on the GPU (:func:`spectral_layout`); the
    components of a disconnected one are laid out on the CPU. A connected graph that is
    nearly disconnected (:mod:`unimap.initialization.near_components`) is laid out as its
    groups, each in its own box around its place in the layout of the graph between them.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components), float32
    info : dict
        ``{"method": "spectral", "n_graph_components": int, "fallback": str | None}``, and
        ``"n_near_components": int`` where the graph was laid out as nearly disconnected groups.
    """
    solver_seed, noise_seed, layout_seed = spawn_seeds(seed, 3)
    graph = sp.csr_matrix(graph)
    n_comp, labels = connected_components(graph)
    info: dict[str, Any] = {"method": "spectral", "n_graph_components": int(n_comp),
                            "fallback": None}
    if n_comp == 1:
        pairs = _leading_pairs(graph, n_components, solver_seed, device=device)
        layout = None if pairs is None else _layout_of(pairs, n_components)
        if layout is not None and nearly_disconnected(pairs[0], n_components):
            groups = near_components(graph, n_components, solver_seed)
            if groups is not None:
                n_groups, labels = groups
                info["n_near_components"] = n_groups
                meta = group_positions(graph, labels, n_groups, n_components)
                layout = _multi_component(within_groups(graph, labels), labels, n_groups,
                                          n_components, solver_seed, layout_seed, data, meta)
        if layout is not None:
            return _expand(layout, noise_seed), info
        info["fallback"] = "random (eigensolver failed or graph too small)"
        if graph.shape[0] > n_components + 1:
            warn_user("spectral initialization failed; using random initialization")
        return random_init(graph.shape[0], n_components, layout_seed), info
    warn_user(
        f"the neighbour graph has {n_comp} connected components; each is laid out "
        "separately and they are placed apart (distances between them are not meaningful)")
    layout = _multi_component(graph, labels, n_comp, n_components, solver_seed, layout_seed,
                              data)
    return _expand(layout, noise_seed), info


def connected_components(graph: sp.csr_matrix) -> tuple[int, np.ndarray]:
    """The connected components of a graph, its edges taken as undirected: their count, and
    each vertex's component (int32, numbered by smallest vertex, as scipy's
    ``connected_components(graph, directed=False)``)."""
    from unimap.initialization.components_numba import weak_components

    labels = np.empty(graph.shape[0], dtype=np.int32)
    n_comp = weak_components(graph.indptr, graph.indices, labels)
    return int(n_comp), labels


def _expand(layout: np.ndarray, seed: int, max_coord: float = 10.0) -> np.ndarray:
    """Scale to ``max|coord| = max_coord`` and add tiny noise to break exact ties."""
    scale = max_coord / max(np.abs(layout).max(), 1e-12)
    rng = np.random.default_rng(seed)
    noise = rng.normal(scale=1e-4, size=layout.shape)
    return (layout * scale + noise).astype(np.float32)


def _meta_positions(labels, sizes, n_components, seed, data) -> np.ndarray:
    """One position per connected component: the ± axes for few components, else the
    principal axes of the component centroids in ``data`` (random directions without it)."""
    n_comp = sizes.shape[0]
    if n_comp <= 2 * n_components:
        half = int(np.ceil(n_comp / 2))
        base = np.eye(half, n_components)
        return np.vstack([base, -base])[:n_comp]
    if data is not None and not sp.issparse(data):
        # Centroids by one sparse product, not a pass over the data per component (measured:
        # benchmarks/results/library_notes.md, "unimap/initialization/spectral.py"); rows
        # that live elsewhere (a dask array's, unimap.dask.fit) sum themselves
        sums = (data.component_sums(labels, n_comp) if hasattr(data, "component_sums")
                else component_sums(labels, n_comp, data))
        centroids = sums / sizes[:, None]
        centroids -= centroids.mean(axis=0)
        if n_comp > centroids.shape[1]:  # principal axes from the small covariance matrix
            _, axes = np.linalg.eigh(centroids.T @ centroids)
            meta = centroids @ axes[:, ::-1][:, :n_components]
        else:
            u, s, _ = np.linalg.svd(centroids, full_matrices=False)
            meta = u[:, :n_components] * s[:n_components]
        if meta.shape[1] == n_components and np.ptp(meta, axis=0).min() > 0:
            return meta / np.abs(meta).max()
    rng = np.random.default_rng(seed)
    meta = rng.standard_normal((n_comp, n_components))
    return meta / np.linalg.norm(meta, axis=1, keepdims=True)


# Bytes of the float64 copy of data rows that component_sums converts at a time.
_CENTROID_BLOCK_BYTES = 64 << 20


def component_sums(labels: np.ndarray, n_comp: int, data: np.ndarray) -> np.ndarray:
    """Per-component sums of the rows of ``data``, float64, shape (n_comp, n_features).

    Blocks of rows are converted to float64 (no float64 copy of the whole data: MNIST
    upsampled to 1M rows would need 6 GB) and added to their components' sums in row order
    (:func:`unimap.initialization.components_numba.add_rows_by_label`), so each sum runs over the
    same points in the same order as the product of a component indicator matrix with ``data``:
    the result is bitwise that product's.
    """
    from unimap.initialization.components_numba import add_rows_by_label

    n, n_features = data.shape
    labels = np.ascontiguousarray(labels, dtype=np.int32)
    sums = np.zeros((n_comp, n_features), dtype=np.float64)
    height = max(1, _CENTROID_BLOCK_BYTES // (8 * max(n_features, 1)))
    for start in range(0, n, height):
        block = np.ascontiguousarray(data[start:start + height], dtype=np.float64)
        add_rows_by_label(labels[start:start + height], block, sums)
    return sums


def _multi_component(graph, labels, n_comp, n_components, solver_seed, layout_seed,
                     data, meta=None) -> np.ndarray:
    """Each component laid out on its own (spectral, or random when it is too small), in a
    box of radius a quarter of the gap to the nearest other component's meta position
    (``meta``, else :func:`_meta_positions`)."""
    from scipy.spatial import cKDTree

    meta_seed, small_seed = spawn_seeds(layout_seed, 2)
    sizes = np.bincount(labels, minlength=n_comp)
    if meta is None:
        meta = _meta_positions(labels, sizes, n_components, meta_seed, data)
    gaps = cKDTree(meta).query(meta, k=2)[0][:, 1]
    radius = np.maximum(gaps / 4.0, 1e-3)
    # Components too small for a spectral layout (most of them when there are thousands)
    # are placed at random in one go; the others one by one.
    rng = np.random.default_rng(small_seed)
    layout = rng.uniform(-1.0, 1.0, size=(graph.shape[0], n_components))
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    # The graph with each component's rows and columns contiguous, made once: a component's
    # block is then a slice. (graph[members][:, members] per component cost O(n) each: MNIST
    # upsampled to 1M rows has 69,717 components.) Members stay in ascending order, so each
    # block holds the same entries in the same order as before.
    grouped = relabelled(graph, order)
    laid_out = sizes > n_components + 1
    dense = np.flatnonzero(laid_out & (sizes <= DENSE_EIGH_MAX))
    large = np.flatnonzero(laid_out & (sizes > DENSE_EIGH_MAX))
    if dense.size:
        # Thousands of small components (69,717 in MNIST upsampled to 1M): one batched eigh
        # per component size instead of a Python round per component (measured:
        # benchmarks/results/library_notes.md, "unimap/initialization/spectral.py"). One BLAS
        # thread, as _run_largest_first sets for the one-by-one path: LAPACK's result on a
        # matrix then does not depend on the core count, and threads cost more than they
        # give on matrices this small.

        with one_blas_thread():
            for batch, subs in _dense_layouts(grouped, bounds, sizes, dense, n_components):
                rows = (bounds[batch][:, None] + np.arange(subs.shape[1])).ravel()
                layout[order[rows]] = subs.reshape(-1, n_components)

    def lay_out(task) -> None:  # writes only its component's rows
        c, component_seed = task
        sub = _component_layout(grouped, bounds, c, n_components, component_seed)
        if sub is not None:
            layout[order[bounds[c]:bounds[c + 1]]] = sub

    # A large component's seed: child (its rank among the laid-out components) of the
    # solver's seed, as when every laid-out component drew one (the small ones need none).
    ranks = np.cumsum(laid_out) - 1
    seeds = spawned_seeds_at(solver_seed, ranks[large])
    _run_largest_first(lay_out, list(zip(large, seeds, strict=True)), sizes)
    return meta[labels] + radius[labels, None] * layout


# Bytes of float64 matrices one batched eigh of _dense_layouts holds at a time.
_DENSE_BATCH_BYTES = 32 << 20


def _dense_layouts(grouped, bounds, sizes, components, n_components):
    """``(batch, layouts)`` for components of at most ``DENSE_EIGH_MAX`` points: ``batch``
    an array of m components of one size s, ``layouts`` (m, s, n_components) float32, as
    :func:`spectral_layout` computes them one by one, then scaled to max|coord| = 1. A
    component that comes out non-finite is left out (it keeps its random layout, as before).

    Bitwise the same as the one-by-one path: the normalised adjacency is computed on the
    whole grouped graph, whose entries are those of each block (a row's degree and an
    entry's scaling involve that row and column only); a batched eigh runs LAPACK on each
    matrix as a single call does; the rest is elementwise or per matrix.
    """
    adjacency = sp.csr_matrix(normalized_adjacency(grouped)[0])
    for size in np.unique(sizes[components]):
        same = components[sizes[components] == size]
        per_batch = max(1, _DENSE_BATCH_BYTES // (8 * int(size) ** 2))
        for start in range(0, same.size, per_batch):
            batch = same[start:start + per_batch]
            try:
                evals, evecs = np.linalg.eigh(_blocks(adjacency, bounds[batch], int(size)))
            except np.linalg.LinAlgError:  # a matrix failed: one at a time, as before
                yield from _one_by_one(grouped, bounds, batch, n_components)
                continue
            layouts, finite = oriented_layouts(evals, evecs, n_components)
            yield batch[finite], unit_box(layouts[finite])


def _one_by_one(grouped, bounds, batch, n_components):
    for c in batch:
        sub = _component_layout(grouped, bounds, c, n_components, 0)
        if sub is not None:
            yield np.array([c]), sub[None]


def _component_layout(grouped, bounds, c, n_components, seed) -> np.ndarray | None:
    """Component ``c``'s spectral layout (its block of ``grouped``) scaled to max|coord| = 1,
    or None; BLAS is limited to one thread by the caller."""
    lo, hi = bounds[c], bounds[c + 1]
    sub = spectral_layout(grouped[lo:hi, lo:hi], n_components, seed, limit_blas=False)
    return None if sub is None else unit_box(sub[None])[0]


def _blocks(adjacency: sp.csr_matrix, starts: np.ndarray, size: int) -> np.ndarray:
    """The diagonal blocks ``adjacency[lo:lo+size, lo:lo+size]`` for each ``lo`` in
    ``starts``, dense, shape (len(starts), size, size) (a component has no edge outside its
    block)."""
    rows = (starts[:, None] + np.arange(size)).ravel()
    sub = adjacency[rows]  # the blocks' rows, in order
    stack = np.zeros((starts.size, size, size))
    row_of = np.repeat(np.arange(rows.size), np.diff(sub.indptr))
    block = row_of // size
    stack[block, row_of % size, sub.indices - starts[block]] = sub.data
    return stack


def _run_largest_first(work, tasks: list, sizes: np.ndarray) -> None:
    """``work(task)`` for each (component, seed) task, on the fit's threads (numba's count),
    largest components first, each taken by the next free thread. A component's layout
    depends on its own graph and seed only, so the result is the same for any thread count.
    scipy's sparse products, most of ARPACK's time, release the GIL, so the threads overlap
    (measured: benchmarks/results/architecture_notes.md)."""
    import numba

    threads = min(numba.get_num_threads(), len(tasks))
    # One BLAS thread for all of them, on any thread count (see arpack_largest), set once
    # here, outside the threads (which skip their own limit): BLAS's count is process-wide
    # (unimap.runtime.blas counts the holders, so concurrent fits do not undo each other).
    with one_blas_thread():
        if threads <= 1:
            for task in tasks:
                work(task)
            return
        tasks = sorted(tasks, key=lambda task: -int(sizes[task[0]]))
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, tasks))  # list(): re-raises a worker's exception
