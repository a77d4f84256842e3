"""GDR's unnormalized epochs on a Dask cluster, exact mode: each worker computes a range of
the rows, and the result is bitwise the single-machine fit's.

:func:`unnormalized_epochs_dask` takes the arguments of
:func:`unimap.optimizers.gdr.unnormalized.unnormalized_full_batch` and splits the rows into
parts of whole ``ROW_BLOCK`` blocks (after :func:`gdr_unnormalized_dask`'s relabelling, ranges
of the start's Z-order). A part holds only its rows' edges (P's and Pᵀ's, with their edge
positions in the whole graph) and its rows' velocities; each epoch it reads the whole previous
embedding, gathered from every part's rows, and computes its rows by the CPU's epoch kernel
restricted to its blocks (:func:`unimap.optimizers.gdr.unnormalized_numba.gdr_unnormalized_epoch`,
``blocks``). Every row, edge and pool of negatives is keyed by its number in the whole graph,
never by a part or a thread, so any partitioning on any cluster computes the same bits as one
machine (tests hold them equal).

What the exact mode costs: one task per part per epoch, and every part receives the other
parts' rows each epoch ((parts − 1)/parts × n × dim × 4 bytes per part; an epoch's negatives
can fall on any row). A worker holds the whole embedding and the row pointers (O(n)), and its
own edges. A mode that reads only a halo of neighbours and samples the far field, and tasks
of several epochs, are what would lift those costs; this mode is their oracle.
"""

from __future__ import annotations

import operator
import time
import uuid
from typing import Any, NamedTuple

import numpy as np

from unimap.runtime.user_warnings import warn_user

__all__ = ["unnormalized_epochs_dask", "gdr_unnormalized_dask", "row_parts", "part_workers",
           "worker_epoch_bytes"]


# Epochs between two copies of the positions and velocities to the client: a lost worker
# costs at most these epochs again, and each copy (n × dim × 8 bytes, once per segment) is a
# moment where every part waits for the slowest.
CHECKPOINT_EPOCHS = 25
# How long the epochs wait with no worker in the cluster before they fail (seconds).
NO_WORKER_TIMEOUT = 60.0


class _Part(NamedTuple):
    """One part's rows ``[lo, hi)`` (blocks ``[first_block, stop_block)``): their edges, their
    row pointers into the whole graph's edges, and their user row numbers."""

    lo: int
    hi: int
    first_block: int
    stop_block: int
    indptr: np.ndarray  # P's pointers of rows lo..hi (hi − lo + 1 of them)
    indices: np.ndarray
    data: np.ndarray
    edge0: int
    t_indptr: np.ndarray  # Pᵀ's, or empty
    t_indices: np.ndarray
    t_data: np.ndarray
    t_edge0: int
    row_ids: np.ndarray | None  # the rows' numbers in the user's order (the guard's names)


class _Shared(NamedTuple):
    """What every part reads: the graph's size and the optimizer's settings (O(1): nothing
    of n rows is sent to every worker)."""

    n_edges: int  # P's stored entries: the keys of an edgeless row's negatives start there
    use_t: bool
    forces: Any  # unimap.optimizers.gdr.common_numba.UnnormalizedForces
    step: Any  # unimap.optimizers.gdr.common_numba.HeavyBall
    rates: np.ndarray  # each epoch's float32 step size
    seed: int
    negative_pool: int
    shape: tuple[int, int]
    method: str | None  # the guard's method and causes (None: unguarded)
    causes: str


def row_parts(n_rows: int, n_parts: int, block: int | None = None) -> list[tuple[int, int]]:
    """``n_parts`` (at most one per block) ranges of whole blocks of ``block`` rows
    (default ``ROW_BLOCK``) covering ``[0, n_rows)``, as even in blocks as they divide."""
    from unimap.runtime.dynamic_numba import ROW_BLOCK

    block = ROW_BLOCK if block is None else block
    n_blocks = (n_rows + block - 1) // block
    n_parts = max(1, min(int(n_parts), n_blocks))
    bounds = [round(p * n_blocks / n_parts) for p in range(n_parts + 1)]
    return [(bounds[p], bounds[p + 1]) for p in range(n_parts)]


def part_workers(workers: list[str], n_parts: int) -> list[str]:
    """The worker of each part: round robin over ``workers`` (the scheduler's addresses,
    sorted), so that the memory estimate and the epochs agree on who holds what."""
    return [workers[p % len(workers)] for p in range(n_parts)]


def worker_epoch_bytes(n: int, dim: int, part_rows: list[int], part_edges: list[int],
                       running: int = 1) -> int:
    """Bytes a worker adds while it runs the epochs of its parts (``part_rows[i]`` rows and
    ``part_edges[i]`` stored entries of P and Pᵀ together, for each of its parts), with
    ``running`` epoch tasks at a time (its threads).

    Each running task holds the previous positions of all n rows, received, and their
    concatenation (2·n·dim·4 bytes), and touches 5·dim·4 bytes per row of its part (new
    positions, forces, velocities, the two copies it returns). Each part keeps its edges (8
    bytes each: int32 column, float32 value), its row pointers and user row numbers (24 bytes
    per row) and up to three states of its rows (the client's checkpoint, the last epoch's,
    the running one's: positions and velocities, 24·dim bytes per row). Checked against a
    measured peak: benchmarks/results/dask_epoch_memory.md.
    """
    if not part_rows:
        return 0
    running = max(1, min(running, len(part_rows)))
    kept = sum(rows * (24 + 24 * dim) + edges * 8
               for rows, edges in zip(part_rows, part_edges, strict=True))
    largest = sorted(part_rows, reverse=True)[:running]
    return running * 2 * n * dim * 4 + kept + sum(largest) * 5 * dim * 4


def unnormalized_epochs_dask(init: np.ndarray, edges: tuple, transposed: tuple,
                             attraction_scale: float, n_epochs: int, a: float, b: float,
                             seed: int, learning_rate: float, momentum: float,
                             n_negatives: float, repulsion_weight: float, *,
                             guard: Any = None, row_ids: np.ndarray | None = None,
                             negative_pool: int = 0, n_parts: int | None = None,
                             checkpoint_every: int = CHECKPOINT_EPOCHS, max_worker_losses: int = 3,
                             client: Any = None) -> np.ndarray:
    """:func:`unimap.optimizers.gdr.unnormalized.unnormalized_full_batch` with its epochs on
    the workers of ``client`` (default: the current one), bitwise the same embedding.

    Parameters
    ----------
    init, edges, transposed, attraction_scale, n_epochs, a, b, seed, learning_rate, \
momentum, n_negatives, repulsion_weight, guard, row_ids, negative_pool
        As :func:`~unimap.optimizers.gdr.unnormalized.unnormalized_full_batch`. The guard
        checks each part's rows after every epoch on its worker; a NaN or infinity fails
        the fit with its :class:`~unimap.runtime.guards.NonFiniteError` (the user's row
        named through ``row_ids``), and no later epoch runs.
    n_parts : int, optional
        Row ranges, one task each per epoch. Default: the cluster's workers. The result does
        not depend on it.
    checkpoint_every : int, default=25
        Epochs between copies of every part's positions and velocities to the client. A
        worker lost during a segment (its process killed, its connection closed) costs that
        segment again from the last copy, on the workers left, with a warning; the result is
        the same bits.
    max_worker_losses : int, default=3
        Segments lost to failed workers before the fit fails with a ``RuntimeError``.
    client : distributed.Client, optional

    A cluster with no worker for ``NO_WORKER_TIMEOUT`` seconds fails the fit rather than
    wait.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components), float32, on the client
    """
    from unimap.lowdim.similarity_numba import UMAP_EPS
    from unimap.optimizers.gdr.common_numba import HeavyBall, UnnormalizedForces
    from unimap.optimizers.gdr.unnormalized import FULL_BATCH_CLIP
    from unimap.optimizers.schedule import linear_decay
    from unimap.runtime.dynamic_numba import ROW_BLOCK

    client = required_client(client)
    f32 = np.float32
    Y0 = np.ascontiguousarray(init, dtype=np.float32)
    n, dim = Y0.shape
    indptr, indices, data = edges
    t_indptr, t_indices, t_data = transposed
    use_t = t_indptr.shape[0] == n + 1
    if n_parts is None:
        n_parts = len(client.scheduler_info()["workers"])
    forces = UnnormalizedForces(f32(attraction_scale), float(n_negatives), f32(repulsion_weight),
                                f32(a), f32(b), f32(UMAP_EPS))
    shared = _Shared(int(indptr[n]), bool(use_t), forces,
                     HeavyBall(f32(FULL_BATCH_CLIP), f32(momentum)),
                     np.asarray(linear_decay(learning_rate, n_epochs), dtype=f32), int(seed),
                     int(negative_pool), (n, dim), getattr(guard, "method", None),
                     getattr(guard, "causes", ""))
    parts, checkpoint = [], []
    for first, stop in row_parts(n, n_parts):
        lo, hi = first * ROW_BLOCK, min(n, stop * ROW_BLOCK)
        e0, e1 = int(indptr[lo]), int(indptr[hi])
        t0, t1 = (int(t_indptr[lo]), int(t_indptr[hi])) if use_t else (0, 0)
        parts.append(_Part(
            lo, hi, first, stop, np.array(indptr[lo:hi + 1], dtype=np.int64),
            np.ascontiguousarray(indices[e0:e1], dtype=np.int32),
            np.ascontiguousarray(data[e0:e1], dtype=np.float32), e0,
            np.array(t_indptr[lo:hi + 1] if use_t else (), dtype=np.int64),
            np.ascontiguousarray(t_indices[t0:t1], dtype=np.int32),
            np.ascontiguousarray(t_data[t0:t1], dtype=np.float32), t0,
            None if row_ids is None else np.array(row_ids[lo:hi])))
        checkpoint.append((Y0[lo:hi].copy(), np.zeros((hi - lo, dim), np.float32)))
    run = _Cluster(client, shared, parts)
    epoch, losses = 0, 0
    while epoch < n_epochs:
        stop = min(n_epochs, epoch + checkpoint_every)
        try:
            checkpoint = run.epochs(checkpoint, epoch, stop)
        except _lost_work_errors() as error:
            losses += 1
            if losses > max_worker_losses:
                raise RuntimeError(
                    f"GDR's epochs on the cluster lost work to a failed worker {losses} times "
                    f"(the last in epochs {epoch + 1}-{stop}: {type(error).__name__}); giving "
                    "up. Check the "
                    "workers' logs (memory limits, killed processes).") from error
            reason = (str(error).splitlines() or [type(error).__name__])[0]
            warn_user(f"a worker failed during GDR's epochs {epoch + 1}-{stop} ({reason}); "
                      f"resuming from the positions after epoch {epoch}", RuntimeWarning)
            run.forget_parts()
            time.sleep(min(5.0, 0.5 * losses))  # the scheduler drops the lost worker meanwhile
            continue
        epoch = stop
        if guard is not None:
            guard.passed(stop - 1)  # the epoch bar, a segment at a time
    pieces = [positions for positions, _ in checkpoint]
    return np.concatenate(pieces, axis=0) if len(pieces) > 1 else pieces[0]


def _lost_work_errors() -> tuple[type[BaseException], ...]:
    from concurrent.futures import CancelledError

    from distributed.comm import CommClosedError
    from distributed.scheduler import KilledWorker

    return CancelledError, KilledWorker, CommClosedError, _ScatterFailed


class _Cluster:
    """A fit's parts on the cluster: scattered once (again after a worker is lost), and
    segments of epochs run from a checkpoint."""

    def __init__(self, client: Any, shared: _Shared, parts: list[_Part]) -> None:
        self.client, self.shared, self.parts = client, shared, parts
        self.futures: tuple | None = None  # (shared, parts, workers) on the cluster

    def forget_parts(self) -> None:
        self.futures = None

    def _scattered(self) -> tuple:
        workers = sorted(self.client.scheduler_info()["workers"])
        if self.futures is not None and set(self.futures[2]) <= set(workers):
            return self.futures
        if not workers:
            try:
                self.client.wait_for_workers(1, timeout=NO_WORKER_TIMEOUT)
            except TimeoutError as error:
                raise _no_workers_error() from error
            workers = sorted(self.client.scheduler_info()["workers"])
        where = part_workers(workers, len(self.parts))
        # one copy of the shared inputs per worker, each scattered to that worker alone: a
        # broadcast to every worker the scheduler lists hung (past its timeout) when one of
        # them had just been killed
        copies = {worker: _scatter(self.client, [self.shared], workers=[worker])[0]
                  for worker in dict.fromkeys(where)}
        shared = [copies[worker] for worker in where]
        parts = [_scatter(self.client, [part], workers=[worker])[0]
                 for part, worker in zip(self.parts, where, strict=True)]
        self.futures = (shared, parts, where)
        return self.futures

    def epochs(self, checkpoint: list, first: int, stop: int) -> list:
        """Epochs ``first`` to ``stop`` − 1 from ``checkpoint`` (each part's positions and
        velocities after epoch ``first`` − 1); the parts' states after epoch ``stop`` − 1."""
        client = self.client
        shared, parts, where = self._scattered()
        # keys of their own: a retried segment's must not meet the cancelled ones' on the way out
        token = uuid.uuid4().hex
        states = [_scatter(client, [state], workers=[worker])[0]
                  for state, worker in zip(checkpoint, where, strict=True)]
        positions: list = []
        try:
            positions = self._positions(states, where, first - 1, token)
            for epoch in range(first, stop):
                # only the newest epoch's futures are held here: the scheduler frees an
                # epoch's states once the next epoch has read them, so a worker holds about
                # two epochs of its rows, not the whole segment's (measured:
                # benchmarks/results/dask_epoch_memory.md)
                states = [client.submit(_part_epoch, parts[p], shared[p], states[p], positions,
                                        epoch, workers=[where[p]], allow_other_workers=True,
                                        key=f"unimap-gdr-epoch-{epoch}-part-{p}-{token}")
                          for p in range(len(parts))]
                positions = self._positions(states, where, epoch, token)
            _wait_with_workers(client, states)
            return client.gather(states)  # raises the first failed epoch's error
        except BaseException:
            # nothing of an abandoned segment runs on: the earlier epochs' tasks, wanted only
            # by these, are released with them
            client.cancel(states + positions)
            raise

    def _positions(self, states: list, where: list, epoch: int, token: str) -> list:
        return [self.client.submit(operator.itemgetter(0), state, workers=[worker],
                                   allow_other_workers=True,
                                   key=f"unimap-gdr-positions-{epoch}-part-{p}-{token}")
                for p, (state, worker) in enumerate(zip(states, where, strict=True))]


class _ScatterFailed(RuntimeError):
    """Data could not reach a worker (one just lost, still listed by the scheduler)."""


# Seconds a scatter may take before the worker it goes to counts as lost (a broadcast to a
# worker whose process was killed waited without end).
SCATTER_TIMEOUT = 20.0


def _scatter(client: Any, data: list, **where: Any) -> list:
    """``client.scatter(data, **where)`` under random keys, a failure to reach a worker
    raised as :class:`_ScatterFailed` (lost work, retried)."""
    from distributed.comm import CommClosedError

    try:
        # hash=False: keys by content would be shared with an identical call, whose release
        # of them can reach the scheduler after this scatter and drop them
        return client.scatter(data, hash=False, timeout=SCATTER_TIMEOUT, **where)
    except (KeyError, OSError, TimeoutError, CommClosedError) as error:
        raise _ScatterFailed(f"scattering to the workers failed: {error!r}") from error


def _no_workers_error() -> RuntimeError:
    return RuntimeError(f"GDR's epochs on the cluster waited {NO_WORKER_TIMEOUT:.0f} s with "
                        "no worker left; the fit stops (start workers and fit again)")


def _wait_with_workers(client: Any, futures: list) -> None:
    """Wait for ``futures``; fail when the cluster has had no worker for
    :data:`NO_WORKER_TIMEOUT` seconds (tasks would wait for one forever)."""
    import time

    from distributed import wait

    alone_since = None
    while True:
        try:
            wait(futures, timeout=1.0)
            return
        except TimeoutError:
            pass
        if client.scheduler_info()["workers"]:
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > NO_WORKER_TIMEOUT:
            raise _no_workers_error()


def _part_epoch(part: _Part, shared: _Shared, state: tuple[np.ndarray, np.ndarray],
                positions: list[np.ndarray], epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """One epoch of ``part``'s rows from every part's previous ``positions``: its new rows
    and velocities (the state the part's next epoch takes)."""
    from unimap.dask.transform import worker_threads
    from unimap.optimizers.gdr.common_numba import CSR, TransposedCSR
    from unimap.optimizers.gdr.unnormalized_numba import gdr_unnormalized_epoch
    from unimap.runtime.guards import FiniteGuard
    from unimap.runtime.threads import numba_threads

    n, dim = shared.shape
    Y = np.concatenate(positions, axis=0) if len(positions) > 1 else positions[0]
    # The kernel indexes rows by their number in the whole embedding: buffers of n rows of
    # which only the part's are touched (np.empty and np.zeros map the rest without writing
    # it, so a worker's memory grows with its part, not with n).
    Y_out, F, V = (np.empty((n, dim), np.float32) for _ in range(3))
    V[part.lo:part.hi] = state[1]
    indptr = np.zeros(n + 1, np.int64)
    indptr[part.lo:part.hi + 1] = part.indptr
    indptr[n] = shared.n_edges  # where an edgeless row's negative keys start
    t_indptr = np.zeros(n + 1 if shared.use_t else 0, np.int64)
    if shared.use_t:
        t_indptr[part.lo:part.hi + 1] = part.t_indptr
    # the worker's threads, not numba's default of every core: the workers on one machine
    # would each run that many (the bits do not depend on it)
    with numba_threads(worker_threads()):
        gdr_unnormalized_epoch(
            Y, Y_out, F, V, CSR(indptr, part.indices, part.data),
            TransposedCSR(t_indptr, part.t_indices, part.t_data), shared.forces,
            shared.step, shared.rates[epoch], np.uint64(shared.seed), np.int64(epoch), False,
            negative_pool=shared.negative_pool, blocks=(part.first_block, part.stop_block),
            edge_offsets=(part.edge0, part.t_edge0))
    rows = Y_out[part.lo:part.hi].copy()
    if shared.method is not None:
        ids = np.arange(part.lo, part.hi) if part.row_ids is None else part.row_ids
        FiniteGuard(shared.method, shared.causes).check(
            epoch, rows, ids, **{"the forces": F[part.lo:part.hi]})
    return rows, V[part.lo:part.hi].copy()


def gdr_unnormalized_dask(init: np.ndarray, P: Any, *, symmetric_attraction: bool,
                          directed: bool, n_epochs: int, a: float, b: float, seed: int,
                          learning_rate: float, momentum: float, n_negatives: float,
                          repulsion_weight: float, guard: Any = None,
                          n_parts: int | None = None,
                          checkpoint_every: int = CHECKPOINT_EPOCHS,
                          max_worker_losses: int = 3, client: Any = None) -> np.ndarray:
    """:func:`unimap.optimizers.gdr.unnormalized.gdr_unnormalized` (the same arguments and
    layout: large inputs relabelled along the start's Z-order, with pooled negatives) with
    its epochs on the cluster (:func:`unnormalized_epochs_dask`, whose ``n_parts``,
    ``checkpoint_every``, ``max_worker_losses`` and ``client`` these are): bitwise the same
    embedding, in the input's row order."""
    from unimap.optimizers import sampling
    from unimap.optimizers.gdr.forces import gdr_edge_arrays
    from unimap.optimizers.gdr.unnormalized import relabels_for_locality
    from unimap.runtime.ordering import in_input_order, locality_order

    order = None
    if relabels_for_locality(init.shape[0]):
        order = locality_order(init)
        init = init[order]
    edges, transposed, scale = gdr_edge_arrays(P, symmetric_attraction, directed, order)
    Y = unnormalized_epochs_dask(init, edges, transposed, scale, n_epochs, a, b, seed,
                                 learning_rate, momentum, n_negatives, repulsion_weight,
                                 guard=guard, row_ids=order,
                                 negative_pool=0 if order is None else sampling.NEGATIVE_POOL,
                                 n_parts=n_parts, checkpoint_every=checkpoint_every,
                                 max_worker_losses=max_worker_losses, client=client)
    return Y if order is None else in_input_order(Y, order)


def required_client(client: Any) -> Any:
    if client is not None:
        return client
    from distributed import get_client

    try:
        return get_client()
    except ValueError as error:
        raise ValueError("GDR's epochs on a cluster need a dask.distributed Client "
                         "(distributed.Client(...), or pass client=)") from error
