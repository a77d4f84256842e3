"""Memory known before it is spent: an estimate's peak, checked against what the machine has
(or ``max_memory``) before the first large allocation.

:class:`MemoryEstimate` holds the peak of each phase of a fit; the neighbour embeddings' model
of those peaks, which knows every stage, is :mod:`unimap.methods.memory_plan`. The estimate is
the memory the fit adds to the process; the input array itself is not counted, since the
caller holds it (measured: benchmarks/results/fit_memory.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MemoryEstimate", "InsufficientMemoryError", "available_memory", "parse_memory",
           "check_memory", "format_bytes", "input_copy_estimate"]

# Slack for what the allocator keeps after a free and the small arrays not counted: the
# estimate is scaled up to stay above the measured peaks (measured:
# benchmarks/results/fit_memory.md).
ALLOCATOR_SLACK = 1.15


class InsufficientMemoryError(MemoryError):
    """A fit that would need more memory than is available (or than ``max_memory``)."""


@dataclass
class MemoryEstimate:
    """The estimated peak of a fit, phase by phase.

    Attributes
    ----------
    phases : dict[str, int]
        Bytes the fit holds at the peak of each phase (what earlier phases kept plus the
        phase's own temporaries), before ``ALLOCATOR_SLACK``.
    advice : dict[str, str]
        For each phase, the parameter that lowers its memory.
    """

    phases: dict[str, int] = field(default_factory=dict)
    advice: dict[str, str] = field(default_factory=dict)

    @property
    def peak(self) -> int:
        """The estimated peak in bytes (the largest phase, with the allocator's slack)."""
        return int(ALLOCATOR_SLACK * max(self.phases.values(), default=0))

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=self.phases.get) if self.phases else ""

    def describe(self) -> str:
        parts = ", ".join(f"{name} {format_bytes(size)}" for name, size in self.phases.items())
        return f"about {format_bytes(self.peak)} at its peak ({parts})"


def format_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
          "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2,
          "gib": 1024**3, "tib": 1024**4}


def parse_memory(value: Any) -> int | None:
    """Bytes from ``max_memory``: an int or float of bytes, or a string such as ``"8GB"``,
    ``"512 MiB"``; ``None`` stays ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value)
        if match is None or match.group(2).lower() not in _UNITS:
            raise ValueError(f"max_memory={value!r} is not a size: use bytes, or a string "
                             "such as '8GB' or '512MiB'")
        return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    return int(value)


def available_memory() -> int | None:
    """Bytes this process can still allocate: the kernel's ``MemAvailable``, or the cgroup's
    limit minus its usage when that is lower; None where neither can be read (not Linux)."""
    limits = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
                    break
    except OSError:
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as fh:
                limit = fh.read().strip()
            with open(usage_file) as fh:
                usage = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # "max" or a huge number: no limit
            limits.append(max(0, int(limit) - usage))
        break
    return min(limits) if limits else None


def check_memory(estimate: MemoryEstimate, max_memory: Any, owner: str) -> None:
    """Refuse (``InsufficientMemoryError``) when the estimate exceeds the limit.

    ``max_memory="available"`` compares with :func:`available_memory` (no check where it is
    unknown); a size compares with that size; ``None`` turns the check off.
    """
    if max_memory is None:
        return
    if isinstance(max_memory, str) and max_memory == "available":
        limit, source = available_memory(), "the available memory"
        if limit is None:
            return
    else:
        limit, source = parse_memory(max_memory), "max_memory"
    if estimate.peak <= limit:
        return
    phase = estimate.peak_phase
    raise InsufficientMemoryError(
        f"{owner} would need {estimate.describe()}, more than {source} "
        f"({format_bytes(limit)}); the largest phase is {phase}: "
        f"{estimate.advice.get(phase, 'use fewer samples')}. To run it anyway, pass "
        f"max_memory=None (the estimate is conservative, see unimap/runtime/memory.py)")


def input_copy_estimate(X: Any) -> MemoryEstimate | None:
    """The float32 copy validation makes of an array of another dtype (or None: no copy, or
    not an array yet), so that a large float64 input (a dense n x n distance matrix) is
    refused before it is copied."""
    import numpy as np

    shape, dtype = getattr(X, "shape", None), getattr(X, "dtype", None)
    if shape is None or dtype is None or len(shape) != 2 or dtype == np.float32:
        return None
    # sparse: its data array only
    size = int(X.nnz) * 4 if hasattr(X, "nnz") else int(shape[0]) * int(shape[1]) * 4
    return MemoryEstimate({"input": size}, {"input": "pass float32 data (no copy is made)"})
