"""Both sides of every problem: the declared duals of orthogonal transfer (4) (the SDP dual of
the lifting), its four baselines (one QP dual), NHSVM (10) / (13) and the shared-norm SVM (14).

Each dual is a certified reference (objective = the primal at the recovered point, lower bound
= the dual objective at the projected dual point); here it is solved and checked equal to the
primal, its recovery map checked against the primal's weights, and its structure (the
optimal ``T``, the box of ``S``, the path cover) against the derivation in the sheets.
"""

from __future__ import annotations

import numpy as np
import pytest

from hiercvx import methods
from hiercvx.formulations import nhsvm as nf
from hiercvx.formulations import orthogonal as ot
from hiercvx.methods.cases import problem
from hiercvx.verify import DUAL_RTOL

DUAL_METHODS = ("orthogonal", "flatmult", "hiermult", "transfer", "treeloss", "nhsvm", "shared_norm")
#: problems whose primal optimum W is unique (strongly convex regularizer); (14) is only convex
UNIQUE_WEIGHTS = ("orthogonal", "flatmult", "hiermult", "transfer", "treeloss", "nhsvm")


def _cases():
    for name in DUAL_METHODS:
        for case in methods.get(name).cases(True):
            yield pytest.param(name, case, id=f"{name}-{case.name}")


@pytest.mark.parametrize("name, case", list(_cases()))
def test_dual_equals_primal_on_every_registered_case(name, case):
    method = methods.get(name)
    assert "dual" in method.references
    primal = method.build("primal", case).solve()
    dual = method.build("dual", case).solve()
    scale = max(1.0, abs(primal.objective))
    assert abs(primal.objective - dual.lower_bound) <= DUAL_RTOL * scale
    # weak duality across the two certificates
    assert dual.lower_bound <= primal.objective + 1e-7 * scale
    assert primal.lower_bound <= dual.objective + 1e-7 * scale
    if name in UNIQUE_WEIGHTS and isinstance(primal.weights, np.ndarray):
        W = primal.weights
        assert np.abs(dual.weights - W).max() <= 1e-4 * max(1.0, np.abs(W).max())


def _orthogonal_problem(seed=0, n=30, d=3):
    X, Y, H = problem("partial", n=n, d=d, seed=seed)
    return X, Y, H


def test_sdp_dual_structure_matches_the_derivation():
    X, Y, H = _orthogonal_problem()
    prob = ot.dual(X, Y, H, C=2.0)
    sol = prob.solve()
    model = prob.data["model"]
    K, S, T, alpha = model.K, sol.values["S"], sol.values["T"], sol.values["alpha"]
    # S in the box of K: fixed diagonal, |S_ij| <= K_ij (0 off the ancestor pairs)
    np.testing.assert_allclose(np.diag(S), np.diag(K), atol=1e-7)
    assert np.all(np.abs(S) <= K + 1e-7)
    # S is positive definite (its comparison matrix dominates Kbar, which is PD)
    assert np.linalg.eigvalsh(S)[0] > 0
    # T is the Schur complement U^T S^{-1} U at the optimum
    U = model.node_gradient(alpha)[model.var_nodes]
    np.testing.assert_allclose(T, U.T @ np.linalg.solve(S, U), atol=1e-5 * max(1, np.abs(T).max()))
    # the recovery W = S^{-1} U(alpha) is the primal optimum, and the solver's dual value is
    # the certified bound
    primal = ot.primal(X, Y, H, C=2.0).solve()
    W = model.full_weights(np.linalg.solve(S, U))
    np.testing.assert_allclose(W, primal.weights, atol=1e-4)
    np.testing.assert_allclose(sol.solver_objective, sol.lower_bound, rtol=1e-6)
    # the budgets sum_{pairs of k} alpha_p <= C/N hold
    used = np.bincount(model.data.pair_i, weights=alpha, minlength=model.data.n_samples)
    assert used.max() <= 2.0 / len(Y) * (1 + 1e-6)


def test_sdp_dual_in_the_representer_basis_and_explicit_K():
    X, Y, H = problem("tree", n=12, d=20, seed=3)
    p = ot.primal(X, Y, H, C=1.0).solve()
    d = ot.dual(X, Y, H, C=1.0).solve()
    assert "representer" in d.name
    np.testing.assert_allclose(p.objective, d.lower_bound, rtol=DUAL_RTOL)
    K = ot.heuristic_K(H, alpha=0.3)
    p = ot.primal(X, Y, H, C=1.0, K=K, representer=False).solve()
    d = ot.dual(X, Y, H, C=1.0, K=K, representer=False).solve()
    np.testing.assert_allclose(p.objective, d.lower_bound, rtol=DUAL_RTOL)


def test_dual_C_is_a_parameter():
    X, Y, H = _orthogonal_problem(seed=1)
    for build_p, build_d in ((ot.primal, ot.dual), (ot.transfer, ot.transfer_dual)):
        dual = build_d(X, Y, H, C=1.0)
        for C in (0.5, 3.0):
            lb = dual.set(C=C).solve().lower_bound
            np.testing.assert_allclose(build_p(X, Y, H, C=C).solve().objective, lb, rtol=DUAL_RTOL)


def test_baseline_dual_is_one_builder_for_the_family():
    X, Y, H = problem("tree", n=30, d=3, seed=2)
    for method in ("flatmult", "hiermult", "transfer", "treeloss"):
        d = ot.baseline_dual(X, Y, H, C=1.5, method=method).solve()
        p = getattr(ot, method)(X, Y, H, C=1.5).solve()
        np.testing.assert_allclose(p.objective, d.lower_bound, rtol=DUAL_RTOL)
        np.testing.assert_allclose(d.solver_objective, d.lower_bound, rtol=1e-6)
    d = ot.treeloss_dual(X, Y, H, C=1.0, classes="leaves").solve()
    np.testing.assert_allclose(ot.treeloss(X, Y, H, C=1.0, classes="leaves").solve().objective,
                               d.lower_bound, rtol=DUAL_RTOL)


@pytest.mark.parametrize("variant", ["nhsvm", "13"])
def test_nhsvm_dual_recovery_and_lam_parameter(variant):
    X, Y, H = problem("tree", n=30, d=3, seed=4)
    dual = nf.dual(X, Y, H, lam=0.2, variant=variant)
    for lam in (0.2, 1.5):
        sol = dual.set(lam=lam).solve()
        p = nf.primal(X, Y, H, lam=lam, variant=variant).solve()
        np.testing.assert_allclose(p.objective, sol.lower_bound, rtol=DUAL_RTOL)
        # declared as lam * (dual objective): the solver's value over lam is the bound
        np.testing.assert_allclose(sol.solver_objective / lam, sol.lower_bound, rtol=1e-6)
        np.testing.assert_allclose(sol.weights, p.weights, atol=1e-4 * max(1, np.abs(p.weights).max()))
        beta = sol.values["beta"]
        assert beta.sum(axis=1).max() <= 1 + 1e-7
        model = dual.data["nhsvm"]
        assert np.abs(beta[np.arange(len(Y)), model.leaf_pos]).max() <= 1e-7


def test_nhsvm_dual_multilabel_is_the_cutting_plane_reference():
    X, Y, H = problem("multilabel", n=24, d=3, seed=0)
    assert isinstance(nf.dual(X, Y, H, lam=0.1), nf.CuttingPlaneProblem)
    with pytest.raises(ValueError, match="cutting-plane"):
        nf.dual_from_model(nf.prepare(X, Y, H), 0.1)


@pytest.mark.parametrize("structure", ["tree", "dag"])
def test_shared_dual_recovers_alpha_and_the_cover(structure):
    X, Y, H = problem(structure, n=30, d=3, seed=5)
    if structure == "dag":
        Y = [min(labels) for labels in Y]
    p = nf.shared_primal(X, Y, H, lam=0.5).solve()
    prob = nf.shared_dual(X, Y, H, lam=0.5)
    d = prob.solve()
    np.testing.assert_allclose(p.objective, d.lower_bound, rtol=DUAL_RTOL)
    # the cover constraint: ||V_n||^2 <= 4 lam (A^T mu)_n at the solver's point
    A, mu = prob.data["leaf_paths"], d.values["mu"]
    model = prob.data["model"]
    beta = d.values["beta"]
    G = beta.sum(axis=1)[:, None] * model.T - beta @ model.paths
    V = np.asarray(X.T @ G).T
    assert np.all(np.einsum("ij,ij->i", V, V) <= 4 * 0.5 * (A.T @ mu) + 1e-6)
    # the objective of (14) at the recovered point is the primal optimum
    np.testing.assert_allclose(d.objective, p.objective, rtol=1e-6)


def test_scaled_dual_certificate_names_the_solvers_scale():
    """The NHSVM dual is declared times lam (lam stays a DPP parameter): the certificate prints
    the solver's number with that scale named, beside the recomputed objective and the bound;
    the numbers returned are unchanged (solver_objective = lam x the dual's value)."""
    method = methods.get("nhsvm")
    case = method.cases(True)[0]
    lam = case.params["lam"]
    dual = method.build("dual", case).solve()
    assert dual.solver_objective == pytest.approx(lam * dual.lower_bound, rel=1e-6)
    assert dual.solver_objective_meaning == f"the dual times lam = {lam:g}"
    line = next(t for t in dual.certificate().splitlines() if "solver's objective" in t)
    assert line.endswith(f"{dual.solver_objective:.10g} (the dual times lam = {lam:g})")
    primal = method.build("primal", case).solve()  # a primal's solver value is its own optimum
    assert primal.solver_objective_meaning == ""
    assert next(t for t in primal.certificate().splitlines()
                if "solver's objective" in t).rstrip().endswith(f"{primal.solver_objective:.10g}")
    other = methods.get("shared_norm")  # declared at its own scale: nothing to name
    assert other.build("dual", other.cases(True)[0]).solve().solver_objective_meaning == ""


def test_cutting_plane_certificate_names_the_master():
    """The multi-label reference's solver number is its last master's optimum (a relaxation over
    the working set), and the certificate says so."""
    method = methods.get("nhsvm")
    case = next(c for c in method.cases(True) if c.structure == "multilabel")
    sol = method.build("primal", case).solve(verbose=False)
    assert sol.solver_objective_meaning == (f"the last master's optimum, over its {sol.n_cuts:,} "
                                            "cuts: a relaxation")
    assert f"({sol.solver_objective_meaning})" in sol.certificate()
