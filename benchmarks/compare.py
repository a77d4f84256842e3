"""Benchmark every unimap method against its peers: one command, one table, one figure.

Run from the repository root (the ``bench`` extra installs the peers)::

    python benchmarks/compare.py --quick                  # digits + 2,000 MNIST points
    python benchmarks/compare.py                          # MNIST-70k, every method
    python benchmarks/compare.py --dataset digits
    python benchmarks/compare.py --n 20000 --only unimap-umap,umap-learn
    python benchmarks/compare.py --skip sklearn-tsne,trimap --timeout 1800

Methods (``--only`` / ``--skip`` take these names, comma-separated):

* unimap: ``unimap-pca``, ``unimap-umap``, ``unimap-tsne``, ``unimap-gdr``,
  ``unimap-gdr-normalized``; each is run only if ``unimap`` has that estimator
  (``hasattr(unimap, "TSNE")``...), always with ``random_state=0``;
* peers: ``umap-learn`` (unseeded: its fastest, multi-threaded mode), ``opentsne``
  (``openTSNE.TSNE(n_jobs=-1, random_state=0).fit(X)``), ``sklearn-tsne``, ``sklearn-pca``,
  ``pacmap``, ``trimap``. A peer that is not installed is skipped with a note.

The report lists the exact call of each. Every fit runs in a fresh Python process, one after
the other (see ``_harness.py``): the worker loads the data from a ``.npy`` file written once
per dataset into the work folder (not timed), then times the import of the library plus the
fit (``total s``; ``CPU s`` is the user + system time of both, all threads) and records its own
peak RSS (``VmHWM``) minus its RSS after loading the data (``Δ RSS MB``: what the library
itself needed; not ``ru_maxrss``, which a child inherits from its parent's peak across
``exec``). A fit that raises, returns a bad embedding or runs past ``--timeout`` seconds is
reported as failed / timeout, and the others go on. Numba's on-disk caches are left as they
are (``--cold`` deletes a method's caches before each of its runs); a numba-based method whose
packages have no cache files on disk at all first gets one unreported warm-up run
(``--warmup``), so the table shows a user's second run, not the one-off compilation. The
``numba cache`` column gives the number of cache files the method's packages had on disk when
its measured run started. TriMap's numba functions are not cached on disk: it compiles in every
run (some 7-10 s here, counted in its import time).

Quality, computed in this (parent) process with :mod:`unimap.metrics`, the same seeds and
samples for every method:

* ``10-NN acc``: leave-one-out 10-NN label accuracy in the embedding, all points
  (``knn_accuracy_loo``);
* ``trust@15``: trustworthiness at k=15 on a fixed random 3,000-point sample
  (``trustworthiness`` of ``X[s]``, ``embedding[s]``, ``s = default_rng(0).choice(n, 3000)``);
* ``15-NN recall``: fraction of the 15 exact input-space neighbours kept among the 15 exact
  embedding neighbours, for a fixed random sample of 5,000 query points (``knn_recall``);
* ``triplet acc``: fraction of 100,000 random triplets whose distance order is kept
  (``triplet_accuracy``; 0.5 is chance);
* ``dist. ρ``: Spearman correlation of input and embedding distances of 100,000 random pairs
  (``distance_correlation``).

``--quick`` runs digits and the first 2,000 MNIST points with every method (per-fit timeout
120 s). There scikit-learn's t-SNE runs 500 iterations instead of 1,000 and TriMap 250 instead
of 400 (the ``notes`` column says so), so their quick numbers are not their defaults'. On this
project's 2-core machine, quiet, it took 101 s with all 11 methods (fits, metrics and figure);
with 5,000 MNIST points and other work keeping a core busy it had taken 299 s. umap-learn,
TriMap and PaCMAP compile numba code in every fresh process, which dominates their small-data
times.

Output, in ``--out`` (default ``benchmarks/results/``), written atomically:
``compare_<dataset>[_n<N>].md`` (or ``compare_quick.md``) with the machine, versions, the
command and one table per dataset, and a ``.png`` of the same name with one panel per method
(points coloured by label).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import inspect
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from _harness import (
    Runner,
    WorkerError,
    clear_numba_cache,
    count_numba_cache_files,
    fmt,
    machine_description,
    markdown_table,
    run_worker,
    wait_for_idle,
    worker_main,
)

# Quality metrics: sizes and seed, the same for every method.
SEED = 0
K_ACC = 10
K_TRUST, N_TRUST = 15, 3000
K_RECALL, N_RECALL = 15, 5000
N_TRIPLETS = 100_000
N_PAIRS = 100_000

QUICK_PLAN = (("digits", None), ("mnist", 2000))
# Quick mode only: fewer iterations for the slow peers (their defaults: 1000 and 400).
QUICK_SKLEARN_TSNE_ITER = 500
QUICK_TRIMAP_ITER = 250

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
DEFAULT_TIMEOUT, DEFAULT_QUICK_TIMEOUT = 3600.0, 120.0

# Distributions whose versions the report lists (those installed).
_DISTRIBUTIONS = (
    "unimap",
    "numpy",
    "scipy",
    "scikit-learn",
    "numba",
    "llvmlite",
    "pynndescent",
    "umap-learn",
    "openTSNE",
    "pacmap",
    "trimap",
    "annoy",
    "faiss-cpu",
    "matplotlib",
)


class Method(NamedTuple):
    """One benchmarked method: how its worker runs it and what the parent checks first."""

    label: str  # name in the table and the figure
    runner: Runner  # worker side: import, then fit (see _harness.Runner)
    module: str  # top-level module that must be importable, else the method is skipped
    call: str  # the call, as the report shows it
    attr: str | None = None  # unimap estimator that must exist (hasattr(unimap, attr))
    numba_packages: tuple[str, ...] = ()  # packages whose numba disk cache the method uses


# --------------------------------------------------------------------------- worker side
# These run in the fresh worker process: the imports of the benchmarked libraries happen
# here, inside the timed region.


def _unimap(name: str, label: str | None = None, uses_numba: bool = True, **kwargs: Any) -> Method:
    """``unimap.<name>(**kwargs, random_state=0).fit_transform(X)`` as a :class:`Method`."""

    def import_fn() -> Any:
        import unimap

        return getattr(unimap, name)  # lazy attribute: imports the estimator's module

    def fit_fn(cls: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
        model = cls(**kwargs, random_state=SEED)
        embedding = model.fit_transform(X)
        timings = getattr(model, "timings_", None)
        return embedding, {"timings": dict(timings) if timings else None}

    shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    call = f"unimap.{name}({shown + ', ' if shown else ''}random_state={SEED}).fit_transform(X)"
    if label is None:
        label = f"unimap {name}" + (f" ({shown})" if shown else "")
    packages = ("unimap",) if uses_numba else ()
    return Method(label, Runner(import_fn, fit_fn), "unimap", call, name, packages)


def _import_umap_learn() -> Any:
    import umap

    return umap.UMAP


def _fit_umap_learn(UMAP: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    return UMAP(n_neighbors=15, min_dist=0.1).fit_transform(X), {"note": "unseeded"}


def _import_opentsne() -> Any:
    import openTSNE

    return openTSNE.TSNE


def _fit_opentsne(TSNE: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    return np.asarray(TSNE(n_jobs=-1, random_state=SEED).fit(X)), {}


def _import_sklearn_tsne() -> Any:
    from sklearn.manifold import TSNE

    return TSNE


def _fit_sklearn_tsne(TSNE: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    kwargs: dict[str, Any] = {"n_jobs": -1, "random_state": SEED}
    extra = {}
    if params.get("quick"):
        # scikit-learn >= 1.5 calls it max_iter, older versions n_iter.
        key = "max_iter" if "max_iter" in inspect.signature(TSNE).parameters else "n_iter"
        kwargs[key] = QUICK_SKLEARN_TSNE_ITER
        extra["note"] = f"quick: {key}={QUICK_SKLEARN_TSNE_ITER} (default 1000)"
    return TSNE(**kwargs).fit_transform(X), extra


def _import_sklearn_pca() -> Any:
    from sklearn.decomposition import PCA

    return PCA


def _fit_sklearn_pca(PCA: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    return PCA(n_components=2, random_state=SEED).fit_transform(X), {}


def _import_pacmap() -> Any:
    import pacmap

    return pacmap.PaCMAP


def _fit_pacmap(PaCMAP: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    return PaCMAP(n_components=2, random_state=SEED).fit_transform(X), {}


def _import_trimap() -> Any:
    import trimap

    return trimap.TRIMAP


def _fit_trimap(TRIMAP: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    # TriMap 1.1 takes no seed: its triplet sampling uses numba's unseeded generator.
    kwargs: dict[str, Any] = {"n_dims": 2}
    note = "unseeded"
    if params.get("quick"):
        kwargs["n_iters"] = QUICK_TRIMAP_ITER
        note += f"; quick: n_iters={QUICK_TRIMAP_ITER} (default 400)"
    return TRIMAP(**kwargs).fit_transform(X), {"note": note}


METHODS: dict[str, Method] = {
    # unimap: one line per estimator; run only where unimap has it.
    "unimap-pca": _unimap("PCA", uses_numba=False),
    "unimap-umap": _unimap("UMAP", "unimap UMAP", n_neighbors=15, min_dist=0.1),
    "unimap-tsne": _unimap("TSNE"),
    "unimap-gdr": _unimap("GDR"),
    "unimap-gdr-normalized": _unimap("GDR", normalized=True),
    # peers
    "umap-learn": Method(
        "umap-learn",
        Runner(_import_umap_learn, _fit_umap_learn),
        "umap",
        "umap.UMAP(n_neighbors=15, min_dist=0.1).fit_transform(X)  # unseeded: multi-threaded",
        numba_packages=("umap", "pynndescent"),
    ),
    "opentsne": Method(
        "openTSNE",
        Runner(_import_opentsne, _fit_opentsne),
        "openTSNE",
        f"openTSNE.TSNE(n_jobs=-1, random_state={SEED}).fit(X)",
    ),
    "sklearn-tsne": Method(
        "sklearn TSNE",
        Runner(_import_sklearn_tsne, _fit_sklearn_tsne),
        "sklearn",
        f"sklearn.manifold.TSNE(n_jobs=-1, random_state={SEED}).fit_transform(X)"
        f"  # --quick: max_iter={QUICK_SKLEARN_TSNE_ITER}",
    ),
    "sklearn-pca": Method(
        "sklearn PCA",
        Runner(_import_sklearn_pca, _fit_sklearn_pca),
        "sklearn",
        f"sklearn.decomposition.PCA(n_components=2, random_state={SEED}).fit_transform(X)",
    ),
    "pacmap": Method(
        "PaCMAP",
        Runner(_import_pacmap, _fit_pacmap),
        "pacmap",
        f"pacmap.PaCMAP(n_components=2, random_state={SEED}).fit_transform(X)",
        numba_packages=("pacmap",),
    ),
    "trimap": Method(
        "TriMap",
        Runner(_import_trimap, _fit_trimap),
        "trimap",
        "trimap.TRIMAP(n_dims=2).fit_transform(X)  # no seed parameter; "
        f"--quick: n_iters={QUICK_TRIMAP_ITER}",
        # numba without a disk cache: it compiles in every run, there is nothing to warm up.
    ),
}


RUNNERS = {key: method.runner for key, method in METHODS.items()}


# --------------------------------------------------------------------------- parent side


def available_methods(keys: list[str]) -> tuple[list[str], dict[str, str]]:
    """The methods of ``keys`` that can run here, and why each of the others cannot."""
    runnable, skipped = [], {}
    for key in keys:
        method = METHODS[key]
        if importlib.util.find_spec(method.module) is None:
            skipped[key] = f"`{method.module}` is not installed"
            continue
        if method.attr is not None:
            try:
                import unimap

                present = hasattr(unimap, method.attr)
            except Exception as exc:  # the estimator's module exists but does not import
                skipped[key] = f"unimap.{method.attr} does not import: {type(exc).__name__}: {exc}"
                continue
            if not present:
                skipped[key] = f"unimap has no {method.attr} yet"
                continue
        runnable.append(key)
    return runnable, skipped


def load_dataset(name: str, n: int | None) -> tuple[np.ndarray, np.ndarray, str]:
    """``(X float32 C-contiguous, y, description)``; MNIST keeps its first ``n`` rows."""
    from unimap.datasets import load_digits, load_mnist

    if name == "digits":
        X, y = load_digits()
        title = "digits"
    else:
        X, y = load_mnist(n_samples=n)
        title = "MNIST" if n is None or n >= 70_000 else f"MNIST, first {X.shape[0]:,} points"
    X = np.ascontiguousarray(X, dtype=np.float32)
    return X, y, f"{title} ({X.shape[0]:,} × {X.shape[1]}, float32)"


def assess(row: dict, embedding: np.ndarray, X: np.ndarray, y: np.ndarray) -> None:
    """Add the quality metrics to ``row`` (or ``error`` when the embedding is unusable)."""
    from unimap import metrics

    if embedding.shape != (X.shape[0], 2) or not np.all(np.isfinite(embedding)):
        finite = bool(np.isfinite(embedding).all())
        row["error"] = f"bad embedding: shape {embedding.shape}, all finite: {finite}"
        return
    n = X.shape[0]
    sample = np.random.default_rng(SEED).choice(n, min(N_TRUST, n), replace=False)
    embedding = np.ascontiguousarray(embedding, dtype=np.float64)
    try:
        row["knn_acc"] = metrics.knn_accuracy_loo(embedding, y, K_ACC)
        row["trust"] = metrics.trustworthiness(X[sample], embedding[sample], K_TRUST)
        row["recall"] = metrics.knn_recall(
            X, embedding, K_RECALL, sample_size=N_RECALL, random_state=SEED
        )
        row["triplet"] = metrics.triplet_accuracy(X, embedding, N_TRIPLETS, random_state=SEED)
        row["dist_corr"] = metrics.distance_correlation(X, embedding, N_PAIRS, random_state=SEED)
    except Exception as exc:  # keep the timings; say why the rest is missing
        row["metric_error"] = f"{type(exc).__name__}: {exc}"


def _run_once(key: str, args: argparse.Namespace, data: Path, workdir: Path, tag: str) -> dict:
    spec = {
        "data": str(data),
        "embedding": str(workdir / f"embedding_{tag}_{key}.npy"),
        "params": {"quick": args.quick},
    }
    result = run_worker(
        Path(__file__).resolve(), key, spec, workdir / f"spec_{tag}_{key}.json", args.timeout
    )
    return result | {"embedding_path": spec["embedding"]}


def _progress(row: dict) -> str:
    head = f"[{row['dataset']} · {row['label']}]"
    if "error" in row:
        return f"{head} {row['status'].upper()}: {row['error']}"
    quality = ", ".join(
        f"{name} {fmt(row.get(key), 4)}"
        for name, key in (
            ("10-NN acc", "knn_acc"),
            ("trust@15", "trust"),
            ("recall", "recall"),
            ("triplet", "triplet"),
            ("dist ρ", "dist_corr"),
        )
    )
    return (
        f"{head} import {row['import_s']:.2f} s, fit {row['fit_s']:.2f} s, total "
        f"{row['total_s']:.2f} s, CPU {row['cpu_s']:.1f} s, Δ RSS {row['delta_mb']:.0f} MB; "
        f"{quality}; other work {fmt(row.get('other_cores'))} cores; "
        f"process {row['process_wall_s']:.1f} s, metrics {fmt(row.get('assess_s'), 1)} s"
    )


def run_dataset(
    name: str,
    n: int | None,
    keys: list[str],
    args: argparse.Namespace,
    workdir: Path,
    warmed: set[str],
) -> dict:
    """Run every method on one dataset; return ``{"name", "title", "y", "rows"}``."""
    X, y, title = load_dataset(name, n)
    tag = name if n is None else f"{name}{n}"
    data = workdir / f"X_{tag}.npy"
    np.save(data, X)  # the workers load it from here
    print(f"== {title}", file=sys.stderr, flush=True)
    rows = []
    for key in keys:
        method = METHODS[key]
        packages = method.numba_packages
        if args.wait_idle > 0:
            busy = wait_for_idle(args.wait_idle)
            if busy is not None and busy >= 0.25:
                print(f"[{method.label}] machine still busy ({busy:.2f} cores)", file=sys.stderr)
        if args.cold and packages:
            removed = clear_numba_cache(packages)
            print(f"[{method.label}] cold: removed {removed} numba cache files", file=sys.stderr)
        elif (
            packages
            and key not in warmed
            and (
                args.warmup == "always"
                or (args.warmup == "auto" and count_numba_cache_files(packages) == 0)
            )
        ):
            print(f"[{method.label}] warm-up run (not reported)", file=sys.stderr, flush=True)
            try:
                _run_once(key, args, data, workdir, f"{tag}_warmup")
            except WorkerError as exc:
                print(f"[{method.label}] warm-up failed: {exc}", file=sys.stderr)
        warmed.add(key)
        row: dict[str, Any] = {
            "key": key,
            "label": method.label,
            "dataset": name,
            "status": "ok",
            "cache_files": count_numba_cache_files(packages) if packages else None,
        }
        try:
            row |= _run_once(key, args, data, workdir, tag)
            row["delta_mb"] = row["lib_peak_mb"]  # the harness reads the own peak (VmHWM)
            embedding = np.load(row["embedding_path"])
            row["embedding"] = embedding
            t_assess = time.perf_counter()
            assess(row, embedding, X, y)
            row["assess_s"] = time.perf_counter() - t_assess
            if "error" in row:
                row["status"] = "failed"
        except WorkerError as exc:
            timed_out = isinstance(exc.__cause__, subprocess.TimeoutExpired)
            row["status"] = "timeout" if timed_out else "failed"
            row["error"] = str(exc)
        print(_progress(row), file=sys.stderr, flush=True)
        rows.append(row)
    return {"name": name, "title": title, "y": y, "rows": rows}


# --------------------------------------------------------------------------- reporting

_HEADERS = [
    "method",
    "total s",
    "fit s",
    "CPU s",
    "Δ RSS MB",
    "10-NN acc",
    "trust@15",
    "15-NN recall",
    "triplet acc",
    "dist. ρ",
    "numba cache",
    "notes",
]


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _row_cells(row: dict, timeout: float) -> list[str]:
    cache = "—" if row.get("cache_files") is None else str(row["cache_files"])
    if row["status"] == "timeout":
        return [row["label"], f"timeout (> {timeout:.0f} s)", *[""] * 8, cache, ""]
    if "total_s" not in row:  # the worker failed: no timings
        return [row["label"], "failed", *[""] * 8, cache, _cell(row["error"])]
    notes = [n for n in ((row.get("extra") or {}).get("note"), row.get("metric_error")) if n]
    if "error" in row:
        notes.insert(0, f"failed: {row['error']}")
    return [
        row["label"],
        fmt(row["total_s"]),
        fmt(row["fit_s"]),
        fmt(row["cpu_s"], 1),
        fmt(row["delta_mb"], 0),
        fmt(row.get("knn_acc"), 4),
        fmt(row.get("trust"), 4),
        fmt(row.get("recall"), 4),
        fmt(row.get("triplet"), 4),
        fmt(row.get("dist_corr"), 4),
        cache,
        _cell("; ".join(notes)),
    ]


def _versions() -> list[str]:
    out = []
    for dist in _DISTRIBUTIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out.append(f"{dist} {importlib.metadata.version(dist)}")
    return out


def render(
    results: list[dict],
    keys: list[str],
    skipped: dict[str, str],
    args: argparse.Namespace,
    wall_s: float,
    figure: str | None,
) -> str:
    """The full markdown report."""
    rows = [r for res in results for r in res["rows"]]
    busy = [r["other_cores"] for r in rows if r.get("other_cores") is not None]
    other = f"{min(busy):.2f} to {max(busy):.2f}" if busy else "not measured"
    threads = sorted({str(r["numba_num_threads"]) for r in rows if "numba_num_threads" in r})
    title = "quick comparison" if args.quick else results[0]["title"]
    lines = [
        f"# unimap vs peers: {title}",
        "",
        f"- Machine: {machine_description()}",
        "- Versions: " + ", ".join(_versions()),
        f"- Numba threads in the workers: {', '.join(threads) or '—'}",
        f"- Command: `{shlex.join(['python', 'benchmarks/compare.py', *sys.argv[1:]])}`",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}; whole benchmark (fits, metrics, "
        f"figure): {wall_s:.0f} s",
        "- Other work on the machine during the fits (average cores busy outside the worker, "
        f"per run): {other}",
        "",
        "Each fit is a fresh process, one at a time. `total s` = import + fit (data loading "
        "not timed); `CPU s`: user + system time of import + fit, all threads; `Δ RSS MB`: "
        "the worker's peak RSS (its own `VmHWM`) minus its RSS after loading the data, i.e. "
        "what the library needed. 10-NN acc: leave-one-out, all points; trust@15: on a fixed "
        f"{N_TRUST:,}-point sample; 15-NN recall: exact neighbours, {N_RECALL:,} fixed query "
        "points (both samples: all points where there are fewer); triplet acc: "
        f"{N_TRIPLETS:,} random triplets; dist. ρ: Spearman correlation of {N_PAIRS:,} random "
        f"pair distances (all seeded with {SEED}). `numba cache`: numba cache files of the "
        "method's packages on disk when its run started (0: it compiled everything; more than 0 "
        "does not prove them current: numba recompiles a function whose source has changed).",
        "",
    ]
    for res in results:
        if len(results) > 1:
            lines += [f"## {res['title']}", ""]
        table = markdown_table(_HEADERS, [_row_cells(r, args.timeout) for r in res["rows"]])
        # markdown_table right-aligns from the third column on: numbers right, text left.
        align = "| --- | " + "---: | " * (len(_HEADERS) - 2) + "--- |"
        table_lines = table.splitlines()
        lines += [table_lines[0], align, *table_lines[2:]]
        lines.append("")
    lines.append("Calls:")
    lines.append("")
    lines += [f"- {METHODS[k].label}: `{METHODS[k].call}`" for k in keys]
    if skipped:
        lines += ["", "Skipped: " + "; ".join(f"{k} ({why})" for k, why in skipped.items())]
    if figure:
        lines += ["", f"![embeddings]({figure})"]
    return "\n".join(lines) + "\n"


def save_figure(path: Path, results: list[dict], ncols_max: int = 6) -> bool:
    """One panel per method and dataset, coloured by label; ``False`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
    except ImportError:
        print("matplotlib is not installed: no figure", file=sys.stderr)
        return False
    from unimap.io.atomic import atomic_path
    from unimap.plotting.static import scatter

    n_methods = max(len(res["rows"]) for res in results)
    ncols = min(n_methods, ncols_max)
    block_rows = [-(-len(res["rows"]) // ncols) for res in results]
    panel = 2.4
    fig = plt.figure(
        figsize=(ncols * panel, sum(block_rows) * (panel + 0.45) + 0.5), layout="constrained"
    )
    subfigs = np.atleast_1d(fig.subfigures(len(results), 1, height_ratios=block_rows))
    cmap = plt.get_cmap("tab10")
    try:
        for subfig, res, nrows in zip(subfigs, results, block_rows, strict=True):
            subfig.suptitle(res["title"], fontsize=11, fontweight="bold")
            axes = np.atleast_1d(subfig.subplots(nrows, ncols, squeeze=False)).ravel()
            for ax, row in zip(axes, res["rows"], strict=False):
                embedding = row.get("embedding")
                if row["status"] != "ok" or embedding is None:
                    ax.text(0.5, 0.5, row["status"], ha="center", va="center", color="#a40000")
                    ax.set_xticks([])
                    ax.set_yticks([])
                    ax.set_title(row["label"], fontsize=9)
                    continue
                n = embedding.shape[0]
                size = float(np.clip(40.0 / np.sqrt(n), 0.05, 4.0))
                scatter(embedding, res["y"], ax=ax, point_size=size, legend=False)
                ax.set_title(f"{row['label']}\n{row['total_s']:.1f} s", fontsize=9)
            for ax in axes[len(res["rows"]) :]:
                ax.axis("off")
        labels = np.unique(np.concatenate([res["y"] for res in results]))
        handles = [
            Line2D([], [], marker="o", linestyle="", color=cmap(i % 10), markersize=5)
            for i in range(len(labels))
        ]
        fig.legend(
            handles,
            [str(v) for v in labels],
            loc="outside lower center",
            ncol=len(labels),
            frameon=False,
            fontsize=8,
            handletextpad=0.1,
        )
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=110, format="png")
    finally:
        plt.close(fig)
    return True


# --------------------------------------------------------------------------- command line


def _names(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--worker`` / ``--spec`` are internal)."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="methods: " + ", ".join(METHODS),
    )
    parser.add_argument("--dataset", choices=("mnist", "digits"), default="mnist")
    parser.add_argument("--n", type=int, default=None, help="use the first N rows of MNIST-70k")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"digits and the first {QUICK_PLAN[1][1]:,} MNIST points, fewer iterations for "
        "sklearn TSNE and TriMap (3 minutes or more on 2 cores); --dataset / --n are ignored",
    )
    parser.add_argument("--only", help="comma-separated methods to run (default: all)")
    parser.add_argument("--skip", help="comma-separated methods not to run")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds allowed per fit ({DEFAULT_TIMEOUT:.0f}; {DEFAULT_QUICK_TIMEOUT:.0f} "
        "with --quick)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="delete each numba-based method's numba disk caches right before its runs",
    )
    parser.add_argument(
        "--warmup",
        choices=("auto", "always", "never"),
        default="auto",
        help="an unreported first run for numba-based methods: auto (default) where their "
        "packages have no numba cache files on disk yet",
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each fit, wait up to SECONDS for other work on the machine to stop",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the data and embeddings (.npy) here (default: a temporary folder)",
    )
    parser.add_argument("--worker", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = [k for k in _names(args.only) + _names(args.skip) if k not in METHODS]
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(METHODS)}")
    if args.n is not None and (args.n < 10 or args.dataset != "mnist"):
        parser.error("--n needs --dataset mnist and at least 10 points")
    if args.timeout is None:
        args.timeout = DEFAULT_QUICK_TIMEOUT if args.quick else DEFAULT_TIMEOUT
    return args


def output_stem(args: argparse.Namespace) -> str:
    """File name (without suffix) of the report and the figure."""
    if args.quick:
        return "compare_quick"
    if args.dataset == "mnist" and args.n is not None and args.n < 70_000:
        return f"compare_mnist_n{args.n}"
    return f"compare_{args.dataset}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker_main(RUNNERS[args.worker], args.spec)
        return 0

    start = time.perf_counter()
    wanted = _names(args.only) or list(METHODS)
    wanted = [k for k in METHODS if k in wanted and k not in _names(args.skip)]
    keys, skipped = available_methods(wanted)
    for key, why in skipped.items():
        print(f"note: skipping {key}: {why}", file=sys.stderr)
    if not keys:
        print("nothing to run", file=sys.stderr)
        return 1
    plan = list(QUICK_PLAN) if args.quick else [(args.dataset, args.n)]

    warmed: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="compare_") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        results = [run_dataset(name, n, keys, args, workdir, warmed) for name, n in plan]

    stem = output_stem(args)
    png = args.out / f"{stem}.png"
    has_figure = save_figure(png, results)
    report = render(
        results, keys, skipped, args, time.perf_counter() - start, png.name if has_figure else None
    )
    from unimap.io.atomic import atomic_path

    with atomic_path(args.out / f"{stem}.md") as tmp_md:
        tmp_md.write_text(report)
    print(report)
    print(
        f"written: {args.out / (stem + '.md')}" + (f", {png}" if has_figure else ""),
        file=sys.stderr,
    )
    return 1 if any(r["status"] != "ok" for res in results for r in res["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
