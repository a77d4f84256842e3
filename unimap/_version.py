"""The version of unimap (one home: the package, the saved models and the CLI read it)."""

__version__ = "0.1.0"
