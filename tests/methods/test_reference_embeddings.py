"""Behaviour kept across refactors: seeded embeddings against committed references.

``tests/data/reference_embeddings.npz`` holds, for each case below, the embedding of 400
digits and the transform of 200 held-out digits as computed by the code at the time the file
was written (``python tests/methods/test_reference_embeddings.py`` rewrites it; say so in the
commit when a change is meant to move bits). Floating-point results depend on the CPU (numba
compiles for the host, BLAS picks its kernels by CPU), so the check has two levels:

- on the machine kind and library versions the file was written with (its ``fingerprint``),
  the embeddings must be bitwise equal;
- elsewhere, the trustworthiness@10 of the fit and the 10-NN class agreement of the placed
  points must lie where the reference machine's own rounding puts them. Another CPU rounds
  differently, and the optimizers amplify a last-bit difference into another layout of the
  same quality, so the file also holds the scores of 20 fits of the same rows perturbed by
  a relative 1e-6 (a few float32 ulps, different noise each): their mean ± 5 standard
  deviations is the band (at least ± 0.001 and ± 0.005, a few quanta of each score, where a
  method barely moves). Measured with 10 perturbed fits on this file's machine (Zen 4,
  AVX-512 OpenBLAS) and with the Haswell kernels forced (``NUMBA_CPU_NAME=haswell
  OPENBLAS_CORETYPE=Haswell``): the standard deviations were 0.0004-0.0015 and 0.003-0.012,
  the unperturbed fit of one machine lay up to 3.7 of the other's deviations from the other's
  mean, and up to 4.2 from its own (both GDR(normalized)'s agreement: the digits' integer
  pixels tie many distances, and a perturbation breaks the ties), hence 5. One epoch of
  UMAP's SGD instead of 100 falls far below the band (``test_the_band_refuses_a_worse_fit``).
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

REFERENCE = Path(__file__).parents[1] / "data" / "reference_embeddings.npz"
N_FIT, N_NEW = 400, 200
N_PERTURBED, PERTURBATION = 20, 1e-6
SPREADS = 5.0  # half-width of the band, in standard deviations of the perturbed fits
FLOORS = (0.001, 0.005)  # trustworthiness, agreement: the band's least half-width


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
    import numba
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
    # NUMBA_CPU_NAME (a forced target, as in a run for another CPU) overrides the host's
    target = numba.config.CPU_NAME or llvmlite.binding.get_host_cpu_name()
    return "; ".join([cpu, f"llvm={target}", *blas,
                      f"python={sys.version_info[0]}.{sys.version_info[1]}", *versions])


def _run(name, perturbation_seed=None):
    X, _, X_new, _ = _data()
    if perturbation_seed is not None:
        noise = np.random.default_rng(perturbation_seed).standard_normal(X.shape)
        X = (X * (1 + PERTURBATION * noise)).astype(X.dtype)
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


def band(perturbed_scores):
    """(low, high) of each score: the perturbed fits' mean ± SPREADS standard deviations,
    at least ± FLOORS."""
    scores = np.asarray(perturbed_scores, dtype=np.float64)
    half = np.maximum(SPREADS * scores.std(axis=0, ddof=1), FLOORS)
    return scores.mean(axis=0) - half, scores.mean(axis=0) + half


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
        got = np.array(_scores(embedding, placed))
        low, high = band(ref[f"{name}_perturbed_scores"])
        assert np.all((low <= got) & (got <= high)), (got, low, high)


def test_the_band_refuses_a_worse_fit():
    # The check can fail: UMAP with one epoch instead of 100 falls below the band.
    from unimap import UMAP

    X, _, X_new, _ = _data()
    model = UMAP(n_epochs=1, random_state=0).fit(X)
    got = np.array(_scores(model.embedding_, model.transform(X_new)))
    low, _ = band(np.load(REFERENCE)["umap_perturbed_scores"])
    assert got[0] < low[0], (got, low)


def main() -> None:
    arrays = {"fingerprint": np.array(fingerprint())}
    for name in _cases():
        arrays[f"{name}_fit"], arrays[f"{name}_new"] = _run(name)
        arrays[f"{name}_perturbed_scores"] = np.array(
            [_scores(*_run(name, seed)) for seed in range(1, N_PERTURBED + 1)])
        low, high = band(arrays[f"{name}_perturbed_scores"])
        print(name, _scores(arrays[f"{name}_fit"], arrays[f"{name}_new"]),
              "band", low.round(4), high.round(4))
    REFERENCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE, **arrays)
    print(f"wrote {REFERENCE} ({fingerprint()})")


if __name__ == "__main__":
    main()
