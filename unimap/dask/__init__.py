"""Past one machine: ``transform`` of a ``dask.array``, fit-a-sample-then-place-everything,
and the kNN graph of a dask array built on the cluster (docs/dask.md).
"""

from unimap.dask.transform import (
    DaskKNNGraph,
    Moments,
    SamplePlacement,
    fit_sample_transform,
    is_dask_collection,
    knn_graph,
    knn_graph_recall,
    sample_rows,
    scatter_moments,
)

__all__ = ["DaskKNNGraph", "Moments", "SamplePlacement", "fit_sample_transform",
           "is_dask_collection", "knn_graph", "knn_graph_recall", "sample_rows",
           "scatter_moments"]
