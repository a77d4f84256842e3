"""UMAP's optimizer: edge-sampled SGD with negative sampling, on the CPU or the GPU.

Edges are sampled in proportion to their weight (``epochs_per_sample``). On the CPU they are
grouped into vertex-disjoint colour classes (``edge_classes``) so that threads never write the
same point, which makes the result the same for any thread count; on the GPU into a few groups
whose moves are summed in fixed point (:mod:`.grouped_numba`), bitwise the same run after run.
Two entry points share the sampling plan and the epoch loop (:mod:`.common`):

- :func:`unimap.optimizers.umap_sgd.fit.umap_sgd_fit`: a fit, every point moving (the 2-D,
  2-D pooled and n-D epochs of :mod:`.epochs_numba`, densMAP's of :mod:`.densmap_numba`, a
  non-euclidean output space's of :mod:`.output_metric_numba`; the GPU's of :mod:`.epochs_cuda`
  over :mod:`.grouped_numba`);
- :func:`unimap.optimizers.umap_sgd.place.umap_sgd_place`: ``transform``, new points moved
  against the fixed embedding, row by row (called by :func:`unimap.placement.fuzzy_placement`).
"""
