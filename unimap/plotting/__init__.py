"""Plots of embeddings: static figures (matplotlib, imported only when drawing), a standalone
interactive HTML map, and two linked maps side by side.
"""

from unimap.plotting.html_map import linked_html_map, save_linked_html
from unimap.plotting.static import (
    DENSITY_THRESHOLD,
    STATIC_FORMATS,
    html_map,
    plot_trust,
    save_comparison,
    save_html,
    save_scatter,
    scatter,
)
from unimap.plotting.trust import neighborhood_preservation

__all__ = ["scatter", "save_scatter", "save_comparison", "plot_trust", "save_html",
           "html_map", "save_linked_html", "linked_html_map", "neighborhood_preservation",
           "DENSITY_THRESHOLD", "STATIC_FORMATS"]
