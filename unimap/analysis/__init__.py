"""Analyses of an embedding beyond single-number scores: how it treats the distances of its
data (reference 002, "Embedding analysis"), how stable it is under sub-sampling and where the
time of a fit goes (reference 004, sections 4.4 and 5.6).

Distances (reference 002)
    :func:`sort_index_change` (how far each pair moves in the order of all distances),
    :func:`distance_comparison` (embedding against input-space distance),
    :func:`sorted_distances` (embedding distances in input-space order),
    :func:`neighbor_overlap` (shared ``[k, k + 10)`` neighbourhoods for a range of ``k``) and
    :func:`relative_error` (of the distances normalised to [0, 1]); all five at once, sharing
    one sample, with :func:`embedding_analysis`.
Stability
    :func:`subsample_stability`: embed random sub-samples, align them to the embedding of all
    points by Procrustes (:func:`procrustes_align`) and measure each point's displacement.
Runtime
    :func:`runtime_profile`: the share of each phase of a fit (the kNN search above all) on
    Gaussian data of growing input dimension.

Every analysis works on a random sample of points (``n_samples``, ``random_state``), never an
``n × n`` matrix of all points, and returns a frozen dataclass of numpy arrays with documented
fields (its repr is a few lines: numbers by value, arrays by shape); each has a ``plot_*``
function (and a ``.plot()`` method) that draws it with matplotlib (``pip install
'unimap[plot]'``, imported only when plotting) and returns the figure.

The code lives in private modules: ``_distances`` (the four pairwise analyses) and
``_distance_results`` (their results and plots), ``_overlap`` (neighbour overlap), ``_report``
(all five and their figure), ``_stability`` (sub-sampling, Procrustes, estimator cloning),
``_runtime`` (the profile) and ``_common`` (checks, sampling, blocked distances, plotting
helpers).
"""

from unimap.analysis._distance_results import (
    DistanceComparison,
    RelativeError,
    SortedDistances,
    SortIndexChange,
    plot_distance_comparison,
    plot_relative_error,
    plot_sort_index_change,
    plot_sorted_distances,
)
from unimap.analysis._distances import (
    distance_comparison,
    relative_error,
    sort_index_change,
    sorted_distances,
)
from unimap.analysis._overlap import NeighborOverlap, neighbor_overlap, plot_neighbor_overlap
from unimap.analysis._report import (
    EmbeddingAnalysis,
    embedding_analysis,
    plot_embedding_analysis,
)
from unimap.analysis._runtime import RuntimeProfile, plot_runtime_profile, runtime_profile
from unimap.analysis._stability import (
    SubsampleStability,
    clone_estimator,
    plot_subsample_stability,
    procrustes_align,
    subsample_stability,
)

__all__ = [
    "sort_index_change",
    "SortIndexChange",
    "plot_sort_index_change",
    "distance_comparison",
    "DistanceComparison",
    "plot_distance_comparison",
    "sorted_distances",
    "SortedDistances",
    "plot_sorted_distances",
    "neighbor_overlap",
    "NeighborOverlap",
    "plot_neighbor_overlap",
    "relative_error",
    "RelativeError",
    "plot_relative_error",
    "embedding_analysis",
    "EmbeddingAnalysis",
    "plot_embedding_analysis",
    "subsample_stability",
    "SubsampleStability",
    "plot_subsample_stability",
    "procrustes_align",
    "clone_estimator",
    "runtime_profile",
    "RuntimeProfile",
    "plot_runtime_profile",
]
