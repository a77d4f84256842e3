"""How many rows of other parts one epoch of GDR's distributed optimizer reads (issue 55).

Usage::

    python benchmarks/dask_epoch_reads.py [--n 1000000] [--parts 2 4 16 100 1000]

The exact mode (:mod:`unimap.dask.epochs`) sends every part the whole previous embedding. An
epoch of a part actually reads, besides its own rows: the rows its edges point to (the
*halo*: its rows' neighbours in P, fixed for the fit) and its row blocks' pools of negative
samples (``NEGATIVE_POOL`` = 128 rows drawn uniformly per block of ``ROW_BLOCK`` = 256 rows,
redrawn each epoch from the seed, so any worker can compute which rows they are). This script
measures both on the ``sheets`` data of ``dask_fit.py``: the in-memory kNN graph and fuzzy
graph of GDR, its spectral start, the Z-order relabelling of the optimizer, the rows split
into the same ranges as :func:`unimap.dask.epochs.row_parts`; per part, the distinct halo
rows outside the part and the distinct pool rows outside the part in one epoch (drawn with
NumPy's generator: the same distribution as the kernel's hash, not the same draws).

It prints, per number of parts, the mean and largest bytes per epoch per part (2-D float32)
that (a) the exact mode moves and (b) a part would move reading only what it reads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dask_fit import in_memory  # noqa: E402
from dask_place import machine_state  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, nargs="+", default=[2, 4, 16, 100, 1000])
    args = parser.parse_args()

    import unimap
    from unimap.dask.epochs import row_parts
    from unimap.initialization.layouts import initialize
    from unimap.optimizers.sampling import NEGATIVE_POOL
    from unimap.runtime.dynamic_numba import ROW_BLOCK
    from unimap.runtime.ordering import locality_order, relabelled

    print(f"# {args.n:,} sheets rows; {machine_state()}", flush=True)
    X, _ = in_memory("sheets", args.n)
    tic = time.perf_counter()
    est = unimap.GDR(random_state=0, n_epochs=1, init="random").fit(X)
    start, _ = initialize("spectral", None, est.graph_, 2, 0, "box")
    order = locality_order(start)
    P = relabelled(est.graph_, order, sort_rows=True, dtype=np.float32)
    print(f"graph and start: {time.perf_counter() - tic:.0f} s; {P.nnz:,} edges", flush=True)
    n = P.shape[0]
    rng = np.random.default_rng(0)
    print("| parts | rows per part | exact mode: MiB per epoch per part | halo rows (mean, "
          "max) | pool rows outside the part (mean) | reading only those: MiB per epoch "
          "per part (mean, max) | ratio |")
    print("|---|---|---|---|---|---|---|")
    mib = float(1 << 20)
    for n_parts in args.parts:
        halos, pools, reads = [], [], []
        for first, stop in row_parts(n, n_parts):
            lo, hi = first * ROW_BLOCK, min(n, stop * ROW_BLOCK)
            cols = P.indices[P.indptr[lo]:P.indptr[hi]]
            halo = np.unique(cols[(cols < lo) | (cols >= hi)])
            draws = rng.integers(0, n, (stop - first) * NEGATIVE_POOL)
            pool = np.unique(draws[(draws < lo) | (draws >= hi)])
            halos.append(halo.size)
            pools.append(pool.size)
            reads.append(np.union1d(halo, pool).size * 8 / mib)
        rows = n / n_parts
        exact = (n - rows) * 8 / mib
        print(f"| {n_parts} | {rows:,.0f} | {exact:.2f} | {np.mean(halos):,.0f}, "
              f"{np.max(halos):,} | {np.mean(pools):,.0f} | {np.mean(reads):.2f}, "
              f"{np.max(reads):.2f} | {exact / np.mean(reads):.1f} |", flush=True)


if __name__ == "__main__":
    main()
