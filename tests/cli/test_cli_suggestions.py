"""The CLI's "did you mean" and its exit status for usage errors (issue 60, item 3)."""

from __future__ import annotations

import numpy as np
import pytest

from unimap.cli.main import main
from unimap.runtime.validation import check_choice


@pytest.fixture
def data(tmp_path, blobs, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "x.npy", blobs[0])
    return tmp_path / "x.npy"


def test_a_mistyped_option_is_suggested(data, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["embed", str(data), "--lable-column", "a"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --lable-column a; did you mean '--label-column'" in err
    with pytest.raises(SystemExit):
        main(["plot", str(data), "--hovr", "x"])
    assert "did you mean '--hover'" in capsys.readouterr().err


def test_a_mistyped_metric_is_a_usage_error_with_a_suggestion(data, capsys):
    assert main(["embed", str(data), "--metric", "manhatan", "--no-plot"]) == 2
    assert "got 'manhatan'; did you mean 'manhattan'?" in capsys.readouterr().err


def test_a_missing_input_names_the_dataset_or_file_meant(data, capsys):
    assert main(["embed", "digit", "-o", "d.png"]) == 1
    assert "did you mean the built-in dataset 'digits'?" in capsys.readouterr().err
    assert main(["embed", "x.npz", "-o", "d.png"]) == 1
    assert "input file not found: x.npz; did you mean 'x.npy'?" in capsys.readouterr().err
    assert main(["embed", "zzzz.npy", "-o", "d.png"]) == 1
    assert "did you mean" not in capsys.readouterr().err


def test_choices_suggest_only_close_names():
    with pytest.raises(ValueError, match=r"got 'umpa'; did you mean 'umap'\?$"):
        check_choice("umpa", "method", ("umap", "tsne"))
    with pytest.raises(ValueError, match=r"got 'xyz'$"):
        check_choice("xyz", "method", ("umap", "tsne"))
