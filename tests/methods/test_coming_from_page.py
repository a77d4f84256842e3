"""``docs/coming-from.md`` matches the code: each parameter its tables list for umap-learn's
``UMAP``, scikit-learn's ``TSNE`` and openTSNE's ``TSNE`` is accepted, mapped or refused as
the page says (issue 56)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from unimap import TSNE, UMAP

PAGE = Path(__file__).parents[2] / "docs" / "coming-from.md"
TABLES = {"## umap-learn's `UMAP`": UMAP, "## scikit-learn's `TSNE`": TSNE,
          "## openTSNE's `TSNE`": TSNE}


def _rows() -> list[tuple[str, type, str, str]]:
    """(table, estimator, parameter name, status) for each parameter row of the tables (the
    tables headed by the library's name, not its attributes' tables)."""
    rows, cls, table, parameters = [], None, "", False
    for line in PAGE.read_text().splitlines():
        if line.startswith("## "):
            table = next((head for head in TABLES if line.startswith(head)), "")
            cls = TABLES.get(table)
            continue
        if cls is None or not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if not cells[0].startswith("`"):  # a header: the parameters' table, or another
            parameters = cells[0] in ("umap-learn", "scikit-learn", "openTSNE")
            continue
        items = re.findall(r"`([^`]+)`", cells[0])
        first = items[0].split("=")[0] if items else ""
        if not parameters or len(cells) < 2 or not first.isidentifier():
            continue  # a method or attribute (TSNEEmbedding.optimize, fit(X, y))
        status = cells[1].split(":")[0].split(" ")[0]
        for item in items:
            name = item.split("=")[0]
            if name.isidentifier() and not name.startswith("_") and not name.endswith("_"):
                rows.append((table, cls, name, status))
    return rows


ROWS = _rows()


def test_the_page_lists_the_parameters():
    names = {(cls.__name__, name) for _, cls, name, _ in ROWS}
    assert {("UMAP", "low_memory"), ("UMAP", "transform_mode"), ("TSNE", "max_iter"),
            ("TSNE", "initialization")} <= names
    assert len(ROWS) > 60


@pytest.mark.parametrize("table, cls, name, status",
                         [pytest.param(*row, id=f"{row[1].__name__}-{row[2]}") for row in ROWS])
def test_each_listed_parameter_is_treated_as_the_page_says(table, cls, name, status):
    accepted = name in cls().get_params()
    if status == "refused":
        assert not accepted, f"{table}: {name} is listed as refused but {cls.__name__} takes it"
        with pytest.raises(TypeError, match=f"unexpected keyword argument {name!r}"):
            cls(**{name: None})
    elif status == "mapped" and not accepted:
        # another name for the same thing: the refusal names what to use
        with pytest.raises(TypeError, match="see docs/coming-from.md|did you mean"):
            cls(**{name: None})
    else:
        assert status in ("supported", "mapped"), (table, name, status)
        assert accepted, f"{table}: {name} is listed as {status} but {cls.__name__} refuses it"
