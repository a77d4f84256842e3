"""Figures of the house: how the package is cut, for a checkout and an earlier commit.

Prints, for each tree: modules, modules over 400 lines and under 60 (``__init__.py`` files
aside), imports of private names across modules (``from unimap.x import _name`` where the
importer is not ``unimap.x``), the floors of docs/architecture.md's layers table, the imports
that point up a floor and the import cycles (read with tests/test_architecture.py's own
checks, applied to each tree), and the docstring and comment lines that report a measurement
(:func:`measurement_lines`: measurements belong in ``benchmarks/results/``).

Example::

    python benchmarks/house_figures.py                      # this checkout
    python benchmarks/house_figures.py --base 847155b       # and that commit, side by side
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import re
import subprocess
import tempfile
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _architecture_checks():
    spec = importlib.util.spec_from_file_location("arch", ROOT / "tests" / "test_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _doc_and_comment_lines(source: str) -> dict[int, str]:
    """Line number -> text of every docstring line (any string statement) and comment line,
    doctest examples and their output left out (from a ``>>>`` line to the next blank one)."""
    lines = source.splitlines()
    found = {}
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            in_example = False
            for i in range(node.lineno, node.end_lineno + 1):
                text = lines[i - 1].strip()
                in_example = text.startswith(">>>") or (in_example and bool(text))
                if not in_example:
                    found[i] = lines[i - 1]
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = lines[token.start[0] - 1]
    return found


_NUMBER = r"""(?<![\w.'"])\d+(?:[.,]\d+)?"""
MEASUREMENT = re.compile("|".join([
    # a time or a decimal size, alone or as a range: "0.4 s", "2-4 ms", "56 µs", "24.1 MB"
    # (binary units, KiB/MiB/GiB, are how the code states its own buffers, so they do not count)
    _NUMBER + r"(?:\s?[-–]\s?\d+(?:\.\d+)?)?\s?(?:s|ms|µs|us|ns|min|KB|kB|MB|GB|TB|MB/s|GB/s)"
    r"(?![\w/])",
    _NUMBER + r"(?:x|\s?×)(?!\s?\d)(?!\w)",  # a factor, "2x faster", "5× slower" (not "2 x 35")
    _NUMBER + r"%\s(?:faster|slower|longer|shorter|less|more|fewer"
    r"|of (?:it|its|the|an?|UMAP's|GDR's|t-SNE's)\b)",  # "20% faster", "56% of it"
    r"\b(?:[AHV]100|H200|EPYC|Xeon|Intel host|AMD host)\b|\b\d+-core (?:host|machine)",
    r"\bMNIST-\d+k\b",  # a benchmark subset named with its size
    r"\d(?:\.\d+)?\s?(?:->|→)\s?~?\d",  # before -> after
    r"\b\d+\.\d+\s+against\s+\d*\.\d+",  # "0.542 against 1.38"
    r"\b(?i:recall(?:@\d+)?|accuracy|ARI|KL|correlat\w*|cosines?|trustworthiness)"
    r"\s*(?:of\s+|is\s+|[≈=:]\s*)?~?\d*\.\d+",  # a score from a run: "recall@15 0.9887"
    r"\b\d\.\d+\s?/\s?\d\.\d+",  # figures side by side: "0.43 / 0.64"
    r"\bover \d+ seeds\b",
    r"\bmeasured\b\s+(?:\S+\s+){0,3}?" + _NUMBER + r"(?!\w)",  # "measured 30% faster"
]))


def measurement_lines(root: Path) -> list[tuple[str, int, str]]:
    """``(path, line, text)`` of the docstring and comment lines of ``unimap/**/*.py`` that
    look like a measurement report, by the regular expression ``MEASUREMENT``: a time or a
    decimal size with its unit (s, ms, µs, MB, GB, ...), a factor (``2x``, ``5×``), a
    percentage that compares (``20% faster``, ``56% of it``), a machine's name (H100, EPYC,
    Xeon, "2-core host"), a benchmark subset (``MNIST-70k``), a before -> after pair, two
    decimals "against" each other, a score with its value (recall, accuracy, ARI, KL,
    correlation, trustworthiness), decimals side by side (``0.43 / 0.64``), "over N seeds",
    or "measured" followed by a number. Doctest examples and their output are not read.

    A heuristic: it cannot tell a computed size (``10M 50-D rows: 2 GB``, a grid's bytes)
    from a measured one, nor a benchmark subset named as an example from one named with its
    results, so some lines it counts are not measurements; and a measurement written without
    a unit or a score's name, or split over two lines, escapes it. A link to the results
    (``measured: benchmarks/results/...``) does not count."""
    hits = []
    for path in sorted((root / "unimap").rglob("*.py")):
        lines = _doc_and_comment_lines(path.read_text(encoding="utf-8"))
        hits += [(str(path.relative_to(root)), i, text) for i, text in sorted(lines.items())
                 if MEASUREMENT.search(text)]
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
    private = arch.private_imports(root)  # 'importer: module.name'
    measured = measurement_lines(root)
    return {
        "modules": len(sizes),
        "modules over 400 lines": sum(n > 400 for n in sizes.values()),
        "modules under 60 lines": sum(n < 60 for n in sizes.values()),
        "largest module": "{} ({} lines)".format(*max(
            ((str(p.relative_to(root)), n) for p, n in sizes.items()), key=lambda t: t[1])),
        "private names imported across modules": len(private),
        "files importing them": len({h.split(":")[0] for h in private}),
        "floors": len(set(floor.values())),
        "imports up a floor": len(upward),
        "import cycles": len(arch.import_cycles(root)),
        "measurement lines in the library": len(measured),
        "files with measurement lines": len({h[0] for h in measured}),
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
