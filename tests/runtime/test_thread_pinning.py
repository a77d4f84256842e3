"""Thread pinning for busy hosts: one worker per CPU while a fit runs, the affinity restored
after, and no effect on any result."""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

from unimap.runtime.threads import _spread_cpus, numba_threads, pinned_pool, spread_threads

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="pinning uses Linux's sched_setaffinity")


def process_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def thread_affinities() -> list[set[int]]:
    """The CPU set of every thread of this process, read from /proc."""
    sets = []
    for tid in os.listdir("/proc/self/task"):
        try:
            sets.append(os.sched_getaffinity(int(tid)))
        except OSError:  # the thread ended while we listed them
            continue
    return sets


@pytest.fixture
def all_cpus() -> list[int]:
    cpus = process_cpus()
    if len(cpus) < 2:
        pytest.skip("pinning needs at least 2 CPUs")
    return cpus


@pytest.fixture
def omp_workers(all_cpus) -> list[int]:
    """numba's workers are pinned only on its OpenMP layer (fixed thread ids); unimap runs
    on TBB by default, so tests/runtime/test_process_safety.py runs this module again in a
    process on the OpenMP layer."""
    import numba

    with numba_threads(len(all_cpus)):
        if numba.threading_layer() != "omp":
            pytest.skip("numba's workers are pinned on the OpenMP layer only")
    return all_cpus


@linux_only
def test_spread_cpus_only_when_threads_use_every_cpu(omp_workers, monkeypatch):
    all_cpus = omp_workers
    monkeypatch.delenv("UNIMAP_PIN_THREADS", raising=False)
    assert _spread_cpus(len(all_cpus)) == all_cpus
    assert _spread_cpus(1) is None
    assert _spread_cpus(len(all_cpus) + 1) is None  # oversubscribed: leave it to the kernel
    if len(all_cpus) > 2:
        assert _spread_cpus(len(all_cpus) - 1) is None
    monkeypatch.setenv("UNIMAP_PIN_THREADS", "0")
    assert _spread_cpus(len(all_cpus)) is None


@linux_only
def test_spread_threads_pins_one_worker_per_cpu_and_restores(omp_workers, monkeypatch):
    all_cpus = omp_workers
    monkeypatch.delenv("UNIMAP_PIN_THREADS", raising=False)
    before = thread_affinities()
    with numba_threads(len(all_cpus)), spread_threads() as pinned:
        assert pinned
        during = thread_affinities()
    # every CPU has a worker pinned to it alone
    single = {next(iter(cpus)) for cpus in during if len(cpus) == 1}
    assert single == set(all_cpus)
    after = thread_affinities()
    assert all(cpus == set(all_cpus) for cpus in after), after
    assert all(cpus == set(all_cpus) for cpus in before), before


@linux_only
def test_spread_threads_restores_after_an_error(omp_workers, monkeypatch):
    all_cpus = omp_workers
    monkeypatch.delenv("UNIMAP_PIN_THREADS", raising=False)
    with pytest.raises(ValueError), numba_threads(len(all_cpus)), spread_threads():
        raise ValueError("the body failed")
    assert all(cpus == set(all_cpus) for cpus in thread_affinities())


def test_spread_threads_leaves_serial_work_and_opt_out_alone(monkeypatch):
    with spread_threads(when=False) as pinned:
        assert not pinned
    monkeypatch.setenv("UNIMAP_PIN_THREADS", "0")
    with numba_threads(len(process_cpus())), spread_threads() as pinned:
        assert not pinned


@linux_only
def test_pinned_pool_gives_each_worker_its_own_cpu(all_cpus, monkeypatch):
    monkeypatch.delenv("UNIMAP_PIN_THREADS", raising=False)
    n = len(all_cpus)
    barrier = threading.Barrier(n)  # each task on its own worker: all wait for each other

    def affinity() -> frozenset[int]:
        barrier.wait(timeout=30)
        return frozenset(os.sched_getaffinity(0))

    with pinned_pool(n) as pool:
        seen = [f.result() for f in [pool.submit(affinity) for _ in range(n)]]
    assert sorted(next(iter(s)) for s in seen) == all_cpus
    assert all(len(s) == 1 for s in seen)
    assert os.sched_getaffinity(0) == set(all_cpus)  # the caller is not pinned


@pytest.mark.parametrize("method", ["gdr", "umap"])
def test_pinning_does_not_change_the_embedding(method, monkeypatch):
    import unimap

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 1.0, (400, 10)) for c in range(0, 12, 4)]).astype(np.float32)
    make = {"gdr": lambda: unimap.GDR(random_state=0, n_epochs=60),
            "umap": lambda: unimap.UMAP(random_state=0, n_epochs=60)}[method]
    monkeypatch.setenv("UNIMAP_PIN_THREADS", "0")
    unpinned = make().fit_transform(X)
    monkeypatch.setenv("UNIMAP_PIN_THREADS", "1")
    pinned = make().fit_transform(X)
    np.testing.assert_array_equal(pinned, unpinned)


@linux_only
def test_one_thread_epochs_run_unpinned(omp_workers, monkeypatch):
    all_cpus = omp_workers
    # A one-thread epoch runs on numba's thread 0; pinned to the first CPU, it would run at
    # the speed of whatever else holds that CPU.
    from unimap.runtime.threads import AdaptiveThreads

    monkeypatch.delenv("UNIMAP_PIN_THREADS", raising=False)

    def pinned_cpus() -> set[int]:
        return {next(iter(cpus)) for cpus in thread_affinities() if len(cpus) == 1}

    with numba_threads(len(all_cpus)):
        threads = AdaptiveThreads(len(all_cpus))
        with threads.spread() as spread:
            assert spread and pinned_cpus() == set(all_cpus)
            threads._single_until = 2  # force epochs 0 and 1 onto one thread
            threads.start_epoch(0)
            assert threads._current == 1 and not spread
            assert pinned_cpus() == set(all_cpus[1:])
            threads.end_epoch()
            threads.start_epoch(2)
            assert threads._current == len(all_cpus) and spread
            assert pinned_cpus() == set(all_cpus)
            threads.end_epoch()
    assert all(cpus == set(all_cpus) for cpus in thread_affinities())
