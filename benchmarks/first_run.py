"""The first minute of a new user: a fresh virtual environment, the first and second call.

The script creates a virtual environment in a temporary folder, installs a clean copy of this
checkout's tracked files into it as a user would (``pip install .``, a built wheel, not
editable; pip's own download cache is used, so no network time is counted), then runs, each
in a fresh process:

* ``import unimap`` and ``from unimap import UMAP, TSNE, GDR, PCA`` (best of 5 after one
  unmeasured run, so the interpreter's own ``.pyc`` files exist);
* per method, the first call after install and the second one, on scikit-learn's digits
  (1,797 × 64) as ``unimap embed digits``
  would: ``Method(random_state=0).fit(X)``. The time is the process's wall time from the
  parent's view (interpreter start, imports, fit, exit), the number a user waits for.

The wheel's build compiles numba's kernels into it (``_build/unimap_build.py``), so the
install takes longer and the first call finds numba's cache filled; ``--no-precompile``
builds it with ``UNIMAP_PRECOMPILE=0``, the state before, where the first call compiles.

With ``--compile-report`` the first calls also record numba's compile events and list the
kernels by compile time (inclusive of the kernels they call), to show where the wait goes.

Target (issue 20): first call ≤ 2× the second for every method, ``import unimap`` ≤ 0.5 s.

Example::

    python benchmarks/first_run.py
    python benchmarks/first_run.py --methods umap,gdr --compile-report
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "first_run.md"
METHODS = {
    "umap": "UMAP(random_state=0)",
    "tsne": "TSNE(random_state=0)",
    "gdr": "GDR(random_state=0)",
    "gdr-tsne": "GDR(normalized=True, random_state=0)",
    "pca": "PCA(2)",
}

# The worker: fit one method on digits, optionally recording numba's compile events.
_FIT = """
import json, sys, time
t0 = time.perf_counter()
record = {record}
if record:
    from numba.core import event
    listener = event.RecordingListener()
    event.register("numba:compile", listener)
import unimap
from unimap.datasets import load_digits
X, _ = load_digits()
t1 = time.perf_counter()
model = unimap.{call}.fit(X)
t2 = time.perf_counter()
out = {{"import_s": t1 - t0, "fit_s": t2 - t1, "timings": getattr(model, "timings_", None)}}
if record:
    starts, compiled = {{}}, {{}}
    for ts, ev in listener.buffer:
        key = ev.data["dispatcher"].py_func.__module__ + "." + ev.data["dispatcher"].__name__
        if ev.is_start:
            starts.setdefault(key, []).append(ts)
        else:
            compiled[key] = compiled.get(key, 0.0) + ts - starts[key].pop()
    out["compiled"] = compiled
print("@@RESULT@@ " + json.dumps(out))
"""


def _run(python: Path, code: str) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          check=False, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed:\n{proc.stderr[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@ ")]
    return wall, (json.loads(lines[-1].split(" ", 1)[1]) if lines else {})


def _best_import(python: Path, statement: str, repeats: int = 5) -> float:
    _run(python, statement)
    return min(_run(python, statement)[0] for _ in range(repeats))


def _interpreter_start(python: Path, repeats: int = 5) -> float:
    return min(_run(python, "pass")[0] for _ in range(repeats))


def _clean_copy(dest: Path) -> Path:
    """The checkout's tracked files only: no ``build/`` left by an earlier build, no caches."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, dest / name)
    return dest


def make_venv(root: Path, source: Path, precompile: bool) -> Path:
    """A fresh virtual environment with ``source`` installed from a wheel built there."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    python = root / "bin" / "python"
    env = dict(os.environ, UNIMAP_PRECOMPILE="1" if precompile else "0")
    env.pop("NUMBA_CACHE_DIR", None)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(source)], check=True,
                   env=env)
    return python


def measure(python: Path, methods: list[str], record: bool) -> dict:
    results: dict = {"interpreter_s": _interpreter_start(python),
                     "import_s": _best_import(python, "import unimap"),
                     "import_estimators_s": _best_import(
                         python, "from unimap import UMAP, TSNE, GDR, PCA")}
    for method in methods:
        first = _run(python, _FIT.format(record=record, call=METHODS[method]))
        second = _run(python, _FIT.format(record=False, call=METHODS[method]))
        results[method] = {"first": first, "second": second}
        print(f"[{method}] first {first[0]:.2f} s, second {second[0]:.2f} s, "
              f"ratio {first[0] / second[0]:.2f}", file=sys.stderr, flush=True)
    return results


def render(results: dict, methods: list[str], record: bool, install_s: float, *,
           precompile: bool) -> str:
    from _harness import machine_description, markdown_table

    rows = []
    for m in methods:
        (w1, r1), (w2, r2) = results[m]["first"], results[m]["second"]
        rows.append([m, METHODS[m], f"{w1:.2f}", f"{w2:.2f}", f"{w1 / w2:.2f}×",
                     f"{r1['fit_s']:.2f}", f"{r2['fit_s']:.2f}"])
    parts = [
        "# First and second call in a fresh virtual environment (digits, 1,797 × 64)",
        "",
        f"- Machine: {machine_description()}",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Command: `{shlex.join(['python', 'benchmarks/first_run.py', *sys.argv[1:]])}`",
        f"- Install (`pip install .` of a clean copy into a new venv, pip cache warm, "
        f"{'kernels compiled into the wheel' if precompile else 'UNIMAP_PRECOMPILE=0'}): "
        f"{install_s:.0f} s",
        f"- Interpreter start (`python -c pass`, best of 5): {results['interpreter_s']:.3f} s",
        f"- `import unimap` (fresh process, best of 5): {results['import_s']:.3f} s; "
        f"`from unimap import UMAP, TSNE, GDR, PCA`: {results['import_estimators_s']:.3f} s",
        "",
        "Times are the whole process's wall time (interpreter start, imports, loading digits, "
        "fit, exit); `fit` is the fit call alone.",
        "",
        markdown_table(["method", "call", "first s", "second s", "first / second",
                        "fit first s", "fit second s"], rows),
    ]
    if record:
        parts += ["", "Compile time per kernel in the first call (seconds, inclusive of the "
                  "kernels it calls; top 12 per method):", ""]
        for m in methods:
            compiled = results[m]["first"][1].get("compiled", {})
            top = sorted(compiled.items(), key=lambda kv: -kv[1])[:12]
            parts.append(f"- {m}: " + (", ".join(f"`{k.removeprefix('unimap.')}` {v:.2f}"
                                                  for k, v in top) or "nothing compiled"))
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--compile-report", action="store_true")
    parser.add_argument("--venv", type=Path, default=None,
                        help="use this folder for the environment (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--no-precompile", action="store_true",
                        help="build the wheel with UNIMAP_PRECOMPILE=0 (kernels compile on "
                             "first use): the state before the build compiled them")
    args = parser.parse_args(argv)
    methods = args.methods.split(",")
    if unknown := set(methods) - set(METHODS):
        parser.error(f"unknown methods {sorted(unknown)}; choose from {sorted(METHODS)}")
    with tempfile.TemporaryDirectory(prefix="unimap_first_run_") as tmp:
        root = args.venv or Path(tmp) / "venv"
        source = _clean_copy(Path(tmp) / "src")
        t0 = time.perf_counter()
        python = make_venv(root, source, precompile=not args.no_precompile)
        install_s = time.perf_counter() - t0
        results = measure(python, methods, args.compile_report)
    report = render(results, methods, args.compile_report, install_s,
                    precompile=not args.no_precompile)
    print(report)
    if not args.no_save:
        args.out.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
