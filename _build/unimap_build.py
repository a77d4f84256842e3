"""unimap's build backend: setuptools, plus numba's kernels compiled into the wheel.

``pyproject.toml`` names this module as the build backend (``backend-path = ["_build"]``).
It is setuptools' ``build_meta`` unchanged, with one more step in ``build_py``: once the
package is copied to the build folder, ``python -m unimap.cli.precompile`` runs there, so that
numba writes its compiled kernels into the package's ``__pycache__`` folders and the wheel
carries them. Numba keys each entry by the source's SHA-256, its own version, the Python
version and the CPU, so the entries are used wherever they match (``pip install .`` or an
install from the sdist builds on the machine that runs it) and ignored elsewhere, where the
kernels compile on first use as before.

An editable install (``pip install -e .``, the README's quick start) runs the same step on
the source tree, where such an install imports unimap from: numba writes the kernels into the
tree's ``__pycache__`` folders, so that the first call after the install compiles nothing
either (it compiled for 25 s on 2 cores against 2.8 s for the second call). Entries the tree
holds already are loaded, not compiled again, so a reinstall costs seconds.

``UNIMAP_PRECOMPILE=0`` skips the step (about a minute on 2 cores). A failure of the step is
printed and the install goes on without the cache (the kernels compile on first use).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from setuptools import build_meta as _setuptools_backend
from setuptools.build_meta import *  # noqa: F401,F403  (the PEP 517 hooks)
from setuptools.command.build_py import build_py as _build_py

__all__ = _setuptools_backend.__all__ + ["BuildPyWithKernels"]


class BuildPyWithKernels(_build_py):
    """``build_py``, then the numba kernels compiled into the built package."""

    def run(self) -> None:
        super().run()
        if self.dry_run:
            return
        if os.environ.get("UNIMAP_PRECOMPILE", "1") == "0":
            print("unimap: UNIMAP_PRECOMPILE=0, kernels not compiled ahead")
            return
        if getattr(self, "editable_mode", False):
            # the package is imported from the source tree: compile there
            _compile_kernels(Path(self.get_package_dir("unimap")).resolve().parent,
                             editable=True)
            return
        _compile_kernels(Path(self.build_lib))


def _compile_kernels(build_lib: Path, editable: bool = False) -> None:
    # A wheel must not depend on earlier builds: drop numba files a previous build left in
    # the reused build folder (entries of changed sources would ship as dead weight). A
    # source tree keeps its own: numba replaces those of changed sources itself.
    if not editable:
        for stale in [*build_lib.glob("unimap/**/*.nbi"), *build_lib.glob("unimap/**/*.nbc")]:
            stale.unlink()
    env = dict(os.environ)
    if not editable:  # an editable install's kernels go where its runs will look for them
        env.pop("NUMBA_CACHE_DIR", None)  # numba must write next to the built sources
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # only numba's files, not .pyc, go into the wheel
    env["PYTHONPATH"] = os.pathsep.join([str(build_lib), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    proc = subprocess.run([sys.executable, "-m", "unimap.cli.precompile"], cwd=build_lib,
                          env=env, check=False)
    if proc.returncode != 0:
        print(f"unimap: WARNING: compiling the kernels failed (exit {proc.returncode}); the "
              "install goes on without them and they will compile on first use",
              file=sys.stderr)
