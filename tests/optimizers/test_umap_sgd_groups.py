"""The grouped epoch (the GPU's UMAP epoch, :mod:`unimap.optimizers.umap_sgd.grouped_numba`)
on the CPU: its fixed-point sums, its edge groups and its quality against the CPU's epochs."""

import numba
import numpy as np
import pytest
from sklearn.datasets import load_digits

import unimap
from unimap.metrics import knn_accuracy, trustworthiness
from unimap.optimizers.umap_sgd.common import grouped_sampling_plan, prune_graph, sgd_steps
from unimap.optimizers.umap_sgd.fit import umap_sgd_fit
from unimap.optimizers.umap_sgd.grouped_numba import sgd_epoch_groups
from unimap.runtime.fixed_point_numba import FIXED_STEP, add_fixed


@numba.njit(cache=False)
def _summed(values, order):
    buffer = np.zeros((1, 1), np.int64)
    for p in order:
        add_fixed(buffer, 0, 0, values[p])
    return buffer[0, 0]


def test_fixed_point_sums_are_exact_in_any_order():
    rng = np.random.default_rng(0)
    values = (rng.standard_normal(5000) * 3).astype(np.float32)
    sums = {int(_summed(values, rng.permutation(5000))) for _ in range(5)}
    assert len(sums) == 1  # float sums of the same values in five orders would differ
    # each value truncated towards zero at 2^-32, the same as Python's int() of the scaled value
    exact = sum(int(float(v) * 2.0 ** 32) for v in values)
    assert sums == {exact}
    assert abs(exact * FIXED_STEP - float(np.sum(values, dtype=np.float64))) < 5000 * 2.0 ** -32
    assert _summed(np.array([-1.5e-10], np.float32), np.array([0])) == 0  # towards zero


def test_the_groups_partition_the_edges_and_each_spans_the_points():
    X, _ = load_digits(return_X_y=True)
    graph = unimap.UMAP(random_state=0, n_epochs=5).fit(X).graph_.tocsr()
    edges, schedule, weights = grouped_sampling_plan(graph, 200, 5.0, 16)
    assert edges.group_ptr[0] == 0 and edges.group_ptr[-1] == graph.nnz
    assert np.all(np.diff(edges.group_ptr) >= graph.nnz // 16)
    # every (head, tail) pair once, with its own weight
    coo = graph.tocoo()
    expected = sorted(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True))
    assert sorted(zip(edges.heads.tolist(), edges.tails.tolist(), weights.tolist(),
                      strict=True)) == expected
    for g in range(16):  # each group moves (nearly) every point, not a block of rows
        heads = edges.heads[edges.group_ptr[g]:edges.group_ptr[g + 1]]
        assert np.unique(heads).size > 0.4 * X.shape[0]
    assert schedule.epochs_per_sample.shape == (graph.nnz,)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_grouped_epochs_embed_as_well_as_the_cpus(seed):
    # Same graph, start and steps; the grouped epoch reads each group's start positions. On
    # digits the two measured within 0.002 of each other on both metrics over three seeds
    # (and on MNIST-70k within 0.0004: benchmarks/results/umap_epoch_sync.md); the bounds
    # leave room for seed noise only.
    X, y = load_digits(return_X_y=True)
    model = unimap.UMAP(random_state=0).fit(X)
    n_epochs = model.n_epochs_
    graph = prune_graph(model.graph_, n_epochs)
    init = unimap.PCA(n_components=2).fit_transform(X).astype(np.float32)
    init *= 10 / np.abs(init).max()
    cpu = umap_sgd_fit(init, graph, n_epochs=n_epochs, a=model.a_, b=model.b_, seed=seed)
    edges, schedule, _ = grouped_sampling_plan(graph, n_epochs, 5.0)
    kernel, seed_u64, alphas = sgd_steps(model.a_, model.b_, 1.0, seed, 1.0, n_epochs)
    grouped, moves = init.copy(), np.zeros(init.shape, np.int64)
    for epoch in range(n_epochs):
        sgd_epoch_groups(grouped, moves, edges, schedule, kernel, seed_u64, epoch,
                         alphas[epoch])
    assert np.isfinite(grouped).all() and not moves.any()
    assert trustworthiness(X, grouped, 15) >= trustworthiness(X, cpu, 15) - 0.005
    assert knn_accuracy(grouped, y, 10) >= knn_accuracy(cpu, y, 10) - 0.01
