"""Figures of the house: how the package is cut, for a checkout and an earlier commit.

Prints, for each tree: modules, modules over 400 lines and under 60 (``__init__.py`` files
aside), imports of private names across modules (``from unimap.x import _name`` where the
importer is not ``unimap.x``), the floors of docs/architecture.md's layers table, the imports
that point up a floor and the import cycles (read with tests/test_architecture.py's own
checks, applied to each tree).

Example::

    python benchmarks/house_figures.py                      # this checkout
    python benchmarks/house_figures.py --base 847155b       # and that commit, side by side
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _architecture_checks():
    spec = importlib.util.spec_from_file_location("arch", ROOT / "tests" / "test_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def private_imports(root: Path) -> list[tuple[str, str, str]]:
    """``(importer, module, name)`` of every private name imported across modules."""
    hits = []
    for path in sorted((root / "unimap").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.level == 0
                    and (node.module or "").startswith("unimap") and node.module != module):
                hits += [(module, node.module, a.name) for a in node.names
                         if a.name.startswith("_") and not a.name.startswith("__")]
    return hits


def figures(root: Path) -> dict[str, object]:
    arch = _architecture_checks()
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines())
             for p in (root / "unimap").rglob("*.py") if p.name != "__init__.py"}
    text = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    floor = arch.floors(text)
    upward = [(m, t) for m, t, _ in arch.package_imports(root)
              if arch._package(m) != arch._package(t) and arch._package(t) in floor
              and arch._package(m) in floor and floor[arch._package(t)] >= floor[arch._package(m)]]
    private = private_imports(root)
    return {
        "modules": len(sizes),
        "modules over 400 lines": sum(n > 400 for n in sizes.values()),
        "modules under 60 lines": sum(n < 60 for n in sizes.values()),
        "largest module": "{} ({} lines)".format(*max(
            ((str(p.relative_to(root)), n) for p, n in sizes.items()), key=lambda t: t[1])),
        "private names imported across modules": len(private),
        "files importing them": len({h[0] for h in private}),
        "floors": len(set(floor.values())),
        "imports up a floor": len(upward),
        "import cycles": len(arch.import_cycles(root)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="an earlier commit to compare with")
    args = parser.parse_args()
    trees = {"this checkout": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if args.base:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", tmp,
                            args.base], check=True)
            trees = {args.base: Path(tmp), **trees}
        try:
            table = {name: figures(root) for name, root in trees.items()}
        finally:
            if args.base:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tmp],
                               check=True)
    names = list(table)
    print("| figure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in next(iter(table.values())):
        print(f"| {key} | " + " | ".join(str(table[n][key]) for n in names) + " |")


if __name__ == "__main__":
    main()
