import numpy as np
import pytest
import scipy.sparse as sp

from unimap.runtime.ordering import relabelled


@pytest.mark.parametrize("path", ["numba", "scipy"])
@pytest.mark.parametrize("sort_rows", [False, True])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_relabelled_is_scipys_indexing(sort_rows, index_dtype, path, monkeypatch):
    """Rows short and long (insertion sort and argsort), unsorted input rows, empty rows;
    the numba pass (large matrices) and scipy's indexing (small ones) give the same arrays,
    in the same dtypes."""
    import unimap.runtime.ordering as ordering

    monkeypatch.setattr(ordering, "SCIPY_MAX_ENTRIES", 0 if path == "numba" else 1 << 20)
    rng = np.random.default_rng(0)
    n = 300
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.05)
    dense[7] = rng.random(n)  # a row longer than the insertion sort's limit
    dense[11] = 0
    matrix = sp.csr_matrix(dense.astype(np.float32))
    shuffled = rng.permutation(matrix.indptr[1] - matrix.indptr[0])
    matrix.indices[:shuffled.size] = matrix.indices[shuffled]
    matrix.data[:shuffled.size] = matrix.data[shuffled]
    matrix.has_sorted_indices = False
    matrix.indptr = matrix.indptr.astype(index_dtype)
    matrix.indices = matrix.indices.astype(index_dtype)
    order = rng.permutation(n)
    ours = relabelled(matrix, order, sort_rows=sort_rows)
    expected = matrix[order][:, order]
    if sort_rows:
        expected.sort_indices()
    np.testing.assert_array_equal(ours.indptr, expected.indptr)
    np.testing.assert_array_equal(ours.indices, expected.indices)
    np.testing.assert_array_equal(ours.data, expected.data)
    assert ours.dtype == np.float32
    # the same index dtypes from both paths (the kernels downstream compile per dtype)
    monkeypatch.setattr(ordering, "SCIPY_MAX_ENTRIES", 1 << 20 if path == "numba" else 0)
    other = relabelled(matrix, order, sort_rows=sort_rows)
    assert (ours.indptr.dtype, ours.indices.dtype) == (other.indptr.dtype, other.indices.dtype)
    assert relabelled(matrix, order, dtype=np.float64).dtype == np.float64


def test_relabelled_rejects_mismatched_order():
    with pytest.raises(ValueError, match="one label per point"):
        relabelled(sp.eye(4, format="csr"), np.arange(3))


@pytest.mark.parametrize("order", [[0, 1, 1, 3], [0, 1, 2, 4], [-1, 0, 1, 2]])
def test_relabelled_rejects_what_is_not_a_permutation(order):
    with pytest.raises(ValueError, match="permutation"):
        relabelled(sp.eye(4, format="csr"), np.array(order))
