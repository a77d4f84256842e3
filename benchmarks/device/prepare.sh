#!/usr/bin/env bash
# Fill .device/ (git-ignored) with what a run on the GPU machine carries: the wheels its image
# lacks (../shared/gpu/README.md) and MNIST's IDX files. About 47 MB; the run tool carries at
# most 64 MiB with the working tree, so carry exactly this folder: carry=[".device"].
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device/wheels .device/mnist
# numpy 2.4.6: numba-cuda 0.30.4 fails with the image's NumPy 2.5 (np.row_stack is gone)
# faiss-cpu: a core dependency of unimap, not on the image
# torchdr 0.5 and gpu-tsne 0.1.0: the GPU peers that fit in the budget
pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .device/wheels \
  numpy==2.4.6 faiss-cpu==1.15.1 torchdr==0.5 gpu-tsne==0.1.0
cp -n ../shared/datasets/mnist/*-ubyte.gz .device/mnist/
du -sh .device
