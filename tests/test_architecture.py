"""docs/architecture.md is a true map: every path it names exists, every function it names is
defined there, and every kernel module (``*_numba.py``, ``*_cuda.py``) is on it.

The modules are read as text, never imported (no numba compile, no CUDA)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"

# `unimap/...` in backticks, optionally followed by `:name`
_REFERENCE = re.compile(r"`(unimap/[A-Za-z0-9_./-]*)(?::([A-Za-z_][A-Za-z0-9_]*))?`")
MIN_REFERENCES = 20


def references(text: str) -> list[tuple[str, str | None]]:
    """The ``(path, name or None)`` pairs named in backticks in ``text``, in order."""
    return [(path, name or None) for path, name in _REFERENCE.findall(text)]


def defines(source: str, name: str) -> bool:
    """Whether ``source`` defines ``name``: a ``def``, ``class`` or assignment at any
    indentation (by regex on the text)."""
    escaped = re.escape(name)
    pattern = (rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{escaped}\b"
               rf"|^[ \t]*class[ \t]+{escaped}\b"
               rf"|^[ \t]*{escaped}[ \t]*(?::[^=\n]*)?=(?!=)")
    return re.search(pattern, source, re.MULTILINE) is not None


def problems(text: str, root: Path) -> list[str]:
    """What is wrong with the references of ``text`` against the tree at ``root``."""
    found = []
    for path, name in references(text):
        target = root / path
        if not target.exists():
            found.append(f"{path}: no such file or directory")
        elif name is not None:
            if not target.is_file():
                found.append(f"{path}:{name}: a name needs a file, not a directory")
            elif not defines(target.read_text(encoding="utf-8"), name):
                found.append(f"{path}:{name}: {name} is not defined in {path}")
    return found


def kernel_modules(root: Path) -> list[str]:
    """Every ``*_numba.py`` and ``*_cuda.py`` module under ``unimap/``, as repo paths."""
    package = root / "unimap"
    return sorted(str(p.relative_to(root)).replace("\\", "/")
                  for pattern in ("*_numba.py", "*_cuda.py") for p in package.rglob(pattern))


def unmapped_kernels(text: str, root: Path) -> list[str]:
    """The kernel modules under ``root/unimap`` that ``text`` never names."""
    named = {path for path, _ in references(text)}
    return [module for module in kernel_modules(root) if module not in named]


@pytest.fixture(scope="module")
def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def test_every_named_path_and_function_exists(doc_text):
    named = references(doc_text)
    assert len(named) >= MIN_REFERENCES, (
        f"docs/architecture.md names only {len(named)} unimap/ paths (at least "
        f"{MIN_REFERENCES} expected): is the formula table still there?")
    found = problems(doc_text, ROOT)
    assert not found, "docs/architecture.md names what is not there:\n" + "\n".join(found)


def test_every_kernel_module_is_mapped(doc_text):
    assert kernel_modules(ROOT), "no *_numba.py or *_cuda.py module found under unimap/"
    missing = unmapped_kernels(doc_text, ROOT)
    assert not missing, ("kernel modules missing from docs/architecture.md:\n"
                         + "\n".join(missing))


def test_the_check_catches_a_bad_path_and_a_bad_name(tmp_path):
    (tmp_path / "unimap").mkdir()
    (tmp_path / "unimap" / "mod.py").write_text(
        "X = 1\n\n\nclass Shape:\n    def area(self):\n        return 0\n\n\n"
        "def    spaced():\n    pass\n", encoding="utf-8")
    good = ("`unimap/mod.py` `unimap/mod.py:X` `unimap/mod.py:Shape` `unimap/mod.py:area` "
            "`unimap/mod.py:spaced` `unimap/`")
    assert problems(good, tmp_path) == []
    assert problems("`unimap/nowhere.py`", tmp_path) == [
        "unimap/nowhere.py: no such file or directory"]
    assert problems("`unimap/mod.py:missing`", tmp_path) == [
        "unimap/mod.py:missing: missing is not defined in unimap/mod.py"]
    # a name that only appears in a comparison or a call is not a definition
    (tmp_path / "unimap" / "use.py").write_text("if X == 1:\n    area()\n", encoding="utf-8")
    assert len(problems("`unimap/use.py:X` `unimap/use.py:area`", tmp_path)) == 2


def test_the_check_catches_an_unmapped_kernel_module(tmp_path):
    stage = tmp_path / "unimap" / "stage"
    stage.mkdir(parents=True)
    for name in ("a_numba.py", "b_cuda.py", "driver.py"):
        (stage / name).write_text("", encoding="utf-8")
    assert unmapped_kernels("`unimap/stage/a_numba.py`", tmp_path) == [
        "unimap/stage/b_cuda.py"]
    assert unmapped_kernels("`unimap/stage/a_numba.py:f` `unimap/stage/b_cuda.py`",
                            tmp_path) == []


# -- layers: every import of the package points down the doc's table of floors ----------------
# The two imports that point up, inside functions, named in the doc ("runs only in the case
# named"): transform, PCA and GDR's fit of a dask array call the Dask integration.
ALLOWED_UPWARD = {("unimap.methods._estimator", "unimap.dask.transform"),
                  ("unimap.methods.pca", "unimap.dask.sample"),
                  ("unimap.methods._base", "unimap.dask.fit")}
_PUBLIC_NAMES = {"UMAP", "TSNE", "GDR", "PCA", "load"}  # `from unimap import X` of an estimator


def floors(text: str) -> dict[str, int]:
    """``package -> floor`` from the doc's layers table (floor 0 is its last row); a package is
    the first component under ``unimap/`` (``cli``, ``tl``, ``runtime``, ...)."""
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines()
            if line.startswith("| ") and "`unimap/" in line.split("|")[2]]
    result = {}
    for height, row in enumerate(reversed(rows)):
        for path, _ in references(row.split("|")[2]):
            result[path.removeprefix("unimap/").strip("/").removesuffix(".py")] = height
    return result


def package_imports(root: Path) -> list[tuple[str, str, bool]]:
    """``(importing module, imported module, inside a function)`` for every import of a unimap
    module in ``root/unimap`` (imports under ``if TYPE_CHECKING:`` are not run)."""
    import ast

    found = []
    for path in sorted((root / "unimap").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

        def visit(node, in_function, module=module):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and getattr(child.test, "id", "") == "TYPE_CHECKING":
                    continue
                inner = in_function or isinstance(child, (ast.FunctionDef,
                                                          ast.AsyncFunctionDef))
                targets = []
                if isinstance(child, ast.ImportFrom) and (child.module or "").startswith(
                        "unimap"):
                    targets = ([child.module] if child.module != "unimap"
                               else [f"unimap.{a.name}" for a in child.names])
                elif isinstance(child, ast.Import):
                    targets = [a.name for a in child.names if a.name.startswith("unimap.")]
                found.extend((module, target, inner) for target in targets)
                visit(child, inner, module)

        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return "methods" if parts[1] in _PUBLIC_NAMES else parts[1]


def layer_violations(text: str, root: Path) -> list[str]:
    """Imports between packages that do not point down the doc's floors."""
    floor = floors(text)
    floor.setdefault("_version", -1)  # the version string: importable from anywhere
    floor["__init__"] = max(floor.values()) + 1  # `unimap` itself, lazily, on top
    found = []
    for module, target, inner in package_imports(root):
        here, there = _package(module), _package(target)
        if here == there:
            continue
        if here not in floor or there not in floor:
            found.append(f"{module} -> {target}: package not in the layers table")
        elif floor[there] >= floor[here] and (module, target) not in ALLOWED_UPWARD:
            where = "inside a function" if inner else "at module level"
            found.append(f"{module} -> {target} ({where}): floor {floor[here]} imports "
                         f"floor {floor[there]}")
    return found


def test_imports_point_down_the_layers(doc_text):
    assert len(floors(doc_text)) >= 10, "the layers table of docs/architecture.md is missing"
    found = layer_violations(doc_text, ROOT)
    assert not found, "imports against docs/architecture.md's layers:\n" + "\n".join(found)


def test_layer_check_catches_an_upward_import(tmp_path, doc_text):
    runtime = tmp_path / "unimap" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "threads.py").write_text("from unimap.methods.umap import UMAP\n")
    (tmp_path / "unimap" / "methods").mkdir()
    (tmp_path / "unimap" / "methods" / "umap.py").write_text("import unimap.runtime.threads\n")
    found = layer_violations(doc_text, tmp_path)
    assert found == ["unimap.runtime.threads -> unimap.methods.umap (at module level): "
                     f"floor 0 imports floor {floors(doc_text)['methods']}"]


def import_cycles(root: Path) -> list[list[str]]:
    """Cycles among the modules of ``root/unimap`` (every import, in functions too; ``from p
    import m`` of a submodule ``m`` counts as an import of ``p.m``; a module's import of its
    own package does not count, since Python initialises the package first)."""
    package = root / "unimap"
    modules = set()
    for path in package.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    graph: dict[str, set[str]] = {m: set() for m in modules}

    def counts(module, target):  # a package is initialised before its submodules anyway
        return target in modules and not (module + ".").startswith(target + ".")

    for module, target, _ in package_imports(root):
        if counts(module, target):
            graph[module].add(target)
    for module, names in _from_imports(root):
        graph[module] |= {name for name in names if counts(module, name)}
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


def _from_imports(root: Path) -> list[tuple[str, list[str]]]:
    """``(module, [p.m for each name m of 'from p import m, ...'])`` of every module."""
    import ast

    found = []
    for path in sorted((root / "unimap").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("unimap"):
                found.append((module, [f"{node.module}.{a.name}" for a in node.names]))
    return found


def test_no_import_cycles():
    cycles = import_cycles(ROOT)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_cycle_check_finds_a_cycle(tmp_path):
    package = tmp_path / "unimap" / "affinity"
    package.mkdir(parents=True)
    (package / "fuzzy.py").write_text("def f():\n    from unimap.affinity.joint import g\n")
    (package / "joint.py").write_text("from unimap.affinity import fuzzy\n")
    assert import_cycles(tmp_path) == [["unimap.affinity.fuzzy", "unimap.affinity.joint",
                                        "unimap.affinity.fuzzy"]]


# -- one privacy rule: a `_name` is its module's own ------------------------------------------
def private_imports(root: Path) -> list[str]:
    """``importer: module.name`` for every private name (or private module) of unimap that a
    module imports from another module (tests may; the library may not)."""
    import ast

    found = []
    for path in sorted((root / "unimap").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.level == 0
                    and (node.module or "").startswith("unimap") and node.module != module):
                found += [f"{module}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_private_name_is_imported_across_modules():
    found = private_imports(ROOT)
    assert not found, ("private names imported from other modules (make them public where "
                       "others need them):\n" + "\n".join(found))


def test_privacy_check_finds_a_private_import(tmp_path):
    package = tmp_path / "unimap" / "affinity"
    package.mkdir(parents=True)
    (package / "fuzzy.py").write_text("def _helper():\n    pass\n")
    (package / "joint.py").write_text("from unimap.affinity.fuzzy import _helper\n"
                                      "from unimap.affinity.fuzzy import __doc__\n")
    assert private_imports(tmp_path) == ["unimap.affinity.joint: unimap.affinity.fuzzy._helper"]
