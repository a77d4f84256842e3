"""Runs the Examples sections of the public docstrings as doctests, and requires one on every
public estimator and function (the names in ``__all__`` of ``unimap`` and of its public
modules). The examples use small data (the digits, a few hundred random rows) and print only
what is deterministic: shapes, dtypes, booleans, exact or rounded values. They never download:
``load_mnist``'s example is skipped.

Each module whose public names are documented here is searched whole, so an example on a
method (``UMAP.update``, ``save``) runs too. Files an example writes go to a temporary folder.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import sys

import pytest

PUBLIC_MODULES = ["unimap.metrics", "unimap.analysis", "unimap.plotting", "unimap.io",
                  "unimap.tl", "unimap.dask", "unimap.datasets"]
# optional libraries (all in the test extra): a module's examples are skipped without one they
# import, or, for the modules that draw, without matplotlib
OPTIONAL = {"matplotlib", "anndata", "dask", "distributed", "pyarrow", "scanpy", "pandas"}
DRAWING = ("unimap.plotting", "unimap.analysis")
# the results that the documented functions return: no example of their own
RESULT_TYPES = {"SortIndexChange", "DistanceComparison", "SortedDistances",
                "NeighborOverlap", "RelativeError", "EmbeddingAnalysis", "SubsampleStability",
                "RuntimeProfile", "DaskKNNGraph", "Moments", "SamplePlacement"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_objects() -> list[tuple[str, object]]:
    import unimap

    found = [(f"unimap.{name}", getattr(unimap, name))
             for name in ("PCA", "UMAP", "TSNE", "GDR", "load", "InvalidParameterError")]
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        found += [(f"{module_name}.{name}", getattr(module, name)) for name in module.__all__]
    return [(name, obj) for name, obj in found if inspect.isclass(obj) or inspect.isfunction(obj)]


def _doctests(module_name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(module_name)
    return [test for test in doctest.DocTestFinder(exclude_empty=True).find(module)
            if test.examples and test.name.startswith(module_name)]


def _modules_with_examples() -> list[str]:
    """The modules that define a public object and hold at least one example."""
    return sorted(name for name in {obj.__module__ for _, obj in _public_objects()}
                  if _doctests(name))


@pytest.mark.parametrize("name, obj", [pytest.param(n, o, id=n) for n, o in _public_objects()
                                       if n.rsplit(".", 1)[1] not in RESULT_TYPES])
def test_public_docstring_has_examples(name, obj):
    assert "\nExamples\n" in inspect.cleandoc(obj.__doc__ or ""), f"{name} has no Examples"


@pytest.mark.parametrize("module_name", _modules_with_examples())
def test_docstring_examples(module_name, tmp_path, monkeypatch):
    tests = _doctests(module_name)
    imported = {match for test in tests for example in test.examples
                if not example.options.get(doctest.SKIP)
                for match in re.findall(r"^(?:import|from)\s+(\w+)", example.source, re.M)}
    for library in sorted(imported & OPTIONAL):
        pytest.importorskip(library)
    if module_name.startswith(DRAWING):
        pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    try:
        for test in tests:
            runner.run(test, out=report.append)
    finally:
        if "matplotlib.pyplot" in sys.modules:
            import matplotlib.pyplot as plt

            plt.close("all")
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0, "".join(report)
