"""Initial embeddings: spectral (with fallbacks; ``spectral``), PCA, random (``random_layout``), a
user array; and rescaling (``layouts``)."""

from unimap.initialization.layouts import (
    array_init,
    initialize,
    pca_init,
    rescale_to_box,
    rescale_to_std,
)
from unimap.initialization.random_layout import random_init
from unimap.initialization.spectral import spectral_init, spectral_layout

__all__ = ["initialize", "spectral_init", "spectral_layout", "pca_init", "random_init",
           "array_init", "rescale_to_box", "rescale_to_std"]
