"""Writes a gallery figure as a small PNG: matplotlib's RGBA image reduced to an adaptive
palette (most figures use a few dozen colours), about a third of the size, atomically."""

from __future__ import annotations

import io
from pathlib import Path

from unimap.io.atomic import atomic_path


def save_figure(fig, out: Path, dpi: int = 72, colors: int = 256) -> Path:
    from PIL import Image  # a dependency of matplotlib

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=dpi, format="png")
    image = Image.open(buffer).convert("RGB").quantize(colors=colors)
    with atomic_path(out) as tmp:
        image.save(tmp, format="png", optimize=True)
    return out
