"""Shared machinery for the benchmark scripts in this folder.

A benchmark script (``umap_mnist.py``, later the t-SNE ones) runs every measured fit in a
fresh Python process so that import time, numba JIT compilation and peak memory are those a
user would see. The script runs itself as the worker::

    python benchmarks/<script>.py --worker NAME --spec SPEC.json

and its ``main`` hands that over to :func:`worker_main` with the :class:`Runner` called ``NAME``.
The parent calls :func:`run_worker`, which starts that process, waits, and returns the JSON the
worker printed.

What the worker measures, in order:

1. load the data from a ``.npy`` file (not timed into the total; ``load_s`` is recorded);
2. record the resident set size (RSS) and the peak RSS so far: the baseline the data costs;
3. start the clock, run ``Runner.import_fn`` (import the library), then ``Runner.fit_fn``
   (build the estimator, fit, return the embedding); ``total_s = import_s + fit_s``;
4. record the peak RSS of the process (``getrusage(RUSAGE_SELF).ru_maxrss``) and the CPU time
   (user + system, all threads) spent in step 3;
5. save the embedding to ``.npy`` and print the result as one JSON line.

This module must stay light: at import it loads only the standard library and numpy, so a
worker has nothing of the benchmarked libraries (or of scipy / scikit-learn) in memory before
its clock starts. Quality metrics import scikit-learn lazily and run in the parent only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

RESULT_MARKER = "@@BENCH_RESULT@@ "
"""Prefix of the worker's result line on stdout (libraries may print other lines)."""

_VERSION_MODULES = (
    "numpy",
    "scipy",
    "sklearn",
    "numba",
    "llvmlite",
    "pynndescent",
    "umap",
    "openTSNE",
    "unimap",
)


# --------------------------------------------------------------------------- memory and time


def rss_mb() -> float | None:
    """Current resident set size of this process in MiB (Linux only, else ``None``)."""
    try:
        with open("/proc/self/statm") as fh:
            resident_pages = int(fh.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    Linux: ``VmHWM`` from ``/proc/self/status``, the high-water mark of this process's own
    address space. Not ``ru_maxrss``: the kernel carries the parent's high-water mark into it
    across ``exec``, so a worker started by a parent that once held 1 GB would report at least
    1 GB (measured: a child of a parent that peaked at 528 MB reported 528 MB).
    """
    try:
        with open("/proc/self/status") as fh:
            line = next((ln for ln in fh if ln.startswith("VmHWM:")), None)
        if line is not None:
            return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def cpu_seconds() -> float:
    """User + system CPU time of this process (all threads) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def system_busy_seconds() -> float | None:
    """CPU seconds all cores together have spent not idle since boot (Linux, else ``None``).

    Counts user, nice, system, irq, softirq and steal time from ``/proc/stat``.
    """
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_for_idle(max_wait: float, threshold: float = 0.25, window: float = 5.0) -> float | None:
    """Wait until the machine is nearly idle, for at most ``max_wait`` seconds.

    Samples the busy cores over successive ``window``-second intervals and returns as soon as
    one averages below ``threshold`` cores (or when time is up), with the last average; ``None``
    where ``/proc/stat`` is not available.
    """
    deadline = time.monotonic() + max_wait
    busy = None
    while True:
        before = system_busy_seconds()
        if before is None:
            return None
        time.sleep(window)
        after = system_busy_seconds()
        busy = (after - before) / window if after is not None else None
        if busy is None or busy < threshold or time.monotonic() >= deadline:
            return busy


# --------------------------------------------------------------------------- worker side


class Runner(NamedTuple):
    """How a worker runs one library.

    ``import_fn()`` imports the library and returns whatever ``fit_fn`` needs (the estimator
    class, typically); everything it loads counts as import time. ``fit_fn(lib, X, params)``
    returns ``(embedding, extra)`` where ``extra`` is a JSON-serialisable dict stored in the
    result (e.g. the estimator's own phase timings).
    """

    import_fn: Callable[[], Any]
    fit_fn: Callable[[Any, np.ndarray, dict], tuple[np.ndarray, dict]]


def _jsonable(obj: Any) -> Any:
    """Convert numpy scalars / arrays and other odd values into plain JSON types."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return repr(obj)


def _loaded_versions() -> dict[str, str]:
    versions = {}
    for name in _VERSION_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = str(getattr(module, "__version__", "?"))
    return versions


def _numba_info() -> dict[str, Any]:
    numba = sys.modules.get("numba")
    if numba is None:
        return {}
    info: dict[str, Any] = {"numba_num_threads": numba.get_num_threads()}
    try:
        info["numba_threading_layer"] = numba.threading_layer()
    except ValueError:  # no parallel region has run yet
        info["numba_threading_layer"] = None
    return info


def worker_main(runner: Runner, spec_path: str | os.PathLike) -> None:
    """Run one measured fit as described in the module docstring and print the result."""
    spec = json.loads(Path(spec_path).read_text())

    t_load = time.perf_counter()
    X = np.load(spec["data"])
    load_s = time.perf_counter() - t_load
    rss_after_load = rss_mb()
    peak_after_load = peak_rss_mb()

    cpu_start = cpu_seconds()
    t0 = time.perf_counter()
    lib = runner.import_fn()
    t1 = time.perf_counter()
    embedding, extra = runner.fit_fn(lib, X, spec.get("params", {}))
    embedding = np.asarray(embedding)
    t2 = time.perf_counter()
    cpu_s = cpu_seconds() - cpu_start
    peak = peak_rss_mb()

    np.save(spec["embedding"], embedding)
    baseline = rss_after_load if rss_after_load is not None else peak_after_load
    result = {
        "load_s": load_s,
        "import_s": t1 - t0,
        "fit_s": t2 - t1,
        "total_s": t2 - t0,
        "cpu_s": cpu_s,
        "rss_after_load_mb": rss_after_load,
        "peak_after_load_mb": peak_after_load,
        "peak_rss_mb": peak,
        "lib_peak_mb": peak - baseline,
        "embedding_shape": list(embedding.shape),
        "versions": _loaded_versions(),
        **_numba_info(),
        "extra": extra,
    }
    print(RESULT_MARKER + json.dumps(_jsonable(result)), flush=True)


# --------------------------------------------------------------------------- parent side


class WorkerError(RuntimeError):
    """A worker process failed or printed no result."""


def run_worker(
    script: str | os.PathLike,
    name: str,
    spec: dict,
    spec_path: str | os.PathLike,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> dict:
    """Run ``script --worker NAME --spec SPEC_PATH`` in a fresh interpreter; return its result.

    ``spec`` is written to ``spec_path`` first; ``env`` (default: ours) is the worker's
    environment. The worker's stderr is echoed to ours once it
    has finished. The returned dict gains ``process_wall_s`` (interpreter start to exit, as
    seen by the parent) and, on Linux, ``other_cores``: the average number of cores that were
    busy with something other than the worker while it ran (other work skews timings).
    """
    Path(spec_path).write_text(json.dumps(spec))
    cmd = [sys.executable, str(script), "--worker", name, "--spec", str(spec_path)]
    busy_before = system_busy_seconds()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                              env=env)
    except subprocess.TimeoutExpired as exc:
        raise WorkerError(f"{name}: timed out after {timeout:.0f} s") from exc
    wall = time.perf_counter() - t0
    busy_after = system_busy_seconds()
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.stderr:
        sys.stderr.write(proc.stderr)
        sys.stderr.flush()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARKER)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise WorkerError(f"{name}: worker exited with status {proc.returncode}: {tail[0]}")
    result = json.loads(lines[-1][len(RESULT_MARKER) :])
    result["process_wall_s"] = wall
    worker_cpu = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    if busy_before is not None and busy_after is not None and wall > 0:
        # Average number of cores busy with anything but the worker (and hypervisor steal).
        result["other_cores"] = max(0.0, (busy_after - busy_before - worker_cpu) / wall)
    return result


# --------------------------------------------------------------------------- numba's disk cache


def _package_source_dirs(package: str) -> list[Path]:
    """Folders holding the ``.py`` files of an installed package (without importing it)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [os.path.dirname(spec.origin)]
    dirs = []
    for root in roots:
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [d for d in subfolders if d != "__pycache__"]
            if any(f.endswith(".py") for f in files):
                dirs.append(Path(folder))
    return dirs


def _user_wide_numba_cache() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "numba"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"


def numba_cache_dirs(packages: Iterable[str]) -> list[Path]:
    """Every folder where numba may keep the on-disk cache of these packages' functions.

    Numba writes ``*.nbi`` / ``*.nbc`` files into the ``__pycache__`` beside the source file;
    when ``NUMBA_CACHE_DIR`` is set, or that folder is not writable, into
    ``<cache dir>/<folder name>_<sha1 of the folder path>`` instead (mirrors
    ``numba.core.caching._CacheLocator.get_suitable_cache_subpath``).
    """
    bases = [_user_wide_numba_cache()]
    if os.environ.get("NUMBA_CACHE_DIR"):
        bases.insert(0, Path(os.environ["NUMBA_CACHE_DIR"]))
    dirs = []
    for package in packages:
        for src in _package_source_dirs(package):
            dirs.append(src / "__pycache__")
            absolute = os.path.abspath(src)
            subpath = f"{src.name}_{hashlib.sha1(absolute.encode()).hexdigest()}"
            dirs.extend(base / subpath for base in bases)
    return dirs


def _numba_cache_files(packages: Iterable[str]) -> list[Path]:
    files = []
    for folder in numba_cache_dirs(packages):
        if folder.is_dir():
            files.extend(p for p in folder.iterdir() if p.suffix in (".nbi", ".nbc"))
    return files


def count_numba_cache_files(packages: Iterable[str]) -> int:
    """Number of numba cache files (``*.nbi`` + ``*.nbc``) the packages have on disk."""
    return len(_numba_cache_files(packages))


def clear_numba_cache(packages: Iterable[str]) -> int:
    """Delete the packages' numba cache files (see :func:`numba_cache_dirs`); return how many."""
    removed = 0
    for path in _numba_cache_files(packages):
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    return removed


# --------------------------------------------------------------------------- quality metrics


def knn_accuracy(embedding: np.ndarray, labels: np.ndarray, k: int = 10) -> float:
    """Leave-one-out ``k``-NN label accuracy in the embedding, over all points.

    Each point is predicted by a majority vote of its ``k`` nearest other points; a tie goes to
    the tied label whose first occurrence is nearest. A point's own index is dropped from its
    ``k + 1`` neighbours (or the farthest one, should duplicates have pushed it out).
    """
    from sklearn.neighbors import NearestNeighbors

    n = embedding.shape[0]
    classes, y = np.unique(np.asarray(labels), return_inverse=True)
    _, ind = NearestNeighbors(n_neighbors=k + 1).fit(embedding).kneighbors(embedding)
    is_self = ind == np.arange(n)[:, None]
    is_self[~is_self.any(axis=1), k] = True  # self not found: drop the farthest
    first_self = np.argmax(is_self, axis=1)
    keep = np.ones_like(is_self)
    keep[np.arange(n), first_self] = False
    neigh = ind[keep].reshape(n, k)  # row order (nearest first) is preserved
    neigh_labels = y[neigh]

    n_classes = len(classes)
    rows = np.arange(n)
    counts = np.zeros((n, n_classes), dtype=np.int64)
    first_pos = np.full((n, n_classes), k, dtype=np.int64)
    for j in range(k - 1, -1, -1):
        counts[rows, neigh_labels[:, j]] += 1
        first_pos[rows, neigh_labels[:, j]] = j
    pred = np.argmax(counts * (k + 1) - first_pos, axis=1)
    return float(np.mean(pred == y))


def trustworthiness_sample(
    X: np.ndarray, embedding: np.ndarray, k: int = 15, n_sample: int = 3000, seed: int = 0
) -> float:
    """Trustworthiness at ``k`` on a fixed random sample of ``n_sample`` points.

    The sample is ``np.random.default_rng(seed).choice(n, n_sample, replace=False)``, the same
    for every method on the same data.
    """
    from sklearn.manifold import trustworthiness

    n = X.shape[0]
    idx = np.random.default_rng(seed).choice(n, min(n_sample, n), replace=False)
    return float(trustworthiness(X[idx], embedding[idx], n_neighbors=k))


# --------------------------------------------------------------------------- reporting


def machine_description() -> str:
    """One line describing this machine: CPUs, CPU model, memory, OS, Python, thread vars."""
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        n_cpus = os.cpu_count() or 0
    model = platform.processor() or "unknown CPU"
    mem = ""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), model
            )
        with open("/proc/meminfo") as fh:
            kib = next(int(ln.split()[1]) for ln in fh if ln.startswith("MemTotal"))
        mem = f", {kib / 2**20:.1f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    threads = [
        f"{var}={os.environ[var]}"
        for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_THREADING_LAYER")
        if var in os.environ
    ]
    line = (
        f"nproc={n_cpus} ({model}){mem}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}"
    )
    return line + (f"; {', '.join(threads)}" if threads else "")


def median(values: Sequence[float | None]) -> float | None:
    """Median of the values that are not ``None`` (``None`` if there are none)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fmt(value: Any, digits: int = 2) -> str:
    """Format a table cell: floats with ``digits`` decimals, ``None`` as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table; columns after the first two are right-aligned."""
    align = ["---" if i < 2 else "---:" for i in range(len(headers))]
    lines = [headers, align, *rows]
    return "\n".join("| " + " | ".join(str(c) for c in line) + " |" for line in lines)
