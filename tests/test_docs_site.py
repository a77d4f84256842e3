"""Keeps the documentation site (docs/) complete without building it (CI builds it with
``sphinx-build -W`` after the tests): every public name has an API entry, every benchmark
result a page, every gallery script its small committed picture, and the README's and CI's
test commands agree."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PUBLIC_MODULES = ["metrics", "analysis", "plotting", "io", "tl", "dask", "datasets",
                  "methods.registry", "affinity"]
# module constants, described in the API page's text rather than given a page each
CONSTANTS = {"DENSITY_THRESHOLD", "STATIC_FORMATS", "READ_FORMATS", "WRITE_FORMATS", "BUILTIN",
             "BUILT_IN"}
MAX_PICTURE_BYTES = 300_000


def _api_entries() -> dict[str, set[str]]:
    """The names listed under each ``.. currentmodule::`` of docs/api/index.rst."""
    entries: dict[str, set[str]] = {}
    module = None
    for line in (DOCS / "api" / "index.rst").read_text(encoding="utf-8").splitlines():
        if line.startswith(".. currentmodule::"):
            module = line.split("::")[1].strip()
        elif module and re.fullmatch(r"   [A-Za-z_][A-Za-z0-9_]*", line):
            entries.setdefault(module, set()).add(line.strip())
    return entries


@pytest.mark.parametrize("module", ["", *PUBLIC_MODULES])
def test_every_public_name_has_an_api_page(module):
    name = f"unimap.{module}" if module else "unimap"
    public = set(importlib.import_module(name).__all__) - CONSTANTS
    if not module:  # the submodules and the version have their own sections
        public -= {*PUBLIC_MODULES, "__version__"}
    missing = public - _api_entries().get(name, set())
    assert not missing, f"docs/api/index.rst lacks {sorted(missing)} of {name}"


def test_benchmark_pages_include_existing_results_and_are_listed():
    index = (DOCS / "benchmarks" / "index.md").read_text(encoding="utf-8")
    pages = sorted(p for p in (DOCS / "benchmarks").glob("*.md") if p.name != "index.md")
    for page in pages:
        result = ROOT / "benchmarks" / "results" / page.name
        assert result.is_file(), f"{page.name} includes a missing {result.name}"
        assert f"../../benchmarks/results/{page.name}" in page.read_text(encoding="utf-8")
        assert f"<{page.stem}>" in index, f"docs/benchmarks/index.md does not list {page.stem}"
    main_results = {"compare_mnist", "umap_mnist", "tsne_mnist", "gdr_mnist", "dropin",
                    "scale_gdr", "scale_umap", "scale_tsne"}
    assert main_results <= {page.stem for page in pages}


def test_every_gallery_script_has_a_small_picture_on_the_gallery_page():
    gallery = DOCS / "gallery"
    scripts = sorted(gallery.glob("plot_*.py"))
    assert len(scripts) >= 5
    page = (gallery / "index.md").read_text(encoding="utf-8")
    for script in scripts:
        picture = script.with_suffix(".png")
        assert picture.is_file(), f"run python docs/gallery/{script.name} to draw {picture.name}"
        assert picture.stat().st_size < MAX_PICTURE_BYTES, f"{picture.name} is too large"
        assert f"{{image}} {picture.name}" in page and f"{{literalinclude}} {script.name}" in page
        tree = ast.parse(script.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{script.name} has no docstring"
        assert any(isinstance(node, ast.FunctionDef) and node.name == "main"
                   for node in tree.body), f"{script.name} has no main(out)"


def test_readme_links_and_picture_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+?)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert any(t.endswith(".png") for t in local), "the README shows no picture"
    for target in local:
        assert (ROOT / target).exists(), f"README.md links to a missing {target}"


def test_readme_test_command_is_the_one_ci_runs():
    command = ('python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && '
               ".venv/bin/ruff check . && .venv/bin/python -m pytest")
    assert command in (ROOT / "README.md").read_text(encoding="utf-8")
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
