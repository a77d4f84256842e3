"""Memory known before it is spent: a fit's peak estimated from its shape, checked against
what the machine has.

A fit runs its phases one after the other (neighbours, affinities, initialization,
optimization). Each phase keeps some arrays for the later ones (the kNN graph, P) and
allocates others only while it runs (exact kNN distance blocks, HNSW candidates, the
symmetrization's temporaries, the FFT grid). The peak is the largest, over the phases, of
what the earlier phases kept plus what the phase itself allocates.

The sizes below are counted from the arrays each step allocates; the per-edge constants of the
scipy-heavy steps (symmetrization, spectral init, UMAP's epoch bookkeeping) were measured with
``tracemalloc`` per phase on a 100,000 x 50 Gaussian mixture (``python
benchmarks/fit_memory.py GDR 100000 gauss``, its ``traced_peak_mb``) and are bytes per kNN
edge (n x n_neighbors). faiss's allocations are outside
``tracemalloc`` and were taken from the resident-set growth. The estimate is the memory the fit
adds to the process; the input array itself is not counted (the caller holds it). The comparison
with measured peaks is in ``benchmarks/results/fit_memory.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["MemoryEstimate", "InsufficientMemoryError", "available_memory", "parse_memory",
           "check_memory", "format_bytes", "input_copy_estimate", "neighbors_bytes",
           "fft_grid_bytes", "MemoryProfile", "pipeline_estimate"]

# bytes per kNN edge (n * n_neighbors): (allocated while the phase runs, kept after it).
# The phase's numba kernels (affinity/symmetrize_numba.py), measured on random kNN graphs (P of
# 1.9 entries per edge, more than real graphs' 1.7): peak RSS above the start 29.2 (GDR),
# 36.5 (UMAP, 300,000 x 15) and 39.3 bytes per edge (t-SNE, 100,000 x 91), with 20% margin.
# (scipy's sparse algebra needed 80 and 64.)
AFFINITY_BYTES = {"fuzzy": (44, 28), "perplexity": (48, 14)}
SPECTRAL_INIT_BYTES = 40
# umap_sgd 100 -> 108: UMAP's fit of the 1M mixture peaked at 3150 MiB against an estimate of
# 3085 (benchmarks/results/scale_umap.md, 2026-11-26); now about 3217 (+8 B x 15M edges x 1.15).
OPTIMIZER_BYTES = {"umap_sgd": 108, "gdr": 16, "gdr_normalized": 40, "tsne": 8}
# faiss HNSW: vectors and level-0 links, with std::vector growth (~1.6x, RSS growth measured)
HNSW_LINK_BYTES = 2 * 16 * 4
HNSW_GROWTH = 1.6
EXACT_BLOCK_BYTES = 1 << 27  # _exact_knn._CHUNK_BYTES; two blocks live at once
# Slack for what the allocator keeps after a free and the small arrays not counted: measured
# peaks were 0.85-1.0 of the counted sum, so the estimate is scaled up to stay above them.
ALLOCATOR_SLACK = 1.15


class InsufficientMemoryError(MemoryError):
    """A fit that would need more memory than is available (or than ``max_memory``)."""


@dataclass
class MemoryEstimate:
    """The estimated peak of a fit, phase by phase.

    Attributes
    ----------
    phases : dict[str, int]
        Bytes the fit holds at the peak of each phase (what earlier phases kept plus the
        phase's own temporaries), before ``ALLOCATOR_SLACK``.
    advice : dict[str, str]
        For each phase, the parameter that lowers its memory.
    """

    phases: dict[str, int] = field(default_factory=dict)
    advice: dict[str, str] = field(default_factory=dict)

    @property
    def peak(self) -> int:
        """The estimated peak in bytes (the largest phase, with the allocator's slack)."""
        return int(ALLOCATOR_SLACK * max(self.phases.values(), default=0))

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=self.phases.get) if self.phases else ""

    def describe(self) -> str:
        parts = ", ".join(f"{name} {format_bytes(size)}" for name, size in self.phases.items())
        return f"about {format_bytes(self.peak)} at its peak ({parts})"


class MemoryProfile(NamedTuple):
    """What a method's own steps allocate (its ``_memory_profile``), for
    :func:`pipeline_estimate`."""

    affinity: str  # a key of AFFINITY_BYTES
    optimizer_bytes: int  # the optimizer's own arrays
    k_parameter: str  # the parameter that sets the number of neighbours
    optimizer_advice: str = ""  # what lowers the optimizer's memory, if not k_parameter


def pipeline_estimate(n: int, d: int, k: int, width: int, knn: str, metric: str,
                      sparse_input: bool, spectral_init: bool,
                      profile: MemoryProfile) -> MemoryEstimate:
    """The phases' peaks of a neighbour embedding's fit (neighbours → affinities → init →
    optimize) on n points of d features, k kNN columns, ``width`` output dimensions, with the
    kNN backend ``knn`` (``"precomputed"``: a given graph) and the method's ``profile``."""
    smaller_k = f"a smaller {profile.k_parameter} (or fewer samples)"
    estimate = MemoryEstimate()
    dense = n * d * 4 if sparse_input else 0  # the search runs on a dense copy
    if knn == "precomputed":
        knn_peak = knn_kept = n * k * 8
    else:
        knn_peak, knn_kept = neighbors_bytes(knn, n, d, k, metric)
    estimate.phases["neighbors"] = dense + knn_peak
    estimate.advice["neighbors"] = (
        "pass the kNN graph (precomputed_knn) instead of an n x n matrix"
        if metric == "precomputed" else
        "knn_method='hnsw'" if knn == "exact" else
        f"fewer features (PCA first) or {smaller_k}")
    edges = n * k
    affinity_peak, affinity_kept = AFFINITY_BYTES[profile.affinity]
    estimate.phases["affinities"] = knn_kept + edges * affinity_peak
    estimate.advice["affinities"] = smaller_k
    kept = knn_kept + edges * affinity_kept + n * width * 8  # and the start layout
    spectral = edges * SPECTRAL_INIT_BYTES if spectral_init else 0
    estimate.phases["init"] = kept + spectral
    estimate.advice["init"] = "init='pca'" if spectral else smaller_k
    estimate.phases["optimize"] = kept + profile.optimizer_bytes
    estimate.advice["optimize"] = profile.optimizer_advice or smaller_k
    return estimate


def format_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
          "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2,
          "gib": 1024**3, "tib": 1024**4}


def parse_memory(value: Any) -> int | None:
    """Bytes from ``max_memory``: an int or float of bytes, or a string such as ``"8GB"``,
    ``"512 MiB"``; ``None`` stays ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value)
        if match is None or match.group(2).lower() not in _UNITS:
            raise ValueError(f"max_memory={value!r} is not a size: use bytes, or a string "
                             "such as '8GB' or '512MiB'")
        return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    return int(value)


def available_memory() -> int | None:
    """Bytes this process can still allocate: the kernel's ``MemAvailable``, or the cgroup's
    limit minus its usage when that is lower; None where neither can be read (not Linux)."""
    limits = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
                    break
    except OSError:
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as fh:
                limit = fh.read().strip()
            with open(usage_file) as fh:
                usage = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # "max" or a huge number: no limit
            limits.append(max(0, int(limit) - usage))
        break
    return min(limits) if limits else None


def check_memory(estimate: MemoryEstimate, max_memory: Any, owner: str) -> None:
    """Refuse (``InsufficientMemoryError``) when the estimate exceeds the limit.

    ``max_memory="available"`` compares with :func:`available_memory` (no check where it is
    unknown); a size compares with that size; ``None`` turns the check off.
    """
    if max_memory is None:
        return
    if isinstance(max_memory, str) and max_memory == "available":
        limit, source = available_memory(), "the available memory"
        if limit is None:
            return
    else:
        limit, source = parse_memory(max_memory), "max_memory"
    if estimate.peak <= limit:
        return
    phase = estimate.peak_phase
    raise InsufficientMemoryError(
        f"{owner} would need {estimate.describe()}, more than {source} "
        f"({format_bytes(limit)}); the largest phase is {phase}: "
        f"{estimate.advice.get(phase, 'use fewer samples')}. To run it anyway, pass "
        f"max_memory=None (the estimate is conservative, see unimap/runtime/memory.py)")


def input_copy_estimate(X: Any) -> MemoryEstimate | None:
    """The float32 copy validation makes of an array of another dtype (or None: no copy, or
    not an array yet), so that a large float64 input (a dense n x n distance matrix) is
    refused before it is copied."""
    import numpy as np

    shape, dtype = getattr(X, "shape", None), getattr(X, "dtype", None)
    if shape is None or dtype is None or len(shape) != 2 or dtype == np.float32:
        return None
    # sparse: its data array only
    size = int(X.nnz) * 4 if hasattr(X, "nnz") else int(shape[0]) * int(shape[1]) * 4
    return MemoryEstimate({"input": size}, {"input": "pass float32 data (no copy is made)"})


def neighbors_bytes(method: str, n: int, d: int, k: int, metric: str) -> tuple[int, int]:
    """(peak while the kNN graph is built, kept afterwards) for ``NeighborIndex`` method
    ``method`` on n points of d features and k columns (the point itself included).

    Kept: the graph (int32 indices, float32 distances) and the index ``transform`` reuses.
    """
    graph = n * k * 8
    if metric == "precomputed":  # rows of the (validated, float32) n x n matrix: top k each
        return graph * 3, graph
    copy = n * d * 4 if metric in ("cosine", "correlation") else 0  # normalised rows
    if method == "exact":
        block = min(EXACT_BLOCK_BYTES, n * n * 4)
        return copy + 2 * block + graph * 3, copy + graph
    if method == "hnsw":
        from unimap.neighbors.hnsw import HNSW_PCA_DIM, hnsw_layout

        p = min(d, HNSW_PCA_DIM)
        index = int(n * (4 * p + HNSW_LINK_BYTES) * HNSW_GROWTH)
        ordered = n * p * 4  # the projection in Morton order, kept for the graph's search
        projection = n * (d + p) * 4 if d > HNSW_PCA_DIM else 0  # centred copy while projecting
        layout = hnsw_layout(n)
        parts = layout.n_parts
        cand = layout.candidates_per_part(k, self_join=True)
        reverse = parts * cand * 4 if k <= layout.self_candidates else 0
        search = n * (parts * cand * 8 + cand * 4 + reverse + 24 * k)
        kept = copy + index + ordered + graph
        return kept + max(projection, search), kept
    # nndescent: pynndescent's float32 copy, its forest and heaps (~3 arrays of n x k, 8 B)
    kept = copy + n * d * 4 + graph
    return kept + n * k * 24 * 3, kept


def fft_grid_bytes(n: int) -> int:
    """The 2-D FFT workspace of t-SNE's interpolation (``tsne_fft._convolve_2d``): 224 bytes
    per node squared. The grid follows the embedding's span, which is not known before the
    fit; t-SNE spans grow about like sqrt(n) (MNIST-70k ~200), capped at ``MAX_NODES_2D``."""
    from unimap.optimizers.repulsion.fft import MAX_NODES_2D

    nodes = min(MAX_NODES_2D, 3 * max(50, int(0.75 * n**0.5) + 1))
    return 224 * nodes * nodes
