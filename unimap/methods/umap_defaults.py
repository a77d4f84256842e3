"""UMAP's defaults and the checks of its parameters that involve several of them, shared with
GDR (its unnormalized mode takes UMAP's epochs, neighbours and kernel curve).
"""

from __future__ import annotations

from typing import Any

from unimap.runtime.params import InvalidParameterError
from unimap.runtime.user_warnings import warn_user

__all__ = ["umap_epochs", "capped_n_neighbors", "check_kernel_params", "check_output_metric",
           "SMALL_DATA", "DENSMAP_EXTRA_EPOCHS"]

SMALL_DATA = 10_000  # UMAP's epoch rule: 500 epochs up to this many points, else 200
DENSMAP_EXTRA_EPOCHS = 200  # umap-learn's default adds these with densmap=True


def umap_epochs(n: int) -> int:
    """UMAP's default epoch count: 500 for up to 10,000 points, else 200."""
    return 500 if n <= SMALL_DATA else 200


def capped_n_neighbors(n_neighbors: int, n: int) -> int:
    """``n_neighbors`` capped at the number of samples, with a warning."""
    if n_neighbors > n:
        warn_user(
            f"n_neighbors={n_neighbors} is larger than the number of samples ({n}); "
            f"using n_neighbors={n} (recorded in n_neighbors_)")
        return n
    return n_neighbors


def check_kernel_params(estimator: Any) -> None:
    """``min_dist <= spread``, and ``a``, ``b`` given together (UMAP and GDR)."""
    from unimap.lowdim.ab_fit import check_ab_pair, check_curve

    check_curve(estimator.min_dist, estimator.spread)
    check_ab_pair(estimator.a, estimator.b)


def check_output_metric(estimator: Any) -> None:
    """UMAP's ``output_metric`` against the other parameters (n_components, densMAP,
    ``output_metric_kwds``)."""
    if estimator.output_metric in ("euclidean", "l2"):
        return
    name = f"output_metric={estimator.output_metric!r}"
    if estimator.output_metric_kwds:
        raise InvalidParameterError(f"{name} takes no parameters, got output_metric_kwds="
                                    f"{estimator.output_metric_kwds!r}")
    if estimator.output_metric == "haversine" and estimator.n_components != 2:
        raise InvalidParameterError(f"{name} lays points out on the sphere, two angles "
                                    f"each: n_components must be 2, got "
                                    f"{estimator.n_components}")
    if estimator.densmap or estimator.output_dens:
        raise InvalidParameterError(f"densmap and output_dens measure euclidean radii; "
                                    f"{name} is not euclidean")
