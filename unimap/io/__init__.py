"""Files: data tables in (``read``, with the CSV parser in ``csv_rows``) and embeddings out
(``write``), atomic writes, AnnData input, and the model files of ``est.save`` /
``unimap.load`` (``persistence``).

The table functions are imported on first use, so that ``unimap.load`` (which lives here)
does not load scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["READ_FORMATS", "WRITE_FORMATS", "read_table", "write_embedding", "column_names",
           "read_columns", "check_output_path", "embedding_columns"]

# The module each public name lives in, imported when the name is first asked for.
_MODULES = {
    "READ_FORMATS": "unimap.io.read",
    "read_table": "unimap.io.read",
    "column_names": "unimap.io.read",
    "read_columns": "unimap.io.read",
    "WRITE_FORMATS": "unimap.io.write",
    "write_embedding": "unimap.io.write",
    "check_output_path": "unimap.io.write",
    "embedding_columns": "unimap.io.write",
}

if TYPE_CHECKING:  # pragma: no cover
    from unimap.io.read import READ_FORMATS, column_names, read_columns, read_table
    from unimap.io.write import (
        WRITE_FORMATS,
        check_output_path,
        embedding_columns,
        write_embedding,
    )


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name]), name)
    raise AttributeError(f"module 'unimap.io' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
