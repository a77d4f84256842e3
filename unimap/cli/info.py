"""``unimap info`` and ``unimap precompile``: what this installation has (versions, threads,
optional libraries, the GPU, the compiled-kernel cache), and compiling the numba kernels
ahead of time (:mod:`unimap.cli.precompile`, imported only when the command runs); their
arguments (:func:`add_info_parser`, :func:`add_precompile_parser`).
"""

from __future__ import annotations

import argparse
import json
import os


def _precompile(args) -> int:
    from unimap.cli.precompile import main as precompile_main

    return precompile_main(["--quiet"] if args.quiet else [])


def _kernel_cache_summary() -> dict | None:
    from unimap.cli.precompile import cache_status

    status = cache_status()
    if status is None:
        return None
    return {"for_this_machine": sum(status.values()), "cached": len(status)}


def _info(args) -> int:
    import importlib.metadata
    import importlib.util
    import platform

    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    import numba

    from unimap.runtime.threading_layer import threading_layer_report

    core = ("numpy", "scipy", "numba", "scikit-learn", "faiss-cpu")
    optional = {"matplotlib": "plots (extra 'plot')", "pandas": "DataFrame output",
                "pynndescent": "knn_method='nndescent' (extra 'nndescent')",
                "pyarrow": "Parquet files (extra 'io')",
                "anndata": ".h5ad files, AnnData input (extra 'anndata')"}
    info = {
        "unimap": version("unimap"), "python": platform.python_version(),
        "platform": platform.platform(), "cpus": os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "threads": threading_layer_report(),
        "core": {dist: version(dist) for dist in core},
        "optional": {dist: version(dist) for dist in optional},
        "gpu": _gpu_summary(version("numba-cuda")),
        "compiled_kernels": _kernel_cache_summary(),
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"unimap {info['unimap']} (Python {info['python']}, {info['platform']})")
    layer = info["threads"]
    safe = [what for what, ok in (("fork", layer["fork_safe"]), ("threads", layer["thread_safe"]))
            if ok]
    print(f"cores: {info['cpus']}; numba threads: {info['numba_threads']} on its "
          f"{layer['threading_layer']!r} layer (safe with: {', '.join(safe) or 'neither'}"
          + ("" if layer["fork_safe"] else "; install tbb for fork safety") + ")")
    for dist, ver in info["core"].items():
        print(f"  {dist:<13} {ver or 'MISSING'}")
    for dist, use in optional.items():
        ver = info["optional"][dist]
        print(f"  {dist:<13} {ver or 'not installed'}  ({use})")
    gpu = info["gpu"]
    print(f"  numba-cuda    {gpu['numba_cuda'] or 'not installed'}  (device='cuda', extra 'gpu')")
    print(f"GPU: {gpu['description']}" + ("" if gpu["usable"] else "; fits run on the CPU"))
    kernels = info["compiled_kernels"]
    if kernels is None:
        print("compiled kernels: unknown (numba's cache is not readable here)")
    elif kernels["for_this_machine"]:
        print(f"compiled kernels: {kernels['for_this_machine']} cached for this machine "
              "(first calls load them)")
    else:
        print("compiled kernels: none for this machine: each method's first call compiles "
              "(10-20 s); `unimap precompile` does it once now")
    return 0


def _gpu_summary(numba_cuda: str | None) -> dict:
    """What ``device="auto"`` would find: the gpu extra's version and the GPU (or why none)."""
    from unimap.runtime.device import cuda_status, simulated

    if numba_cuda is None and not simulated():
        return {"numba_cuda": None, "usable": False,
                "description": "none usable (the gpu extra, numba-cuda, is not installed)"}
    usable, description = cuda_status()
    return {"numba_cuda": numba_cuda, "usable": usable, "description": description}


def add_info_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``info`` and its arguments to ``subparsers`` (of
    :func:`unimap.cli.main.build_parser`)."""
    info = subparsers.add_parser("info", help="version, threads, and which optional parts are here")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.set_defaults(run=_info)
    return info


def add_precompile_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``precompile`` and its arguments to ``subparsers``; :mod:`unimap.cli.precompile`
    is imported only when it runs."""
    precompile = subparsers.add_parser(
        "precompile", help="compile the numba kernels now, so later runs start at once (an "
        "install built here has them already; run this where it did not: another CPU, a "
        "read-only install)")
    precompile.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    precompile.set_defaults(run=_precompile)
    return precompile
