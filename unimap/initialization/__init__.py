"""Initial embeddings: spectral (with fallbacks), PCA, random, a user array; and rescaling."""

from unimap.initialization.layouts import (
    array_init,
    initialize,
    pca_init,
    random_init,
    rescale_to_box,
    rescale_to_std,
    spectral_init,
    spectral_layout,
)

__all__ = ["initialize", "spectral_init", "spectral_layout", "pca_init", "random_init",
           "array_init", "rescale_to_box", "rescale_to_std"]
