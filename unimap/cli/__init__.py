"""The ``unimap`` command line: one module per command, the parser in ``main``."""

from unimap.cli.common import UsageError
from unimap.cli.main import main
from unimap.io.read import read_table

__all__ = ["main", "read_table", "UsageError"]
