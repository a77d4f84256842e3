"""The interface of an affinity stage: the high-dimensional affinities P of a kNN graph as an
object that a method declares and the pipeline plans with, as openTSNE's affinities are.

An affinity is set up with its hyperparameters, then

- :meth:`Affinity.fit` on a kNN graph (column 0 each point itself, the convention of
  :mod:`unimap.neighbors.graph`) computes ``P_``, the symmetric (n, n) matrix an optimizer
  follows, and keeps the per-point calibration (``sigmas_``, UMAP's ``rhos_``);
- :meth:`Affinity.to_new` gives new points their directed affinities to their nearest
  training points, as the placement of ``transform`` uses them;
- :meth:`Affinity.memory` and :meth:`Affinity.supports` answer the planning before any array
  exists: the bytes per kNN edge of the fit (the memory estimate,
  :mod:`unimap.methods.memory_plan`) and whether a device has its kernels (the phase plan of
  ``device="cuda"``).

The affinities: :class:`unimap.affinity.fuzzy.FuzzyAffinity` (UMAP),
:class:`unimap.affinity.perplexity.PerplexityAffinity` (t-SNE) and
:class:`unimap.affinity.joint.JointAffinity` (GDR: either kind of directed affinity, any
symmetrisation, optionally normalised). Their formulas stay in the modules' functions, the one
home the formula map of ``docs/architecture.md`` points to; the objects call them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["Affinity"]


class Affinity:
    """One affinity stage (see the module docstring). Subclasses set :attr:`MEMORY_PER_EDGE`
    and implement :meth:`_fit` and :meth:`to_new`.

    Attributes
    ----------
    P_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        The affinities, after :meth:`fit`.
    n_samples_ : int
        The number of points of the fitted graph.
    """

    MEMORY_PER_EDGE: tuple[int, int] = (0, 0)
    """Bytes per kNN edge (n × k): allocated while :meth:`fit` runs, and kept after it (P and
    its calibration): the measured peaks of the kernels with a margin
    (benchmarks/results/architecture_notes.md)."""
    DEVICES: tuple[str, ...] = ("cpu", "cuda")
    """Where :meth:`fit` can run: every calibration and symmetrisation has CUDA kernels
    (:mod:`unimap.affinity.calibration_cuda`, :mod:`unimap.affinity.symmetrize_cuda`)."""

    P_: sp.csr_matrix
    n_samples_: int

    def fit(self, indices: np.ndarray, distances: np.ndarray, *, n_samples: int | None = None,
            device: str = "cpu") -> Affinity:
        """Compute ``P_`` from a kNN graph; returns ``self``.

        Parameters
        ----------
        indices, distances : ndarrays of shape (n_samples, k)
            The kNN graph, column 0 each point itself.
        n_samples : int, optional
            The number of vertices (default: ``indices.shape[0]``).
        device : {"cpu", "cuda"}, default="cpu"
            Where to compute (one of :attr:`DEVICES`).
        """
        indices, distances = np.asarray(indices), np.asarray(distances)
        if indices.ndim != 2 or indices.shape != distances.shape:
            raise ValueError(f"{type(self).__name__}.fit needs kNN indices and distances of "
                             f"the same (n_samples, k) shape, got {indices.shape} and "
                             f"{distances.shape}")
        if not self.supports(device):
            raise ValueError(f"{type(self).__name__} has no kernels for device={device!r}; "
                             f"it runs on {', '.join(self.DEVICES)}")
        n = indices.shape[0] if n_samples is None else int(n_samples)
        self.P_ = self._fit(indices, distances, n, device)
        self.n_samples_ = n
        return self

    def to_new(self, indices: np.ndarray, distances: np.ndarray) -> np.ndarray:
        """The directed affinities of new points to their nearest training points.

        Parameters
        ----------
        indices, distances : ndarrays of shape (m, k)
            Each new point's k nearest training points (none of them the point itself).

        Returns
        -------
        affinities : ndarray of shape (m, k)
        """
        raise NotImplementedError

    def memory(self, n_edges: int) -> tuple[int, int]:
        """``(peak, kept)`` bytes of :meth:`fit` on a graph of ``n_edges`` kNN edges (n × k):
        what it allocates while it runs, and what stays allocated after it."""
        peak, kept = self.MEMORY_PER_EDGE
        return n_edges * peak, n_edges * kept

    def supports(self, device: str) -> bool:
        """Whether :meth:`fit` has kernels for ``device``."""
        return device in self.DEVICES

    def _fit(self, indices: np.ndarray, distances: np.ndarray, n: int,
             device: str) -> sp.csr_matrix:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def _params(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.endswith("_")}
