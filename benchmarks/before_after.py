"""unimap against an earlier commit of itself on MNIST-70k: time and quality, per method.

A refactor that is meant to keep behaviour must keep time and quality within noise. This
script checks out ``--base`` (default ``0476803``, the commit before the "One pipeline"
redesign) into a temporary git worktree and runs every method from both trees, each fit in a
fresh process (``_harness.py``), the two versions interleaved (base, head, base, head, ...)
so that a change in the machine's load hits both. A first unmeasured run per version and
method fills numba's cache, so the measured runs are warm.

Quality, computed in the parent and the same for both versions: leave-one-out 10-NN accuracy
(all points), trustworthiness@15 on a fixed 3,000-point sample, recall of the exact 15
input-space neighbours on a fixed 5,000-point sample (``unimap.metrics.knn_recall``).

Calls: ``UMAP(random_state=0)``, ``TSNE(random_state=0)``, ``GDR(random_state=0)``,
``GDR(normalized=True, random_state=0)``, each ``.fit(X).embedding_``.

Example::

    python benchmarks/before_after.py                     # 4 methods, 70k, 2 measured runs
    python benchmarks/before_after.py --methods gdr --n 20000 --repeats 1 --no-save
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _harness import (
    Runner,
    WorkerError,
    fmt,
    knn_accuracy,
    machine_description,
    markdown_table,
    median,
    run_worker,
    trustworthiness_sample,
    worker_main,
)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "before_after.md"
METHODS = {
    "umap": ("UMAP", {}),
    "tsne": ("TSNE", {}),
    "gdr": ("GDR", {}),
    "gdr-normalized": ("GDR", {"normalized": True}),
}


def _import_unimap() -> Any:
    import unimap

    return unimap


def _fitter(method: str):
    cls_name, params = METHODS[method]

    def fit(unimap: Any, X: np.ndarray, _: dict) -> tuple[np.ndarray, dict]:
        model = getattr(unimap, cls_name)(random_state=0, **params).fit(X)
        return model.embedding_, {"timings": dict(getattr(model, "timings_", {}) or {}),
                                  "unimap_file": unimap.__file__}
    return fit


RUNNERS = {m: Runner(_import_unimap, _fitter(m)) for m in METHODS}


def _worktree(commit: str, root: Path) -> Path:
    path = root / f"unimap-{commit}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), commit],
                   check=True, capture_output=True)
    return path


def _assess(row: dict, X: np.ndarray, y: np.ndarray) -> None:
    from unimap.metrics import knn_recall

    embedding = np.load(row["embedding_path"]).astype(np.float64)
    if embedding.shape != (X.shape[0], 2) or not np.isfinite(embedding).all():
        row["error"] = f"bad embedding: shape {embedding.shape}"
        return
    row["knn_acc"] = knn_accuracy(embedding, y, k=10)
    row["trust"] = trustworthiness_sample(X, embedding, k=15)
    row["recall"] = knn_recall(X, embedding, 15, sample_size=5000, random_state=0)


def _run_all(args: argparse.Namespace, X: np.ndarray, y: np.ndarray, tmp: Path) -> list[dict]:
    base_tree = _worktree(args.base, tmp)
    trees = {"base": str(base_tree), "head": str(REPO)}
    np.save(tmp / "X.npy", X)
    rows, run_id = [], 0
    try:
        for method in args.methods:
            for attempt in range(args.repeats + 1):  # attempt 0 warms numba's cache
                for version, tree in trees.items():
                    run_id += 1
                    env = dict(os.environ, PYTHONPATH=tree)
                    spec = {"data": str(tmp / "X.npy"),
                            "embedding": str(tmp / f"embedding_{run_id:03d}.npy")}
                    row: dict[str, Any] = {"method": method, "version": version}
                    try:
                        row |= run_worker(Path(__file__).resolve(), method, spec,
                                          tmp / f"spec_{run_id:03d}.json", args.timeout, env)
                        row["embedding_path"] = spec["embedding"]
                        if attempt:
                            _assess(row, X, y)
                    except WorkerError as exc:
                        row["error"] = str(exc)
                    print(f"[{method} {version} {attempt if attempt else 'warm-up'}] "
                          + ", ".join(f"{k}={fmt(row.get(k), 4)}"
                                      for k in ("total_s", "knn_acc", "trust", "recall"))
                          + f" ({row.get('extra', {}).get('unimap_file')})", file=sys.stderr,
                          flush=True)
                    if attempt:
                        rows.append(row)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                        str(base_tree)], check=False, capture_output=True)
    return rows


_METRICS = ("total_s", "cpu_s", "lib_peak_mb", "knn_acc", "trust", "recall", "other_cores")


def render(rows: list[dict], args: argparse.Namespace, n: int) -> str:
    head = ["method", "version", "runs", "total s", "CPU s", "Δ MB", "10-NN acc", "trust@15",
            "recall@15", "other cores", "time head / base"]
    table, base_time = [], {}
    for method in args.methods:
        for version in ("base", "head"):
            ok = [r for r in rows if r["method"] == method and r["version"] == version
                  and "error" not in r]
            if not ok:
                table.append([method, version, "0", "failed"] + [""] * 7)
                continue
            s = {m: median([r.get(m) for r in ok]) for m in _METRICS}
            base_time.setdefault(method, s["total_s"])
            ratio = s["total_s"] / base_time[method] if version == "head" else None
            table.append([method, version, str(len(ok)), fmt(s["total_s"]), fmt(s["cpu_s"], 1),
                          fmt(s["lib_peak_mb"], 0), fmt(s["knn_acc"], 4), fmt(s["trust"], 4),
                          fmt(s["recall"], 4), fmt(s["other_cores"]),
                          f"{ratio:.3f}×" if ratio else "—"])
    return "\n".join([
        f"# unimap head against {args.base} on MNIST",
        "",
        f"- Machine: {machine_description()}",
        f"- Data: MNIST, first {n:,} rows (float32)",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Command: `{shlex.join(['python', 'benchmarks/before_after.py', *sys.argv[1:]])}`",
        "",
        "Fresh process per run, warm numba cache, versions interleaved; medians of the "
        "measured runs. `other cores`: other work on the machine during the run (hypervisor "
        "steal included).",
        "",
        markdown_table(head, table),
    ]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="0476803", help="the commit to compare against")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--n", type=int, default=None, help="use the first N rows of MNIST")
    parser.add_argument("--repeats", type=int, default=2, help="measured runs per version")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--worker", choices=sorted(METHODS), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(RUNNERS[args.worker], args.spec)
        return 0
    args.methods = args.methods.split(",")
    if unknown := set(args.methods) - set(METHODS):
        parser.error(f"unknown methods {sorted(unknown)}; choose from {sorted(METHODS)}")
    from unimap.datasets import load_mnist

    X, y = load_mnist()
    if args.n is not None:
        X, y = X[: args.n], y[: args.n]
    X = np.ascontiguousarray(X, dtype=np.float32)
    with tempfile.TemporaryDirectory(prefix="before_after_") as tmp:
        rows = _run_all(args, X, y, Path(tmp))
    report = render(rows, args, X.shape[0])
    print(report)
    if not args.no_save:
        from unimap.io.atomic import atomic_path

        with atomic_path(args.out) as out:
            out.write_text(report)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
