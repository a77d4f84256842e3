"""Plots of embeddings: static figures (matplotlib, imported only when drawing) and a
standalone interactive HTML map.
"""

from unimap.plotting.static import (
    DENSITY_THRESHOLD,
    STATIC_FORMATS,
    html_map,
    save_comparison,
    save_html,
    save_scatter,
    scatter,
)

__all__ = ["scatter", "save_scatter", "save_comparison", "save_html", "html_map",
           "DENSITY_THRESHOLD", "STATIC_FORMATS"]
