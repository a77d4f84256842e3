"""Files: data tables in and embeddings out (``tables``), atomic writes, AnnData input, and
the model files of ``est.save`` / ``unimap.load`` (``persistence``).

The table functions are imported on first use, so that ``unimap.load`` (which lives here)
does not load scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["READ_FORMATS", "WRITE_FORMATS", "read_table", "write_embedding", "column_names",
           "read_columns", "check_output_path", "embedding_columns"]

if TYPE_CHECKING:  # pragma: no cover
    from unimap.io.tables import (
        READ_FORMATS,
        WRITE_FORMATS,
        check_output_path,
        column_names,
        embedding_columns,
        read_columns,
        read_table,
        write_embedding,
    )


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("unimap.io.tables"), name)
    raise AttributeError(f"module 'unimap.io' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
