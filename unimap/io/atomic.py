"""Atomic file output: write to a temporary file beside the target, then rename."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in ``path``'s folder; on success rename it onto ``path``.

    On any error the temporary file is removed, so a failed write never leaves a partial file
    (nor replaces an existing good one). The file gets the usual umask-based permissions.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_file(path)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _new_file(path: Path) -> str:
    """A new, empty file beside ``path``, created with mode 0o666 so that the kernel applies
    the process's umask: reading the umask means setting it (``os.umask``), which for a
    moment gave every other thread's new files the mode 0o666."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.part"
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return str(tmp)
    raise FileExistsError(f"no free temporary name beside {path}")
