"""Benchmark ``unimap.UMAP`` against umap-learn on MNIST-70k.

Each fit runs in a fresh Python process (see ``_harness.py``), one library after the other:
for each library a *cold* run, then ``--repeats`` *warm* runs.

* cold: the on-disk numba caches of ``unimap``, ``umap`` and ``pynndescent`` (``*.nbi`` /
  ``*.nbc`` under the installed packages' ``__pycache__`` folders) are deleted just before the
  run, so everything numba compiles is compiled in it. All three are cleared before either
  library's cold run, in case one library uses another's kernels (unimap may use pynndescent).
* warm: the caches the previous runs wrote are reused. (umap-learn caches only part of its
  numba functions on disk, so its warm runs still spend time compiling.)

Timings, per run: the worker loads the data first (not timed), then starts the clock,
imports the library (``import s``), fits (``fit s``: build the estimator, ``fit_transform``);
``total s`` is their sum. ``peak RSS MB`` is the worker's ``ru_maxrss``; ``Δ MB`` is that
peak minus the RSS right after loading the data, i.e. what the library itself needed.
``CPU s`` is user + system time over import + fit, all threads.

Quality, computed in the parent: leave-one-out 10-NN label accuracy in the embedding over all
points, and trustworthiness at k=15 on a fixed 3,000-point sample of X and the embedding.

Calls:

* unimap: ``unimap.UMAP(n_neighbors=15, min_dist=0.1, random_state=0).fit_transform(X)``;
  its ``timings_`` (phase -> seconds), when present, are reported too.
* umap-learn: ``umap.UMAP(n_neighbors=15, min_dist=0.1).fit_transform(X)`` without a seed, its
  fastest (multi-threaded) mode; with ``--umap-seeded`` it gets ``random_state=0``, which
  makes it run on one thread.

Examples::

    python benchmarks/umap_mnist.py                      # both, 70k, cold + 1 warm
    python benchmarks/umap_mnist.py --repeats 3          # cold + 3 warm each
    python benchmarks/umap_mnist.py --only umap-learn --n 10000 --no-save
    python benchmarks/umap_mnist.py --no-cold            # warm runs only, caches kept

The markdown table is printed and written to ``benchmarks/results/umap_mnist.md``
(``--out`` to change, ``--no-save`` to skip).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _harness import (
    Runner,
    WorkerError,
    clear_numba_cache,
    count_numba_cache_files,
    fmt,
    knn_accuracy,
    machine_description,
    markdown_table,
    median,
    run_worker,
    trustworthiness_sample,
    wait_for_idle,
    worker_main,
)

N_NEIGHBORS = 15
MIN_DIST = 0.1
LIBRARIES = ("unimap", "umap-learn")
# Packages whose numba disk caches are cleared before a cold run, and those whose cache a
# library's warm runs rely on.
CACHED_PACKAGES = ("unimap", "umap", "pynndescent")
LIBRARY_PACKAGES = {"unimap": ("unimap",), "umap-learn": ("umap", "pynndescent")}
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "umap_mnist.md"


# --------------------------------------------------------------------------- worker side
# These run in the fresh worker process: imports of the benchmarked libraries happen here,
# inside the timed region.


def _import_unimap() -> Any:
    import unimap

    return unimap.UMAP  # lazy attribute: this imports the estimator module (and numba)


def _fit_unimap(UMAP: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    model = UMAP(n_neighbors=params["n_neighbors"], min_dist=params["min_dist"], random_state=0)
    embedding = model.fit_transform(X)
    timings = getattr(model, "timings_", None)
    return embedding, {"timings": dict(timings) if timings is not None else None}


def _import_umap_learn() -> Any:
    import umap

    return umap.UMAP


def _fit_umap_learn(UMAP: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    kwargs = {"n_neighbors": params["n_neighbors"], "min_dist": params["min_dist"]}
    if params.get("seeded"):
        kwargs["random_state"] = 0
    embedding = UMAP(**kwargs).fit_transform(X)
    return embedding, {"seeded": bool(params.get("seeded"))}


RUNNERS = {
    "unimap": Runner(_import_unimap, _fit_unimap),
    "umap-learn": Runner(_import_umap_learn, _fit_umap_learn),
}


# --------------------------------------------------------------------------- parent side


def _label(library: str, seeded: bool) -> str:
    return "umap-learn (seeded)" if library == "umap-learn" and seeded else library


def _run_one(library: str, kind: str, args: argparse.Namespace, workdir: Path, run_id: int) -> dict:
    spec = {
        "data": str(workdir / "X.npy"),
        "embedding": str(workdir / f"embedding_{run_id:02d}_{library}_{kind}.npy"),
        "params": {"n_neighbors": N_NEIGHBORS, "min_dist": MIN_DIST, "seeded": args.umap_seeded},
    }
    return run_worker(
        Path(__file__).resolve(),
        library,
        spec,
        workdir / f"spec_{run_id:02d}.json",
        timeout=args.timeout,
    ) | {"embedding_path": spec["embedding"]}


def _assess(row: dict, X: np.ndarray, y: np.ndarray) -> None:
    embedding = np.load(row["embedding_path"])
    if embedding.shape != (X.shape[0], 2) or not np.all(np.isfinite(embedding)):
        finite = bool(np.isfinite(embedding).all())
        row["error"] = f"bad embedding: shape {embedding.shape}, all finite: {finite}"
        return
    row["knn_acc"] = knn_accuracy(embedding, y, k=10)
    row["trust"] = trustworthiness_sample(X, embedding, k=15, n_sample=3000, seed=0)


def _progress(row: dict) -> str:
    head = f"[{row['label']} {row['run']}]"
    if "error" in row:
        return f"{head} FAILED: {row['error']}"
    return (
        f"{head} import {row['import_s']:.2f} s, fit {row['fit_s']:.2f} s, "
        f"total {row['total_s']:.2f} s, CPU {row['cpu_s']:.1f} s, "
        f"peak RSS {row['peak_rss_mb']:.0f} MB (Δ {row['lib_peak_mb']:.0f} MB), "
        f"10-NN acc {row.get('knn_acc', float('nan')):.4f}, "
        f"trust@15 {row.get('trust', float('nan')):.4f}; "
        f"other work: {fmt(row.get('other_cores'))} cores; "
        f"numba cache files at start: {row['cache_files_before']}"
    )


def run_benchmark(args: argparse.Namespace, X: np.ndarray, y: np.ndarray, workdir: Path) -> list:
    """Run every planned fit; return one dict per run (failed runs carry ``error``)."""
    np.save(workdir / "X.npy", X)
    libraries = [args.only] if args.only else list(LIBRARIES)
    rows = []
    run_id = 0
    for library in libraries:
        label = _label(library, args.umap_seeded)
        plan = (["cold"] if args.cold else []) + ["warm"] * args.repeats
        if not args.cold and count_numba_cache_files(LIBRARY_PACKAGES[library]) == 0:
            print(f"[{label}] no numba cache on disk: unreported warm-up run", file=sys.stderr)
            plan.insert(0, "warm-up")
        for kind in plan:
            run_id += 1
            if args.wait_idle > 0:
                busy = wait_for_idle(args.wait_idle)
                if busy is not None and busy >= 0.25:
                    print(
                        f"[{label} {kind}] machine still busy ({busy:.2f} cores)", file=sys.stderr
                    )
            if kind == "cold":  # right before the run: other processes may fill the caches
                removed = clear_numba_cache(CACHED_PACKAGES)
                print(
                    f"[{label} cold] removed {removed} numba cache files of "
                    f"{', '.join(CACHED_PACKAGES)}",
                    file=sys.stderr,
                )
            row: dict[str, Any] = {
                "library": library,
                "label": label,
                "run": kind,
                "cache_files_before": count_numba_cache_files(LIBRARY_PACKAGES[library]),
            }
            try:
                row |= _run_one(library, kind, args, workdir, run_id)
                _assess(row, X, y)
            except WorkerError as exc:
                row["error"] = str(exc)
            print(_progress(row), file=sys.stderr, flush=True)
            if kind != "warm-up":
                rows.append(row)
    return rows


_METRICS = (
    "import_s",
    "fit_s",
    "total_s",
    "cpu_s",
    "peak_rss_mb",
    "lib_peak_mb",
    "knn_acc",
    "trust",
    "other_cores",
)


def summarize(rows: list[dict]) -> list[dict]:
    """One summary per (library, cold/warm): the run itself, or the median of the warm runs."""
    summaries = []
    for label in dict.fromkeys(r["label"] for r in rows):
        for kind in ("cold", "warm"):
            group = [r for r in rows if r["label"] == label and r["run"] == kind]
            ok = [r for r in group if "error" not in r]
            if not group:
                continue
            run = kind if len(ok) <= 1 else f"{kind} (median of {len(ok)})"
            summary = {"library": group[0]["library"], "label": label, "kind": kind, "run": run}
            if not ok:
                summary["error"] = group[0]["error"]
            else:
                summary |= {m: median([r.get(m) for r in ok]) for m in _METRICS}
            summaries.append(summary)
    # umap-learn total / unimap total, cold vs cold and warm vs warm.
    for kind in ("cold", "warm"):
        ours = next((s for s in summaries if s["library"] == "unimap" and s["kind"] == kind), None)
        theirs = next(
            (s for s in summaries if s["library"] == "umap-learn" and s["kind"] == kind), None
        )
        if ours and theirs and ours.get("total_s") and theirs.get("total_s"):
            ours["ratio"] = theirs["total_s"] / ours["total_s"]
    return summaries


def _row_cells(s: dict, ratio: bool = True) -> list[str]:
    if "error" in s:
        return [s["label"], s["run"], f"failed: {s['error']}"] + [""] * (9 if ratio else 8)
    cells = [
        s["label"],
        s["run"],
        fmt(s["import_s"]),
        fmt(s["fit_s"]),
        fmt(s["total_s"]),
        fmt(s["cpu_s"], 1),
        fmt(s["peak_rss_mb"], 0),
        fmt(s["lib_peak_mb"], 0),
        fmt(s.get("knn_acc"), 4),
        fmt(s.get("trust"), 4),
        fmt(s.get("other_cores")),
    ]
    if ratio:
        cells.append(f"{s['ratio']:.2f}×" if s.get("ratio") else "—")
    return cells


_HEADERS = [
    "library",
    "run",
    "import s",
    "fit s",
    "total s",
    "CPU s",
    "peak RSS MB",
    "Δ MB",
    "10-NN acc",
    "trust@15",
    "other cores",
]


def render(rows: list[dict], args: argparse.Namespace, n: int, n_features: int) -> str:
    """The full markdown report."""
    summaries = summarize(rows)
    parts = [
        markdown_table([*_HEADERS, "umap-learn / unimap total"], [_row_cells(s) for s in summaries])
    ]
    ratios = [s for s in summaries if s.get("ratio")]
    for s in ratios:
        parts.append(
            f"\n{s['kind'].capitalize()}: umap-learn total / unimap total = {s['ratio']:.2f}."
        )
    if any(
        len([r for r in rows if r["label"] == s["label"] and r["run"] == "warm"]) > 1
        for s in summaries
    ):
        parts.append("\nAll runs:\n")
        parts.append(markdown_table(_HEADERS, [_row_cells(r, ratio=False) for r in rows]))
    not_cold = [r for r in rows if r["run"] == "cold" and r.get("cache_files_before")]
    for r in not_cold:
        parts.append(
            f"\nWarning: the {r['label']} cold run found {r['cache_files_before']} numba cache "
            "files on disk at its start (another process wrote them after they were cleared)."
        )
    phase_rows = [r for r in rows if (r.get("extra") or {}).get("timings")]
    if phase_rows:
        phases = list(dict.fromkeys(p for r in phase_rows for p in r["extra"]["timings"]))
        parts.append("\nunimap `timings_` (seconds):\n")
        parts.append(
            markdown_table(
                ["library", "run", *phases],
                [
                    [r["label"], r["run"], *(fmt(r["extra"]["timings"].get(p)) for p in phases)]
                    for r in phase_rows
                ],
            )
        )
    elif any(r["library"] == "unimap" and "error" not in r for r in rows):
        parts.append("\nunimap reported no `timings_`.")

    versions: dict[str, str] = {}
    threads = {}
    for r in rows:
        versions |= r.get("versions", {})
        if "numba_num_threads" in r:
            threads[r["label"]] = (r["numba_num_threads"], r.get("numba_threading_layer"))
    busy = [r["other_cores"] for r in rows if r.get("other_cores") is not None]
    other = f"{min(busy):.2f} to {max(busy):.2f}" if busy else "not measured"
    header = [
        "# UMAP on MNIST: unimap vs umap-learn",
        "",
        f"- Machine: {machine_description()}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        "- Numba threads: "
        + (", ".join(f"{k}: {t} ({layer})" for k, (t, layer) in threads.items()) or "—"),
        f"- Data: MNIST, first {n:,} rows × {n_features} features (float32)",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        "- Other work on the machine during the runs (average cores busy outside the worker, "
        f"per run): {other}",
        f"- Command: `{shlex.join(['python', 'benchmarks/umap_mnist.py', *sys.argv[1:]])}`",
        "",
        "Each run is a fresh process. Data loading is not timed; `total s` = `import s` + "
        "`fit s`. `cold`: numba disk caches of unimap, umap and pynndescent deleted just "
        "before the run; `warm`: caches kept. `Δ MB`: peak RSS minus RSS after loading the "
        "data. `CPU s`: user + system time of import + fit, all threads. 10-NN acc: "
        "leave-one-out over all points; trust@15: on a fixed 3,000-point sample. `other cores`: "
        "average number of cores busy with other work during the run (timings are only "
        "trustworthy near 0).",
        "",
    ]
    return "\n".join(header + parts) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--worker`` / ``--spec`` are internal)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="use the first N rows of MNIST-70k")
    parser.add_argument("--repeats", type=int, default=1, help="warm runs per library (1)")
    parser.add_argument(
        "--cold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one cold run per library first, after deleting the numba disk caches of "
        "unimap, umap and pynndescent (default); --no-cold keeps the caches and runs warm only",
    )
    parser.add_argument("--only", choices=LIBRARIES, help="run one library only")
    parser.add_argument(
        "--umap-seeded",
        action="store_true",
        help="run umap-learn with random_state=0 (deterministic, single-threaded)",
    )
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds allowed per run (3600)"
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each run, wait up to SECONDS for other work on the machine to stop "
        "(less than 0.25 cores busy over 5 s); default 0: don't wait",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report path")
    parser.add_argument("--no-save", action="store_true", help="print the report only")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the data and embeddings (.npy) here (default: a temporary folder)",
    )
    parser.add_argument("--worker", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 0 or (args.repeats == 0 and not args.cold):
        parser.error("nothing to run: need --repeats >= 1 or a cold run")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker_main(RUNNERS[args.worker], args.spec)
        return 0

    from unimap.datasets import load_mnist

    X, y = load_mnist()
    if args.n is not None:
        X, y = X[: args.n], y[: args.n]
    X = np.ascontiguousarray(X, dtype=np.float32)

    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = run_benchmark(args, X, y, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="umap_mnist_") as tmp:
            rows = run_benchmark(args, X, y, Path(tmp))

    report = render(rows, args, X.shape[0], X.shape[1])
    print(report)
    if not args.no_save:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)
        print(f"written to {args.out}", file=sys.stderr)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
