"""Pair shrinking in the working-set passes (``working_set.solve(..., shrink=True)``, the default).

Shrinking only changes which pairs a pass looks at, never the problem: with and without it the
solver reaches the same certified optimum, which is also the CVXPY reference's; the compiled
helpers that keep an example's live pairs agree with brute force.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx import testing
from hiercvx.formulations import hsvm
from hiercvx.kernels import make_kernel
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin as _margin
from hiercvx.solvers import working_set
from hiercvx.solvers._working_set_kernels import (_example_violation, _needed_classes,
                                                  _shrink_pairs)
from hiercvx.solvers.margin_dual import Options as DualOptions


def tree():
    return hc.Hierarchy.from_parents({"r": None, "a": "r", "a1": "a", "a2": "a", "b": "r",
                                      "b1": "b", "b11": "b1", "b12": "b1", "b2": "b", "c": "r",
                                      "c1": "c", "c2": "c", "c3": "c"})


def data(H, n=80, d=6, seed=0, multi=0.2, scale=1.0):
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    means = rng.standard_normal((len(leaves), d)) * 1.5
    first = rng.integers(len(leaves), size=n)
    second = np.where(rng.random(n) < multi, rng.integers(len(leaves), size=n), first)
    X = scale * (0.5 * (means[first] + means[second]) + rng.standard_normal((n, d)))
    return X, [frozenset({leaves[a], leaves[b]}) for a, b in zip(first, second)]


@pytest.mark.parametrize("case", ["slack", "margin", "intercept", "sparse", "rbf", "C10"])
def test_shrinking_reaches_the_same_certified_optimum(case):
    H = tree()
    X, Y = data(H, seed=len(case))
    kw, C = {}, 1.0
    if case == "margin":
        kw["rescaling"] = "margin"
    elif case == "intercept":
        kw["fit_intercept"] = True
    elif case == "sparse":
        X[np.abs(X) < 0.8] = 0.0
        X = sp.csr_matrix(X)
    elif case == "rbf":
        kw["kernel"] = make_kernel("rbf", sigma=1.5)
    elif case == "C10":
        C = 10.0
    model = hsvm_model.prepare(X, Y, H, **kw)
    on = working_set.solve(model, C=C, tol=1e-9, shrink=True)
    off = working_set.solve(model, C=C, tol=1e-9, shrink=False)
    for res in (on, off):
        assert res.converged and res.gap <= 1e-9
        assert res.lower_bound <= res.objective + 1e-9 * abs(res.objective)
    testing.assert_same_optimum(on, off, rtol=1e-9)
    # the certificate is the model's own: objective at the reported weights, bound at the dual
    assert np.isclose(model.lower_bound(on.dual, C), on.lower_bound, rtol=1e-12)
    if case in ("slack", "margin"):
        ref = hsvm.primal(X, Y, H, C=C, **kw).solve()
        testing.assert_fast_matches_reference(on, ref, rtol=1e-6)


def test_shrinking_on_a_nearly_separable_problem_with_many_classes():
    """Well-separated classes: most pairs are far from their margins and get shrunk."""
    H = hc.Hierarchy.from_paths([f"{a}/{b}" for a in range(6) for b in range(5)])
    X, Y = data(H, n=300, d=10, seed=7, multi=0.0, scale=3.0)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    on = working_set.solve(model, C=1.0, tol=1e-8)
    off = working_set.solve(model, C=1.0, tol=1e-8, shrink=False)
    assert on.converged and off.converged
    testing.assert_same_optimum(on, off, rtol=1e-8)
    n_pairs = model.data.n_pairs
    assert min(on.history["live_pairs"]) < 0.5 * n_pairs  # shrinking did happen
    assert set(off.history["live_pairs"]) == {n_pairs}


@given(st.integers(0, 10_000), st.integers(1, 30), st.floats(0.0, 0.5))
@settings(max_examples=60, deadline=None)
def test_shrink_pairs_keeps_support_and_near_violations(seed, m, margin):
    """``_shrink_pairs``: brute force = keep the support and every pair with
    ``H_p >= min(0, min_{alpha_p > 0} H_p) - margin``, in their order."""
    rng = np.random.default_rng(seed)
    p0 = 3
    L = np.arange(p0, p0 + m, dtype=np.int64)
    alpha = np.zeros(p0 + m)
    alpha[L] = np.where(rng.random(m) < 0.3, rng.random(m), 0.0)
    Hp = np.round(rng.standard_normal(m), 1)
    support = alpha[L] > 0
    u = min(0.0, Hp[support].min()) if support.any() else 0.0
    expected = L[support | (Hp >= u - margin)]
    k = _shrink_pairs(alpha, Hp, L, m, margin)
    np.testing.assert_array_equal(L[:k], expected)


def test_live_pair_helpers_against_brute_force():
    rng = np.random.default_rng(0)
    q, P = 7, 40
    pair_y = rng.integers(q, size=P)
    pair_ybar = (pair_y + 1 + rng.integers(q - 1, size=P)) % q
    L = np.sort(rng.choice(P, size=12, replace=False)).astype(np.int64)
    mark, need = np.zeros(q, dtype=bool), np.empty(q, dtype=np.int64)
    k = _needed_classes(L, L.size, pair_y, pair_ybar, mark, need)
    assert set(need[:k]) == set(pair_y[L]) | set(pair_ybar[L]) and k == len(set(need[:k]))
    assert not mark.any()
    alpha = np.where(rng.random(P) < 0.4, rng.random(P), 0.0)
    cost = rng.uniform(0.5, 2.0, P)
    Hp = rng.standard_normal(L.size)
    budget = 10.0  # not exhausted: u_i is capped at 0
    psi, best = _example_violation(alpha, Hp, L, L.size, cost, budget,
                                   DualOptions().budget_rtol)
    sup = alpha[L] > 0
    u = min(0.0, Hp[sup].min()) if sup.any() else 0.0
    assert np.isclose(psi, max(0.0, Hp.max()) - u) and Hp[best] == Hp.max()


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_certificate_kernel_equals_the_numpy_definitions(rescaling):
    """``MarginDualState.certify``'s one-pass kernel: the slacks of ``models.margin.slacks``
    and the psi of ``violation_scores`` (budgets exhausted, free, and zero)."""
    from hiercvx.solvers.margin_dual import MarginDualState, violation_scores
    from hiercvx.solvers.primitives import row_data

    H = tree()
    X, Y = data(H, n=60, seed=3, multi=0.3)
    w = np.ones(len(Y))
    w[:5] = 0.0  # C_i = 0
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, sample_weight=w)
    d = model.data
    rng = np.random.default_rng(1)
    for C in (0.3, 2.0):
        alpha = np.where(rng.random(d.n_pairs) < 0.2, rng.random(d.n_pairs), 0.0)
        alpha = _margin.project_dual(alpha, d, C)
        full = np.flatnonzero(np.bincount(d.pair_i, minlength=d.n_samples) > 0)[5:12]
        for i in full:  # some exhausted budgets
            seg = slice(d.pair_ptr[i], d.pair_ptr[i + 1])
            used = float(d.pair_cost[seg] @ alpha[seg])
            if used > 0:
                alpha[seg] *= C * d.Cw[i] / used
        state = MarginDualState(model, row_data(X=model.X), C)
        primal, dual, psi = state.certify(alpha)
        S = state.scores
        np.testing.assert_allclose(psi, violation_scores(alpha, S, d, C), rtol=1e-12, atol=1e-12)
        W = _margin.weights_from_coefficients(_margin.coefficients(alpha, d), model.X, d.Lam)
        assert np.isclose(primal, _margin.primal_objective(W, model.X, d, C), rtol=1e-12)
        assert np.isclose(dual, model.lower_bound(alpha, C), rtol=1e-12)


def test_a_pass_that_meets_nothing_above_the_threshold_is_certified(caplog):
    """A pass over every example and live pair that meets no violation above the threshold
    is followed by a certificate (which lowers the threshold). The sweep shrinks the pairs of
    the examples it skips, so whether a pass was whole is known only before it: decided after
    it, every such pass looked partial, the pairs were restored, the next pass shrank them
    again, and passes that visited nothing ran on until the work-based schedule came due
    (test_class_symmetry's 60-example star: 40 empty passes in a row, gap 8.2e-3 after 100
    passes from 0, 1.9e-3 now)."""
    import logging

    H = hc.Hierarchy.from_parents({"root": None, **{f"c{j}": "root" for j in range(30)}})
    rng = np.random.default_rng(3)
    means = 2.0 * rng.standard_normal((3, 4))
    k = rng.integers(3, size=60)
    X = means[k] + rng.standard_normal((60, 4))
    model = hsvm_model.prepare(X, [f"c{j}" for j in k], H, fit_intercept=True)
    with caplog.at_level(logging.DEBUG, logger="hiercvx.solvers.working_set"):
        res = working_set.solve(model, C=10.0, tol=1e-12, max_iter=100)
    empty_run = longest = 0
    for rec in caplog.records:
        msg = rec.getMessage()
        if "active examples visited" in msg:
            empty_run = empty_run + 1 if msg.split(": ")[1].startswith("0 of") else 0
            longest = max(longest, empty_run)
        elif "primal" in msg:  # a certificate
            empty_run = 0
    assert longest <= 2  # one partial pass, then a whole one, then the certificate
    assert res.history["n_iter"][-1] <= 100
