"""The oracle itself: every planted bug caught and diagnosed truly, skips loud, tolerances
checked, failures pointed at the user's code, label-set inference checked like the solvers."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from hiercvx import inference, methods, testing
from hiercvx.exceptions import InputError
from hiercvx.testing import SkippedProblemWarning, SolverCheckError, check_solver, problems_for
from hiercvx.testing.bugs import answer_of, format_kill_matrix, kill_matrix
from hiercvx.testing.diagnose import optimal_for
from hiercvx.testing.inference import check_inference, inference_kill_matrix, inference_problems
from hiercvx.verify import verify_inference


def assert_every_bug_caught_and_named(rows):
    assert rows
    text = format_kill_matrix(rows)
    missed = [(r.method, r.bug) for r in rows if not r.caught]
    unnamed = [(r.method, r.bug, r.keys) for r in rows if r.diagnosis != "right"]
    assert not missed, text
    assert not unnamed, text
    for r in rows:  # the method is named in the first line
        assert r.first_line.startswith(f"check_solver({r.method!r}) failed on ")


def test_kill_matrix_margin_and_orthogonal_families():
    rows = kill_matrix(["multiclass", "hsvm", "orthogonal"])
    assert_every_bug_caught_and_named(rows)
    # at least 8 planted bugs per method, every option of each method among them
    for name in ("multiclass", "hsvm", "orthogonal"):
        assert sum(r.method == name for r in rows) >= 8
    options = {r.bug.split(":")[1] for r in rows if r.method == "hsvm" and r.bug.startswith("option_ignored")}
    assert options == {"sample_weight", "loss", "attributes", "rescaling", "fit_intercept", "intercept_scaling"}


@pytest.mark.slow  # every registered method: about 90 s
def test_kill_matrix_every_method():
    rows = kill_matrix()
    assert {r.method for r in rows} == set(methods.names())
    assert_every_bug_caught_and_named(rows)
    for name in methods.names():
        assert sum(r.method == name for r in rows) >= 8, name


def test_the_diagnosis_of_half_C_is_C_and_holds_on_the_failing_problem():
    """A solver using C/2: the diagnosis names C (not another rescaling worked out on a smaller
    problem), and the named neighbour's optimum is that of the problem in the first line."""
    def fit(X, Y, H, C=1.0, **options):
        p = testing.Problem.from_arrays("hsvm", X, Y, H, C=C / 2, **options)
        return answer_of(p.reference())

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "hsvm", structures=["tree"])
    keys = [d.key for d in info.value.diagnoses]
    assert keys[0] == "C_scaled" and "other_rescaling" not in keys
    assert "C is scaled by 1/2" in str(info.value)
    failing = info.value.failed[0].problem
    half = failing.variant(params={"C": failing.params["C"] / 2})
    user = testing.diagnostics.read_result(fit(failing.X, failing.Y, failing.H, **failing.options))
    assert optimal_for(half, user, 1e-4, 1e-3)


def test_one_percent_off_is_caught_where_the_objective_cannot_tell():
    p = problems_for("orthogonal", structures=["tree"], probes=False)[0]
    answer = answer_of(p.reference())
    off = {k: 1.01 * v for k, v in answer.items()}
    outcome = testing.check.run_one(lambda X, Y, H, **kw: off, p, rtol=1e-4)
    assert outcome.status == "failed"
    assert abs(outcome.user_objective - outcome.reference_objective) < 1e-4 * outcome.reference_objective
    assert outcome.weights is not None and outcome.weights.relative == pytest.approx(0.01, rel=1e-3)
    assert "the objective alone could not tell" in outcome.reasons[0]


@pytest.mark.parametrize("name", [n for n in methods.names()
                                  if testing.strong_convexity(methods.get(n).model(methods.get(n).cases(True)[0]))])
def test_strong_convexity_constants_hold(name):
    """``f(W* + D) - f* >= mu/2 ||D||^2`` along random directions: the constant the weight test
    relies on is true of the objective."""
    method = methods.get(name)
    p = problems_for(method, probes=False)[0]
    model, ref = p.model(), p.reference()
    mu = testing.strong_convexity(model)
    best = answer_of(ref)
    rng = np.random.default_rng(0)
    for scale in (1e-2, 1e-1, 1.0):
        move = {k: v + scale * rng.standard_normal(v.shape) if k in ("weights", "intercept") else v
                for k, v in best.items()}
        if getattr(model, "var_nodes", None) is not None:  # rows without weights stay zero
            keep = np.zeros(len(move["weights"]), dtype=bool)
            keep[model.var_nodes] = True
            move["weights"][~keep] = 0.0
        user = testing.diagnostics.read_result(move)
        f = testing.diagnostics.objective_at(model, user, p.params)
        dist = np.linalg.norm(testing._judge.weight_vector(model, move["weights"], move.get("intercept"))
                              - testing._judge.weight_vector(model, best["weights"], best.get("intercept")))
        assert f - ref.lower_bound >= 0.5 * mu * dist ** 2 * (1 - 1e-6) - 1e-9


def test_skips_are_named_warned_and_strict_fails():
    ref_of = {}

    def fit(X, y, H=None, C=1.0, sample_weight=None, fit_intercept=False, intercept_scaling=1.0):
        p = testing.Problem.from_arrays("multiclass", X, y, None, C=C, sample_weight=sample_weight,
                                        fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
        # keyed by content: fit gets copies, whose ids Python may reuse for other problems
        key = (np.asarray(X).tobytes(), C, fit_intercept, intercept_scaling,
               None if sample_weight is None else np.asarray(sample_weight).tobytes())
        if key not in ref_of:
            ref_of[key] = answer_of(p.reference())
        return ref_of[key]

    with pytest.warns(SkippedProblemWarning, match="fit takes no class_weight"):
        outcomes = check_solver(fit, "multiclass", structures=["flat"])
    skipped = [o for o in outcomes if o.status == "skipped"]
    assert skipped and all("class_weight" in o.problem.model_options for o in skipped)
    assert all("nan" not in repr(o) and "skipped" in repr(o) and not o.ok for o in skipped)
    with pytest.raises(SolverCheckError, match="strict=True"):
        check_solver(fit, "multiclass", structures=["flat"], strict=True)


def test_a_fit_that_ignores_sample_weight_fails_hsvm():
    def fit(X, Y, H, C=1.0, sample_weight=None, **options):  # takes it, ignores it
        return answer_of(testing.Problem.from_arrays("hsvm", X, Y, H, C=C, **options).reference())

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "hsvm", structures=["tree"])
    assert "sample_weight_ignored" in [d.key for d in info.value.diagnoses]


@pytest.mark.parametrize("bad", [float("nan"), -1.0, 0.0, "1e-4", True])
def test_tolerances_are_checked(bad):
    with pytest.raises(InputError, match="rtol"):
        check_solver(lambda X, Y, H, **kw: None, "multiclass", rtol=bad)
    with pytest.raises(InputError, match="weight_rtol"):
        check_solver(lambda X, Y, H, **kw: None, "multiclass", weight_rtol=bad)


def test_a_failure_shows_the_users_assertion_not_the_oracles_source(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent('''
        import numpy as np
        from hiercvx.testing import check_solver

        def fit(X, y, H=None, C=1.0, **options):
            return np.zeros((5, X.shape[1]))

        def test_mine():
            check_solver(fit, "multiclass", structures=["flat"], shrink_failures=False)
        '''))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout[-3000:]
    assert "check_solver('multiclass') failed on flat" in run.stdout
    assert "def check_solver" not in run.stdout and "__tracebackhide__" not in run.stdout
    assert "def run_one" not in run.stdout


# ------------------------------------------------------------------ label-set inference
@pytest.mark.parametrize("route", ["ilp", "lp", "auto"])
def test_check_inference_passes_the_exact_routes(route):
    def fn(S, H, loss=None, true_indicator=None):
        return inference.best_label_set(S, H, route, loss=loss, true_indicator=true_indicator)

    assert len(check_inference(fn)) == len(inference_problems())


def test_check_inference_takes_label_sets_of_names():
    def fn(S, H, loss=None, true_indicator=None):
        Z = inference.best_label_set(S, H, "ilp", loss=loss, true_indicator=true_indicator)
        return [{H.nodes[k] for k in np.flatnonzero(z)} for z in Z]

    check_inference(fn)


def test_every_planted_inference_bug_is_caught():
    rows = inference_kill_matrix()
    assert len(rows) >= 8
    assert all(caught for _, caught, _ in rows), rows


def test_inference_without_loss_keywords_is_skipped_loudly():
    def fn(S, H):
        return inference.best_label_set(S, H, "ilp")

    with pytest.warns(SkippedProblemWarning, match="loss-augmented"):
        checked = check_inference(fn)
    assert checked == [p.name for p in inference_problems() if p.loss is None]
    with pytest.raises(SolverCheckError):
        check_inference(fn, strict=True)


def test_verify_has_inference_rows_and_they_agree():
    rows = verify_inference()
    assert {r.fast_solver for r in rows} == {"dp", "ilp", "lp", "enumerate"}
    assert {("dag" in r.case, "loss" in r.case) for r in rows} == {(False, False), (False, True),
                                                                   (True, False), (True, True)}
    assert all(r.ok for r in rows), [r.status for r in rows if not r.ok]


# ------------------------------------------------------------------ what the oracle says is true
@pytest.mark.parametrize("name", ["orthogonal", "nhsvm", "shared_norm", "treeloss"])
def test_a_solver_that_ignores_its_parameter_fails_and_is_named(name):
    """Every built-in case of these methods shares one C (or lambda); the parameter probe is the
    problem where a solver that always solves at that value fails, and the diagnosis says so."""
    method = methods.get(name)
    (key, value), = problems_for(name, probes=False)[0].params.items()

    def fit(X, Y, H=None, **options):   # solves at the cases' value, whatever it is given
        return testing.Problem.from_arrays(name, X, Y, H, **{**options, key: value}).reference()

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, method, shrink_failures=False)
    failing = info.value.failed[0].problem
    assert failing.params[key] == pytest.approx(value * testing.options.PARAMETER_PROBE_FACTOR)
    text = str(info.value)
    assert f"your weights are optimal for {key} = {value:.6g} instead of" in text
    assert f"it evaluated its objective with {key} = {value:.6g}" in text


def test_an_optimal_answer_gets_no_neighbour_named():
    """The certified optimum flagged converged=False fails for that reason alone: no
    neighbouring problem is named (on a tree where class_depth and tree_depth coincide, the
    neighbour's optimum is the asked one's)."""
    def fit(X, Y, H, **options):
        sol = testing.Problem.from_arrays("hsvm", X, Y, H, **options).reference()
        sol.converged = False   # the only fault
        return sol

    p = problems_for("hsvm", structures=["tree"], probes=False)[0]
    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "hsvm", problems=[p], shrink_failures=False)
    assert info.value.diagnoses == [] and "did not converge" in str(info.value)


def test_tiny_weights_are_not_called_a_multiple_of_the_optimum():
    p = problems_for("hsvm", structures=["tree"], probes=False)[0]
    W = 1e-8 * np.random.default_rng(0).standard_normal(p.reference().weights.shape)
    with pytest.raises(SolverCheckError) as info:
        check_solver(lambda X, Y, H, **kw: W, "hsvm", problems=[p], shrink_failures=False)
    assert "weights_scaled" not in [d.key for d in info.value.diagnoses]


def test_missing_biases_fail_the_check_and_say_so():
    def fit(X, Y, H=None, **options):
        return {"weights": testing.Problem.from_arrays("sibling_svm", X, Y, H, **options).reference().weights}

    p = problems_for("sibling_svm", structures=["flat"], probes=False)[0]
    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "sibling_svm", problems=[p], shrink_failures=False)
    assert "your result has no biases, which this method's objective needs" in str(info.value)
    assert "shape" not in str(info.value)


def test_rows_of_a_flat_sibling_problem_are_named_by_its_hierarchy():
    def fit(X, Y, H=None, **options):
        sol = testing.Problem.from_arrays("sibling_svm", X, Y, H, **options).reference()
        return {"weights": sol.weights[::-1].copy(), "biases": sol.values["biases"]}

    p = problems_for("sibling_svm", structures=["flat"], probes=False)[0]
    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "sibling_svm", problems=[p], shrink_failures=False)
    text = str(info.value)
    assert "rows follow the model's hierarchy, root first" in text and "sorted classes" not in text
    assert "row <root> holds the optimum's row" in text


def test_check_inference_refuses_values_other_than_0_and_1():
    def fn(S, H, loss=None, true_indicator=None):
        Z = inference.best_label_set(S, H, "ilp", loss=loss, true_indicator=true_indicator)
        return np.where(Z, 1, -1)

    with pytest.raises(SolverCheckError, match=r"must hold 0/1 \(or bool\) over H.nodes; it holds -1") as info:
        check_inference(fn)
    assert "samples wrong" not in str(info.value)
