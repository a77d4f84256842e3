"""What verbose=True shows (lines and bars on stderr, in order; the phase summary; t-SNE's
KL) and silence otherwise."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import unimap
from unimap.runtime.progress import ProgressBar, percent_shares

ESTIMATORS = {
    "UMAP": lambda **kw: unimap.UMAP(n_epochs=30, random_state=0, **kw),
    "GDR": lambda **kw: unimap.GDR(n_epochs=30, random_state=0, **kw),
    "GDRn": lambda **kw: unimap.GDR(normalized=True, n_epochs=40, random_state=0, **kw),
    "TSNE": lambda **kw: unimap.TSNE(max_iter=40, early_exaggeration_iter=10, random_state=0,
                                      **kw),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    return rng.normal(size=(300, 8)).astype(np.float32)


def _lines(err: str) -> list[str]:
    """The lines a terminal keeps of ``err``: tqdm redraws a bar after each carriage return
    and clears it at its end, so only the text after a line's last one stays."""
    return [line.split("\r")[-1] for line in err.split("\n") if line.split("\r")[-1].strip()]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_verbose_writes_lines_and_bars_to_stderr_in_order(data, name, capsys):
    model = ESTIMATORS[name](verbose=True).fit(data)
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing on stdout: an embedding or JSON may go there
    unit = "iteration" if name == "TSNE" else "epoch"
    epochs = model.n_epochs_
    assert f"/{epochs} [" in captured.err and f"{unit}/s" in captured.err  # the epoch bar
    lines = _lines(captured.err)
    prefix = f"[unimap.{type(model).__name__}] "
    assert all(line.startswith(prefix) for line in lines), lines  # no bar left on screen
    phases = [line[len(prefix):].split(" (")[0] for line in lines
              if line[len(prefix):].split(" (")[0] in model.PHASES]
    assert phases == list(model.PHASES)  # one line per phase, in order
    assert f"optimize ({epochs} {unit}s)" in captured.err
    assert lines[-1].startswith(f"{prefix}done in")


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_one_bar_per_phase(data, name, capsys):
    """Each phase draws its own bar, on one line, cleared at its end: no bar over the phases
    beside the epochs' (two bars redrawn on two lines broke each other on a terminal)."""
    ESTIMATORS[name](verbose=True).fit(data)
    err = capsys.readouterr().err
    assert "\x1b[A" not in err  # no cursor moves between two bars
    for phase in ("neighbors", "affinities", "init"):
        assert err.count(f"\r{phase} ...") == 1
    assert "4/4" not in err and "phase/s" not in err


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_summary_percentages_add_up_to_100(data, name, capsys):
    ESTIMATORS[name](verbose=True).fit(data)
    summary = [line for line in _lines(capsys.readouterr().err) if "done in" in line][0]
    shares = re.findall(r"(\w+) (\d+)%", summary)
    assert [phase for phase, _ in shares][:4] == ["neighbors", "affinities", "init",
                                                  "optimize"]
    assert sum(int(percent) for _, percent in shares) == 100


def test_tsne_marks_the_kl_of_early_exaggeration(data, capsys):
    unimap.TSNE(max_iter=150, early_exaggeration_iter=100, random_state=0,
                verbose=True).fit(data)
    lines = [line for line in _lines(capsys.readouterr().err) if "iteration " in line]
    assert len(lines) == 3
    assert lines[0].endswith("s") and "KL " in lines[0]
    assert all("(early exaggeration x12)" in line for line in lines[:2])
    assert "exaggeration" not in lines[2]


def test_lines_go_to_the_unimap_logger_when_logging_shows_them(data, capsys, caplog):
    caplog.set_level(logging.INFO, logger="unimap")
    model = unimap.UMAP(n_epochs=30, random_state=0, verbose=True).fit(data)
    records = [r for r in caplog.records if r.name == "unimap.UMAP"]
    assert [r.getMessage().split(" (")[0] for r in records][1:5] == list(model.PHASES)
    assert records[-1].getMessage().startswith("done in")
    assert "[unimap.UMAP]" not in capsys.readouterr().err  # not written twice


def test_percent_shares_add_up_to_100():
    assert percent_shares({"a": 1.0, "b": 1.0, "c": 1.0}, 3.0) == {"a": 34, "b": 33, "c": 33}
    shares = percent_shares({"neighbors": 0.25, "affinities": 0.06, "init": 0.02,
                             "optimize": 2.07}, 2.86)
    assert shares == {"neighbors": 9, "affinities": 2, "init": 1, "optimize": 72, "other": 16}
    assert percent_shares({"a": 2.0}, 2.0) == {"a": 100}  # no time outside: no "other"
    assert percent_shares({}, 0.0) == {}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_silent_by_default(data, name, capsys):
    ESTIMATORS[name]().fit(data)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_progress_bar_disabled_is_a_no_op(capsys):
    with ProgressBar(False, 10, "x") as bar:
        bar.advance_to(5)
        bar.describe("y")
        assert bar.done == 0
    assert capsys.readouterr().err == ""


def test_progress_bar_counts(capsys):
    with ProgressBar(True, 10, "work", unit="item") as bar:
        bar.advance_to(4)
        bar.advance_to(3)  # never backwards
        assert bar.done == 4
        bar.advance_to(10)
        assert bar.done == 10
    err = capsys.readouterr().err
    assert "0/10" in err and "work" in err and "item/s" in err
    assert err.endswith("\r") and not err.rstrip("\r").split("\r")[-1].strip()  # cleared
