"""Declarative hyperparameter constraints, checked once at the entry of ``fit``.

Each estimator declares ``_parameter_constraints = {"name": constraint, ...}``, one entry per
``__init__`` argument; :func:`validate_params` checks them all and raises
:class:`InvalidParameterError` (a ``ValueError`` and a ``TypeError`` at once, as scikit-learn's
is, so ``except ValueError`` and ``except TypeError`` both catch it) with a message naming the
parameter and what is allowed.
Relations between parameters (``min_dist <= spread``) are checked by the estimator's
``_check_param_relations``. Code below the estimators trusts validated values.

(scikit-learn has the same idea in a private module, which changes between releases.)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from unimap.runtime.validation import check_bool, check_choice, check_float, check_int

__all__ = ["InvalidParameterError", "Integer", "IntegerOrSentinel", "Real", "Options",
           "Boolean", "ArrayLike", "IsCallable", "Dict", "Seed", "Jobs", "AnyOf", "Optional",
           "MemorySize", "validate_params", "invalid_parameter"]


class InvalidParameterError(ValueError, TypeError):
    """A hyperparameter of the wrong kind or value (both a ``ValueError`` and a ``TypeError``,
    like scikit-learn's ``InvalidParameterError``, so code written for either catches it).

    Examples
    --------
    >>> import unimap
    >>> from unimap.datasets import load_digits
    >>> X, _ = load_digits()
    >>> try:
    ...     unimap.UMAP(min_dist=-1).fit(X)
    ... except unimap.InvalidParameterError as error:
    ...     print(error)
    min_dist must be a finite number in [0.0, inf), got -1.0
    >>> issubclass(unimap.InvalidParameterError, ValueError)
    True
    """


class Constraint:
    """One rule for one parameter."""

    def accepts_kind(self, value: Any) -> bool:
        """Whether ``value`` is of the kind this rule is about (to pick among alternatives)."""
        return True

    def check(self, value: Any, name: str) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


# The most epochs or iterations a parameter may ask for: far beyond any useful fit (a
# million UMAP epochs of MNIST would take days), and a bound that keeps a loaded model's
# transform finite in time (a tampered file with n_epochs = 2**62 ran forever).
MAX_ITERATIONS = 1_000_000


@dataclass(frozen=True)
class Integer(Constraint):
    low: int | None = None
    high: int | None = None

    def accepts_kind(self, value):
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    def check(self, value, name):
        check_int(value, name, self.low, self.high)

    def describe(self):
        return f"an integer in [{self.low}, {'inf' if self.high is None else self.high}]"


@dataclass(frozen=True)
class IntegerOrSentinel(Integer):
    """An integer in [low, high], or the one ``sentinel`` value that means "the default"
    (umap-learn's ``target_n_neighbors=-1``)."""

    sentinel: int = -1

    def check(self, value, name):
        if value == self.sentinel:
            return
        try:
            check_int(value, name, self.low, self.high)
        except ValueError:
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}") from None

    def describe(self):
        return f"{self.sentinel} or {super().describe()}"


@dataclass(frozen=True)
class Real(Constraint):
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    def accepts_kind(self, value):
        return isinstance(value, numbers.Real) and not isinstance(value, bool)

    def check(self, value, name):
        check_float(value, name, self.low, self.high, self.low_inclusive, self.high_inclusive)

    def describe(self):
        left = "[" if self.low_inclusive and self.low is not None else "("
        right = "]" if self.high_inclusive and self.high is not None else ")"
        lo = "-inf" if self.low is None else self.low
        hi = "inf" if self.high is None else self.high
        return f"a number in {left}{lo}, {hi}{right}"


class Options(Constraint):
    def __init__(self, *choices: str) -> None:
        self.choices = tuple(choices)

    def accepts_kind(self, value):
        return isinstance(value, str)

    def check(self, value, name):
        check_choice(value, name, self.choices)

    def describe(self):
        return f"one of {list(self.choices)}"


class Boolean(Constraint):
    def accepts_kind(self, value):
        return isinstance(value, bool)

    def check(self, value, name):
        check_bool(value, name)

    def describe(self):
        return "True or False"


class ArrayLike(Constraint):
    """An array given by the user (shape and values checked where it is used)."""

    def accepts_kind(self, value):
        return not isinstance(value, (str, bytes)) and hasattr(value, "__len__")

    def check(self, value, name):
        if not self.accepts_kind(value):
            raise TypeError(f"{name} must be an array, got {type(value).__name__} {value!r}")

    def describe(self):
        return "an array"


class Dict(Constraint):
    """A dict of options (its entries are checked where they are used)."""

    def accepts_kind(self, value):
        return isinstance(value, Mapping)

    def check(self, value, name):
        if not self.accepts_kind(value):
            raise TypeError(f"{name} must be a dict, got {type(value).__name__} {value!r}")

    def describe(self):
        return "a dict"


class IsCallable(Constraint):
    def accepts_kind(self, value):
        return callable(value)

    def check(self, value, name):
        if not callable(value):
            raise TypeError(f"{name} must be callable, got {type(value).__name__} {value!r}")

    def describe(self):
        return "a callable"


class Seed(Constraint):
    def check(self, value, name):
        from unimap.runtime.random_streams import check_random_state

        check_random_state(value, name)  # draws nothing from a Generator

    def describe(self):
        return "None, a non-negative int or a numpy Generator"


class Jobs(Constraint):
    def check(self, value, name):
        from unimap.runtime.threads import resolve_n_jobs

        resolve_n_jobs(value)

    def describe(self):
        return "None or a non-zero integer (-1: all cores)"


class MemorySize(Constraint):
    """``"available"``, None (no check), a positive number of bytes or a size string."""

    def check(self, value, name):
        from unimap.runtime.memory import parse_memory

        if value is None or (isinstance(value, str) and value == "available"):
            return
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
            raise TypeError(f"{name} must be {self.describe()}, got {type(value).__name__}")
        if isinstance(value, numbers.Real) and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite size (None turns the check off), "
                             f"got {value!r}")
        size = parse_memory(value)
        if not size > 0:
            raise ValueError(f"{name} must be a positive size, got {value!r}")

    def describe(self):
        return "'available', None, a positive number of bytes or a size such as '8GB'"


class AnyOf(Constraint):
    """The value must satisfy the alternative whose kind it is (e.g. a string or a number)."""

    def __init__(self, *alternatives: Constraint) -> None:
        self.alternatives = alternatives

    def accepts_kind(self, value):
        return any(c.accepts_kind(value) for c in self.alternatives)

    def check(self, value, name):
        for constraint in self.alternatives:
            if constraint.accepts_kind(value):
                constraint.check(value, name)
                return
        real = [c for c in self.alternatives if not isinstance(c, _NoneConstraint)]
        if len(real) == 1:  # X or None: X's own message says what is wrong
            real[0].check(value, name)
        raise TypeError(f"{name} must be {self.describe()}, got {type(value).__name__} "
                        f"{value!r}")

    def describe(self):
        return " or ".join(c.describe() for c in self.alternatives)


def Optional(constraint: Constraint) -> Constraint:  # noqa: N802 (reads as a type)
    """``constraint`` or None."""
    return AnyOf(_NoneConstraint(), constraint)


class _NoneConstraint(Constraint):
    def accepts_kind(self, value):
        return value is None

    def check(self, value, name):
        pass

    def describe(self):
        return "None"


def validate_params(params: Mapping[str, Any], constraints: Mapping[str, Constraint]) -> None:
    """Check every parameter against its declared constraint (all parameters must have one)."""
    missing = set(params) - set(constraints)
    if missing:  # a developer error: a parameter added without its constraint
        raise RuntimeError(f"no constraint declared for {sorted(missing)}")
    for name, constraint in constraints.items():
        with invalid_parameter():
            constraint.check(params[name], name)


@contextmanager
def invalid_parameter() -> Iterator[None]:
    """Re-raise a ``TypeError`` or ``ValueError`` of a parameter check as
    :class:`InvalidParameterError` with the same message."""
    try:
        yield
    except InvalidParameterError:
        raise
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(str(exc)) from None
