"""Sphinx configuration of unimap's documentation: the API reference from the numpydoc
docstrings (autodoc, autosummary, numpydoc), the Markdown pages through myst-parser, and a
gallery of pictures that the scripts in ``docs/gallery/`` draw (committed, not run here).

Build it warning-free, as CI does::

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# Import unimap from this checkout even where it is not installed (it is in CI).
sys.path.insert(0, str(DOCS.parent))
# The docs never fit anything heavy, but autodoc imports every public module: no threads pinned.
os.environ.setdefault("UNIMAP_PIN_THREADS", "0")

import unimap  # noqa: E402

project = "unimap"
author = "the unimap developers"
copyright = "the unimap developers, BSD-3-Clause"
release = unimap.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# scripts/ and gallery/ hold Python files and their pictures, not pages; figures/gdr_switches.md
# is the note behind a figure that gdr.md shows.
exclude_patterns = ["_build", "scripts", "gallery/*.py", "figures/*.md", "Thumbs.db",
                    ".DS_Store"]

# -- API reference ------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
autodoc_member_order = "groupwise"
# The optional libraries some modules name (imported only when used) need not be installed.
autodoc_mock_imports = ["anndata", "scanpy", "dask", "distributed", "pyarrow"]
numpydoc_show_class_members = False  # the class template lists the methods itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- Markdown ---------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# -- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"unimap {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False


# -- Links to the repository ---------------------------------------------------------------------
# The Markdown pages link benchmark results as ../benchmarks/results/NAME.md, which is right on
# GitHub; here each of those files is included by the page benchmarks/NAME, so the links go there.
def setup(app):
    from sphinx import addnodes
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class BenchmarkLinks(SphinxPostTransform):
        default_priority = 8  # before myst-parser resolves its references (9)

        def run(self, **kwargs):
            for node in self.document.findall(addnodes.pending_xref):
                target = node.get("reftarget", "")
                if node.get("reftype") == "myst" and "benchmarks/results/" in target:
                    page = "benchmarks/" + target.rsplit("/", 1)[1].removesuffix(".md")
                    if page in self.env.all_docs:
                        node["refdomain"], node["reftarget"] = "doc", page

    app.add_post_transform(BenchmarkLinks)
