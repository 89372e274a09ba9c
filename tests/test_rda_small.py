"""RDA (Zhou, Xiao, Wu, Algorithm 1) on a problem whose whole decrease from ``W = 0`` is below
``tol``: the starting point ``W = 0`` passes the relative gap before any step, and must not be
returned as converged (it certifies none of the decrease).  Independent route: the certified
CVXPY reference of the registry (lifted SDP for (4), QP for FLATMULT)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from hiercvx import methods, testing
from hiercvx.result import relative_gap


@pytest.fixture(scope="module")
def small():
    """``check_solver``'s shrunk orthogonal problem (tree, seed 0, n = 16, d = 2, C = 1): the
    optimum's norm is 3e-3 and ``J(0) - J*`` is 1.5e-5 of ``J(0)``, below RDA's registered
    tol of 2e-5."""
    p = testing.problems_for("orthogonal", structures=["tree"], seeds=[0], n=16, d=2, C=1.0)[0]
    method = methods.get("orthogonal")
    model = method.prepare(p.X, p.Y, p.H)
    ref = method.references["primal"](p.X, p.Y, p.H, **p.options).solve()
    return method, model, ref


def _rda(method, model, **options):
    fast = method.fast_solvers["rda"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fast.solve(model, 1.0, **{**fast.options, **options})
    return res, [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def test_the_problem_is_one_where_zero_passes_the_relative_gap(small):
    method, model, ref = small
    res, _ = _rda(method, model, max_iter=1)
    at_zero = res.extras["at_zero"]
    assert relative_gap(at_zero, ref.lower_bound) < method.fast_solvers["rda"].options["tol"]
    assert np.linalg.norm(ref.weights) > 0


def test_zero_weights_are_not_returned_as_converged(small):
    """At the registered options RDA used to stop after 666 steps at its starting point W = 0
    (converged, relative gap 2.0e-5, weights 100% of the optimum's norm away)."""
    method, model, ref = small
    res, conv = _rda(method, model)
    norm = np.linalg.norm(ref.weights)
    err = np.linalg.norm(res.weights - ref.weights) / norm
    assert res.converged and not conv
    assert np.any(res.weights)
    assert res.gap_from_zero ** 2 <= res.tol * (1 + 1e-6)  # the decrease from zero is certified
    assert res.lower_bound <= ref.objective * (1 + 1e-9)
    assert res.objective >= ref.lower_bound * (1 - 1e-9)
    # strong convexity (the comparison matrix's smallest eigenvalue, sigma) places W within
    # sqrt(2 (J(W) - J*) / sigma) of the optimum; here that is under 10% of its norm
    assert err <= 0.1, err
    radius = np.sqrt(2 * max(res.objective - ref.lower_bound, 0.0) / res.extras["sigma"])
    assert np.linalg.norm(res.weights - ref.weights) <= radius + 1e-12


def test_out_of_steps_says_so(small):
    """With too few steps for the decrease from zero the result is unconverged and warns,
    whatever its relative gap."""
    method, model, ref = small
    res, conv = _rda(method, model, max_iter=2000)
    assert not res.converged and res.status != "optimal"
    assert len(conv) == 1
    assert res.lower_bound <= ref.objective * (1 + 1e-9)


def test_flatmult_small_problem_agrees_with_reference():
    p = testing.problems_for("flatmult", structures=["tree"], seeds=[0], n=8, d=2, C=1.0)[0]
    method = methods.get("flatmult")
    ref = method.references["primal"](p.X, p.Y, p.H, **p.options).solve()
    res, conv = _rda(method, method.prepare(p.X, p.Y, p.H))
    assert res.converged and not conv and np.any(res.weights)
    assert abs(res.objective - ref.objective) <= 2e-5 * ref.objective + ref.objective - ref.lower_bound
