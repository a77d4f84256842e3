"""The ``unimap`` command: embed high-dimensional data in 2-D (UMAP, t-SNE, GDR, PCA), draw it
and judge it.

``unimap embed INPUT -o map.png`` reads a table (``.npy``, ``.npz``, ``.csv``/``.tsv``,
``.parquet``, ``.h5ad``; :func:`unimap.io.read.read_table`) or a built-in dataset (``digits``,
``mnist``, ``blobs``), embeds it and writes the embedding (``.npy``, ``.csv``, ``.parquet``,
``.h5ad``; or into the input ``.h5ad`` with ``--write-back``), the model with
``--save-model``, and a picture (``.png``/``.svg``/``.pdf``, or the interactive ``.html`` map)
when ``-o`` names one or no other output is asked for (:mod:`unimap.cli.picture`).
``unimap transform MODEL INPUT -o out.npy`` places new points with a saved model. ``unimap
evaluate DATA EMBEDDING`` scores an embedding with ``unimap.metrics``. ``unimap plot EMBEDDING
-o map.html`` draws an embedding file or the embedding an ``.h5ad`` stores (.png/.svg/.pdf, or
an interactive offline .html map). ``unimap compare DATA --methods umap,tsne,gdr`` embeds with
several methods and prints their time and quality beside a side-by-side figure. ``unimap
info`` says what this
installation has. Files are written atomically: a failed run leaves no partial output.

This module holds the top-level parser and the dispatch; each command lives in its own module
(:mod:`unimap.cli.embed`, ``transform``, ``evaluate``, ``info`` with ``precompile``, ``plot``
with ``compare``), which adds the command's arguments and the function that runs it to the
parser (``add_parser``, or ``add_<command>_parser`` where a module has two), sharing
:mod:`unimap.cli.common` (with the help of the options several commands have) and, for
pictures, :mod:`unimap.cli.picture`.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from unimap.cli import embed, evaluate, info, plot, transform
from unimap.cli.common import UsageError
from unimap.cli.picture import DrawingError
from unimap.runtime.device import DeviceUnavailableError
from unimap.runtime.params import InvalidParameterError

__all__ = ["build_parser", "main"]


_DESCRIPTION = ("Embed high-dimensional data in 2-D (UMAP, t-SNE, GDR, PCA), draw it and judge "
                "it.")
_EPILOG = """examples:
  unimap embed cells.h5ad --label-column cell_type -o map.html
  unimap plot cells.h5ad --basis X_umap --color-by cell_type -o map.png

'unimap COMMAND --help' describes each command."""


def build_parser() -> argparse.ArgumentParser:
    """The ``unimap`` parser: each command adds its own arguments and the function that runs
    it (``args.run``)."""
    parser = argparse.ArgumentParser(prog="unimap", description=_DESCRIPTION, epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    embed.add_parser(sub)
    transform.add_parser(sub)
    evaluate.add_parser(sub)
    info.add_info_parser(sub)
    info.add_precompile_parser(sub)
    plot.add_plot_parser(sub)
    plot.add_compare_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse_unknown(parser, args, unknown)
    try:
        with warnings.catch_warnings():
            # one line each, as the errors: the library's file and source line mean
            # nothing to a command-line user
            warnings.showwarning = _one_line_warning
            if getattr(args, "quiet", False):
                # -q prints nothing on success; what a warning says about an adjusted
                # parameter stays in the fitted attributes (and --json's summary)
                warnings.simplefilter("ignore")
            return args.run(args)
    except KeyboardInterrupt:
        # one line, as for any other failure; every file is written atomically, so none is
        # left half-written (those finished before the interrupt stay)
        print("unimap: error: interrupted", file=sys.stderr)
        return 130
    except (UsageError, InvalidParameterError) as exc:  # an option or its value: usage
        print(f"unimap: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError, ImportError, MemoryError,
            DeviceUnavailableError, DrawingError) as exc:
        print(f"unimap: error: {exc}", file=sys.stderr)
        return 1


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``unimap: warning: <message>`` on stderr (warnings.showwarning's signature)."""
    print(f"unimap: warning: {message}", file=sys.stderr if file is None else file)


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace,
                    unknown: list[str]) -> None:
    """argparse's "unrecognized arguments" exit (2), with the command's closest options
    suggested (``--lable-column`` → ``--label-column``)."""
    from unimap.runtime.validation import did_you_mean

    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = commands.choices[args.command]
    options = [o for action in command._actions for o in action.option_strings]
    hints = [did_you_mean(u.split("=", 1)[0], options) for u in unknown if u.startswith("-")]
    command.error(f"unrecognized arguments: {' '.join(unknown)}" + "".join(hints))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
