"""Progress bars of a fit (``verbose=True``): one bar over the pipeline's phases, one over
the optimizer's epochs. tqdm is imported only when a bar is shown; ``tqdm.auto`` draws a
notebook widget in Jupyter and text on a terminal. Bars go to stderr, so they never mix with
an embedding or JSON written to stdout."""

from __future__ import annotations

from typing import Any

__all__ = ["ProgressBar"]


class ProgressBar:
    """A tqdm bar of ``total`` steps when ``enabled``, else a no-op with the same methods.

    Parameters
    ----------
    enabled : bool
        Show the bar (the estimator's ``verbose``).
    total : int
        Steps (phases, or epochs).
    desc : str
        The bar's label.
    unit : str, default="step"
    position : int, default=0
        Line of the bar (1: under the phases' bar).
    """

    def __init__(self, enabled: bool, total: int, desc: str, unit: str = "step",
                 position: int = 0) -> None:
        self._bar: Any = None
        if enabled and total > 0:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, position=position,
                             leave=position == 0, mininterval=0.25, dynamic_ncols=True)

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
