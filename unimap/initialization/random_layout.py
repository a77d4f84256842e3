"""The random start: uniform in a box (UMAP) or normal with a small standard deviation
(t-SNE); also the fallback of the spectral layout."""

from __future__ import annotations

import numpy as np

__all__ = ["random_init"]


def random_init(n_samples: int, n_components: int, seed: int, scale: float = 10.0,
                distribution: str = "uniform") -> np.ndarray:
    """Uniform in ``[-scale, scale]`` (UMAP) or normal with std ``scale`` (t-SNE)."""
    rng = np.random.default_rng(seed)
    if distribution == "uniform":
        Y = rng.uniform(-scale, scale, size=(n_samples, n_components))
    else:
        Y = rng.normal(scale=scale, size=(n_samples, n_components))
    return Y.astype(np.float32)
