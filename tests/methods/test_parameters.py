"""The parameters the methods share have one constraint and one entry in the docs
(:mod:`unimap.methods.parameters`), and every estimator documents each of its parameters once."""

from __future__ import annotations

import inspect
import re

import pytest

import unimap
from unimap.methods.parameters import (
    PIPELINE,
    SHARED_PARAMETERS,
    document_shared,
)
from unimap.methods.registry import BUILT_IN


def _documented(cls: type) -> list[str]:
    """The parameter names of ``cls``'s numpydoc Parameters section, as often as documented
    (a header may name several: ``a, b : float``)."""
    doc = inspect.cleandoc(cls.__doc__)
    section = re.split(r"\nParameters\n-+\n", doc, maxsplit=1)[1]
    section = re.split(r"\n\n\w[\w ]*\n-+\n", section, maxsplit=1)[0]
    names = []
    for line in section.split("\n"):
        if line and not line[0].isspace() and " : " in line:
            names += [name.strip() for name in line.split(" : ")[0].split(",")]
    return names


ESTIMATORS = [getattr(unimap, declaration.name) for declaration in BUILT_IN]
NEIGHBOR_EMBEDDINGS = [cls for cls in ESTIMATORS if set(PIPELINE) <= set(
    inspect.signature(cls).parameters)]


def test_the_three_neighbour_embeddings_take_the_pipeline_parameters():
    assert {cls.__name__ for cls in NEIGHBOR_EMBEDDINGS} >= {"UMAP", "TSNE", "GDR"}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_documented_once(cls):
    documented = _documented(cls)
    taken = list(inspect.signature(cls).parameters)
    assert sorted(documented) == sorted(taken), (
        f"missing: {set(taken) - set(documented)}, unknown: {set(documented) - set(taken)}, "
        f"twice: {[n for n in documented if documented.count(n) > 1]}")
    assert "{shared:" not in cls.__doc__


@pytest.mark.parametrize("cls", NEIGHBOR_EMBEDDINGS, ids=lambda c: c.__name__)
def test_a_shared_parameter_has_the_shared_entry_and_constraint(cls):
    doc = inspect.cleandoc(cls.__doc__)
    for name in set(inspect.signature(cls).parameters) & set(SHARED_PARAMETERS):
        shared = SHARED_PARAMETERS[name]
        assert shared.doc in doc, f"{cls.__name__}.{name} is documented apart from the shared entry"
        assert cls._parameter_constraints[name] is shared.constraint


def test_a_marker_naming_an_unknown_parameter_fails_at_import():
    class Typo:
        """Parameters
        ----------
        {shared: random_stat}
        """

    with pytest.raises(KeyError, match="random_stat"):
        document_shared(Typo)


def test_a_marker_keeps_its_indentation_and_what_follows_continues_the_last_entry():
    class Method:
        """A method.

        Parameters
        ----------
        {shared: n_jobs, device}
            On this method, only the CPU.
        """

    doc = inspect.cleandoc(document_shared(Method).__doc__)
    assert doc.endswith(SHARED_PARAMETERS["device"].doc + "\n    On this method, only the CPU.")
    assert SHARED_PARAMETERS["n_jobs"].doc + "\n" + SHARED_PARAMETERS["device"].doc in doc
