"""Choose the default approximate k-nearest-neighbour backend for UMAP on MNIST-70k.

Every candidate runs in a fresh ``sys.executable`` subprocess (``--worker``). The worker loads
MNIST (not timed), then times the import of the backend library, the index build (including any
PCA) and the query of all 70,000 points for their 16 nearest neighbours (self included). It saves
the neighbour ids to a temporary ``.npy`` file and prints its timings as JSON on stdout. The
parent drops self from every row and scores recall@15 against the exact euclidean 15 nearest
neighbours in 784-D, computed once with faiss ``IndexFlatL2`` and cached in
``/tmp/knn_truth_mnist.npy``.

pynndescent is JIT-compiled by numba, so it is reported three ways: a fresh process with an
empty numba cache (first use ever), a fresh process whose numba disk cache is already populated
(every later use), and a second fit in the same process (everything compiled).

Candidates whose first run totals less than ``--repeat-under`` seconds are run ``--repeats``
times in all (each in a fresh process); the table shows medians.

Usage::

    python benchmarks/knn_candidates.py                       # everything, writes the table
    python benchmarks/knn_candidates.py --only faiss-hnsw-M16 hnswlib-M16 --repeats 5
    python benchmarks/knn_candidates.py --list
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

K = 15  # neighbours scored (self excluded)
K_QUERY = K + 1  # neighbours asked of every backend (self included)
TRUTH_PATH = Path("/tmp/knn_truth_mnist.npy")
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "knn_candidates.md"
NUMBA_CACHE_ROOT = Path(tempfile.gettempdir()) / "knn_candidates_numba"

# name -> (kind, parameters, settings text). ``sweep`` values share one build (same process).
CANDIDATES: dict[str, tuple[str, dict, str]] = {
    "faiss-flat-784": ("flat", {}, "IndexFlatL2, exact"),
    "pynndescent-default": ("pynndescent", {}, "n_neighbors=16, library defaults"),
    "pynndescent-umap": (
        "pynndescent",
        {"n_trees": 18, "max_candidates": 60},
        "n_neighbors=16, n_trees=18, max_candidates=60 (umap-learn's choice)",
    ),
    "pynndescent-fast": (
        "pynndescent",
        {"n_trees": 6, "n_iters": 6},
        "n_neighbors=16, n_trees=6, n_iters=6",
    ),
    "faiss-hnsw-M16": ("faiss_hnsw", {"M": 16, "efC": 40, "sweep": [16, 32, 64]}, "M=16, efC=40"),
    "faiss-hnsw-M32": ("faiss_hnsw", {"M": 32, "efC": 80, "sweep": [16, 32, 64]}, "M=32, efC=80"),
    "hnswlib-M16": ("hnswlib", {"M": 16, "efC": 40, "sweep": [16, 32, 64]}, "M=16, efC=40"),
    "hnswlib-M32": ("hnswlib", {"M": 32, "efC": 80, "sweep": [16, 32, 64]}, "M=32, efC=80"),
    "faiss-ivf-1024": (
        "faiss_ivf",
        {"nlist": 1024, "niter": 10, "sweep": [4, 8, 16, 32]},
        "IndexIVFFlat nlist=1024, k-means niter=10",
    ),
    "pca50-eigh-flat": ("pca", {"dim": 50, "pca": "eigh", "index": "flat"}, "PCA-50 (eigh) + exact"),
    "pca50-rand-flat": (
        "pca",
        {"dim": 50, "pca": "randomized", "index": "flat"},
        "PCA-50 (sklearn randomized) + exact",
    ),
    "pca100-eigh-flat": (
        "pca",
        {"dim": 100, "pca": "eigh", "index": "flat"},
        "PCA-100 (eigh) + exact",
    ),
    "pca50-eigh-hnsw": (
        "pca",
        {"dim": 50, "pca": "eigh", "index": "hnsw", "M": 16, "efC": 40, "sweep": [16, 32, 64]},
        "PCA-50 (eigh) + faiss HNSW M=16, efC=40",
    ),
    "pca100-eigh-hnsw": (
        "pca",
        {"dim": 100, "pca": "eigh", "index": "hnsw", "M": 16, "efC": 40, "sweep": [16, 32, 64]},
        "PCA-100 (eigh) + faiss HNSW M=16, efC=40",
    ),
}


# --------------------------------------------------------------------------------------------
# Worker side: runs inside a fresh subprocess.
# --------------------------------------------------------------------------------------------


def _clock() -> float:
    return time.perf_counter()


def _pca(X: np.ndarray, dim: int, method: str) -> np.ndarray:
    """Project ``X`` on its top ``dim`` principal components (float32, contiguous)."""
    if method == "eigh":
        Xc = X - X.mean(axis=0)
        cov = Xc.T @ Xc  # float32 BLAS; 784 x 784
        _, vecs = np.linalg.eigh(cov.astype(np.float64))
        basis = np.ascontiguousarray(vecs[:, ::-1][:, :dim], dtype=np.float32)
        return np.ascontiguousarray(Xc @ basis)
    if method == "randomized":
        from sklearn.decomposition import PCA

        Z = PCA(n_components=dim, svd_solver="randomized", random_state=0).fit_transform(X)
        return np.ascontiguousarray(Z, dtype=np.float32)
    raise ValueError(f"unknown PCA method {method!r}")


def _faiss_hnsw(faiss, X: np.ndarray, M: int, efC: int):
    index = faiss.IndexHNSWFlat(X.shape[1], M)
    index.hnsw.efConstruction = efC
    index.add(X)
    return index


def worker(name: str, out_dir: Path, threads: int) -> dict:
    """Run candidate ``name`` once; return timings and the paths of the saved neighbour ids."""
    from unimap.datasets import load_mnist

    kind, params, _ = CANDIDATES[name]
    X, _ = load_mnist()
    X = np.ascontiguousarray(X, dtype=np.float32)
    rows: list[dict] = []

    def save(tag: str, ids: np.ndarray, **timing) -> None:
        path = out_dir / f"{name}-{len(rows)}.npy"
        np.save(path, np.asarray(ids, dtype=np.int64))
        rows.append({"tag": tag, "ids": str(path), **timing})

    if kind == "pynndescent":
        t0 = _clock()
        import numba
        import pynndescent

        t_import = _clock() - t0
        numba.set_num_threads(threads)
        tags = ["first fit in process", "2nd fit, same process"]
        for i, tag in enumerate(tags):
            t0 = _clock()
            nnd = pynndescent.NNDescent(
                X, n_neighbors=K_QUERY, metric="euclidean", n_jobs=threads, random_state=i,
                **params,
            )
            ids, _ = nnd.neighbor_graph
            t_build = _clock() - t0
            save(tag, ids, import_s=t_import if i == 0 else None, build_s=t_build, query_s=0.0)
        return {"rows": rows}

    if kind == "hnswlib":
        t0 = _clock()
        import hnswlib

        t_import = _clock() - t0
        t0 = _clock()
        index = hnswlib.Index(space="l2", dim=X.shape[1])
        index.init_index(max_elements=X.shape[0], ef_construction=params["efC"], M=params["M"])
        index.add_items(X, np.arange(X.shape[0]), num_threads=threads)
        t_build = _clock() - t0
        for ef in params["sweep"]:
            index.set_ef(max(ef, K_QUERY))
            t0 = _clock()
            ids, _ = index.knn_query(X, k=K_QUERY, num_threads=threads)
            save(f"ef={ef}", ids, import_s=t_import, build_s=t_build, query_s=_clock() - t0)
        return {"rows": rows}

    # Everything else uses faiss (and, for randomized PCA, scikit-learn).
    t0 = _clock()
    import faiss

    if kind == "pca" and params["pca"] == "randomized":
        import sklearn.decomposition  # noqa: F401  (import time is part of the candidate)
    t_import = _clock() - t0
    faiss.omp_set_num_threads(threads)
    extra: dict = {}

    if kind == "pca":
        t0 = _clock()
        data = _pca(X, params["dim"], params["pca"])
        extra["pca_s"] = _clock() - t0
        kind = params["index"]
    else:
        data = X

    t0 = _clock()
    if kind == "flat":
        index = faiss.IndexFlatL2(data.shape[1])
        index.add(data)
        t_build = _clock() - t0 + extra.get("pca_s", 0.0)
        t0 = _clock()
        _, ids = index.search(data, K_QUERY)
        save("exact", ids, import_s=t_import, build_s=t_build, query_s=_clock() - t0, **extra)
    elif kind in ("hnsw", "faiss_hnsw"):
        index = _faiss_hnsw(faiss, data, params["M"], params["efC"])
        t_build = _clock() - t0 + extra.get("pca_s", 0.0)
        for ef in params["sweep"]:
            index.hnsw.efSearch = max(ef, K_QUERY)
            t0 = _clock()
            _, ids = index.search(data, K_QUERY)
            save(f"efS={ef}", ids, import_s=t_import, build_s=t_build, query_s=_clock() - t0,
                 **extra)
    elif kind == "faiss_ivf":
        quantizer = faiss.IndexFlatL2(data.shape[1])
        index = faiss.IndexIVFFlat(quantizer, data.shape[1], params["nlist"])
        index.cp.niter = params["niter"]
        index.train(data)
        index.add(data)
        t_build = _clock() - t0
        for nprobe in params["sweep"]:
            index.nprobe = nprobe
            t0 = _clock()
            _, ids = index.search(data, K_QUERY)
            save(f"nprobe={nprobe}", ids, import_s=t_import, build_s=t_build,
                 query_s=_clock() - t0)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return {"rows": rows}


# --------------------------------------------------------------------------------------------
# Parent side.
# --------------------------------------------------------------------------------------------


def drop_self(ids: np.ndarray) -> np.ndarray:
    """Remove each row's own index from ``(n, K+1)`` ids; where it is absent drop the last one."""
    ids = np.asarray(ids, dtype=np.int64)
    n = ids.shape[0]
    is_self = ids == np.arange(n)[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    first = np.argmax(is_self, axis=1)  # exactly one column removed per row
    keep = np.ones_like(is_self)
    keep[np.arange(n), first] = False
    return ids[keep].reshape(n, ids.shape[1] - 1)


def recall(approx: np.ndarray, truth: np.ndarray) -> float:
    """Mean over rows of |approx ∩ truth| / K (both self-excluded, K columns)."""
    approx = np.sort(approx[:, :K], axis=1)
    hits = 0
    for start in range(0, truth.shape[0], 10_000):  # chunked to bound memory
        a, t = approx[start : start + 10_000], truth[start : start + 10_000]
        hits += int((a[:, :, None] == t[:, None, :]).any(axis=2).sum())
    return hits / (truth.shape[0] * K)


def run_worker(name: str, threads: int, numba_cache: Path | None) -> dict:
    """Launch one fresh worker subprocess and return its parsed JSON (timings + id files)."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = str(threads)
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
    out_dir = Path(tempfile.mkdtemp(prefix="knn_ids_"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name,
           "--ids-dir", str(out_dir), "--threads", str(threads)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"worker {name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    result["ids_dir"] = str(out_dir)
    return result


def load_truth(threads: int) -> tuple[np.ndarray, dict | None]:
    """Exact self-excluded 15-NN (cached). Also returns the exact run if one was made now."""
    if TRUTH_PATH.is_file():
        return np.load(TRUTH_PATH), None
    print("computing exact ground truth with faiss IndexFlatL2 ...", flush=True)
    run = run_worker("faiss-flat-784", threads, None)
    raw = np.load(run["rows"][0]["ids"])
    truth = drop_self(raw)
    missing = int((~(raw == np.arange(raw.shape[0])[:, None]).any(axis=1)).sum())
    print(f"  rows where self is not among the 16 exact ids: {missing}", flush=True)
    np.save(TRUTH_PATH, truth)
    return truth, run


def score_run(name: str, label: str, run: dict, truth: np.ndarray) -> list[dict]:
    """Turn one worker run into table rows (recall computed here, id files removed)."""
    out = []
    for row in run["rows"]:
        ids = drop_self(np.load(row["ids"]))
        imp = row["import_s"]
        total = (imp or 0.0) + row["build_s"] + row["query_s"]
        note = f"PCA {row['pca_s']:.2f} s (in build)" if "pca_s" in row else ""
        out.append({"key": (name, label, row["tag"]), "import_s": imp, "build_s": row["build_s"],
                    "query_s": row["query_s"], "total_s": total, "recall": recall(ids, truth),
                    "note": note})
    shutil.rmtree(run["ids_dir"], ignore_errors=True)
    return out


def machine_line() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import faiss
    import hnswlib  # noqa: F401
    import numba
    import pynndescent
    import sklearn

    versions = (f"faiss {faiss.__version__}, pynndescent {pynndescent.__version__}, "
                f"numba {numba.__version__}, scikit-learn {sklearn.__version__}, "
                f"numpy {np.__version__}, Python {platform.python_version()}")
    return f"nproc={os.cpu_count()}, CPU: {model}; {versions}"


def fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def make_table(groups: dict[tuple, list[dict]]) -> str:
    lines = [
        "| candidate | settings | import s | build s | query s | total s | recall@15 | runs | notes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (name, label, tag), rows in groups.items():
        med = {k: (None if rows[0][k] is None else statistics.median(r[k] for r in rows))
               for k in ("import_s", "build_s", "query_s", "total_s", "recall")}
        totals = [r["total_s"] for r in rows]
        spread = f"{min(totals):.1f}–{max(totals):.1f}" if len(rows) > 1 else ""
        note = "; ".join(x for x in (rows[0]["note"], f"total range {spread}" if spread else "")
                         if x)
        lines.append(
            f"| {name} | {label}, {tag} | {fmt(med['import_s'])} | {fmt(med['build_s'])} | "
            f"{fmt(med['query_s'])} | {fmt(med['total_s'])} | {fmt(med['recall'], 4)} | "
            f"{len(rows)} | {note} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these candidates")
    parser.add_argument("--skip", nargs="+", metavar="NAME", default=[], help="skip these")
    parser.add_argument("--list", action="store_true", help="list the candidates and exit")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs in all for candidates that are fast enough (default 3)")
    parser.add_argument("--repeat-under", type=float, default=40.0,
                        help="repeat only candidates whose first run took less (seconds)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown file to write")
    parser.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--ids-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        print(json.dumps(worker(args.worker, args.ids_dir, args.threads)), flush=True)
        return 0
    if args.list:
        for name, (_, _, label) in CANDIDATES.items():
            print(f"{name:20s} {label}")
        return 0

    names = [n for n in (args.only or CANDIDATES) if n not in args.skip]
    unknown = sorted(set(names) - set(CANDIDATES))
    if unknown:
        parser.error(f"unknown candidates: {unknown}")

    t_start = time.perf_counter()
    truth, exact_run = load_truth(args.threads)
    groups: dict[tuple, list[dict]] = {}

    def record(name: str, label: str, run: dict) -> float:
        rows = score_run(name, label, run, truth)
        for row in rows:
            groups.setdefault(row["key"], []).append(row)
            print(f"  {' / '.join(row['key'][1:]):60s} total {row['total_s']:7.2f} s  "
                  f"recall {row['recall']:.4f}", flush=True)
        return max(r["total_s"] for r in rows)

    for name in names:
        kind, _, label = CANDIDATES[name]
        print(f"{name}:", flush=True)
        if kind == "pynndescent":
            # Cold: a fresh, empty numba cache. Cached: a fresh process reusing that cache.
            for i in range(args.repeats):
                cache = NUMBA_CACHE_ROOT / f"{name}-{i}"
                shutil.rmtree(cache, ignore_errors=True)
                cold = run_worker(name, args.threads, cache)
                cold["rows"][0]["tag"] = "fresh process, EMPTY numba cache (first use)"
                cold["rows"] = cold["rows"][:1]
                record(name, label, cold)
                warm = run_worker(name, args.threads, cache)
                warm["rows"][0]["tag"] = "fresh process, numba disk cache populated"
                record(name, label, warm)
                shutil.rmtree(cache, ignore_errors=True)
            continue
        if name == "faiss-flat-784" and exact_run is not None:
            first = record(name, label, exact_run)
        else:
            first = record(name, label, run_worker(name, args.threads, None))
        if first < args.repeat_under:
            for _ in range(args.repeats - 1):
                record(name, label, run_worker(name, args.threads, None))

    elapsed = time.perf_counter() - t_start
    command = "python benchmarks/knn_candidates.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    table = make_table(groups)
    text = "\n".join([
        "# Approximate kNN candidates for UMAP on MNIST-70k",
        "",
        f"Machine: {machine_line()}.",
        "",
        f"Reproduce: `{command.strip()}` (took {elapsed / 60:.1f} min). Every run is a fresh "
        f"process using {args.threads} threads; times are medians over `runs`; build includes "
        "PCA where there is one; recall@15 is against the exact 784-D euclidean 15-NN "
        "(self excluded). pynndescent's 'query' is its neighbour graph, so query = 0 and "
        "import includes numba.",
        "",
        table,
        "",
    ])
    print()
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
