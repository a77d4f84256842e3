"""Dataset loaders: MNIST from the original IDX files, scikit-learn's digits, synthetic blobs.

MNIST is read with our own IDX parser. ``load_mnist`` looks in the ``path`` argument if given,
else, in order, in the ``UNIMAP_MNIST_DIR`` environment variable, a ``shared/datasets/mnist``
folder beside the working directory (or its parents) or beside a source checkout of unimap,
and the user cache (``~/.cache/unimap/mnist``); if none
holds the files it downloads them into the cache (atomically: a failed download leaves nothing).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import struct
import urllib.request
from pathlib import Path

import numpy as np

from unimap.io.atomic import atomic_path

__all__ = ["load_digits", "load_mnist", "make_blobs", "read_idx", "load_builtin", "BUILTIN"]

_MNIST_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
_MNIST_MIRROR = "https://ossci-datasets.s3.amazonaws.com/mnist/"
# SHA-256 of the original files (those of ../shared/datasets/mnist): a download must match.
_MNIST_SHA256 = {
    "t10k-images-idx3-ubyte.gz": "f72c2dff3457595ec2fe452d25d97b7f974a74ad5b006687704212bedd1486d8",
    "t10k-labels-idx1-ubyte.gz": "4baf84ddd60ae342cfdd282ec3fba3249a201a4459782165496a7cbebbe49a2e",
    "train-images-idx3-ubyte.gz":
        "b09d8b89df4ad239afc76a323dbe9559169cd8cca365467dfe8aa1f7ca54109b",
    "train-labels-idx1-ubyte.gz":
        "c51906e7929bbf7c824fbd16019b56297269ca82cba449c5b5d59c0a02147fed",
}

# IDX type codes -> numpy big-endian dtypes (the IDX format is big-endian).
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (optionally gzip-compressed) into a numpy array.

    Parameters
    ----------
    path : str or path-like
        File in the IDX format of LeCun et al. A ``.gz`` suffix means gzip.

    Returns
    -------
    array : ndarray
        Array with the shape stored in the header, in native byte order.

    Examples
    --------
    >>> import gzip, struct
    >>> from unimap.datasets import read_idx
    >>> header = struct.pack(">HBB", 0, 0x08, 2) + struct.pack(">II", 2, 3)  # uint8, 2 x 3
    >>> with gzip.open("tiny-idx2-ubyte.gz", "wb") as fh:
    ...     _ = fh.write(header + bytes(range(6)))
    >>> read_idx("tiny-idx2-ubyte.gz")
    array([[0, 1, 2],
           [3, 4, 5]], dtype=uint8)
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if len(data) < 4:
        raise ValueError(f"{path}: too short to be an IDX file")
    zero, type_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or type_code not in _IDX_DTYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    shape = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    dtype = _IDX_DTYPES[type_code]
    offset = 4 + 4 * ndim
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - offset != expected:
        raise ValueError(
            f"{path}: header announces {expected} bytes of data, file holds {len(data) - offset}"
        )
    array = np.frombuffer(data, dtype=dtype, offset=offset).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def _candidate_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("UNIMAP_MNIST_DIR"):
        dirs.append(Path(os.environ["UNIMAP_MNIST_DIR"]))
    cwd = Path.cwd()
    checkout = Path(__file__).resolve().parent.parent  # a source checkout's root
    for base in (cwd, *cwd.parents[:2], checkout):
        dirs.append(base / "shared" / "datasets" / "mnist")
        dirs.append(base / ".." / "shared" / "datasets" / "mnist")
    dirs.append(_cache_dir())
    return dirs


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "unimap" / "mnist"


def _has_all(directory: Path) -> bool:
    return all((directory / name).is_file() for name in _MNIST_FILES.values())


def _download_mnist(target: Path) -> None:
    """Fetch the missing files into ``target``, each checked against its SHA-256 before it is
    renamed into place; no network or a wrong file is an error that says what to do."""
    target.mkdir(parents=True, exist_ok=True)
    for name in _MNIST_FILES.values():
        if (target / name).is_file():
            continue
        url = _MNIST_MIRROR + name
        try:
            with urllib.request.urlopen(url, timeout=60) as src:
                data = src.read()
        except OSError as exc:  # URLError, timeouts, refused connections
            raise ConnectionError(
                f"could not download MNIST ({url}): {getattr(exc, 'reason', exc)}. Put the "
                "four *-idx?-ubyte.gz files in a folder and pass load_mnist(path=...), or set "
                "UNIMAP_MNIST_DIR to it") from None
        digest = hashlib.sha256(data).hexdigest()
        if digest != _MNIST_SHA256[name]:
            raise ValueError(f"the download of {url} is not the MNIST file (SHA-256 {digest}, "
                             f"expected {_MNIST_SHA256[name]}); nothing was written")
        with atomic_path(target / name) as tmp, open(tmp, "wb") as out:
            out.write(data)


def load_mnist(
    path: str | os.PathLike | None = None,
    subset: str = "all",
    n_samples: int | None = None,
    dtype: type = np.float32,
    download: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Load MNIST from the original IDX files.

    Parameters
    ----------
    path : str or path-like, optional
        Folder holding the four ``*-idx?-ubyte.gz`` files (downloaded there if missing and
        ``download``). Default: search (see module docstring).
    subset : {"all", "train", "test"}, default="all"
        ``"all"`` is the 60,000 training images followed by the 10,000 test images.
    n_samples : int, optional
        Keep only the first ``n_samples`` rows.
    dtype : numpy dtype, default=np.float32
        Dtype of the returned pixels (values 0..255, not rescaled).
    download : bool, default=True
        Fetch the files into ``~/.cache/unimap/mnist`` if they are nowhere else.

    Returns
    -------
    X : ndarray of shape (n_samples, 784)
    y : ndarray of shape (n_samples,), int64 labels 0..9

    Examples
    --------
    >>> from unimap.datasets import load_mnist
    >>> X, y = load_mnist()  # doctest: +SKIP
    >>> X.shape, X.dtype, y.shape  # doctest: +SKIP
    ((70000, 784), dtype('float32'), (70000,))
    """
    if subset not in ("all", "train", "test"):
        raise ValueError(f"subset must be 'all', 'train' or 'test', got {subset!r}")
    # An explicit path is the only place looked at (and downloaded into).
    candidates = [Path(path)] if path is not None else _candidate_dirs()
    directory = next((d for d in candidates if _has_all(d)), None)
    if directory is None:
        if not download:
            where = path if path is not None else "any known folder"
            raise FileNotFoundError(f"MNIST IDX files not found in {where}; pass download=True")
        directory = Path(path) if path is not None else _cache_dir()
        _download_mnist(directory)
    parts = ["train", "test"] if subset == "all" else [subset]
    images, labels = [], []
    for part in parts:
        img = read_idx(directory / _MNIST_FILES[f"{part}_images"])
        images.append(img.reshape(img.shape[0], -1))
        labels.append(read_idx(directory / _MNIST_FILES[f"{part}_labels"]))
    X = np.concatenate(images).astype(dtype, copy=False)
    y = np.concatenate(labels).astype(np.int64)
    if n_samples is not None:
        X, y = X[:n_samples], y[:n_samples]
    return np.ascontiguousarray(X), y


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 8×8 handwritten digits that scikit-learn ships (no download).

    Returns
    -------
    X : ndarray of shape (1797, 64), float32
    y : ndarray of shape (1797,), int64

    Examples
    --------
    >>> from unimap.datasets import load_digits
    >>> X, y = load_digits()
    >>> X.shape, X.dtype, y.shape, sorted(set(y.tolist())) == list(range(10))
    ((1797, 64), dtype('float32'), (1797,), True)
    """
    # Read scikit-learn's data file directly: importing sklearn.datasets costs more than an
    # embedding of these digits (measured: benchmarks/results/library_notes.md,
    # "unimap/datasets.py"). Its loader is the fallback if the file moved.
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            data = np.loadtxt(path, delimiter=",", dtype=np.float32)
            if data.shape == (1797, 65):
                return np.ascontiguousarray(data[:, :-1]), data[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    return bunch.data.astype(np.float32), bunch.target.astype(np.int64)


def make_blobs(
    n_samples: int = 1000,
    n_features: int = 10,
    centers: int = 5,
    cluster_std: float = 1.0,
    center_box: float = 10.0,
    random_state: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Isotropic Gaussian blobs, labelled by blob.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float32
    y : ndarray of shape (n_samples,), int64

    Examples
    --------
    >>> from unimap.datasets import make_blobs
    >>> X, y = make_blobs(n_samples=300, n_features=5, centers=3, random_state=0)
    >>> X.shape, X.dtype, sorted(set(y.tolist()))
    ((300, 5), dtype('float32'), [0, 1, 2])
    """
    rng = np.random.default_rng(random_state)
    means = rng.uniform(-center_box, center_box, size=(centers, n_features))
    y = rng.integers(0, centers, size=n_samples)
    X = means[y] + cluster_std * rng.standard_normal((n_samples, n_features))
    return X.astype(np.float32), y.astype(np.int64)


BUILTIN = {
    "digits": load_digits,
    "mnist": load_mnist,
    "blobs": make_blobs,
}


def load_builtin(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Load a built-in dataset by name (``"digits"``, ``"mnist"``, ``"blobs"``).

    Examples
    --------
    >>> from unimap.datasets import load_builtin
    >>> X, y = load_builtin("digits")
    >>> X.shape
    (1797, 64)
    >>> load_builtin("iris")
    Traceback (most recent call last):
    ValueError: unknown dataset 'iris'; built-in datasets are ['blobs', 'digits', 'mnist']
    """
    try:
        loader = BUILTIN[name]
    except KeyError:
        raise ValueError(
            f"unknown dataset {name!r}; built-in datasets are {sorted(BUILTIN)}"
        ) from None
    return loader()
