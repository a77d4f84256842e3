"""The low-dimensional kernel ``q(d) = 1 / (1 + a·d^(2b))`` shared by UMAP, t-SNE and GDR."""

from __future__ import annotations

import numpy as np

from unimap._validation import check_float

__all__ = ["find_ab_params"]


def find_ab_params(spread: float = 1.0, min_dist: float = 0.1) -> tuple[float, float]:
    """Fit ``a, b`` so that ``1/(1 + a x^(2b))`` matches UMAP's target curve.

    The target is 1 for ``x < min_dist`` and ``exp(-(x - min_dist)/spread)`` beyond, sampled
    on 300 points in ``[0, 3·spread]`` and fitted by least squares (as umap-learn does).
    For the defaults (spread=1, min_dist=0.1) this gives a ≈ 1.577, b ≈ 0.895.

    Parameters
    ----------
    spread : float > 0, default=1.0
    min_dist : float in [0, spread], default=0.1

    Returns
    -------
    a, b : float
    """
    from scipy.optimize import curve_fit

    spread = check_float(spread, "spread", 0.0, low_inclusive=False)
    min_dist = check_float(min_dist, "min_dist", 0.0)
    if min_dist > spread:
        raise ValueError(f"min_dist must be at most spread ({spread}), got {min_dist}")

    def curve(x, a, b):
        return 1.0 / (1.0 + a * x ** (2 * b))

    x = np.linspace(0, spread * 3, 300)
    y = np.where(x < min_dist, 1.0, np.exp(-(x - min_dist) / spread))
    (a, b), _ = curve_fit(curve, x, y)
    return float(a), float(b)
