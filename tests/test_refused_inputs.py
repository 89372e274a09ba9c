"""Inputs that mean nothing, refused where they enter with the package's errors and the right
fix: hierarchy names Python would merge, NaN names, loaders' remaining cases (a path of the
wrong type, a duplicated ARFF attribute, a LIBSVM label that underflows, a signed ``?``, a
class list that reads two ways, a dialect that does not fit), the testing API's arguments
(tolerances, parameters, sizes, seeds, weight shapes), the data generators' arguments and
the CLI's ``--n-jobs 0``; and a hypothesis fuzz of the testing API's entry points."""

import gzip

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
    with pytest.raises(InputError, match="entries of the weights are not finite"):
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
    assert "--n-jobs must be a non-zero integer" in out.out + out.err
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


# ---------------------------------------------------------------------- data loaders and generators
from hiercvx.datasets import (  # noqa: E402
    labels_from_paths,
    load,
    make_cai_synthetic,
    make_nhsvm_balanced,
    make_wang_example2,
    make_wang_example3,
    synthetic,
)

ARFF_HEAD = "@RELATION r\n@ATTRIBUTE a numeric\n@ATTRIBUTE b numeric\n"


def _arff(tmp_path, classes, rows, head=ARFF_HEAD, name="t.arff"):
    f = tmp_path / name
    f.write_text(f"{head}@ATTRIBUTE class hierarchical {classes}\n@DATA\n" + "".join(rows))
    return f


@pytest.mark.parametrize("head", [ARFF_HEAD, "@RELATION r\n@ATTRIBUTE a numeric\n"
                                              "@ATTRIBUTE b {x,'y z'}\n"])
@pytest.mark.parametrize("value", ["-?", "+?"])
def test_arff_signed_missing_value_is_refused(tmp_path, head, value):
    second = "1" if "{" not in head else "'y z'"
    f = _arff(tmp_path, "A,A/A1", ["1,{},A\n".format(second), f"{value},{second},A\n"], head)
    with pytest.raises(DataFormatError, match="without a sign") as info:
        load_arff(f)
    assert info.value.line == 7


def test_arff_quoted_number_with_a_comma_and_late_sparse_row(tmp_path):
    f = _arff(tmp_path, "A", ["1,'1,5',A\n"])
    with pytest.raises(DataFormatError, match="'1,5'") as info:
        load_arff(f)
    assert info.value.line == 6
    f = _arff(tmp_path, "A", ["1,2,A\n", "{0 1, 2 A}\n"])
    with pytest.raises(DataFormatError, match="sparse.*rows before it are dense") as info:
        load_arff(f)
    assert info.value.line == 7


def test_arff_two_readings_that_fit_are_refused_naming_both(tmp_path):
    """``top/x,top/z,x/y`` with labels ``x`` and ``top``: paths and edges both declare
    them, with other hierarchies; auto mode asks which it is."""
    f = _arff(tmp_path, "top/x,top/z,x/y", ["1,2,x\n", "3,4,top\n"])
    with pytest.raises(DataFormatError, match="dialect='paths' or dialect='edges'") as info:
        load_arff(f)
    assert info.value.line == 4 and "'top'" in str(info.value)
    assert load_arff(f, dialect="edges").hierarchy.parents("x") == ("top",)
    assert load_arff(f, dialect="paths").hierarchy.parents("x") == ("<root>",)
    go = _arff(tmp_path, "root/A,A/B,root/C", ["1,2,A\n"], name="go.arff")  # GO form: edges
    assert load_arff(go).metadata["dialect"] == "edges"


def test_arff_dialect_errors_name_the_dialect_that_fits(tmp_path):
    go = _arff(tmp_path, "root/A,A/B", ["1,2,A\n", "3,4,B\n"])
    with pytest.raises(DataFormatError, match="pass dialect='edges'") as info:
        load_arff(go, dialect="paths")
    assert info.value.line == 7 and "add it to the class list" not in str(info.value)
    paths = _arff(tmp_path, "A,A/A1", ["1,2,A/A1\n"], name="p.arff")
    with pytest.raises(DataFormatError, match="pass dialect='paths'"):
        load_arff(paths, dialect="edges")
    # every name a child of another: no edge reading (a cycle), the paths one is taken
    loop = _arff(tmp_path, "1/2,2/1", ["1,2,1\n"], name="loop.arff")
    d = load_arff(loop)
    assert d.metadata["dialect"] == "paths" and d.y == [frozenset({"1"})]


def test_loader_arguments_get_the_packages_errors(tmp_path, monkeypatch):
    for path in (5, b"/tmp/x.arff"):
        with pytest.raises(InputTypeError, match="path must be a file path"):
            load(path)
    for kwargs, match in (({"sep": None}, "sep must be a non-empty string"),
                          ({"sep": ""}, "sep must be a non-empty string"),
                          ({"multi_sep": ""}, "multi_sep must be a non-empty string"),
                          ({"multi_sep": "/"}, "sep and multi_sep")):
        with pytest.raises(InputError, match=match):
            labels_from_paths(["A/B", "C"], **kwargs)
    f = tmp_path / "d.svm"
    f.write_text("1 1:1\n2 2:1\n")
    for flag in (np.True_, np.False_, True, 1):
        assert load_libsvm(f, zero_based=flag).n_samples == 2
    gz = _arff(tmp_path, "A", ["1,2,A\n"], name="g.arff")
    gz.with_suffix(".gz").write_bytes(gzip.compress(gz.read_bytes()))
    monkeypatch.setenv("HIERCVX_MAX_GZ_BYTES", "-1")
    with pytest.raises(InputError, match="HIERCVX_MAX_GZ_BYTES must be .* bytes >= 0"):
        load_arff(gz.with_suffix(".gz"))


@pytest.mark.parametrize("make, kwargs, match", [
    (make_cai_synthetic, {"branching": 1}, "branching must be an integer >= 2"),
    (make_cai_synthetic, {"min_labels": 1.5}, "min_labels must be an integer"),
    (make_cai_synthetic, {"max_batches": 0}, "max_batches must be an integer >= 1"),
    (make_cai_synthetic, {"max_batches": 1.5}, "max_batches must be an integer >= 1"),
    (make_cai_synthetic, {"variance_decay": float("inf")}, "variance_decay must be a finite"),
    (make_cai_synthetic, {"variance_decay": 1e-300}, "variance_decay=1e-300 makes"),
    (make_cai_synthetic, {"variances": [float("inf"), 1, 1]}, "finite positive"),
    (make_cai_synthetic, {"branching": 10, "depth": 7}, "lower branching or depth"),
    (make_cai_synthetic, {"random_state": -1}, "non-negative int.*RandomState"),
    (make_nhsvm_balanced, {"branching": 1}, "branching must be an integer >= 2"),
    (make_wang_example2, {"shift_fraction": "0.1"}, "shift_fraction must be a finite real"),
    (make_wang_example3, {"noise": None}, "noise must be a finite real"),
])
def test_generator_arguments_are_refused_each_by_name(make, kwargs, match):
    with pytest.raises(InputError, match=match):
        make(n_samples=5, **kwargs)


def test_cai_batches_stay_within_memory_for_many_classes():
    """10 000 classes: a batch of draws holds their scores, so it is sized by the classes
    too (at most 2**24 numbers); the generator gives up with its own error, not a
    MemoryError."""
    class Recording:
        def __init__(self):
            self.rng, self.rows = np.random.default_rng(0), []

        def standard_normal(self, size):
            self.rows.append(size[0])
            return self.rng.standard_normal(size)

    rng, Wc = Recording(), np.ones((10_000, 20))  # every score of a draw has one sign: none kept
    with pytest.raises(InputError) as info:
        synthetic._accepted_draws(rng, Wc, 5, (1, 100), 3)
    assert len(rng.rows) == 3 and max(rng.rows) * (20 + 10_000) <= 2**24
    assert "use a smaller tree (lower branching or depth), or raise max_batches" in str(info.value)


def test_the_bayes_rules_have_the_methods_the_module_promises():
    assert "has ``predict`` only" in " ".join(synthetic.__doc__.split())
    assert not hasattr(synthetic.CascadeBayesRule, "decision_function")
    assert hasattr(synthetic.LinearBayesRule, "decision_function")
    assert hasattr(synthetic.ProbabilisticBayesRule, "predict_proba")


def test_load_refuses_options_its_format_does_not_take(tmp_path):
    p = tmp_path / "t.arff"
    p.write_text("@RELATION t\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE class hierarchical A,A/B\n"
                 "@DATA\n1,A/B\n")
    with pytest.raises(InputError, match="takes no option 'hierarchy'; its options are "
                                         "dialect, nominal .an ARFF file names its own hierarchy"):
        load(p, hierarchy=None)
    with pytest.raises(InputError, match="takes no options 'foo', 'hierarchy'"):
        load(p, foo=1, hierarchy=2)
    assert load(p, dialect="paths").n_samples == 1
    h = tmp_path / "t.hier"
    h.write_text("1 2\n")
    with pytest.raises(InputError, match="lshtc loader takes no option 'dialect'; its options are root"):
        load(h, dialect="paths")


def test_arff_keyword_must_follow_the_at_sign(tmp_path):
    p = tmp_path / "t.arff"
    p.write_text("@RELATION t\n@ATTRIBUTE a NUMERIC\n@ATTRIBUTE class hierarchical A\n"
                 "@\x0cDATA\n1,A\n")
    with pytest.raises(DataFormatError, match="remove the blank after '@'") as e:
        load_arff(p)
    assert e.value.line == 4


def test_random_hierarchy_refuses_unhashable_names():
    from hiercvx.taxonomy import random_hierarchy
    with pytest.raises(InputError, match="root name must be hashable"):
        random_hierarchy((2, 2), 0, root=["r"])
    with pytest.raises(LabelError, match="class names must be hashable"):
        random_hierarchy((2, 2), 0, classes=[[1], [2]])


def test_metric_sample_weight_of_strings_is_refused():
    from hiercvx import metrics
    H = Hierarchy.from_parents({"r": None, "a": "r", "b": "r"})
    y = np.array(["a", "b", "a"])
    for w in (["1", "2", "3"], np.array(["1", "1", "1"])):
        with pytest.raises(InputError, match="sample_weight must be numbers .* not strings"):
            metrics.hierarchical_f1(y, y, hierarchy=H, sample_weight=w)
    assert metrics.hierarchical_f1(y, y, hierarchy=H, sample_weight=[True, False, True]) == 1.0


def test_C_times_a_sample_weight_beyond_the_penalty_limit_is_refused():
    X = np.random.default_rng(0).normal(size=(6, 2))
    y = ["a", "b", "c"] * 2
    for make in (E.HierarchicalSVC, E.TopDownSVC, E.MulticlassSVC):
        with pytest.raises(InputError, match=r"C times the largest sample_weight is 1e\+300.*"
                                             r"C \* max\(sample_weight\) <= 1e\+100"):
            make().fit(X, y, sample_weight=[1e300] * 6)
    E.HierarchicalSVC(C=1e-200).fit(X, y, sample_weight=[1e250] * 6)   # the product is what counts


@pytest.mark.parametrize("name", ["HierarchicalSVC", "HierarchicalPerceptron",
                                  "NormalizedHierarchicalSVC", "SharedNormSVC",
                                  "OrthogonalTransferSVC", "TopDownSVC", "SiblingMarginSVC",
                                  "SequentialHierarchicalSVC"])
def test_every_estimator_refuses_an_overflowing_intercept_scaling(name):
    """The bias feature's square counts in every squared norm: an intercept_scaling whose square
    overflows is refused at fit, naming it, by every estimator that appends a bias."""
    from hiercvx import estimators
    H = Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a",
                                "b1": "b", "b2": "b"})
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.array(["a1", "a2", "b1", "b2"])[np.arange(40) % 4]
    est = getattr(estimators, name)(hierarchy=H, fit_intercept=True, intercept_scaling=1e160)
    with pytest.raises(InputError, match="intercept_scaling"):
        est.fit(X, y)
