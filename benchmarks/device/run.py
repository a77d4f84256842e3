"""The one budgeted run on the GPU machine (issue 45; ``../shared/gpu/README.md``).

On this machine, once: ``benchmarks/device/prepare.sh`` fills ``.device/`` (git-ignored) with
the wheels the device's image lacks and MNIST. Then, through the device tool, from the
repository root with ``carry=[".device"]``::

    python benchmarks/device/run.py --out "$OUT"                      # every step, 480 s
    python benchmarks/device/run.py --out "$OUT" --resume --budget 300  # what it left
    python benchmarks/device/run.py --out "$OUT" --steps peers,scale10m --budget 300

Rehearsal without a GPU (numba-cuda's simulator, tiny data, the peers on the CPU)::

    python benchmarks/device/run.py --tiny --out /tmp/device-out

It installs the carried wheels into a temporary prefix put first on ``PYTHONPATH`` (so the
carried NumPy shadows the image's), imports unimap from the checkout, prints the versions and
what ``device="auto"`` finds, starts ``unimap precompile`` in the background (the CPU kernels
compile on the idle cores while the GPU steps start), then runs the steps in order of value.
Each step has its own timeout, cut to the time left; a step that needs more than is left is
skipped with a line saying so. After every step ``status.json`` (under ``--out``, and a copy
in the machine's temporary folder, which a warm machine keeps between calls) records each
step's outcome; a second call with ``--resume`` runs only the steps that did not finish
(skipped, killed or failed), and ``--steps`` picks steps by name.

numba keys a cached kernel on its own file, not on the files of the functions it inlines, so
a cache left on a warm machine by an earlier checkout could serve old code: the cache folder
(``NUMBA_CACHE_DIR``) is keyed by a hash of unimap's sources.

Everything goes under ``--out`` in at most 8 files: ``run.log`` (every line of every step,
flushed as it comes), ``status.json``, ``inprocess.jsonl`` (the warm fits and the spectral
start's profile, ``lobpcg_profile.py``), ``scale.jsonl``, ``fresh.md``, ``peers.md``,
``cpu.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


class Step(NamedTuple):
    name: str
    needs_s: int  # skipped when less than this is left
    timeout_s: int
    argv: list[str]


def steps(out: Path, tiny: bool) -> list[Step]:
    """The steps in order of value; ``tiny``: the rehearsal's sizes."""
    py = sys.executable
    n = ["--n", "80"] if tiny else []
    runs = ["--runs", "1" if tiny else "2"]
    big, huge = ("200", "300") if tiny else ("1000000", "10000000")
    inprocess = [py, str(BENCH / "device" / "inprocess.py")]
    gpu = [py, str(BENCH / "gpu.py")]
    plan = [
        Step("warm", 60, 170, [*inprocess, "--methods", "GDR,GDRn,UMAP,PCA,TSNE", *n,
                               "--json", str(out / "inprocess.jsonl")]),
        Step("lobpcg", 60, 120, [py, str(BENCH / "device" / "lobpcg_profile.py"),
                                *(["--n", "300"] if tiny else []),
                                "--json", str(out / "inprocess.jsonl")]),
        Step("fresh", 60, 150, [*gpu, *runs, *n, "--out", str(out / "fresh.md"), "--only",
                                "unimap-gdr-cuda", "unimap-gdr-normalized-cuda",
                                "unimap-umap-cuda", "unimap-tsne-cuda", "unimap-pca-cuda"]),
        Step("tests", 30, 120, [py, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                                str(ROOT / "tests" / "device")]),
        Step("scale1m", 40, 150, [*inprocess, "--scale", big, "--methods", "GDR", "--source",
                                  "gauss", "--json", str(out / "scale.jsonl")]),
        Step("scale1m-mnist", 40, 150, [*inprocess, "--scale", big, "--methods", "GDR",
                                        "--source", "mnist", "--json", str(out / "scale.jsonl")]),
        Step("scale10m", 60, 240, [*inprocess, "--scale", huge, "--methods", "GDR", "--source",
                                   "gauss", "--json", str(out / "scale.jsonl")]),
        # measured on 2026-11-27 (benchmarks/results/gpu.md): last, for the same run's ratios
        Step("peers", 60, 150, [*gpu, "--runs", "1", *n, "--out", str(out / "peers.md"),
                                "--only", "torchdr-umap", "gtsne-tsne"]),
        Step("cpu", 90, 200, [*gpu, "--runs", "1", *n, "--out", str(out / "cpu.md"), "--only",
                              "unimap-gdr-cpu", "unimap-umap-cpu", "unimap-tsne-cpu",
                              "unimap-pca-cpu"]),
    ]
    if tiny:  # the simulator's fits take seconds each (a spectral start: ~3 s at 80 points)
        plan = [step._replace(timeout_s=3 * step.timeout_s) for step in plan]
    return plan


class Log:
    """Lines to stdout and to ``run.log``, flushed at once (a killed run keeps them)."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", buffering=1)

    def __call__(self, line: str) -> None:
        print(line, flush=True)
        self._file.write(line + "\n")


def _fits_this_python(wheel: Path) -> bool:
    """Whether a wheel's Python tag fits this interpreter (the rehearsal's Python may differ
    from the device's 3.12, which the wheels are downloaded for)."""
    python_tag, abi_tag = wheel.name[:-4].split("-")[-3:-1]
    here = sys.version_info
    if python_tag.startswith("py3"):
        return True
    if not python_tag.startswith("cp3"):
        return False
    minor = int(python_tag[3:])
    return minor == here.minor or (abi_tag == "abi3" and minor <= here.minor)


def install_wheels(carried: Path, log: Log) -> Path | None:
    """``pip install --no-index --no-deps --target`` of every carried wheel; the prefix."""
    wheels = sorted((carried / "wheels").glob("*.whl"))
    for wheel in [w for w in wheels if not _fits_this_python(w)]:
        log(f"{wheel.name} is not for Python {sys.version_info.major}.{sys.version_info.minor}: "
            "not installed")
    wheels = [w for w in wheels if _fits_this_python(w)]
    if not wheels:
        log(f"no wheels under {carried / 'wheels'}: using the image's packages only")
        return None
    prefix = Path(tempfile.mkdtemp(prefix="unimap-device-deps-"))
    tic = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--target", str(prefix), *map(str, wheels)], check=True)
    log(f"installed {len(wheels)} carried wheels in {time.perf_counter() - tic:.1f} s: "
        + ", ".join(w.name.split("-")[0] + "-" + w.name.split("-")[1] for w in wheels))
    return prefix


def source_key() -> str:
    """A hash of unimap's sources (paths and contents): the cache folder's and the status
    file's key, so that neither outlives the code it was made from."""
    digest = hashlib.sha1()
    for path in sorted((ROOT / "unimap").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class Status:
    """Each step's outcome, written after every step to ``status.json`` under ``--out`` and to
    a copy in the temporary folder keyed by the sources (what ``--resume`` reads)."""

    def __init__(self, out: Path, key: str) -> None:
        self.paths = [out / "status.json",
                      Path(tempfile.gettempdir()) / f"unimap-device-status-{key}.json"]
        self.steps: dict[str, str] = {}

    def resume(self) -> set[str]:
        """The steps an earlier call of these sources ran to a clean exit; their outcomes are
        kept, so that the record stays whole over any number of calls."""
        try:
            earlier = json.loads(self.paths[1].read_text()).get("steps", {})
        except (OSError, ValueError):
            return set()
        self.steps = {name: outcome for name, outcome in earlier.items()
                      if outcome == "exit 0"}
        return set(self.steps)

    def record(self, name: str, outcome: str) -> None:
        self.steps[name] = outcome
        self.write()

    def write(self) -> None:
        text = json.dumps({"steps": self.steps, "time": time.strftime("%Y-%m-%d %H:%M:%S")},
                          indent=1)
        for path in self.paths:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(path)


def environment(prefix: Path | None, carried: Path, tiny: bool, key: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"unimap-numba-{key}"))
    paths = ([str(prefix)] if prefix else []) + [str(ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    env["TQDM_DISABLE"] = "1"  # verbose fits log one line per phase; bars would clutter run.log
    if (carried / "mnist").is_dir():
        env["UNIMAP_MNIST_DIR"] = str(carried / "mnist")
    if tiny:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        env["UNIMAP_PEER_DEVICE"] = "cpu"
        env["UNIMAP_BENCH_EPOCHS"] = "5"  # a CUDA thread is a Python thread there
        # the 10M step's kNN searches k-means cells: at the rehearsal's 300 points too
        env["UNIMAP_BENCH_CELLS"] = "200,60"
    return env


PROBE = """
import importlib, platform, subprocess
print("python", platform.python_version())
for name in ("numpy", "scipy", "sklearn", "numba", "numba_cuda", "faiss", "torch", "cupy",
             "torchdr", "g_tsne"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"), module.__file__)
    except Exception as exc:
        print(name, "not importable:", type(exc).__name__, exc)
from unimap.runtime.device import cuda_status, resolve_device
print("cuda_status:", cuda_status())
print("device='auto' resolves to", resolve_device("auto"))
try:
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                          "clocks.max.sm", "--format=csv,noheader"], capture_output=True,
                         text=True, timeout=20).stdout.strip())
except Exception as exc:
    print("nvidia-smi:", exc)
"""


def run_step(step: Step, timeout: float, env: dict[str, str], log: Log) -> str:
    """Run one step in its own process group, streaming its lines into the log."""
    log(f"== {step.name} (timeout {timeout:.0f} s): {shlex.join(step.argv)}")
    tic = time.perf_counter()
    proc = subprocess.Popen(step.argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def pump() -> None:
        for line in proc.stdout:
            log(f"[{step.name}] {line.rstrip()}")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=timeout)
        status = f"exit {rc}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        status = "killed by its timeout"
    reader.join(5)
    log(f"== {step.name}: {status} after {time.perf_counter() - tic:.1f} s")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out/device")))
    parser.add_argument("--budget", type=float, help="seconds for all steps (default 480; "
                        "1,500 with --tiny)")
    parser.add_argument("--steps", help="comma-separated subset, in the default order")
    parser.add_argument("--carried", type=Path, default=ROOT / ".device")
    parser.add_argument("--tiny", action="store_true",
                        help="rehearsal: numba-cuda's simulator, tiny data, peers on the CPU")
    parser.add_argument("--resume", action="store_true",
                        help="skip the steps an earlier call of the same sources finished")
    parser.add_argument("--no-precompile", action="store_true",
                        help="do not compile the CPU kernels in the background")
    args = parser.parse_args(argv)
    if args.budget is None:
        args.budget = 1500.0 if args.tiny else 480.0
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    log = Log(args.out / "run.log")
    plan = steps(args.out, args.tiny)
    if args.steps:
        wanted = args.steps.split(",")
        unknown = sorted(set(wanted) - {s.name for s in plan})
        if unknown:
            parser.error(f"unknown steps {unknown}; choose from {[s.name for s in plan]}")
        plan = [s for s in plan if s.name in wanted]
    key = source_key()
    status = Status(args.out, key)
    if args.resume:
        done = status.resume()
        log(f"resuming: {sorted(done) or 'nothing'} finished before, not run again")
        plan = [s for s in plan if s.name not in done]
    status.write()
    env = environment(install_wheels(args.carried, log), args.carried, args.tiny, key)
    log(f"sources {key}; numba's cache in {env['NUMBA_CACHE_DIR']}")
    precompile = None if args.no_precompile else background_precompile(env, log)
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, check=False,
                           capture_output=True, text=True, timeout=120)
    for line in (probe.stdout + probe.stderr).splitlines():
        log(line)
    summary = []
    for step in plan:
        left = args.budget - (time.perf_counter() - start)
        if left < step.needs_s:
            log(f"== {step.name}: skipped, {left:.0f} s left of the budget, it needs "
                f"{step.needs_s} s (run it with --steps {step.name})")
            summary.append(f"{step.name}: skipped")
            status.record(step.name, "skipped")
            continue
        outcome = run_step(step, min(step.timeout_s, left), env, log)
        status.record(step.name, outcome)
        summary.append(f"{step.name}: {outcome}")
    if precompile is not None:
        finish_precompile(precompile, log)
    log(f"== done in {time.perf_counter() - start:.0f} s: " + "; ".join(summary))
    return 0


def background_precompile(env: dict[str, str], log: Log) -> subprocess.Popen:
    """``unimap precompile`` at a low priority, its output into ``run.log`` at the end: the
    CPU kernels a fit's CPU phases call compile on the cores the GPU steps leave idle, into
    the same cache the steps load from."""
    log("== precompile (background): python -m unimap.cli.precompile")
    # a file, not a pipe: a pipe nobody reads could fill and block it; closed by finish_precompile
    output = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
    proc = subprocess.Popen(["nice", "-n", "10", sys.executable, "-m", "unimap.cli.precompile"],
                            cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    proc.output = output
    return proc


def finish_precompile(proc: subprocess.Popen, log: Log) -> None:
    """Stop the background precompile if it still runs; log what it printed."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log("== precompile: stopped, still running after the last step")
    else:
        log(f"== precompile: exit {proc.returncode}")
    proc.output.seek(0)
    for line in proc.output.read().splitlines()[-20:]:
        log(f"[precompile] {line}")
    proc.output.close()


if __name__ == "__main__":
    sys.exit(main())
