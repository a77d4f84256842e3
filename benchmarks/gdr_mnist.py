"""Benchmark ``unimap.GDR`` against umap-learn and openTSNE on MNIST-70k.

Each fit runs in a fresh Python process (``_harness.py``), one after the other. The GDR modes
get a *cold* run first (unimap's numba cache deleted just before), then ``--repeats`` warm
runs; umap-learn and openTSNE get warm runs.

The targets (issue 4): ``GDR()`` ≥ 10× faster end to end than umap-learn at 10-NN accuracy no
more than 0.01 below; ``GDR(normalized=True)`` ≥ 10× faster than openTSNE at 10-NN accuracy no
more than 0.01 below and 15-NN recall at least 0.8× openTSNE's.

Quality is measured as in ``tsne_mnist.py`` (same ``Judge``): leave-one-out 10-NN accuracy,
recall of the exact 15 input-space neighbours on a fixed 5,000-point sample, and KL against one
common perplexity-30 P (meaningful for the t-SNE-like embeddings only).

Calls:

* GDR: ``unimap.GDR(random_state=0).fit(X)``;
* GDR (normalized): ``unimap.GDR(normalized=True, random_state=0).fit(X)``;
* umap-learn: ``umap.UMAP().fit_transform(X)`` unseeded (its multi-threaded mode);
* openTSNE: ``openTSNE.TSNE(n_jobs=-1, random_state=0).fit(X)``;
* openTSNE-p10: the same with ``perplexity=10``, GDR's normalized default: the comparison at
  one perplexity (context; the target is against openTSNE's default).

Example::

    python benchmarks/gdr_mnist.py                 # all four, 70k, cold + 1 warm for GDR
    python benchmarks/gdr_mnist.py --n 20000 --no-save
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
from _harness import Runner, fmt, markdown_table
from tsne_mnist import Suite, report_header, run_suite, summarize

LIBRARIES = ("gdr", "gdr-normalized", "umap-learn", "openTSNE", "openTSNE-p10")
PEERS = {"gdr": "umap-learn", "gdr-normalized": "openTSNE"}  # the targets of issue 4
SAME_PERPLEXITY = {"gdr-normalized": "openTSNE-p10"}  # context, no target
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "gdr_mnist.md"


def _import_unimap() -> Any:
    import unimap

    return unimap.GDR


def _fit_gdr(GDR: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    model = GDR(random_state=0).fit(X)
    return model.embedding_, {"timings": dict(model.timings_)}


def _fit_gdr_normalized(GDR: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    model = GDR(normalized=True, random_state=0).fit(X)
    return model.embedding_, {"timings": dict(model.timings_)}


def _import_umap_learn() -> Any:
    import umap

    return umap.UMAP


def _fit_umap_learn(UMAP: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
    return UMAP().fit_transform(X), {}


def _import_opentsne() -> Any:
    import openTSNE

    return openTSNE.TSNE


def _opentsne_fit(**options: Any):
    """A runner's fit: ``openTSNE.TSNE(n_jobs=-1, random_state=0, **options).fit(X)``."""
    def fit(TSNE: Any, X: np.ndarray, params: dict) -> tuple[np.ndarray, dict]:
        embedding = TSNE(n_jobs=-1, random_state=0, **options).fit(X)
        return np.asarray(embedding), {"kl": float(embedding.kl_divergence)}

    return fit


RUNNERS = {
    "gdr": Runner(_import_unimap, _fit_gdr),
    "gdr-normalized": Runner(_import_unimap, _fit_gdr_normalized),
    "umap-learn": Runner(_import_umap_learn, _fit_umap_learn),
    "openTSNE": Runner(_import_opentsne, _opentsne_fit()),
    "openTSNE-p10": Runner(_import_opentsne, _opentsne_fit(perplexity=10)),
}

_HEADERS = ["method", "run", "import s", "fit s", "total s", "CPU s", "Δ MB", "10-NN acc",
            "recall@15", "KL (common P)", "other cores"]


def _cells(s: dict) -> list[str]:
    if "error" in s:
        return [s["library"], s["run"], f"failed: {s['error'][:200]}"] + [""] * 8
    return [s["library"], s["run"], fmt(s["import_s"]), fmt(s["fit_s"]), fmt(s["total_s"]),
            fmt(s["cpu_s"], 1), fmt(s["lib_peak_mb"], 0), fmt(s["knn_acc"], 4),
            fmt(s["recall"], 4), fmt(s["kl"], 4), fmt(s.get("other_cores"))]


def _verdicts(summaries: list[dict]) -> list[str]:
    lines = []
    pairs = [(ours, peer, True) for ours, peer in PEERS.items()]
    pairs += [(ours, peer, False) for ours, peer in SAME_PERPLEXITY.items()]
    for ours_name, peer_name, is_target in pairs:
        ours = next((s for s in summaries if s["library"] == ours_name
                     and s["run"].startswith("warm") and "error" not in s), None)
        peer = next((s for s in summaries if s["library"] == peer_name and "error" not in s),
                    None)
        if not (ours and peer):
            continue
        speed = peer["total_s"] / ours["total_s"]
        acc = ours["knn_acc"] - peer["knn_acc"]
        recall = ours["recall"] / peer["recall"]
        if is_target:
            lines.append(
                f"- {ours_name} vs {peer_name}: {speed:.2f}× faster end to end (target ≥ 10×); "
                f"10-NN accuracy {acc:+.4f} (target ≥ −0.01); recall@15 ratio {recall:.3f}"
                + (" (target ≥ 0.8)" if peer_name == "openTSNE" else "")
            )
        else:
            lines.append(
                f"- context, one perplexity: {ours_name} vs {peer_name}: {speed:.2f}× faster; "
                f"10-NN accuracy {acc:+.4f}; recall@15 ratio {recall:.3f}"
            )
    return lines


def render(rows: list[dict], n: int, n_features: int) -> str:
    summaries = summarize(rows)
    parts = [
        *report_header("GDR on MNIST: unimap.GDR vs umap-learn and openTSNE", "gdr_mnist.py",
                       rows, n, n_features),
        "Fresh process per run; `total s` = import + fit; `cold`: unimap's numba cache deleted "
        "first. Quality as in `tsne_mnist.py`.",
        "",
        markdown_table(_HEADERS, [_cells(s) for s in summaries]),
        "",
        *_verdicts(summaries),
    ]
    timed = [r for r in rows if (r.get("extra") or {}).get("timings")]
    if timed:
        phases = list(dict.fromkeys(p for r in timed for p in r["extra"]["timings"]))
        parts += ["\nGDR `timings_` (seconds):\n", markdown_table(
            ["method", "run", *phases],
            [[r["library"], r["run"], *(fmt(r["extra"]["timings"].get(p)) for p in phases)]
             for r in timed])]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    suite = Suite(Path(__file__).resolve(), __doc__.split("\n\n")[0], RUNNERS, LIBRARIES,
                  frozenset({"gdr", "gdr-normalized"}), render, DEFAULT_OUT)
    return run_suite(suite, argv)


if __name__ == "__main__":
    sys.exit(main())
