"""NHSVM on label sets (Choi, Sasaki & Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479,
2016: (10) over ``Y_m`` with a decomposable loss, inference (19)).

* the closure relaxation of (19) by a minimum cut: its value bounds (19) from above, its sets
  are closed, and where it reports a label set that set is optimal (enumeration of ``Y_m``);
* the inference methods with the cut in front ("ilp", "lp") return what exact enumeration
  returns, plain and loss-augmented, on small trees and DAGs;
* branch and bound on the closure relaxation proves optimal label sets (enumeration), within
  its cut budget or not at all, and the oracle agrees with and without it;
* the fast solver on seeded label-set problems (tree and DAG) against the CVXPY reference, its
  certificate recomputed independently (the primal by enumeration, the bound from the dual
  point it returns);
* with and without the primal at a running average of the weights (``primal_average``), the
  fast solver reaches the reference's optimum under the same independent certificate, and the
  averaged primal costs one oracle call per sample and certificate past the average's horizon;
* the estimator's predictions equal exact inference.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx import inference as inf
from hiercvx.estimators import NormalizedHierarchicalSVC
from hiercvx.formulations import nhsvm
from hiercvx.inference.closure import ClosureCut
from hiercvx.models.nhsvm import node_scores
from hiercvx.solvers import nhsvm_fw

from labelset_cases import planted_sets, random_hierarchy


def optimum(S, H):
    """Best label-set value per row of ``S`` by enumeration of ``Y_m``."""
    return (S @ inf.enumerate_label_sets(H).T.astype(float)).max(axis=1)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("dag", [False, True])
def test_closure_cut_bounds_19_and_its_label_sets_are_optimal(seed, dag):
    rng = np.random.default_rng(700 + seed)
    H = random_hierarchy(rng, int(rng.integers(3, 15)), dag)
    S = rng.normal(size=(30, len(H))) + rng.normal()
    Z, value, exact = ClosureCut(H).run(S)
    best = optimum(S, H)
    assert np.all(value >= best - 1e-9)  # a relaxation of (19)
    np.testing.assert_allclose(value, inf.label_set_scores(S, Z), atol=1e-9)
    closed = np.asarray((H.ancestor_matrix.T @ Z.T.astype(float)).T > 0)  # ancestors of members
    assert not np.any(closed & ~Z) and Z[:, 0].all()
    assert np.all(inf.is_valid_label_set(Z[exact], H))
    np.testing.assert_allclose(value[exact], best[exact], atol=1e-9)


@pytest.mark.parametrize("offset", [-1.5, 1.5])
@pytest.mark.parametrize("seed", range(3))
def test_closure_cut_value_is_the_largest_closed_set_from_either_terminal(seed, offset):
    # a negative offset leaves more open sink arcs, a positive one more source arcs: the flow
    # is finished from the source, then from the sink; both reach the largest closed set
    rng = np.random.default_rng(900 + seed)
    H = random_hierarchy(rng, 11, dag=True)
    M = len(H)
    subsets = ((np.arange(1 << M)[:, None] >> np.arange(M)) & 1).astype(bool)
    parent, child = H.edge_index[:, 0], H.edge_index[:, 1]
    closed = subsets[subsets[:, 0] & ~np.any(subsets[:, child] & ~subsets[:, parent], axis=1)]
    S = rng.normal(size=(20, M)) + offset
    _, value, _ = ClosureCut(H).run(S)
    np.testing.assert_allclose(value, (S @ closed.T.astype(float)).max(axis=1), atol=1e-9)


def test_closure_cut_answers_positive_leaves_and_refuses_bare_internal_nodes():
    H = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "x"), ("b", "x"), ("b", "y")])
    S = np.zeros((2, len(H)))
    S[0, H.index("x")] = 1.0   # x pulls in a and b: a label set, exact
    S[1, H.index("b")] = 2.0   # b alone is closed but has no chosen child: not a label set
    S[1, [H.index("x"), H.index("y")]] = -1.0
    Z, value, exact = ClosureCut(H).run(S)
    assert exact.tolist() == [True, False]
    assert value[1] == pytest.approx(2.0) and optimum(S, H)[1] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["ilp", "lp"])
def test_inference_with_the_cut_equals_enumeration(seed, method):
    rng = np.random.default_rng(900 + seed)
    H = random_hierarchy(rng, int(rng.integers(4, 14)), dag=True)
    S = rng.normal(size=(12, len(H)))
    Z, info = inf.LabelSetOracle(H, method).solve(S, return_info=True)
    assert np.all(inf.is_valid_label_set(Z, H))
    np.testing.assert_allclose(info.objective, optimum(S, H), atol=1e-9)
    assert 0 <= info.n_closure <= len(S)
    # loss-augmented (the training oracle): the same value as enumeration
    T = inf.best_label_set(rng.normal(size=S.shape), H, "enumerate")
    kw = {"loss": "leaf_hamming", "true_indicator": T, "return_info": True}
    _, aug = inf.LabelSetOracle(H, method).solve(S, **kw)
    _, brute = inf.LabelSetOracle(H, "enumerate").solve(S, **kw)
    np.testing.assert_allclose(aug.objective, brute.objective, atol=1e-9)


def _certificate(model, res, lam):
    """The objective recomputed with enumeration as the oracle, and the dual value at the
    returned dual point (``g`` over the nodes and the loss term)."""
    W = model.augmented_weights(res.weights, res.extras.get("intercept"))
    oracle = inf.LabelSetOracle(model.H, "enumerate")
    P = nhsvm.primal_objective(W, model, lam, oracle)
    D = model.dual_value(res.extras["dual_coef"], np.array([res.extras["loss_term"]]), lam)
    return P, D


@pytest.mark.parametrize("structure", ["tree", "dag"])
def test_fast_solver_on_label_sets_matches_the_reference_with_an_independent_certificate(structure):
    rng = np.random.default_rng(11)
    H = random_hierarchy(rng, 9, dag=structure == "dag")
    X, Y = planted_sets(H, n=24, d=3, seed=5)
    lam = 0.5
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    res = nhsvm_fw.solve(model, lam, method="pairwise", tol=1e-8, max_iter=3000)
    ref = nhsvm.primal(X, Y, H, lam=lam, multilabel=True).solve(verbose=False)
    assert res.converged
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)
    P, D = _certificate(model, res, lam)
    assert P == pytest.approx(res.objective, rel=1e-10)
    assert D <= ref.objective * (1 + 1e-9) and D == pytest.approx(res.lower_bound, rel=1e-9)
    assert (P - D) / max(abs(P), 1.0) <= 1e-8


@pytest.mark.parametrize("average", [0.0, 10.0])
def test_primal_averaging_keeps_the_certificate_and_the_optimum(average):
    rng = np.random.default_rng(3)
    H = random_hierarchy(rng, 9, dag=False)
    X, Y = planted_sets(H, n=24, d=3, seed=2)
    lam = 0.5
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    res = nhsvm_fw.solve(model, lam, method="pairwise", max_iter=3000,
                         options=nhsvm_fw.Options(tol=1e-8, primal_average=average))
    ref = nhsvm.primal(X, Y, H, lam=lam, multilabel=True).solve(verbose=False)
    assert res.converged
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)
    P, D = _certificate(model, res, lam)
    assert P == pytest.approx(res.objective, rel=1e-10)
    assert D == pytest.approx(res.lower_bound, rel=1e-9)
    assert (P - D) / max(abs(P), 1.0) <= 1e-8
    # certificates 0 .. n_iter; the average differs from W(beta) from certificate `average` on
    extra = max(0, res.n_iter + 1 - int(average)) if average else 0
    assert res.extras["n_oracle"] == len(Y) * (res.n_iter + 1 + extra)


def test_a_negative_primal_average_is_refused():
    H = random_hierarchy(np.random.default_rng(0), 5, dag=False)
    X, Y = planted_sets(H, n=6, d=2, seed=0)
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    with pytest.raises(hc.InputError, match="primal_average"):
        nhsvm_fw.solve(model, 0.5, method="pairwise", options=nhsvm_fw.Options(primal_average=-1.0))


def test_estimator_predictions_equal_exact_inference_on_a_dag():
    rng = np.random.default_rng(4)
    H = random_hierarchy(rng, 12, dag=True)
    X, Y = planted_sets(H, n=40, d=3, seed=6)
    est = NormalizedHierarchicalSVC(hierarchy=H, tol=1e-6).fit(X, Y)
    S = est.node_scores(X)
    exact = inf.best_label_set(S, est.hierarchy_, "enumerate")
    fast, info = inf.LabelSetOracle(est.hierarchy_, "ilp").solve(S, return_info=True)
    np.testing.assert_allclose(inf.label_set_scores(S, fast), inf.label_set_scores(S, exact),
                               atol=1e-9)
    assert info.n_closure + info.n_bounded <= len(X)
    leaves = est.hierarchy_.leaves
    cols = [est.hierarchy_.index(v) for v in leaves]
    pred = est.predict(X)
    values = [inf.label_set_scores(S[i], est.hierarchy_.closure([p])[0]) for i, p in enumerate(pred)]
    np.testing.assert_allclose(np.ravel(values), inf.label_set_scores(S, exact), atol=1e-9)
    assert all(p for p in pred) and len(cols) == len(leaves)


@pytest.mark.filterwarnings("ignore:NHSVM")
@pytest.mark.parametrize("verbose, expected", [(True, True), ("progress", True), (1, True),
                                               (False, False), (-1, False)])
def test_estimator_prediction_inference_follows_verbose(monkeypatch, verbose, expected):
    H = random_hierarchy(np.random.default_rng(4), 8, dag=True)
    X, Y = planted_sets(H, n=12, d=2, seed=6)
    est = NormalizedHierarchicalSVC(hierarchy=H, inference="ilp", max_iter=5).fit(X, Y)
    est.set_params(verbose=verbose)
    asked = []
    solve = inf.LabelSetOracle.solve

    def recording(self, scores, **kwargs):
        asked.append(kwargs.get("verbose"))
        return solve(self, scores, **kwargs)

    monkeypatch.setattr(inf.LabelSetOracle, "solve", recording)
    est.predict(X)
    assert asked == [expected]


def test_estimator_inference_errors_name_inference():
    dag = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("a", "d")])
    X = np.random.default_rng(0).normal(size=(8, 2))
    Y = [frozenset({"c"}), frozenset({"c", "d"})] * 4
    with pytest.raises(hc.HierarchyError) as err:
        NormalizedHierarchicalSVC(hierarchy=dag, inference="dp").fit(X, Y)
    assert "inference='ilp'" in str(err.value) and "method=" not in str(err.value)
    big = hc.Hierarchy.from_parents({"r": None, **{f"g{i}": "r" for i in range(5)},
                                     **{f"l{i}": f"g{i % 5}" for i in range(20)}})
    Y = [frozenset({f"l{i}", f"l{(i + 1) % 20}"}) for i in range(8)]
    with pytest.raises(hc.ProblemTooLargeError) as err:
        NormalizedHierarchicalSVC(hierarchy=big, inference="enumerate").fit(X, Y)
    message = str(err.value)
    assert "inference='dp'" in message and "max_nodes" not in message and "method=" not in message


def test_node_scores_follow_the_model():
    rng = np.random.default_rng(2)
    H = random_hierarchy(rng, 8, dag=False)
    X, Y = planted_sets(H, n=20, d=3, seed=1)
    est = NormalizedHierarchicalSVC(hierarchy=H, tol=1e-6).fit(X, Y)
    S = node_scores(est.coef_, X, est.alpha_) + np.sqrt(est.alpha_) * est.intercept_
    np.testing.assert_allclose(est.node_scores(X), S, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_branch_and_bound_on_the_lp_reaches_the_optimum_of_19(seed):
    """Samples whose LP is fractional: branch and bound from the bound's set returns an optimal
    label set (enumeration), and the oracle without the cut (bounds, LP, branching) agrees."""
    rng = np.random.default_rng(1500 + seed)
    H = random_hierarchy(rng, int(rng.integers(8, 15)), dag=True)
    S = rng.normal(size=(40, len(H))) - 0.3
    best = optimum(S, H)
    lp = inf.LabelSetOracle(H, "ilp")._model(integer=False)
    start, keep = inf.DagBounds(H).run(S)[1:4:2]
    branched = 0
    for i in range(len(S)):
        z, _ = lp.solve(-S[i])
        if np.abs(z - np.round(z)).max() <= 1e-6:
            continue
        Z = lp.branch_subset(-S[i], keep[i], start[i], 200, 1e-6, 1e-12)
        assert Z is not None and inf.is_valid_label_set(Z, H)
        assert inf.label_set_scores(S[i], Z) == pytest.approx(best[i], abs=1e-9)
        branched += 1
    no_cut = inf.Options(closure_cut=False)
    for options in (no_cut, inf.Options(closure_cut=False, branch_max_nodes=1)):
        _, info = inf.LabelSetOracle(H, "ilp", options=options).solve(S, return_info=True)
        np.testing.assert_allclose(info.objective, best, atol=1e-9)
    assert branched > 0  # the seeds are chosen so that some LPs are fractional


def _loss_augmented(rng, H, S):
    """``S`` shifted by the leaf-Hamming loss of random true label sets (the training oracle's
    scores: most leaves gain 1, so the closed sets hold most nodes)."""
    T = inf.best_label_set(rng.normal(size=S.shape), H, "enumerate")
    return inf.loss_augmented_scores(S, H, T, "leaf_hamming")[0]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("augmented", [False, True])
def test_branch_and_bound_on_the_closure_cut_proves_the_optimum_of_19(seed, augmented):
    """Best-first branch and bound on the closure relaxation (a dangling node out, or one of its
    children in): every proved set is a label set of enumeration's value; with a budget the
    small graphs cannot exhaust, every sample is proved, also inside the nodes the bounds keep
    and from their label set; a tight budget proves fewer, never a wrong set."""
    rng = np.random.default_rng(2100 + seed)
    H = random_hierarchy(rng, int(rng.integers(6, 15)), dag=True)
    S = rng.normal(size=(30, len(H))) - 0.3
    if augmented:
        S = _loss_augmented(rng, H, S)
    best = optimum(S, H)
    cut = ClosureCut(H)
    closed, _, exact = cut.run(S)
    rows = np.flatnonzero(~exact)
    for budget in (2, 10_000):
        Z, proved = cut.branch(S, rows, budget, 1e-12)
        assert np.all(inf.is_valid_label_set(Z[proved], H))
        np.testing.assert_allclose(inf.label_set_scores(S[rows[proved]], Z[proved]),
                                   best[rows[proved]], atol=1e-9)
        assert not Z[~proved].any()
    assert proved.all()
    # inside the nodes the bounds keep, from the bounds' label set: the same optimum
    value, start, _, keep, _ = inf.DagBounds(H).run(S)
    Z, proved = cut.branch(S, rows, 10_000, 1e-12, keep=keep[rows],
                           start=(value[rows], start[rows]))
    assert proved.all() and np.all(inf.is_valid_label_set(Z, H))
    np.testing.assert_allclose(inf.label_set_scores(S[rows], Z), best[rows], atol=1e-9)
    # the width gate: rows whose first branching needs more than half the budget are not tried
    width = cut.branch_width(closed[rows])
    _, gated = cut.branch(S, rows, 4, 1e-12, closed=closed[rows])
    assert not np.any(gated & (2 * width > 4))


@pytest.mark.parametrize("seed", range(6))
def test_forced_cut_continued_from_the_parent_flow_equals_the_cut_from_scratch(seed):
    """A node forced in (source arc + big) or out (sink arc infinite) raises capacities only:
    the maximum flow continued from the unforced problem's flow gives the same closed set and
    value as a fresh cut on the forced scores (big added, or -inf), for nodes inside and
    outside the unforced set, with positive and negative scores."""
    from hiercvx.inference._closure_kernels import closure_forced, closure_one, workspace
    rng = np.random.default_rng(3300 + seed)
    H = random_hierarchy(rng, int(rng.integers(6, 15)), dag=True)
    cut = ClosureCut(H)
    M = len(H)
    ws = workspace(cut.net, M)
    for s in rng.normal(size=(10, M)) + rng.normal():
        big = 2.0 * (1.0 + np.abs(s).sum())
        z0 = np.zeros(M, dtype=bool)
        closure_one(s, cut.net, cut.tree, cut.graph, ws, z0)
        start = ws[0].copy()
        for v in range(1, M):
            for force_in in (True, False):
                shifted = s.copy()
                shifted[v] = s[v] + big if force_in else -np.inf
                fresh, warm = np.zeros(M, dtype=bool), np.zeros(M, dtype=bool)
                value_f, good_f = closure_one(shifted, cut.net, cut.tree, cut.graph, ws, fresh)
                _, good_w = closure_forced(s, cut.net, cut.graph, ws, warm, start, v, force_in, big)
                np.testing.assert_array_equal(warm, fresh)
                assert good_w == good_f and warm[v] == force_in
                # the set's true score, by the fresh cut's value on the shifted scores
                np.testing.assert_allclose(inf.label_set_scores(s, warm)[0],
                                           value_f - (big if force_in else 0.0), atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_oracle_with_branching_on_the_cut_agrees_with_enumeration_and_without_it(seed):
    """Method "ilp" with branch and bound on the cut (the default) and without it
    (``closure_branch_cuts=0``): the same optimal values as enumeration, plain and
    loss-augmented, and some loss-augmented samples answered by the branching."""
    rng = np.random.default_rng(2300 + seed)
    H = random_hierarchy(rng, int(rng.integers(8, 15)), dag=True)
    S = rng.normal(size=(40, len(H))) - 0.3
    branched = 0
    for scores in (S, _loss_augmented(rng, H, S)):
        best = optimum(scores, H)
        for cuts in (16, 0):
            Z, info = inf.LabelSetOracle(H, "ilp", options=inf.Options(closure_branch_cuts=cuts)
                                         ).solve(scores, return_info=True)
            assert np.all(inf.is_valid_label_set(Z, H))
            np.testing.assert_allclose(info.objective, best, atol=1e-9)
            assert cuts or info.n_branched == 0
            branched += info.n_branched
    assert branched > 0  # the bounds leave samples to the branching on every seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), size=st.integers(3, 12), ties=st.booleans())
def test_hypothesis_closure_branch_and_bound_reaches_the_optimum(seed, size, ties):
    """Random DAGs and scores (small integers: many exact ties), plain and loss-augmented:
    every row the branching proves is a label set of enumeration's value, and with an ample
    budget every row is proved."""
    rng = np.random.default_rng(seed)
    H = random_hierarchy(rng, size, dag=True)
    S = rng.integers(-3, 4, size=(6, len(H))).astype(float) if ties else rng.normal(size=(6, len(H)))
    for scores in (S, _loss_augmented(rng, H, S)):
        rows = np.arange(len(scores))
        Z, proved = ClosureCut(H).branch(scores, rows, 10_000, 1e-12)
        assert proved.all() and np.all(inf.is_valid_label_set(Z, H))
        np.testing.assert_allclose(inf.label_set_scores(scores, Z), optimum(scores, H), atol=1e-9)
