"""Where a fit runs: the ``device`` parameter of the neighbour embeddings.

``device="cpu"`` runs every phase with the numba kernels (each stage's ``*_numba.py``);
``device="cuda"`` runs the phases that have CUDA kernels (each stage's ``*_cuda.py``, whose
``supports`` says which configurations) on the GPU and the others on the CPU, and records
which ran where in the fitted ``devices_``; a fit resolves this once
(:meth:`unimap.methods._base.NeighborEmbedding._place_phases`);
``device="auto"`` means ``"cuda"`` when the ``gpu`` extra (numba-cuda) is installed and a
GPU is usable, else ``"cpu"``.

The CUDA kernels call the same row functions as the CPU kernels (numba compiles a ``@jit``
function for the target of its caller), so a formula is written once. They run without a
GPU in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set before numba is imported),
which is how the test suite checks them on machines without one; ``"auto"`` never picks the
simulator.

Inputs and outputs stay NumPy arrays on the host: the GPU phases copy their inputs to the
device and their results back, so a model fitted on the GPU transforms anywhere (its placement
runs on whatever ``device`` resolves to when ``transform`` is called).
"""

from __future__ import annotations

import importlib.util

__all__ = ["DEVICES", "DeviceUnavailableError", "cuda_status", "resolve_device", "simulated"]

DEVICES = ("auto", "cpu", "cuda")


class DeviceUnavailableError(RuntimeError):
    """``device="cuda"`` where no GPU can run the kernels (the message says why)."""


def simulated() -> bool:
    """True when numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def cuda_status() -> tuple[bool, str]:
    """``(usable, description)``: whether CUDA kernels can run here, and the GPU (or why not)."""
    if simulated():
        return True, "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    try:
        from numba import cuda
    except Exception as exc:  # noqa: BLE001 - any import failure means no CUDA here
        return False, f"numba.cuda cannot be imported ({exc})"
    try:
        if not cuda.is_available():
            return False, "no usable CUDA driver and GPU were found (numba.cuda.is_available())"
        device = cuda.get_current_device()
    except Exception as exc:  # noqa: BLE001 - the driver reports errors of many kinds
        return False, f"the CUDA driver failed ({exc})"
    try:
        # numba-cuda loads its lowering of numpy functions lazily, at the first compile; a NumPy
        # it does not support fails there (numba-cuda 0.30.4 with NumPy 2.5: np.row_stack), so
        # load it now and name the cause instead of failing in the middle of a fit.
        import numba.cuda.cudaimpl  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - whatever the incompatibility raises
        import numpy as np

        return False, (f"numba-cuda cannot compile kernels with NumPy {np.__version__} ({exc}); "
                       "the gpu extra asks for numpy<2.5")
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    major, minor = device.compute_capability
    return True, f"{name} (compute capability {major}.{minor})"


def _gpu_extra_installed() -> bool:
    return importlib.util.find_spec("numba_cuda") is not None


def resolve_device(device: str) -> str:
    """``"cpu"`` or ``"cuda"`` for a ``device`` parameter (see the module docstring).

    Raises
    ------
    DeviceUnavailableError
        ``device="cuda"`` where no GPU is usable, with the reason (a RuntimeError).
    """
    if device == "cpu":
        return "cpu"
    if device == "auto":
        # Cheap test first: without the extra, numba.cuda (slow to import; measured:
        # benchmarks/results/library_notes.md, "unimap/runtime/device.py") is not touched.
        if simulated() or not _gpu_extra_installed():
            return "cpu"
        return "cuda" if cuda_status()[0] else "cpu"
    usable, description = cuda_status()
    if not usable:
        raise DeviceUnavailableError(f"device='cuda', but {description}. Install unimap[gpu] on a "
                           "machine with an NVIDIA GPU, or pass device='cpu' (or 'auto').")
    return "cuda"
