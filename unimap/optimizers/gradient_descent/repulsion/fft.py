"""t-SNE's all-pairs repulsion by FFT-accelerated interpolation (FIt-SNE).

Linderman et al., "Fast interpolation-based t-SNE for improved visualization of single-cell
RNA-seq data", Nature Methods 2019; the grid choices follow openTSNE. For the heavy-tailed
kernel ``w_ij = (1 + |y_i - y_j|^2 / dof)^-dof`` we need, per point,

    forces_i = sum_{j != i} w_ij^((dof+1)/dof) (y_i - y_j)   and   Z = sum_{i != j} w_ij.

Both are sums of a smooth translation-invariant kernel times point charges. The bounding square
of the embedding is cut into ``nb`` boxes per dimension with ``p`` equispaced Lagrange nodes per
box and dimension; charges ``(1, y - c)`` are interpolated onto the nodes, convolved with the
kernels on the node grid by FFT (the kernel's circulant embedding of twice the size), and the
node potentials interpolated back: ``forces_i = (y_i - c) phi_0(i) - phi_1(i)`` (c: grid centre,
which keeps the charges small and the cancellation mild).

Cost per call: 3 forward + 3 inverse real FFTs of the (2 nb p)^d grid for the force kernel
``w^((dof+1)/dof)`` and charges ``1, y_1, .., y_d``, plus one DCT-I per kernel for the kernel
spectra (both even, so the DCT-I of a quadrant *is* the FFT of the circulant embedding, at a
quarter of the size). Z needs no inverse FFT: ``sum_i phi_Z(i) = <q_0, K_Z * q_0>`` is summed
in frequency space (Parseval). This is exact in the limit of fine grids for every ``dof``
(openTSNE's ``dof == 1`` trick of the single kernel ``w^2`` with the charge ``|y|^2`` would
also need 4 FFTs each way and loses digits to cancellation), and costs the same for all dof.
A call, most of it FFTs, is faster than openTSNE's (measured, with the accuracy below:
benchmarks/results/library_notes.md, "unimap/optimizers/gradient_descent/repulsion/fft.py").

Accuracy at the default grid is a little better than openTSNE's with the same grid; the error
is the third-order interpolation's and falls ~8x per halving of ``ints_in_interval``. The grids
are float64: in float32 the FFTs run faster, but the roundoff, relative to the largest
potentials, swamped the small forces on isolated points.

Grid size: ``nb = max(min_num_intervals, ceil(span / ints_in_interval))`` per dimension, rounded
up to a 2-3-5-smooth number for the FFT, where ``span`` is the larger side of the bounding box.
It grows linearly with the embedding's span, so FFT time and memory grow like span^2 in 2-D
(~27 MB at span 100). In 2-D the grid is capped at ``MAX_NODES_2D`` nodes per dimension (500
boxes at p = 3, span 500 at the default box width): beyond that the boxes widen instead, and
accuracy degrades gracefully, so a single exploding point cannot allocate gigabytes (the
buffers take ~0.5 GB at the cap).

Determinism: the result is bitwise identical for any numba thread count (see
:mod:`unimap.optimizers.gradient_descent.repulsion.fft_numba`; pocketfft's threads split independent
1-D transforms), with or without a workspace.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba
import numpy as np
import scipy.fft as sfft

from unimap.optimizers.gradient_descent.repulsion import fft_numba as _k

MAX_NODES_2D = 1500  # interpolation nodes per dimension, 2-D (grid of FFT size (2*1500)^2)
MAX_NODES_1D = 1 << 20  # interpolation nodes, 1-D (memory is no concern there)
N_SCATTER_GROUPS = 64  # groups of box rows in the parallel scatter; only load balancing


def grid_bytes(n_samples: int) -> int:
    """The 2-D FFT workspace of a t-SNE fit of ``n_samples`` points (:func:`_convolve_2d`),
    for the memory estimate: 224 bytes per node squared. The grid follows the embedding's
    span, which is not known before the fit; t-SNE spans grow about like sqrt(n) (MNIST-70k:
    about 200), and the grid is capped at ``MAX_NODES_2D``."""
    nodes = min(MAX_NODES_2D, 3 * max(50, int(0.75 * n_samples**0.5) + 1))
    return 224 * nodes * nodes


class FFTWorkspace:
    """Buffers that :func:`fft_repulsion` reuses from one call to the next.

    A 70,000-point embedding of span 100 needs ~27 MB of grids and point arrays per call;
    allocating them afresh made the kernel touch new pages every call, a measurable share of
    its time (page faults are dear in VMs; measured: library_notes.md as in the module
    docstring). An optimiser keeps one workspace per run (and per
    thread) and passes it to every call; buffers are replaced when the grid size changes.
    """

    __slots__ = ("_arrays",)

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: type = np.float64,
            zeros: bool = False) -> np.ndarray:
        """The buffer ``name`` with this shape and dtype (new, and zeroed if ``zeros``, when
        the stored one differs; otherwise with whatever the last call left in it)."""
        a = self._arrays.get(name)
        if a is None or a.shape != shape or a.dtype != dtype:
            self._arrays.pop(name, None)  # free the old one first
            a = np.zeros(shape, dtype) if zeros else np.empty(shape, dtype)
            self._arrays[name] = a
        return a


def _forward_2d(grid: np.ndarray, spec: np.ndarray, workers: int, pp) -> None:
    """``spec`` (C, L, m+1) = rfft2 of ``grid`` (C, m, L), zero-padded to (C, L, L).

    One axis at a time, skipping the transforms of the all-zero padding rows (faster than
    ``rfftn(s=(L, L))``; measured: library_notes.md as in the module docstring). ``pp``:
    pocketfft's binding (``_raw_pocketfft``) or None.
    """
    m = grid.shape[1]
    spec[:, m:] = 0.0
    if pp is not None:
        pp.r2c(grid, (2,), True, 0, spec[:, :m], workers)
        pp.c2c(spec, (1,), True, 0, spec, workers)
    else:
        spec[:, :m] = sfft.rfft(grid, axis=2, workers=workers)
        spec[...] = sfft.fft(spec, axis=1, workers=workers, overwrite_x=True)


def _inverse_2d(spec: np.ndarray, pot: np.ndarray, workers: int, pp) -> None:
    """``pot`` (C, m, L) = rows ``:m`` of irfft2 of ``spec`` (C, L, m+1); ``spec`` is consumed.

    Only the first ``m`` rows (the grid nodes) are transformed along the last axis (faster than
    ``irfftn(s=(L, L))`` and slicing; measured: library_notes.md as in the module docstring).
    """
    m, L = pot.shape[1], pot.shape[2]
    if pp is not None:
        pp.c2c(spec, (1,), False, 2, spec, workers)
        pp.c2r(spec[:, :m], (2,), L, False, 2, pot, workers)
    else:
        spec[...] = sfft.ifft(spec, axis=1, workers=workers, overwrite_x=True)
        pot[...] = sfft.irfft(spec[:, :m], n=L, axis=2, workers=workers)


@functools.cache
def _raw_pocketfft():
    """scipy's pocketfft binding, whose transforms write into given arrays, or ``None``.

    ``scipy.fft``'s public functions always allocate their output (and a padded copy of the
    input); the binding lets the 2-D convolution run inside the workspace with no allocation.
    It is private API, so it is checked once here against the public functions, and the public
    ones are used if it is missing, fails or disagrees.
    """
    try:
        from scipy.fft._pocketfft import pypocketfft as pp

        grid = np.zeros((2, 3, 6))
        grid[:, :, :3] = np.arange(18.0).reshape(2, 3, 3) ** 1.5
        spec = np.empty((2, 6, 4), dtype=np.complex128)
        _forward_2d(grid, spec, 1, pp)
        ok = np.allclose(spec, sfft.rfftn(grid, s=(6, 6), axes=(1, 2)))
        pot = np.empty((2, 3, 6))
        _inverse_2d(spec, pot, 1, pp)
        ok = ok and np.allclose(pot, grid)
    except Exception:  # any failure means: use the public API
        return None
    return pp if ok else None


def _n_boxes(span: float, p: int, min_num_intervals: int, ints_in_interval: float,
             max_nodes: int) -> int:
    nb = max(int(min_num_intervals), math.ceil(span / ints_in_interval))
    cap = max(1, max_nodes // p)
    if nb >= cap:
        return cap
    return min(sfft.next_fast_len(nb, real=True), cap)


def fft_repulsion(Y: np.ndarray, dof: float = 1.0, n_interpolation_points: int = 3,
                  min_num_intervals: int = 50, ints_in_interval: float = 1.0, *,
                  workspace: FFTWorkspace | None = None) -> tuple[np.ndarray, float]:
    """All-pairs t-SNE repulsion and normalisation by FFT-accelerated interpolation.

    Parameters
    ----------
    Y : ndarray of shape (n, d), d in {1, 2}
        The embedding (converted to C-contiguous float64).
    dof : float
        Degrees of freedom of the kernel ``w = (1 + r^2 / dof)^-dof`` (1: Cauchy, t-SNE's).
    n_interpolation_points : int
        Lagrange nodes per box and dimension.
    min_num_intervals : int
        Least number of boxes per dimension.
    ints_in_interval : float
        Box width aimed at (in embedding units): ``nb = max(min_num_intervals,
        ceil(span / ints_in_interval))`` per dimension, rounded up to an FFT-friendly size and
        capped at ``MAX_NODES_2D // n_interpolation_points`` in 2-D.
    workspace : FFTWorkspace, optional
        Buffers to reuse across calls (faster: see :class:`FFTWorkspace`); the result does not
        depend on it.

    Returns
    -------
    forces : ndarray of shape (n, d), float64
        ``sum_{j != i} w_ij^((dof + 1) / dof) (y_i - y_j)``; t-SNE's repulsive gradient is
        ``-4 * forces / z``.
    z : float
        ``sum_{i != j} w_ij``.

    Raises
    ------
    ValueError
        If ``Y`` is not (n, 1) or (n, 2), has fewer than 2 rows or non-finite values, or a
        parameter is out of range.
    """
    Y, lo, hi = _checked_inputs(Y, dof, n_interpolation_points, min_num_intervals,
                                ints_in_interval)
    n, dim = Y.shape
    p = int(n_interpolation_points)
    ws = FFTWorkspace() if workspace is None else workspace
    center = 0.5 * (lo + hi)
    span = float((hi - lo).max())
    if span == 0.0:  # all points coincide: any box works, forces are exactly 0
        span = 1.0
    elif not math.isfinite(span):
        raise ValueError("the embedding's span overflows float64")
    max_nodes = MAX_NODES_2D if dim == 2 else MAX_NODES_1D
    nb = _n_boxes(span, p, min_num_intervals, ints_in_interval, max_nodes)
    grid = _Grid(center, center - 0.5 * span, span / nb, nb, p)
    order, row_ptr = _k.sort_by_box(Y, grid.origin, grid.width, nb)
    groups = _k.balanced_row_groups(row_ptr, min(N_SCATTER_GROUPS, nb))
    sorted_points = (order, row_ptr, groups, ws.get("yc", (n, dim)),
                     ws.get("box", (n, dim), np.int64), ws.get("weights", (n, dim, p)))
    forces = np.empty((n, dim))
    convolve = _convolve_2d if dim == 2 else _convolve_1d
    z_all = convolve(Y, grid, sorted_points, float(dof), ws, forces)
    return forces, float(z_all) - n


class _Grid(NamedTuple):
    """The interpolation grid: ``nb`` boxes of ``width`` per dimension from ``origin``, ``p``
    nodes per box (``m = nb p`` nodes per dimension, FFT length ``2 m``)."""

    center: np.ndarray
    origin: np.ndarray
    width: float
    nb: int
    p: int


def _checked_inputs(Y, dof, p, min_num_intervals, ints_in_interval):
    """``Y`` as C-contiguous float64 and its bounds, or a ValueError naming the problem."""
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[1] not in (1, 2):
        raise ValueError(f"Y must have shape (n, 1) or (n, 2), got {Y.shape}")
    if Y.shape[0] < 2:
        raise ValueError(f"need at least 2 points, got {Y.shape[0]}")
    if not dof > 0 or not math.isfinite(dof):
        raise ValueError(f"dof must be positive, got {dof}")
    if int(p) < 1 or int(min_num_intervals) < 1 or not ints_in_interval > 0:
        raise ValueError("n_interpolation_points and min_num_intervals must be >= 1 and "
                         "ints_in_interval > 0")
    lo, hi, finite = _k.bounds(Y)
    if not finite:
        raise ValueError("Y contains non-finite values")
    return Y, lo, hi


def _convolve_2d(Y, g, sorted_points, dof, ws, forces) -> float:
    """Scatter, FFT convolution and gather on the 2-D grid; fills ``forces``, returns
    ``sum_i phi_Z(i)`` (Z plus the n self-terms)."""
    order, row_ptr, groups, yc, box, weights = sorted_points
    workers = numba.get_num_threads()
    m = g.nb * g.p
    L = 2 * m  # circulant embedding
    # Columns m..L-1 are the FFT's zero padding: zeroed once here, never written.
    grid = ws.get("grid", (3, m, L), zeros=True)
    kq = ws.get("kq", (2, m + 1, m + 1))
    _k.scatter_2d(Y, g.center, g.origin, g.width, g.nb, order, row_ptr, groups, yc, box,
                  weights, grid, g.width / g.p, dof, kq)
    kspec = sfft.dctn(kq, type=1, axes=(1, 2), workers=workers, overwrite_x=True)
    spec = ws.get("spec", (3, L, m + 1), np.complex128)
    pp = _raw_pocketfft()
    _forward_2d(grid, spec, workers, pp)
    z_all = _k.apply_kernels_2d(spec, kspec, spec)
    pot = ws.get("pot", (3, m, L))
    _inverse_2d(spec, pot, workers, pp)
    _k.gather_forces_2d(yc, order, box, weights, pot, forces)
    return z_all


def _convolve_1d(Y, g, sorted_points, dof, ws, forces) -> float:
    """The 1-D counterpart of :func:`_convolve_2d` (no workspace: 1-D grids are small)."""
    order, row_ptr, groups, yc, box, weights = sorted_points
    workers = numba.get_num_threads()
    m = g.nb * g.p
    L = 2 * m
    grid = np.empty((2, m))
    _k.scatter_1d(Y, g.center, g.origin, g.width, g.nb, order, row_ptr, groups, yc, box,
                  weights, grid)
    kq = np.empty((2, m + 1))
    _k.kernel_quadrants_1d(g.width / g.p, m, dof, kq)
    kspec = sfft.dct(kq, type=1, axis=1, workers=workers, overwrite_x=True)
    spec = sfft.rfft(grid, n=L, axis=1, workers=workers)
    z_all = _k.apply_kernels_1d(spec, kspec, spec)
    pot = sfft.irfft(spec, n=L, axis=1, workers=workers, overwrite_x=True)
    _k.gather_forces_1d(yc, order, box, weights, pot, forces)
    return z_all
