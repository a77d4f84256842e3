"""GDR's high-dimensional affinities P: any directed affinity (UMAP's fuzzy memberships or
t-SNE's conditional probabilities) × any symmetrisation (fuzzy union, mean, none) × optional
normalisation (:func:`joint_affinities`), on the pieces of :mod:`unimap.affinity.fuzzy` and
:mod:`unimap.affinity.perplexity` and the directed rows of
:mod:`unimap.affinity.directed`. Each function
takes a kNN graph in the convention of :mod:`unimap.neighbors.graph` (column 0 is the point
itself) and returns plain arrays or a scipy CSR matrix, so every method can reuse them.
:class:`JointAffinity` is the stage GDR declares (:mod:`unimap.affinity.stage`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from unimap.affinity.directed import DirectedRows
from unimap.affinity.fuzzy import FuzzyAffinity, directed_memberships
from unimap.affinity.perplexity import PerplexityAffinity, calibrated_probabilities
from unimap.affinity.stage import Affinity

__all__ = ["JointAffinity", "knn_affinities", "joint_affinities"]

KINDS = ("fuzzy", "perplexity")
SYMMETRIZATIONS = ("umap", "tsne", "none")


class JointAffinity(Affinity):
    """GDR's P as an affinity stage (:mod:`unimap.affinity.stage`): a directed affinity
    (UMAP's fuzzy memberships or t-SNE's conditional probabilities) × a symmetrisation ×
    optional normalisation (:func:`joint_affinities`).

    Parameters
    ----------
    kind : {"fuzzy", "perplexity"}, default="fuzzy"
        The directed affinity, and the affinity that serves new points: that of
        :class:`unimap.affinity.fuzzy.FuzzyAffinity` (``local_connectivity=1``) or of
        :class:`unimap.affinity.perplexity.PerplexityAffinity` at ``perplexity``.
    symmetrization : {"umap", "tsne", "none"}, default="umap"
        Fuzzy union ``A + Aᵀ − A∘Aᵀ``, ``(A + Aᵀ)/2``, or kept directed.
    normalize : bool, default=False
        Scale P to sum 1.
    perplexity : float, default=30.0
        For ``kind="perplexity"``.

    Attributes
    ----------
    P_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        Without self-loops.

    Examples
    --------
    >>> import numpy as np
    >>> from unimap.affinity import JointAffinity
    >>> from unimap.neighbors import nearest_neighbors
    >>> X = np.random.default_rng(0).normal(size=(100, 5)).astype(np.float32)
    >>> knn, index = nearest_neighbors(X, 10)
    >>> P = JointAffinity("fuzzy", "tsne", normalize=True).fit(knn.indices, knn.distances).P_
    >>> P.shape, round(float(P.sum()), 4), bool(P.diagonal().any())
    ((100, 100), 1.0, False)
    """

    def __init__(self, kind: str = "fuzzy", symmetrization: str = "umap",
                 normalize: bool = False, perplexity: float = 30.0) -> None:
        self.kind = kind
        self.symmetrization = symmetrization
        self.normalize = normalize
        self.perplexity = perplexity

    @property
    def directed(self) -> Affinity:
        """The affinity of the directed kind (its memory profile, its placement of new
        points)."""
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        return FuzzyAffinity() if self.kind == "fuzzy" else PerplexityAffinity(self.perplexity)

    def memory(self, n_edges: int) -> tuple[int, int]:
        """The directed kind's bytes per edge: the symmetrisations allocate alike."""
        return self.directed.memory(n_edges)

    def _fit(self, indices, distances, n, device):
        if self.symmetrization not in SYMMETRIZATIONS:
            raise ValueError(f"symmetrization must be one of {SYMMETRIZATIONS}, got "
                             f"{self.symmetrization!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        return joint_affinities(indices, distances, self.kind, self.symmetrization,
                                self.normalize, self.perplexity, device=device)

    def to_new(self, indices: np.ndarray, distances: np.ndarray) -> np.ndarray:
        """The directed kind's affinities of new points (its ``to_new``)."""
        return self.directed.to_new(indices, distances)


def knn_affinities(indices: np.ndarray, values: np.ndarray, n: int) -> sp.csr_matrix:
    """Directed affinities ``values[i, c]`` on the edges ``(i, indices[i, c])`` as an
    (m, n) CSR matrix in ``values``' dtype (float32 or float64, other dtypes become float64),
    with sorted rows; repeated edges are summed, zeros left out."""
    from unimap.affinity.symmetrize_numba import DIRECTED

    graph = DirectedRows(indices, values, n)
    return graph.combined(DIRECTED, drop_self=False, compute=graph.data.dtype,
                          out=graph.data.dtype)


def joint_affinities(
    indices: np.ndarray,
    distances: np.ndarray,
    kind: str,
    symmetrization: str,
    normalize: bool,
    perplexity: float | None = None,
    device: str = "cpu",
) -> sp.csr_matrix:
    """P of GDR, any combination of the directed affinities and the symmetrisations.

    Parameters
    ----------
    indices, distances : ndarrays of shape (n_samples, k)
        kNN graph, column 0 the point itself.
    kind : {"fuzzy", "perplexity"}
        UMAP's memberships ``exp(-(d − ρ)/σ)`` or t-SNE's conditional probabilities.
    symmetrization : {"umap", "tsne", "none"}
        Fuzzy union ``A + Aᵀ − A∘Aᵀ``, ``(A + Aᵀ)/2``, or kept directed.
    normalize : bool
        Scale P to sum 1.
    perplexity : float
        For ``kind="perplexity"``.
    device : {"cpu", "cuda"}, default="cpu"
        Where to calibrate and symmetrise.

    Returns
    -------
    P : scipy.sparse.csr_matrix of shape (n_samples, n_samples), float32
        Without self-loops (duplicates can put a point among its own neighbours).
    """
    from unimap.affinity.symmetrize_numba import DIRECTED, MEAN, UNION

    n = indices.shape[0]
    if kind == "perplexity":
        probabilities, _ = calibrated_probabilities(distances[:, 1:], perplexity, device)
        directed = DirectedRows(indices[:, 1:], probabilities, n)
    else:
        weights, _, _ = directed_memberships(indices, distances, device=device)
        directed = DirectedRows(indices, weights, n)
    # in float64 whatever the memberships' dtype: P's bits as they were (scipy's float64)
    mode = {"umap": UNION, "tsne": MEAN}.get(symmetrization, DIRECTED)
    P = directed.combined(mode, drop_self=True, compute=np.float64, device=device)
    if normalize and P.nnz:
        P.data /= np.float32(P.data.sum(dtype=np.float64))
    return P
