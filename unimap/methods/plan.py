"""The plan of one fit: what a method resolved from the data, what each phase produced, and
the state that passes between phases without becoming a fitted attribute.

:class:`FitPlan` holds the attributes every neighbour embedding fits; each method extends it
with its own (:class:`UMAPPlan`, :class:`TSNEPlan`, :class:`GDRPlan`). The pipeline
(:class:`unimap.methods._base.NeighborEmbedding`) fills one plan phase by phase and gives the
estimator :meth:`FitPlan.fitted_attributes` at the end, all at once, so that a failed fit
leaves the estimator as it was. Fields marked ``RUN_STATE`` (the epoch bar, UMAP's pruned
graph) never reach the estimator; fields marked ``OPTIONAL`` reach it only when set, as
scikit-learn's ``feature_names_in_`` does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["FitPlan", "UMAPPlan", "TSNEPlan", "GDRPlan"]

RUN_STATE = {"run_state": True}
OPTIONAL = {"optional": True}


@dataclass(kw_only=True)
class FitPlan:
    """The attributes every neighbour-embedding fit resolves and produces (see the module
    docstring); their meaning is documented on the estimators."""

    # resolved by the method from the data's size, before any phase runs
    n_neighbors_: int
    n_epochs_: int
    init_: Any
    # resolved by the pipeline
    n_features_in_: int = 0
    feature_names_in_: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    use_rep_: str | None = field(default=None, metadata=OPTIONAL)
    unique_inverse_: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    supervised_: bool = False
    memory_estimate_: int = 0
    worker_memory_estimate_: int | None = field(default=None, metadata=OPTIONAL)  # on a cluster
    devices_: dict[str, str] = field(default_factory=dict)
    device_: str = "cpu"
    _seed: int = 0
    _streams: Any = None
    # produced by the phases
    knn_indices_: np.ndarray | None = None
    knn_dists_: np.ndarray | None = None
    knn_method_: str = ""
    _index: Any = None
    graph_: sp.csr_matrix | None = None
    init_info_: dict | None = None
    embedding_: np.ndarray | None = None
    timings_: dict[str, float] | None = None
    # passed between phases only
    epoch_bar: Any = field(default=None, metadata=RUN_STATE)
    target: np.ndarray | None = field(default=None, metadata=RUN_STATE)  # y, checked
    _cluster: Any = field(default=None, metadata=RUN_STATE)  # unimap.dask.fit.ClusterFit

    def optional_names(self) -> list[str]:
        """The fields that reach the estimator only when set (a refit without them must drop
        the previous fit's)."""
        return [f.name for f in dataclasses.fields(self) if f.metadata.get("optional")]

    def fitted_attributes(self) -> dict[str, Any]:
        """The estimator's fitted attributes: every field but the run state, and the
        optional ones only when set."""
        attributes = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("run_state") or (f.metadata.get("optional") and value is None):
                continue
            attributes[f.name] = value
        return attributes


@dataclass(kw_only=True)
class UMAPPlan(FitPlan):
    a_: float
    b_: float
    sigmas_: np.ndarray | None = None
    rhos_: np.ndarray | None = None
    # the graph the spectral init and the SGD follow (weak edges dropped); graph_ keeps all
    pruned_graph: sp.csr_matrix | None = field(default=None, metadata=RUN_STATE)
    # output_dens: the log local radii of the data and of the embedding
    rad_orig_: np.ndarray | None = field(default=None, metadata=OPTIONAL)
    rad_emb_: np.ndarray | None = field(default=None, metadata=OPTIONAL)


@dataclass(kw_only=True)
class TSNEPlan(FitPlan):
    method_: str
    perplexity_: float
    learning_rate_: float
    early_learning_rate_: float
    sigmas_: np.ndarray | None = None
    n_iter_: int = 0
    kl_divergence_: float | None = None


@dataclass(kw_only=True)
class GDRPlan(FitPlan):
    symmetric_attraction_: bool
    symmetrization_: str
    shared_negatives_: bool
    momentum_: float
    a_: float
    b_: float
    # None until the graph is known (shared samples: M per epoch over the edges)
    n_negatives_: float | None
    learning_rate_: float | None
    early_learning_rate_: float | None
    early_exaggeration_iter_: int
    perplexity_: float | None
    mean_weight_: float = 0.0
    z_: float | None = None
