"""What UMAP and GDR share beyond the pipeline, for umap-learn's users: ``fit(X, y)``
(supervision, :mod:`unimap.methods.supervision`), ``unique=True``
(:mod:`unimap.methods.unique_rows`), ``inverse_transform`` (:mod:`unimap.inverse`) and
``update``. Both estimators inherit :class:`UMAPFamily` before
:class:`unimap.methods._base.NeighborEmbedding`, whose hooks it fills in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from unimap.runtime.threads import numba_threads, resolve_n_jobs
from unimap.runtime.validation import refuse_dask_fit

__all__ = ["UMAPFamily", "UPDATE_EPOCH_SHARE"]

# update re-optimizes for this share of a fit's epochs (UMAP, GDR's unnormalized mode): a
# quarter keeps a refit's accuracy in a third of its time; GDR's normalized mode needs all of
# its iterations (measured: benchmarks/results/dropin.md, "Two defaults").
UPDATE_EPOCH_SHARE = 0.25


class UMAPFamily:
    """``update``, ``inverse_transform``, supervision and ``unique`` of UMAP and GDR."""

    def update(self, X: Any) -> Any:
        """Grow the model with new points (umap-learn's ``update``).

        The new points are placed by ``transform``, then the whole embedding (training and
        new points, from their current positions) is optimized again on the grown data, with
        the neighbour graph and seed a fit of all the rows would use, for a quarter of its
        epochs (``n_epochs_``; all of them in GDR's normalized mode, which needs them): the
        old layout is refined, not rebuilt. The model's training rows are then the old ones and
        ``X``; ``embedding_`` has a row for each.
        Refused for a model fitted with labels (the new points have none) or on precomputed
        distances.

        Parameters
        ----------
        X : array of shape (m, n_features)

        Returns
        -------
        self

        Examples
        --------
        >>> import unimap
        >>> from unimap.datasets import load_digits
        >>> X, _ = load_digits()
        >>> model = unimap.UMAP(random_state=0).fit(X[:500])
        >>> model.update(X[500:700]).embedding_.shape
        (700, 2)
        """
        self._check_placement_kernel("update")
        return self._update(X)

    def inverse_transform(self, X: Any) -> np.ndarray:
        """Map points of the embedding back to data space (umap-learn's ``inverse_transform``).

        Each point becomes the average of the data rows of its ``n_neighbors_`` nearest
        training points in the embedding, weighted by the embedding's kernel
        ``1/(1 + a_·d^(2·b_))`` (:mod:`unimap.inverse`). For ``metric="cosine"`` the rows are
        averaged as the metric sees them, scaled to unit norm (and centred for
        ``"correlation"``).

        Parameters
        ----------
        X : array of shape (m, n_components)
            Positions in the embedding.

        Returns
        -------
        X_original : ndarray of shape (m, n_features_in_), float32

        Examples
        --------
        >>> import unimap
        >>> from unimap.datasets import load_digits
        >>> X, _ = load_digits()
        >>> model = unimap.UMAP(random_state=0).fit(X[:500])
        >>> model.inverse_transform(model.embedding_[:5]).shape  # five rows of data space
        (5, 64)
        """
        return self._inverse_transform(X)

    def _check_placement_kernel(self, what: str) -> None:
        """Raise if ``what`` (``transform``, ``update``) cannot place points with the fitted
        kernel (override)."""

    def _cut_distance(self) -> float:
        """``disconnection_distance`` resolved for the metric (infinite: no cut)."""
        from unimap.affinity.disconnect import resolve_disconnection_distance

        return resolve_disconnection_distance(self.disconnection_distance, self.metric)

    def _disconnect(self, graph: sp.csr_matrix, knn_indices: np.ndarray,
                    knn_dists: np.ndarray) -> sp.csr_matrix:
        """The graph without its edges at least ``disconnection_distance`` long; called by
        the methods' ``_affinities`` before the supervision."""
        from unimap.affinity.disconnect import cut_graph

        return cut_graph(graph, knn_indices, knn_dists, self._cut_distance())

    def _check_target(self, y: Any, n: int) -> Any:
        from unimap.methods.supervision import check_target

        return check_target(self, y, n)

    def _update(self, X: Any) -> Any:
        """Grow the fitted model with the rows of ``X`` (UMAP's and GDR's ``update``): new
        points are placed by ``transform``, then the whole embedding is optimized again on
        the training rows and ``X`` together, from the current positions (umap-learn's
        ``update``, which also re-optimizes everything)."""
        self._check_can_transform("update")
        refuse_dask_fit(f"{type(self).__name__}.update", X)
        if self.metric == "precomputed":
            raise ValueError("update needs data rows; this model was fitted on precomputed "
                             "distances: refit on the grown distance matrix")
        if self.__dict__.get("supervised_", False):
            raise ValueError("update of a supervised model would need the labels of every "
                             "point: refit with fit(X, y) on the grown data")
        from unimap.neighbors.graph import prepare_rows

        new = self._check_new_points(X, "update")
        sparse = self._index.is_sparse  # sparse rows stay sparse (the grown fit keeps them so)
        if sparse:
            new = sp.csr_matrix(new, dtype=np.float32)
        elif sp.issparse(new):
            new = new.toarray()
        placed = self._transform(new)
        old = self._index.indexed_rows()  # dense: the metric's geometry (unit rows for cosine)
        inverse = self.__dict__.get("unique_inverse_")
        if inverse is not None:  # every training row, its copies too: one row each after
            old = old[inverse]
        data = (sp.vstack([old, new], format="csr") if sparse
                else np.vstack([old, prepare_rows(new, self._index.metric)]))
        start = np.vstack([self.embedding_, placed]).astype(np.float32)
        return self._fit(data, start=start, epoch_share=self._update_epoch_share())

    def _update_epoch_share(self) -> float:
        """The share of a fit's epochs that ``update`` runs (see ``UPDATE_EPOCH_SHARE``)."""
        return UPDATE_EPOCH_SHARE

    def _inverse_transform(self, Y: Any) -> np.ndarray:
        """Points of the embedding mapped back to data space (:mod:`unimap.inverse`);
        UMAP's and GDR's ``inverse_transform``."""
        from unimap.inverse import inverse_positions
        from unimap.runtime.validation import check_array

        self._check_can_transform("inverse_transform")
        if self.metric == "precomputed":
            raise ValueError("inverse_transform needs data rows; this model was fitted on "
                             "precomputed distances")
        output_metric = getattr(self, "output_metric", "euclidean")
        if output_metric not in ("euclidean", "l2"):
            raise ValueError(f"inverse_transform weighs training points by euclidean "
                             f"distances in the embedding; this one has "
                             f"output_metric={output_metric!r}")
        Y = check_array(Y, "X")
        self._check_n_features(Y, self.embedding_.shape[1])
        with numba_threads(resolve_n_jobs(self.n_jobs)):
            return inverse_positions(self._reference_embedding, self._index.training_rows(), Y,
                                     self.a_, self.b_, self.n_neighbors_, self.n_jobs)

    def _distinct_rows(self, X: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``(rows, inverse)`` of :func:`unimap.methods.unique_rows.distinct_rows` when the
        method has ``unique=True``, else ``(None, None)``."""
        if not self.unique:
            return None, None
        if self.metric == "precomputed" or self.precomputed_knn is not None:
            raise ValueError("unique=True needs the data rows; it cannot be combined with "
                             "metric='precomputed' or precomputed_knn")
        from unimap.methods.unique_rows import distinct_rows

        rows, inverse = distinct_rows(X)
        if rows.size < 2:
            raise ValueError(f"{type(self).__name__} with unique=True needs at least 2 "
                             f"distinct samples, got {rows.size}")
        return rows, inverse
