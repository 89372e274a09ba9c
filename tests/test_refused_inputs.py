"""Inputs that mean nothing, refused where they enter with the package's errors and the right
fix: hierarchy names Python would merge, NaN names, loaders' remaining cases (a path of the
wrong type, a duplicated ARFF attribute, a LIBSVM label that underflows), the testing API's
arguments (tolerances, parameters, sizes, seeds, weight shapes) and the CLI's ``--n-jobs 0``;
and a hypothesis fuzz of the testing API's entry points."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hiercvx import cli, testing
from hiercvx.datasets import load_arff, load_libsvm
from hiercvx.exceptions import DataFormatError, HierarchyError, InputError, InputTypeError
from hiercvx.hierarchy import Hierarchy
from hiercvx.methods.cases import problem
from hiercvx.testing.inference import check_inference, inference_problems

X, Y, H = problem("tree", n=16, d=3, seed=0)


@pytest.mark.parametrize("edges,match", [
    ([("r", 1), ("r", True)], "1 and True are equal"),
    ([("r", 1), ("r", 1.0)], "1 and 1.0 are equal"),
    ([("r", float("nan"))], "NaN"),
])
def test_hierarchy_names_that_python_merges_are_refused(edges, match):
    with pytest.raises(HierarchyError, match=match):
        Hierarchy.from_edges(edges)


def test_hierarchy_names_of_one_value_in_two_numpy_types_are_one_node():
    H2 = Hierarchy.from_edges([("r", 1), (np.int64(1), "a")])
    assert len(H2.nodes) == 3


@pytest.mark.parametrize("path", [None, 3, ["a.arff"]])
def test_loaders_refuse_a_path_of_the_wrong_type(path):
    for load in (load_arff, load_libsvm):
        with pytest.raises(InputTypeError, match="path must be a file path"):
            load(path)


def test_arff_with_a_duplicated_attribute_name_is_refused(tmp_path):
    f = tmp_path / "dup.arff"
    f.write_text("@RELATION r\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE a NUMERIC\n"
                 "@ATTRIBUTE class hierarchical x,x/y\n@DATA\n1,2,x/y\n")
    with pytest.raises(DataFormatError, match="declared twice") as info:
        load_arff(f)
    assert ":3" in str(info.value)  # file:line of the second declaration


def test_libsvm_label_that_underflows_is_refused(tmp_path):
    f = tmp_path / "tiny.svm"
    f.write_text("1 1:0.5\n1e-400 1:0.25\n")
    with pytest.raises(DataFormatError, match="underflows to 0") as info:
        load_libsvm(f)
    assert ":2" in str(info.value)
    f.write_text("0 1:0.5\n0e-400 1:0.25\n")  # a zero written with an exponent is a zero
    assert [set(v) if isinstance(v, frozenset) else {v} for v in load_libsvm(f).y] == [{0}, {0}]


@pytest.mark.parametrize("name", ["TopDownSVC", "HierarchicalSVC", "NormalizedHierarchicalSVC",
                                  "MulticlassSVC"])
def test_a_penalty_given_as_a_string_is_refused_naming_a_number(name):
    from hiercvx import estimators

    with pytest.raises(InputTypeError, match="got the string '1'; pass it as a number"):
        getattr(estimators, name)(C="1").fit(X, Y)


def test_testing_objective_refuses_bad_parameters_and_shapes():
    W = np.zeros((len(H.nodes), 3))
    assert np.isfinite(testing.objective("hsvm", W, X, Y, H, C=1.0))
    with pytest.raises(InputError, match="C must be a positive finite number"):
        testing.objective("hsvm", W, X, Y, H, C=-1)
    with pytest.raises(InputError, match=r"weights of shape \(3, 2\)"):
        testing.objective("hsvm", np.zeros((3, 2)), X, Y, H)
    with pytest.raises(InputError, match=r"weights of shape \(3, 2\)"):
        testing.kkt_report("hsvm", np.zeros((3, 2)), X, Y, H, reference=False)
    with pytest.raises(InputError, match="non-finite"):
        testing.objective("hsvm", np.full_like(W, np.nan), X, Y, H)


@pytest.mark.parametrize("kwargs,match", [
    ({"n": -5}, "n must be an integer of at least 2"),
    ({"d": 0}, "d must be an integer of at least 1"),
    ({"seeds": ["a"]}, "each seed must be an integer"),
    ({"seeds": 5}, "seeds must be a sequence"),
    ({"seeds": ()}, "seeds is empty"),
    ({"structures": ["moebius"]}, "unknown structures"),
])
def test_problems_for_refuses_bad_sizes_and_seeds(kwargs, match):
    with pytest.raises(InputError, match=match):
        testing.problems_for("hsvm", **kwargs)


def test_check_inference_refuses_bad_tolerances_and_seeds():
    with pytest.raises(InputError, match="rtol"):
        check_inference(lambda S, H: S > 0, rtol=float("nan"))
    with pytest.raises(InputError, match="seed"):
        inference_problems(seed=-1)


def test_reproduce_n_jobs_zero_is_a_usage_error(capsys):
    # in this process (a new interpreter costs seconds): what the command returns and prints
    assert cli.main(["reproduce", "wang-table1", "--quick", "--n-jobs", "0"]) != 0
    out = capsys.readouterr()
    assert "n_jobs must be a non-zero integer" in out.out + out.err
    assert "Traceback" not in out.out + out.err


# ---------------------------------------------------------------------- fuzz of the testing API
BAD_NUMBERS = st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, "x", None, True, [1.0]])


def _fit(X, Y, H, **options):
    return np.zeros((len(H.nodes), X.shape[1]))


ENTRY_POINTS = {
    "check_solver.rtol": lambda v: testing.check_solver(_fit, "hsvm", rtol=v),
    "check_solver.weight_rtol": lambda v: testing.check_solver(_fit, "hsvm", weight_rtol=v),
    "objective.C": lambda v: testing.objective("hsvm", np.zeros((len(H.nodes), 3)), X, Y, H, C=v),
    "problems_for.n": lambda v: testing.problems_for("hsvm", n=v),
    "problems_for.d": lambda v: testing.problems_for("hsvm", d=v),
    "problems_for.seeds": lambda v: testing.problems_for("hsvm", seeds=[v]),
    "check_inference.rtol": lambda v: check_inference(lambda S, H: S > 0, rtol=v),
    "inference_problems.seed": lambda v: inference_problems(seed=v),
}


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(ENTRY_POINTS)), BAD_NUMBERS)
def test_fuzz_testing_api_refuses_with_the_packages_errors(entry, value):
    if value == 0.0 and entry in ("problems_for.seeds", "inference_problems.seed"):
        return  # seed 0 is a seed
    if value is None and entry in ("problems_for.n", "problems_for.d"):
        return  # None: the case's own size
    with pytest.raises(InputError):
        ENTRY_POINTS[entry](value)


# ---------------------------------------------------------------------- estimator parameters
from hiercvx import estimators as E  # noqa: E402
from hiercvx.exceptions import LabelError  # noqa: E402
from hiercvx.formulations import hsvm  # noqa: E402

Xt, yt, Ht = problem("tree", n=24, d=3, seed=0)


@pytest.mark.parametrize("make,match", [
    (lambda: E.SiblingMarginSVC(hierarchy=Ht, intercept_scaling=-1), "intercept_scaling"),
    (lambda: E.SiblingMarginSVC(hierarchy=Ht, intercept_scaling=float("nan")), "intercept_scaling"),
    (lambda: E.HierarchicalPsiClassifier(hierarchy=Ht, intercept_scaling=-1), "intercept_scaling"),
    (lambda: E.HierarchicalSVC(hierarchy=Ht, solver_options={"random_state": "abc"}), "random_state"),
    (lambda: E.NormalizedHierarchicalSVC(hierarchy=Ht, solver="reference",
                                         solver_options={"method": "pairwise"}), "solver='fast'"),
    (lambda: E.HierarchicalPsiClassifier(hierarchy=Ht, dc_max_iter=0), "dc_max_iter"),
    (lambda: E.HierarchicalPerceptron(hierarchy=Ht, shuffle="maybe"), "shuffle"),
], ids=["sibling-scaling-neg", "sibling-scaling-nan", "psi-scaling", "random_state", "fast-setting-on-reference",
        "dc_max_iter", "shuffle"])
def test_meaningless_estimator_parameters_are_refused(make, match):
    with pytest.raises(InputError, match=match):
        make().fit(Xt, yt)


def test_bad_sample_weight_and_mixed_label_types_get_the_packages_errors():
    with pytest.raises(InputError, match="sample_weight"):
        E.HierarchicalSVC(hierarchy=Ht).fit(Xt, yt, sample_weight=np.ones(3))
    # labels of several types are node names like any others: an int that is no node is named
    mixed = np.array([1] + list(yt[1:]), dtype=object)
    with pytest.raises(LabelError, match=r"not nodes of the hierarchy: 1 \(sample 0\)"):
        E.HierarchicalSVC(hierarchy=Ht).fit(Xt, mixed)
    with pytest.raises(LabelError, match="y is not a set of class labels"):   # continuous floats
        E.HierarchicalSVC(hierarchy=Ht).fit(Xt, np.array([0.5] + list(yt[1:]), dtype=object))


def test_reference_max_size_must_be_a_positive_integer():
    with pytest.raises(InputError, match="max_size must be None or a positive integer"):
        hsvm.primal(Xt, yt, Ht, C=1.0, max_size="x")
