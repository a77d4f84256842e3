"""The pictures ``unimap embed`` and ``unimap plot`` write: which suffixes, whether this
installation can draw them (checked before any work, so a fit never runs only to fail at
its picture), which two columns are drawn, and the drawing itself through
:mod:`unimap.plotting` (``.html``: the interactive map; ``.png``/``.svg``/``.pdf``: matplotlib).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from unimap.cli.common import UsageError

PICTURE_SUFFIXES = (".png", ".svg", ".pdf", ".html")
STATIC_SUFFIXES = (".png", ".svg", ".pdf")
PLOT_EXTRA = 'pip install "unimap[plot]"'


class DrawingError(RuntimeError):
    """Drawing a picture failed after the command's other outputs were written; the message
    names them (exit status 1)."""


def picture_path(path: str, option: str = "--output", hint: str = "") -> Path:
    """``path`` as a picture's path: a UsageError unless it ends in a picture suffix
    (``hint`` is added to that message)."""
    out = Path(path)
    if out.suffix.lower() not in PICTURE_SUFFIXES:
        raise UsageError(f"{option} must end in {', '.join(PICTURE_SUFFIXES)}, got "
                         f"{out.name!r}{hint}")
    return out


def check_can_draw(path: Path, alternative: str) -> None:
    """An ImportError naming the ``plot`` extra when ``path`` is a static figure and
    matplotlib cannot be imported (the ``.html`` map needs nothing more); ``alternative``
    says what else the user can do."""
    if path.suffix.lower() not in STATIC_SUFFIXES:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError(f"drawing {path.name} needs matplotlib, which is not installed: "
                          f"{PLOT_EXTRA}, {alternative}") from None


def parse_dims(text: str | None) -> tuple[int, int] | None:
    """``--dims I,J``: two different column numbers, counted from 0."""
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 2 or not all(part.isdigit() for part in parts) or parts[0] == parts[1]:
        raise UsageError(f"--dims takes two different column numbers counted from 0, such as "
                         f"0,1 or 1,2; got {text!r}")
    return int(parts[0]), int(parts[1])


def check_dims(n_columns: int, dims: tuple[int, int] | None, source: str, *,
               is_file: bool = False) -> None:
    """A picture shows two columns: ``source`` (what has ``n_columns``) needs exactly two,
    or ``dims`` naming two of its columns. A file of one column is a bad input (ValueError,
    exit 1), an option asking for one a usage error (exit 2), as docs/cli.md states."""
    if n_columns < 2:
        error = ValueError if is_file else UsageError
        raise error(f"{source} has {n_columns} column; a picture needs 2")
    if dims is None and n_columns > 2:
        raise UsageError(f"{source} has {n_columns} columns; name the two to draw with "
                         "--dims (e.g. --dims 0,1)")
    if dims is not None and max(dims) >= n_columns:
        raise UsageError(f"--dims {dims[0]},{dims[1]}: {source} has {n_columns} columns, "
                         f"numbered 0 to {n_columns - 1}")


def two_columns(embedding: np.ndarray, dims: tuple[int, int] | None) -> np.ndarray:
    """The two columns of ``embedding`` a picture shows (checked by :func:`check_dims`)."""
    return embedding if dims is None else embedding[:, list(dims)]


LEGEND_LOCATIONS = ("right margin", "on data", "none")


def parse_palette(text: str | None) -> str | list[str] | None:
    """``--palette``: a matplotlib colour map name, or colours separated by commas; checked
    before any work (a colour map name needs matplotlib)."""
    if text is None:
        return None
    from unimap.plotting.colors import palette_colors

    palette: str | list[str] = ([c.strip() for c in text.split(",")] if "," in text
                                else text.strip())
    try:
        palette_colors(palette, 2)
    except (ValueError, ImportError) as exc:
        raise UsageError(f"--palette {text!r}: {exc}") from None
    return palette


def draw(path: Path, xy: np.ndarray, title: str,
         columns: dict[str, np.ndarray] | None = None, color_by: str | None = None,
         hover: list[str] | None = None, ids: np.ndarray | None = None,
         id_name: str = "row", palette: str | list[str] | None = None,
         legend_loc: str = "right margin", basis: str = "Dim") -> Path:
    """Write the picture of ``xy`` (two columns) to ``path``, its format by the suffix:
    the interactive map for ``.html`` (every column, coloured by ``color_by`` first), else a
    static figure coloured by ``color_by``, its axes named ``basis 1``/``basis 2``. Written
    atomically by :mod:`unimap.plotting`."""
    import unimap.plotting as plotting

    if path.suffix.lower() == ".html":
        return plotting.save_html(path, xy, columns=columns or None, ids=ids,
                                  color_by=color_by, hover=hover, title=title,
                                  id_name=id_name, palette=palette)
    values = columns[color_by] if columns and color_by else None
    return plotting.save_scatter(path, xy, values, title=title, colorbar_label=color_by,
                                 palette=palette, legend_loc=legend_loc, basis=basis)
