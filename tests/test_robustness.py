"""Robustness, solver and estimator side: a scale-aware
certificate for the fast solvers and the CVXPY references (retries with tighter
settings, an inaccurate status certified from the recomputed numbers, never an uncertified
answer), validated certificate tolerances, no silently ignored option, one
ConvergenceWarning for every uncertified stop and no HiGHS banner, wide hierarchies at the
cost of what the data use, and the estimators' input boundary (complex X at predict,
hierarchy and label types, overflowing X or C: hiercvx's errors; the fuzz suite over
every entry point is tests/test_fuzz_entry_points.py)."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import hiercvx.estimators as E
from hiercvx import methods
from hiercvx.exceptions import InputError, SolverError
from hiercvx.hierarchy import Hierarchy
from hiercvx.methods.cases import TREE, problem
from hiercvx.models import orthogonal as otm
from hiercvx.models import sibling as sm
from hiercvx.result import (Solution, certified_by, gap_from_zero, gap_scale, progress_hint,
                            relative_gap, stopping_gap)
from hiercvx.solvers import rda, sibling_qp

X_TREE, Y_TREE, _ = problem("tree", n=40, d=4)
X_FLAT, Y_FLAT, _ = problem("flat", n=40, d=4)


# ------------------------------------------------------------------ the gap at every scale
def test_the_convergence_warning_says_how_far_tol_is():
    # a gap falling by 10x every 2 passes, 0.5 s a pass: 1e-3 -> 1e-6 takes 6 more passes, 3 s
    history = {"n_iter": [0, 2, 4, 6, 8, 10], "gap": [1.0, 0.1, 1e-2, 1e-3, 1e-4, 1e-5],
               "time": [0, 1, 2, 3, 4, 5]}
    assert progress_hint(history, 1e-8, "passes") == (
        " (at the rate of the last 3 certificates, roughly 6 more passes, 3 s, would reach tol)")
    # the recent half decides: a method that slowed down is not judged by its first steps
    slowed = {"gap": [1.0, 1e-2, 1e-4, 5e-5, 2.5e-5, 1.25e-5]}
    assert "roughly 7 more" in progress_hint(slowed, 1e-7)
    flat = {"gap": [1e-3, 1e-3, 1e-3]}
    assert "has not decreased" in progress_hint(flat, 1e-6)
    creeping = {"gap": [9.2644e-7, 9.2643e-7, 9.2642e-7, 9.2641e-7]}  # 8.7 M passes to go
    assert "has not decreased" in progress_hint(creeping, 1e-8)
    assert progress_hint({"gap": [1e-3, 1e-4]}, 1e-6) == ""        # too few to tell
    # lower than it was, but rising on the way: no stall to report, no trend to extrapolate
    assert progress_hint({"gap": [5, 4, 3, 2, 1.0, 0.9, 2.0, 0.98]}, 1e-6) == ""
    assert progress_hint({"gap": [1e-3, 0.0, 1e-4]}, 1e-6) == ""   # not a gap sequence
    # no positive bound yet: an interior point at large C holds its gap at 1 for three steps,
    # then certifies 2e-3 two steps later; no stall to report
    assert progress_hint({"gap": [1.0, 1.0006, 1.3733]}, 1e-12) == ""
    assert "has not decreased" in progress_hint({"gap": [0.9, 1.0006, 1.3733]}, 1e-12)
    res = Solution(weights=None, objective=1.0, lower_bound=1.0 - 1e-5, n_iter=10,
                   converged=False, tol=1e-8, history=history, name="demo")
    with pytest.warns(ConvergenceWarning, match=r"raise max_iter or tol \(at the rate .* 6 more "
                                                 r"passes"):
        res.warn_unless_converged("passes")


def test_relative_gap_is_scale_free():
    for s in (1e-12, 1e-6, 1.0, 1e6):
        assert relative_gap(3.0 * s, 2.0 * s) == pytest.approx(1 / 3)
        assert gap_scale(3.0 * s, -4.0 * s) == pytest.approx(4.0 * s)
    # zero weights against the zero dual point: never certified, however small the objective
    assert relative_gap(4e-7, 0.0) == 1.0
    assert relative_gap(0.0, 0.0) == 0.0
    # at_zero: the stopping test also takes the decrease still possible from W = 0
    assert stopping_gap(1.0, 1.0 - 1e-9, at_zero=1.0 + 1e-9) == pytest.approx(0.25)
    assert gap_from_zero(1.0, 1.0 - 1e-9, 1.0 + 1e-9) == pytest.approx(0.5)
    assert certified_by(1.0, 1.0 - 1e-9, 1e-6, 1.0 + 1e-9) == ""  # relative gap 1e-9, not enough
    assert stopping_gap(10.0, 9.0, at_zero=1000.0) == pytest.approx(0.1)  # ordinary scale: unchanged
    assert stopping_gap(1.0, 0.5, at_zero=0.4) == relative_gap(1.0, 0.5)  # zero is optimal: no effect
    # an optimum of 0: round-off on both sides is measured against the objective at zero
    # (a reference's 6.5e-21 vs 0, a fast solver's 0 vs 5.9e-199 gave gaps 1 and -1); certified
    # by the decrease from zero, the relative gap reported as it is
    assert abs(stopping_gap(6.5e-21, 0.0, at_zero=60.0)) <= 1e-9
    assert abs(stopping_gap(0.0, 5.9e-199, at_zero=60.0)) <= 1e-9
    assert certified_by(6.5e-21, 0.0, 1e-6, 60.0) == "decrease_from_zero"
    assert relative_gap(6.5e-21, 0.0) == 1.0
    assert stopping_gap(1e-3, 0.0, at_zero=60.0) == 1.0  # a real gap is still one
    assert certified_by(1e-3, 0.0, 1e-6, 60.0) == ""


def _scaled(make, X, y, C, scale):
    """The same estimator on ``X * scale`` with ``C / scale^2`` (and the intercept's constant
    feature scaled too, ``intercept_scaling=scale``): the same problem, every objective scaled
    by ``1 / scale^2``, the same predictions."""
    return make(C=C / scale ** 2, intercept_scaling=scale).fit(X * scale, y)


SCALE_CASES = {
    "HierarchicalSVC": (lambda **kw: E.HierarchicalSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
    "MulticlassSVC": (lambda **kw: E.MulticlassSVC(**kw), X_FLAT, Y_FLAT),
    "TopDownSVC": (lambda **kw: E.TopDownSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
    "OrthogonalTransferSVC": (lambda **kw: E.OrthogonalTransferSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
    "SiblingMarginSVC": (lambda **kw: E.SiblingMarginSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
}


@pytest.mark.parametrize("name", sorted(SCALE_CASES))
def test_rescaled_problem_gives_the_same_fit(name):
    """X * 1e6 with C * 1e-12 is the problem at C = 1: before the scale-aware gap the fast
    solvers stopped at W = 0 after 0 iterations (training accuracy 0.2-0.25)."""
    make, X, y = SCALE_CASES[name]
    base = make(C=1.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        tiny = _scaled(make, X, y, 1.0, 1e6)
    agree = np.mean(tiny.predict(X * 1e6) == base.predict(X))
    assert agree >= 0.95, agree
    assert np.mean(tiny.predict(X * 1e6) == y) >= np.mean(base.predict(X) == y) - 0.05
    if hasattr(base, "objective_"):
        assert tiny.objective_ * 1e12 == pytest.approx(base.objective_, rel=1e-3)
        assert tiny.n_iter_ > 0


def test_tiny_C_matches_the_reference_objective():
    """C = 1e-8: the working-set solver's answer has the reference's objective (relative)
    and is not the zero weight matrix; the reference certifies by itself (its default
    settings stop early at this scale, so it retries with tighter ones)."""
    C = 1e-8
    fast = E.HierarchicalSVC(hierarchy=TREE, C=C).fit(X_TREE, Y_TREE)
    ref = methods.get("hsvm").references["primal"](X_TREE, Y_TREE, TREE, C=C).solve("CLARABEL")
    assert ref.gap <= 1e-6 and "at_zero" in ref.extras
    assert fast.n_iter_ > 0 and np.abs(fast.coef_).max() > 0
    assert abs(fast.objective_ - ref.objective) <= 1e-6 * ref.objective + (ref.objective - ref.lower_bound)
    assert fast.gap_ <= 1e-6 * (1 + 1e-6)


@pytest.mark.parametrize("name", ["MulticlassSVC", "OrthogonalTransferSVC", "SiblingMarginSVC"])
def test_tiny_C_does_not_certify_zero_weights(name):
    make, X, y = SCALE_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = make(C=1e-8).fit(X, y)
    coef = getattr(est, "coef_", None)
    if coef is None:
        coef = est.coef_class_
    assert np.abs(np.asarray(coef)).max() > 0
    assert len(np.unique(est.predict(X))) > 1  # W = 0 predicts one class for every sample


def test_rda_at_tiny_C_returns_the_certified_nonzero_point():
    """At C = 1e-8 W = 0 is within tol of the optimum, and so is the dual's minimizer: RDA
    returns the latter (the direction the data give), certified, with its own objective."""
    model = otm.prepare(X_TREE, Y_TREE, TREE, "orthogonal")
    res = rda.solve(model, C=1e-8, tol=1e-4)
    assert res.converged and res.gap <= 1e-4 * (1 + 1e-6)
    assert np.abs(res.weights).max() > 0
    assert res.objective == pytest.approx(model.objective(res.weights, C=1e-8), rel=1e-9)


def test_rda_certifies_a_zero_optimum():
    """A problem whose optimum is W = 0 (three of 500 leaves of a star, noise features): the
    decrease-from-zero term does not apply at zero itself, so the gap certifies it."""
    X, y, H = wide_data(500, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = rda.solve(otm.prepare(X, y, H, "orthogonal"), 1.0, tol=1e-4)
    assert res.converged


# ------------------------------------------------------------------ certificate tolerances
@pytest.mark.parametrize("bad", [float("nan"), -1.0, 0.0, float("inf"), "x", None, True])
@pytest.mark.parametrize("which", ["gap_tol", "feas_tol"])
def test_reference_tolerances_are_validated(which, bad):
    prob = methods.get("hsvm").references["primal"](X_TREE, Y_TREE, TREE, C=1.0)
    with pytest.raises(InputError, match=which):
        prob.solve(**{which: bad})


# ------------------------------------------------------------------ references at every scale
def _reference(method, role, scale):
    """The registry's first quick case of ``method`` with ``C`` times ``scale`` (``lam`` divided
    by it): the same problem with every loss term ``scale`` times its weight."""
    case = methods.get(method).cases(True)[0]
    params = dict(case.params)
    if "C" in params:
        params["C"] *= scale
    else:
        params["lam"] /= scale
    return methods.get(method).references[role](case.X, case.Y, case.H, **params, **case.model_options)


@pytest.mark.parametrize("method, role", [("hsvm", "primal"), ("multiclass", "primal"),
                                          ("treeloss", "primal"), ("nhsvm", "dual")])
def test_reference_certifies_a_tiny_objective(method, role):
    """C * 1e-8 (objective ~1e-7): the default settings stop at CLARABEL's absolute gap, so
    the reference retries (tight tolerances, then the objective rescaled) and certifies with
    the gap against the decrease from zero weights (:func:`relative_gap` with ``at_zero``)."""
    prob = _reference(method, role, 1e-8)
    sol = prob.solve("CLARABEL")
    at_zero = sol.extras["at_zero"]
    assert sol.gap <= 1e-6 and sol.gap == relative_gap(sol.objective, sol.lower_bound)
    assert stopping_gap(sol.objective, sol.lower_bound, at_zero) <= 1e-6
    assert sol.converged_by == "relative_gap"
    assert np.abs(sol.weights).max() > 0
    if sol.objective < at_zero:  # below zero's objective: most of the decrease is certified
        assert sol.objective - sol.lower_bound <= 1e-3 * (at_zero - sol.lower_bound)


def test_reference_certifies_an_inaccurate_status_from_its_own_numbers():
    """CLARABEL says "optimal_inaccurate" on the shared-norm dual at lam * 1e8, though the
    recomputed objective and the dual bound prove the gap: certified, the status kept."""
    sol = _reference("shared_norm", "dual", 1e-8).solve("CLARABEL")
    assert sol.extras["solver_status"] == "optimal_inaccurate"
    assert sol.status == "optimal" and sol.gap <= 1e-6


def test_reference_raises_with_every_try_when_nothing_certifies():
    """The tree-loss dual at C * 1e-8 (dual variables ~1e-8, the quadratic term ~1e-16):
    no try certifies; the SolverError names each try and its reason, never an answer."""
    with pytest.raises(SolverError, match="tried default settings: .*tight tolerances: "
                                          ".*objective divided by") as info:
        _reference("treeloss", "dual", 1e-8).solve("CLARABEL")
    assert info.value.solver == "CLARABEL" and info.value.gap > 1e-6


def test_reference_retry_does_not_leak_its_settings():
    """CVXPY keeps a warm-started CLARABEL's settings; after a tight retry the next solve of
    the same problem starts again from the solver's defaults."""
    prob = _reference("hsvm", "primal", 1e-8)
    assert prob.solve("CLARABEL").extras["settings"] != "default settings"
    prob.set(C=1.0)
    assert prob.solve("CLARABEL").extras["settings"] == "default settings"


def test_reference_refuses_unknown_solver_options():
    prob = _reference("hsvm", "primal", 1.0)
    with pytest.raises(InputError, match="refused the options"):
        prob.solve("CLARABEL", not_a_setting=1)


# ------------------------------------------------------------------ no ignored option
MAX_ITER_ESTIMATORS = {
    "HierarchicalSVC": lambda **kw: E.HierarchicalSVC(hierarchy=TREE, **kw),
    "TopDownSVC": lambda **kw: E.TopDownSVC(hierarchy=TREE, **kw),
    "OrthogonalTransferSVC": lambda **kw: E.OrthogonalTransferSVC(hierarchy=TREE, **kw),
    "SiblingMarginSVC": lambda **kw: E.SiblingMarginSVC(hierarchy=TREE, **kw),
    "HierarchicalPsiClassifier": lambda **kw: E.HierarchicalPsiClassifier(hierarchy=TREE, **kw),
    "SequentialHierarchicalSVC": lambda **kw: E.SequentialHierarchicalSVC(hierarchy=TREE, **kw),
    "NormalizedHierarchicalSVC": lambda **kw: E.NormalizedHierarchicalSVC(hierarchy=TREE, **kw),
    "SharedNormSVC": lambda **kw: E.SharedNormSVC(hierarchy=TREE, **kw),
}


@pytest.mark.parametrize("solver", ["fast", "reference"])
@pytest.mark.parametrize("name", sorted(MAX_ITER_ESTIMATORS))
@pytest.mark.parametrize("max_iter", [1.5, 0, -3, "10", True])
def test_max_iter_is_validated_at_fit(name, solver, max_iter):
    est = MAX_ITER_ESTIMATORS[name](max_iter=max_iter, solver=solver)
    with pytest.raises(InputError, match="max_iter"):
        est.fit(X_TREE, Y_TREE)


def test_multiclass_max_iter_is_validated_at_fit():
    with pytest.raises(InputError, match="max_iter"):
        E.MulticlassSVC(max_iter=1.5, solver="reference").fit(X_FLAT, Y_FLAT)


def test_shared_norm_inner_max_iter_is_validated():
    with pytest.raises(InputError, match="inner_max_iter"):
        E.SharedNormSVC(hierarchy=TREE, solver_options={"inner_max_iter": 2.5}).fit(X_TREE, Y_TREE)


@pytest.mark.parametrize("bad", ["nope", None, 3])
def test_nhsvm_inference_is_validated_on_single_label_fits(bad):
    with pytest.raises(InputError, match="inference"):
        E.NormalizedHierarchicalSVC(hierarchy=TREE, inference=bad).fit(X_TREE, Y_TREE)


def test_hpsi_max_iter_bounds_every_convex_step():
    """max_iter reaches the fast solver's convex steps: one ALM step cannot certify them."""
    with pytest.warns(ConvergenceWarning):
        E.HierarchicalPsiClassifier(hierarchy=TREE, solver_options={"method": "alm"}, max_iter=1,
                                    dc_max_iter=1).fit(
            X_TREE, Y_TREE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        E.HierarchicalPsiClassifier(hierarchy=TREE, solver_options={"method": "alm"}, max_iter=500,
                                    dc_max_iter=20).fit(
            X_TREE, Y_TREE)


@pytest.mark.parametrize("solver", ["fast", "reference"])
def test_hpsi_names_its_own_dc_limits_when_the_dc_loop_stops(solver):
    """The DC loop's tol and max_iter are the estimator's dc_tol and dc_max_iter: its warning
    names those (raising max_iter, which bounds each convex step, would not add DC steps)."""
    with pytest.warns(ConvergenceWarning) as seen:
        E.HierarchicalPsiClassifier(hierarchy=TREE, solver=solver, dc_tol=1e-14,
                                    dc_max_iter=1).fit(X_TREE, Y_TREE)
    dc = [str(w.message) for w in seen if str(w.message).startswith("HPSI DC algorithm")]
    assert len(dc) == 1
    assert "> dc_tol=1e-14" in dc[0] and dc[0].endswith("raise dc_max_iter")


# ------------------------------------------------------------------ the input boundary
PREDICTORS = {**MAX_ITER_ESTIMATORS,
              "MulticlassSVC": lambda **kw: E.MulticlassSVC(**kw),
              "HierarchicalPerceptron": lambda **kw: E.HierarchicalPerceptron(hierarchy=TREE, **kw),
              "AdaBoostMH": lambda **kw: E.AdaBoostMH(n_rounds=5, **kw)}


@pytest.fixture(scope="module")
def fitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: make().fit(X_TREE, Y_TREE) for name, make in PREDICTORS.items()}


@pytest.mark.parametrize("name", sorted(PREDICTORS))
def test_complex_X_at_predict_is_refused_by_hiercvx_once(fitted, name):
    """Complex X at predict / decision_function: hiercvx's InputError naming the fix (it was
    scikit-learn's ValueError, which names neither), said once."""
    est = fitted[name]
    Z = X_TREE + 1j
    for method in ("predict", "decision_function"):
        if not hasattr(est, method):
            continue
        with pytest.raises(InputError) as info:
            getattr(est, method)(Z)
        msg = str(info.value)
        assert "X.real" in msg and msg.count("Complex data not supported") == 1, msg
        with pytest.raises(InputError, match="SimpleImputer"):
            getattr(est, method)(np.where(X_TREE > 1, np.nan, X_TREE))
        with pytest.raises(InputError, match="features"):
            getattr(est, method)(X_TREE[:, :-1])


def test_input_type_error_is_both_conventions():
    from hiercvx.exceptions import InputTypeError
    assert issubclass(InputTypeError, InputError) and issubclass(InputTypeError, TypeError)
    assert issubclass(InputTypeError, ValueError)


@pytest.mark.parametrize("hierarchy", [{"r": None}, "tree", 42])
def test_hierarchy_parameter_of_the_wrong_type(hierarchy):
    """Item 6: HierarchicalSVC(hierarchy={"r": None}) gave an AttributeError."""
    from hiercvx.exceptions import InputTypeError
    with pytest.raises(InputTypeError, match="Hierarchy.from_parents"):
        E.HierarchicalSVC(hierarchy=hierarchy).fit(X_TREE, Y_TREE)


@pytest.mark.parametrize("bad", [None, float("nan"), frozenset({"A1"})])
def test_unusable_labels_are_refused_before_the_label_logic(bad):
    """A None / NaN label or a label set among single labels raised a TypeError of
    ``sorted`` ('<' not supported) from deep inside."""
    from hiercvx.exceptions import LabelError
    y = list(Y_TREE)
    y[3] = bad
    for make in (PREDICTORS["HierarchicalSVC"], PREDICTORS["MulticlassSVC"]):
        with pytest.raises(LabelError, match=r"y\[3\]|y mixes"):
            make().fit(X_TREE, y)


@pytest.mark.parametrize("nan", [float("nan"), np.float64("nan")])
def test_a_nan_among_string_labels_is_refused_not_made_a_class(nan):
    """``np.asarray(["a", nan])`` holds the string ``"nan"``: the Crammer-Singer model took it
    for a class of its own (the fuzz test of the entry points found it).  The string
    ``"nan"`` itself stays a label like any other."""
    from hiercvx.exceptions import LabelError
    from hiercvx.models import multiclass as mc
    X = np.random.default_rng(0).standard_normal((4, 2))
    with pytest.raises(LabelError, match="NaN labels"):
        mc.prepare(X, ["a", "b", nan, "a"])
    assert mc.prepare(X, ["a", "b", "nan", "a"]).classes.tolist() == ["a", "b", "nan"]


def test_overflowing_X_and_C_are_refused_at_fit():
    """X * 1e300 or C = 1e300 met an inf inside the sibling solvers' linprog (a raw ValueError
    of scipy); refused at the boundary instead, naming the fix."""
    with pytest.raises(InputError, match="overflow.*Scaler"):
        E.SiblingMarginSVC(hierarchy=TREE).fit(X_TREE * 1e300, Y_TREE)
    with pytest.raises(InputError, match="overflow"):
        E.SiblingMarginSVC(hierarchy=TREE, C=1e300).fit(X_TREE, Y_TREE)


def test_metric_and_loss_boundaries():
    from hiercvx import losses, metrics
    from hiercvx.exceptions import InputTypeError
    scores = np.zeros((len(Y_TREE), len(TREE.leaves)))
    with pytest.raises(InputError, match="complex"):
        metrics.one_accuracy(Y_TREE, scores + 1j, hierarchy=TREE)
    with pytest.raises(InputError, match="requires y_true"):
        metrics.one_accuracy(None, scores, hierarchy=TREE)
    with pytest.raises(InputTypeError, match="loss name"):
        losses.pairwise_loss(TREE, Y_TREE, Y_TREE, loss=["zero_one"])
    with pytest.raises(InputError, match="sample_weight"):
        metrics.hierarchical_f1(Y_TREE, Y_TREE, hierarchy=TREE, sample_weight=["w"] * len(Y_TREE))
    with pytest.raises(InputError, match="complex"):
        metrics.hierarchical_f1(Y_TREE, Y_TREE, hierarchy=TREE,
                                sample_weight=np.ones(len(Y_TREE)) + 1j)


# ------------------------------------------------------------------ warned, and quiet
def test_dc_loop_warns_when_it_stops_on_max_iter():
    model = sm.prepare(X_TREE, Y_TREE, TREE)
    with pytest.warns(ConvergenceWarning, match="DC steps without reaching a fixed point"):
        res = sibling_qp.solve_dc(model, 1.0, tol=0.0, max_iter=1)
    assert not res.converged and res.status == "iteration_limit"


def test_nhsvm_sgd_warns():
    model = methods.get("nhsvm").prepare(X_TREE, Y_TREE, TREE)
    with pytest.warns(ConvergenceWarning, match="without a certificate"):
        res = methods.get("nhsvm").fast_solvers["pairwise"].solve(model, 1.0, method="sgd", max_iter=3)
    assert not res.converged


def test_highs_banner_does_not_reach_stdout():
    code = ("import numpy as np\n"
            "from hiercvx.inference import LabelSetOracle, new_highs\n"
            "from hiercvx.methods.cases import DAG\n"
            "new_highs()\n"
            "LabelSetOracle(DAG, 'ilp').solve(np.ones((2, len(DAG))))\n"
            "print('done')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done", out.stdout


@pytest.mark.parametrize("first", ["inference.reference(S, DAG)",
                                   "multiclass.primal(X, y, C=1.0).solve(solver='HIGHS')"])
def test_highs_banner_does_not_reach_stdout_through_cvxpy(first):
    """CVXPY's HiGHS interface builds the process's first Highs instance, which prints the
    banner whatever output_flag says: the references build a silent one first."""
    code = ("import numpy as np\n"
            "from hiercvx import inference\n"
            "from hiercvx.formulations import multiclass\n"
            "from hiercvx.methods.cases import DAG, problem\n"
            "S = np.ones((2, len(DAG)))\n"
            "X, y, _ = problem('flat', n=10, d=3)\n"
            f"{first}\n"
            "print('done')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done", out.stdout


# ------------------------------------------------------------------ wide hierarchies
def star(n_leaves):
    return Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(n_leaves)}})


def wide_data(n_leaves, n_classes, n=60, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.array([f"c{i % n_classes}" for i in range(n)], dtype=object)
    return X, y, star(n_leaves)


def test_rda_on_a_star_keeps_omega_sparse():
    """K = I on a star: S(W) stays in K's sparse pattern and its solve is a division."""
    X, y, H = wide_data(2000, 3)
    model = otm.prepare(X, y, H, "orthogonal")
    reg = rda.regularizer_for(model)
    assert reg.sparse
    W = np.random.default_rng(1).standard_normal((reg.size, 5))
    S, R = reg.pattern(W)
    assert sp.issparse(S) and S.nnz == reg.size
    assert R == pytest.approx(otm.omega(W, model.K))
    Z, _ = reg.minorant_solve(S, W)
    assert np.allclose(Z, W / np.diag(model.K)[:, None])
    with pytest.warns(ConvergenceWarning):
        res = rda.solve(model, 1.0, max_iter=30)
    assert np.isfinite(res.objective) and res.lower_bound <= res.objective


def test_sparse_omega_matches_the_dense_path():
    """The sparse pattern path (a tree with 300 non-root nodes, K banded by subtrees) solves
    the same minorant as the dense one."""
    H = Hierarchy.from_parents({"r": None, **{f"a{i}": "r" for i in range(100)},
                                **{f"b{i}_{j}": f"a{i}" for i in range(100) for j in range(2)}})
    K = otm.heuristic_K(H, alpha=0.3)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((K.shape[0], 3))
    sparse_reg = rda.Regularizer("omega", K, np.full(K.shape[0], 0.5))
    assert sparse_reg.sparse
    S, R = sparse_reg.pattern(W)
    dense = K * np.sign(W @ W.T)
    np.fill_diagonal(dense, np.diag(K))
    assert np.allclose(S.toarray(), dense) and R == pytest.approx(otm.omega(W, K))
    Sd = dense + 5 * np.eye(K.shape[0])  # PD
    Z, _ = sparse_reg.minorant_solve(sp.csr_matrix(Sd), W)
    assert np.allclose(Z, np.linalg.solve(Sd, W))
    assert otm.half_inverse_quadratic(W, sp.csr_matrix(Sd)) == pytest.approx(
        otm.half_inverse_quadratic(W, Sd))
    assert otm.strong_convexity(K) == pytest.approx(
        float(np.linalg.eigvalsh(otm.comparison_matrix(K))[0]))


def test_orthogonal_pairs_only_on_used_paths():
    X, y, H = wide_data(2000, 3)
    model = otm.prepare(X, y, H, "orthogonal")
    assert model.data.n_pairs == 60 * 1999


def test_sibling_repair_sparse_matches_dense():
    rng = np.random.default_rng(0)
    A = sp.random(400, 900, density=0.01, random_state=1, format="csr")
    A = A + sp.eye(400, 900, format="csr")
    x = rng.standard_normal(900)
    rhs = A @ x
    step = sibling_qp.least_norm_step(A.tocsr(), rhs)
    dense, *_ = np.linalg.lstsq(A.toarray(), rhs, rcond=None)
    assert np.allclose(A @ step, rhs, atol=1e-9)
    assert np.allclose(step, dense, atol=1e-7)


def test_sibling_svm_on_a_wide_star_needs_no_dense_basis():
    X, y, H = wide_data(2000, 3)
    model = sm.prepare(X, y, H)
    engine = sibling_qp.SiblingQPSolver(model, method="alm")  # "auto" may pick the dual IPM
    assert engine.method == "alm" and engine._basis is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = engine.solve(1.0, tol=1e-6, max_iter=2, max_passes=5)
    assert np.isfinite(res.objective) and res.lower_bound <= res.objective * (1 + 1e-9)
