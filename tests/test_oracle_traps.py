"""The oracle's traps: answers and arguments that once slipped through ``check_solver`` or
crashed it -- a ``fit`` that writes into its inputs, non-finite weights, a non-finite or
ignored reported objective, ``None``, problems of another method, misspelled options -- and
strategies whose every draw is a problem the methods take."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings

from hiercvx import methods
from hiercvx.exceptions import InputError
from hiercvx.testing import Problem, SolverCheckError, check_solver, objective, problems_for
from hiercvx.testing.bugs import answer_of
from hiercvx.testing.strategies import datasets


def _flat(n=12):
    return problems_for("multiclass", structures=["flat"], probes=False, n=n)[:1]


def _optimum(X, Y, H, **options):
    """The certified optimum of the multiclass problem on the data ``fit`` receives."""
    return answer_of(Problem.from_arrays("multiclass", X, Y, H, **options).reference())


class _Result:
    def __init__(self, weights, objective, converged=True):
        self.weights, self.objective, self.converged = weights, objective, converged


# ------------------------------------------------------------------ inputs changed in place
def test_a_fit_that_rescales_X_in_place_fails_and_the_problem_is_untouched():
    problems = _flat()
    X0 = problems[0].X.copy()

    def fit(X, Y, H=None, **options):
        X *= 2.0                      # the bug: scales the caller's array
        return _optimum(X, Y, H, **options)

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "multiclass", problems=problems, shrink_failures=False)
    assert "fit modified its input X in place" in str(info.value)
    assert np.array_equal(problems[0].X, X0)
    # every diagnosis holds on the original problem: the answer is not optimal for any
    # neighbour there (it solves the doubled data)
    assert [d.key for d in info.value.diagnoses if d.key not in ("row_zeroed", "rows_permuted")] == []


def test_a_right_answer_from_a_fit_that_then_changes_sparse_X_fails_for_that_alone():
    p = _flat()[0]
    problem = Problem.from_arrays("multiclass", sp.csr_matrix(p.X), p.Y)
    X0 = problem.X.copy()

    def fit(X, Y, H=None, **options):
        answer = _optimum(X, Y, H, **options)
        X.data *= 0.5
        return answer

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "multiclass", problems=[problem], shrink_failures=False)
    assert info.value.failed[0].reasons == [info.value.failed[0].reasons[0]]
    assert "fit modified its input X in place" in info.value.failed[0].reasons[0]
    assert (problem.X != X0).nnz == 0


def test_a_fit_that_changes_its_labels_is_named():
    problems = _flat()

    def fit(X, Y, H=None, **options):
        answer = _optimum(X, Y, H, **options)
        Y[0] = Y[1] if Y[1] != Y[0] else Y[2]
        return answer

    with pytest.raises(SolverCheckError, match="modified its input Y in place"):
        check_solver(fit, "multiclass", problems=problems, shrink_failures=False)


# ------------------------------------------------------------------ non-finite answers
@pytest.mark.parametrize("part", ["weights", "intercept"])
def test_non_finite_weights_fail_the_check_with_a_true_reason(part):
    problems = problems_for("multiclass", structures=["flat"], probes=False, n=12,
                            fit_intercept=True)[:1]

    def fit(X, Y, H=None, **options):
        answer = _optimum(X, Y, H, **options)
        answer[part] = np.array(answer[part], dtype=float)
        answer[part].flat[0] = np.nan
        return answer

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "multiclass", problems=problems, shrink_failures=False)
    text = str(info.value)
    assert text.startswith("check_solver('multiclass') failed on flat")
    assert f"entries of the {part} are not finite" in text
    assert info.value.diagnoses == []


def test_a_reported_objective_of_nan_fails():
    def fit(X, Y, H=None, **options):
        return _Result(_optimum(X, Y, H, **options)["weights"], float("nan"))

    with pytest.raises(SolverCheckError, match="reports objective nan, not a finite number"):
        check_solver(fit, "multiclass", problems=_flat(), shrink_failures=False)


def test_a_bare_nan_objective_is_not_called_above_the_optimum():
    with pytest.raises(SolverCheckError) as info:
        check_solver(lambda X, Y, H=None, **o: float("nan"), "multiclass", problems=_flat(),
                     shrink_failures=False)
    assert "above the optimum" not in str(info.value)
    assert "not a finite number" in str(info.value)


# ------------------------------------------------------------------ dict results and None
def test_a_dict_saying_it_did_not_converge_fails():
    def fit(X, Y, H=None, **options):
        return {**_optimum(X, Y, H, **options), "converged": False}

    with pytest.raises(SolverCheckError, match="did not converge"):
        check_solver(fit, "multiclass", problems=_flat(), shrink_failures=False)


def test_a_dict_reporting_a_wrong_objective_fails():
    def fit(X, Y, H=None, **options):
        return {**_optimum(X, Y, H, **options), "objective": 123.0}

    with pytest.raises(SolverCheckError, match="reports objective 123 but its weights give"):
        check_solver(fit, "multiclass", problems=_flat(), shrink_failures=False)


def test_a_dict_reporting_the_right_objective_passes():
    def fit(X, Y, H=None, **options):
        p = Problem.from_arrays("multiclass", X, Y, H, **options)
        return {**answer_of(p.reference()), "objective": float(p.reference().objective),
                "converged": True}

    assert all(o.ok for o in check_solver(fit, "multiclass", problems=_flat()))


def test_a_fit_returning_none_is_told_so():
    with pytest.raises(SolverCheckError) as info:
        check_solver(lambda X, Y, H=None, **o: None, "multiclass", problems=_flat(),
                     shrink_failures=False)
    assert "fit returned None" in str(info.value) and "shape ()" not in str(info.value)
    assert "fit raised" not in str(info.value)


# ------------------------------------------------------------------ arguments
def test_problems_of_another_method_are_refused():
    with pytest.raises(InputError, match="method 'hsvm'.*method 'multiclass'"):
        check_solver(_optimum, "hsvm", problems=_flat())


@pytest.mark.parametrize("bad", [True, False, "flat", 1.5, []])
def test_problems_that_are_not_problems_are_refused(bad):
    with pytest.raises(InputError, match="problems"):
        check_solver(_optimum, "multiclass", problems=bad)


def test_a_misspelled_option_lists_the_methods_options():
    p = _flat()[0]
    with pytest.raises(InputError, match="did you mean 'fit_intercept'") as info:
        objective("multiclass", np.zeros((5, p.d)), p.X, p.Y, fit_intercpt=True)
    assert "sample_weight" in str(info.value)
    with pytest.raises(InputError, match="'fit_intercpt'"):
        problems_for("multiclass", fit_intercpt=True)
    with pytest.raises(InputError, match="hsvm has no option 'rescale'"):
        Problem.from_arrays("hsvm", p.X, p.Y, None, rescale="margin")


# ------------------------------------------------------------------ strategies
def _methods_for(structure):
    return [m for m in methods.names() if structure in methods.get(m).structures]


KINDS = [("tree", {}, "tree"), ("chain", {}, "tree"), ("one_child", {}, "tree"),
         ("star", {}, "flat"), ("dag", {}, "dag"), ("dag", {"multilabel": True}, "multilabel"),
         ("tree", {"multilabel": True}, "multilabel"), ("tree", {"partial": True}, "partial")]


@pytest.mark.parametrize("kind, kwargs, structure", KINDS,
                         ids=[f"{k}-{s}" for k, _, s in KINDS])
def test_every_drawn_dataset_is_taken_by_the_methods_of_its_structure(kind, kwargs, structure):
    names = _methods_for(structure)

    @settings(max_examples=15, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(datasets(kind=kind, **kwargs))
    def check(data):
        X, Y, H = data
        assert len(H.leaves) >= (3 if kwargs.get("multilabel") else 2)
        if kind == "one_child":
            assert any(len(H.children(v)) == 1 for v in H.nodes)
        if kind == "dag":
            assert not H.is_tree
        for name in names:
            if structure == "flat" and H is not None and name == "multiclass":
                problem = Problem.from_arrays(name, X, Y)
            elif structure == "partial" and name == "hsvm":   # hsvm takes partial paths this way
                paths = H.with_self_leaves()
                problem = Problem.from_arrays(name, X, paths.transform(Y), paths.hierarchy)
            else:
                problem = Problem.from_arrays(name, X, Y, H)
            problem.model()   # the method's prepare: raises on a problem it refuses

    check()


# ------------------------------------------------------------------ an ignored kernel
def _kernel_probe(n=12):
    """The sibling_svm probe that sets kernel='rbf' (with its sigma), small."""
    return [p for p in problems_for("sibling_svm", structures=["tree"], n=n)
            if p.template is not None and ", option kernel" in p.template.name][:1]


def _linear_optimum(X, Y, H, **options):
    """The certified optimum with the kernel dropped: linear feature weights, not expansion
    coefficients (the shape of the answer differs from the asked problem's)."""
    kept = {k: v for k, v in options.items() if k not in ("kernel", "sigma")}
    return answer_of(Problem.from_arrays("sibling_svm", X, Y, H, **kept).reference())


def test_an_ignored_kernel_is_diagnosed_though_the_weights_have_another_shape():
    problems = _kernel_probe()
    assert problems and problems[0].model_options.get("kernel") == "rbf"

    def fit(X, Y, H, **options):
        return _linear_optimum(X, Y, H, **options)

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "sibling_svm", problems=problems, shrink_failures=False)
    text = str(info.value)
    assert "weights of shape" in text
    assert "option_ignored" in [d.key for d in info.value.diagnoses]
    assert "diagnosis: kernel='rbf' is ignored" in text


@pytest.mark.parametrize("wrong", ["scaled", "C halved"])
def test_a_linear_answer_wrong_in_another_way_is_not_called_an_ignored_kernel(wrong):
    problems = _kernel_probe()

    def fit(X, Y, H, **options):
        if wrong == "C halved":
            return _linear_optimum(X, Y, H, **{**options, "C": 0.5 * options["C"]})
        answer = _linear_optimum(X, Y, H, **options)
        return {**answer, "weights": 1.5 * answer["weights"]}

    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "sibling_svm", problems=problems, shrink_failures=False)
    assert "weights of shape" in str(info.value)
    assert info.value.diagnoses == []
    assert "is ignored" not in str(info.value)
