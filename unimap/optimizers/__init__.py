"""The optimizers that move an embedding: t-SNE's full-batch gradient descent, UMAP's
edge-sampled SGD and GDR's full-batch epochs, with their forces (``repulsion``: Barnes-Hut, FFT)."""
