"""Warnings that point at the user's line: :func:`warn_user` gives ``warnings.warn`` the
stack level of the first frame outside the package, however deep inside unimap the warning
is raised (a fixed ``stacklevel`` per call site pointed at unimap's own files whenever a
call path changed, or past the stack: ``sys:1``).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

__all__ = ["warn_user", "PACKAGE_DIR"]

PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
"""The folder of the ``unimap`` package: frames whose files lie under it are unimap's."""


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the nearest caller outside unimap
    (the outermost frame when every frame is unimap's, as under ``python -m unimap``)."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
