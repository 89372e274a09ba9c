"""Copy this file into your repository's tests: it checks YOUR solver against hiercvx's
certified references.  Run it with ``pytest test_my_solver.py`` (the hiercvx pytest plugin is
loaded automatically once hiercvx is installed; otherwise add ``-p hiercvx.testing.plugin``).

The solver below is a stand-in for yours: the Crammer-Singer multi-class SVM

    min_W 1/2 ||W||_F^2 + sum_i C_i max(0, max_{m != y_i} 1 - (w_{y_i} - w_m) . x_i),
    C_i = C * sample_weight_i,

solved through its dual (one multiplier per sample and wrong class, budget C_i per sample) with
SciPy's SLSQP: no CVXPY, no hiercvx inside the solver.  Replace ``fit`` with your own
``fit(X, Y, H, **params) -> weights`` in the shape hiercvx's reference returns (here: one row
per class, classes in sorted order; ``hiercvx.methods.get("multiclass")`` documents the method).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from hiercvx.testing import check_solver, kkt_report
from hiercvx.testing.plugin import parametrize_with_references


def fit(X, y, H=None, C=1.0, sample_weight=None):
    """Crammer-Singer through its dual; returns W (n_classes, n_features)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    classes, yi = np.unique(y, return_inverse=True)
    n, q = len(yi), len(classes)
    budget = C * (np.ones(n) if sample_weight is None else np.asarray(sample_weight, float))
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
                   options={"ftol": 1e-14, "maxiter": 2000})
    return (D.T @ res.x).reshape(q, X.shape[1])


def test_my_solver_solves_crammer_singer():
    # every structure "multiclass" supports (flat classes, CSR X, sample weights); problems with
    # options fit does not take (class_weight, here) are skipped and listed
    check_solver(fit, "multiclass", rtol=1e-4)


@pytest.mark.parametrize("seed", [1, 2])
def test_my_solver_on_more_seeds(seed, hiercvx_seed):
    check_solver(fit, "multiclass", rtol=1e-4, random_state=seed + hiercvx_seed,
                 structures=["flat"])


@parametrize_with_references("multiclass", structures=["flat"], n=12)
def test_margins_at_my_weights(reference_problem):
    p = reference_problem
    W = fit(p.X, p.Y, p.H, **{k: v for k, v in p.options.items() if k != "class_weight"})
    if "class_weight" in p.options:
        pytest.skip("this solver takes no class_weight")
    report = kkt_report(p.method, W, p.X, p.Y, p.H, **p.options)
    assert report.ok(rtol=1e-4), str(report)
