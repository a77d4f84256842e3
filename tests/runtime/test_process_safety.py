"""Fork, threads and BLAS: a fit survives a fork after the parent fitted, concurrent fits in
threads neither race nor change the process's BLAS settings, and embeddings do not depend on
BLAS's thread count or on the batch a point is placed in."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is POSIX's")


def _run(script: str, timeout: float = 300, **env: str) -> str:
    """Run ``script`` in a fresh interpreter; return its stdout (fails on error or timeout)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=timeout, env=full_env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _blobs(n: int = 900, d: int = 60, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 6, (6, d))
    mixing = rng.normal(size=(d, d)) / np.sqrt(d)
    return ((centres[rng.integers(0, 6, n)] + rng.normal(size=(n, d))) @ mixing).astype(np.float32)


FORK_SCRIPT = """
    import multiprocessing as mp, sys
    import numpy as np
    from unimap import GDR, TSNE, UMAP
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 1, (300, 8)) for c in (0, 5, 10)]).astype(np.float32)
    MAKE = {"umap": lambda j: UMAP(n_epochs=40, random_state=0, n_jobs=j),
            "gdr": lambda j: GDR(n_epochs=40, random_state=0, n_jobs=j),
            "tsne": lambda j: TSNE(max_iter=100, early_exaggeration_iter=30, random_state=0,
                                   n_jobs=j)}

    def fit(task):
        name, n_jobs = task
        model = MAKE[name](n_jobs).fit(X)
        return model.embedding_, model.transform(X[:20])

    if __name__ == "__main__":
        parent = {name: fit((name, 1)) for name in MAKE}  # the parent has run the kernels
        tasks = [(name, n_jobs) for name in MAKE for n_jobs in (1, 2)]
        with mp.get_context("fork").Pool(2) as pool:
            children = pool.map_async(fit, tasks).get(timeout=240)
        for (name, n_jobs), (embedding, placed) in zip(tasks, children):
            assert np.array_equal(embedding, parent[name][0]), (name, n_jobs)
            assert np.array_equal(placed, parent[name][1]), (name, n_jobs)
        import numba
        print("ok", numba.threading_layer())
"""


@linux_only
def test_a_forked_child_fits_after_the_parent_fitted():
    # Before the TBB layer: the children died ("fork() called from a process already using
    # GNU OpenMP") and the pool hung.
    out = _run(FORK_SCRIPT)
    assert out.split()[0] == "ok"


def test_tbb_is_the_threading_layer_unless_the_user_chose():
    from unimap.runtime.threading_layer import _load_tbb

    if not _load_tbb():
        pytest.skip("the tbb package is not installed here")
    script = """
        import numpy as np, numba
        from unimap import UMAP
        UMAP(n_epochs=5, random_state=0).fit(np.random.default_rng(0).normal(size=(600, 5)))
        print(numba.threading_layer())
    """
    assert _run(script).strip() == "tbb"
    assert _run(script, NUMBA_THREADING_LAYER="workqueue").strip() == "workqueue"
    # a PCA of wide data first (its blocked products ask numba for its threads) starts them
    # on TBB as well
    assert _run("""
        import numpy as np, numba
        from unimap import PCA
        PCA(5).fit(np.random.default_rng(0).normal(size=(12000, 400)).astype(np.float32))
        print(numba.threading_layer())
    """).strip() == "tbb"


@linux_only
def test_pinning_works_on_the_openmp_layer():
    # numba's workers are pinned only on OpenMP (fixed thread ids): the pinning tests skip
    # on TBB, so they run here in a process on OpenMP.
    env = {**os.environ, "NUMBA_THREADING_LAYER": "omp", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/runtime/test_thread_pinning.py"], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    if len(os.sched_getaffinity(0)) >= 2:
        assert "skipped" not in done.stdout, done.stdout[-2000:]


def _blas_threads(process_wide: bool = False) -> list[int]:
    """The thread counts of the loaded BLAS pools; ``process_wide``: only those one count
    serves for every thread (not an OpenMP-layer BLAS, which counts per thread)."""
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"
            and not (process_wide and pool.get("threading_layer") == "openmp")]


def test_concurrent_fits_in_threads_neither_race_nor_change_blas():
    from unimap import GDR, UMAP

    X = _blobs()
    make = [lambda: UMAP(n_epochs=60, random_state=0), lambda: GDR(n_epochs=60, random_state=0),
            lambda: UMAP(n_epochs=60, random_state=1, init="pca")]
    alone = [m().fit_transform(X) for m in make]
    before = _blas_threads()
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def fit(i: int) -> None:
        try:
            for _ in range(2):
                results[i] = make[i % 3]().fit_transform(X)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=fit, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for i in range(6):
        np.testing.assert_array_equal(results[i], alone[i % 3])
    assert _blas_threads() == before  # threadpoolctl's limits used to stick at 1


def _enter_after_another_thread(shared) -> None:
    """Another thread enters ``shared`` (a ``_SharedLimit``) first; this one enters too, then
    the other leaves: the caller is left as the last holder, to exit."""
    entered, leave = threading.Event(), threading.Event()

    def first() -> None:
        shared.enter()
        entered.set()
        leave.wait(30)
        shared.exit()

    holder = threading.Thread(target=first)
    holder.start()
    entered.wait(30)
    shared.enter()
    leave.set()
    holder.join(30)


def test_one_blas_thread_restores_only_when_the_last_holder_leaves(monkeypatch):
    # The counting itself, with a recording limiter (the real count across threads:
    # test_one_blas_thread_holds_in_any_thread).
    import threadpoolctl

    from unimap.runtime.blas import _SharedLimit

    events: list[str] = []

    class Recording:
        def __init__(self, limits, user_api):
            assert (limits, user_api) == (1, "blas")
            events.append("limit")

        def restore_original_limits(self):
            events.append("restore")

    monkeypatch.setattr(threadpoolctl, "threadpool_limits", Recording)
    shared = _SharedLimit()
    _enter_after_another_thread(shared)
    assert events == ["limit"]  # the first holder left; the second still holds the limit
    shared.exit()
    assert events == ["limit", "restore"]


def test_one_blas_thread_holds_in_any_thread():
    # threadpoolctl >= 3.8 lets only its "controlling" thread change OpenBLAS's pool and
    # ignores the others silently: a limit asked for in a worker thread after one in the
    # main thread (a fit in a dask worker after a fit in the session) used to leave BLAS on
    # all its threads, and blocked products then rounded by the thread count.
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS too)

    from unimap.runtime.blas import one_blas_thread

    before = _blas_threads()
    if not before or max(before) < 2:
        pytest.skip("BLAS runs on one thread here: nothing to limit")
    with one_blas_thread():
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before
    seen: list[list[int]] = []

    def in_worker() -> None:
        with one_blas_thread():
            seen.append(_blas_threads())
        seen.append(_blas_threads())

    for _ in range(2):
        worker = threading.Thread(target=in_worker)
        worker.start()
        worker.join(30)
    assert seen == [[1] * len(before), before] * 2
    # set in one thread, restored by another (the last holder to leave)
    # (read on the pools shared by the whole process: an OpenMP-layer BLAS, as faiss may
    # load, limits each thread on its own, so another thread's limit does not show here)
    from unimap.runtime.blas import _LIMIT

    shared_before = _blas_threads(process_wide=True)
    _enter_after_another_thread(_LIMIT)
    assert _blas_threads(process_wide=True) == [1] * len(shared_before)
    _LIMIT.exit()
    assert _blas_threads(process_wide=True) == shared_before


BLAS_SCRIPT = """
    import hashlib, sys
    import numpy as np
    sys.path.insert(0, "tests/runtime")
    from test_process_safety import _blobs, embedding_cases
    for name, make in embedding_cases().items():
        X = _blobs(3000 if "hnsw" in name else 900, 100)
        model = make()
        out = model.fit_transform(X)
        if hasattr(model, "transform"):
            out = np.vstack([out, model.transform(X[:30])])
        print(name, hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest())
"""


def embedding_cases() -> dict:
    from unimap import GDR, PCA, TSNE, UMAP

    return {
        "umap": lambda: UMAP(n_epochs=50, random_state=0),
        "umap_pca_init": lambda: UMAP(n_epochs=50, random_state=0, init="pca"),
        "umap_hnsw": lambda: UMAP(n_epochs=30, random_state=0, knn_method="hnsw"),
        "gdr": lambda: GDR(n_epochs=50, random_state=0),
        "tsne": lambda: TSNE(max_iter=100, early_exaggeration_iter=30, random_state=0),
        "pca": lambda: PCA(2, random_state=0),
        "pca_randomized": lambda: PCA(5, svd_solver="randomized", random_state=0),
    }


def test_embeddings_do_not_depend_on_blas_threads():
    one = _run(BLAS_SCRIPT, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    two = _run(BLAS_SCRIPT, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2", MKL_NUM_THREADS="2")
    assert len(one.splitlines()) == len(embedding_cases())
    assert one == two


@pytest.mark.parametrize("name", ["umap", "umap_hnsw", "gdr", "tsne", "pca"])
def test_a_point_is_placed_the_same_alone_or_in_any_batch(name):
    X = _blobs(3000 if "hnsw" in name else 900, 100)
    new = _blobs(60, 100, seed=1)
    model = embedding_cases()[name]().fit(X)
    whole = model.transform(new)
    alone = np.vstack([model.transform(new[i : i + 1]) for i in range(7)])
    sevens = np.vstack([model.transform(new[i : i + 7]) for i in range(0, 60, 7)])
    np.testing.assert_array_equal(alone, whole[:7])
    np.testing.assert_array_equal(sevens, whole)


def test_unimap_info_names_the_layer_and_its_safety():
    import json

    out = _run("""
        from unimap.cli.main import main
        main(["info", "--json"])
    """, NUMBA_THREADING_LAYER="omp")
    threads = json.loads(out)["threads"]
    assert threads == {"threading_layer": "omp", "fork_safe": False, "thread_safe": True}
