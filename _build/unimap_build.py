"""unimap's build backend: setuptools, plus numba's kernels compiled into the wheel.

``pyproject.toml`` names this module as the build backend (``backend-path = ["_build"]``).
It is setuptools' ``build_meta`` unchanged, with one more step in ``build_py``: once the
package is copied to the build folder, ``python -m unimap.cli.precompile`` runs there, so that
numba writes its compiled kernels into the package's ``__pycache__`` folders and the wheel
carries them. Numba keys each entry by the source's SHA-256, its own version, the Python
version and the CPU, so the entries are used wherever they match (``pip install .`` or an
install from the sdist builds on the machine that runs it) and ignored elsewhere, where the
kernels compile on first use as before.

``UNIMAP_PRECOMPILE=0`` skips the step (about a minute on 2 cores). Editable installs skip
it: their kernels are cached in the source tree on first use. A failure of the step is
printed and the wheel is built without the cache.
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
        if getattr(self, "editable_mode", False) or self.dry_run:
            return
        if os.environ.get("UNIMAP_PRECOMPILE", "1") == "0":
            print("unimap: UNIMAP_PRECOMPILE=0, kernels not compiled into the wheel")
            return
        _compile_kernels(Path(self.build_lib))


def _compile_kernels(build_lib: Path) -> None:
    # A wheel must not depend on earlier builds: drop numba files a previous build left in
    # the reused build folder (entries of changed sources would ship as dead weight).
    for stale in [*build_lib.glob("unimap/**/*.nbi"), *build_lib.glob("unimap/**/*.nbc")]:
        stale.unlink()
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)  # numba must write next to the built sources
    env["PYTHONPATH"] = os.pathsep.join([str(build_lib), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # only numba's files, not .pyc, go into the wheel
    proc = subprocess.run([sys.executable, "-m", "unimap.cli.precompile"], cwd=build_lib,
                          env=env, check=False)
    if proc.returncode != 0:
        print(f"unimap: WARNING: compiling the kernels failed (exit {proc.returncode}); the "
              "wheel is built without them and they will compile on first use",
              file=sys.stderr)
