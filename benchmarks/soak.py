"""A soak run in one process: hundreds of fits and transforms, threads and forks mixed.

Checks what a long-lived process (a notebook kernel, a web service, a Dask worker) relies on:
every result finite, no hang (each fork child and thread batch has a timeout), and memory
flat (the resident set after the warm-up rounds against the end). Each round draws a method
(UMAP, GDR in both modes, TSNE, PCA), a size, a width and a feature, fits and places 20 new
points; every 4th round runs two fits at once in threads, every 6th forks a child that fits
and places (after the parent has run the kernels: the case numba's OpenMP layer killed).

The features (:data:`FEATURES`, issue 58): plain rows; ``update`` with 20 more rows
(``embedding_`` must grow by them); ``unique=True`` on rows of which a third repeat;
a user-defined numba metric; sparse CSR rows; a save and load round trip in memory-backed
temporary files (the loaded model must place the points bitwise as the fitted one);
``inverse_transform`` of the placed points. A method that lacks a feature runs plain.

Example::

    python benchmarks/soak.py --rounds 200
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing as mp
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from _harness import machine_description

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "soak.md"
SIZES, WIDTHS = (200, 600, 1500, 3000), (5, 30, 100)
FEATURES = ("plain", "update", "unique", "user_metric", "sparse", "save_load", "inverse")
NEIGHBOR_METHODS = ("umap", "gdr", "gdr_normalized")


@functools.cache
def _user_l1():
    """A user's metric: numba-compiled L1, as umap-learn's users write them (defined once,
    as a user's module would)."""
    import numba

    @numba.njit(cache=False)
    def user_l1(x, y):
        total = 0.0
        for i in range(x.shape[0]):
            total += abs(x[i] - y[i])
        return total

    return user_l1


def _estimator(name: str, seed: int, **options: Any) -> Any:
    import unimap

    return {
        "umap": lambda: unimap.UMAP(n_epochs=60, random_state=seed, **options),
        "gdr": lambda: unimap.GDR(n_epochs=60, random_state=seed, **options),
        "gdr_normalized": lambda: unimap.GDR(normalized=True, n_epochs=60, random_state=seed,
                                             **options),
        "tsne": lambda: unimap.TSNE(max_iter=150, early_exaggeration_iter=50,
                                    random_state=seed),
        "pca": lambda: unimap.PCA(2, random_state=seed),
    }[name]()


def _data(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 5, (8, d))
    return (centres[rng.integers(0, 8, n)] + rng.normal(size=(n, d))).astype(np.float32)


def _finite(*arrays: Any) -> bool:
    return all(bool(np.isfinite(np.asarray(a)).all()) for a in arrays)


def one_fit(task: tuple[str, int, int, int, str]) -> bool:
    """Fit with the task's feature and place 20 new points; True if everything came back
    finite and aligned."""
    import tempfile

    import scipy.sparse as sp

    import unimap

    name, n, d, seed, feature = task
    if name not in NEIGHBOR_METHODS and feature not in ("plain", "save_load"):
        feature = "plain"
    X, new = _data(n, d, seed), _data(20, d, seed + 1)
    options: dict[str, Any] = {}
    if feature == "unique":
        X[1::3] = X[0::3][: len(X[1::3])]  # every third row repeats the one before it
        options["unique"] = True
    elif feature == "user_metric":
        options["metric"] = _user_l1()
    elif feature == "sparse":
        X[np.abs(X) < 1.0] = 0
        new[np.abs(new) < 1.0] = 0
        X, new = sp.csr_matrix(X), sp.csr_matrix(new)
    model = _estimator(name, seed, **options)
    embedding = model.fit_transform(X)
    placed = model.transform(new)
    ok = _finite(embedding, placed) and embedding.shape[0] == n and placed.shape[0] == 20
    if feature == "update":
        model.update(new)
        ok = ok and model.embedding_.shape[0] == n + 20 and _finite(model.embedding_)
    elif feature == "inverse":
        rows = model.inverse_transform(placed)
        ok = ok and rows.shape == (20, d) and _finite(rows)
    elif feature == "save_load":
        with tempfile.TemporaryDirectory() as folder:
            path = model.save(Path(folder) / "model.unimap")
            again = unimap.load(path)
        ok = ok and bool(np.array_equal(again.transform(new), model.transform(new)))
    return ok


def _in_child(task: tuple, queue: Any) -> None:
    queue.put(one_fit(task))


def _forked(task: tuple, timeout: float) -> bool:
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(task, queue))
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        raise TimeoutError(f"forked fit {task} hung for {timeout:.0f} s")
    if child.exitcode != 0:
        raise RuntimeError(f"forked fit {task} died with exit code {child.exitcode}")
    return bool(queue.get(timeout=5))


def _threaded(tasks: list[tuple], timeout: float) -> list[bool]:
    results: list[Any] = [None] * len(tasks)

    def run(i: int) -> None:
        try:
            results[i] = one_fit(tasks[i])
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(tasks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            raise TimeoutError(f"threaded fits {tasks} hung for {timeout:.0f} s")
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def resident_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    import resource

    return pages * resource.getpagesize() / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20, help="rounds before the memory base")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    methods = ("umap", "gdr", "gdr_normalized", "tsne", "pca")
    counts = {"fits": 0, "threaded": 0, "forked": 0, "not finite": 0}
    memory: list[float] = []
    start = time.perf_counter()
    for r in range(args.rounds):
        def task(offset: int = 0, r: int = r) -> tuple[str, int, int, int, str]:
            return (methods[int(rng.integers(len(methods)))], int(rng.choice(SIZES)),
                    int(rng.choice(WIDTHS)), r * 10 + offset,
                    FEATURES[int(rng.integers(len(FEATURES)))])

        if r % 6 == 5:
            ok = [_forked(task(), args.timeout)]
            counts["forked"] += 1
        elif r % 4 == 3:
            ok = _threaded([task(0), task(1)], args.timeout)
            counts["threaded"] += 2
        else:
            ok = [one_fit(task())]
        counts["fits"] += len(ok)
        counts["not finite"] += sum(not x for x in ok)
        memory.append(resident_mib())
        if (r + 1) % 20 == 0:
            print(f"round {r + 1}: {memory[-1]:.0f} MiB resident, "
                  f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    base = memory[min(args.warmup, len(memory)) - 1]
    report = "\n".join([
        "# Soak run: fits and transforms in one process, threads and forks mixed",
        "",
        f"- Machine: {machine_description()}",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Command: `python benchmarks/soak.py {' '.join(argv or sys.argv[1:])}`".rstrip(),
        "",
        f"- Rounds: {args.rounds}; fits (each with a transform of 20 points and one of the "
        f"features {', '.join(FEATURES)}): {counts['fits']}, "
        f"of which {counts['threaded']} two at a time in threads and {counts['forked']} in "
        "forked children",
        f"- Results not finite or not aligned: {counts['not finite']}; hangs: 0 (each child "
        "and thread batch "
        f"had {args.timeout:.0f} s)",
        f"- Resident memory after round {args.warmup}: {base:.0f} MiB; at the end: "
        f"{memory[-1]:.0f} MiB; largest: {max(memory):.0f} MiB",
        f"- Wall time: {time.perf_counter() - start:.0f} s",
    ]) + "\n"
    print(report)
    if not args.no_save:
        args.out.write_text(report)
    return 1 if counts["not finite"] else 0


if __name__ == "__main__":
    sys.exit(main())
