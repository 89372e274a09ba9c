"""What a DC result of HPSI (Wang, Shen & Pan (3), convex steps (8)) certifies, and what it
refuses.

Independent routes: the flat registry case solved by Clarabel and by Gurobi (the same fixed
point once the biases of every step are pinned); a step's biases moved along the flat ray of
(8) by hand; and fake steps fed to :func:`hiercvx.solvers.dc.dc_iterations` whose bound or
point the DC algorithm cannot produce.
"""

import numpy as np
import pytest

from hiercvx import methods
from hiercvx.exceptions import SolverError
from hiercvx.formulations import hpsi
from hiercvx.reference import gurobi_licence
from hiercvx.result import Solution
from hiercvx.solvers import dc as dc_loop


def flat_case():
    """The registry's ``flat`` case of hpsi: 36 points, five classes, C = 1."""
    method = methods.get("hpsi")
    return method, next(c for c in method.cases(True) if c.name == "flat")


def flat_model_and_start():
    """The flat case's model, C, and its HSVM start ``(coef, biases)`` (Clarabel)."""
    _, case = flat_case()
    prob = hpsi.primal(case.X, case.Y.astype(str), _flat_tree(case.Y), C=1.0)
    sol = prob.solve("CLARABEL")
    return prob.data["model"], 1.0, (sol.weights, sol.values["biases"]), prob


def _flat_tree(Y):
    import hiercvx as hc
    return hc.Hierarchy.from_parents({"root": None, **{str(c): "root" for c in np.unique(Y)}})


def _gurobi_usable():
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        return False, "gurobipy is not installed"
    licence = gurobi_licence()
    return licence in ("full", "size-limited"), f"Gurobi licence: {licence}"


GUROBI, GUROBI_WHY = _gurobi_usable()


# ---------------------------------------------------------------------- the solvers' routes
@pytest.mark.skipif(not GUROBI, reason=GUROBI_WHY)
def test_gurobi_dc_route_reaches_the_reference_fixed_point_on_the_flat_case():
    """Gurobi stops the DC steps of the flat case far along a flat ray of the biases; pinned,
    its path is the reference's, its bound lies below its objective and its cost never rises."""
    method, case = flat_case()
    ref = method.build("primal", case).solve(solver="CLARABEL")
    grb = method.build("primal", case).solve(solver="GUROBI")
    assert grb.solver == "GUROBI" and grb.status == "fixed_point"
    scale = max(1.0, abs(ref.objective))
    assert grb.lower_bound <= grb.objective + 1e-7 * scale, (grb.objective, grb.lower_bound)
    assert np.all(np.diff(grb.dc_objectives) <= 1e-7 * scale), grb.dc_objectives
    np.testing.assert_allclose(grb.dc_objectives, ref.dc_objectives, rtol=1e-6)
    assert grb.objective == pytest.approx(ref.objective, rel=1e-6)
    for step in grb.steps:
        assert np.abs(step.values["biases"]).max() < 10, step.values["biases"]


def test_clarabel_and_osqp_dc_routes_agree_on_the_flat_case():
    method, case = flat_case()
    a = method.build("primal", case).solve(solver="CLARABEL")
    b = method.build("primal", case).solve(solver="OSQP")
    np.testing.assert_allclose(a.dc_objectives, b.dc_objectives, rtol=1e-6)


# ---------------------------------------------------------------------- the pinned biases
def test_least_biases_undo_a_move_along_the_flat_ray():
    """The first DC step of the flat case gives up every example of class "2": lowering its
    bias (the others raised to keep the sum zero) costs nothing, however far.  The optimal
    biases of least norm are the same from any point of that ray, and cost no more."""
    model, C, start, prob = flat_model_and_start()
    lam = hpsi.linearization(model, model.train_scores(*start), C)
    prob.set(pair_weights=lam)
    step = prob.solve("CLARABEL")
    coef, b = step.weights, step.values["biases"]
    ray = np.where(np.array(model.pairs.hierarchy.nodes, dtype=object) == "2", -4.0, 1.0)
    ray[0] = 0.0
    value = model.primal_value(coef, b, C, lam)
    pinned = []
    for t in (0.0, 10.0, 6e4):
        far = b + t * ray
        assert model.primal_value(coef, far, C, lam) == pytest.approx(value, rel=1e-9)
        least = model.least_biases(coef, far, C, lam)
        # at biases of 1e5 the cost is known to round-off of that size only
        assert model.primal_value(coef, least, C, lam) <= value * (1 + 1e-8)
        assert np.abs(least[model.pairs.group_of >= 0].sum()) <= 1e-9
        pinned.append(least)
    for least in pinned[1:]:
        np.testing.assert_allclose(least, pinned[0], atol=1e-6)
    np.testing.assert_allclose(b, pinned[0], atol=1e-6)   # the declaration already pins them


# ---------------------------------------------------------------------- the DC loop's refusals
class FakeStep:
    """A DC step that solves (8) honestly by the reference, then lets ``corrupt(m, coef, b,
    sol)`` replace what it returns at step ``m``."""

    def __init__(self, prob, corrupt):
        self.prob, self.corrupt, self.m = prob, corrupt, 0

    def __call__(self, pair_weights):
        lam = np.zeros(self.prob.data["pairs"].n_pairs) if pair_weights is None else pair_weights
        self.prob.set(pair_weights=lam)
        sol = self.prob.solve("CLARABEL")
        out = self.corrupt(self.m, sol.weights, sol.values["biases"], sol)
        self.m += 1
        return out


def _as_solution(value, bound, coef, b):
    return Solution(objective=value, lower_bound=bound, weights=coef, solver="FAKE",
                    extras={"biases": b})


def test_a_step_whose_bound_exceeds_its_objective_is_refused():
    model, C, _, prob = flat_model_and_start()

    def corrupt(m, coef, b, sol):
        if m == 1:
            value = model.primal_value(coef, b, C, prob.parameters["pair_weights"].value)
            return coef, b, _as_solution(value, value + 0.5, coef, b)
        return coef, b, sol

    with pytest.raises(SolverError, match=r"DC step 1: the step's certified lower bound "
                       r"[0-9.]+ exceeds its objective [0-9.]+.*solver=FAKE"):
        dc_loop.dc_iterations(model, C, 1e-8, 10, FakeStep(prob, corrupt), "test")


def test_a_step_after_which_the_psi_cost_rises_is_refused():
    """A step that returns zero functions (certified for themselves: bound = value) raises
    the psi cost from the HSVM start's: the DC algorithm never does that."""
    model, C, _, prob = flat_model_and_start()

    def corrupt(m, coef, b, sol):
        if m == 1:
            zero, zb = np.zeros_like(coef), np.zeros_like(b)
            value = model.primal_value(zero, zb, C, prob.parameters["pair_weights"].value)
            return zero, zb, _as_solution(value, value, zero, zb)
        return coef, b, sol

    with pytest.raises(SolverError, match=r"DC step 1: the psi cost rose from [0-9.]+ to "
                       r"[0-9.]+.*solver=FAKE"):
        dc_loop.dc_iterations(model, C, 1e-8, 10, FakeStep(prob, corrupt), "test")


def test_a_bound_above_the_psi_cost_of_its_iterate_is_refused():
    """The slack is round-off plus the tie rule's C tie_rtol per example given up."""
    opts = dc_loop.Options()
    slack = dc_loop.allowance(10.0, 1.0, np.array([0.0, 1.0, 1.0, 1.0]), 1e-6, opts)
    assert slack == pytest.approx(opts.certificate_rtol * 10.0 + 3e-6)
    dc_loop.check_bound(_as_solution(10.0, 10.0 + 3e-6, None, None), 10.0, slack, "test", 3)
    with pytest.raises(SolverError, match=r"DC step 3: the step's certified lower bound 10.5 "
                       r"exceeds the psi cost 10 of the iterate it was linearized at"):
        dc_loop.check_bound(_as_solution(10.0, 10.5, None, None), 10.0, slack, "test", 3)


# ---------------------------------------------------------------------- one iterate, one pair
@pytest.mark.parametrize("tol", [1.0, 1e-8])
def test_objective_and_lower_bound_belong_to_the_returned_iterate(tol):
    """With ``tol=1`` the flat case stops on the cost change after two steps, at an iterate
    whose cost is below the bound of the step that produced it: the result is the iterate the
    last step was linearized at, with that step's bound, never a bound from another iterate."""
    method, case = flat_case()
    ref = hpsi.dc_reference(case.X, case.Y.astype(str), _flat_tree(case.Y), C=1.0, tol=tol)
    res = ref.solve("CLARABEL")
    k = res.best_iteration
    assert res.objective == res.dc_objectives[k]
    assert k + 1 == len(res.steps) - 1 and res.lower_bound == res.steps[k + 1].lower_bound
    assert res.lower_bound <= res.objective * (1 + 1e-7)
    model = res.problem.data["model"]
    assert model.psi_value(res.weights, res.biases, 1.0) == pytest.approx(res.objective, rel=1e-12)
    lam = hpsi.linearization(model, model.train_scores(res.weights, res.biases), 1.0,
                             dc_loop.Options().tie_rtol)
    majorant = model.primal_value(res.weights, res.biases, 1.0, lam)
    assert majorant == pytest.approx(res.objective, rel=1e-9)   # the bound's majorant, at k
    if tol == 1.0:   # stopped on the change of step 2, whose point is not returned
        assert res.n_iter == 2 and k == 1 and res.dc_objectives[-1] < res.objective


def test_max_iter_zero_returns_the_hsvm_start_without_a_bound():
    _, case = flat_case()
    with pytest.warns(Warning, match="max_iter=0"):
        res = hpsi.dc(case.X, case.Y.astype(str), _flat_tree(case.Y), C=1.0, max_iter=0)
    assert res.lower_bound == -np.inf and res.status == "iteration_limit"
    assert res.objective == res.dc_objectives[0]
