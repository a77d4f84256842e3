import numpy as np
import pytest

from unimap.datasets import load_digits


@pytest.fixture(scope="session")
def digits():
    return load_digits()


@pytest.fixture(scope="session")
def blobs():
    rng = np.random.default_rng(0)
    centers = rng.uniform(-10, 10, size=(4, 8))
    y = np.repeat(np.arange(4), 75)
    X = centers[y] + rng.standard_normal((300, 8))
    return X.astype(np.float32), y
