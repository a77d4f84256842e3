"""The optimizers that move an embedding, one subpackage each: :mod:`.umap_sgd` (UMAP's
edge-sampled SGD, its fit and placement entries), :mod:`.gradient_descent` (the full-batch
descent of t-SNE and of GDR's normalized mode, with t-SNE's forces and ``repulsion``: exact,
Barnes-Hut, FFT) and :mod:`.gdr` (GDR's two modes). What several of them share stays here:
:mod:`.schedule` (the decaying step) and :mod:`.sampling` (pooled negative samples)."""
