"""Warnings point at the user's line, however deep in unimap they are raised (issue 60,
item 3: they showed unimap's own files, e.g. `_base.py:110`, or `sys:1`)."""

import warnings

import numpy as np

from unimap import GDR, TSNE, UMAP


def _warnings_of(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def test_fit_warnings_name_the_callers_file():
    rng = np.random.default_rng(0)
    apart = np.vstack([rng.normal(0, 1, (60, 4)), rng.normal(500, 1, (60, 4))])
    calls = [
        lambda: UMAP(n_neighbors=500, n_epochs=5).fit(apart),  # n_neighbors capped
        lambda: GDR(n_neighbors=500, n_epochs=5).fit(apart),
        lambda: TSNE(perplexity=500.0, max_iter=20).fit(apart),  # perplexity capped
        lambda: UMAP(n_neighbors=5, n_epochs=5).fit(apart),  # two components
    ]
    for call in calls:
        caught = _warnings_of(call)
        assert caught, "the case should warn"
        assert {w.filename for w in caught} == {__file__}, [
            (w.filename, w.lineno, str(w.message)[:60]) for w in caught]


def test_a_warning_raised_by_a_helper_keeps_the_callers_line():
    from unimap.runtime.user_warnings import warn_user

    def library_like():
        warn_user("from inside")

    caught = _warnings_of(library_like)
    assert caught[0].filename == __file__  # library_like is not unimap's: its own line
