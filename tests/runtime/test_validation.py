import numpy as np
import pytest
import scipy.sparse as sp

from unimap.runtime.random_streams import seed_from_random_state
from unimap.runtime.threads import resolve_n_jobs
from unimap.runtime.validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
)


def test_check_array_converts_ints_and_float16_to_float32():
    assert check_array(np.arange(6).reshape(3, 2)).dtype == np.float32
    assert check_array(np.ones((3, 2), dtype=np.float16)).dtype == np.float32
    assert check_array(np.ones((3, 2), dtype=np.float64), dtype=None).dtype == np.float64


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        (np.array([[1.0, np.nan]]), ValueError, "NaN or infinity"),
        (np.array([[1.0, np.inf]]), ValueError, "NaN or infinity"),
        (np.empty((0, 3)), ValueError, "empty"),
        (np.arange(5.0), ValueError, "must be 2-D"),
        (np.array([["a", "b"]], dtype=object), TypeError, "dtype object"),
        (np.ones((2, 2), dtype=complex), ValueError, "Complex"),
        ("abc", TypeError, "string"),
    ],
)
def test_check_array_rejects_bad_input(bad, error, match):
    with pytest.raises(error, match=match):
        check_array(bad)


def test_check_array_finite_check_survives_an_overflowing_sum():
    # The fast check sums the entries: large finite values overflow that sum to inf, and the
    # exact check must then accept them; +inf and -inf, whose sum is NaN, are still found.
    big = np.full((4, 3), 3e38, dtype=np.float32)
    np.testing.assert_array_equal(check_array(big), big)
    both = np.ones((4, 3))
    both[1, 2], both[3, 0] = np.inf, -np.inf
    with pytest.raises(ValueError, match=r"row 1, column 2"):
        check_array(both)


def test_check_array_sparse():
    X = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    with pytest.raises(TypeError, match="sparse"):
        check_array(X)
    out = check_array(X, accept_sparse=True)
    assert sp.isspmatrix_csr(out) and out.dtype == np.float32


def test_check_array_min_samples():
    with pytest.raises(ValueError, match="a minimum of 2 is required"):
        check_array(np.ones((1, 3)), min_samples=2)


def test_scalar_checks_name_the_parameter():
    with pytest.raises(ValueError, match=r"n_neighbors must be in \[2, inf\)"):
        check_int(1, "n_neighbors", 2)
    with pytest.raises(TypeError, match="n_neighbors must be an integer"):
        check_int(2.5, "n_neighbors", 2)
    with pytest.raises(TypeError, match="must be an integer"):
        check_int(True, "k")
    with pytest.raises(ValueError, match="min_dist must be a finite number"):
        check_float(-0.1, "min_dist", 0.0)
    with pytest.raises(ValueError, match="finite"):
        check_float(float("nan"), "spread", 0.0)
    with pytest.raises(ValueError, match="metric must be one of"):
        check_choice("cosin", "metric", ("cosine",))


def test_seeds_and_threads():
    assert seed_from_random_state(3) == 3
    assert seed_from_random_state(np.random.default_rng(1)) == seed_from_random_state(
        np.random.default_rng(1)
    )
    with pytest.raises(ValueError):
        seed_from_random_state(-1)
    with pytest.raises(TypeError):
        seed_from_random_state("seed")
    # seeds are 63-bit: the largest is kept as it is, a larger one refused (it was reduced
    # modulo 2**63, so 2**63 + 7 gave the embedding of 7)
    assert seed_from_random_state(2**63 - 1) == 2**63 - 1
    assert seed_from_random_state(np.uint64(2**63 - 1)) == 2**63 - 1
    for too_large in (2**63, 2**63 + 7, np.uint64(2**64 - 1)):
        with pytest.raises(ValueError, match="at most 2\\*\\*63 - 1"):
            seed_from_random_state(too_large)
    import unimap

    with pytest.raises(ValueError, match="random_state"):
        unimap.UMAP(random_state=2**63 + 7).fit(np.zeros((20, 3)))
    assert resolve_n_jobs(1) == 1
    assert resolve_n_jobs(-1) >= 1
    with pytest.raises(ValueError, match="n_jobs"):
        resolve_n_jobs(0)


def test_spawned_seeds_at_are_the_spawned_children():
    from unimap.runtime.random_streams import spawn_seeds, spawned_seeds_at

    every = spawn_seeds(12345, 50)
    picked = [0, 7, 49, 3]
    assert spawned_seeds_at(12345, np.array(picked)) == [every[i] for i in picked]
    assert len(set(every)) == 50


def test_phase_timer_records_phases_total_and_log_lines():
    from unimap.methods._estimator import PhaseTimer

    lines = []
    clock = PhaseTimer(lines.append)
    with clock.phase("neighbors", lambda: "exact"):
        resolved = "later"
    with clock.phase("optimize", lambda: resolved):
        pass
    timings = clock.finish()
    assert list(timings) == ["neighbors", "optimize", "total"]
    assert timings["total"] >= timings["neighbors"] + timings["optimize"]
    assert lines[0].startswith("neighbors (exact): ") and lines[1].startswith("optimize (later)")


def test_estimators_log_each_phase_when_verbose(capsys):
    from unimap import GDR, TSNE, UMAP

    X = np.random.default_rng(0).standard_normal((120, 5)).astype(np.float32)
    for cls, phases in ((UMAP, ("neighbors", "affinities", "init", "optimize")),
                        (TSNE, ("neighbors", "affinities", "init", "optimize")),
                        (GDR, ("neighbors", "affinities", "init", "optimize"))):
        model = cls(verbose=True, random_state=0).fit(X)
        err = capsys.readouterr().err
        for phase in phases:
            assert f"] {phase} (" in err, (cls.__name__, phase, err)
        assert set(model.timings_) == {*phases, "total"}


def test_a_malformed_sparse_matrix_is_refused():
    # issue 42: a CSR whose column index lies past n_features was accepted and its value lost
    import scipy.sparse as sp

    import unimap

    indptr, indices, data = np.array([0, 1, 2]), np.array([0, 7]), np.array([1.0, 2.0])
    bad = sp.csr_matrix((data, indices, indptr), shape=(2, 3))  # scipy does not object
    with pytest.raises(ValueError, match="malformed sparse matrix"):
        check_array(bad, accept_sparse=True)
    X = sp.random(30, 5, density=0.5, format="csr", random_state=0)
    X.indices[3] = 5
    with pytest.raises(ValueError, match="malformed sparse matrix"):
        unimap.UMAP(n_epochs=5).fit(X)
