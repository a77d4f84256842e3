"""Dynamic scheduling of numba's parallel loops: workers claim blocks from a shared counter.

numba's ``prange`` gives each thread an equal, fixed share of the iterations (a static
schedule; ``numba.set_parallel_chunksize`` changed nothing on the OpenMP and workqueue
layers). When another program holds a core, the thread that shares it finishes its share last
and the whole loop waits for it: 2 threads then run at the speed of one. With dynamic
scheduling, the thread that runs at full speed takes more blocks, and the loop gets back much
of the time lost (measured: benchmarks/results/library_notes.md, "unimap/runtime/dynamic_numba.py").

The pattern, one ``prange`` iteration per worker thread::

    next_block = np.zeros(1, np.int64)
    for worker in numba.prange(n_workers):
        block = claim(next_block)
        while block < n_blocks:
            ...  # rows of this block
            block = claim(next_block)

Every row is computed by the same code from the same inputs whichever worker claims its
block, so the result is bitwise the same for any schedule and any thread count; per-worker
scratch space is indexed by ``worker``. ``n_workers`` comes from the caller
(:func:`workers`): ``numba.get_num_threads()`` inside a kernel is a ctypes call that
numba's disk cache refuses to store.
"""

from __future__ import annotations

import numba
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["claim", "workers", "ROW_BLOCK", "atomic_load", "atomic_store", "atomic_add",
           "atomic_cas"]

# Rows per claimed block: large enough that one atomic per block costs nothing (MNIST-70k:
# 274 claims per epoch), small enough to balance (8 blocks per thread from ~4k rows on).
ROW_BLOCK = 256


def workers() -> int:
    """The worker count to pass to a dynamically scheduled kernel: numba's current threads."""
    return numba.get_num_threads()


@intrinsic
def claim(typingctx, counter):
    """Atomically ``counter[0] += 1``; returns the value before (an int64 array of length 1)."""
    if not (isinstance(counter, numba.types.Array) and counter.dtype == numba.types.int64):
        return None
    sig = numba.types.int64(counter)

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        array = context.make_array(array_type)(context, builder, args[0])
        zero = context.get_constant(numba.types.intp, 0)
        pointer = cgutils.get_item_pointer(context, builder, array_type, array, [zero])
        one = context.get_constant(numba.types.int64, 1)
        return builder.atomic_rmw("add", pointer, one, "monotonic")

    return sig, codegen


def _int64_cell(context, builder, array_type, array, index):
    """Pointer to ``array[index]`` of an int64 array (codegen helper of the atomics below)."""
    arr = context.make_array(array_type)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, array_type, arr, [index])


def _int64_cell_args(array, *integers) -> bool:
    """Whether an atomic's arguments type-check: an int64 array, then integers."""
    return (isinstance(array, numba.types.Array) and array.dtype == numba.types.int64
            and all(isinstance(value, numba.types.Integer) for value in integers))


@intrinsic
def atomic_load(typingctx, array, index):
    """``array[index]`` read atomically (sequentially consistent), an int64 array."""
    if not _int64_cell_args(array, index):
        return None
    sig = numba.types.int64(array, numba.types.intp)

    def codegen(context, builder, signature, args):
        pointer = _int64_cell(context, builder, signature.args[0], args[0], args[1])
        return builder.load_atomic(pointer, "seq_cst", 8)

    return sig, codegen


@intrinsic
def atomic_store(typingctx, array, index, value):
    """``array[index] = value`` atomically (sequentially consistent), an int64 array."""
    if not _int64_cell_args(array, index, value):
        return None
    sig = numba.types.void(array, numba.types.intp, numba.types.int64)

    def codegen(context, builder, signature, args):
        pointer = _int64_cell(context, builder, signature.args[0], args[0], args[1])
        builder.store_atomic(args[2], pointer, "seq_cst", 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def atomic_add(typingctx, array, index, value):
    """``array[index] += value`` atomically (sequentially consistent); returns the value
    before."""
    if not _int64_cell_args(array, index, value):
        return None
    sig = numba.types.int64(array, numba.types.intp, numba.types.int64)

    def codegen(context, builder, signature, args):
        pointer = _int64_cell(context, builder, signature.args[0], args[0], args[1])
        return builder.atomic_rmw("add", pointer, args[2], "seq_cst")

    return sig, codegen


@intrinsic
def atomic_cas(typingctx, array, index, expected, value):
    """Atomically: if ``array[index] == expected``, set it to ``value``; True if it did."""
    if not _int64_cell_args(array, index, expected, value):
        return None
    sig = numba.types.boolean(array, numba.types.intp, numba.types.int64, numba.types.int64)

    def codegen(context, builder, signature, args):
        pointer = _int64_cell(context, builder, signature.args[0], args[0], args[1])
        pair = builder.cmpxchg(pointer, args[2], args[3], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)

    return sig, codegen
