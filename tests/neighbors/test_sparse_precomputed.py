"""metric="precomputed" with a sparse distance matrix (issue 41): its stored entries are the
candidates, missing entries are infinitely far."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import kneighbors_graph

from unimap import GDR, TSNE, UMAP


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    D = kneighbors_graph(X, 20, mode="distance").astype(np.float32)
    dense = D.toarray()
    dense[D.toarray() == 0] = 1e6  # not stored: far away
    np.fill_diagonal(dense, 0.0)
    return X, D.tocsr(), dense


@pytest.mark.parametrize("make", [
    lambda: UMAP(metric="precomputed", n_epochs=30, random_state=0),
    lambda: GDR(metric="precomputed", n_epochs=30, random_state=0),
    lambda: TSNE(metric="precomputed", perplexity=5, max_iter=60, early_exaggeration_iter=20,
                 init="random", random_state=0),
])
def test_sparse_distances_give_the_embedding_of_the_same_dense_matrix(make, graph):
    _, D, dense = graph
    sparse_fit, dense_fit = make().fit(D), make().fit(dense)
    np.testing.assert_array_equal(sparse_fit.knn_indices_, dense_fit.knn_indices_)
    np.testing.assert_array_equal(sparse_fit.embedding_, dense_fit.embedding_)


def test_new_points_as_sparse_rows(graph):
    X, D, dense = graph
    model = UMAP(metric="precomputed", n_epochs=30, random_state=0).fit(D)
    rows = D[:10].tocsr()  # no stored diagonal: the point's own column is not a candidate
    same = dense[:10].copy()
    same[np.arange(10), np.arange(10)] = 1e6
    np.testing.assert_array_equal(model.transform(rows), model.transform(same))


def test_rows_with_too_few_distances_are_refused(graph):
    _, D, _ = graph
    thin = D.tolil()
    thin[7, :] = 0
    thin[7, 3] = 1.0
    with pytest.raises(ValueError, match="row 7 has 1"):
        UMAP(metric="precomputed", n_epochs=5).fit(thin.tocsr())
    negative = D.copy()
    negative.data[0] = -1.0
    with pytest.raises(ValueError, match="non-negative"):
        UMAP(metric="precomputed", n_epochs=5).fit(negative)


def test_a_large_sparse_matrix_is_never_densified():
    n = 200_000  # dense float32 would be 160 GB
    rng = np.random.default_rng(1)
    cols = (np.arange(n)[:, None] + np.arange(1, 6)[None, :]) % n
    D = sp.csr_matrix((rng.uniform(0.1, 1.0, n * 5), (np.repeat(np.arange(n), 5),
                                                        cols.ravel())), shape=(n, n))
    from unimap.neighbors.graph import NeighborIndex

    graph = NeighborIndex("precomputed").build(D).knn_graph(4)
    assert graph.indices.shape == (n, 4) and (graph.indices[:, 0] == np.arange(n)).all()
