"""The base of every unimap estimator: the scikit-learn contract, the declared-parameter check,
``save``, and the timer behind ``timings_``.

:class:`UnimapEstimator` gives every estimator (``PCA`` and the neighbour embeddings of
:mod:`unimap.methods._base`) ``get_params``, ``set_params``, ``clone``, ``Pipeline`` and
``set_output`` support, checks the declared ``_parameter_constraints`` once per ``fit``,
and saves fitted models without pickle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from unimap.methods._contract import EstimatorContract, not_fitted_error
from unimap.runtime.params import invalid_parameter, validate_params
from unimap.runtime.progress import ProgressBar, percent_shares, report

__all__ = ["PhaseTimer", "UnimapEstimator"]


class PhaseTimer:
    """Seconds spent in each phase of a fit (the estimators' ``timings_``), and what
    ``verbose=True`` shows of them: one progress bar per running phase, one line per finished
    phase and a closing summary whose percentages add up to 100.

    Parameters
    ----------
    log : callable(str)
        Receives one line per finished phase (the estimator's verbose printer).
    show_bars : bool, default=False
        Draw a bar (:class:`unimap.runtime.progress.ProgressBar`) while each phase runs.

    Examples
    --------
    >>> clock = PhaseTimer(print)
    >>> with clock.phase("neighbors", lambda: "exact"):
    ...     pass  # doctest: +ELLIPSIS
    neighbors (exact): 0.00s
    >>> sorted(clock.finish())  # doctest: +ELLIPSIS
    done in ...
    ['neighbors', 'total']
    """

    def __init__(self, log: Callable[[str], None], show_bars: bool = False) -> None:
        self._log = log
        self._show_bars = show_bars
        self._start = time.perf_counter()
        self.timings: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str, detail: Callable[[], str] | None = None, steps: int = 1,
              unit: str = "phase") -> Iterator[ProgressBar]:
        """Time the body as phase ``name``; ``detail()`` (called after the body, so it can
        report what the body resolved) is shown in brackets in the log line. Yields the
        phase's bar of ``steps`` ``unit``s (the optimizer advances it epoch by epoch), cleared
        when the phase ends."""
        tic = time.perf_counter()
        with ProgressBar(self._show_bars, steps, name, unit) as bar:
            yield bar
        elapsed = time.perf_counter() - tic
        self.timings[name] = elapsed
        extra = f" ({detail()})" if detail is not None else ""
        self._log(f"{name}{extra}: {elapsed:.2f}s")

    def finish(self) -> dict[str, float]:
        """The phases' seconds plus ``total`` since the timer was made (and a summary line
        to the log: each phase's share, ``other`` for the time between them)."""
        self.timings["total"] = total = time.perf_counter() - self._start
        phases = {name: s for name, s in self.timings.items() if name != "total"}
        shares = ", ".join(f"{name} {percent}%" for name, percent
                           in percent_shares(phases, total).items())
        self._log(f"done in {total:.2f}s ({shares})")
        return dict(self.timings)


class UnimapEstimator(EstimatorContract):
    """scikit-learn contract shared by every unimap estimator.

    Subclasses declare ``_parameter_constraints`` (see :mod:`unimap.runtime.params`) and may add
    ``_check_param_relations`` for rules that tie parameters together.
    """

    _parameter_constraints: dict = {}
    _fitted_attribute = "embedding_"

    def _validate_params(self) -> None:
        validate_params(self.get_params(deep=False), self._parameter_constraints)
        with invalid_parameter():
            self._check_param_relations()

    def _check_param_relations(self) -> None:
        """Rules between parameters (override)."""

    def save(self, path: Any, *, include_training_data: bool = True,
             include_graph: bool = True) -> Any:
        """Save the fitted estimator to ``path`` without pickle; read it with
        :func:`unimap.load`.

        The file is a zip archive of a JSON header and ``.npy`` arrays
        (:mod:`unimap.io.persistence`, ``docs/persistence.md``); it is written atomically.

        Parameters
        ----------
        path : str or path-like
            Conventionally ``*.unimap``.
        include_training_data : bool, default=True
            Store the training rows that ``transform`` searches for neighbours. False gives
            a smaller file whose model keeps its fitted attributes but cannot ``transform``.
        include_graph : bool, default=True
            Store ``graph_``, ``knn_indices_`` and ``knn_dists_`` (``transform`` does not
            need them).

        Returns
        -------
        path : pathlib.Path

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.

        Examples
        --------
        >>> import unimap
        >>> from unimap.datasets import load_digits
        >>> X, _ = load_digits()
        >>> model = unimap.GDR(random_state=0).fit(X[:500])
        >>> path = model.save("digits.unimap")
        >>> unimap.load(path).embedding_.shape
        (500, 2)
        """
        from unimap.io.persistence import save

        return save(self, path, include_training_data=include_training_data,
                    include_graph=include_graph)

    def _check_fitted(self) -> None:
        if not hasattr(self, self._fitted_attribute):
            raise not_fitted_error(f"this {type(self).__name__} instance is not fitted yet; "
                                 "call fit first")

    def _check_can_transform(self) -> None:
        """Raise if ``transform`` cannot run (override to add reasons to ``_check_fitted``)."""
        self._check_fitted()

    @property
    def _n_features_expected(self) -> int:
        """The number of columns ``transform`` takes."""
        return self.n_features_in_

    def _transform_dtype(self, dtype: np.dtype) -> np.dtype:
        """The dtype ``transform`` returns for input of ``dtype``."""
        return np.dtype(np.float32)

    def _dask_transform(self, X: Any, options: dict) -> Any:
        """``transform`` of a dask collection: checked here, then placed block by block
        on the workers by ``_transform`` (:mod:`unimap.dask.transform`); lazy."""
        from unimap.dask.transform import transform_blocks

        self._check_can_transform()
        return transform_blocks(self, X, options, self._n_features_expected)

    def _check_n_features(self, X: Any, expected: int) -> None:
        if X.shape[1] != expected:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {expected} features as input")

    def _log(self, message: str) -> None:
        """A verbose line (stderr, or the ``unimap.<Estimator>`` logger when logging is
        configured to show INFO; :func:`unimap.runtime.progress.report`)."""
        if getattr(self, "verbose", False):
            report(message, type(self).__name__)

    def _expected_failed_checks(self) -> dict[str, str]:
        """scikit-learn's ``check_estimator`` checks that cannot apply, with the reason."""
        return {}
