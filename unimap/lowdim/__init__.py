"""The low-dimensional kernel q(d) of t-SNE, UMAP and GDR: its formulas (``similarity_numba``),
the fast power they use, and the fit of UMAP's a, b (``ab_fit``)."""
