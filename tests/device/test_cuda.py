"""The CUDA path (``device="cuda"``), checked without a GPU.

The kernels of :mod:`unimap._cuda` run in numba's CUDA simulator: each check runs in a
subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (the switch is read when numba is imported). The
simulator runs the kernels' Python bodies with the CPU-compiled row functions, so it checks
the kernels' wiring (launch, indexing, arrays, epochs, guard) and the pipeline's choices; the
PTX test checks that the same code compiles for a GPU where numba-cuda and its compiler are
installed (the ``gpu`` extra). Tests that need a real GPU carry the ``gpu`` marker.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import unimap
from unimap.runtime.device import resolve_device, simulated

# numba's simulator creates a block's shared array on a thread's first call without a lock
# (numba/cuda/simulator/kernelapi.py, FakeCUDAShared.array: get, then store if missing). Two
# of the block's Python threads can each create one, and a thread then reads the other's
# never-written memory: a CI run saw GDR(normalized)'s far field overflow in 5 rows of one
# block. This replaces the lookup with the same one under a lock (simulator only; on a GPU
# the block's shared memory is one by construction).
_LOCKED_SHARED_ARRAYS = """
import sys, threading
import numpy as np
from numba.core import types
from numba.np import numpy_support
from numba.cuda.simulator import kernelapi
_shared_lock, _unlocked = threading.Lock(), kernelapi.FakeCUDAShared.array
def _locked_shared_array(self, shape, dtype, *args, **kwargs):
    if shape == 0:  # dynamic shared memory: one buffer made up front, nothing to race
        return _unlocked(self, shape, dtype, *args, **kwargs)
    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    frame = sys._getframe(1)
    caller = (frame.f_code.co_filename, frame.f_lineno)  # the simulator's key
    with _shared_lock:
        array = self._allocations.get(caller)
        if array is None:
            array = self._allocations[caller] = np.empty(shape, dtype)
    return array
kernelapi.FakeCUDAShared.array = _locked_shared_array
"""

# The simulator's device_array takes whatever NumPy takes as a shape; numba-cuda on a GPU
# refuses a NumPy integer (``tuple(np.int64(3))``: "'numpy.int64' object is not iterable"),
# which stopped every GPU fit on an H100 while the simulated tests passed. This gives the
# simulator the device's own shape check.
_DEVICE_SHAPE_CHECK = """
from numba import cuda
from numba.cuda.api_util import prepare_shape_strides_dtype
_simulated_device_array = cuda.device_array
def _device_array_checked(shape, dtype=np.float64, *args, **kwargs):
    prepare_shape_strides_dtype(shape, None, dtype, "C")  # raises as on a GPU
    return _simulated_device_array(shape, dtype, *args, **kwargs)
cuda.device_array = _device_array_checked
"""


def test_the_simulator_refuses_a_numpy_integer_shape_as_a_gpu_does():
    out = run_simulated("""
    import numpy as np
    from numba import cuda
    print(cuda.device_array(3, dtype=np.int32).shape)
    try:
        cuda.device_array(np.int64(3), dtype=np.int32)
    except TypeError as exc:
        print("refused:", exc)
    """)
    assert out.splitlines()[0] == "(3,)"
    # The device's TypeError; its wording depends on the Python version ("'numpy.int64'
    # object is not iterable" on 3.12, "object of type 'numpy.int64' has no len()" on 3.11).
    assert "refused:" in out and "numpy.int64" in out


def run_simulated(code: str) -> str:
    """Run ``code`` in a fresh interpreter with the CUDA simulator on; returns its stdout."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    # The simulator runs a block's threads as Python threads that meet at barriers; with
    # Python's default 5 ms switch interval a barrier of 8 threads takes ~40 ms (UMAP's fit
    # on 150 points: 38 s, against 5 s at 0.1 ms).
    code = ("import sys; sys.setswitchinterval(1e-4)\n" + _LOCKED_SHARED_ARRAYS
            + _DEVICE_SHAPE_CHECK + textwrap.dedent(code))
    result = subprocess.run([sys.executable, "-c", code], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


EDGES = """
import numpy as np, scipy.sparse as sp
from unimap.optimizers.gdr.unnormalized import unnormalized_full_batch
rng = np.random.default_rng(0)
n = 60
P = sp.random(n, n, density=0.1, random_state=1, format="csr", dtype=np.float32)
edges = (P.indptr.astype(np.int64), P.indices.astype(np.int32), P.data.astype(np.float32))
T = P.T.tocsr()
transposed = (T.indptr.astype(np.int64), T.indices.astype(np.int32), T.data.astype(np.float32))
empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
"""


@pytest.mark.slow  # 20-70 s in the simulator: CI runs it in its GPU step
def test_one_epoch_matches_the_cpu_kernel():
    # One epoch from the same start: the same row code, so the same forces up to the
    # rounding of a differently vectorised sum (fastmath reassociates): ~1 ulp, measured
    # 4.8e-7 on coordinates of order 1. Several epochs amplify such differences (the
    # dynamics are chaotic), so longer runs are compared by quality below.
    out = run_simulated(EDGES + """
for dim in (2, 3):
    Y0 = rng.standard_normal((n, dim)).astype(np.float32)
    for tr, scale in ((empty, 2.0), (transposed, 1.0)):
        cpu, gpu = (unnormalized_full_batch(Y0, edges, tr, scale, 1, 1.58, 0.9, 7, 1.0, 0.5,
                                            5.0, 0.01, device=d) for d in ("cpu", "cuda"))
        moved = np.abs(cpu - Y0).max()
        print(dim, tr is empty, float(np.abs(cpu - gpu).max()), float(moved))
""")
    rows = [line.split() for line in out.strip().splitlines()]
    assert len(rows) == 4
    for _dim, _, diff, moved in rows:
        assert float(moved) > 1e-3  # the epoch did move the points
        assert float(diff) <= 1e-5


@pytest.mark.slow  # 20-70 s in the simulator: CI runs it in its GPU step
def test_gdr_on_cuda_is_deterministic_and_as_good_as_on_cpu():
    out = run_simulated("""
import numpy as np, unimap
from sklearn.datasets import make_blobs
from unimap.metrics import knn_accuracy, trustworthiness
X, y = make_blobs(200, n_features=10, centers=4, cluster_std=2.0, random_state=0)
fits = [unimap.GDR(random_state=0, n_epochs=60, device=d).fit(X)
        for d in ("cpu", "cuda", "cuda")]
print(fits[1].device_, *fits[1].devices_.values())
print(int(np.array_equal(fits[1].embedding_, fits[2].embedding_)))
for f in fits[:2]:
    print(trustworthiness(X, f.embedding_, 10), knn_accuracy(f.embedding_, y, 10))
""")
    lines = out.strip().splitlines()
    # device_, then neighbours, affinities, init, optimizer: the spectral start stays on the
    # CPU (LOBPCG on an H100 took 24-26 s for MNIST-70k against ARPACK's ~0.5 s)
    assert lines[0].split() == ["cuda", "cuda", "cuda", "cpu", "cuda"]
    assert lines[1] == "1"  # bitwise the same run after run: no atomics, counter-based RNG
    (t_cpu, acc_cpu), (t_gpu, acc_gpu) = (map(float, line.split()) for line in lines[2:4])
    # 200 points and 60 epochs: the two runs part after the first epochs' rounding, so they
    # are compared as two seeds would be; the 0.005 applies to MNIST-70k on a GPU.
    assert abs(t_cpu - t_gpu) <= 0.02
    assert acc_gpu >= acc_cpu - 0.02


@pytest.mark.slow  # 20-70 s in the simulator: CI runs it in its GPU step
def test_umap_on_cuda_is_deterministic_and_as_good_as_on_cpu():
    out = run_simulated("""
import numpy as np, unimap
from sklearn.datasets import make_blobs
from unimap.metrics import knn_accuracy, trustworthiness
X, y = make_blobs(150, n_features=10, centers=4, cluster_std=2.0, random_state=0)
for dim, devices in ((2, ("cpu", "cuda", "cuda")), (3, ("cpu", "cuda"))):
    fits = [unimap.UMAP(n_components=dim, random_state=0, n_epochs=40, device=d).fit(X)
            for d in devices]
    print(fits[1].devices_["optimize"], fits[0].devices_["optimize"],
          int(np.array_equal(fits[1].embedding_, fits[-1].embedding_)),
          *(trustworthiness(X, f.embedding_, 10) for f in fits[:2]),
          *(knn_accuracy(f.embedding_, y, 10) for f in fits[:2]))
""")
    for line in out.strip().splitlines():
        on_gpu, on_cpu, same, t_cpu, t_gpu, acc_cpu, acc_gpu = line.split()
        assert (on_gpu, on_cpu, same) == ("cuda", "cpu", "1")
        # the GPU's epoch runs edge groups (grouped_numba), the CPU's colour classes: the
        # two runs are compared as two seeds would be
        assert abs(float(t_cpu) - float(t_gpu)) <= 0.02
        assert float(acc_gpu) >= float(acc_cpu) - 0.02


def test_umaps_grouped_epoch_on_cuda_equals_its_cpu_reference_bitwise():
    # The GPU's epoch sums each group's moves with integer atomics: the simulated kernel (the
    # same edge and row functions, run thread by thread) must give exactly the serial
    # reference's numbers, in 2-D and 3-D, and the same numbers run after run.
    out = run_simulated("""
import numpy as np
from sklearn.datasets import make_blobs
import unimap
from unimap.optimizers.umap_sgd.common import grouped_sampling_plan, prune_graph, sgd_steps
from unimap.optimizers.umap_sgd.epochs_cuda import umap_sgd_fit_cuda
from unimap.optimizers.umap_sgd.grouped_numba import sgd_epoch_groups
X, _ = make_blobs(120, n_features=6, centers=3, random_state=0)
graph = prune_graph(unimap.UMAP(n_neighbors=8, random_state=0, n_epochs=5).fit(X).graph_, 6)
kernel, seed, alphas = sgd_steps(1.58, 0.9, 1.0, 7, 1.0, 6)
for dim in (2, 3):
    init = np.random.default_rng(1).standard_normal((120, dim)).astype(np.float32) * 5
    runs = []
    for _ in range(2):
        edges, schedule, _ = grouped_sampling_plan(graph, 6, 5.0)
        runs.append(umap_sgd_fit_cuda(init.copy(), edges, schedule, 6, kernel.a, kernel.b,
                                      kernel.gamma, seed, alphas))
    edges, schedule, _ = grouped_sampling_plan(graph, 6, 5.0)
    ref, moves = init.copy(), np.zeros(init.shape, np.int64)
    for epoch in range(6):
        sgd_epoch_groups(ref, moves, edges, schedule, kernel, seed, epoch, alphas[epoch])
    print(dim, int(np.array_equal(runs[0], runs[1])), int(np.array_equal(runs[0], ref)),
          float(np.abs(ref - init).max()))
""")
    lines = [line.split() for line in out.strip().splitlines()]
    assert [line[:3] for line in lines] == [["2", "1", "1"], ["3", "1", "1"]]
    assert all(float(line[3]) > 0.5 for line in lines)  # the points did move


KNN = """
import numpy as np
from sklearn.datasets import make_blobs
from unimap.neighbors.graph import NeighborIndex
def graphs(X, k, metric="euclidean"):
    cpu = NeighborIndex(metric, "exact").build(X).knn_graph(k)
    index = NeighborIndex(metric, "auto", device="cuda").build(X)
    return cpu, index.knn_graph(k), index
"""


def test_the_gpu_knn_graph_is_exact_on_narrow_data_and_close_on_wide():
    out = run_simulated(KNN + """
for d, metric in ((20, "euclidean"), (20, "cosine"), (120, "euclidean")):
    X, _ = make_blobs(300, n_features=d, centers=5, cluster_std=3.0, random_state=0)
    X = X.astype(np.float32)
    cpu, gpu, index = graphs(X, 15, metric)
    same = np.mean([len(np.intersect1d(a, b)) / 15 for a, b in zip(cpu.indices, gpu.indices)])
    self_first = int((gpu.indices[:, 0] == np.arange(300)).all())
    gap = float(np.abs(np.sort(cpu.distances, 1) - np.sort(gpu.distances, 1)).max())
    print(d, metric, index.method_, gpu.method, same, self_first, gap)
""")
    for line in out.strip().splitlines():
        d, metric, method, graph_method, same, self_first, gap = line.split()
        assert (method, graph_method, self_first) == ("cuda", "cuda", "1")
        if d == "20":  # unreduced: the brute force is exact (the same up to float rounding)
            assert float(same) >= 0.999 and float(gap) <= 1e-3
        else:  # 120-D searched in a 50-D projection with 64 candidates, re-ranked exactly
            assert float(same) >= 0.98


def test_the_gpu_cells_search_equals_its_cpu_reference():
    # Above the brute force's size the GPU searches k-means cells: each point's home cell and
    # the cell behind its nearest wall when that wall is nearer than its last candidate. The
    # kernel and the CPU's scan_cells take the same rows in the same order with the same
    # float32 sums, so the graphs are equal; both miss only points behind farther walls.
    out = run_simulated(KNN + """
from numba import cuda
from unimap.neighbors.brute_force_cuda import MAX_DIM
from unimap.neighbors.cells_cuda import cell_candidates_cuda, cell_graph_reference
from unimap.neighbors.kmeans import kmeans
X, _ = make_blobs(240, n_features=5, centers=4, cluster_std=3.0, random_state=0)
X = X.astype(np.float32)
n, k = X.shape[0], 8
search = np.zeros((n, MAX_DIM), np.float32)
search[:, :5] = X
centroids = kmeans(X, 5, 0)
gpu = [a.copy_to_host() for a in cell_candidates_cuda(cuda.to_device(search), 5, k,
                                                      centroids=centroids)]
cpu = cell_graph_reference(search, centroids, k)
D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
exact = np.argsort(D, axis=1, kind="stable")[:, :k]
recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(gpu[0], exact)])
fitted = [cell_candidates_cuda(cuda.to_device(search), 5, k, cell_rows=60)[0].copy_to_host()
          for _ in range(2)]
print(int(np.array_equal(gpu[0], cpu[0])), float(np.abs(gpu[1] - cpu[1]).max()), recall,
      int(np.array_equal(*fitted)), int((fitted[0][:, 0] == np.arange(n)).mean() > 0.99))
""")
    same_idx, dist_gap, recall, repeat, self_first = out.split()
    assert same_idx == "1" and float(dist_gap) == 0.0
    assert 0.9 <= float(recall) < 1.0 + 1e-9  # five cells in 5-D: most neighbours at home
    assert repeat == "1" and self_first == "1"


def test_the_gpu_knn_graph_searches_cells_above_the_brute_forces_size():
    out = run_simulated(KNN + """
import unimap.neighbors.brute_force_cuda as brute_force
import unimap.neighbors.cells_cuda as cells
brute_force.BRUTE_FORCE_MAX_SAMPLES, cells.CELL_ROWS = 100, 60  # 4-5 cells of 240 points
for d in (5, 90):  # searched as they are; in a PCA projection, re-ranked exactly
    X, _ = make_blobs(240, n_features=d, centers=4, cluster_std=3.0, random_state=0)
    exact, gpu, index = graphs(X.astype(np.float32), 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(gpu.indices, exact.indices)])
    print(d, index.method_, recall, int((gpu.indices[:, 0] == np.arange(240)).all()))
""")
    for line in out.strip().splitlines():
        _d, method, recall, self_first = line.split()
        assert method == "cuda" and self_first == "1"
        assert 0.9 <= float(recall) <= 1.0


def test_pca_on_cuda_matches_the_cpus_covariance_solver():
    # The kNN's candidate axes on the GPU (every 3rd row, as the CPU's strided sample) and
    # the projection there, against the CPU's solver: equal up to float rounding (the GPU sums
    # float64 products, the CPU float32 ones by blocks), signs fixed the same way.
    out = run_simulated("""
import numpy as np
from unimap.decomposition.pca import fit_pca, project
from unimap.decomposition.pca_cuda import fit_pca_cuda, project_cuda
rng = np.random.default_rng(0)
X = (rng.standard_normal((240, 70)) @ rng.standard_normal((70, 70))).astype(np.float32) + 5
cpu = fit_pca(np.ascontiguousarray(X[::3]), 8, solver="covariance")
gpu = fit_pca_cuda(X, 8, step=3)
projected = project_cuda(X, gpu, 12).copy_to_host()
print(np.abs(cpu.components - gpu.components).max(),
      np.abs(cpu.explained_variance / gpu.explained_variance - 1).max(),
      np.abs(projected[:, :8] - project(X, cpu)).max() / np.abs(projected).max(),
      np.abs(projected[:, 8:]).max(), gpu.solver)
import warnings, unimap
for dtype in (np.float32, np.float64):
    on_cpu, on_gpu = (unimap.PCA(5, svd_solver="covariance", device=d).fit(X.astype(dtype))
                      for d in ("cpu", "cuda"))
    print(on_gpu.device_, on_gpu.components_.dtype == dtype,
          np.abs(on_cpu.components_ - on_gpu.components_).max() < 1e-4)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    randomized = unimap.PCA(5, svd_solver="randomized", device="cuda").fit(X)
print(randomized.device_, sum("no CUDA kernels" in str(w.message) for w in caught))
from unimap.initialization.layouts import pca_init
start_cpu, start_gpu = (pca_init(X, 2, 0, device=d) for d in ("cpu", "cuda"))
print(np.abs(start_cpu - start_gpu).max() / np.abs(start_cpu).max() < 1e-5)
""")
    lines = out.strip().splitlines()
    components, variance, projection, padding, solver = lines[0].split()
    assert float(components) < 1e-4 and float(variance) < 1e-5 and float(projection) < 1e-5
    assert float(padding) == 0.0 and solver == "covariance"
    # the estimator, and a PCA start of an embedding
    assert lines[1:] == ["cuda True True", "cuda True True", "cpu 1", "True"]


def test_a_model_fitted_with_the_gpu_knn_transforms_and_saves_on_the_cpu():
    out = run_simulated("""
import numpy as np, tempfile, os, unimap
from sklearn.datasets import make_blobs
X, _ = make_blobs(260, n_features=80, centers=4, random_state=0)
est = unimap.UMAP(n_epochs=10, random_state=0, device="cuda").fit(X[:200])
new = est.transform(X[200:])
path = os.path.join(tempfile.mkdtemp(), "m.unimap")
est.save(path)
again = unimap.load(path).transform(X[200:])
print(est.knn_method_, est._index.backend_.cpu.method_, int(np.array_equal(new, again)),
      new.shape)
""")
    assert out.split()[:3] == ["cuda", "exact", "1"]


@pytest.mark.slow  # 20-70 s in the simulator: CI runs it in its GPU step
def test_transform_on_cuda_places_as_the_cpu_does_in_one_launch():
    # transform's SGD on the GPU runs the CPU's row code (place_row), every epoch of a row in
    # one thread: the same placement up to rounding, bitwise the same run after run.
    out = run_simulated("""
import numpy as np, unimap
from sklearn.datasets import make_blobs
import unimap.optimizers.umap_sgd.epochs_cuda as gpu
launches = []
original = gpu.umap_sgd_place_cuda
def counted(*args, **kwargs):
    launches.append(args[0].shape[0])
    return original(*args, **kwargs)
gpu.umap_sgd_place_cuda = counted
X, y = make_blobs(240, n_features=8, centers=4, cluster_std=2.0, random_state=0)
for dim in (2, 3):
    est = unimap.UMAP(n_components=dim, n_epochs=30, random_state=0, device="cuda").fit(X[:200])
    on_gpu = [est.transform(X[200:]) for _ in range(2)]
    on_cpu = est.set_params(device="cpu").transform(X[200:])
    spread = np.ptp(est.embedding_, axis=0).max()
    gap = np.median(np.linalg.norm(on_gpu[0] - on_cpu, axis=1)) / spread
    print(dim, int(np.array_equal(*on_gpu)), gap, float(np.abs(on_gpu[0] - on_cpu).max()))
print("launches", *launches)
""")
    lines = out.strip().splitlines()
    assert lines[-1].split() == ["launches", "40", "40", "40", "40"]  # 2 dims x 2 GPU runs
    for line in lines[:-1]:
        _dim, same, gap, _ = line.split()
        assert same == "1"
        assert float(gap) <= 1e-4  # 10 epochs of rounding; a wrong row code moves points ~1


def test_normalized_gdr_iteration_matches_the_cpu():
    # One iteration of GDR(normalized=True)'s optimizer from the same start, shared samples:
    # the same samples, rows and step; only the far field's sum is written once more (the
    # CPU's is a vectorised tile), so the two agree to float rounding.
    out = run_simulated(EDGES + """
from unimap.optimizers.gdr.forces import SampledForces
from unimap.optimizers.gdr.normalized_cuda import gradient_descent_cuda
from unimap.optimizers.gradient_descent.descent import (MAX_STEP_NORM, MIN_GAIN, Phase,
                                                        gradient_descent)
P = (P + P.T).tocsr()
edges = (P.indptr.astype(np.int64), P.indices.astype(np.int32), P.data.astype(np.float32))
Y0 = rng.standard_normal((n, 2)).astype(np.float32)
for b in (1.0, 0.8):
    make = lambda: SampledForces(edges, empty, 2.0, n, 2, 1.0, b, 1.0, 5.0, 5.0, 0, True, 9)
    phases = [Phase(1, 4.0, 0.5, 20.0)]
    f_cpu, f_gpu = make(), make()
    cpu = gradient_descent(Y0, f_cpu, phases, MIN_GAIN, None, MAX_STEP_NORM, center_every=50)[0]
    gpu = gradient_descent_cuda(Y0, f_gpu, phases, MIN_GAIN, MAX_STEP_NORM, 50)
    print(b, float(np.abs(cpu - gpu).max()), float(np.abs(cpu - Y0).max()),
          abs(f_cpu.z - f_gpu.z) / f_cpu.z)
""")
    for line in out.strip().splitlines():
        _b, diff, moved, z_gap = map(float, line.split())
        assert moved > 1e-2 and diff <= 1e-4 * max(1.0, moved) and z_gap <= 1e-5


@pytest.mark.slow  # 20-70 s in the simulator: CI runs it in its GPU step
def test_normalized_gdr_on_cuda_is_deterministic_and_as_good_as_on_cpu():
    out = run_simulated("""
import numpy as np, unimap
from sklearn.datasets import make_blobs
from unimap.metrics import knn_accuracy, trustworthiness
X, y = make_blobs(100, n_features=10, centers=3, cluster_std=1.5, random_state=0)
fits = [unimap.GDR(normalized=True, n_epochs=80, random_state=0, device=d).fit(X)
        for d in ("cpu", "cuda", "cuda")]
print(fits[1].devices_["optimize"], int(np.array_equal(fits[1].embedding_, fits[2].embedding_)))
for f in fits[:2]:
    print(trustworthiness(X, f.embedding_, 10), knn_accuracy(f.embedding_, y, 10))
""")
    lines = out.strip().splitlines()
    assert lines[0] == "cuda 1"
    (t_cpu, acc_cpu), (t_gpu, acc_gpu) = (map(float, line.split()) for line in lines[1:3])
    # The runs part by rounding and differ as seeds do: CPU seeds 0, 1, 2 gave trustworthiness
    # 0.900, 0.898, 0.881 and accuracy 1.0, 1.0, 0.99 here; the GPU run 0.888 and 1.0.
    assert abs(t_cpu - t_gpu) <= 0.03 and acc_gpu >= acc_cpu - 0.02


def test_the_affinities_on_cuda_equal_the_cpus_bitwise():
    # The GPU runs the CPU's row functions and sorts each row of Aᵀ into the CPU's order after
    # the atomic scatter, so every matrix and calibration equals the CPU's, here with a hub
    # (point 0 in 70 rows), duplicated points, a fuzzy intersection mix, and each kind of
    # directed affinity with each symmetrisation.
    out = run_simulated("""
import numpy as np
from unimap.affinity.fuzzy import fuzzy_simplicial_set
from unimap.affinity.joint import joint_affinities
from unimap.affinity.perplexity import perplexity_affinities
from unimap.neighbors import NeighborIndex
rng = np.random.default_rng(0)
X = rng.standard_normal((90, 5)).astype(np.float32)
X[10:14] = X[9]
graph = NeighborIndex("euclidean", "exact").build(X).knn_graph(8)
indices, distances = graph.indices.copy(), graph.distances
indices[20:, 7] = 0
def same(a, b):
    return (np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data) and a.dtype == b.dtype)
cpu, gpu = (fuzzy_simplicial_set(indices, distances, set_op_mix_ratio=0.4, device=d)
            for d in ("cpu", "cuda"))
print("fuzzy", same(cpu[0], gpu[0]) and np.array_equal(cpu[1], gpu[1])
      and np.array_equal(cpu[2], gpu[2]))
# distances far out of the calibration's range are brought to scale on both (issue 58)
cpu, gpu = (fuzzy_simplicial_set(indices, distances * np.float32(1e30), device=d)
            for d in ("cpu", "cuda"))
print("fuzzy-1e30", same(cpu[0], gpu[0]) and np.array_equal(cpu[1], gpu[1])
      and np.array_equal(cpu[2], gpu[2]) and float(np.median(cpu[1])) > 1e28)
for kind, symmetrization, normalize in (("fuzzy", "umap", False), ("fuzzy", "none", True),
                                        ("perplexity", "tsne", True)):
    cpu, gpu = (joint_affinities(indices, distances, kind, symmetrization, normalize, 3.0,
                                 device=d) for d in ("cpu", "cuda"))
    print(kind, symmetrization, same(cpu, gpu) and cpu.nnz > 0)
cpu, gpu = (perplexity_affinities(indices, distances, 3.0, device=d) for d in ("cpu", "cuda"))
print("tsne", same(cpu[0], gpu[0]) and np.array_equal(cpu[1], gpu[1]))
""")
    results = [line.rsplit(" ", 1) for line in out.strip().splitlines()]
    assert len(results) == 6 and all(ok == "True" for _, ok in results), out


def test_the_shell_sort_of_a_hubs_row():
    # A row of Aᵀ as long as a hub's (2,000 entries, every gap of the sort in use), reversed
    # and shuffled, comes out sorted.
    out = run_simulated("""
import numpy as np
from numba import cuda
from unimap.affinity.symmetrize_cuda import _sort_rows
rng = np.random.default_rng(0)
keys = np.concatenate([np.arange(2000)[::-1], rng.permutation(50), [7]]).astype(np.int64)
indptr = np.array([0, 2000, 2050, 2051], dtype=np.int64)
device_keys = cuda.to_device(keys)
_sort_rows[1, 3](cuda.to_device(indptr), device_keys)
keys = device_keys.copy_to_host()
print(int(np.array_equal(keys[:2000], np.arange(2000))
          and np.array_equal(keys[2000:2050], np.arange(50)) and keys[2050] == 7))
""")
    assert out.strip() == "1"


def test_the_spectral_start_on_cuda_spans_arpacks():
    # LOBPCG over the GPU's kernels against ARPACK on the CPU: the same 2-D subspace (the
    # cosines of its principal angles), and the same bits in two runs (no atomics).
    out = run_simulated("""
import numpy as np
from sklearn.datasets import make_blobs
from unimap.affinity.fuzzy import fuzzy_simplicial_set
from unimap.initialization.spectral import spectral_layout
from unimap.neighbors import NeighborIndex
X, _ = make_blobs(150, n_features=10, centers=3, cluster_std=6.0, random_state=0)
knn = NeighborIndex("euclidean", "exact").build(X.astype(np.float32)).knn_graph(15)
graph = fuzzy_simplicial_set(knn.indices, knn.distances)[0]
cpu = spectral_layout(graph, 2, 0)
gpu, again = (spectral_layout(graph, 2, 0, device="cuda") for _ in range(2))
unit = lambda a: a / np.linalg.norm(a, axis=0)
print(np.linalg.svd(unit(cpu).T @ unit(gpu.astype(np.float64)), compute_uv=False).min())
print(int(np.array_equal(gpu, again)))
""")
    cosine, repeat = out.strip().splitlines()
    assert float(cosine) > 0.9999 and repeat == "1"


def test_the_guard_stops_a_non_finite_epoch_on_cuda():
    out = run_simulated(EDGES + """
from unimap.runtime.guards import FiniteGuard, NonFiniteError
Y0 = rng.standard_normal((n, 2)).astype(np.float32)
bad = (edges[0], edges[1], edges[2].copy())
bad[2][edges[0][5]:edges[0][6]] = np.nan  # row 5's weights: its own forces go NaN
try:
    unnormalized_full_batch(Y0, bad, empty, 2.0, 1, 1.58, 0.9, 7, 1.0, 0.5, 5.0, 0.01,
                            guard=FiniteGuard("GDR", "causes"), device="cuda")
except NonFiniteError as exc:
    print(exc)
from unimap.optimizers.gradient_descent.descent import Phase
from unimap.optimizers.gradient_descent.tsne_cuda import gradient_descent_cuda as tsne_cuda
J = ((P + P.T) / (P + P.T).sum()).tocsr()
J.data[J.indptr[5]] = np.nan  # one of row 5's affinities: its attraction goes NaN
try:  # the step kernel flags what it reads and writes: no flag launches
    tsne_cuda(Y0, J, [Phase(1, 12.0, 0.5, 10.0)], 0.01, None, 5.0, center_every=1000,
              guard=FiniteGuard("TSNE", "causes"))
except NonFiniteError as exc:
    print(exc)
""")
    # One epoch: the simulator runs the CPU-compiled row code, whose division by zero raises
    # on a NaN start where a GPU would go on; the guard's reads every few epochs are tested
    # below.
    gdr, tsne = out.strip().splitlines()
    assert "the forces became NaN or infinite at epoch 1 (first in row 5, 1 rows" in gdr
    assert "TSNE: the attraction became NaN or infinite at epoch 1 (first in row 5, 1 rows" \
        in tsne


def test_the_guard_reads_its_flag_every_few_epochs_and_names_them():
    out = run_simulated("""
import numpy as np
from numba import cuda
from unimap.runtime.common_cuda import GUARD_EVERY, DeviceGuard
from unimap.runtime.guards import FiniteGuard, NonFiniteError
Y = np.ones((20, 2), np.float32)
for first_bad, n_epochs in ((13, 25), (None, 25), (21, 23)):
    d_Y = cuda.to_device(Y)
    guard = DeviceGuard(FiniteGuard("GDR", "causes"))
    try:
        for epoch in range(n_epochs):
            if epoch == first_bad:
                d_Y.copy_to_device(np.where(np.arange(20)[:, None] == 7, np.nan, Y)
                                   .astype(np.float32))
            guard.check(epoch, d_Y)
        guard.close()
        print("finished", guard.reads)
    except NonFiniteError as exc:
        print(guard.reads, exc)
print(GUARD_EVERY)
""")
    caught_late, clean, caught_at_close, every = out.strip().splitlines()
    assert every == "10"
    # NaN from epoch 14: found at the read after epoch 20, naming the epochs since the last
    assert caught_late.startswith("2 GDR: the embedding became NaN or infinite between "
                                  "epochs 11 and 20 (first in row 7, 1 rows")
    assert clean == "finished 3"  # reads after epochs 10 and 20, and the close after 25
    assert caught_at_close.startswith("3 GDR: the embedding became NaN or infinite between "
                                      "epochs 21 and 23")


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                    reason="imports the GPU kernels' module outside the simulator: needs the gpu "
                    "extra (numba's own numba.cuda lacks numba.cuda.extending.overload)")
def test_the_cooperative_launch_uses_the_kernels_own_cached_dispatcher(monkeypatch):
    # numba-cuda's ``specialize`` makes a dispatcher without the disk cache (a compile in every
    # process); the launcher compiles through the kernel's own dispatcher, whose ``compile``
    # loads from the disk cache, once per fit, and launches the dispatcher itself.
    from unimap.optimizers.umap_sgd import epochs_cuda
    from unimap.runtime import common_cuda

    class Dispatcher:
        def __init__(self):
            self.compiled, self.launches = [], []

        def typeof_pyval(self, value):
            return type(value).__name__

        def compile(self, argtypes):
            self.compiled.append(argtypes)
            return type("Kernel", (), {"max_cooperative_grid_blocks":
                                       lambda self, threads: 3})()

        def specialize(self, *args):
            raise AssertionError("specialize bypasses the disk cache")

        def __getitem__(self, config):
            return lambda *args: self.launches.append((config, args))

    kernel = Dispatcher()
    monkeypatch.setattr(common_cuda, "simulated", lambda: False)
    monkeypatch.setattr(epochs_cuda, "_sgd_epoch_2d", kernel)
    class OnDevice(np.ndarray):  # a host array standing in for a device one
        def copy_to_host(self):
            return np.asarray(self)

    monkeypatch.setattr(epochs_cuda, "to_device", lambda *arrays: [a.view(OnDevice)
                                                                   for a in arrays])
    monkeypatch.setattr(epochs_cuda, "check_device_memory", lambda *args: None)
    monkeypatch.setattr(epochs_cuda, "DeviceGuard", lambda guard: type(
        "NoGuard", (), {"flag": np.zeros(1, np.int32), "check_flagged": lambda *a, **k: None,
                        "close": lambda self: None})())
    heads = np.arange(5000, dtype=np.int32)
    schedule = tuple(np.zeros(5000) for _ in range(4))
    emb = np.zeros((5000, 2), np.float32)
    epochs_cuda.umap_sgd_fit_cuda(emb, (heads, heads, np.array([0, 5000])), schedule, 4,
                                  np.float32(1.5), np.float32(0.9), np.float32(1.0),
                                  np.uint64(3), [np.float32(1.0)] * 4)
    assert len(kernel.compiled) == 1  # once per fit, not per epoch
    assert len(kernel.compiled[0]) == 16 and kernel.compiled[0][-6:] == (
        "int64", "float32", "float32", "float32", "float32", "ndarray")
    # 5,000 edges need 20 blocks of 256 threads; 3 are resident at once
    assert [config for config, _ in kernel.launches] == [(3, common_cuda.THREADS_PER_BLOCK)] * 4
    assert [int(args[10]) for _, args in kernel.launches] == [0, 1, 2, 3]  # each epoch's


SYNCS_AND_LAUNCHES = """
import numpy as np, scipy.sparse as sp
from numba.cuda.simulator import kernel as simulated_kernel
from numba.cuda.simulator.cudadrv import devicearray
counts = {"syncs": 0, "launches": 0}
_copy, _call = devicearray.FakeCUDAArray.copy_to_host, simulated_kernel.FakeCUDAKernel.__call__
def counted_copy(self, *args, **kwargs):
    counts["syncs"] += 1
    return _copy(self, *args, **kwargs)
def counted_call(self, *args):
    if not self._device:
        counts["launches"] += 1
    return _call(self, *args)
devicearray.FakeCUDAArray.copy_to_host = counted_copy
simulated_kernel.FakeCUDAKernel.__call__ = counted_call
def per_epoch(run, short, long):
    before = dict(counts); run(short); mid = dict(counts); run(long)
    first = {k: mid[k] - before[k] for k in counts}
    second = {k: counts[k] - mid[k] for k in counts}
    return tuple((second[k] - first[k]) / (long - short) for k in ("syncs", "launches"))
"""


@pytest.mark.slow  # 20-70 s in the simulator: CI runs it in its GPU step
def test_host_syncs_and_launches_per_epoch_are_counted_and_few():
    # Each optimizer run for two epoch counts: the difference per epoch is what an epoch costs
    # beyond the fixed set-up (uploads, the final copy). One host read of the guard's flag
    # every GUARD_EVERY = 10 epochs (0.1 syncs per epoch), and no other sync: Z and 1/Z stay
    # on the device. Launches: the epoch's kernels and one flag kernel per guarded array.
    out = run_simulated(EDGES + SYNCS_AND_LAUNCHES + """
from unimap.optimizers.gdr.forces import SampledForces
from unimap.optimizers.gdr.normalized_cuda import gradient_descent_cuda as normalized_cuda
from unimap.optimizers.gradient_descent.descent import MAX_STEP_NORM, MIN_GAIN, Phase
from unimap.optimizers.gradient_descent.tsne_cuda import gradient_descent_cuda as tsne_cuda
from unimap.optimizers.umap_sgd.fit import umap_sgd_fit
from unimap.runtime.guards import FiniteGuard
guard = lambda: FiniteGuard("test", "causes")
Y0 = rng.standard_normal((n, 2)).astype(np.float32)
S = (P + P.T).tocsr()
sym = (S.indptr.astype(np.int64), S.indices.astype(np.int32), S.data.astype(np.float32))
J = (S / S.sum()).tocsr()
rows = {
    "gdr": lambda e: unnormalized_full_batch(Y0, edges, empty, 2.0, e, 1.58, 0.9, 7, 1.0, 0.5,
                                             5.0, 0.01, guard=guard(), device="cuda"),
    "gdr-normalized": lambda e: normalized_cuda(
        Y0, SampledForces(sym, empty, 2.0, n, 2, 1.0, 1.0, 1.0, 5.0, 5.0, 0, True, 9),
        [Phase(e, 4.0, 0.5, 20.0)], MIN_GAIN, MAX_STEP_NORM, 1000, guard=guard()),
    "tsne": lambda e: tsne_cuda(Y0, J, [Phase(e, 12.0, 0.5, 10.0)], 0.01, None, 5.0,
                                center_every=1000, guard=guard()),
    "umap": lambda e: umap_sgd_fit(Y0, S, n_epochs=e, a=1.58, b=0.9, seed=3, guard=guard(),
                                   device="cuda"),
}
for name, run in rows.items():
    print(name, *per_epoch(run, 10, 30))
""")
    found = {line.split()[0]: tuple(map(float, line.split()[1:])) for line in
             out.strip().splitlines()}
    # launches: GDR its epoch; GDR(normalized) the draw, the forces (which zero the next
    # draw's hits), the sum and 1/Z, the step; TSNE the forces, the sum and 1/Z, the step;
    # UMAP its cooperative epoch. No flag launches: the kernels flag what they write (the
    # guard is on in every run).
    assert found == {"gdr": (0.1, 1.0), "gdr-normalized": (0.1, 4.0), "tsne": (0.1, 3.0),
                     "umap": (0.1, 1.0)}, found


def test_device_sums_add_in_a_fixed_order_and_recentre_on_the_device():
    out = run_simulated("""
import numpy as np
from numba import cuda
from unimap.optimizers.gradient_descent.descent_cuda import DeviceSums
rng = np.random.default_rng(0)
n = 1000  # four chunks, the last one short
values = rng.standard_normal(n)
Y = (5 + rng.standard_normal((n, 2))).astype(np.float32)
sums = DeviceSums(n, 2)
d_values, d_Y = cuda.to_device(values), cuda.to_device(Y)
total = sums.total(d_values)
chunked = sum(float(sum(values[q:q + 256])) for q in range(0, n, 256))
sums.recentre(d_Y)
centred = d_Y.copy_to_host()
print(abs(total - values.sum()), total == chunked, sums.total(d_values) == total)
print(float(np.abs(centred.mean(axis=0)).max()),
      float(np.abs(centred - (Y - Y.astype(np.float64).mean(axis=0))).max()))
""")
    first, second = out.strip().splitlines()
    gap, same_order, repeatable = first.split()
    assert float(gap) < 1e-9 and same_order == "True" and repeatable == "True"
    mean_left, error = map(float, second.split())
    assert mean_left < 1e-5 and error < 1e-5


def test_tsne_exact_forces_on_cuda_equal_the_cpus():
    out = run_simulated("""
import numpy as np, scipy.sparse as sp
from numba import cuda
from unimap.optimizers.gradient_descent.tsne_cuda import _exact_forces_2d
from unimap.optimizers.gradient_descent.gradient_numba import attraction, exact_repulsion_rows
from unimap.runtime.common_cuda import rows_launch
rng = np.random.default_rng(0)
n = 50
Y = (3 * rng.standard_normal((n, 2))).astype(np.float32)
P = sp.random(n, n, density=0.2, random_state=1, format="csr")
P = ((P + P.T) / (P + P.T).sum()).tocsr()
data = P.data.astype(np.float32)
A, R = cuda.device_array((n, 2), np.float32), cuda.device_array((n, 2), np.float32)
z = cuda.device_array(n, np.float64)
_exact_forces_2d[rows_launch(n)](cuda.to_device(Y), A, R, z,
                                 cuda.to_device(P.indptr.astype(np.int64)),
                                 cuda.to_device(P.indices.astype(np.int32)), cuda.to_device(data))
Y64 = Y.astype(np.float64)
rep, z_cpu, att = np.zeros((n, 2)), np.zeros(n), np.zeros((n, 2))
exact_repulsion_rows(Y64, Y64, 1.0, True, rep, z_cpu)
attraction(P.indptr, P.indices, data, Y64, Y64, 1.0, att)
for gpu, cpu in ((R, rep), (z, z_cpu), (A, att)):
    print(float(np.abs(gpu.copy_to_host() - cpu).max() / np.abs(cpu).max()))
""")
    # float32 pairs (the CPU's are float64), summed tile by tile in float64: ~1e-7 relative
    assert all(float(err) < 1e-5 for err in out.split())


def test_tsne_on_cuda_is_exact_deterministic_and_follows_the_cpus_descent():
    out = run_simulated("""
import numpy as np, unimap
from sklearn.datasets import make_blobs
from unimap.optimizers.gradient_descent.forces import TSNEForces
from unimap.optimizers.gradient_descent.descent import Phase, gradient_descent
from unimap.optimizers.gradient_descent.tsne_cuda import gradient_descent_cuda
X, y = make_blobs(40, n_features=6, centers=3, cluster_std=2.0, random_state=0)
fits = [unimap.TSNE(random_state=0, max_iter=60, early_exaggeration_iter=30, device="cuda",
                    n_iter_without_progress=50).fit(X) for _ in range(2)]
print(*fits[0].devices_.values(), fits[0].method_, fits[0].n_iter_)
print(int(np.array_equal(fits[0].embedding_, fits[1].embedding_)))
print(int(np.isfinite(fits[0].kl_divergence_)), fits[0].transform(X[:3]).shape[0])
# a few steps from one start: the GPU's float32 descent stays on the CPU's float64 one
P = fits[0].graph_
start = np.random.default_rng(0).standard_normal((40, 2)) * 1e-2
phases = [Phase(5, 12.0, 0.5, 10.0)]
forces = TSNEForces(P, fits[0]._repulsion_params("exact"), 40, 2)
cpu, _ = gradient_descent(start.copy(), forces, phases, 0.01, None, 5.0)
gpu, done, kl = gradient_descent_cuda(start.astype(np.float32), P, phases, 0.01, None, 5.0)
print(float(np.abs(cpu - gpu).max() / np.abs(cpu).max()), done, abs(kl - forces.loss(cpu)))
""")
    lines = out.strip().splitlines()
    assert lines[0].split() == ["cuda"] * 4 + ["exact", "60"]
    assert lines[1] == "1"  # bitwise the same run after run: no atomics
    assert lines[2].split() == ["1", "3"]  # the KL with the exact Z; transform places points
    relative, done, kl_gap = lines[3].split()
    assert float(relative) < 1e-4 and done == "5" and float(kl_gap) < 1e-4


def test_optimizers_without_cuda_kernels_warn_and_run_on_the_cpu():
    out = run_simulated("""
import warnings, unimap
from sklearn.datasets import make_blobs
X, _ = make_blobs(80, n_features=5, random_state=0)
for est in (unimap.TSNE(random_state=0, device="cuda", knn_method="exact",
                        method="barnes_hut"),
            unimap.GDR(normalized=True, shared_negatives=False, n_epochs=30, random_state=0,
                       device="cuda", knn_method="exact"),
            unimap.GDR(n_epochs=30, random_state=0, device="auto"),
            unimap.TSNE(random_state=0, device="cuda", n_components=3)):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    cuda_warnings = [str(w.message) for w in caught if "CUDA" in str(w.message)]
    print(est.device_, set(est.devices_.values()), len(cuda_warnings), cuda_warnings)
""")
    tsne_bh, normalized, auto, tsne_3d = out.strip().splitlines()
    # the affinities run on the GPU, the optimizer falls back to the CPU and says so: an
    # approximation asked for by name, and 3 components (the GPU's exact sums are 2-D)
    for line in (tsne_bh, tsne_3d):
        assert line.startswith(("cuda {'cpu', 'cuda'} 1", "cuda {'cuda', 'cpu'} 1"))
    assert "TSNE(method='barnes_hut')'s optimizer has no CUDA kernels" in tsne_bh
    assert "TSNE's optimizer has no CUDA kernels" in tsne_3d
    assert normalized.startswith(("cuda {'cpu', 'cuda'} 1", "cuda {'cuda', 'cpu'} 1"))
    assert "normalized=True" in normalized
    assert auto.startswith("cpu {'cpu'} 0")  # auto never picks the simulator


def test_device_memory_is_checked_before_allocating(monkeypatch):
    out = run_simulated("""
import types
from numba import cuda
import unimap.optimizers.gdr.unnormalized_cuda as g, unimap.runtime.common_cuda as common
info = types.SimpleNamespace(get_memory_info=lambda: (10 * 2**20, 80 * 2**30))
common.cuda = types.SimpleNamespace(current_context=lambda: info)
print(g.device_bytes(10**7, 2, 3 * 10**8, 0))
try:
    common.check_device_memory(g.device_bytes(10**7, 2, 3 * 10**8, 0), "GDR on the GPU")
except MemoryError as exc:
    print(exc)
""")
    needed, message = out.strip().splitlines()
    assert int(needed) == 16 * 2 * 10**7 + 8 * (10**7 + 1) + 8 * 3 * 10**8 + 8
    assert "needs 2670 MiB" in message and "10 MiB of 81920 MiB are free" in message
    assert "device='cpu'" in message


@pytest.mark.skipif(simulated(), reason="checks the behaviour without the simulator")
def test_device_resolution_without_a_gpu():
    assert resolve_device("cpu") == "cpu"
    if importlib.util.find_spec("numba_cuda") is None:
        assert resolve_device("auto") == "cpu"  # without the gpu extra, numba.cuda is not tried
    from unimap.runtime.device import cuda_status

    if not cuda_status()[0]:
        with pytest.raises(RuntimeError, match="device='cuda', but .*device='cpu'"):
            resolve_device("cuda")
        with pytest.raises(RuntimeError, match="device='cuda'"):
            unimap.GDR(device="cuda").fit(np.random.default_rng(0).random((30, 3)))


def test_device_is_a_declared_parameter():
    X = np.random.default_rng(0).random((30, 3))
    with pytest.raises(ValueError, match="device"):
        unimap.UMAP(device="gpu").fit(X)
    from unimap.neighbors.graph import NeighborIndex

    with pytest.raises(ValueError, match="device"):
        NeighborIndex(device="gpu").build(X)
    est = unimap.GDR(device="cpu").fit(np.random.default_rng(0).random((40, 3)))
    assert est.device == "cpu" and est.device_ == "cpu"
    assert est.devices_ == dict.fromkeys(("neighbors", "affinities", "init", "optimize"), "cpu")


def _ptx_compiler_available() -> bool:
    if importlib.util.find_spec("numba_cuda") is None:
        return False
    try:
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
    except Exception:  # noqa: BLE001 - no libNVVM: nothing to compile with
        return False
    return True


@pytest.mark.skipif(simulated() or not _ptx_compiler_available(),
                    reason="needs numba-cuda and its NVVM compiler (the gpu extra)")
def test_the_kernels_compile_for_a_gpu(monkeypatch):
    # Compiling to PTX needs no GPU; numba-cuda asks the current device's compute capability
    # for the @jit row functions the kernels call, which is answered here (an H100's, 9.0).
    import types

    import numba.cuda.dispatcher as dispatcher
    from numba import cuda
    from numba import types as nt

    monkeypatch.setattr(dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=(9, 0)))
    from unimap.neighbors import brute_force_cuda as knn
    from unimap.optimizers.gdr import normalized_cuda as gdr_normalized
    from unimap.optimizers.gdr import unnormalized_cuda as gdr
    from unimap.optimizers.gradient_descent import descent_cuda as descent
    from unimap.optimizers.umap_sgd import epochs_cuda as umap
    from unimap.runtime import common_cuda as common

    f2 = nt.float32[:, ::1]
    csr = (nt.int64[::1], nt.int32[::1], nt.float32[::1])
    signature = (f2, f2, f2, f2, *csr, *csr, nt.boolean, nt.float32, nt.float64,
                 *(nt.float32,) * 7, nt.uint64, nt.int32[::1])
    for kernel in (gdr._unnormalized_epoch_2d, gdr._unnormalized_epoch_nd):
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0), fastmath=True)
        assert ".entry" in ptx and "ld.global.f32" in ptx
    f8 = nt.float64[::1]
    signature = (f2, nt.int64[:, ::1], nt.int32[::1], nt.int32[::1], nt.int64[::1], f8, f8,
                 f8, f8, nt.uint64, nt.int64, nt.float32, nt.float32, nt.float32, nt.float32,
                 nt.int32[::1])
    for kernel in (umap._sgd_epoch_2d, umap._sgd_epoch_nd):
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0), fastmath=True)
        assert ".entry" in ptx and "cudaCGSynchronize" in ptx  # the grid sync between groups
        # the moves are summed with integer atomics (exact in any order), none in float
        assert "atom.global.add.u64" in ptx and "atom.global.add.f32" not in ptx
    rows = (f2, f2, nt.int64[::1], nt.int32[::1], f8, f8, f8, f8, nt.uint64[::1], nt.uint64,
            nt.float32[::1], nt.float32, nt.float32, nt.float32)
    ptx, _ = cuda.compile_ptx(umap._place_rows.py_func, rows, cc=(9, 0), fastmath=True)
    assert ".entry" in ptx and "bar.sync" not in ptx  # transform: rows never wait for others
    i4, f4 = nt.int32[:, ::1], nt.float32[:, ::1]
    ptx, _ = cuda.compile_ptx(knn._top_candidates.py_func, (f2, nt.int64, i4, f4), cc=(9, 0))
    assert ".entry" in ptx and ".shared" in ptx  # the staged tile
    from unimap.neighbors import cells_cuda as cells

    l1, d1, d2 = nt.int64[::1], nt.float64[::1], nt.float64[:, ::1]
    for kernel, kernel_signature in [
        (cells._nearest_cells, (f2, d2, d2, nt.int32[::1], i4, d2)),
        (cells._gather_rows, (f2, l1, f2)),
        (cells._scan_cells, (f2, l1, nt.int32[::1], l1, nt.int64, nt.boolean, i4, f4)),
        (cells._last_column, (f4, nt.float32[::1])),
        (cells._in_input_order, (i4, f4, l1, i4, f4)),
    ]:
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel_signature, cc=(9, 0))
        assert ".entry" in ptx and "atom." not in ptx  # no atomics: the same graph every run
    ptx, _ = cuda.compile_ptx(knn._rerank.py_func, (f2, i4, nt.int64, i4, f4), cc=(9, 0))
    assert ".entry" in ptx
    i1, f1, f64 = nt.int32[::1], nt.float32[::1], nt.float64
    compiled = [
        (gdr_normalized._draw_shared, (f2, nt.int64, nt.uint64, f2, i1)),
        (gdr_normalized._shared_forces_2d, (f2, f2, f2, nt.float64[::1], *csr, *csr,
                                            nt.boolean, nt.float32, nt.float32, nt.float32,
                                            i1, f2, nt.int64, nt.float32, i1)),
        (descent.gradient_step_kernel, (f2, f2, f2, nt.float64[::1], f64, f2, f2,
                                        *(f64,) * 5, nt.int32[::1])),
        (descent.subtract_kernel, (f2, f1)),
    ]
    for kernel, kernel_signature in compiled:
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel_signature, cc=(9, 0))
        assert ".entry" in ptx
    ptx, _ = cuda.compile_ptx(common.flag_nonfinite.py_func, (f2, nt.int32[::1]), cc=(9, 0))
    assert ".entry" in ptx
    from unimap.optimizers.gradient_descent import tsne_cuda

    ptx, _ = cuda.compile_ptx(descent._sum_and_inverse.py_func,
                              (nt.float64[::1], nt.int64, nt.float64[::1], nt.int32[::1], f64,
                               nt.float64[::1], nt.float64[::1]), cc=(9, 0))
    # one integer atomic counts the blocks that arrived; the sums run in a fixed order; the
    # last block reads the others' partial sums past its L1 cache
    assert "atom.global.add.u32" in ptx and "atom.global.add.f64" not in ptx
    assert "ld.global.cg" in ptx
    for kernel, kernel_signature in [
        (descent._chunk_column_sums, (f2, nt.int64, nt.float64[:, ::1])),
        (descent._column_means, (nt.float64[:, ::1], nt.int64, nt.float64[::1])),
        (descent.subtract_kernel, (f2, nt.float64[::1])),
    ]:
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel_signature, cc=(9, 0))
        assert ".entry" in ptx and "atom." not in ptx  # fixed-order sums: the same every run
    ptx, _ = cuda.compile_ptx(tsne_cuda._exact_forces_2d.py_func,
                              (f2, f2, f2, nt.float64[::1], nt.int64[::1], i1, f1), cc=(9, 0),
                              fastmath=True)
    # the staged tile, no atomics (the same bits every run), no local memory
    assert ".shared" in ptx and "atom." not in ptx and ".local" not in ptx
    from unimap.affinity import calibration_cuda as calibration
    from unimap.affinity import symmetrize_cuda as symmetrize

    l1, d1, d2, b = nt.int64[::1], nt.float64[::1], nt.float64[:, ::1], nt.boolean
    merge = (nt.int64, f64, f64, f64, f64, b, b, l1, i1, f1, l1, f1)
    compiled = [
        (calibration._smooth_rows, (f2, f64, f64, nt.float32, f1, f1)),
        (calibration._membership_rows, (i4, f2, f1, f1, b, f2)),
        (calibration._perplexity_rows, (d2, f64, d2, d1)),
        (symmetrize._count_columns, (i1, l1)),
        (symmetrize._scatter_positions, (i1, l1, l1)),
        (symmetrize._sort_rows, (l1, l1)),
        (symmetrize._gather_rows, (l1, d1, l1, i1, d1)),
        (symmetrize._combine_rows, (l1, i1, d1, l1, i1, d1, *merge)),  # joint P in float64
        (symmetrize._combine_rows, (l1, i1, f1, l1, i1, f1, nt.int64, *(nt.float32,) * 3,
                                    f64, b, b, l1, i1, f1, l1, f1)),  # UMAP's in float32
    ]
    for kernel, kernel_signature in compiled:
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel_signature, cc=(9, 0))
        assert ".entry" in ptx
    from unimap.initialization import spectral_cuda as spectral

    fa, d2, d3 = nt.float32[:, :], nt.float64[:, ::1], nt.float64[:, :, ::1]
    compiled = [
        (spectral._row_sums, (l1, f1, d1, f2)),
        (spectral._normalize, (l1, i1, f1, d1, f1)),
        (spectral._spmm, (l1, i1, f1, fa, fa)),  # blocks are column slices: any layout
        (spectral._gram_chunks, (fa, fa, nt.int64, d3)),
        (spectral._sum_chunks, (d3, d2)),
        (spectral._combine, (fa, d2, fa)),
        (spectral._residual, (fa, fa, d1, fa)),
        (spectral._subtract_outer, (fa, fa, d1)),
        (spectral._scale_columns, (fa, d1)),
        (spectral._copy_block, (fa, fa)),
    ]
    for kernel, kernel_signature in compiled:
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel_signature, cc=(9, 0))
        assert ".entry" in ptx and "atom." not in ptx  # no atomics: the same bits every run
    from unimap.decomposition import pca_cuda

    for kernel, kernel_signature in [
        (pca_cuda._column_means, (f2, nt.int64, nt.int64, d1)),
        (pca_cuda._centred_scatter, (f2, nt.int64, nt.int64, d1, d2)),
        (pca_cuda._project, (f2, d2, d1, f2)),
    ]:
        ptx, _ = cuda.compile_ptx(kernel.py_func, kernel_signature, cc=(9, 0))
        assert ".entry" in ptx and "atom." not in ptx
    assert "atom.global.add.u64" in cuda.compile_ptx(
        symmetrize._scatter_positions.py_func, (i1, l1, l1), cc=(9, 0))[0]


@pytest.mark.skipif(simulated() or not _ptx_compiler_available(),
                    reason="needs numba-cuda and its NVVM compiler (the gpu extra)")
def test_a_kernel_compiles_for_a_gpu_after_its_cpu_version():
    # Seen on an H100: with floor32's CUDA overload registered through numba's `overload`, a
    # UMAP fit on the CPU and then on the GPU in one process failed (KeyError <ufunc 'floor'>):
    # the CUDA compile took the CPU's np.floor. A fresh process compiles the CPU caller first.
    code = textwrap.dedent("""
        import types
        import numba, numpy as np
        import numba.cuda.dispatcher as dispatcher
        from numba import cuda, types as nt
        from unimap.lowdim.fastpow_numba import fast_pow

        @numba.njit(fastmath=True)
        def on_cpu(x, b):
            return fast_pow(x, b)

        print(on_cpu(np.float32(2.0), np.float32(0.5)))
        dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
        from unimap.optimizers.umap_sgd import epochs_cuda as umap
        f2, f8 = nt.float32[:, ::1], nt.float64[::1]
        signature = (f2, nt.int64[:, ::1], nt.int32[::1], nt.int32[::1], nt.int64[::1], f8,
                     f8, f8, f8, nt.uint64, nt.int64, *(nt.float32,) * 4, nt.int32[::1])
        ptx, _ = cuda.compile_ptx(umap._sgd_epoch_2d.py_func, signature, cc=(9, 0),
                                  fastmath=True)
        print("cvt.rmi" in ptx)  # math.floor's rounding towards minus infinity
    """)
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    value, floor_in_ptx = result.stdout.split()
    assert abs(float(value) - 2 ** 0.5) < 1e-4 and floor_in_ptx == "True"


# Every kernel launch of a small run of each GPU path, recorded in the simulator with the
# types of its arguments: the signatures the pipeline really launches, for the device-code
# check below (hand-written signatures drift from the callers).
RECORD_LAUNCHES = """
import json, warnings
import numba
from numba.cuda.simulator import kernel as simulated_kernel
seen = {}
_call = simulated_kernel.FakeCUDAKernel.__call__
def type_of(arg):
    array = getattr(arg, "_ary", arg if isinstance(arg, np.ndarray) else None)
    if array is not None:
        return ["array", str(array.dtype), array.ndim, numba.typeof(array).layout]
    return ["scalar", str(numba.typeof(arg))]
def recording_call(self, *args):
    if not self._device:
        seen[json.dumps([self.fn.__module__, self.fn.__name__, [type_of(a) for a in args]])] = 1
    return _call(self, *args)
simulated_kernel.FakeCUDAKernel.__call__ = recording_call
warnings.simplefilter("ignore")
import unimap
from sklearn.datasets import make_blobs
from unimap.affinity.fuzzy import fuzzy_simplicial_set
from unimap.initialization.spectral import spectral_layout
from unimap.neighbors import NeighborIndex
X = make_blobs(120, n_features=8, centers=3, random_state=0)[0].astype(np.float32)
for dim in (2, 3):
    for method in (unimap.GDR, unimap.UMAP):
        method(n_components=dim, n_epochs=3, random_state=0, device="cuda").fit(X).transform(
            X[:5])
unimap.GDR(normalized=True, n_epochs=6, random_state=0, device="cuda").fit(X)
unimap.TSNE(max_iter=6, early_exaggeration_iter=3, perplexity=10, random_state=0,
            device="cuda").fit(X)
unimap.PCA(n_components=2, device="cuda").fit(X).transform(X)
knn = NeighborIndex("euclidean", "exact").build(X).knn_graph(10)
spectral_layout(fuzzy_simplicial_set(knn.indices, knn.distances)[0], 2, 0, device="cuda")
import unimap.neighbors.brute_force_cuda as brute_force
import unimap.neighbors.cells_cuda as cells
brute_force.BRUTE_FORCE_MAX_SAMPLES, cells.CELL_ROWS = 60, 40  # the cells search, small
for d in (5, 90):  # searched as they are, and in a PCA projection
    Xd = make_blobs(120, n_features=d, centers=3, random_state=0)[0].astype(np.float32)
    NeighborIndex("euclidean", "auto", device="cuda").build(Xd).knn_graph(8)
for launch in seen:
    print(launch)
"""

# Kernels known to spill registers to local memory (slow, not wrong), with the bytes
# measured; any other kernel that spills, or one of these spilling more, fails the check.
KNOWN_SPILLS = {"unimap.neighbors.brute_force_cuda._rerank": 452}


def _device_code_tools():
    """ptxas and the CUDA device runtime of the gpu extra (nvidia-cuda-nvcc, -runtime), or
    None where they are not installed."""
    try:
        import nvidia.cuda_nvcc
        import nvidia.cuda_runtime
        from cuda.bindings import nvjitlink  # noqa: F401
    except ImportError:
        return None
    from pathlib import Path

    ptxas = Path(nvidia.cuda_nvcc.__path__[0]) / "bin" / "ptxas"
    devrt = Path(nvidia.cuda_runtime.__path__[0]) / "lib" / "libcudadevrt.a"
    return (ptxas, devrt) if ptxas.is_file() and devrt.is_file() else None


def _link_with_device_runtime(relocatable: bytes, devrt) -> int:
    """Link a relocatable cubin with the device runtime (what a grid barrier needs, and what
    numba-cuda links at the first launch) by nvJitLink, without a GPU; the cubin's size."""
    from cuda.bindings import nvjitlink

    handle = nvjitlink.create(1, ["-arch=sm_90"])
    try:
        nvjitlink.add_data(handle, nvjitlink.InputType.CUBIN, relocatable, len(relocatable),
                           "kernel.cubin")
        library = devrt.read_bytes()
        nvjitlink.add_data(handle, nvjitlink.InputType.LIBRARY, library, len(library),
                           "libcudadevrt.a")
        nvjitlink.complete(handle)
        return nvjitlink.get_linked_cubin_size(handle)
    finally:
        nvjitlink.destroy(handle)


@pytest.mark.slow  # the recording run in the simulator (~1-2 min), then ~50 ptxas runs
@pytest.mark.skipif(simulated() or not _ptx_compiler_available() or not _device_code_tools(),
                    reason="needs numba-cuda, NVVM, ptxas and the device runtime (gpu extra)")
def test_every_kernel_assembles_for_sm_90_and_fits_a_block(monkeypatch, tmp_path):
    # Compiling to PTX does not run ptxas or the link: register and shared-memory limits, and
    # the device runtime a grid barrier links, would fail only at the first launch on a GPU.
    # Here every kernel unimap has, with the argument types the pipeline launches it with,
    # is assembled by ptxas for sm_90 (an H100 or H200); a cooperative kernel is assembled
    # as relocatable code and linked with the device runtime; each must fit a block of
    # THREADS_PER_BLOCK threads in the SM's 65,536 registers and 48 KiB of static shared
    # memory, and spill nothing beyond KNOWN_SPILLS.
    import importlib
    import json
    import pkgutil
    import re
    import types

    import numba
    import numba.cuda.dispatcher as dispatcher
    from numba import cuda
    from numba import types as nt

    import unimap as package
    from unimap.runtime.common_cuda import THREADS_PER_BLOCK

    monkeypatch.setattr(dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=(9, 0)))
    ptxas, devrt = _device_code_tools()
    launches = [json.loads(line) for line in run_simulated(RECORD_LAUNCHES).splitlines()
                if line.startswith("[")]
    kernels = set()
    for module_info in pkgutil.walk_packages(package.__path__, "unimap."):
        if module_info.name.endswith("_cuda"):
            module = importlib.import_module(module_info.name)
            kernels |= {f"{module.__name__}.{name}" for name, value in vars(module).items()
                        if isinstance(value, dispatcher.CUDADispatcher)
                        and not value.targetoptions.get("device")
                        and value.py_func.__module__ == module.__name__}
    launched = {f"{module}.{name}" for module, name, _ in launches}
    assert kernels - launched == set(), "kernels the recording run does not launch"
    assert launched <= kernels

    def numba_type(spec):
        if spec[0] == "array":
            return nt.Array(numba.from_dtype(np.dtype(spec[1])), spec[2], spec[3])
        return getattr(nt, spec[1])

    report, cooperative = [], set()
    for module, name, specs in launches:
        kernel = getattr(importlib.import_module(module), name)
        ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(map(numba_type, specs)), cc=(9, 0),
                                  fastmath=kernel.targetoptions.get("fastmath", False))
        (tmp_path / "kernel.ptx").write_text(ptx)
        relocatable = "cudaCGSynchronize" in ptx  # a grid barrier: the device runtime's
        result = subprocess.run(
            [str(ptxas), "-arch=sm_90", "-v", *(["-c"] if relocatable else []),
             str(tmp_path / "kernel.ptx"), "-o", str(tmp_path / "kernel.cubin")],
            capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"{module}.{name}: {result.stderr[-1500:]}"
        if relocatable:
            cooperative.add(name)
            assert _link_with_device_runtime((tmp_path / "kernel.cubin").read_bytes(),
                                             devrt) > 0
        found = {key: int(m.group(1)) if (m := re.search(pattern, result.stderr)) else 0
                 for key, pattern in (("registers", r"Used (\d+) registers"),
                                      ("spills", r"(\d+) bytes spill stores"),
                                      ("shared", r"(\d+) bytes smem"))}
        report.append((f"{module}.{name}", found))
    assert cooperative == {"_sgd_epoch_2d", "_sgd_epoch_nd"}  # UMAP's epochs
    for kernel, found in report:
        assert found["registers"] > 0 and found["registers"] * THREADS_PER_BLOCK <= 65536, (
            kernel, found)
        assert found["shared"] <= 48 * 1024, (kernel, found)
        assert found["spills"] <= KNOWN_SPILLS.get(kernel, 0), (kernel, found)
