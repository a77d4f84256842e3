"""Barnes-Hut estimates of t-SNE's repulsive forces (van der Maaten 2014), in 2-D and 3-D.

For an embedding ``Y`` and heavy-tailed kernel ``w_ij = (1 + |y_i - y_j|^2 / dof) ** -dof``,
:func:`bh_repulsion` estimates in O(n log n)

- ``forces[i] = sum_{j != i} w_ij ** ((dof + 1) / dof) * (y_i - y_j)`` and
- ``z = sum_{i != j} w_ij``,

so that t-SNE's repulsive gradient is ``-4 * forces[i] / z``. :func:`bh_repulsion_query` does
the same for new points against a fixed embedding (the tree is built once with
:func:`build_tree` and queried every iteration).

A cell of the quadtree (2-D) or octree (3-D) is summarised by its centre of mass when
``cell side width / distance(point, centre of mass) < theta``, the criterion of openTSNE and
scikit-learn; ``theta = 0`` gives the exact sums. Results do not depend on the thread count.
See :mod:`unimap.optimizers.gradient_descent.repulsion.bh_tree_numba` for the tree's layout.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from unimap.optimizers.gradient_descent.repulsion import barnes_hut_numba as _bh
from unimap.optimizers.gradient_descent.repulsion import bh_tree_numba as _tree

__all__ = ["BHTree", "bh_repulsion", "bh_repulsion_query", "build_tree"]

_MAX_COORDINATE = 1e150


class BHTree(NamedTuple):
    """A compressed quadtree / octree, nodes in depth-first pre-order.

    Node ``k`` owns the tree-ordered points ``points[start[k]:end[k]]``; its first child is
    node ``k + 1`` and the next sibling of a child ``c`` is ``skip[c]``, up to ``skip[k]``
    (the node after ``k``'s subtree). A leaf has ``skip[k] == k + 1``.

    Attributes
    ----------
    points : ndarray of shape (n, d)
        The points in tree order, ``points[p] == Y[order[p]]``.
    order : ndarray of shape (n,)
        Original row of each tree-ordered point.
    start, end, skip : ndarray of shape (n_nodes,)
        Point range of each node and the index of the node after its subtree.
    com : ndarray of shape (n_nodes, d)
        Centre of mass (mean of the node's points).
    count : ndarray of shape (n_nodes,)
        Number of points, as float64.
    centre : ndarray of shape (n_nodes, d)
        Centre of the node's cell.
    half_width : ndarray of shape (n_nodes,)
        Half the side of the node's (square or cubic) cell.
    side2 : ndarray of shape (n_nodes,)
        Squared side of the cell, used by the summary criterion.
    """

    points: np.ndarray
    order: np.ndarray
    start: np.ndarray
    end: np.ndarray
    skip: np.ndarray
    com: np.ndarray
    count: np.ndarray
    centre: np.ndarray
    half_width: np.ndarray
    side2: np.ndarray

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return self.skip.shape[0]


def _check_points(Y: np.ndarray, name: str) -> np.ndarray:
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_points, n_components), got {Y.ndim}-D")
    if Y.shape[1] not in (2, 3):
        raise ValueError(
            f"Barnes-Hut supports 2 or 3 components, got {Y.shape[1]}; use the exact "
            "method for more"
        )
    if not np.isfinite(Y).all():
        raise ValueError(f"{name} contains NaN or infinity")
    if Y.shape[0] and np.abs(Y).max() > _MAX_COORDINATE:
        raise ValueError(
            f"{name} has coordinates beyond {_MAX_COORDINATE:g}; squared distances would "
            "overflow"
        )
    return Y


def _check_params(theta: float, dof: float) -> tuple[float, float]:
    theta = float(theta)
    dof = float(dof)
    if not theta >= 0.0:
        raise ValueError(f"theta must be >= 0, got {theta}")
    if not (dof > 0.0 and np.isfinite(dof)):
        raise ValueError(f"dof must be a positive finite number, got {dof}")
    return theta, dof


def build_tree(Y: np.ndarray) -> BHTree:
    """Build the Barnes-Hut space-partitioning tree over an embedding.

    Parameters
    ----------
    Y : ndarray of shape (n, d)
        Points, ``d`` in {2, 3}; converted to C-contiguous float64.

    Returns
    -------
    BHTree
        The tree (a quadtree for ``d = 2``, an octree for ``d = 3``).

    Raises
    ------
    ValueError
        If ``d`` is not 2 or 3 or ``Y`` is not finite.
    """
    Y = _check_points(Y, "Y")
    return BHTree(*_tree.build_tree(Y))


def bh_repulsion(Y: np.ndarray, theta: float = 0.5, dof: float = 1.0) -> tuple[np.ndarray, float]:
    """Barnes-Hut repulsive forces among the points of an embedding, self excluded.

    Parameters
    ----------
    Y : ndarray of shape (n, d)
        Embedding, ``d`` in {2, 3}.
    theta : float, default 0.5
        Accuracy: a cell is summarised when its side width over the distance to its centre
        of mass is below ``theta``. 0 gives the exact O(n^2) sums.
    dof : float, default 1.0
        Degrees of freedom of the kernel ``w = (1 + d^2 / dof) ** -dof`` (1: Cauchy, t-SNE).

    Returns
    -------
    forces : ndarray of shape (n, d)
        ``sum_{j != i} w_ij ** ((dof + 1) / dof) * (y_i - y_j)``.
    z : float
        ``sum_{i != j} w_ij``. t-SNE's repulsive gradient is ``-4 * forces / z``.

    Raises
    ------
    ValueError
        If ``d`` is not 2 or 3, ``Y`` is not finite, ``theta < 0`` or ``dof <= 0``.
    """
    Y = _check_points(Y, "Y")
    theta, dof = _check_params(theta, dof)
    tree = BHTree(*_tree.build_tree(Y))
    forces = np.empty_like(Y)
    z = _bh.repulsion_fit(tree.points, tree.order, tree.start, tree.end, tree.skip, tree.com,
                          tree.count, tree.side2, theta, dof, forces)
    return forces, float(z)


def bh_repulsion_query(
    tree: BHTree, Yq: np.ndarray, theta: float = 0.5, dof: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Barnes-Hut repulsive forces on new points from all the points of a fixed tree.

    Parameters
    ----------
    tree : BHTree
        From :func:`build_tree` on the reference embedding.
    Yq : ndarray of shape (m, d)
        Query points (not in the tree), same ``d`` as the tree.
    theta : float, default 0.5
        As in :func:`bh_repulsion`.
    dof : float, default 1.0
        As in :func:`bh_repulsion`.

    Returns
    -------
    forces : ndarray of shape (m, d)
        ``sum_j w_ij ** ((dof + 1) / dof) * (yq_i - y_j)`` over all tree points ``j``.
    z : ndarray of shape (m,)
        ``sum_j w_ij`` over all tree points ``j``.

    Raises
    ------
    ValueError
        If ``Yq`` does not match the tree's dimension or is not finite, ``theta < 0`` or
        ``dof <= 0``.
    """
    Yq = _check_points(Yq, "Yq")
    if Yq.shape[1] != tree.points.shape[1]:
        raise ValueError(
            f"Yq has {Yq.shape[1]} components but the tree has {tree.points.shape[1]}"
        )
    theta, dof = _check_params(theta, dof)
    forces = np.empty_like(Yq)
    z = np.empty(Yq.shape[0])
    _bh.repulsion_query(Yq, tree.points, tree.start, tree.end, tree.skip, tree.com, tree.count,
                        tree.side2, theta, dof, forces, z)
    return forces, z
