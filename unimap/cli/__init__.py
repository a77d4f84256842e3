"""The ``unimap`` command line: one module per command, the parser in ``main``."""

from unimap.cli.main import UsageError, main, read_table

__all__ = ["main", "read_table", "UsageError"]
