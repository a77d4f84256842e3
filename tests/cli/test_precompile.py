"""The kernels compiled ahead of time: after ``unimap.cli.precompile``, a fresh process that
fits and transforms with every method compiles nothing.

The check can fail: a kernel that a common call reaches but the precompile step does not (a
new kernel, or a new specialisation from a changed dtype or layout) is compiled in the
second process, and the listener below sees it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# A user's session: each method on digits, fit then transform, and the quality scores.
_USER_CALLS = """
import json
import os
from numba.core import event
listener = event.RecordingListener()
event.register("numba:compile", listener)
import unimap
from unimap.datasets import load_digits
X, y = load_digits()
for est in (unimap.UMAP(random_state=0), unimap.TSNE(random_state=0),
            unimap.GDR(random_state=0), unimap.GDR(normalized=True, random_state=0)):
    Y = est.fit_transform(X)
    est.transform(X[:50])
unimap.metrics.trustworthiness(X, Y, n_neighbors=10)
unimap.metrics.knn_accuracy(Y, y)
compiled = sorted({ev.data["dispatcher"].py_func.__module__ + "." + ev.data["dispatcher"].__name__
                   for _, ev in listener.buffer if ev.is_start})
print("@@" + json.dumps([name for name in compiled if name.startswith("unimap.")]))
"""


def _python(code_or_args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True,
                          cwd=REPO, timeout=900, check=False)


@pytest.mark.slow  # compile-bound: CI runs it in its slow step
def test_precompiled_kernels_leave_nothing_to_compile():
    # numba's cache is in the source tree here (as in an editable install): the first
    # process fills it, the second must only load.
    done = _python(["-m", "unimap.cli.precompile", "--quiet"])
    assert done.returncode == 0, done.stderr
    user = _python(["-c", _USER_CALLS])
    assert user.returncode == 0, user.stderr
    compiled = json.loads(user.stdout.split("@@")[-1])
    assert compiled == [], f"compiled on first use despite the precompile step: {compiled}"


_KEY_KERNELS = ("optimizers.umap_sgd.epochs_numba.sgd_epoch_edges_2d",
                "optimizers.umap_sgd.epochs_numba.sgd_epoch_edges_2d_pooled",
                "optimizers.gdr.chunked_epochs_numba.unnormalized_epochs_2d",
                "optimizers.gdr.normalized_numba._normalized_forces_2d",
                "optimizers.gradient_descent.repulsion.bh_tree_numba.build_tree",
                "optimizers.gradient_descent.repulsion.fft_numba.apply_kernels_2d")


def test_cache_status_after_precompile():
    # `unimap info` reports the kernels cached for this machine; after the precompile step
    # (run by the first test of this file, and by this one again if alone) the key kernels
    # are among them.
    from unimap.cli.precompile import cache_status

    assert _python(["-m", "unimap.cli.precompile", "--quiet"]).returncode == 0
    status = cache_status()
    assert status is not None
    missing = [k for k in _KEY_KERNELS if not status.get(k)]
    assert missing == []


def test_info_reports_an_empty_cache(tmp_path):
    # With numba's cache pointed at an empty folder nothing is compiled for this machine,
    # and `unimap info` says the first calls will compile.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "unimap.cli.main", "info", "--json"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["compiled_kernels"] == {"for_this_machine": 0, "cached": 0}
    text = subprocess.run([sys.executable, "-m", "unimap.cli.main", "info"], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=300, check=False).stdout
    assert "first call compiles" in text


def test_cli_precompile(capsys):
    from unimap.cli.main import main

    assert main(["precompile"]) == 0
    out = capsys.readouterr().out
    assert "kernels ready" in out and "GDR normalized" in out


@pytest.mark.slow
def test_wheel_carries_the_compiled_kernels(tmp_path):
    """The build backend compiles the kernels into the wheel (about 2 minutes)."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps",
                            "-w", str(tmp_path)], capture_output=True, text=True, timeout=1200,
                           check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("unimap-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    indices = [n for n in names if n.endswith(".nbi")]
    for kernel in _KEY_KERNELS:
        # "optimizers.umap_sgd.epochs_numba.sgd_epoch_edges_2d" is cached as
        # unimap/optimizers/umap_sgd/__pycache__/epochs_numba.sgd_epoch_edges_2d-<line>.py311.nbi
        *package, module, function = kernel.split(".")
        entry = "/".join(["unimap", *package, "__pycache__", f"{module}.{function}-"])
        assert any(n.startswith(entry) for n in indices), f"{kernel} not compiled into the wheel"
    assert not [n for n in names if n.endswith(".pyc")]
