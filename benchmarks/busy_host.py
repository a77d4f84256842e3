"""unimap and its peers on a quiet machine and on a busy one (another program on one core).

The shared cloud machines that many users run on lend a core to other tenants now and then
(hypervisor steal) or run other jobs beside theirs. A parallel epoch that waits at a barrier
for its slowest thread then waits for the descheduled one. This script measures what that
costs: each library fits MNIST (``--n`` rows) in a fresh process (``_harness.py``, warm numba
caches), first with the machine quiet, then with a CPU-bound competitor process pinned to core
0 (``os.sched_setaffinity``; the fit itself may use every core, as a user's would), and
oversubscribed: ``--oversubscribe`` (default 3) unpinned CPU-bound competitors, several times
more runnable threads than cores, as when a workflow runs jobs side by side or Dask workers
each call unimap with all threads.

``gdr-omp`` and ``umap-omp`` run unimap on numba's OpenMP layer (``NUMBA_THREADING_LAYER=omp``)
instead of its default TBB layer, to measure what the fork-safe layer costs or gives.

Libraries (each with all cores, default parameters, seed 0 where it takes one):

* ``gdr``: ``unimap.GDR(random_state=0)``; ``umap``: ``unimap.UMAP(random_state=0)``;
  ``tsne``: ``unimap.TSNE(random_state=0)``;
* ``umap-learn``: ``umap.UMAP(random_state=0)`` is single-threaded when seeded, so it runs
  unseeded (its parallel mode, the fair comparison of a busy machine's effect);
* ``openTSNE``: ``openTSNE.TSNE(n_jobs=-1, random_state=0)``.

The table gives each library's median time in both states, the slowdown busy / quiet, and
unimap's speed-up over the peer of its method in each state.

Example::

    python benchmarks/busy_host.py --n 70000 --repeats 2
    python benchmarks/busy_host.py --n 20000 --only gdr,umap-learn --no-save
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from _harness import (
    Runner,
    WorkerError,
    fmt,
    machine_description,
    markdown_table,
    median,
    run_worker,
    worker_main,
)

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "busy_host.md"
PEER = {"gdr": "umap-learn", "umap": "umap-learn", "tsne": "openTSNE", "gdr-omp": "umap-learn",
        "umap-omp": "umap-learn"}
STATES = ("quiet", "busy", "oversubscribed")


def _import_unimap() -> Any:
    import unimap

    return unimap


def _unimap(cls: str):
    def fit(unimap: Any, X: np.ndarray, _: dict) -> tuple[np.ndarray, dict]:
        model = getattr(unimap, cls)(random_state=0).fit(X)
        return model.embedding_, {"timings": dict(model.timings_)}
    return fit


def _import_umap_learn() -> Any:
    import umap

    return umap


def _fit_umap_learn(umap: Any, X: np.ndarray, _: dict) -> tuple[np.ndarray, dict]:
    return umap.UMAP().fit_transform(X), {}


def _import_opentsne() -> Any:
    import openTSNE

    return openTSNE


def _fit_opentsne(openTSNE: Any, X: np.ndarray, _: dict) -> tuple[np.ndarray, dict]:
    return np.asarray(openTSNE.TSNE(n_jobs=-1, random_state=0).fit(X)), {}


RUNNERS = {
    "gdr": Runner(_import_unimap, _unimap("GDR")),
    "umap": Runner(_import_unimap, _unimap("UMAP")),
    "tsne": Runner(_import_unimap, _unimap("TSNE")),
    "gdr-omp": Runner(_import_unimap, _unimap("GDR")),
    "umap-omp": Runner(_import_unimap, _unimap("UMAP")),
    "umap-learn": Runner(_import_umap_learn, _fit_umap_learn),
    "openTSNE": Runner(_import_opentsne, _fit_opentsne),
}


def _spin(pinned: bool) -> None:  # a competitor: a CPU-bound loop (on core 0 when pinned)
    if pinned:
        os.sched_setaffinity(0, {0})
    while True:
        pass


@contextmanager
def competitor(state: str, n_oversubscribe: int = 3) -> Iterator[None]:
    """While the body runs: nothing (``quiet``), a CPU-bound process pinned to core 0
    (``busy``), or ``n_oversubscribe`` unpinned ones (``oversubscribed``)."""
    count = {"quiet": 0, "busy": 1, "oversubscribed": n_oversubscribe}[state]
    processes = [mp.get_context("spawn").Process(target=_spin, args=(state == "busy",),
                                                 daemon=True) for _ in range(count)]
    for process in processes:
        process.start()
    if processes:
        time.sleep(1.0)  # let them take their cores before the timings start
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
            process.join()


def _run(args: argparse.Namespace, X: np.ndarray, tmp: Path) -> list[dict]:
    np.save(tmp / "X.npy", X)
    rows, run_id = [], 0
    for state in args.states:
        with competitor(state, args.oversubscribe):
            # rounds outside, libraries inside: a drift of the host's speed (25% within
            # minutes on this shared machine) then hits both sides of a ratio alike
            for attempt in range(args.repeats + (state == args.states[0])):  # one warm-up
                for library in args.libraries:
                    run_id += 1
                    spec = {"data": str(tmp / "X.npy"),
                            "embedding": str(tmp / f"embedding_{run_id:03d}.npy")}
                    row: dict[str, Any] = {"library": library, "state": state}
                    env = ({**os.environ, "NUMBA_THREADING_LAYER": "omp"}
                           if library.endswith("-omp") else None)
                    try:
                        row |= run_worker(Path(__file__).resolve(), library, spec,
                                          tmp / f"spec_{run_id:03d}.json", args.timeout, env)
                    except WorkerError as exc:
                        row["error"] = str(exc)
                    warmup = state == args.states[0] and attempt == 0
                    print(f"[{library} {state}{' warm-up' if warmup else ''}] total "
                          f"{fmt(row.get('total_s'))} s, other cores "
                          f"{fmt(row.get('other_cores'))}", file=sys.stderr, flush=True)
                    if not warmup:
                        rows.append(row)
    return rows


def render(rows: list[dict], args: argparse.Namespace, n: int) -> str:
    med: dict[tuple[str, str], float | None] = {}
    for library in args.libraries:
        for state in args.states:
            ok = [r["total_s"] for r in rows if r["library"] == library and r["state"] == state
                  and "error" not in r]
            med[library, state] = median(ok)
    table = []
    for library in args.libraries:
        peer = PEER.get(library) if PEER.get(library) in args.libraries else None
        speedups = []
        for state in args.states:
            mine, theirs = med[library, state], med.get((peer, state)) if peer else None
            speedups.append(f"{theirs / mine:.2f}×" if mine and theirs else "—")
        table.append([library, *(fmt(med[library, state]) for state in args.states),
                      peer or "—", *speedups])
    runs = "; ".join(
        f"{r['library']} {r['state']} {fmt(r.get('total_s'))} (other cores "
        f"{fmt(r.get('other_cores'))})" for r in rows)
    return "\n".join([
        "# A quiet machine, a busy one (a CPU-bound competitor pinned to core 0) and an "
        f"oversubscribed one ({args.oversubscribe} unpinned CPU-bound competitors)",
        "",
        f"- Machine: {machine_description()}",
        f"- Data: MNIST, first {n:,} rows (float32)",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Command: `{shlex.join(['python', 'benchmarks/busy_host.py', *sys.argv[1:]])}`",
        "",
        "Fresh process per fit (import + fit), warm caches, median of the measured runs; "
        "the libraries take turns within each round.",
        "",
        markdown_table(["library", *(f"{state} s" for state in args.states), "peer",
                        *(f"peer / this, {state}" for state in args.states)], table),
        "",
        f"Runs (s): {runs}.",
    ]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="use the first N rows of MNIST")
    parser.add_argument("--only", default=",".join(RUNNERS))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--states", default=",".join(STATES),
                        help=f"comma-separated, from {', '.join(STATES)}")
    parser.add_argument("--oversubscribe", type=int, default=3,
                        help="unpinned competitors in the oversubscribed state")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--worker", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(RUNNERS[args.worker], args.spec)
        return 0
    args.libraries = args.only.split(",")
    args.states = tuple(args.states.split(","))
    if unknown_states := set(args.states) - set(STATES):
        parser.error(f"unknown states {sorted(unknown_states)}; choose from {STATES}")
    if unknown := set(args.libraries) - set(RUNNERS):
        parser.error(f"unknown libraries {sorted(unknown)}; choose from {sorted(RUNNERS)}")
    from unimap.datasets import load_mnist

    X, _ = load_mnist()
    if args.n is not None:
        X = X[: args.n]
    X = np.ascontiguousarray(X, dtype=np.float32)
    with tempfile.TemporaryDirectory(prefix="busy_host_") as tmp:
        rows = _run(args, X, Path(tmp))
    report = render(rows, args, X.shape[0])
    print(report)
    if not args.no_save:  # appended: the file keeps the earlier runs
        with open(args.out, "a") as fh:
            fh.write("\n" + report)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
