r"""The low-dimensional similarity kernels of t-SNE, UMAP and GDR: each formula written once.

Student-t kernel (t-SNE: van der Maaten & Hinton 2008; its degrees of freedom α: Kobak et al.
2019, "Heavy-tailed kernels reveal a finer cluster structure in t-SNE visualisations")::

    t = 1 / (1 + d²/α),    w = t^α = (1 + d²/α)^-α,    force factor  w·t = w^((α+1)/α)

``w`` is the similarity, ``t`` the factor of ``p_ij (y_i − y_j)`` in the attraction and ``w·t``
that of ``(y_i − y_j)`` in the repulsion (``−∂w/∂d² = w·t``). α = 1 is the Cauchy kernel of
standard t-SNE: ``w = t``, no power. Float64, in the callers' type. The metrics' KL divergence
takes ``log w`` as ``−α log1p(d²/α)`` (:func:`student_t_log_weight`).

a, b kernel (UMAP: McInnes, Healy & Melville 2018), with ``u = d²``::

    q = 1 / (1 + a u^b),    g = a b u^(b−1) q = −∂ log q / ∂u

and UMAP's gradient coefficients of ``(y_i − y_j)`` (the attraction's is ``2g``), as GDR's
unnormalized mode evaluates them (:func:`gdr_attraction_coeff`, :func:`gdr_repulsion_coeff`)::

    attraction   2ab u^(b−1) / (1 + a u^b)
    repulsion    2b / ((ε + u)(1 + a u^b)),     ε = ``UMAP_EPS`` = 10⁻³

(ε keeps the repulsion finite where points coincide). a = b = 1 gives t-SNE's Cauchy kernel:
``q = g = t``. Float32, with :func:`~unimap.lowdim.fastpow_numba.fast_pow` for ``u^b``, whose
argument is raised to ``POW_FLOOR`` first (its result must be a normal float).

The metrics evaluate ``a u^b`` in float64 with the exact power (:func:`ab_term`).

UMAP's SGD evaluates the two coefficients in an order of its own (``u^b / u`` for
``u^(b−1)``, the floor added inside the power, γ folded in): :func:`sgd_attraction_coeff` and
:func:`sgd_repulsion_coeff`. Merging them with GDR's forms would move the bits of every seeded
UMAP embedding (``tests/methods/test_reference_embeddings.py``), so both orders are kept, side by
side.

All functions are ``inline="always"``: numba inlines their IR into the caller, which compiles
them with its own types and ``fastmath`` flags, so every caller keeps its exact arithmetic.
"""

from __future__ import annotations

import numba
import numpy as np

from unimap.lowdim.fastpow_numba import fast_pow

UMAP_EPS = 1e-3  # ε of UMAP's repulsion 2b / ((ε + u)(1 + a u^b))
POW_FLOOR = np.float32(1e-8)  # fast_pow's range starts here: its result must be a normal float

_EPS32 = np.float32(UMAP_EPS)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)


# -- Student-t (float64) ----------------------------------------------------------------------
@numba.njit(inline="always", cache=True)
def student_t(d2, dof):
    """``t = 1 / (1 + d²/α)``: the attraction's factor, and ``w`` itself for α = 1."""
    return 1.0 / (1.0 + d2 / dof)


@numba.njit(inline="always", cache=True)
def student_t_pair(d2, dof):
    """``(w, w·t)``: the weight ``w = t^α`` and the repulsion's force factor."""
    if dof == 1.0:  # Cauchy: d²/1 is d² exactly, so this is student_t without its division
        t = 1.0 / (1.0 + d2)
        return t, t * t
    t = student_t(d2, dof)
    w = t**dof
    return w, w * t


@numba.njit(inline="always", cache=True)
def student_t_log_weight(d2, dof):
    """``log w = −α log1p(d²/α)``, the log of :func:`student_t_pair`'s weight without its
    rounding (the metrics' KL divergence evaluates it on numpy arrays, through ``.py_func``)."""
    return -dof * np.log1p(d2 / dof)


# -- a, b kernel (float32) --------------------------------------------------------------------
@numba.njit(inline="always", cache=True)
def ab_power(u, b):
    """``u ** b`` for float32 u > 0 (exact for b = 1)."""
    if b == _ONE:
        return u
    return fast_pow(u, b)


@numba.njit(inline="always", cache=True)
def ab_kernel_unit_b(u, a):
    """:func:`ab_kernel` at b = 1, ``(q, a q)`` with ``q = 1/(1 + a u)``, for u > 0 (at u = 0
    it gives ``g = a``, harmless where g multiplies the zero direction)."""
    q = _ONE / (_ONE + a * u)
    return q, a * q


@numba.njit(inline="always", cache=True)
def ab_kernel(u, a, b):
    """``(q, g)`` with ``q = 1/(1 + a u^b)`` and ``g = a b u^(b−1) q``; ``(1, 0)`` at u = 0."""
    if u <= 0.0:
        return _ONE, np.float32(0.0)
    if b == _ONE:
        return ab_kernel_unit_b(u, a)
    ub1 = fast_pow(max(u, POW_FLOOR), b - _ONE)
    q = _ONE / (_ONE + a * ub1 * u)
    return q, a * b * ub1 * q


@numba.njit(inline="always", cache=True)
def gdr_attraction_coeff(u, a, b):
    """``2ab u^(b−1) / (1 + a u^b)`` for u > 0: UMAP's attraction coefficient in the order of
    GDR's unnormalized mode (:mod:`unimap.optimizers.gdr`)."""
    if b == _ONE:
        return _TWO * a / (_ONE + a * u)
    ub1 = fast_pow(max(u, POW_FLOOR), b - _ONE)
    return _TWO * a * b * ub1 / (_ONE + a * ub1 * u)


@numba.njit(inline="always", cache=True)
def gdr_repulsion_coeff(u, a, b, eps):
    """``2b / ((ε + u)(1 + a u^b))``, UMAP's repulsion coefficient in the order of GDR's
    unnormalized mode; finite at u = 0, where the direction it multiplies is 0.
    u is raised to ``POW_FLOOR`` (beside ε nothing changes), the start of fast_pow's range: a
    smaller floor would let u^b leave that range for b ≥ 1.3 and give coincident points a
    negative coefficient."""
    u = max(u, POW_FLOOR)
    return _TWO * b / ((eps + u) * (_ONE + a * ab_power(u, b)))


@numba.njit(inline="always", cache=True)
def ab_term(u, a, b):
    """``a u^b``, the term of ``q = 1/(1 + a u^b)``'s denominator, with the exact power: the
    float64 form of the metrics (``.py_func`` on numpy arrays in the cross-entropy's edge sum,
    numba in its all-pairs sum)."""
    return a * u**b


# -- UMAP's SGD's evaluation order (float32) --------------------------------------------------
@numba.njit(inline="always", cache=True)
def sgd_attraction_coeff(u, a, b):
    """``−2ab u^(b−1) / (1 + a u^b)`` (the sign of a step towards the other point), 0 at
    u = 0; ``u^(b−1)`` as ``(u + POW_FLOOR)^b / u``."""
    if u <= 0.0:
        return np.float32(0.0)
    pb = fast_pow(u + POW_FLOOR, b)
    return (np.float32(-2.0) * a * b * pb / u) / (a * pb + _ONE)


@numba.njit(inline="always", cache=True)
def sgd_repulsion_coeff(u, a, b, gamma):
    """``γ · 2b / ((ε + u)(1 + a u^b))``; ``POW_FLOOR`` is added inside the power only (u = 0
    with b ≥ 1 would leave fast_pow's range), beside ε it changes nothing."""
    pb = fast_pow(u + POW_FLOOR, b)
    return _TWO * gamma * b / ((_EPS32 + u) * (a * pb + _ONE))
