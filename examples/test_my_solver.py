"""Copy this file into your repository's tests: it checks YOUR solver against hiercvx's
certified references.  Run it with ``pytest test_my_solver.py`` (the hiercvx pytest plugin is
loaded automatically once hiercvx is installed; otherwise add ``-p hiercvx.testing.plugin``).

The solver below is a stand-in for yours: the Crammer-Singer multi-class SVM

    min_W 1/2 ||W||_F^2 + sum_i C_i max(0, max_{m != y_i} 1 - (w_{y_i} - w_m) . x_i),
    C_i = C * sample_weight_i * class_weight[y_i],

solved through its dual (one multiplier per sample and wrong class, budget C_i per sample) with
SciPy's SLSQP: no CVXPY, no hiercvx inside the solver.  It takes every model option of the
method (``sample_weight``, ``class_weight``, ``fit_intercept``, ``intercept_scaling``): the check
runs one generated problem per option, and ``strict=True`` fails on an option ``fit`` cannot take.  Replace ``fit`` with your own
``fit(X, Y, H, **params) -> weights`` in the shape hiercvx's reference returns (here: one row
per class, classes in sorted order; ``hiercvx.methods.get("multiclass")`` documents the method).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from hiercvx.testing import check_solver, kkt_report, problems_for
from hiercvx.testing.plugin import parametrize_with_references


def fit(X, y, H=None, C=1.0, sample_weight=None, class_weight=None, fit_intercept=False,
        intercept_scaling=1.0):
    """Crammer-Singer through its dual; returns W (n_classes, n_features), and the intercept
    (one per class) with ``fit_intercept`` -- LIBLINEAR's bias: a constant feature of value
    ``intercept_scaling`` whose weight is regularized like the others."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    if fit_intercept:
        X = np.hstack([X, np.full((X.shape[0], 1), intercept_scaling)])
    classes, yi = np.unique(y, return_inverse=True)
    n, q = len(yi), len(classes)
    per_sample = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    if isinstance(class_weight, dict):
        per_sample = per_sample * np.array([class_weight[c] for c in classes])[yi]
    elif class_weight == "balanced":  # scikit-learn's rule, counted with the sample weights
        per_sample = per_sample * (per_sample.sum() / (q * np.bincount(yi, weights=per_sample)))[yi]
    budget = C * per_sample
    # one dual variable per (sample i, wrong class m): alpha moves x_i from row m to row y_i
    pairs = [(i, m) for i in range(n) for m in range(q) if m != yi[i]]
    D = np.zeros((len(pairs), q, X.shape[1]))
    for p, (i, m) in enumerate(pairs):
        D[p, yi[i]] += X[i]
        D[p, m] -= X[i]
    D = D.reshape(len(pairs), -1)
    owner = np.array([i for i, _ in pairs])
    A = (owner[None, :] == np.arange(n)[:, None]).astype(float)  # sum of sample i's alphas

    def negative_dual(a):
        w = D.T @ a
        return 0.5 * w @ w - a.sum(), D @ w - 1.0

    res = minimize(negative_dual, np.zeros(len(pairs)), jac=True, method="SLSQP",
                   bounds=[(0, None)] * len(pairs),
                   constraints=[{"type": "ineq", "fun": lambda a: budget - A @ a, "jac": lambda a: -A}],
                   options={"ftol": 1e-15, "maxiter": 3000})
    W = (D.T @ res.x).reshape(q, X.shape[1])
    if not fit_intercept:
        return W
    return {"weights": W[:, :-1], "intercept": intercept_scaling * W[:, -1]}


def test_my_solver_solves_crammer_singer():
    # every structure "multiclass" supports (flat classes, CSR X) and every model option alone
    # (sample and class weights, the intercept); strict: an option fit does not take fails
    check_solver(fit, "multiclass", rtol=1e-4, strict=True)


@pytest.mark.parametrize("seed", [1, 2])
def test_my_solver_on_more_seeds(seed, hiercvx_seed):
    # fresh data of every flat problem and option probe, at another seed and a smaller size
    problems = problems_for("multiclass", structures=["flat"], seeds=[seed + hiercvx_seed], n=20)
    check_solver(fit, "multiclass", rtol=1e-4, problems=problems)


@parametrize_with_references("multiclass", structures=["flat"], n=12)
def test_margins_at_my_weights(reference_problem):
    p = reference_problem
    W = fit(p.X, p.Y, p.H, **p.options)
    report = kkt_report(p.method, W, p.X, p.Y, p.H, **p.options)
    assert report.ok(rtol=1e-4), str(report)
