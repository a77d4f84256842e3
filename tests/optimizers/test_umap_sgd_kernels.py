"""UMAP's SGD epoch kernels take named argument groups (edges, schedule, kernel): a group
passed in another's place fails to compile instead of running on the wrong arrays."""

import numpy as np
import pytest
import scipy.sparse as sp

from unimap.optimizers.umap_sgd.common import fit_sampling_plan, place_sampling_plan
from unimap.optimizers.umap_sgd.epochs_numba import SGDKernel, sgd_epoch_edges_2d, sgd_epoch_rows

f32 = np.float32


def _problem(fitting):
    rng = np.random.default_rng(0)
    P = sp.random(40, 40, density=0.2, random_state=1, format="csr", dtype=np.float32)
    P = (P + P.T).tocsr()
    if fitting:
        edges, schedule, _ = fit_sampling_plan(P, 10, 5.0)
    else:
        edges, schedule = place_sampling_plan(P, 10, None, 5.0)
    return rng.standard_normal((40, 2)).astype(np.float32), edges, schedule


def test_the_grouped_kernels_run_and_move_the_points():
    emb, edges, schedule = _problem(True)
    start = emb.copy()
    # epoch 9 of 10: every edge of weight at least a tenth of the largest is due
    sgd_epoch_edges_2d(emb, emb.copy(), edges, schedule, SGDKernel(f32(1.6), f32(0.9), f32(1)),
                       np.uint64(0), 9, f32(1.0), np.int64(1))
    assert np.isfinite(emb).all() and not np.array_equal(emb, start)


def test_a_swapped_argument_group_does_not_compile():
    from numba.core.errors import TypingError

    emb, edges, schedule = _problem(True)
    kernel = SGDKernel(f32(1.6), f32(0.9), f32(1))
    with pytest.raises(TypingError):  # the schedule where the edges go
        sgd_epoch_edges_2d(emb, emb.copy(), schedule, edges, kernel, np.uint64(0), 0,
                           f32(1.0), np.int64(1))
    head, rows, row_schedule = _problem(False)
    with pytest.raises(TypingError):  # a fit's edge classes where transform's rows go
        sgd_epoch_rows(head, head.copy(), edges, row_schedule, kernel,
                       np.arange(40, dtype=np.uint64), np.uint64(0), 0, f32(1.0))
