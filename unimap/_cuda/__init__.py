"""CUDA kernels of the pipeline's phases (numba-cuda); imported only for ``device="cuda"``.

See :mod:`unimap.device`: the kernels call the CPU kernels' row functions, compiled for the
GPU, so each formula is written once.
"""
