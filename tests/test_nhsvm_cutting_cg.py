"""NHSVM n-slack cutting planes whose master runs the matrix-free interior point
(``nhsvm_fw.Options(master_newton="matrix_free")``, :mod:`hiercvx.solvers.interior_point_cg`).

Choi, Sasaki & Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479, 2016, (10) on label
sets: the cutting planes certify the optimum the CVXPY reference and the pairwise Frank-Wolfe
method certify, on small trees and DAGs, from a cold start and from the pairwise hand-over
(``method="auto"``) -- masters this small (``M d`` at most
``interior_point_cg.Options().dense_below``) take that module's route with dense solves; a master
above that threshold runs conjugate gradients (slow); ``"auto"`` picks the Newton systems by
``Options.master_max_dimension``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hiercvx import testing
from hiercvx.exceptions import InputError
from hiercvx.formulations import nhsvm
from hiercvx.formulations.nhsvm import prepare
from hiercvx.solvers import nhsvm_fw
from hiercvx.solvers._nhsvm_cutting import master_newton
from hiercvx.solvers._nhsvm_dual import vertex_model

from labelset_cases import HIERARCHIES, label_sets, random_hierarchy

MATRIX_FREE = nhsvm_fw.Options(master_newton="matrix_free")


@pytest.mark.parametrize("name", ["tree", "dag"])
def test_matrix_free_cutting_planes_certify_the_reference_and_pairwise_optimum(name):
    H = HIERARCHIES[name]()
    X, Y = label_sets(H, 40, 4, seed=11)
    model = prepare(X, Y, H)
    ref = nhsvm.primal(X, Y, H, lam=0.5, inference="lp").solve(gap_tol=1e-8)
    res = nhsvm_fw.solve(model, 0.5, method="cutting_plane", tol=1e-8, max_iter=300,
                         options=MATRIX_FREE)
    pairwise = nhsvm_fw.solve(model, 0.5, tol=1e-8, max_iter=3000)
    assert res.converged and res.extras["method"] == "cutting_plane"
    testing.assert_fast_matches_reference(res, ref, rtol=1e-6)
    testing.assert_same_optimum(res, pairwise, rtol=1e-7)
    # the certificate is the model's: the primal recomputed at the weights, a valid bound
    assert res.objective == pytest.approx(model.objective(res.weights, lam=0.5), rel=1e-12)
    assert res.lower_bound <= ref.objective * (1 + 1e-8)
    assert len(res.history["master_newton_steps"]) >= 1


@pytest.mark.parametrize("name", ["tree", "dag"])
def test_auto_hands_over_to_matrix_free_cutting_planes(name):
    H = HIERARCHIES[name]()
    X, Y = label_sets(H, 40, 4, seed=12)
    model = prepare(X, Y, H)
    ref = nhsvm.primal(X, Y, H, lam=0.5, inference="lp").solve(gap_tol=1e-8)
    options = nhsvm_fw.Options(master_newton="matrix_free", handoff_passes=2)
    res = nhsvm_fw.solve(model, 0.5, method="auto", tol=1e-8, max_iter=300, options=options)
    assert res.converged and res.extras["method"] == "cutting_plane"
    assert res.extras["pairwise_passes"] == 2
    testing.assert_fast_matches_reference(res, ref, rtol=1e-6)


@pytest.mark.slow
def test_a_master_above_the_dense_threshold_runs_conjugate_gradients():
    # 21 nodes x 80 features: above interior_point_cg.Options().dense_below, so the master's
    # Newton systems are solved by conjugate gradients (about a minute: a hundred conjugate
    # gradient steps per system), and the optimum is pairwise's
    rng = np.random.default_rng(5)
    H = random_hierarchy(rng, 21, dag=False)
    X, Y = label_sets(H, 20, 80, seed=5)
    model = prepare(X, Y, H)
    assert model.n_nodes * X.shape[1] > 1500
    res = nhsvm_fw.solve(model, 1.0, method="cutting_plane", tol=1e-6, max_iter=300,
                         options=MATRIX_FREE)
    pairwise = nhsvm_fw.solve(model, 1.0, tol=1e-6, max_iter=3000)
    assert res.converged and pairwise.converged
    testing.assert_same_optimum(res, pairwise, rtol=2e-6)
    assert sum(res.history["master_cg_steps"]) > 0


def test_master_newton_choice_and_refusal():
    H = HIERARCHIES["tree"]()
    X, Y = label_sets(H, 20, 4, seed=1)
    view = vertex_model(prepare(X, Y, H), "auto")
    size = view.n_nodes * X.shape[1]
    auto = nhsvm_fw.Options(master_newton="auto", master_max_dimension=size)
    assert master_newton(view, auto) == "dense"
    below = nhsvm_fw.Options(master_newton="auto", master_max_dimension=size - 1)
    assert master_newton(view, below) == "matrix_free"
    # a matrix-free master is affordable above master_max_dimension; a dense one is not
    assert nhsvm_fw.cutting_plane_applicable(view, below)
    dense = nhsvm_fw.Options(master_newton="dense", master_max_dimension=size - 1)
    assert not nhsvm_fw.cutting_plane_applicable(view, dense)
    with pytest.raises(InputError, match="master_newton"):
        master_newton(view, nhsvm_fw.Options(master_newton="cg"))



def _above_the_dense_limit():
    """A label-set problem whose master has more rows ``M (d + 1)`` than the interior point
    factors densely."""
    from hiercvx.solvers import interior_point
    H = HIERARCHIES["tree"]()
    X, Y = label_sets(H, 12, 4, seed=3)
    d = interior_point.Options().max_dimension // len(H) + 1
    return np.hstack([X, np.random.default_rng(0).standard_normal((X.shape[0], d))]), Y, H


def test_dense_master_above_the_interior_points_limit_is_refused_with_the_fix():
    """``method="cutting_plane"`` with dense Newton systems larger than the interior point
    factors is refused before the first round, naming the routes that work; the first,
    ``method="pairwise"``, fits."""
    from hiercvx.estimators import NormalizedHierarchicalSVC
    X, Y, H = _above_the_dense_limit()
    with pytest.raises(InputError, match=r"method='pairwise'.*master_newton='matrix_free'"):
        nhsvm_fw.solve(prepare(X, Y, H), 0.5, method="cutting_plane")
    est = NormalizedHierarchicalSVC(hierarchy=H, solver_options={"method": "pairwise"}).fit(X, Y)
    assert est.gap_ <= est.tol


@pytest.mark.slow
def test_the_refusals_matrix_free_fix_fits():
    """The other route the refusal names, from the estimator (about half a minute)."""
    from hiercvx.estimators import NormalizedHierarchicalSVC
    X, Y, H = _above_the_dense_limit()
    est = NormalizedHierarchicalSVC(hierarchy=H, tol=1e-4, solver_options={
        "method": "cutting_plane", "master_newton": "matrix_free"}).fit(X, Y)
    assert est.gap_ <= 1e-4
