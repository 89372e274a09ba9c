"""One meaning of C (LIBLINEAR's ``1/2 ||W||^2 + C sum_i loss_i``) and the intercept options on
the NHSVM, shared-norm, orthogonal-transfer and sibling-margin estimators."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import hiercvx.estimators as E
from hiercvx import methods
from hiercvx.exceptions import InputError
from hiercvx.methods.cases import TREE, problem

X_TREE, Y_TREE, _ = problem("tree", n=40, d=4, seed=3)
N = len(Y_TREE)

ESTIMATORS = {
    "NormalizedHierarchicalSVC": lambda **kw: E.NormalizedHierarchicalSVC(hierarchy=TREE, tol=1e-7, **kw),
    "SharedNormSVC": lambda **kw: E.SharedNormSVC(hierarchy=TREE, tol=1e-6, **kw),
    "OrthogonalTransferSVC": lambda **kw: E.OrthogonalTransferSVC(hierarchy=TREE, tol=1e-4,
                                                                  max_iter=50_000, **kw),
    "OrthogonalTransferSVC-flatmult": lambda **kw: E.OrthogonalTransferSVC(
        hierarchy=TREE, method="flatmult", tol=1e-4, max_iter=50_000, **kw),
    "SiblingMarginSVC": lambda **kw: E.SiblingMarginSVC(hierarchy=TREE, **kw),
    # LIBLINEAR's own convention, the yardstick the others are measured against
    "HierarchicalSVC": lambda **kw: E.HierarchicalSVC(hierarchy=TREE, **kw),
    "MulticlassSVC": lambda **kw: E.MulticlassSVC(**kw),
}


def _fit(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return ESTIMATORS[name](**kw).fit(X_TREE, Y_TREE)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_objective_is_C_times_the_summed_loss_near_zero_weights(name):
    """At small C the optimum is near W = 0, so ``objective_ ~ C sum_i loss_i(0)``: linear in C
    with a slope of order N (one loss of order 1 per sample).  The papers' scalings would show
    here: NHSVM's ``lam ||W||^2 + sum loss`` has no factor C (slope ~ 1/C), orthogonal
    transfer's ``C / N`` hinge a slope of order 1.  HierarchicalSVC and MulticlassSVC follow
    LIBLINEAR by construction and are the yardstick."""
    # the taxonomy loss (about 2 per sample here) leaves W = 0 at a smaller C
    small = 1e-4 if name == "HierarchicalSVC" else 1e-3
    smaller = small / 10
    slope = _fit(name, C=small).objective_ / small
    slope_smaller = _fit(name, C=smaller).objective_ / smaller
    assert slope == pytest.approx(slope_smaller, rel=0.05)
    assert 0.3 * N <= slope_smaller <= 5.0 * N, slope_smaller / N


def test_orthogonal_objective_at_zero_weights_is_C_N():
    """Orthogonal transfer's hinge is 1 per sample at W = 0: ``objective_ -> C N`` as C -> 0
    (the paper's ``C_paper / N sum xi`` with ``C_paper = C N``)."""
    C = 1e-5
    est = _fit("OrthogonalTransferSVC", C=C)
    assert est.objective_ <= C * N * (1 + 1e-6)
    assert est.objective_ >= 0.99 * C * N


def test_nhsvm_C_maps_to_the_papers_lam():
    """The paper's lam of (10) is not a parameter (it was deprecated for C = 1 / (2 lam)); the
    estimator solves (10) at lam = 1 / (2 C)."""
    with pytest.raises(TypeError, match="lam"):
        E.NormalizedHierarchicalSVC(hierarchy=TREE, lam=0.25)
    new = E.NormalizedHierarchicalSVC(hierarchy=TREE, C=2.0, tol=1e-8).fit(X_TREE, Y_TREE)
    entry = methods.get("nhsvm")
    paper = entry.fast_solvers["pairwise"].solve(
        entry.prepare(X_TREE, Y_TREE, TREE, fit_intercept=True), 0.25, method="auto", tol=1e-8)
    assert new.result_.objective == pytest.approx(paper.objective, rel=1e-6)
    assert new.C_ == 2.0
    # the reported objective is C times the paper's (10) with lam = 1 / (2C)
    assert new.objective_ == pytest.approx(2.0 * new.result_.objective, rel=1e-12)


@pytest.mark.parametrize("name", ["NormalizedHierarchicalSVC", "SharedNormSVC", "OrthogonalTransferSVC"])
def test_regularized_intercept(name):
    """A constant feature of value intercept_scaling: coef_ has no extra column, intercept_ one
    bias per node, and the scores use it; fit_intercept=False gives zero biases; CSR input
    fits the same model."""
    with_b = _fit(name, C=0.1)
    without = _fit(name, C=0.1, fit_intercept=False)
    n_nodes = len(TREE)
    assert with_b.coef_.shape == without.coef_.shape == (n_nodes, X_TREE.shape[1])
    assert with_b.intercept_.shape == (n_nodes,) and np.abs(with_b.intercept_).max() > 0
    assert np.array_equal(without.intercept_, np.zeros(n_nodes))
    # decision from coef_ and intercept_ by hand
    S = X_TREE @ with_b.coef_.T + with_b.intercept_
    if name == "NormalizedHierarchicalSVC":
        S = S * np.sqrt(with_b.alpha_)
        assert np.allclose(with_b.node_scores(X_TREE), S)
    elif name == "SharedNormSVC":
        assert np.allclose(with_b.node_scores(X_TREE), S)
    else:
        assert np.allclose(with_b._node_scores(X_TREE), S)
    # intercept_scaling s: the bias column is s, the bias is regularized as (b / s)^2 / 2
    scaled = _fit(name, C=0.1, intercept_scaling=3.0)
    assert scaled.objective_ <= with_b.objective_ * (1 + 1e-3)
    sparse = ESTIMATORS[name](C=0.1).fit(sp.csr_matrix(X_TREE), Y_TREE)
    assert np.allclose(sparse.coef_, with_b.coef_, atol=1e-3)
    assert np.allclose(sparse.intercept_, with_b.intercept_, atol=1e-3)
    assert np.array_equal(sparse.predict(sp.csr_matrix(X_TREE)), with_b.predict(X_TREE))


@pytest.mark.parametrize("name", ["NormalizedHierarchicalSVC", "OrthogonalTransferSVC"])
def test_intercept_options_are_validated(name):
    with pytest.raises(InputError, match="intercept_scaling"):
        ESTIMATORS[name](intercept_scaling=0.0).fit(X_TREE, Y_TREE)
    with pytest.raises(InputError, match="fit_intercept"):
        ESTIMATORS[name](fit_intercept="yes").fit(X_TREE, Y_TREE)


@pytest.mark.parametrize("cls", [E.SiblingMarginSVC, E.HierarchicalPsiClassifier,
                                 E.SequentialHierarchicalSVC])
def test_sibling_biases_are_the_papers_and_always_fitted(cls):
    """(2)'s node biases b_v are unregularized and always fitted: intercept_ is them, and
    fit_intercept=False is refused (the dual (9) is written for free biases)."""
    with pytest.raises(InputError, match="fit_intercept must be True"):
        cls(hierarchy=TREE, fit_intercept=False).fit(X_TREE, Y_TREE)
    if cls is E.SiblingMarginSVC:
        est = cls(hierarchy=TREE, intercept_scaling=7.0).fit(X_TREE, Y_TREE)
        ref = cls(hierarchy=TREE).fit(X_TREE, Y_TREE)
        assert est.intercept_.shape == (len(est.working_hierarchy_),)
        assert np.allclose(est.node_scores(X_TREE), X_TREE @ est.coef_.T + est.intercept_)
        assert est.objective_ == pytest.approx(ref.objective_)  # intercept_scaling is unused
