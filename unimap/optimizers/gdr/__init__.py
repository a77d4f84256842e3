r"""GDR's optimizer ("Uniform UMAP", reference 002): full-batch epochs over a CSR edge list.

One epoch computes the force on every point from the positions at the start of the epoch and
then applies all of them at once. Forces are accumulated per destination: ``prange`` runs over
the rows ``i`` of the CSR matrix P and row ``i`` only ever writes its own outputs, so there are
no races and the result is bitwise the same for any number of threads.

Notation and sampling
---------------------
``u_ij = |y_i − y_j|²``, low-dimensional kernel ``w_ij = q(u_ij) = 1 / (1 + a u_ij^b)`` (its
formulas, ε and the power's floor: :mod:`unimap.lowdim.similarity_numba`).
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

Unnormalized mode (UMAP-like), ``gdr_unnormalized_epoch``
---------------------------------------------------------
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

Normalized mode (t-SNE-like), ``gdr_normalized_forces``
-------------------------------------------------------
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
samples (measured: benchmarks/results/library_notes.md, "unimap/optimizers/gdr/__init__.py").
The exact near field cuts the noise of the neighbours' repulsion, which uniform samples hit
rarely but hard. The caller forms ``4(E·A − γ·R/Ẑ)`` in
:func:`unimap.optimizers.gradient_descent.gradient_numba.gradient_step`.

Shared samples (``shared=True``, the estimator's default in this mode): one set of
``M = max(1, round(m·nnz/n))`` samples per epoch, ``k_s = bounded(hash(hash(epoch_hash, key),
s), n)``, uniform over all n points and used by every row, the row's own point counting 0
beside its neighbours. ``n/M · Σ_s [k_s ≠ i, k_s ∉ N(i)] f(k_s)`` is again unbiased, so are
``R_i``, ``z_i`` and Ẑ. Each row's estimate is as noisy as with its own samples, but the noise
is common to neighbouring points: the samples' far field pushes a neighbourhood as a whole and
barely moves its points against each other, which is what 15-NN recall measures: shared
samples reach a higher recall than per-row samples, even many more of them in more time
(measured: ``docs/gdr.md``; library_notes.md as above).

In 2-D the sums over the samples run 16 rows at a time against the samples' positions in one
small contiguous array, the rows being the lanes of the vectorized loop, and the samples that
hit the point itself or one of its neighbours are then subtracted (per-epoch hit counts,
read in the near-field loop). A shared sample costs about a tenth of a per-row sample's random
read; the exact near field is then most of an epoch (measured: library_notes.md as above).
Each lane sums its samples in order: a sum vectorized *within* a row is reassociated, and
numba's in-process JIT and its disk cache did so differently (first and later runs disagreed).

``exhaustive=True`` replaces the samples by all ``k ≠ i`` with the expected weight
(``ρ_w·S_i/(n−1)``, resp. 1): the exact force, for tests on small problems.

Pairs at distance 0 contribute no force (their direction ``y_i − y_j`` is 0; for b < 1 the
coefficient diverges but the product tends to 0 when b > 1/2); ``w = 1`` still enters ``z_i``.

Code: :mod:`~unimap.optimizers.gdr.common_numba` (the samples and the attraction loops),
:mod:`~unimap.optimizers.gdr.unnormalized_numba` (``gdr_unnormalized_epoch``; its chunked 2-D
epochs: :mod:`~unimap.optimizers.gdr.chunked_epochs_numba`) and
:mod:`~unimap.optimizers.gdr.normalized_numba` (``gdr_normalized_forces``); the drivers
:func:`unimap.optimizers.gdr.unnormalized.gdr_unnormalized` and
:func:`unimap.optimizers.gdr.normalized.gdr_normalized`, their GPU kernels in
:mod:`~unimap.optimizers.gdr.unnormalized_cuda` and :mod:`~unimap.optimizers.gdr.normalized_cuda`.
"""
