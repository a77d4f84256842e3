"""Principal component analysis: the mathematics shared by ``PCA``, the PCA initialization
and the kNN search's candidate projection."""
