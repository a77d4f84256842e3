"""Benchmark ``unimap.TSNE`` against openTSNE and scikit-learn's TSNE on MNIST-70k.

Each fit runs in a fresh Python process (see ``_harness.py``), one library after the other.
unimap gets a *cold* run first (its numba disk cache deleted just before), then ``--repeats``
*warm* runs; openTSNE and scikit-learn compile nothing at run time, so they get warm runs only.

Timings, per run: the worker loads the data (not timed), then starts the clock, imports the
library and fits; ``total s`` is import + fit. ``Δ MB`` is the peak RSS minus the RSS after
loading the data.

Quality, computed in the parent and the same for every library:

* 10-NN acc: leave-one-out 10-NN label accuracy in the embedding, all points;
* recall@15: the fraction of the exact 15 nearest input-space neighbours that are among the 15
  nearest embedding neighbours, on a fixed 5,000-point sample (neighbours among all points,
  ``unimap.metrics.knn_recall``);
* KL: KL(P‖Q) of the embedding, with one common P for every library (perplexity 30 on the
  exact 90 nearest neighbours, ``unimap.affinity.perplexity.perplexity_affinities``) and Q
  normalised exactly over all pairs (``unimap.metrics.tsne_kl_divergence``), so the numbers
  compare; each library's own KL estimate is listed too when it reports one.

Calls (all with perplexity 30, 2 components, their default number of iterations and all
cores):

* unimap: ``unimap.TSNE(random_state=0).fit(X)`` (750 iterations);
* openTSNE: ``openTSNE.TSNE(n_jobs=-1, random_state=0).fit(X)`` (250 + 500 iterations);
* scikit-learn: ``sklearn.manifold.TSNE(n_jobs=-1, random_state=0).fit(X)`` (1,000).

Examples::

    python benchmarks/tsne_mnist.py                       # all three, 70k
    python benchmarks/tsne_mnist.py --skip sklearn        # scikit-learn takes ~15 min here
    python benchmarks/tsne_mnist.py --n 10000 --no-save

The markdown table is printed and written to ``benchmarks/results/tsne_mnist.md``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from _harness import (
    Runner,
    WorkerError,
    clear_numba_cache,
    fmt,
    knn_accuracy,
    machine_description,
    markdown_table,
    median,
    run_worker,
    wait_for_idle,
    worker_main,
)

LIBRARIES = ("unimap", "openTSNE", "sklearn")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "tsne_mnist.md"


# --------------------------------------------------------------------------- worker side


def _import_unimap() -> Any:
    import unimap

    return unimap.TSNE


def _fit_unimap(TSNE: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    model = TSNE(random_state=0).fit(X)
    return model.embedding_, {"timings": dict(model.timings_), "kl": model.kl_divergence_}


def _import_opentsne() -> Any:
    import openTSNE

    return openTSNE.TSNE


def _fit_opentsne(TSNE: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    embedding = TSNE(n_jobs=-1, random_state=0).fit(X)
    return np.asarray(embedding), {"kl": float(embedding.kl_divergence)}


def _import_sklearn() -> Any:
    from sklearn.manifold import TSNE

    return TSNE


def _fit_sklearn(TSNE: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    model = TSNE(n_jobs=-1, random_state=0).fit(X)
    return model.embedding_, {"kl": float(model.kl_divergence_)}


RUNNERS = {
    "unimap": Runner(_import_unimap, _fit_unimap),
    "openTSNE": Runner(_import_opentsne, _fit_opentsne),
    "sklearn": Runner(_import_sklearn, _fit_sklearn),
}


# --------------------------------------------------------------------------- parent side


class Judge:
    """The quality measures, with what they share across libraries computed once."""

    def __init__(self, X: np.ndarray, y: np.ndarray) -> None:
        from unimap.affinity.perplexity import perplexity_affinities
        from unimap.neighbors.graph import nearest_neighbors

        self.X, self.y = X, y
        tic = time.perf_counter()
        graph, _ = nearest_neighbors(X, 91, method="exact")
        self.P, _ = perplexity_affinities(graph.indices, graph.distances, 30.0)
        print(f"[judge] exact P in {time.perf_counter() - tic:.1f} s", file=sys.stderr)

    def assess(self, row: dict) -> None:
        from unimap.metrics import knn_recall, tsne_kl_divergence

        embedding = np.load(row["embedding_path"]).astype(np.float64)
        if embedding.shape != (self.X.shape[0], 2) or not np.isfinite(embedding).all():
            row["error"] = f"bad embedding: shape {embedding.shape}"
            return
        row["knn_acc"] = knn_accuracy(embedding, self.y, k=10)
        row["recall"] = knn_recall(self.X, embedding, 15, sample_size=5000, random_state=0)
        row["kl"] = tsne_kl_divergence(self.P, embedding)
        row["own_kl"] = (row.get("extra") or {}).get("kl")


def run_benchmark(args: argparse.Namespace, X: np.ndarray, judge: Judge, workdir: Path,
                  script: Path | None = None) -> list:
    """Run the planned fits of ``args.libraries`` through ``script`` (default: this file) as
    the worker; a cold run first for the libraries in ``args.cold_libraries`` (unimap)."""
    script = Path(__file__).resolve() if script is None else script
    cold_libraries = getattr(args, "cold_libraries", {"unimap"})
    np.save(workdir / "X.npy", X)
    rows, run_id = [], 0
    for library in args.libraries:
        plan = (["cold"] if library in cold_libraries and args.cold else []) + (
            ["warm"] * args.repeats)
        for kind in plan:
            run_id += 1
            if args.wait_idle > 0:
                wait_for_idle(args.wait_idle)
            if kind == "cold":
                clear_numba_cache(("unimap",))
            spec = {"data": str(workdir / "X.npy"),
                    "embedding": str(workdir / f"embedding_{run_id:02d}.npy"), "params": {}}
            row: dict[str, Any] = {"library": library, "run": kind}
            try:
                row |= run_worker(script, library, spec,
                                  workdir / f"spec_{run_id:02d}.json", timeout=args.timeout)
                row["embedding_path"] = spec["embedding"]
                judge.assess(row)
            except WorkerError as exc:
                row["error"] = str(exc)
            print(f"[{library} {kind}] " + ", ".join(
                f"{k}={fmt(row.get(k), 4)}" for k in ("total_s", "knn_acc", "recall", "kl")
            ) + (f" FAILED: {row['error']}" if "error" in row else ""), file=sys.stderr,
                flush=True)
            rows.append(row)
    return rows


_METRICS = ("import_s", "fit_s", "total_s", "cpu_s", "lib_peak_mb", "knn_acc", "recall", "kl",
            "own_kl", "other_cores")


def summarize(rows: list[dict]) -> list[dict]:
    """One row per (library, cold/warm): the median of its successful runs."""
    out = []
    for library in dict.fromkeys(r["library"] for r in rows):
        for kind in ("cold", "warm"):
            group = [r for r in rows if r["library"] == library and r["run"] == kind]
            ok = [r for r in group if "error" not in r]
            if not group:
                continue
            s = {"library": library, "run": kind if len(ok) <= 1 else f"{kind} ×{len(ok)}"}
            if ok:
                s |= {m: median([r.get(m) for r in ok]) for m in _METRICS}
            else:
                s["error"] = group[0]["error"]
            out.append(s)
    ours = next((s for s in out if s["library"] == "unimap" and s["run"].startswith("warm")
                 and "error" not in s), None)
    for s in out:
        if ours and "error" not in s:
            s["ratio"] = s["total_s"] / ours["total_s"]
            s["recall_ratio"] = ours["recall"] / s["recall"] if s["recall"] else None
    return out


_HEADERS = ["library", "run", "import s", "fit s", "total s", "CPU s", "Δ MB", "10-NN acc",
            "recall@15", "KL (common P)", "own KL", "other cores", "time / unimap warm"]


def _cells(s: dict) -> list[str]:
    if "error" in s:
        return [s["library"], s["run"], f"failed: {s['error'][:200]}"] + [""] * 10
    return [s["library"], s["run"], fmt(s["import_s"]), fmt(s["fit_s"]), fmt(s["total_s"]),
            fmt(s["cpu_s"], 1), fmt(s["lib_peak_mb"], 0), fmt(s["knn_acc"], 4),
            fmt(s["recall"], 4), fmt(s["kl"], 4), fmt(s.get("own_kl"), 4),
            fmt(s.get("other_cores")), f"{s['ratio']:.2f}×" if s.get("ratio") else "—"]


def report_header(title: str, script: str, rows: list[dict], n: int,
                  n_features: int) -> list[str]:
    """Title, machine, library versions (of all runs), data, date and command of a report."""
    versions: dict[str, str] = {}
    for r in rows:
        versions |= r.get("versions", {})
    return [
        f"# {title}",
        "",
        f"- Machine: {machine_description()}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
        f"- Data: MNIST, first {n:,} rows × {n_features} features (float32)",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Command: `{shlex.join(['python', f'benchmarks/{script}', *sys.argv[1:]])}`",
        "",
    ]


def render(rows: list[dict], n: int, n_features: int) -> str:
    summaries = summarize(rows)
    parts = [
        *report_header("t-SNE on MNIST: unimap vs openTSNE vs scikit-learn", "tsne_mnist.py",
                       rows, n, n_features),
        "Fresh process per run; `total s` = import + fit; `cold`: unimap's numba cache deleted "
        "first. 10-NN acc: leave-one-out, all points. recall@15: exact input-space 15-NN kept "
        "in the embedding's 15-NN, 5,000-point sample. KL (common P): every embedding scored "
        "against the same exact-kNN P (perplexity 30), Z exact. own KL: the library's estimate "
        "against its own P. `other cores`: other work on the machine during the run.",
        "",
        markdown_table(_HEADERS, [_cells(s) for s in summaries]),
    ]
    ours = next((s for s in summaries if s["library"] == "unimap" and "ratio" in s
                 and s["run"].startswith("warm")), None)
    for s in summaries:
        if ours and s["library"] != "unimap" and "error" not in s:
            parts.append(
                f"\n{s['library']}: {s['ratio']:.2f}× unimap's warm time; 10-NN acc "
                f"{ours['knn_acc'] - s['knn_acc']:+.4f} (unimap − {s['library']}); recall "
                f"ratio unimap / {s['library']} = {s['recall_ratio']:.3f}."
            )
    timed = [r for r in rows if (r.get("extra") or {}).get("timings")]
    if timed:
        phases = list(timed[0]["extra"]["timings"])
        parts += ["\nunimap `timings_` (seconds):\n", markdown_table(
            ["run", *phases],
            [[r["run"], *(fmt(r["extra"]["timings"][p]) for p in phases)] for r in timed])]
    return "\n".join(parts) + "\n"


class Suite(NamedTuple):
    """What a MNIST benchmark script runs: its workers, their order, which get a cold run,
    its report and where it goes. ``gdr_mnist.py`` reuses this script's machinery with its own."""

    script: Path
    description: str
    runners: dict[str, Runner]
    libraries: tuple[str, ...]
    cold_libraries: frozenset[str]
    render: Callable[[list[dict], int, int], str]
    default_out: Path


def parse_args(suite: Suite, argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=suite.description)
    parser.add_argument("--n", type=int, default=None, help="use the first N rows of MNIST")
    parser.add_argument("--repeats", type=int, default=1, help="warm runs per library (1)")
    parser.add_argument("--cold", action=argparse.BooleanOptionalAction, default=True,
                        help=f"a cold run first for {', '.join(sorted(suite.cold_libraries))} "
                        "(default)")
    parser.add_argument("--only", default=None, help="comma-separated libraries to run")
    parser.add_argument("--skip", default="", help="comma-separated libraries to skip")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                        help="wait up to SECONDS for the machine to be idle before each run")
    parser.add_argument("--out", type=Path, default=suite.default_out)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--worker", choices=sorted(suite.runners), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(suite.libraries)
    skip = set(filter(None, args.skip.split(",")))
    unknown = (set(chosen) | skip) - set(suite.libraries)
    if unknown:
        parser.error(f"unknown libraries {sorted(unknown)}; choose from {suite.libraries}")
    args.libraries = [lib for lib in chosen if lib not in skip]
    args.cold_libraries = set(suite.cold_libraries)
    return args


def run_suite(suite: Suite, argv: list[str] | None = None) -> int:
    """The whole script: a worker run, or load MNIST, run every fit, judge and report."""
    args = parse_args(suite, argv)
    if args.worker:
        worker_main(suite.runners[args.worker], args.spec)
        return 0
    from unimap.datasets import load_mnist

    X, y = load_mnist()
    if args.n is not None:
        X, y = X[: args.n], y[: args.n]
    X = np.ascontiguousarray(X, dtype=np.float32)
    judge = Judge(X, y)
    with tempfile.TemporaryDirectory(prefix=f"{suite.script.stem}_") as tmp:
        rows = run_benchmark(args, X, judge, Path(tmp), script=suite.script)
    report = suite.render(rows, X.shape[0], X.shape[1])
    print(report)
    if not args.no_save:
        from unimap.io.atomic import atomic_path

        with atomic_path(args.out) as tmp:  # a failed write leaves no half report
            tmp.write_text(report)
    return 1 if any("error" in r for r in rows) else 0


SUITE = Suite(Path(__file__).resolve(), __doc__.split("\n\n")[0], RUNNERS, LIBRARIES,
              frozenset({"unimap"}), render, DEFAULT_OUT)


def main(argv: list[str] | None = None) -> int:
    return run_suite(SUITE, argv)


if __name__ == "__main__":
    sys.exit(main())
