r"""GDR ("Uniform UMAP", reference 002): full-batch epochs over a CSR edge list (numba).

One epoch computes the force on every point from the positions at the start of the epoch and
then applies all of them at once. Forces are accumulated per destination: ``prange`` runs over
the rows ``i`` of the CSR matrix P and row ``i`` only ever writes its own outputs, so there are
no races and the result is bitwise the same for any number of threads.

Notation and sampling
---------------------
``u_ij = |y_i − y_j|²``, low-dimensional kernel ``w_ij = q(u_ij) = 1 / (1 + a u_ij^b)`` (its
formulas, ε and the power's floor: :mod:`unimap._kernels.lowdim`).
Row ``i`` of P holds ``deg_i`` edges; its repulsion uses ``S_i = max(1, round(m·deg_i))``
negative samples (``m`` = ``n_negatives`` per edge), each uniform over the ``n − 1`` points
other than ``i``. The s-th sample of row i belongs to repeat ``r = s div deg_i`` of edge
``e = indptr[i] + s mod deg_i`` and is ``bounded(hash(hash(hash(mix64(seed), epoch), r), e),
n − 1)``, shifted past ``i`` (a row without edges uses the key ``e = nnz + i``). Hence
``E[Σ_s f(k_s)] = S_i/(n−1) · Σ_{k≠i} f(k)``.

With *symmetric attraction* point ``i`` is also pulled along the edges where it is the tail
(row ``i`` of Pᵀ): the attraction weight of the pair is ``π_ij = p_ij + p_ji``, otherwise
``π_ij = p_ij``. When P is symmetric the caller passes ``attr_scale = 2`` instead of Pᵀ (the
same sum, one pass).

Unnormalized mode (UMAP-like), ``umap_epoch``
---------------------------------------------
Point ``i``'s loss, with repulsion weight ``ω_i = ρ_w·S_i/(n−1)``, where ``ρ_w`` is the weight
of one sample (the estimator passes ``ρ_w = γ·p̄·ν/m``: ``p̄`` the mean edge weight of P, which
replaces UMAP's ``1 − p_ik``; γ = ``repulsion_strength``; ν = 5, so that an edge repels like
the 5 negatives UMAP draws per sampled edge, whatever the number m of draws that estimate it)::

    ℓ_i(Y) = Σ_j π_ij · (−log q(u_ij))  +  ω_i · Σ_{k≠i} ρ_ε(u_ik),
    ρ_ε'(u) = −b / ((ε + u)(1 + a u^b))          (ε = 0: ρ_0(u) = −log(1 − q(u)))

The force on ``i`` is ``F_i = −∂ℓ_i/∂y_i``::

    F_i = − Σ_j π_ij · 2ab u_ij^(b−1) / (1 + a u_ij^b) · (y_i − y_j)
          + ω_i Σ_{k≠i} 2b / ((ε + u_ik)(1 + a u_ik^b)) · (y_i − y_k),

the second sum estimated without bias by ``ρ_w`` times the sum over the ``S_i`` samples. When
P is symmetric and all ``ω_i = ω``, ``F = −∇L`` of the global loss
``L = c·Σ_{i≠j} p_ij (−log q_ij) + (ω/2)·Σ_{i≠k} ρ_ε(u_ik)`` with c = 1 (symmetric
attraction) or 1/2. The step (``ε = 10⁻³``) is ``v_i ← μ v_i + α_t·clip(F_i, ±4)``,
``y_i ← y_i + v_i``, per coordinate, with α_t decaying linearly to 0 as in UMAP.

Normalized mode (t-SNE-like), ``tsne_forces``
---------------------------------------------
P sums to 1, ``Q = w/Z`` with ``Z = Σ_{k≠l} w_kl``; E = exaggeration, γ = repulsion strength::

    L(Y) = −E·c·Σ_{i≠j} p_ij log w_ij + γ·log Z       (E = c = γ = 1: KL(P‖Q) − Σ p log p)

with c = 1 for asymmetric attraction (P symmetric) and c = 2 for symmetric attraction (any P).
With ``g_ij = a·b·u_ij^(b−1)·w_ij`` (the chain-rule factor of ``u^b`` is kept; ``g = w`` for
a = b = 1, t-SNE's Cauchy kernel), ``∂w_ij/∂y_i = −2 g_ij w_ij (y_i − y_j)`` and
``∂(−log w_ij)/∂y_i = 2 g_ij (y_i − y_j)`` give::

    ∂L/∂y_i = 4 [ E·Σ_j π_ij g_ij (y_i − y_j)  −  (γ/Z)·Σ_{k≠i} w_ik g_ik (y_i − y_k) ].

The kernel returns the attraction ``A_i = Σ_j π_ij g_ij (y_i − y_j)`` exactly. The repulsion
and Z are split into the near field ``N(i)`` (the columns of row i of P, whose w and g the
attraction loop computes anyway) and the far field, estimated from the same ``S_i`` samples,
where samples that fall into ``N(i)`` count 0 (a per-block byte array marks ``N(i)``)::

    R_i = Σ_{j∈N(i)} w_ij g_ij (y_i − y_j) + (n−1)/S_i · Σ_s [k_s ∉ N(i)] w_iks g_iks (y_i − y_ks)
    z_i = Σ_{j∈N(i)} w_ij                 + (n−1)/S_i · Σ_s [k_s ∉ N(i)] w_iks

``R_i`` and ``z_i`` are unbiased estimates of ``Σ_{k≠i} w_ik g_ik (y_i − y_k)`` and
``Σ_{k≠i} w_ik``, so ``Ẑ = Σ_i z_i`` is an unbiased estimate of Z. (One global mean
``n(n−1)·mean(w)`` over all samples would not be: rows draw different numbers of samples.)
``1/Ẑ`` carries a Jensen bias of relative order ``Var(Ẑ)/Z²``, negligible with ``Σ_i S_i``
samples (measured: Ẑ/Z within 0.5% per epoch on MNIST-5k). The exact near field cuts the
noise of the neighbours' repulsion, which uniform samples hit rarely but hard. The caller forms
``4(E·A − γ·R/Ẑ)`` in :func:`unimap._kernels.tsne_gd.gradient_step`.

Shared samples (``shared=True``, the estimator's default in this mode): one set of
``M = max(1, round(m·nnz/n))`` samples per epoch, ``k_s = bounded(hash(hash(epoch_hash, key),
s), n)``, uniform over all n points and used by every row, the row's own point counting 0
beside its neighbours. ``n/M · Σ_s [k_s ≠ i, k_s ∉ N(i)] f(k_s)`` is again unbiased, so are
``R_i``, ``z_i`` and Ẑ. Each row's estimate is as noisy as with its own samples, but the noise
is common to neighbouring points: the samples' far field pushes a neighbourhood as a whole and
barely moves its points against each other, which is what 15-NN recall measures (MNIST-70k:
0.278-0.282 over seeds with M ≈ 520 and t-SNE's steps, against 0.225 with ~130 samples per
row and 0.271 with ~780 per row and the same steps, in three times the time).

In 2-D the sums over the samples run 16 rows at a time against the samples' positions in one
small contiguous array, the rows being the lanes of the vectorized loop, and the samples that
hit the point itself or one of its neighbours are then subtracted (per-epoch hit counts,
read in the near-field loop). A shared sample costs about a tenth of a per-row sample's random
read (MNIST-70k epoch at perplexity 30 with M ≈ 520: 20-23 ms, of which ~17 ms is the exact
near field; at the default perplexity 10 with M = 1000: 9-12 ms). Each
lane sums its samples in order: a sum vectorized *within* a row is reassociated, and numba's
in-process JIT and its disk cache did so differently (first and later runs disagreed).

``exhaustive=True`` replaces the samples by all ``k ≠ i`` with the expected weight
(``ρ_w·S_i/(n−1)``, resp. 1): the exact force, for tests on small problems.

Pairs at distance 0 contribute no force (their direction ``y_i − y_j`` is 0; for b < 1 the
coefficient diverges but the product tends to 0 when b > 1/2); ``w = 1`` still enters ``z_i``.
"""

from __future__ import annotations

import numba
import numpy as np

from unimap._kernels.lowdim import (
    ab_kernel,
    ab_kernel_unit_b,
    umap_attraction_coeff,
    umap_repulsion_coeff,
)
from unimap._kernels.rng import bounded, hash_combine, mix64

_ONE = np.float32(1.0)


@numba.njit(inline="always", cache=True)
def n_samples_of_row(deg, n_negatives):
    """``S_i = max(1, round(m·deg_i))``."""
    s = np.int64(n_negatives * deg + 0.5)
    return s if s > 0 else np.int64(1)


@numba.njit(inline="always", cache=True)
def _sample_layout(indptr, i, n_negatives):
    """``(n_full, rest, base, span)``: row i's ``S_i`` samples are ``n_full`` passes over the
    edge keys ``[base, base + span)`` and one pass over ``[base, base + rest)``."""
    n = indptr.shape[0] - 1
    base = indptr[i]
    span = indptr[i + 1] - base
    count = n_samples_of_row(span, n_negatives)
    if span == 0:  # no edges: keys past the edge range, one per row
        base = indptr[n] + i
        span = np.int64(1)
    n_full = count // span
    return n_full, count - n_full * span, base, span


@numba.njit(inline="always", cache=True)
def _negative(repeat_hash, e, i, n):
    """The negative of edge key e in a repeat: uniform over the n − 1 points other than i."""
    k = bounded(hash_combine(repeat_hash, e), n - 1)
    return k + np.int64(k >= i)  # arithmetic, not a branch: k ≥ i is a coin flip


@numba.njit(inline="always", cache=True)
def _sq_dist(Y, i, j):
    d2 = np.float32(0.0)
    for c in range(Y.shape[1]):
        diff = Y[i, c] - Y[j, c]
        d2 += diff * diff
    return d2


_SHARED_KEY = np.uint64(0x5AD5)  # separates the shared samples' keys from the per-row ones


@numba.njit(inline="always", cache=True)
def shared_sample_count(nnz, n, n_negatives):
    """``M = max(1, round(m·nnz/n))``: as many as a row draws on average with per-row samples."""
    s = np.int64(n_negatives * nnz / n + 0.5)
    return s if s > 0 else np.int64(1)


@numba.njit(cache=True)
def draw_shared_samples(Y, n_samples, epoch_hash):
    """The epoch's shared samples: indices ``k_s = bounded(hash(hash(epoch_hash, key), s), n)``
    (uniform over all n points), their positions, shape (dim, M), one row per coordinate so
    that the loop over samples runs over contiguous memory, and ``hits``, shape (n,): how
    often each point was drawn."""
    n, dim = Y.shape
    ks = np.empty(n_samples, np.int64)
    positions = np.empty((dim, n_samples), np.float32)
    hits = np.zeros(n, np.int32)
    h = hash_combine(epoch_hash, _SHARED_KEY)
    for s in range(n_samples):
        k = bounded(hash_combine(h, s), n)
        ks[s] = k
        hits[k] += 1
        for c in range(dim):
            positions[c, s] = Y[k, c]
    return ks, positions, hits


# -- unnormalized mode -------------------------------------------------------------------------
@numba.njit(inline="always", cache=True, fastmath=True)
def _umap_attract_2d(Y, y0, y1, indptr, indices, data, i, a, b):
    f0 = np.float32(0.0)
    f1 = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        d0 = y0 - Y[j, 0]
        d1 = y1 - Y[j, 1]
        u = d0 * d0 + d1 * d1
        if u > 0.0:
            coef = data[e] * umap_attraction_coeff(u, a, b)
            f0 -= coef * d0
            f1 -= coef * d1
    return f0, f1


@numba.njit(inline="always", cache=True, fastmath=True)
def _umap_repel_2d(Y, y0, y1, k, a, b, eps):
    d0 = y0 - Y[k, 0]
    d1 = y1 - Y[k, 1]
    coef = umap_repulsion_coeff(d0 * d0 + d1 * d1, a, b, eps)
    return coef * d0, coef * d1


@numba.njit(inline="always", cache=True, fastmath=True)
def _umap_row_2d(Y, F, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                 attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, exhaustive):
    n = Y.shape[0]
    y0 = Y[i, 0]
    y1 = Y[i, 1]
    f0, f1 = _umap_attract_2d(Y, y0, y1, indptr, indices, data, i, a, b)
    f0 *= attr_scale
    f1 *= attr_scale
    if use_t:
        g0, g1 = _umap_attract_2d(Y, y0, y1, t_indptr, t_indices, t_data, i, a, b)
        f0 += g0
        f1 += g1
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    n_full, rest, base, span = _sample_layout(indptr, i, n_negatives)
    if exhaustive:
        for k in range(n):
            if k != i:
                g0, g1 = _umap_repel_2d(Y, y0, y1, k, a, b, eps)
                r0 += g0
                r1 += g1
        rep_weight *= np.float32((n_full * span + rest) / (n - 1))
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                g0, g1 = _umap_repel_2d(Y, y0, y1, _negative(repeat_hash, e, i, n), a, b, eps)
                r0 += g0
                r1 += g1
    F[i, 0] = f0 + rep_weight * r0
    F[i, 1] = f1 + rep_weight * r1


@numba.njit(inline="always", cache=True, fastmath=True)
def _umap_attract_nd(Y, F, i, indptr, indices, data, scale, a, b):
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        u = _sq_dist(Y, i, j)
        if u > 0.0:
            coef = scale * data[e] * umap_attraction_coeff(u, a, b)
            for c in range(Y.shape[1]):
                F[i, c] -= coef * (Y[i, c] - Y[j, c])


@numba.njit(inline="always", cache=True, fastmath=True)
def _umap_repel_nd(Y, F, i, k, weight, a, b, eps):
    coef = weight * umap_repulsion_coeff(_sq_dist(Y, i, k), a, b, eps)
    for c in range(Y.shape[1]):
        F[i, c] += coef * (Y[i, c] - Y[k, c])


@numba.njit(inline="always", cache=True, fastmath=True)
def _umap_row_nd(Y, F, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                 attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, exhaustive):
    n, dim = Y.shape
    for c in range(dim):
        F[i, c] = 0.0
    _umap_attract_nd(Y, F, i, indptr, indices, data, attr_scale, a, b)
    if use_t:
        _umap_attract_nd(Y, F, i, t_indptr, t_indices, t_data, _ONE, a, b)
    n_full, rest, base, span = _sample_layout(indptr, i, n_negatives)
    if exhaustive:
        weight = rep_weight * np.float32((n_full * span + rest) / (n - 1))
        for k in range(n):
            if k != i:
                _umap_repel_nd(Y, F, i, k, weight, a, b, eps)
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                _umap_repel_nd(Y, F, i, _negative(repeat_hash, e, i, n), rep_weight, a, b, eps)


def umap_epoch(Y, Y_out, F, V, indptr, indices, data, t_indptr, t_indices, t_data, attr_scale,
               n_negatives, rep_weight, a, b, eps, clip, lr, momentum, seed, epoch, exhaustive):
    """One unnormalized epoch: ``F`` ← forces at ``Y`` (module docstring), then with momentum
    μ, ``V ← μ·V + lr·clip(F)`` and ``Y_out ← Y + V`` (row by row, so ``Y_out`` must not be
    ``Y``).

    Parameters
    ----------
    Y, Y_out, F, V : float32 arrays of shape (n, dim); ``Y`` is only read.
    indptr (int64), indices (int32), data (float32) : CSR of P.
    t_indptr, t_indices, t_data : CSR of Pᵀ for symmetric attraction; an empty ``t_indptr``
        skips that pass.
    attr_scale : float32, factor on the row attraction (2: symmetric attraction, P = Pᵀ).
    n_negatives : float64, negative samples per edge (m).
    rep_weight : float32, weight of one negative sample.
    a, b, eps, clip, lr, momentum : float32.
    seed : uint64; epoch : int64; exhaustive : bool (see the module docstring).
    """
    kernel = _umap_epoch_2d if Y.shape[1] == 2 else _umap_epoch_nd
    kernel(Y, Y_out, F, V, indptr, indices, data, t_indptr, t_indices, t_data, attr_scale,
           n_negatives, rep_weight, a, b, eps, clip, lr, momentum, seed, epoch, exhaustive)


# The epoch kernels exist for 2-D and for other dimensions, so that a run compiles only the
# row code it uses (a first GDR run compiled both). Passing the row function as an argument
# would also compile per function, but numba's disk cache never hits for such a signature.
# The unnormalized row code is inlined into the parallel kernel: a call per row (numba passes
# each array as ~7 scalars) cost 0.25 s of 0.94 s in 200 MNIST-70k epochs, and the inlined
# kernel even compiles faster (3.5 s against 3.9 s). The normalized rows stay calls: with
# ~120 edges per row the call is amortised (no gain on MNIST-70k), and inlining them made
# the first run compile 2 s longer.
@numba.njit(inline="always", cache=True, fastmath=True)
def _momentum_step(Y, Y_out, F, V, i, clip, lr, momentum):
    for c in range(Y.shape[1]):
        g = min(max(F[i, c], -clip), clip)  # branch-free: a mispredicted clip costs more
        v = momentum * V[i, c] + lr * g
        V[i, c] = v
        Y_out[i, c] = Y[i, c] + v


@numba.njit(parallel=True, cache=True, fastmath=True)
def _umap_epoch_2d(Y, Y_out, F, V, indptr, indices, data, t_indptr, t_indices, t_data,
                   attr_scale, n_negatives, rep_weight, a, b, eps, clip, lr, momentum, seed,
                   epoch, exhaustive):
    use_t = t_indptr.shape[0] == Y.shape[0] + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    for i in numba.prange(Y.shape[0]):
        _umap_row_2d(Y, F, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                     attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, exhaustive)
        _momentum_step(Y, Y_out, F, V, i, clip, lr, momentum)


@numba.njit(parallel=True, cache=True, fastmath=True)
def _umap_epoch_nd(Y, Y_out, F, V, indptr, indices, data, t_indptr, t_indices, t_data,
                   attr_scale, n_negatives, rep_weight, a, b, eps, clip, lr, momentum, seed,
                   epoch, exhaustive):
    use_t = t_indptr.shape[0] == Y.shape[0] + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    for i in numba.prange(Y.shape[0]):
        _umap_row_nd(Y, F, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                     attr_scale, n_negatives, rep_weight, a, b, eps, epoch_hash, exhaustive)
        _momentum_step(Y, Y_out, F, V, i, clip, lr, momentum)


# -- normalized mode ---------------------------------------------------------------------------
@numba.njit(inline="always", cache=True, fastmath=True)
def _tsne_near_2d(Y, y0, y1, indptr, indices, data, i, a, b, marks):
    """Row i's edges: attraction ``Σ p g d``, exact near-field repulsion ``Σ w g d`` and
    ``Σ w``; marks the neighbours in ``marks``."""
    f0 = np.float32(0.0)
    f1 = np.float32(0.0)
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    z = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        if j == i:
            continue
        marks[j] = 1
        d0 = y0 - Y[j, 0]
        d1 = y1 - Y[j, 1]
        w, g = ab_kernel(d0 * d0 + d1 * d1, a, b)
        z += w
        pg = data[e] * g
        wg = w * g
        f0 += pg * d0
        f1 += pg * d1
        r0 += wg * d0
        r1 += wg * d1
    return f0, f1, r0, r1, z


@numba.njit(inline="always", cache=True, fastmath=True)
def _tsne_attract_2d(Y, y0, y1, indptr, indices, data, i, a, b):
    f0 = np.float32(0.0)
    f1 = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        d0 = y0 - Y[j, 0]
        d1 = y1 - Y[j, 1]
        u = d0 * d0 + d1 * d1
        if u > 0.0:
            coef = data[e] * ab_kernel(u, a, b)[1]
            f0 += coef * d0
            f1 += coef * d1
    return f0, f1


@numba.njit(inline="always", cache=True, fastmath=True)
def _tsne_far_2d(Y, y0, y1, k, a, b, marks):
    """``(w, w g d0, w g d1)`` of the pair (i, k), or zeros when k is a neighbour of i."""
    d0 = y0 - Y[k, 0]
    d1 = y1 - Y[k, 1]
    w, g = ab_kernel(d0 * d0 + d1 * d1, a, b)
    w = w * np.float32(1 - marks[k])
    coef = w * g
    return w, coef * d0, coef * d1


@numba.njit(inline="always", cache=True, fastmath=True)
def _store_attraction_2d(Y, A, i, y0, y1, f0, f1, t_indptr, t_indices, t_data, use_t,
                         attr_scale, a, b):
    """``A[i]`` ← ``attr_scale·(f0, f1)`` plus, with symmetric attraction, the pull along the
    edges where i is the tail (row i of Pᵀ)."""
    f0 *= attr_scale
    f1 *= attr_scale
    if use_t:
        g0, g1 = _tsne_attract_2d(Y, y0, y1, t_indptr, t_indices, t_data, i, a, b)
        f0 += g0
        f1 += g1
    A[i, 0] = f0
    A[i, 1] = f1


_TILE = 16  # rows per shared-sample tile: the lanes of the vectorized loop

# Fast-math without reassociation: the tile loop's lanes are rows, each summing its samples in
# order, so the result does not depend on the vector width or unrolling LLVM picks. (A sum
# over the samples inside one row vectorizes only by reassociating it, and the in-process JIT
# and the disk cache's copy of a caller reassociated it differently: first and later runs gave
# different embeddings for one seed.)
_LANE_MATH = {"nnan", "ninf", "nsz", "arcp", "contract", "afn"}


@numba.njit(cache=True, fastmath=_LANE_MATH, error_model="numpy")
def _shared_far_tile_2d(tile, positions, a, b):
    """``tile[2:5, t]`` ← ``Σ_s (w, w g d0, w g d1)`` between the point ``tile[0:2, t]`` and
    every shared sample (its own point and its neighbours included: the caller subtracts
    them). ``error_model="numpy"``: Python's zero-division check would stop the vectorizer."""
    ty0 = tile[0]
    ty1 = tile[1]
    tz = tile[2]
    tr0 = tile[3]
    tr1 = tile[4]
    for t in range(_TILE):
        tz[t] = 0.0
        tr0[t] = 0.0
        tr1[t] = 0.0
    p0 = positions[0]
    p1 = positions[1]
    if b == _ONE:  # w = 1/(1 + a u), g = a w; u = 0 needs no branch (its d is 0)
        for s in range(p0.shape[0]):
            q0 = p0[s]
            q1 = p1[s]
            for t in range(_TILE):
                d0 = ty0[t] - q0
                d1 = ty1[t] - q1
                w = _ONE / (_ONE + a * (d0 * d0 + d1 * d1))
                tz[t] += w
                coef = a * w * w
                tr0[t] += coef * d0
                tr1[t] += coef * d1
    else:
        for s in range(p0.shape[0]):
            q0 = p0[s]
            q1 = p1[s]
            for t in range(_TILE):
                d0 = ty0[t] - q0
                d1 = ty1[t] - q1
                w, g = ab_kernel(d0 * d0 + d1 * d1, a, b)
                tz[t] += w
                coef = w * g
                tr0[t] += coef * d0
                tr1[t] += coef * d1


@numba.njit(inline="always", cache=True, fastmath=True)
def _shared_near_2d(Y, y0, y1, indptr, indices, data, i, a, b, hits, unit_b):
    """Row i's sums over its edges (attraction; exact near-field repulsion and z; the shared
    samples that hit a neighbour): ``(f0, f1, n0, n1, z_near, hit_z, hit_r0, hit_r1)``.
    ``unit_b`` (a constant at each call) selects ``1/(1 + a u)`` without ab_kernel's two
    branches per edge: MNIST-70k, 3.1M edges, near field and attraction 7.5 -> 6.1 ms per
    epoch, the default epoch 10.5 -> 9.2 ms (``benchmarks/gdr_epoch.py``)."""
    f0 = np.float32(0.0)
    f1 = np.float32(0.0)
    n0 = np.float32(0.0)
    n1 = np.float32(0.0)
    z_near = np.float32(0.0)
    hit_z = np.float32(hits[i])
    hit_r0 = np.float32(0.0)
    hit_r1 = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        if j == i:
            continue
        d0 = y0 - Y[j, 0]
        d1 = y1 - Y[j, 1]
        if unit_b:  # at u = 0 the direction is 0: g's value there does not matter
            w, g = ab_kernel_unit_b(d0 * d0 + d1 * d1, a)
        else:
            w, g = ab_kernel(d0 * d0 + d1 * d1, a, b)
        pg = data[e] * g
        wg = w * g
        f0 += pg * d0
        f1 += pg * d1
        z_near += w
        n0 += wg * d0
        n1 += wg * d1
        c = np.float32(hits[j])
        hit_z += c * w
        hit_r0 += c * wg * d0
        hit_r1 += c * wg * d1
    return f0, f1, n0, n1, z_near, hit_z, hit_r0, hit_r1


@numba.njit(inline="always", cache=True, fastmath=True)
def _tsne_shared_row_2d(Y, A, R, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                        attr_scale, a, b, hits, z_all, r0_all, r1_all, scale):
    """Row i with shared samples whose sums over all samples are ``(z_all, r0_all, r1_all)``:
    ``A[i]`` ← attraction, ``R[i]`` ← repulsion; returns ``z_i``. The samples that hit the
    point itself (w = 1, d = 0) or a neighbour (exact in the near field) are subtracted."""
    y0 = Y[i, 0]
    y1 = Y[i, 1]
    # t-SNE's kernel (b = 1) gets a loop of its own, free of ab_kernel's branches
    if b == _ONE:
        f0, f1, n0, n1, z_near, hit_z, hit_r0, hit_r1 = _shared_near_2d(
            Y, y0, y1, indptr, indices, data, i, a, b, hits, True)
    else:
        f0, f1, n0, n1, z_near, hit_z, hit_r0, hit_r1 = _shared_near_2d(
            Y, y0, y1, indptr, indices, data, i, a, b, hits, False)
    _store_attraction_2d(Y, A, i, y0, y1, f0, f1, t_indptr, t_indices, t_data, use_t,
                         attr_scale, a, b)
    R[i, 0] = n0 + (r0_all - hit_r0) * scale
    R[i, 1] = n1 + (r1_all - hit_r1) * scale
    return z_near + (z_all - hit_z) * scale


@numba.njit(inline="always", cache=True, fastmath=True)
def _tsne_attract_near_2d(Y, A, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                          attr_scale, a, b, marks):
    """``A[i]`` ← attraction; returns ``(y0, y1, n0, n1, z_near)``: the point, its exact
    near-field repulsion and ``Σ w`` over its neighbours (marked in ``marks``)."""
    y0 = Y[i, 0]
    y1 = Y[i, 1]
    f0, f1, n0, n1, z_near = _tsne_near_2d(Y, y0, y1, indptr, indices, data, i, a, b, marks)
    _store_attraction_2d(Y, A, i, y0, y1, f0, f1, t_indptr, t_indices, t_data, use_t,
                         attr_scale, a, b)
    return y0, y1, n0, n1, z_near


@numba.njit(cache=True, fastmath=True)
def _tsne_row_2d(Y, A, R, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                 attr_scale, n_negatives, a, b, epoch_hash, exhaustive, marks):
    n = Y.shape[0]
    y0, y1, n0, n1, z_near = _tsne_attract_near_2d(Y, A, i, indptr, indices, data, t_indptr,
                                                   t_indices, t_data, use_t, attr_scale, a, b,
                                                   marks)
    z = np.float32(0.0)
    r0 = np.float32(0.0)
    r1 = np.float32(0.0)
    n_full, rest, base, span = _sample_layout(indptr, i, n_negatives)
    if exhaustive:
        for k in range(n):
            if k != i:
                w, g0, g1 = _tsne_far_2d(Y, y0, y1, k, a, b, marks)
                z += w
                r0 += g0
                r1 += g1
        scale = np.float32(1.0)
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                k = _negative(repeat_hash, e, i, n)
                w, g0, g1 = _tsne_far_2d(Y, y0, y1, k, a, b, marks)
                z += w
                r0 += g0
                r1 += g1
        scale = np.float32((n - 1) / (n_full * span + rest))
    R[i, 0] = n0 + r0 * scale
    R[i, 1] = n1 + r1 * scale
    return z_near + z * scale


@numba.njit(inline="always", cache=True, fastmath=True)
def _tsne_attract_nd(Y, A, i, indptr, indices, data, scale, a, b):
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        u = _sq_dist(Y, i, j)
        if u > 0.0:
            coef = scale * data[e] * ab_kernel(u, a, b)[1]
            for c in range(Y.shape[1]):
                A[i, c] += coef * (Y[i, c] - Y[j, c])


@numba.njit(inline="always", cache=True, fastmath=True)
def _tsne_repel_nd(Y, R, i, k, a, b, weight):
    w, g = ab_kernel(_sq_dist(Y, i, k), a, b)
    w *= weight
    coef = w * g
    for c in range(Y.shape[1]):
        R[i, c] += coef * (Y[i, c] - Y[k, c])
    return w


@numba.njit(cache=True, fastmath=True)
def _tsne_row_nd(Y, A, R, i, indptr, indices, data, t_indptr, t_indices, t_data, use_t,
                 attr_scale, n_negatives, a, b, epoch_hash, exhaustive, marks, shared_k):
    n, dim = Y.shape
    for c in range(dim):
        A[i, c] = 0.0
        R[i, c] = 0.0
    _tsne_attract_nd(Y, A, i, indptr, indices, data, attr_scale, a, b)
    if use_t:
        _tsne_attract_nd(Y, A, i, t_indptr, t_indices, t_data, _ONE, a, b)
    z_near = np.float32(0.0)
    for e in range(indptr[i], indptr[i + 1]):  # near field, exact (R is then scaled back)
        j = indices[e]
        if j != i:
            marks[j] = 1
    n_full, rest, base, span = _sample_layout(indptr, i, n_negatives)
    n_shared = shared_k.shape[0]
    if exhaustive:
        scale = np.float32(1.0)
    elif n_shared > 0:
        scale = np.float32(n / n_shared)
    else:
        scale = np.float32((n - 1) / (n_full * span + rest))
    inv = _ONE / scale
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        if j != i:
            z_near += _tsne_repel_nd(Y, R, i, j, a, b, inv)
    z = np.float32(0.0)
    if exhaustive:
        for k in range(n):
            if k != i:
                z += _tsne_repel_nd(Y, R, i, k, a, b, np.float32(1 - marks[k]))
    elif n_shared > 0:  # read from Y: only the 2-D loop gains from the contiguous copy
        for s in range(n_shared):
            k = shared_k[s]
            z += _tsne_repel_nd(Y, R, i, k, a, b, np.float32(1 - marks[k]) * np.float32(k != i))
    else:
        for r in range(n_full + 1):
            stop = base + (span if r < n_full else rest)
            repeat_hash = hash_combine(epoch_hash, r)
            for e in range(base, stop):
                k = _negative(repeat_hash, e, i, n)
                z += _tsne_repel_nd(Y, R, i, k, a, b, np.float32(1 - marks[k]))
    for c in range(dim):
        R[i, c] *= scale
    return z_near * scale + z * scale


def tsne_forces(Y, A, R, z_rows, all_marks, indptr, indices, data, t_indptr, t_indices, t_data,
                attr_scale, n_negatives, a, b, seed, epoch, exhaustive, shared):
    """Normalized-mode forces: ``A`` ← attraction, ``R`` ← repulsion estimate, ``z_rows`` ←
    per-row estimates of ``Σ_{k≠i} w_ik`` (see the module docstring); the caller forms
    ``4(E·A − γ·R/Σz)``.

    Parameters
    ----------
    Y, A, R : float32 arrays of shape (n, dim); z_rows : float64 array of shape (n,).
    all_marks : uint8 array of shape (n_blocks, n), all zero: one row of neighbour marks per
        block of rows (blocks run in parallel; more blocks than threads balance the load; the
        result does not depend on their number). Left zero.
    indptr (int64), indices (int32, sorted or not), data (float32) : CSR of P; t_* : of Pᵀ,
        or empty.
    attr_scale : float32; n_negatives : float64; a, b : float32; seed : uint64;
    epoch : int64; exhaustive : bool.
    shared : bool
        Draw ``M = shared_sample_count(nnz, n, n_negatives)`` samples for the epoch and use
        them for every row (see the module docstring) instead of each row's own samples.
    """
    kernel = _tsne_forces_2d if Y.shape[1] == 2 else _tsne_forces_nd
    kernel(Y, A, R, z_rows, all_marks, indptr, indices, data, t_indptr, t_indices, t_data,
           attr_scale, n_negatives, a, b, seed, epoch, exhaustive, shared)


@numba.njit(parallel=True, cache=True, fastmath=True)
def _tsne_forces_2d(Y, A, R, z_rows, all_marks, indptr, indices, data, t_indptr, t_indices,
                    t_data, attr_scale, n_negatives, a, b, seed, epoch, exhaustive, shared):
    n = Y.shape[0]
    n_blocks = all_marks.shape[0]
    use_t = t_indptr.shape[0] == n + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    shared = shared and not exhaustive
    n_shared = shared_sample_count(indptr[n], n, n_negatives) if shared else 0
    positions, hits = draw_shared_samples(Y, n_shared, epoch_hash)[1:]
    scale = np.float32(n / max(n_shared, 1))
    # One tile per block, allocated here: rows 0-4 are used, row 5 keeps blocks' tiles 64
    # bytes apart, so two threads never write to one cache line. (Tiles allocated inside the
    # loop sometimes came from one cache line: on 2 threads the far field then ran at half the
    # speed of one, in some processes and not others, depending on where malloc put them.)
    tiles = np.empty((n_blocks if shared else 0, 6, _TILE), np.float32)
    for block in numba.prange(n_blocks):
        lo = block * n // n_blocks
        hi = (block + 1) * n // n_blocks
        if shared:
            tile = tiles[block]
            for start in range(lo, hi, _TILE):
                stop = min(start + _TILE, hi)
                for t in range(_TILE):  # a short last tile repeats its last row
                    k = min(start + t, stop - 1)
                    tile[0, t] = Y[k, 0]
                    tile[1, t] = Y[k, 1]
                _shared_far_tile_2d(tile, positions, a, b)
                for i in range(start, stop):
                    t = i - start
                    z_rows[i] = _tsne_shared_row_2d(Y, A, R, i, indptr, indices, data,
                                                    t_indptr, t_indices, t_data, use_t,
                                                    attr_scale, a, b, hits, tile[2, t],
                                                    tile[3, t], tile[4, t], scale)
            continue
        row_marks = all_marks[block]
        for i in range(lo, hi):
            z_rows[i] = _tsne_row_2d(Y, A, R, i, indptr, indices, data, t_indptr, t_indices,
                                     t_data, use_t, attr_scale, n_negatives, a, b, epoch_hash,
                                     exhaustive, row_marks)
            for e in range(indptr[i], indptr[i + 1]):
                row_marks[indices[e]] = 0


@numba.njit(parallel=True, cache=True, fastmath=True)
def _tsne_forces_nd(Y, A, R, z_rows, all_marks, indptr, indices, data, t_indptr, t_indices,
                    t_data, attr_scale, n_negatives, a, b, seed, epoch, exhaustive, shared):
    n = Y.shape[0]
    n_blocks = all_marks.shape[0]
    use_t = t_indptr.shape[0] == n + 1
    epoch_hash = hash_combine(mix64(np.uint64(seed)), epoch)
    n_shared = shared_sample_count(indptr[n], n, n_negatives) if shared else 0
    shared_k = draw_shared_samples(Y, n_shared, epoch_hash)[0]
    for block in numba.prange(n_blocks):
        row_marks = all_marks[block]
        for i in range(block * n // n_blocks, (block + 1) * n // n_blocks):
            z_rows[i] = _tsne_row_nd(Y, A, R, i, indptr, indices, data, t_indptr, t_indices,
                                     t_data, use_t, attr_scale, n_negatives, a, b, epoch_hash,
                                     exhaustive, row_marks, shared_k)
            for e in range(indptr[i], indptr[i + 1]):
                row_marks[indices[e]] = 0
