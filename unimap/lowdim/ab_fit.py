"""The fit of ``a, b`` for the low-dimensional kernel ``q(d) = 1 / (1 + a·d^(2b))`` of UMAP and GDR.

The kernel itself, with its gradient coefficients and t-SNE's Student-t kernel, is written once,
for the numba loops, in :mod:`unimap.lowdim.similarity_numba`.
"""

from __future__ import annotations

import numpy as np

from unimap.runtime.validation import check_float

__all__ = ["find_ab_params", "check_curve", "check_ab_pair"]


def check_curve(min_dist: float, spread: float) -> None:
    """Raise unless ``min_dist <= spread`` (the curve ``a, b`` are fitted to needs it)."""
    if min_dist > spread:
        raise ValueError(f"min_dist must be at most spread ({spread}), got {min_dist}")


def check_ab_pair(a: float | None, b: float | None) -> None:
    """Raise unless ``a`` and ``b`` are given together or both left as None (then fitted)."""
    if (a is None) != (b is None):
        raise ValueError("a and b must be given together: pass both a and b, or neither (to "
                         "fit them from min_dist and spread)")


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
    spread = check_float(spread, "spread", 0.0, low_inclusive=False)
    min_dist = check_float(min_dist, "min_dist", 0.0)
    check_curve(min_dist, spread)
    # Fitted in units of spread, then scaled back: the same least-squares problem (x = s·t
    # gives a = a_t / s^(2b)), but the start (1, 1) stays near the answer for any spread; in
    # raw units the fit (umap-learn's too) can diverge to b < 0 for very small or large spreads.
    t = np.linspace(0, 3, 300)
    relative_min = min_dist / spread
    y = np.where(t < relative_min, 1.0, np.exp(-(t - relative_min)))
    a_t, b = _levenberg_marquardt(t, y)
    a = a_t / spread ** (2.0 * b)
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"could not fit the kernel for spread={spread}, min_dist={min_dist} "
                         f"(got a={a}, b={b}); give a and b directly")
    return float(a), float(b)


def _levenberg_marquardt(x: np.ndarray, y: np.ndarray, max_iter: int = 200) -> np.ndarray:
    """Least-squares ``a, b`` of ``1/(1 + a x^(2b))`` from the start (1, 1), as
    ``scipy.optimize.curve_fit`` does, without importing scipy.optimize, whose import would
    add to every fit's start-up (measured: benchmarks/results/architecture_notes.md). Two
    parameters: a damped Gauss-Newton step with the analytic Jacobian."""
    positive = x > 0
    log_x = np.zeros_like(x)
    log_x[positive] = np.log(x[positive])

    def residual_and_jacobian(params):
        a, b = params
        power = np.where(positive, np.exp(2.0 * b * log_x), 0.0)  # x^(2b), 0 at x = 0
        denom = 1.0 + a * power
        residual = 1.0 / denom - y
        jac = np.empty((x.size, 2))
        jac[:, 0] = -power / denom**2
        jac[:, 1] = -a * power * 2.0 * log_x / denom**2
        return residual, jac

    params = np.array([1.0, 1.0])
    damping = 1e-3
    residual, jac = residual_and_jacobian(params)
    cost = residual @ residual
    for _ in range(max_iter):
        gradient = jac.T @ residual
        hessian = jac.T @ jac
        step = np.linalg.solve(hessian + damping * np.diag(np.diag(hessian)), -gradient)
        trial = params + step
        trial_residual, trial_jac = residual_and_jacobian(trial)
        trial_cost = trial_residual @ trial_residual
        if trial_cost < cost:
            converged = cost - trial_cost <= 1e-15 * max(cost, 1e-300)
            params, residual, jac, cost = trial, trial_residual, trial_jac, trial_cost
            damping = max(damping / 10.0, 1e-12)
            if converged or np.abs(step).max() < 1e-12 * (np.abs(params).max() + 1e-12):
                break
        else:
            damping *= 10.0
            if damping > 1e12:
                break
    return params
