"""The interactive map: one HTML file, no server.

The digits' UMAP written by ``unimap.plotting.save_html`` as one self-contained page: the points
are embedded as base64 typed arrays and drawn by a small inlined script on a canvas (no network,
no extra package). Drag to pan, wheel or double-click to zoom, hover over a point for its row
and columns, pick the colour column from the drop-down (the digit, or each point's
neighbourhood preservation, computed from ``X``).

Run ``python docs/gallery/plot_html_map.py [OUT.html]``: it writes ``plot_html_map.html``
beside itself unless told otherwise, and, where headless Chromium is installed, the screenshot
``plot_html_map.png`` that the gallery shows. A few seconds on 2 cores.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import unimap
from unimap.datasets import load_digits
from unimap.io.atomic import atomic_path
from unimap.plotting import save_html


def screenshot(page: Path, out: Path, size: tuple[int, int] = (960, 640)) -> Path | None:
    """A PNG of ``page`` as headless Chromium draws it, or None without Chromium."""
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                    "google-chrome"))), None)
    if chromium is None:
        print("no Chromium on PATH: the map is written, its screenshot is not")
        return None
    with tempfile.TemporaryDirectory() as scratch:
        shot = Path(scratch, "shot.png")  # Chromium picks the format by the suffix
        subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={scratch}/profile",
                        f"--window-size={size[0]},{size[1]}", "--virtual-time-budget=5000",
                        f"--screenshot={shot}", page.resolve().as_uri()],
                       check=True, capture_output=True, timeout=120)
        with atomic_path(out) as tmp:
            tmp.write_bytes(shot.read_bytes())
    return out


def main(out: Path) -> Path:
    X, y = load_digits()
    embedding = unimap.UMAP(random_state=0).fit_transform(X)
    ink = X.sum(axis=1)  # how much of the 8 x 8 grid each digit covers
    columns = {"digit": y.astype(str), "ink": np.round(ink / ink.max(), 3)}
    save_html(out, embedding, columns=columns, color_by="digit", hover=["digit", "ink"],
              title="digits, unimap.UMAP", X=X)
    screenshot(out, out.with_suffix(".png"))
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".html")))
