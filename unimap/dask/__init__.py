"""Past one machine: ``GDR(normalized=False).fit`` of a ``dask.array`` on its cluster,
``transform`` of a ``dask.array``, fit-a-sample-then-place-everything, and the kNN graph of a
dask array built on the cluster (docs/dask.md).
"""

from unimap.dask.fit import ClusterFit, fit_on_cluster
from unimap.dask.knn import knn_graph, knn_graph_recall
from unimap.dask.knn_cells import DaskKNNGraph
from unimap.dask.sample import (
    Moments,
    SamplePlacement,
    fit_sample_transform,
    sample_rows,
    scatter_moments,
)
from unimap.dask.transform import is_dask_collection

__all__ = ["ClusterFit", "DaskKNNGraph", "Moments", "SamplePlacement", "fit_on_cluster",
           "fit_sample_transform", "is_dask_collection", "knn_graph", "knn_graph_recall",
           "sample_rows", "scatter_moments"]
