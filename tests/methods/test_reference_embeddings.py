"""Behaviour kept across refactors: seeded embeddings against committed references.

``tests/data/reference_embeddings.npz`` holds, for each case below, the embedding of 400
digits and the transform of 40 held-out digits as computed by the code at the time the file
was written (``python tests/methods/test_reference_embeddings.py`` rewrites it; say so in the commit
when a change is meant to move bits). Floating-point results depend on the CPU (numba compiles
for the host, BLAS picks its kernels by CPU), so the check has two levels:

- on the machine kind and library versions the file was written with (its ``fingerprint``),
  the embeddings must be bitwise equal;
- elsewhere, where bits may differ as a change of seed does, the trustworthiness@10 of the
  fit must be within 0.005 of the reference's and the 10-NN class agreement of the placed
  points within 0.05. Seeds 0-2 spread by at most 0.0008 and 0.0325 (UMAP); one epoch of
  UMAP's SGD instead of 100 scores 0.922 against 0.987.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

REFERENCE = Path(__file__).parents[1] / "data" / "reference_embeddings.npz"
N_FIT, N_NEW = 400, 40


def _cases():
    from unimap import GDR, PCA, TSNE, UMAP

    return {
        "pca": lambda: PCA(2, random_state=0),
        "umap": lambda: UMAP(n_epochs=100, random_state=0),
        "tsne_bh": lambda: TSNE(method="barnes_hut", max_iter=200, early_exaggeration_iter=50,
                                random_state=0),
        "tsne_fft": lambda: TSNE(method="fft", max_iter=200, early_exaggeration_iter=50,
                                 random_state=0),
        "tsne_exact": lambda: TSNE(method="exact", max_iter=100, early_exaggeration_iter=25,
                                   random_state=0),
        "gdr": lambda: GDR(n_epochs=100, random_state=0),
        "gdr_normalized": lambda: GDR(normalized=True, n_epochs=150, random_state=0),
    }


def _data():
    from unimap.datasets import load_digits

    X, y = load_digits()
    return X[:N_FIT], y[:N_FIT], X[N_FIT:N_FIT + N_NEW], y[N_FIT:N_FIT + N_NEW]


def fingerprint() -> str:
    """CPU model and the versions that decide the floating-point results.

    A virtual machine may name its CPU only by family ("AMD EPYC"), so the fingerprint also
    holds the target numba compiles for (LLVM's host CPU) and the core OpenBLAS chose: two
    hosts of one family with different vector units give different bits.
    """
    import llvmlite.binding
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS, so that the list below is whole)
    from threadpoolctl import threadpool_info

    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    blas = sorted({f"{i['internal_api']}:{i.get('architecture')}" for i in threadpool_info()
                   if i.get("user_api") == "blas"})
    versions = [f"{p}={importlib.metadata.version(p)}"
                for p in ("numpy", "scipy", "numba", "scikit-learn")]
    return "; ".join([cpu, f"llvm={llvmlite.binding.get_host_cpu_name()}", *blas,
                      f"python={sys.version_info[0]}.{sys.version_info[1]}", *versions])


def _run(name):
    X, _, X_new, _ = _data()
    model = _cases()[name]().fit(X)
    return model.transform(X) if name == "pca" else model.embedding_, model.transform(X_new)


def _scores(embedding, placed):
    from unimap.metrics import trustworthiness

    X, y, _, y_new = _data()
    trust = trustworthiness(X, embedding, n_neighbors=10)
    dist = ((placed[:, None, :] - embedding[None, :, :]) ** 2).sum(-1)
    nearest = np.argsort(dist, axis=1)[:, :10]
    agreement = float((y[nearest] == y_new[:, None]).mean())
    return trust, agreement


@pytest.mark.parametrize("name", list(_cases()))
def test_seeded_embedding_matches_reference(name):
    ref = np.load(REFERENCE)
    embedding, placed = _run(name)
    assert embedding.shape == ref[f"{name}_fit"].shape
    assert placed.shape == ref[f"{name}_new"].shape
    if str(ref["fingerprint"]) == fingerprint():
        np.testing.assert_array_equal(embedding, ref[f"{name}_fit"])
        np.testing.assert_array_equal(placed, ref[f"{name}_new"])
    else:
        got = _scores(embedding, placed)
        want = _scores(ref[f"{name}_fit"], ref[f"{name}_new"])
        assert abs(got[0] - want[0]) <= 0.005, (got, want)
        assert abs(got[1] - want[1]) <= 0.05, (got, want)


def main() -> None:
    arrays = {"fingerprint": np.array(fingerprint())}
    for name in _cases():
        arrays[f"{name}_fit"], arrays[f"{name}_new"] = _run(name)
        print(name, _scores(arrays[f"{name}_fit"], arrays[f"{name}_new"]))
    REFERENCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE, **arrays)
    print(f"wrote {REFERENCE} ({fingerprint()})")


if __name__ == "__main__":
    main()
