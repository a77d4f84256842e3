"""Progress bars and the phase summary (verbose=True); silence otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import unimap
from unimap.runtime.progress import ProgressBar

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


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_verbose_shows_bars_and_a_summary(data, name, capsys):
    model = ESTIMATORS[name](verbose=True).fit(data)
    captured = capsys.readouterr()
    epochs = model.n_epochs_
    assert f"/{epochs} [" in captured.err  # the epoch bar (cleared at its end)
    assert "optimize: 100%" in captured.err and "4/4" in captured.err  # the phases' bar
    assert "done in" in captured.out and "optimize" in captured.out
    assert captured.err.count("epochs") >= 1


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_silent_by_default(data, name, capsys):
    ESTIMATORS[name]().fit(data)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_progress_bar_disabled_is_a_no_op(capsys):
    with ProgressBar(False, 10, "x") as bar:
        bar.advance_to(5)
        bar.describe("y")
    assert capsys.readouterr().err == ""


def test_progress_bar_counts(capsys):
    with ProgressBar(True, 10, "work", unit="item") as bar:
        bar.advance_to(4)
        bar.advance_to(3)  # never backwards
        bar.advance_to(10)
    err = capsys.readouterr().err
    assert "10/10" in err and "work" in err
