"""What a fit shows with ``verbose=True``: its lines and one progress bar per phase.

Everything goes to stderr, so it never mixes with an embedding or JSON written to stdout, and
in order: a line is written above the running bar (``tqdm.write``), never into it. A line goes
through the ``unimap`` logger (``unimap.<Estimator>``) when logging is configured to show it
(a handler and the INFO level, e.g. ``logging.basicConfig(level=logging.INFO)``), else
straight to stderr. tqdm is imported only when something is shown; ``tqdm.auto`` draws a
notebook widget in Jupyter and text on a terminal.

Examples
--------
>>> import logging
>>> logging.getLogger("unimap").setLevel(logging.INFO)  # doctest: +SKIP
>>> logging.basicConfig()  # unimap's verbose lines through your handlers  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["LOGGER_NAME", "ProgressBar", "report", "percent_shares"]

LOGGER_NAME = "unimap"


def report(message: str, source: str | None = None) -> None:
    """Show one verbose line.

    Parameters
    ----------
    message : str
    source : str, optional
        Who speaks (an estimator's class name): the logger ``unimap.<source>``, and the
        prefix ``[unimap.<source>]`` of a line written to stderr.
    """
    from tqdm.auto import tqdm

    name = LOGGER_NAME if source is None else f"{LOGGER_NAME}.{source}"
    logger = logging.getLogger(name)
    if logger.isEnabledFor(logging.INFO) and logger.hasHandlers():
        # the user's handlers may write to stderr too: the running bar steps aside meanwhile
        with tqdm.external_write_mode(file=sys.stderr):
            logger.info(message)
    else:
        tqdm.write(f"[{name}] {message}", file=sys.stderr)


def percent_shares(seconds: dict[str, float], total: float) -> dict[str, int]:
    """Whole percentages of ``total`` for each entry, plus ``"other"`` for the time outside
    them (when any shows), that add up to exactly 100 (largest remainders get the rounding).

    Examples
    --------
    >>> percent_shares({"a": 1.0, "b": 1.0, "c": 1.0}, 3.0)
    {'a': 34, 'b': 33, 'c': 33}
    >>> percent_shares({"neighbors": 0.25, "optimize": 2.0}, 2.86)
    {'neighbors': 9, 'optimize': 70, 'other': 21}
    """
    if total <= 0:
        return {}
    parts = dict(seconds)
    parts["other"] = max(total - sum(seconds.values()), 0.0)
    exact = {name: 100.0 * value / max(total, sum(parts.values())) for name, value
             in parts.items()}
    whole = {name: int(value) for name, value in exact.items()}
    by_remainder = sorted(exact, key=lambda name: whole[name] - exact[name])
    for name in by_remainder[: 100 - sum(whole.values())]:
        whole[name] += 1
    if whole["other"] == 0:
        del whole["other"]
    return whole


class ProgressBar:
    """A tqdm bar of ``total`` steps on stderr when ``enabled``, else a no-op with the same
    methods. It is cleared when it closes (the phase's log line takes its place), so a fit
    draws one bar at a time, on one line.

    Parameters
    ----------
    enabled : bool
        Show the bar (the estimator's ``verbose``).
    total : int
        Steps (epochs, iterations; 1 for a phase without steps).
    desc : str
        The bar's label (the phase).
    unit : str, default="step"
    """

    def __init__(self, enabled: bool, total: int, desc: str, unit: str = "step") -> None:
        self._bar: Any = None
        if enabled and total > 0:
            from tqdm.auto import tqdm

            # a phase of one step has no progress to count: its name says what runs
            bar_format = "{desc} ..." if total == 1 else None
            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False, file=sys.stderr,
                             mininterval=0.25, dynamic_ncols=True, bar_format=bar_format)

    @property
    def done(self) -> int:
        """Steps shown as finished (0 when disabled)."""
        return 0 if self._bar is None else int(self._bar.n)

    def advance_to(self, done: int) -> None:
        """Show ``done`` steps finished (cheap: tqdm redraws at most every 0.25 s)."""
        if self._bar is not None and done > self._bar.n:
            self._bar.update(done - self._bar.n)

    def describe(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_description_str(text, refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
