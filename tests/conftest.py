from pathlib import Path

import numpy as np
import pytest

from unimap.datasets import load_digits, load_mnist

SHARED_MNIST = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "mnist"


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


@pytest.fixture(scope="session")
def mnist_test_set():
    """MNIST's 10,000 test images from ../shared (skips where that folder is absent)."""
    if not SHARED_MNIST.is_dir():
        pytest.skip("shared MNIST folder not present")
    return load_mnist(SHARED_MNIST, subset="test", download=False)
