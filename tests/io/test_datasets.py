import gzip
import struct

import numpy as np
import pytest

from unimap.datasets import load_builtin, load_digits, load_mnist, make_blobs, read_idx


def _write_idx(path, array, type_code=0x08):
    header = struct.pack(">HBB", 0, type_code, array.ndim)
    header += struct.pack(">" + "I" * array.ndim, *array.shape)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as fh:
        fh.write(header + array.astype(">u1").tobytes())


@pytest.mark.parametrize("name", ["images.idx", "images.idx.gz"])
def test_read_idx_roundtrip(tmp_path, name):
    array = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    _write_idx(tmp_path / name, array)
    np.testing.assert_array_equal(read_idx(tmp_path / name), array)


def test_read_idx_rejects_bad_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04\x05")
    with pytest.raises(ValueError, match="magic"):
        read_idx(tmp_path / "bad")
    array = np.zeros((3, 2), dtype=np.uint8)
    _write_idx(tmp_path / "short", array)
    data = (tmp_path / "short").read_bytes()[:-1]
    (tmp_path / "short").write_bytes(data)
    with pytest.raises(ValueError, match="bytes of data"):
        read_idx(tmp_path / "short")


def test_load_mnist_from_shared(mnist_test_set):
    X, y = mnist_test_set
    assert X.shape == (10_000, 784) and X.dtype == np.float32
    assert y.shape == (10_000,) and set(np.unique(y)) == set(range(10))
    assert X.min() == 0 and X.max() == 255


def test_load_mnist_missing_folder_without_download(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("UNIMAP_MNIST_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_mnist(tmp_path / "nothing", download=False)


def test_digits_blobs_builtin():
    X, y = load_digits()
    assert X.shape == (1797, 64) and y.shape == (1797,)
    Xb, yb = make_blobs(100, 3, centers=2, random_state=0)
    assert Xb.shape == (100, 3) and set(np.unique(yb)) <= {0, 1}
    assert load_builtin("digits")[0].shape == (1797, 64)
    with pytest.raises(ValueError, match="unknown dataset"):
        load_builtin("nope")


def test_digits_read_without_scikit_learn_match_its_loader():
    """load_digits reads scikit-learn's data file itself (its import costs ~0.8 s)."""
    import subprocess
    import sys

    from sklearn.datasets import load_digits as sklearn_digits

    X, y = load_digits()
    reference = sklearn_digits()
    np.testing.assert_array_equal(X, reference.data.astype(np.float32))
    np.testing.assert_array_equal(y, reference.target)
    assert X.dtype == np.float32 and X.flags.c_contiguous
    code = ("import sys; from unimap.datasets import load_digits; load_digits(); "
            "print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_mnist_found_beside_the_checkout_from_any_directory(tmp_path, monkeypatch):
    from pathlib import Path

    import unimap.datasets as datasets

    shared = Path(datasets.__file__).resolve().parent.parent / ".." / "shared"
    if not (shared / "datasets" / "mnist").is_dir():
        pytest.skip("no shared/ beside this checkout")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("UNIMAP_MNIST_DIR", raising=False)
    X, y = load_mnist(subset="test", n_samples=5, download=False)
    assert X.shape == (5, 784) and y.shape == (5,)


def test_mnist_download_offline_says_what_to_do(tmp_path, monkeypatch):
    import urllib.error
    import urllib.request

    def offline(*args, **kwargs):
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(ConnectionError, match="UNIMAP_MNIST_DIR") as info:
        load_mnist(tmp_path / "cache")
    assert "name resolution" in str(info.value)
    assert not list((tmp_path / "cache").glob("*.gz"))


def test_mnist_download_with_a_wrong_checksum_writes_nothing(tmp_path, monkeypatch):
    import io
    import urllib.request

    monkeypatch.setattr(urllib.request, "urlopen",
                        lambda *args, **kwargs: io.BytesIO(b"not the MNIST file"))
    with pytest.raises(ValueError, match="SHA-256"):
        load_mnist(tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


def test_the_checksums_are_those_of_the_reference_files():
    import hashlib

    from unimap.datasets import _MNIST_SHA256, _candidate_dirs

    folder = next((d for d in _candidate_dirs() if (d / "t10k-labels-idx1-ubyte.gz").is_file()),
                  None)
    if folder is None:
        pytest.skip("no MNIST folder on this machine")
    for name, digest in _MNIST_SHA256.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
