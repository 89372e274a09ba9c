"""Hierarchical perceptrons (Cai thesis ch. 5) and Hieron (7.5.2): exact identities and Prop. 5.

Independent route: a plain-Python transcription of Algorithms 4 / 6 / 7 and of the Hieron step
(7.8)-(7.9) that keeps the stacked node weights ``W`` and updates them by (5.3); it records
``W`` after every visit, so the averaged output (5.15) is checked against the naive average of
all intermediate weight vectors.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator
from strategies import dags, hierarchies, trees

import hiercvx as hc
from hiercvx.estimators.perceptron import HierarchicalPerceptron
from hiercvx.models import hsvm
from hiercvx.models import margin as _margin
from hiercvx.kernels import gram
from hiercvx.result import Solution
from hiercvx.solvers import perceptron as P

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# ------------------------------------------------------------------------------ helpers
def _labels(rng, classes, n, multilabel):
    q = len(classes)
    if not multilabel:
        return list(np.array(classes, dtype=object)[rng.integers(0, q, n)])
    out = []
    for _ in range(n):
        k = int(rng.integers(1, q))  # a non-empty proper subset
        out.append(frozenset(np.array(classes, dtype=object)[rng.choice(q, k, replace=False)].tolist()))
    return out


def _problem(H, n, d, seed, multilabel, attributes="class_depth", loss="half_symmetric"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    labels = _labels(rng, H.leaves, n, multilabel)
    classes, Lam, data = hsvm.prepare(X, labels, H, loss=loss, attributes=attributes)
    return X, data


def _reference(X, data, update="perceptron", selection="mistake", max_epochs=5, seed=0,
               shuffle=True, weights=None):
    """Algorithms 4/6 (and Hieron) with stacked node weights W, updated by (5.3); stops on an
    epoch without mistakes (Alg. 6 step 12); ``weights`` scale the steps by ``w_i / max w``
    (weight 0: the example is left out of every epoch's order)."""
    Lam, loss, Y = data.Lam, data.loss, data.Y
    n = X.shape[0]
    W = np.zeros((Lam.shape[1], X.shape[1]))
    W_sum = np.zeros_like(W)
    rng = np.random.default_rng(seed)
    c = np.ones(n) if weights is None else np.asarray(weights, float) / np.max(weights)
    log, snapshots, L = [], [], 0
    active = np.flatnonzero(c > 0)  # weight 0: never visited, no step of the average
    for _ in range(max_epochs):
        order = active[rng.permutation(len(active))] if shuffle else active
        mistakes = 0
        for i in order:
            L += 1
            s = Lam @ (W @ X[i])
            pairs = [(y, yb) for y in np.flatnonzero(Y[i]) for yb in np.flatnonzero(~Y[i])]
            mistakes += min(s[y] - s[yb] for y, yb in pairs) <= 0
            if selection == "mistake":
                m = [s[y] - s[yb] for y, yb in pairs]
                k = int(np.argmin(m))
                violated = m[k] <= 0
            else:
                h = [np.sqrt(loss[y, yb]) - (s[y] - s[yb]) for y, yb in pairs]
                k = int(np.argmax(h))
                violated = h[k] > 1e-9 * np.sqrt(loss[pairs[k]])
            if violated:
                y, yb = pairs[k]
                dlam = Lam[y] - Lam[yb]
                if update == "perceptron":
                    tau = loss[y, yb]
                else:  # Hieron (7.8): (sqrt(Delta) - margin) / ||dPhi||^2
                    tau = (np.sqrt(loss[y, yb]) - (s[y] - s[yb])) / (dlam @ dlam * (X[i] @ X[i]))
                tau *= c[i]
                W = W + tau * np.outer(dlam, X[i])
                log.append((L, i, y, yb, tau))
            W_sum += W
        snapshots.append(W.copy())
        if mistakes == 0:
            break
    return W, W_sum / L, log, snapshots


def _log_rows(log: P.UpdateLog):
    return list(zip(log.step.tolist(), log.example.tolist(), log.y.tolist(), log.ybar.tolist()))


def _hier_with_leaves(min_leaves=2):
    return hierarchies(max_nodes=9).filter(lambda H: len(H.leaves) >= min_leaves)


# ------------------------------------------------------------------------------ identities
@SETTINGS
@given(H=_hier_with_leaves(), n=st.integers(2, 18), d=st.integers(1, 4), seed=st.integers(0, 10 ** 6),
       multilabel=st.booleans(), update=st.sampled_from(P.UPDATES),
       selection=st.sampled_from(P.SELECTIONS),
       attributes=st.sampled_from(["indicator", "class_depth", "tree_depth"]))
def test_primal_dual_and_reference_agree_after_every_epoch(H, n, d, seed, multilabel, update, selection,
                                                           attributes):
    X, data = _problem(H, n, d, seed, multilabel, attributes=attributes)
    epochs = 4
    W_ref, W_avg_ref, log_ref, snaps = _reference(X, data, update, selection, epochs, seed=seed)
    per_epoch = {}
    results = {}
    for form in ("primal", "dual"):
        rec = []
        results[form] = P.perceptron(X, data, update=update, selection=selection, form=form,
                                     max_epochs=epochs, random_state=seed,
                                     callback=lambda e, scores: rec.append(scores(X)))
        per_epoch[form] = rec
    # the same epochs, the same scores after every epoch, in both forms and in the reference
    assert len(per_epoch["primal"]) == len(per_epoch["dual"]) == len(snaps)
    for Sp, Sd, Wr in zip(per_epoch["primal"], per_epoch["dual"], snaps):
        Sr = _margin.class_scores(Wr, X, data.Lam)
        scale = max(1.0, np.abs(Sr).max())
        assert np.allclose(Sp, Sd, rtol=1e-9, atol=1e-9 * scale)
        assert np.allclose(Sp, Sr, rtol=1e-9, atol=1e-9 * scale)
    for res in results.values():
        assert _log_rows(res.log) == [r[:4] for r in log_ref]
        assert np.allclose(res.log.tau, [r[4] for r in log_ref])
        assert np.allclose(res.weights, W_ref, atol=1e-9 * max(1, np.abs(W_ref).max()))
        assert res.n_updates == len(log_ref) and res.n_steps == len(snaps) * n
    # the dual state is Algorithm 5's alpha: w(alpha) = sum_p alpha_p dPhi_p (5.6) via (4.12)
    alpha = results["dual"].log.alpha(data)
    W_alpha = _margin.weights_from_coefficients(_margin.coefficients(alpha, data), X, data.Lam)
    assert np.allclose(W_alpha, W_ref, atol=1e-9 * max(1, np.abs(W_ref).max()))


@SETTINGS
@given(H=_hier_with_leaves(), n=st.integers(2, 15), d=st.integers(1, 3), seed=st.integers(0, 10 ** 6),
       multilabel=st.booleans(), update=st.sampled_from(P.UPDATES), shuffle=st.booleans())
def test_averaged_from_update_log_equals_naive_average(H, n, d, seed, multilabel, update, shuffle):
    X, data = _problem(H, n, d, seed, multilabel)
    _, W_avg_ref, log_ref, _ = _reference(X, data, update, "hinge" if update == "hieron" else "mistake",
                                          3, seed=seed, shuffle=shuffle)
    for form in ("primal", "dual"):
        res = P.perceptron(X, data, variant="averaged", update=update, form=form, max_epochs=3,
                           random_state=seed, shuffle=shuffle)
        assert res.n_updates == len(log_ref) == len(res.log)  # memory: one log row per update
        scale = max(1.0, np.abs(W_avg_ref).max())
        if form == "primal":
            assert np.allclose(res.weights, W_avg_ref, atol=1e-9 * scale)
        S_ref = _margin.class_scores(W_avg_ref, X, data.Lam)
        assert np.allclose(res.class_scores(X), S_ref, atol=1e-9 * max(1.0, np.abs(S_ref).max()))


@SETTINGS
@given(H=_hier_with_leaves(), n=st.integers(2, 15), d=st.integers(1, 3), seed=st.integers(0, 10 ** 6),
       multilabel=st.booleans(), kernel=st.sampled_from(["linear", "rbf"]))
def test_minover_incremental_margins_equal_recomputed(H, n, d, seed, multilabel, kernel):
    X, data = _problem(H, n, d, seed, multilabel)
    res = P.perceptron(X, data, variant="minover", kernel=kernel, sigma=1.0, max_epochs=3)
    # (5.16): T_p = <w(alpha), dPhi_p>, recomputed from the final coefficients
    S = res.class_scores(X)
    T = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    assert np.allclose(res.margins, T, atol=1e-9 * max(1.0, np.abs(T).max()))
    # replay: every step picked the globally smallest margin (Alg. 7 step 3), and the run stops
    # exactly when every margin is positive
    K = gram(X, kernel=res.kernel)
    G = np.zeros((n, data.n_classes))
    for i, y, yb, tau in zip(res.log.example, res.log.y, res.log.ybar, res.log.tau):
        Tp = (K @ G @ data.Q)[data.pair_i, data.pair_y] - (K @ G @ data.Q)[data.pair_i, data.pair_ybar]
        p = int(np.argmin(Tp))
        assert Tp[p] <= 1e-12 and (data.pair_i[p], data.pair_y[p], data.pair_ybar[p]) == (i, y, yb)
        assert tau == data.pair_loss[p]
        G[i, y] += tau
        G[i, yb] -= tau
    assert res.converged == bool(T.min() > 0)
    assert res.converged or res.n_updates == 3 * n


def test_minover_without_full_gram_matches():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b"})
    X, data = _problem(H, 40, 3, 1, multilabel=True)
    full = P.perceptron(X, data, variant="minover", max_epochs=2)
    cols = P.perceptron(X, data, variant="minover", max_epochs=2, options=P.Options(full_gram_max_n=10))
    assert _log_rows(full.log) == _log_rows(cols.log)
    assert np.allclose(full.margins, cols.margins)


def test_dual_blocks_are_exact():
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"), ("B", "z")])
    X, data = _problem(H, 60, 4, 5, multilabel=True)
    one = P.perceptron(X, data, form="dual", kernel="rbf", sigma=2.0, max_epochs=3)  # one Gram matrix
    per_epoch = P.Options(full_gram_max_n=10)  # kernel blocks computed per epoch
    blocks = P.perceptron(X, data, form="dual", kernel="rbf", sigma=2.0, max_epochs=3, options=per_epoch)
    single = P.Options(full_gram_max_n=10, block_entries=7)  # blocks of a single example
    many = P.perceptron(X, data, form="dual", kernel="rbf", sigma=2.0, max_epochs=3, options=single)
    assert _log_rows(one.log) == _log_rows(blocks.log) == _log_rows(many.log)
    assert np.allclose(one.class_scores(X), many.class_scores(X))
    K = one.kernel(X)
    pre = P.perceptron(K, data, kernel="precomputed", max_epochs=3)
    assert _log_rows(one.log) == _log_rows(pre.log)
    assert np.allclose(pre.class_scores(K), one.class_scores(X))


def test_sparse_and_dense_primal_agree():
    H = hc.Hierarchy.from_paths(["a/a1", "a/a2", "b/b1", "b/b2", "c"])
    rng = np.random.default_rng(0)
    X = sp.random(80, 30, density=0.2, format="csr", random_state=1)
    labels = _labels(rng, H.leaves, 80, multilabel=False)
    _, _, data = hsvm.prepare(X, labels, H)
    for update in P.UPDATES:
        a = P.perceptron(X, data, update=update, max_epochs=4)
        b = P.perceptron(X.toarray(), data, update=update, max_epochs=4)
        assert _log_rows(a.log) == _log_rows(b.log)
        assert np.allclose(a.weights, b.weights)


def test_flat_perceptron_is_algorithm_3():
    """Algorithm 3 by hand (w_y += x, w_ybar -= x), against flat_perceptron and the estimator
    with hierarchy=None (one level; class_depth attributes and half-symmetric loss reduce to
    indicator attributes and the 0/1 loss there)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((50, 3))
    y = rng.integers(0, 4, 50)
    Y = np.eye(4, dtype=bool)[y]
    Wc = np.zeros((4, 3))
    for _ in range(3):
        for i in range(50):
            s = Wc @ X[i]
            yb = int(np.argmax(np.where(Y[i], -np.inf, s)))
            if s[y[i]] - s[yb] <= 0:
                Wc[y[i]] += X[i]
                Wc[yb] -= X[i]
    res = P.flat_perceptron(X, Y, max_epochs=3, shuffle=False)
    assert np.allclose(res.weights, Wc) and np.allclose(res.class_weights, Wc)
    est = HierarchicalPerceptron(max_epochs=3, shuffle=False, fit_intercept=False).fit(X, y)
    assert np.allclose(est.decision_function(X), X @ Wc.T)
    assert np.array_equal(est.predict(X), np.argmax(X @ Wc.T, axis=1))


@pytest.mark.parametrize("variant,update,form,kernel", [
    ("online", "perceptron", "primal", "linear"), ("averaged", "hieron", "primal", "linear"),
    ("online", "hieron", "dual", "rbf"), ("minover", "perceptron", "dual", "linear")])
def test_the_result_is_a_solution_reporting_the_training_hinge(variant, update, form, kernel):
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"), ("B", "z")])
    X, data = _problem(H, 30, 3, 3, multilabel=True)
    res = P.perceptron(X, data, variant=variant, update=update, form=form, kernel=kernel, sigma=1.0,
                       max_epochs=3)
    assert isinstance(res, Solution) and res.solver == "perceptron"
    assert res.variant == variant and res.update == update and res.form == form
    # objective: the hinge of (4.10) at the returned classifier; no certificate
    S = res.class_scores(X)
    assert res.objective == pytest.approx(float(data.Cw @ _margin.slacks(S, data)), rel=1e-12, abs=1e-12)
    assert res.lower_bound == -np.inf
    margins = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    worst = np.full(data.n_samples, np.inf)
    np.minimum.at(worst, data.pair_i, margins)
    assert res.n_violated == int(np.sum(worst <= 0))
    assert res.n_iter == res.n_epochs
    assert np.array_equal(res.support, np.flatnonzero(np.diff(res.coefficients.indptr) > 0))
    if variant != "minover":  # one entry per epoch; the log holds every update
        assert len(res.history["violations"]) == len(res.history["updates"]) == res.n_epochs
        assert sum(res.history["updates"]) == res.n_updates == len(res.log)
        assert res.stopped == (res.history["mistakes"][-1] == 0)
    assert res.converged == (res.stopped and res.n_violated == 0)
    assert res.status == ("separated" if res.converged else "not_separated" if res.stopped
                          else "iteration_limit")
    # the classifier travels with the solution (estimators are pickled)
    again = pickle.loads(pickle.dumps(res))
    assert np.allclose(again.class_scores(X), S)


def test_the_objective_follows_the_rescaling_of_the_margin_model():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b"})
    X, data = _problem(H, 25, 3, 4, multilabel=True)
    margin_model = _margin.margin_data(data.Y, data.loss, Lam=data.Lam, rescaling="margin")
    for model in (data, margin_model):
        res = P.perceptron(X, model, max_epochs=2)
        S = res.class_scores(X)
        assert res.objective == pytest.approx(float(model.Cw @ _margin.slacks(S, model)), rel=1e-12)


# ------------------------------------------------------------------------------ Proposition 5
@st.composite
def separable_problems(draw):
    H = draw(st.one_of(trees(max_nodes=10), dags(max_nodes=9)).filter(lambda H: len(H.leaves) >= 2))
    seed = draw(st.integers(0, 10 ** 6))
    multilabel = draw(st.booleans())
    attributes = draw(st.sampled_from(["indicator", "class_depth"]))
    loss = draw(st.sampled_from(["half_symmetric", "zero_one", "symmetric_difference"]))
    return H, seed, multilabel, attributes, loss


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(separable_problems())
def test_online_perceptron_respects_proposition_5(problem):
    H, seed, multilabel, attributes, loss = problem
    rng = np.random.default_rng(seed)
    classes = H.leaves
    q, d = len(classes), 4
    Lam = hc.class_attributes(H, classes, scheme=attributes)
    W_star = rng.standard_normal((len(H), d))
    W_star /= np.linalg.norm(W_star)  # ||w*|| = 1
    X = rng.standard_normal((120, d))
    S = _margin.class_scores(W_star, X, Lam)
    order = np.argsort(-S, axis=1)
    Ss = np.take_along_axis(S, order, axis=1)
    k = rng.integers(1, q, len(X)) if multilabel else np.ones(len(X), dtype=int)
    gap = Ss[np.arange(len(X)), k - 1] - Ss[np.arange(len(X)), k]
    keep = gap > np.quantile(gap, 0.3)  # a margin bounded away from 0
    X, order, k = X[keep], order[keep], k[keep]
    labels = [frozenset(np.array(classes, dtype=object)[order[i, :k[i]]].tolist()) for i in range(len(X))]
    _, _, data = hsvm.prepare(X, labels, H, loss=loss, attributes=Lam)
    S = _margin.class_scores(W_star, X, Lam)
    pair_margin = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    gamma = pair_margin.min()
    assert gamma > 0
    res = P.perceptron(X, data, max_epochs=None, random_state=seed)
    # stops with zero training errors: every pair margin of (4.10) is positive
    S_hat = res.class_scores(X)
    assert res.converged and np.min(S_hat[data.pair_i, data.pair_y] - S_hat[data.pair_i, data.pair_ybar]) > 0
    off = ~np.eye(q, dtype=bool)
    R = np.linalg.norm(X, axis=1).max()
    Pn = np.linalg.norm(Lam, axis=1).max()
    lmin, lmax = data.loss[off].min(), data.loss[off].max()
    assert res.n_updates <= P.update_bound(R, Pn, lmin, lmax, gamma)
    # the two inequalities of the proof, (5.9) and (5.10), after every update
    W = np.zeros_like(W_star)
    for t, (i, y, yb, tau) in enumerate(zip(res.log.example, res.log.y, res.log.ybar, res.log.tau), 1):
        W += tau * np.outer(Lam[y] - Lam[yb], X[i])
        assert np.sum(W * W_star) >= t * lmin * gamma - 1e-9
        assert np.sum(W * W) <= 4 * t * lmax ** 2 * R ** 2 * Pn ** 2 + 1e-9


# ------------------------------------------------------------------------------ estimator
# Justified exceptions to scikit-learn's checks:
# - Minover (Alg. 7) always corrects the globally worst pair; on overlapping classes (the blobs
#   of check_classifiers_train are not separable) it keeps cycling over the overlap points and
#   its last iterate scores about 0.7 < 0.83 (thesis 7.5.1, footnote: Minover "would cycle"
#   on inconsistent data).  The online and averaged variants pass the check.
MINOVER_FAILURES = {"check_classifiers_train": "Minover cycles on non-separable training data"}
# - a sample weight scales the sample's step, once per epoch: a perceptron visiting a sample of
#   weight 2 once is not one visiting two copies of it (an order-dependent online algorithm).
WEIGHT_FAILURES = {f"check_sample_weight_equivalence_on_{kind}_data": "a weight scales one step; it "
                   "is no repetition" for kind in ("dense", "sparse")}


@pytest.mark.parametrize("params", [dict(variant="online"),
                                    dict(variant="averaged", update="hieron"),
                                    dict(variant="minover", kernel="rbf")],
                         ids=["online", "averaged-hieron", "minover-rbf"])
def test_check_estimator(params):
    expected = dict(WEIGHT_FAILURES, **(MINOVER_FAILURES if params["variant"] == "minover" else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        results = check_estimator(HierarchicalPerceptron(**params), on_fail=None,
                                  expected_failed_checks=expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed


def test_estimator_hierarchy_multilabel_dag():
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"), ("B", "z")])
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 5))
    Y = _labels(rng, H.leaves, 60, multilabel=True)
    for params in (dict(), dict(variant="averaged"), dict(variant="minover"), dict(update="hieron"),
                   dict(kernel="rbf"), dict(variant="averaged", kernel="rbf", update="hieron")):
        est = HierarchicalPerceptron(hierarchy=H, fit_intercept=False, **params).fit(X, Y)
        pred = est.predict(X)
        assert est.multilabel_ and all(isinstance(p, frozenset) and p for p in pred)
        assert est.decision_function(X).shape == (60, 3)
        assert est.n_updates_ == est.result_.n_updates > 0
        assert np.allclose(est.decision_function(X), est.result_.class_scores(X))
    pre = HierarchicalPerceptron(hierarchy=H, kernel="precomputed").fit(X @ X.T, Y)
    lin = HierarchicalPerceptron(hierarchy=H).fit(X, Y)
    assert np.allclose(pre.decision_function(X @ X.T), lin.decision_function(X))


def test_hierarchy_changes_the_model():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b", "b2": "b"})
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 4))
    y = np.array(H.leaves, dtype=object)[rng.integers(0, 4, 80)]
    hier = HierarchicalPerceptron(hierarchy=H, shuffle=False, max_epochs=2).fit(X, y)
    flat = HierarchicalPerceptron(shuffle=False, max_epochs=2).fit(X, y)
    assert hier.coef_.shape == (len(H), 4)
    assert not np.allclose(hier.decision_function(X), flat.decision_function(X))


# ------------------------------------------------------------------------------ bad input
def test_bad_input():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r"})
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.array(["a", "b", "c"] * 10, dtype=object)
    with pytest.raises(ValueError, match="variant"):
        HierarchicalPerceptron(hierarchy=H, variant="fancy").fit(X, y)
    with pytest.raises(ValueError, match="update"):
        HierarchicalPerceptron(hierarchy=H, update="sgd").fit(X, y)
    with pytest.raises(ValueError, match="Minover"):
        HierarchicalPerceptron(hierarchy=H, variant="minover", update="hieron").fit(X, y)
    with pytest.raises(ValueError, match="max_epochs"):
        HierarchicalPerceptron(hierarchy=H, max_epochs=0).fit(X, y)
    with pytest.raises(ValueError, match="semidefinite|eigenvalue"):
        HierarchicalPerceptron(hierarchy=H, kernel="precomputed").fit(-np.eye(30), y)
    with pytest.raises(ValueError, match="semidefinite|eigenvalue"):
        HierarchicalPerceptron(hierarchy=H, kernel=lambda A, B: -(A @ B.T)).fit(X, y)
    with pytest.raises(hc.LabelError):
        HierarchicalPerceptron(hierarchy=H).fit(X, np.where(y == "a", "zz", y))
    # provably non-separable data with max_epochs=None is refused, never looped on
    Xd = X.copy()
    Xd[1] = Xd[0]  # same input, labels "a" and "b"
    with pytest.raises(ValueError, match="identical features"):
        HierarchicalPerceptron(hierarchy=H, max_epochs=None).fit(Xd, y)
    Xz = X.copy()
    Xz[3] = 0
    with pytest.raises(ValueError, match="zero feature vector"):  # the bias feature is not zero
        HierarchicalPerceptron(hierarchy=H, max_epochs=None, fit_intercept=False).fit(Xz, y)
    # non-separable data that no cheap test detects: capped, with a ConvergenceWarning
    Xx = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]] * 3, dtype=float)  # XOR: not linear
    yx = np.array(["a", "a", "b", "b"] * 3, dtype=object)
    H2 = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r"})
    with pytest.warns(ConvergenceWarning, match="not be separable"):
        est = HierarchicalPerceptron(hierarchy=H2, max_epochs=None).fit(Xx, yx)
    assert not est.converged_ and est.n_iter_ == P.Options().max_epochs_cap
    with pytest.warns(ConvergenceWarning):
        HierarchicalPerceptron(hierarchy=H2, variant="minover", max_epochs=None).fit(Xx, yx)
    # the cap is a setting of the solver
    _, _, data2 = hsvm.prepare(Xx, yx, H2)
    capped = P.Options(max_epochs_cap=5)
    with pytest.warns(ConvergenceWarning, match="not be separable"):
        res = P.perceptron(Xx, data2, max_epochs=None, options=capped)
    assert not res.converged and res.n_iter == 5
    with pytest.warns(ConvergenceWarning):
        P.perceptron(Xx, data2, variant="minover", max_epochs=None, options=capped)
    # ... while a fixed budget is a normal stop (the thesis' kappa), reported by converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert not HierarchicalPerceptron(hierarchy=H2, max_epochs=3).fit(Xx, yx).converged_


def test_options_are_checked():
    for bad in ({"max_epochs_cap": 0}, {"block_entries": 1.5}, {"hinge_rtol": -1.0}):
        with pytest.raises(ValueError):
            P.Options(**bad)
    with pytest.raises(ValueError, match="Options"):
        P.flat_perceptron(np.eye(3), np.eye(3, dtype=bool), options={"max_epochs_cap": 5})


def test_sparse_duplicates_are_found_without_densifying():
    X = sp.csr_matrix(np.array([[0, 1.0, 0], [2.0, 0, 0], [0, 1.0, 0], [0, 0, 3.0]]))
    for g in (P._row_groups(X), P._row_groups(X.toarray())):
        assert np.array_equal(g[:, None] == g[None, :], np.array([0, 1, 0, 2])[:, None] == [0, 1, 0, 2])
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r"})
    _, _, data = hsvm.prepare(X, ["a", "b", "b", "a"], H)
    with pytest.raises(ValueError, match="identical features"):
        P.perceptron(X, data, max_epochs=None)


def test_batch_hieron_stops_on_an_epoch_without_mistakes():
    """Batch Hieron picks pairs by the margin-rescaled slack for the loss sqrt(Delta), and stops
    (Alg. 6 step 12) on an epoch in which no visited example was mis-ranked; online Hieron with
    the same selection runs the same iterates and its last one separates the data."""
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"), ("B", "z")])
    rng = np.random.default_rng(7)
    Lam = hc.class_attributes(H, scheme="class_depth")
    W_star = rng.standard_normal((len(H), 3))
    X = rng.standard_normal((80, 3))
    S = _margin.class_scores(W_star, X, Lam)
    srt = np.sort(S, axis=1)
    X = X[srt[:, -1] - srt[:, -2] > 0.3]
    labels = list(np.array(H.leaves, dtype=object)[np.argmax(_margin.class_scores(W_star, X, Lam), 1)])
    _, _, data = hsvm.prepare(X, labels, H)
    res = P.perceptron(X, data, variant="averaged", update="hieron", max_epochs=None)
    assert res.stopped and res.selection == "hinge" and res.history["mistakes"][-1] == 0
    last = P.perceptron(X, data, variant="online", update="hieron", selection="hinge", max_epochs=None)
    assert last.converged and last.n_violated == 0
    assert _log_rows(last.log) == _log_rows(res.log)  # the same iterates; only the output differs


def _separable_tree_problem():
    """Linearly separable single-label data on a two-level tree (the probe of the Hieron stop)."""
    rng = np.random.default_rng(3)
    H = hc.Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                   "B1": "B", "B2": "B"})
    X = rng.normal(size=(80, 6))
    y = np.array(H.leaves)[np.argmax(X @ rng.normal(size=(6, 4)), 1)]
    return H, X, y


def test_averaged_hieron_without_an_epoch_budget_stops_on_separable_data():
    """max_epochs=None: Hieron's projections never bring every hinge to zero (they approach it),
    but an epoch without mistakes comes; no ConvergenceWarning, far below the cap."""
    H, X, y = _separable_tree_problem()
    model = hsvm.prepare(X, y, H, fit_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = P.perceptron(model.X, model.data, variant="averaged", update="hieron", max_epochs=None)
        est = HierarchicalPerceptron(hierarchy=H, variant="averaged", update="hieron",
                                     max_epochs=None).fit(X, y)
    assert res.stopped and res.n_epochs < P.Options().max_epochs_cap
    assert res.history["mistakes"][-1] == 0 < res.history["violations"][-1]  # hinge updates go on
    assert est.n_iter_ == res.n_epochs and est.converged_ == res.converged
    # what a capped run did not meet is said: mistakes, not hinges
    with pytest.warns(ConvergenceWarning, match="mistake"):
        P.perceptron(model.X, model.data, variant="averaged", update="hieron", max_epochs=None,
                     options=P.Options(max_epochs_cap=2))


def test_status_describes_the_returned_averaged_classifier():
    """The last iterate separates the data (the run stops) but the average of the iterates
    mis-ranks a training example: not "separated", and converged_ is False."""
    H, X, y = _separable_tree_problem()
    est = HierarchicalPerceptron(hierarchy=H, variant="averaged", max_epochs=None).fit(X, y)
    res = est.result_
    assert res.stopped and res.n_violated == 1 and (est.predict(X) != y).sum() == 1
    assert res.status == "not_separated" and not res.converged and not est.converged_
    online = HierarchicalPerceptron(hierarchy=H, max_epochs=None).fit(X, y)
    assert online.converged_ and online.result_.status == "separated"
    assert online.result_.n_violated == 0 and np.array_equal(online.predict(X), y)


def test_estimator_intercept_is_the_constant_feature():
    """fit_intercept=True trains on [X, s] (the bias updated like any weight); intercept_ is
    the constant feature's weight times s per node, coef_ the rest; rbf gets k + s^2."""
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"), ("B", "z")])
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 5)) + 1.5
    Y = _labels(rng, H.leaves, 60, multilabel=True)
    s = 2.0
    est = HierarchicalPerceptron(hierarchy=H, intercept_scaling=s, shuffle=False).fit(X, Y)
    Xs = np.hstack([X, np.full((60, 1), s)])
    assert np.allclose(est.result_.class_scores(Xs), est.class_scores(X))
    assert est.coef_.shape == (len(H), 5) and est.intercept_.shape == (len(H),)
    raw = HierarchicalPerceptron(hierarchy=H, fit_intercept=False, shuffle=False).fit(Xs, Y)
    assert np.allclose(raw.coef_[:, :-1], est.coef_) and np.allclose(raw.coef_[:, -1] * s, est.intercept_)
    rbf = HierarchicalPerceptron(hierarchy=H, kernel="rbf", intercept_scaling=s, shuffle=False).fit(X, Y)
    pre = HierarchicalPerceptron(hierarchy=H, kernel="precomputed", fit_intercept=False,
                                 shuffle=False).fit(rbf.kernel_(X) + s ** 2, Y)
    assert np.allclose(rbf.class_scores(X), pre.class_scores(rbf.kernel_(X) + s ** 2))


def test_one_class_is_refused_naming_the_perceptron():
    X = np.random.default_rng(0).standard_normal((6, 2))
    with pytest.raises(hc.LabelError, match="HierarchicalPerceptron needs at least two classes"):
        HierarchicalPerceptron(hierarchy=hc.Hierarchy.from_parents({"r": None, "a": "r"})).fit(X, ["a"] * 6)


def test_float32_gram_matrix_is_psd_to_float32_precision():
    """A float32 Gram matrix has eigenvalues below 0 by float32 rounding (about n eps_32
    lambda_max): accepted, as float32 or converted to float64; an indefinite one is refused."""
    from hiercvx.estimators import TopDownSVC
    from hiercvx.kernels import check_psd

    rng = np.random.RandomState(0)
    X = (rng.uniform(size=(30, 5)) * 10).astype(np.float32)
    y = np.arange(30) % 3
    K = X @ X.T
    assert np.linalg.eigvalsh(K.astype(float)).min() < -1e-8 * np.abs(K).max()  # float64's tol fails
    check_psd(K)
    check_psd(K.astype(float))  # every entry a float32 number: float32's precision
    with pytest.raises(hc.InputError, match="not positive semidefinite"):
        check_psd(K.astype(float), eps=np.finfo(float).eps)
    est = HierarchicalPerceptron(kernel="precomputed", fit_intercept=False).fit(K, y)
    assert np.mean(est.predict(K) == y) > 0.3
    with warnings.catch_warnings():  # the unscaled Gram matrix: slow convergence is not the point
        warnings.simplefilter("ignore", ConvergenceWarning)
        TopDownSVC(kernel="precomputed").fit(K, y)
    lam_max = float(np.linalg.eigvalsh(K.astype(float)).max())
    indefinite = (K - np.float32(1e-3 * lam_max) * np.eye(30, dtype=np.float32)).astype(np.float32)
    for M in (indefinite, indefinite.astype(float)):
        with pytest.raises(hc.InputError, match="not positive semidefinite"):
            check_psd(M)
        with pytest.raises(hc.InputError, match="not positive semidefinite"):
            HierarchicalPerceptron(kernel="precomputed", fit_intercept=False).fit(M, y)


def test_float32_gram_matrix_with_the_bias_is_judged_before_the_bias():
    """``K + s**2`` in float64 no longer shows that K's entries are float32 numbers: the
    estimator checks K itself, so a float32 Gram matrix fits with an intercept too, and the
    hierarchical psi-learning's certificates (which need K PSD) hold on its PSD part."""
    from hiercvx.estimators import HierarchicalPsiClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.array(["a", "b", "c"])[rng.integers(0, 3, 60)]
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r"})
    K = (X @ X.T).astype(np.float32)
    assert np.linalg.eigvalsh(K.astype(float)).min() < 0   # rounded: not PSD in float64
    est = HierarchicalPerceptron(kernel="precomputed", hierarchy=H, fit_intercept=True).fit(K, y)
    assert est.predict(K).shape == (60,)
    for M in (K, K.astype(float)):
        psi = HierarchicalPsiClassifier(kernel="precomputed", hierarchy=H).fit(M, y)
        assert np.mean(psi.predict(M) == y) > 0.4
    indefinite = K.astype(float) - 1e-3 * np.abs(K).max() * np.eye(60)
    with pytest.raises(hc.InputError, match="not positive semidefinite"):
        HierarchicalPerceptron(kernel="precomputed", hierarchy=H).fit(indefinite, y)


@pytest.mark.parametrize("update", P.UPDATES)
def test_sample_weights_scale_each_step(update):
    """A weighted step is (w_i / max w) times the unweighted one (Delta, or Hieron's (7.8)): the
    plain-Python transcription with scaled steps agrees; weight 0 skips the example."""
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "z")])
    rng = np.random.default_rng(4)
    X = rng.standard_normal((25, 3))
    labels = _labels(rng, H.leaves, 25, multilabel=False)
    w = rng.choice([0.0, 0.5, 1.0, 3.0], size=25)
    _, _, data = hsvm.prepare(X, labels, H, sample_weight=w)
    selection = "hinge" if update == "hieron" else "mistake"
    res = P.perceptron(X, data, update=update, variant="averaged", max_epochs=4, shuffle=False)
    assert res.selection == selection
    W, W_avg, log, _ = _reference(X, data, update=update, selection=selection, max_epochs=4,
                                  shuffle=False, weights=w)
    assert [r[:4] for r in log] == [(l, i, y, yb) for l, i, y, yb in _log_rows(res.log)]
    assert np.allclose(res.log.tau, [r[4] for r in log], rtol=1e-10)
    assert np.allclose(res.weights, W_avg, atol=1e-10)
    assert not np.isin(res.log.example, np.flatnonzero(w == 0)).any()


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("variant,update,kernel", [
    ("online", "perceptron", "linear"), ("averaged", "perceptron", "linear"),
    ("online", "hieron", "linear"), ("averaged", "hieron", "linear"),
    ("online", "perceptron", "rbf"), ("averaged", "perceptron", "rbf"),
    ("minover", "perceptron", "linear"), ("minover", "perceptron", "rbf")])
def test_zero_weight_equals_dropping_the_examples(variant, update, kernel, shuffle):
    """Examples of weight 0 are left out of every epoch's visiting order, so a fit with them
    equals the fit on the examples of positive weight: the same scores on held-out X and the
    same steps (L of the average (5.15)) and epochs (Minover: ``ceil(steps / n)`` with n the
    examples of positive weight).  With ``shuffle`` and the same ``random_state`` the orders
    are the same too: the generator permutes the positive-weight examples only."""
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "z")])
    rng = np.random.default_rng(7)
    X, X_new = rng.standard_normal((40, 3)), rng.standard_normal((15, 3))
    labels = list(np.array(H.leaves, dtype=object)[np.arange(40) % len(H.leaves)])
    w = rng.choice([0.5, 1.0, 3.0], size=40)
    w[[0, 5, 6, 17, 39]] = 0.0
    keep = w > 0
    _, _, data = hsvm.prepare(X, labels, H, sample_weight=w)
    _, _, sub = hsvm.prepare(X[keep], [l for l, k in zip(labels, keep) if k], H, sample_weight=w[keep])
    kw = dict(variant=variant, update=update, kernel=kernel, max_epochs=6, shuffle=shuffle,
              random_state=3, sigma=1.5 if kernel == "rbf" else None)  # the default sigma reads X
    a, b = P.perceptron(X, data, **kw), P.perceptron(X[keep], sub, **kw)
    assert (a.n_steps, a.n_epochs, a.n_updates) == (b.n_steps, b.n_epochs, b.n_updates)
    assert a.n_steps <= 6 * keep.sum()
    assert np.array_equal(np.flatnonzero(keep)[b.log.example], a.log.example)
    assert np.allclose(a.class_scores(X_new), b.class_scores(X_new), rtol=1e-12, atol=1e-12)
    assert a.status == b.status and np.isclose(a.objective, b.objective, rtol=1e-12)


def test_estimator_takes_sample_weight():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r"})
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.array(list("abc") * 10)
    from sklearn.utils.validation import has_fit_parameter
    assert has_fit_parameter(HierarchicalPerceptron(), "sample_weight")
    for params in (dict(), dict(update="hieron"), dict(variant="minover")):
        plain = HierarchicalPerceptron(hierarchy=H, max_epochs=3, **params).fit(X, y)
        ones = HierarchicalPerceptron(hierarchy=H, max_epochs=3, **params).fit(X, y, sample_weight=np.ones(30))
        same = HierarchicalPerceptron(hierarchy=H, max_epochs=3, **params).fit(X, y, sample_weight=[3.0] * 30)
        assert np.array_equal(plain.decision_function(X), ones.decision_function(X))
        assert np.array_equal(plain.decision_function(X), same.decision_function(X))  # only ratios
        # weight 0 is the subset (visited in the same order without shuffling)
        keep = np.arange(30) % 4 != 0
        sub = HierarchicalPerceptron(hierarchy=H, max_epochs=3, shuffle=False, **params).fit(X[keep], y[keep])
        zero = HierarchicalPerceptron(hierarchy=H, max_epochs=3, shuffle=False, **params).fit(
            X, y, sample_weight=keep.astype(float))
        assert np.allclose(sub.decision_function(X), zero.decision_function(X))
        assert sub.n_iter_ == zero.n_iter_
    with pytest.raises(ValueError, match="sample_weight"):
        HierarchicalPerceptron(hierarchy=H).fit(X, y, sample_weight=-np.ones(30))


def test_verbose_minover_reports_doubling_steps_and_names_the_algorithm(caplog):
    """Minover's INFO lines come after steps 1, 2, 4, 8, ... with a Gram matrix in memory; the
    closing line names the algorithm once ("Minover perceptron", "online Hieron")."""
    Xx = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]] * 3, dtype=float)  # XOR: never separated
    _, _, data = hsvm.prepare(Xx, np.array(["a", "a", "b", "b"] * 3, dtype=object),
                              hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r"}))
    with caplog.at_level("INFO", logger="hiercvx.solvers.perceptron"):
        res = P.perceptron(Xx, data, variant="minover", max_epochs=3, verbose=True)
    steps = [int(r.getMessage().split("step ")[1].split("/")[0]) for r in caplog.records
             if "Minover step" in r.getMessage()]
    assert steps == [1, 2, 4, 8, 16, 32, 36] and res.n_steps == 36
    assert caplog.records[-1].getMessage().startswith("Minover perceptron (primal): ")
    caplog.clear()
    with caplog.at_level("INFO", logger="hiercvx.solvers.perceptron"):
        P.perceptron(Xx, data, update="hieron", max_epochs=2)
    assert caplog.records[-1].getMessage().startswith("online Hieron (primal): ")
    assert "perceptron perceptron" not in caplog.text


def test_node_calibration_is_fitted_on_first_use_and_pickled_fitted():
    """fit keeps the training class scores; node_calibration_ is the same logistic fit on the
    first read (and in a pickle), and calibrated node scores are those of an eager fit."""
    from hiercvx.metrics import fit_node_calibration, node_margins
    H, X, y = _separable_tree_problem()
    est = HierarchicalPerceptron(hierarchy=H, max_epochs=3).fit(X, y)
    assert est.__dict__["_calibration_inputs"] is not None  # nothing fitted yet
    state = pickle.loads(pickle.dumps(est)).__dict__
    assert "_calibration_inputs" not in state or state["_calibration_inputs"] is None
    margins = node_margins(est.class_scores(X), list(est.classes_), H, method="standardized")
    eager = fit_node_calibration(margins, H.closure(list(y)), H, method="standardized")
    cal = est.node_calibration_
    assert (cal.slope, cal.intercept) == (eager.slope, eager.intercept)
    assert np.array_equal(est.node_decision_function(X), eager.scores(margins))
    assert np.array_equal(state["node_calibration_"].log_odds, cal.log_odds)


def test_an_overflowing_intercept_scaling_is_refused():
    """The bias feature counts in the overflow check of X (its square enters every norm)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.array(list("abc") * 10)
    for update in P.UPDATES:
        with pytest.raises(ValueError, match="intercept_scaling=1e\\+160.*smaller intercept_scaling"):
            HierarchicalPerceptron(intercept_scaling=1e160, update=update).fit(X, y)
    HierarchicalPerceptron(intercept_scaling=1e160, fit_intercept=False).fit(X, y)  # no bias feature
    with pytest.raises(ValueError, match="intercept_scaling"):
        HierarchicalPerceptron(intercept_scaling=1e160, kernel="rbf").fit(X, y)


def test_the_overflow_check_takes_the_bias_scaling_of_the_estimator():
    """The overflow check reads the bias through the estimator's own parameter check: a
    fit_intercept that is no bool is refused with that check's message."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.array(list("abc") * 10)
    with pytest.raises(TypeError, match="fit_intercept must be True or False"):
        HierarchicalPerceptron(fit_intercept="yes").fit(X, y)
    with pytest.raises(ValueError, match="intercept_scaling"):
        HierarchicalPerceptron(intercept_scaling=1e160, fit_intercept=np.bool_(True)).fit(X, y)


@pytest.mark.parametrize("later", ["none", "other"])
def test_node_calibration_is_fitted_from_the_fit_not_from_later_parameters(later):
    """node_calibration_ is fitted on the hierarchy, classes and threshold of the fit: after
    set_params(hierarchy=None) or another hierarchy with the same node names, its first read
    and a pickle give the calibration read right after the fit."""
    H, X, y = _separable_tree_problem()
    ref = HierarchicalPerceptron(hierarchy=H, max_epochs=3).fit(X, y)
    expected = ref.node_calibration_
    est = HierarchicalPerceptron(hierarchy=H, max_epochs=3).fit(X, y)
    assert np.array_equal(est.class_scores(X), ref.class_scores(X))
    assert est.__dict__["_calibration_inputs"] is not None  # nothing fitted yet
    other = hc.Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "B",
                                       "A2": "A", "B1": "A", "B2": "B"})
    est.set_params(hierarchy=None if later == "none" else other)
    pickled = pickle.loads(pickle.dumps(est)).node_calibration_
    for cal in (est.node_calibration_, pickled):
        assert (cal.slope, cal.intercept) == (expected.slope, expected.intercept)
        assert np.array_equal(cal.log_odds, expected.log_odds)


def test_the_whole_gram_matrix_is_checked_beyond_the_eigenvalue_block():
    """Rows past the eigenvalue-checked leading block are still checked: symmetry, diagonal,
    Cauchy-Schwarz (O(n^2)); a valid Gram matrix passes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    K = X @ X.T
    P.check_gram_block(K.astype(np.float32).astype(float), 10)
    bad_sym, bad_diag, bad_cs = K.copy(), K.copy(), K.copy()
    bad_sym[30, 5] += 5.0
    bad_diag[35, 35] = -1.0
    bad_cs[30, 31] = bad_cs[31, 30] = 10 * np.sqrt(K[30, 30] * K[31, 31])
    for G, msg in ((bad_sym, "not symmetric"), (bad_diag, "diagonal"), (bad_cs, "Cauchy-Schwarz")):
        with pytest.raises(ValueError, match=msg):
            P.check_gram_block(G, 10)
        _, _, data = hsvm.prepare(X, list("abcd") * 10, hc.Hierarchy.from_paths(list("abcd")))
        with pytest.raises(ValueError, match=msg):
            P.perceptron(G, data, kernel="precomputed", options=P.Options(psd_check_max=10))
