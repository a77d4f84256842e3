"""Which data of an ``AnnData`` the tools of :mod:`unimap.tl` embed, by scanpy's rule
(``scanpy.tools._utils._choose_representation``): ``X`` for narrow data, else
``obsm["X_pca"]``, else its first principal components, computed and stored as
``sc.pp.pca`` stores them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from unimap.io.anndata_input import fit_record, representation
from unimap.io.scanpy_layout import unimap_records, write_pca
from unimap.runtime.user_warnings import warn_user

__all__ = ["choose_representation", "SCANPY_N_PCS"]

# scanpy's settings.N_PCS: data with at most this many variables is embedded as it is, and
# the number of principal components computed for wider data that has none
SCANPY_N_PCS = 50


def choose_representation(adata: Any, use_rep: str | None, n_pcs: int | None
                           ) -> tuple[Any, str, int | None, list]:
    """The data of ``use_rep`` and ``n_pcs`` by scanpy's rule (``_choose_representation``):
    ``(X, the representation's name, the principal components used or None, the writes of a
    PCA computed here)``."""
    if n_pcs is not None and (isinstance(n_pcs, bool) or not isinstance(n_pcs, (int, np.integer))
                              or n_pcs < 0):
        raise ValueError(f"n_pcs must be a non-negative integer or None, got {n_pcs!r}")
    if use_rep is None and n_pcs == 0:  # scanpy: n_pcs=0 means X
        use_rep = "X"
    if use_rep is None:
        if adata.n_vars <= SCANPY_N_PCS:
            use_rep = "X"
        elif "X_pca" in adata.obsm:
            use_rep = "X_pca"
        else:
            return _pca_first(adata, n_pcs)
    X, _, use_rep = representation(adata, use_rep)
    if use_rep == "X" or n_pcs is None:
        return X, use_rep, None, []
    if n_pcs > X.shape[1]:
        raise ValueError(f"n_pcs={n_pcs}, but obsm[{use_rep!r}] has {X.shape[1]} columns")
    return X[:, : int(n_pcs)], use_rep, int(n_pcs), []


def _pca_first(adata: Any, n_pcs: int | None) -> tuple[Any, str, int | None, list]:
    """scanpy's fallback for wide data without ``obsm["X_pca"]``: its first principal
    components (50 or ``n_pcs``), to be stored as ``sc.pp.pca`` stores them."""
    from unimap.methods.pca import PCA

    X, _, _ = representation(adata, "X")
    n_comps = min(n_pcs or SCANPY_N_PCS, min(X.shape) - 1)
    warn_user(f"adata has {adata.n_vars} variables and no obsm['X_pca']: embedding its "
              f"first {n_comps} principal components (stored in obsm['X_pca'], as "
              "scanpy does); pass use_rep='X' to embed X itself", UserWarning)
    pca = PCA(n_components=n_comps, random_state=0)
    pcs = np.asarray(pca.fit_transform(X), dtype=np.float32)

    def write(adata: Any) -> None:
        write_pca(adata, pca, pcs, None, True)
        unimap_records(adata)["pca"] = fit_record(pca, "pca", use_rep="X")

    return pcs, "X_pca", n_pcs, [write]
