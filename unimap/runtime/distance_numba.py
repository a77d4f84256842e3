"""The squared euclidean distance between two rows, written once for every numba kernel.

It lives in the runtime because its callers span the stages: the kNN search (rows of the data),
the optimizers (rows of the embedding) and the metrics (both), and the runtime is the one
stage they all build on (in :mod:`unimap.lowdim`, the kNN search would depend on the
low-dimensional kernel's stage).

:func:`sq_dist` is ``inline="always"``: numba inlines its IR into the caller, which compiles
it with its own types and ``fastmath`` flags, so each caller keeps the arithmetic it had with
the loop written out. The CUDA kernels call it through
:func:`unimap.runtime.common_cuda.on_target`.

Sums written out on purpose, each with its reason beside it:

- the 2-D kernels' ``d0 * d0 + d1 * d1`` (and Barnes-Hut's 2-D/3-D offsets): the coordinate
  differences stay in registers for the force that multiplies them;
- :func:`unimap.neighbors.cells_numba._row_sq_distances`: one point against every centroid,
  the loops swapped so that the inner one runs over the centroids (each sum in this order);
- :mod:`unimap.neighbors.brute_force_cuda`'s tiled search: the query in a local array, the
  rows in shared memory.
"""

from __future__ import annotations

import numba


@numba.njit(inline="always", cache=True)
def sq_dist(A, i, B, j, acc):
    """``acc + Σ_c (A[i, c] − B[j, c])²``, summed over the columns in order.

    ``acc`` is the start of the sum and sets its type: ``np.float32(0.0)`` sums in float32,
    ``0.0`` in float64 (with float32 rows, each square is then rounded to float32 before it
    is added).
    """
    for c in range(A.shape[1]):
        diff = A[i, c] - B[j, c]
        acc += diff * diff
    return acc
