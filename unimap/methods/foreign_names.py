"""Unknown keyword arguments answered with the parameter the user meant.

Code copied from umap-learn, scikit-learn, openTSNE or scanpy passes their names. Python's own
``TypeError: __init__() got an unexpected keyword argument 'angle'`` says nothing useful, so
every estimator's ``__init__`` is wrapped (:func:`suggesting_init`, applied by
:class:`unimap.methods._contract.EstimatorContract`) to name the unimap parameter with the same
meaning, or to say why a feature is not available. The table is the code form of
``docs/coming-from.md``.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["FOREIGN_NAMES", "unknown_parameter_message", "suggesting_init"]

_KNN = "unimap chooses its neighbour search with knn_method ('exact', 'hnsw', 'nndescent')"

FOREIGN_NAMES: dict[str, str] = {
    # umap-learn
    "low_memory": f"UMAP takes it (without effect, for umap-learn's code); {_KNN}; memory "
                  "is bounded by max_memory",
    "angular_rp_forest": f"UMAP takes it (without effect, for umap-learn's code); {_KNN}",
    "force_approximation_algorithm": f"UMAP's; {_KNN}; knn_method='hnsw' forces the "
                                     "approximate search",
    "transform_queue_size": f"UMAP takes it (without effect); {_KNN}; transform searches as "
                            "the fit did",
    "transform_seed": "UMAP's; random_state also seeds transform (one seed per fit, "
                      "each new point placed the same alone or in a batch)",
    "transform_mode": "UMAP's (UMAP(transform_mode='graph') returns the membership graph); "
                      "this method's transform places the points",
    "tqdm_kwds": "UMAP's; verbose=True shows the progress bars",
    "output_metric": "UMAP's (UMAP(output_metric='haversine' or 'hyperboloid')); this "
                     "method's embedding is euclidean",
    "output_metric_kwds": "UMAP's; this method's embedding is euclidean",
    "densmap": "densMAP is UMAP's (UMAP(densmap=True)); this method has no density term",
    "dens_lambda": "densMAP is UMAP's (UMAP(densmap=True, dens_lambda=...))",
    "dens_frac": "densMAP is UMAP's (UMAP(densmap=True, dens_frac=...))",
    "dens_var_shift": "densMAP is UMAP's (UMAP(densmap=True, dens_var_shift=...))",
    "output_dens": "densMAP is UMAP's (UMAP(output_dens=True))",
    "max_iter": "n_epochs (UMAP's SGD epochs; TSNE's max_iter counts its iterations)",
    "n_iter": "n_epochs (UMAP's SGD epochs; TSNE's max_iter counts its iterations)",
    "angle": "TSNE's Barnes-Hut angle; UMAP and GDR have no Barnes-Hut tree",
    # scanpy's tl.umap / tl.tsne
    "maxiter": "n_epochs (UMAP, GDR) or max_iter (TSNE)",
    "alpha": "learning_rate",
    "gamma": "repulsion_strength",
    "init_pos": "init",
    "use_fast_tsne": "unimap's TSNE is FFT-accelerated already (method='fft')",
    "n_pcs": "PCA first (unimap.PCA), or use_rep in unimap.tl",
    # openTSNE
    "initialization": "init",
    "negative_gradient_method": "method ('fft' or 'barnes_hut'; openTSNE's 'bh' is "
                                "'barnes_hut')",
    "n_interpolation_points": "n_interpolation_points (TSNE only)",
    "neighbors": "knn_method",
    "negative_sample_rate": "negative_sample_rate (UMAP and GDR)",
    "momentum": "initial_momentum and final_momentum",
    "early_exaggeration_iter": "early_exaggeration_iter (TSNE)",
    "max_grad_norm": "max_grad_norm (TSNE)",
    "affinities": "precomputed_knn, or metric='precomputed'",
    "callbacks": "callback (one callable (iteration, kl_divergence, embedding) -> stop)",
    "callbacks_every_iters": "callback_every",
    "knn_kwargs": "not supported: knn_method chooses the search, which tunes itself",
    "target_metric_kwds": "no target metric takes parameters (categorical, euclidean, "
                          "manhattan)",
}
"""Names other libraries use that no unimap estimator takes under that name: what to use."""


def unknown_parameter_message(cls: type, name: str, valid: list[str]) -> str:
    """What an unknown keyword argument ``name`` of ``cls`` should have been."""
    head = f"{cls.__name__} got an unexpected keyword argument {name!r}"
    advice = FOREIGN_NAMES.get(name)
    if advice is not None:
        return f"{head}: {advice} (see docs/coming-from.md)"
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.6)
    if close:
        return f"{head}; did you mean {' or '.join(repr(c) for c in close)}?"
    return f"{head}; {cls.__name__}'s parameters are {', '.join(valid)}"


def suggesting_init(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` (an estimator's ``__init__``), raising ``TypeError`` with
    :func:`unknown_parameter_message` for keyword arguments it does not take. The signature
    stays visible to ``inspect.signature`` (``get_params`` reads it)."""
    valid = sorted(p for p in inspect.signature(init).parameters if p != "self")
    allowed = frozenset(valid)
    params = inspect.signature(init).parameters.values()
    positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD
                  and p.name != "self"]
    by_name = [p.name for p in params if p.kind == p.KEYWORD_ONLY]

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(positional):  # scikit-learn's rule: the rest by name
            extra = args[len(positional):]
            shown = [repr(a) for a in args[:len(positional)]] + [
                f"{name}={value!r}" for name, value in zip(by_name, extra, strict=False)]
            raise TypeError(f"{type(self).__name__} takes {', '.join(positional) or 'nothing'} "
                            f"by position and every other parameter by name, got {len(args)} "
                            f"positional arguments: {type(self).__name__}({', '.join(shown)})?")
        for name in kwargs:
            if name not in allowed:
                raise TypeError(unknown_parameter_message(type(self), name, valid))
        init(self, *args, **kwargs)

    __init__._suggests = True
    return __init__
