"""The kNN graph of more points than the GPU's brute force serves: k-means cells on the GPU.

The CPU's sharded index (:mod:`unimap.neighbors.sharded`) mirrored, with an exact search inside
the cells: the points are split into cells of about ``CELL_ROWS`` by k-means (Lloyd's
iterations on a strided sample, each iteration's assignment on the GPU); a point's candidates
are the exact nearest among the points of its home cell, then of up to ``N_PROBE`` other cells,
nearest wall first, each searched only while its bisecting hyperplane with the home cell is
nearer than the point's last candidate (:func:`unimap.neighbors.sharded.within_reach`: a point
beyond the wall cannot be nearer). Inside a cell the search is the brute force's: a block
stages the cell's rows in shared memory, tile by tile, and each thread keeps its query's
nearest in a sorted local array.

The points are sorted by home cell (stably, so a cell holds its rows in input order), so the
threads of a block mostly share one cell; a block walks the distinct cells its threads search,
one after the other. Each round of probes is one more launch over the points that need it,
sorted by the cell they probe, merged into their candidates. Each thread scans in a fixed order
and keeps the earlier row on ties: the same graph run after run.

Cost per point: a cell's rows (25,000) times the search width (64) for the home cell and for
each probe, instead of n times. Recall: ``benchmarks/results/cells_recall.md``, computed on the
CPU by :func:`cell_graph_reference`, which builds the same graph (the tests check they are
equal).
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32, int32

from unimap.neighbors.candidates import GPU_MAX_CANDIDATES as MAX_CANDIDATES
from unimap.neighbors.candidates import GPU_SEARCH_DIM as MAX_DIM
from unimap.neighbors.candidates import GPU_TILE as TILE
from unimap.neighbors.cells_numba import wall_distance
from unimap.neighbors.sharded import SHARD_ROWS, centroid_gaps, within_reach
from unimap.neighbors.topk_numba import insert_sorted
from unimap.runtime.common_cuda import check_device_memory, on_target, rows_launch

__all__ = ["cell_candidates_cuda", "cell_graph_reference", "n_cells_for", "device_bytes"]

CELL_ROWS = SHARD_ROWS  # points per cell, on average: the CPU's cells
KMEANS_SAMPLE_PER_CELL = 100  # sample rows per centroid (at least KMEANS_MIN_SAMPLE)
KMEANS_MIN_SAMPLE = 20_000
KMEANS_SEED = 0  # fixed: the neighbours depend on the data alone
# Other cells searched at most, nearest wall first, each while its wall is nearer than the
# last candidate. Each round adds recall (7 rounds: above the CPU's default index on the same
# mixture) and costs about what the home cell's search does (measured:
# benchmarks/results/cells_recall.md; library_notes.md, "unimap/neighbors/cells_cuda.py").
N_PROBE = 7

_insert = on_target(insert_sorted)
_wall = on_target(wall_distance)


def n_cells_for(n: int, cell_rows: int | None = None) -> int:
    """The number of k-means cells for ``n`` points (about ``cell_rows`` each, default
    ``CELL_ROWS``)."""
    return max(1, -(-n // (CELL_ROWS if cell_rows is None else cell_rows)))


@cuda.jit(device=True, inline=True)
def _centroid_sq(R, i, centroids_t, c):
    """Squared distance of row i of ``R`` to centroid c (a column of the float64 (d, c)
    ``centroids_t``), summed in float64 over the features in order: the CPU's
    :func:`unimap.neighbors.cells_numba.nearest_walls` bits."""
    acc = 0.0
    for j in range(centroids_t.shape[0]):
        diff = np.float64(R[i, j]) - centroids_t[j, c]
        acc += diff * diff
    return acc


@cuda.jit(device=True, inline=True)
def stage_tile(tile, S, base, rows, thread, threads):
    """The block's threads copy rows ``base .. base + rows - 1`` of ``S`` into the shared
    ``tile`` (``MAX_DIM`` columns), one element each in turn (this is thread ``thread`` of
    ``threads``). The caller passes its thread index: numba's bundled simulator only gives
    ``cuda.threadIdx`` to device functions of the kernel's own module."""
    for e in range(thread, rows * MAX_DIM, threads):
        tile[e // MAX_DIM, e % MAX_DIM] = S[base + e // MAX_DIM, e % MAX_DIM]


@cuda.jit(device=True, inline=True)
def offer_tile(query, tile, rows, base, best_d, best_i, worst):
    """The first ``rows`` rows of ``tile`` (rows ``base + r`` of the search array) offered to
    the sorted nearest lists of ``query`` (a local array of ``MAX_DIM`` floats): squared
    distances summed in order in float32, inserted when strictly nearer than ``worst`` (the
    earlier row stays first on ties). Returns the new ``worst``. Shared by the brute force
    (:mod:`unimap.neighbors.brute_force_cuda`) and the cells' scan."""
    for r in range(rows):
        d = np.float32(0.0)
        for c in range(MAX_DIM):
            diff = query[c] - tile[r, c]
            d += diff * diff
        if d < worst:
            worst = _insert(best_d, best_i, d, base + r)
    return worst


@cuda.jit(cache=True)
def _nearest_cells(R, centroids_t, gaps, home, wall_cell, wall_dist):
    """Per row of ``R``: its nearest centroid (ties: the lower index), and the P =
    ``wall_cell.shape[1]`` other cells whose walls with it are nearest, ascending, with the
    walls' distances (-1 / inf past the other cells): the CPU's
    :func:`unimap.neighbors.cells_numba.nearest_walls`, two passes over the centroids instead
    of a stored row of distances."""
    i = cuda.grid(1)
    if i >= R.shape[0]:
        return
    best, best_d2 = 0, np.inf
    for c in range(centroids_t.shape[1]):
        d2 = _centroid_sq(R, i, centroids_t, c)
        if d2 < best_d2:
            best, best_d2 = c, d2
    home[i] = best
    last = wall_dist.shape[1] - 1
    for p in range(last + 1):
        wall_dist[i, p] = np.inf
        wall_cell[i, p] = -1
    for c in range(centroids_t.shape[1]):
        d = _wall(_centroid_sq(R, i, centroids_t, c), best_d2, gaps[best, c])
        if d < wall_dist[i, last]:
            _insert(wall_dist[i], wall_cell[i], d, c)


@cuda.jit(cache=True)
def _gather_rows(src, rows, out):
    """``out[t] = src[rows[t]]``, one thread per row."""
    t = cuda.grid(1)
    if t < rows.shape[0]:
        for c in range(src.shape[1]):
            out[t, c] = src[rows[t], c]


@cuda.jit(cache=True)
def _scan_cells(S, queries, targets, cell_ptr, n_cand, merge, out_idx, out_dist):
    """Thread t: query row ``queries[t]`` of ``S`` (the points sorted by home cell, ``MAX_DIM``
    columns) against every row of cell ``targets[t]`` (rows ``cell_ptr[c]:cell_ptr[c + 1]``),
    its ``n_cand`` nearest into row ``queries[t]`` of ``out_*`` (positions in ``S``), merged
    with what is there when ``merge``. ``targets`` must be non-decreasing in t: the block walks
    the runs of equal targets, staging each cell's rows in shared memory tile by tile."""
    tile = cuda.shared.array((TILE, MAX_DIM), float32)
    query = cuda.local.array(MAX_DIM, float32)
    best_d = cuda.local.array(MAX_CANDIDATES, float32)
    best_i = cuda.local.array(MAX_CANDIDATES, int32)
    n_queries = queries.shape[0]
    first = cuda.blockIdx.x * cuda.blockDim.x
    last = min(first + cuda.blockDim.x, n_queries) - 1
    t = cuda.grid(1)
    active = t < n_queries
    q = queries[t] if active else 0
    if active:
        for c in range(MAX_DIM):
            query[c] = S[q, c]
        for s in range(n_cand):
            best_d[s] = out_dist[q, s] if merge else np.float32(np.inf)
            best_i[s] = out_idx[q, s] if merge else -1
    worst = best_d[n_cand - 1] if active else np.float32(np.inf)
    run = first
    while run <= last:  # each distinct target cell of this block, in order
        cell = targets[run]
        lo, hi = cell_ptr[cell], cell_ptr[cell + 1]
        mine = active and targets[t] == cell
        for base in range(lo, hi, TILE):
            rows = min(TILE, hi - base)
            stage_tile(tile, S, base, rows, cuda.threadIdx.x, cuda.blockDim.x)
            cuda.syncthreads()
            if mine:
                worst = offer_tile(query, tile, rows, base, best_d[:n_cand], best_i[:n_cand],
                                   worst)
            cuda.syncthreads()
        while run <= last and targets[run] == cell:
            run += 1
    if active:
        for s in range(n_cand):
            out_idx[q, s] = best_i[s]
            out_dist[q, s] = best_d[s]


@cuda.jit(cache=True)
def _last_column(sq, out):
    """``out[p]`` ← the last (largest) candidate distance of row p."""
    p = cuda.grid(1)
    if p < sq.shape[0]:
        out[p] = sq[p, sq.shape[1] - 1]


@cuda.jit(cache=True)
def _in_input_order(idx_sorted, dist_sorted, order, out_idx, out_dist):
    """Row ``order[p]`` of ``out_*`` ← row p of the sorted results, positions made input rows."""
    p = cuda.grid(1)
    if p < order.shape[0]:
        r = order[p]
        for s in range(idx_sorted.shape[1]):
            j = idx_sorted[p, s]
            out_idx[r, s] = order[j] if j >= 0 else -1
            out_dist[r, s] = dist_sorted[p, s]


def device_bytes(n: int, n_cand: int, n_probe: int) -> int:
    """Device memory of :func:`cell_candidates_cuda` besides its input: the sorted copy, the
    cells and walls, the order and queries, the candidates twice (sorted positions, then input
    rows)."""
    return 4 * n * MAX_DIM + n * (4 * 3 + 8 * 2 + 12 * n_probe) + 2 * 8 * n * n_cand


def cell_candidates_cuda(d_search, n_features: int, n_cand: int,
                         cell_rows: int | None = None, centroids: np.ndarray | None = None,
                         n_probe: int | None = None):
    """The ``n_cand`` nearest rows of each row of ``d_search`` (device, (n, ``MAX_DIM``)
    float32, features past ``n_features`` zero) among its home cell and the cells it probes:
    device arrays ``(indices int32, squared distances float32)`` of shape (n, n_cand), rows in
    input order, each ascending. ``centroids`` (n_cells, n_features): given (the tests), else
    fitted with about ``cell_rows`` points per cell (default ``CELL_ROWS``); up to ``n_probe``
    other cells searched (default ``N_PROBE``)."""
    n = d_search.shape[0]
    n_probe = N_PROBE if n_probe is None else n_probe
    check_device_memory(device_bytes(n, n_cand, n_probe), "the kNN graph's cells on the GPU")
    if centroids is None:
        centroids = _kmeans_cuda(d_search, n_features, n_cells_for(n, cell_rows))
    cents = centroids.astype(np.float64)
    home, wall_cell, wall_dist = _cells(d_search, cents, centroid_gaps(cents), n_probe)
    order, cell_ptr = _cell_order(home, len(cents))
    wall_cell, wall_dist = wall_cell[order], wall_dist[order]
    d_order = cuda.to_device(order)
    blocks, threads = rows_launch(n)
    S = cuda.device_array((n, MAX_DIM), np.float32)
    _gather_rows[blocks, threads](d_search, d_order, S)
    d_cell_ptr = cuda.to_device(cell_ptr)
    idx = cuda.device_array((n, n_cand), np.int32)
    sq = cuda.device_array((n, n_cand), np.float32)
    last_sq = cuda.device_array(n, np.float32)

    def scan(queries, targets, merge):
        _scan_cells[rows_launch(queries.size)[0], threads](
            S, cuda.to_device(queries), cuda.to_device(targets), d_cell_ptr, n_cand, merge,
            idx, sq)

    def last():
        _last_column[blocks, threads](sq, last_sq)
        return last_sq.copy_to_host()

    _home_then_probes(scan, last, home[order], wall_cell, wall_dist)
    out_idx = cuda.device_array((n, n_cand), np.int32)
    out_sq = cuda.device_array((n, n_cand), np.float32)
    _in_input_order[blocks, threads](idx, sq, d_order, out_idx, out_sq)
    return out_idx, out_sq


def _cells(d_search, cents: np.ndarray, gaps: np.ndarray, n_probe: int):
    """Home cell, and the nearest walls' cells and distances, of every row (host arrays)."""
    n = d_search.shape[0]
    home = cuda.device_array(n, np.int32)
    wall_cell = cuda.device_array((n, max(n_probe, 1)), np.int32)
    wall_dist = cuda.device_array((n, max(n_probe, 1)), np.float64)
    blocks, threads = rows_launch(n)
    _nearest_cells[blocks, threads](d_search, cuda.to_device(np.ascontiguousarray(cents.T)),
                                    cuda.to_device(gaps), home, wall_cell, wall_dist)
    home = home.copy_to_host()
    return home, wall_cell.copy_to_host()[:, :n_probe], wall_dist.copy_to_host()[:, :n_probe]


def _kmeans_cuda(d_search, n_features: int, n_cells: int) -> np.ndarray:
    """Centroids (n_cells, n_features) float32 of Lloyd's k-means on a strided sample of the
    rows (:func:`unimap.neighbors.kmeans.kmeans`, k-means++ seeded on the host), each
    iteration's assignment on the GPU."""
    from unimap.neighbors.kmeans import kmeans

    n = d_search.shape[0]
    if n_cells == 1:
        return np.zeros((1, n_features), np.float32)  # one cell: its centroid is not used
    n_sample = min(n, max(KMEANS_MIN_SAMPLE, KMEANS_SAMPLE_PER_CELL * n_cells))
    rows = np.arange(0, n, max(1, n // n_sample), dtype=np.int64)
    d_sample = cuda.device_array((rows.size, MAX_DIM), np.float32)
    blocks, threads = rows_launch(rows.size)
    _gather_rows[blocks, threads](d_search, cuda.to_device(rows), d_sample)
    sample = np.ascontiguousarray(d_sample.copy_to_host()[:, :n_features])

    def assign(centroids: np.ndarray) -> np.ndarray:
        cents = centroids.astype(np.float64)
        gaps = np.zeros((cents.shape[0], cents.shape[0]))  # the walls are not used here
        return _cells(d_sample, cents, gaps, 0)[0]

    return kmeans(sample, n_cells, KMEANS_SEED, assign=assign)


def cell_graph_reference(search: np.ndarray, centroids: np.ndarray, n_cand: int,
                         n_probe: int | None = None):
    """The graph :func:`cell_candidates_cuda` computes from ``centroids``, on the CPU (the same
    cells, order, probes and scan: :func:`unimap.neighbors.cells_numba.scan_cells`), for the
    tests and the recall benchmark: ``(indices int32, squared distances float32)`` (n, n_cand),
    rows in input order, each ascending."""
    from unimap.neighbors.cells_numba import nearest_walls, scan_cells

    n, n_features = search.shape[0], centroids.shape[1]
    search = np.ascontiguousarray(search[:, :n_features], dtype=np.float32)
    cents = centroids.astype(np.float64)
    home = np.empty(n, np.int32)
    walls = _wall_arrays(n, N_PROBE if n_probe is None else n_probe)
    nearest_walls(search, np.ascontiguousarray(cents.T), centroid_gaps(cents), home, *walls)
    order, cell_ptr = _cell_order(home, len(cents))
    S = np.ascontiguousarray(search[order])
    idx = np.empty((n, n_cand), np.int32)
    sq = np.empty((n, n_cand), np.float32)
    _home_then_probes(lambda queries, targets, merge: scan_cells(S, queries, targets, cell_ptr,
                                                                 merge, idx, sq),
                      lambda: sq[:, -1], home[order], walls[0][order], walls[1][order])
    out_idx = np.empty_like(idx)
    out_idx[order] = np.where(idx >= 0, order[np.maximum(idx, 0)], -1)
    out_sq = np.empty_like(sq)
    out_sq[order] = sq
    return out_idx, out_sq


def _home_then_probes(scan, last_sq, home, wall_cell, wall_dist) -> None:
    """The search's plan, in cell order, on either device: ``scan(queries, targets, merge)``
    over every point's home cell, then one round per wall rank (the nearest walls first) over
    the points whose wall is nearer than their last candidate (``last_sq()``: each point's
    last squared distance so far)."""
    scan(np.arange(home.shape[0], dtype=np.int64), home, False)
    for rank in range(wall_cell.shape[1]):
        probe = _probes(wall_cell[:, rank], wall_dist[:, rank], last_sq())
        if probe.size:
            scan(probe, wall_cell[probe, rank], True)


def _wall_arrays(n: int, n_probe: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty((n, n_probe), np.int32), np.empty((n, n_probe), np.float64)


def _cell_order(home: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """The points sorted by home cell, stably (int64), and the cells' bounds in that order."""
    order = np.argsort(home, kind="stable").astype(np.int64)
    cell_ptr = np.zeros(n_cells + 1, np.int64)
    cell_ptr[1:] = np.cumsum(np.bincount(home, minlength=n_cells))
    return order, cell_ptr


def _probes(wall_cell: np.ndarray, wall_dist: np.ndarray, last_sq: np.ndarray) -> np.ndarray:
    """Positions (in cell order) whose nearest wall is nearer than their last candidate (every
    one whose home cell had too few rows: its last is infinite), sorted by the cell they
    probe (int64)."""
    last = np.sqrt(np.maximum(last_sq.astype(np.float64), 0.0))
    probe = np.flatnonzero((wall_cell >= 0) & within_reach(wall_dist, last))
    return probe[np.argsort(wall_cell[probe], kind="stable")].astype(np.int64)
