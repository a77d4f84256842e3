"""The scikit-learn estimator contract, kept without importing scikit-learn.

``from sklearn.base import BaseEstimator`` loads ``scipy.stats`` through
``sklearn.utils.fixes``, a large share of a small fit's time in a fresh process (measured:
``benchmarks/results/architecture_notes.md``, ``benchmarks/results/before_after.md``). So the
contract is written here, as scikit-learn documents it for third-party estimators, and
scikit-learn is imported only when it is already in use (its tags, its global ``set_output``
config, its ``NotFittedError``):

- ``get_params`` / ``set_params`` from the ``__init__`` signature (nested ``a__b`` names);
- ``repr`` showing the parameters that differ from their defaults;
- ``set_output(transform="default" | "pandas" | "polars")`` wrapping ``transform`` and
  ``fit_transform`` of every subclass (as ``sklearn.utils._set_output`` does);
- ``feature_names_in_`` from a DataFrame's string columns, checked again in ``transform``,
  and ``get_feature_names_out`` (``umap0``, ``umap1``, ...);
- AnnData input (``obsm["X_pca"]``, else ``X`` with ``var_names`` as feature names), turned
  into its matrix in one place (``_fit_input`` / ``_new_input``, :mod:`unimap.io.anndata_input`);
- ``__sklearn_tags__`` and ``__sklearn_is_fitted__``.

``clone``, ``Pipeline``, ``GridSearchCV`` and ``check_estimator`` work on it (tested in
``tests/methods/test_sklearn_compat.py``).
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

import numpy as np

from unimap.runtime.user_warnings import warn_user

__all__ = ["EstimatorContract", "not_fitted_error"]

_OUTPUTS = ("default", "pandas", "polars")


def not_fitted_error(message: str) -> Exception:
    """scikit-learn's ``NotFittedError`` (a ValueError and AttributeError), imported only now
    that it is raised."""
    from sklearn.exceptions import NotFittedError

    return NotFittedError(message)


def _wrap_output(method):
    @functools.wraps(method)
    def wrapped(self, X, *args, **kwargs):
        return self._output_container(method(self, X, *args, **kwargs), X)

    wrapped._wraps_output = True
    return wrapped


class EstimatorContract:
    """Base of the unimap estimators: the scikit-learn contract (see the module docstring)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        from unimap.methods.foreign_names import suggesting_init

        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "_suggests", False):
            cls.__init__ = suggesting_init(init)  # unknown names get "did you mean"
        for name in ("transform", "fit_transform"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_wraps_output", False):
                setattr(cls, name, _wrap_output(method))

    # -- parameters ------------------------------------------------------------------------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        init = cls.__init__
        if init is object.__init__:
            return []
        params = [p for p in inspect.signature(init).parameters.values()
                  if p.name != "self" and p.kind != p.VAR_KEYWORD]
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            raise RuntimeError(f"{cls.__name__}.__init__ must not take *args")
        return sorted(p.name for p in params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The estimator's parameters (with ``deep``, those of estimator-valued ones as
        ``name__param``)."""
        out: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> EstimatorContract:
        """Set parameters by name (``name__param`` reaches into estimator-valued ones)."""
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator {self}. Valid "
                                 f"parameters are: {self._get_param_names()!r}.")
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            valid[name].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        shown = [f"{name}={_short_repr(getattr(self, name))}"
                 for name in defaults if name != "self" and hasattr(self, name)
                 and _differs(getattr(self, name), defaults[name])]
        return f"{type(self).__name__}({', '.join(shown)})"

    # -- fitted state --------------------------------------------------------------------
    _fitted_attribute = "embedding_"

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, self._fitted_attribute)

    def _fit_input(self, X: Any, fit: Any) -> Any:
        """The data of ``fit``: an AnnData's representation (:mod:`unimap.io.anndata_input`: its
        ``obsm["X_pca"]``, else ``X``), anything else as given. Feature names (a DataFrame's
        string columns, an AnnData's ``var_names`` when its ``X`` is used) are stored as
        ``feature_names_in_`` on ``fit``."""
        X, names, rep = _unwrap(X)
        if names is not None:
            fit.feature_names_in_ = names
        if rep is not None:  # transform of an AnnData reads the same representation
            fit.use_rep_ = rep
        return X

    def _new_input(self, X: Any) -> Any:
        """The data of ``transform``, unwrapped as in :meth:`_fit_input`, its feature names
        checked against those of fit by scikit-learn's rules."""
        X, names, _ = _unwrap(X, getattr(self, "use_rep_", None))
        self._check_feature_names(names)
        return X

    def _check_feature_names(self, names: np.ndarray | None) -> None:
        """scikit-learn's rules for the column names of new data against those of fit."""
        fitted = getattr(self, "feature_names_in_", None)
        name = type(self).__name__
        if fitted is None and names is not None:
            warn_user(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning)
        elif fitted is not None and names is None:
            warn_user(f"X does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning)
        elif fitted is not None and (len(fitted) != len(names)
                                     or np.any(fitted != names)):
            raise ValueError("The feature names should match those that were passed during "
                             f"fit.\nFitted with: {list(fitted)}\nGot: {list(names)}")

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Output column names, ``<class name lowercased><i>``: ``umap0``, ``umap1``, ..."""
        if not self.__sklearn_is_fitted__():
            raise not_fitted_error(f"this {type(self).__name__} instance is not fitted yet; "
                                   "call fit first")
        if input_features is not None:
            fitted = getattr(self, "feature_names_in_", None)
            given = np.asarray(input_features, dtype=object)
            if fitted is not None and (len(given) != len(fitted) or np.any(given != fitted)):
                raise ValueError("input_features is not equal to feature_names_in_")
            if fitted is None and len(given) != self.n_features_in_:
                raise ValueError(f"input_features should have length equal to number of "
                                 f"features ({self.n_features_in_}), got {len(given)}")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self._n_features_out)], dtype=object)

    # -- output container ----------------------------------------------------------------
    def set_output(self, *, transform: str | None = None) -> EstimatorContract:
        """Return ``transform``'s output as ``"default"`` (NumPy), ``"pandas"`` or
        ``"polars"`` DataFrames named by ``get_feature_names_out`` (None: unchanged)."""
        if transform is None:
            return self
        if transform not in _OUTPUTS:
            raise ValueError(f"transform must be one of {_OUTPUTS} or None, got {transform!r}")
        self._sklearn_output_config = {"transform": transform}
        return self

    def _output_container(self, out: np.ndarray, X: Any) -> Any:
        kind = getattr(self, "_sklearn_output_config", {}).get("transform")
        if kind is None and "sklearn" in sys.modules:  # scikit-learn's global set_config
            kind = sys.modules["sklearn"].get_config().get("transform_output", "default")
        if kind in (None, "default") or not isinstance(out, np.ndarray):
            return out
        from unimap.io.anndata_input import is_anndata

        columns = list(self.get_feature_names_out())
        if kind == "pandas":
            import pandas as pd

            index = X.index if isinstance(X, pd.DataFrame) else None
            if index is None and is_anndata(X):
                index = X.obs_names
            return pd.DataFrame(out, columns=columns, index=index, copy=False)
        import polars as pl

        return pl.DataFrame(out, schema=columns, orient="row")

    # -- scikit-learn tags ---------------------------------------------------------------
    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(preserves_dtype=["float32"]),
                    input_tags=InputTags(sparse=True))


def _unwrap(X: Any, use_rep: str | None = None) -> tuple[Any, np.ndarray | None, str | None]:
    """``(data, feature names or None, the AnnData representation used or None)`` of an
    estimator's input (see ``_fit_input``); ``use_rep`` is the representation fit used."""
    from unimap.io.anndata_input import is_anndata

    if is_anndata(X):
        from unimap.io.anndata_input import representation

        try:
            return representation(X, use_rep)
        except ValueError as error:
            if use_rep is None:
                raise
            raise ValueError(f"{error} (this model was fitted on {use_rep!r})") from None
    return X, _feature_names(X), None


def _feature_names(X: Any) -> np.ndarray | None:
    """A DataFrame's column names when all are strings (scikit-learn's rule), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "shape"):
        return None
    names = np.asarray(list(columns), dtype=object)
    if len(names) and all(isinstance(c, str) for c in names):
        return names
    return None


def _differs(value: Any, default: Any) -> bool:
    if value is default:
        return False
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return True
    try:
        return bool(value != default)
    except Exception:  # objects without a truthy comparison
        return True


def _short_repr(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"<array {value.shape} {value.dtype}>"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
