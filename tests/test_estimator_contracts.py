"""Estimator contracts across the family: ``tol`` certifies both routes (with
``solver="reference"`` it is the certificate's ``gap_tol``, which ``solver_options={"gap_tol":
...}`` overrides; with ``solver="fast"`` it is where the solver stops), ``warm_start`` means
what it says, and an estimator's errors name the estimator the user fitted."""

import numpy as np
import pytest

import hiercvx as hc
from hiercvx.estimators import (HierarchicalPsiClassifier, HierarchicalSVC, MulticlassSVC,
                                NormalizedHierarchicalSVC, OrthogonalTransferSVC, SharedNormSVC,
                                SiblingMarginSVC)

H = hc.Hierarchy.from_parents({"r": None, "A": "r", "A1": "A", "A2": "A", "B": "r",
                               "B1": "B", "B2": "B"})


def _data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    y = np.array([leaves[i % len(leaves)] for i in range(n)], dtype=object)
    centres = rng.normal(scale=2.0, size=(len(leaves), 3))
    X = centres[[leaves.index(v) for v in y]] + rng.standard_normal((n, 3))
    return X, y


ESTIMATORS = [
    lambda **kw: HierarchicalSVC(hierarchy=H, **kw),
    lambda **kw: MulticlassSVC(**kw),
    lambda **kw: NormalizedHierarchicalSVC(hierarchy=H, **kw),
    lambda **kw: SharedNormSVC(hierarchy=H, **kw),
    lambda **kw: OrthogonalTransferSVC(hierarchy=H, method="flatmult", **kw),
    lambda **kw: SiblingMarginSVC(hierarchy=H, **kw),
]
IDS = ["HierarchicalSVC", "MulticlassSVC", "NormalizedHierarchicalSVC", "SharedNormSVC",
       "OrthogonalTransferSVC", "SiblingMarginSVC"]


@pytest.mark.parametrize("make", ESTIMATORS, ids=IDS)
def test_reference_route_certifies_at_tol(make):
    X, y = _data()
    loose = make(solver="reference", tol=3e-3).fit(X, y)
    assert loose.result_.tol == pytest.approx(3e-3)
    assert loose.gap_ <= 3e-3
    override = make(solver="reference", tol=3e-3, solver_options={"gap_tol": 2e-4}).fit(X, y)
    assert override.result_.tol == pytest.approx(2e-4)
    assert override.gap_ <= 2e-4


@pytest.mark.parametrize("make", ESTIMATORS + [
    lambda **kw: HierarchicalPsiClassifier(hierarchy=H, **kw),
    lambda **kw: NormalizedHierarchicalSVC(hierarchy=H, **kw),
], ids=IDS + ["HierarchicalPsiClassifier", "NormalizedHierarchicalSVC-label-sets"])
def test_reference_too_large_names_the_estimators_way_to_raise_the_limit(make, request):
    """A reference over the size limit is refused with the fix the estimator takes:
    ``solver_options={"max_size": N}`` (the builders' keyword ``max_size`` is not an
    estimator setting, and in ``solver_options`` beside no such key it would reach the conic
    solver as an unknown setting); with that fix the same fit runs."""
    X, y = _data()
    if "label-sets" in request.node.callspec.id:
        y = [{v} if i % 3 else {v, "B1" if v != "B1" else "A1"} for i, v in enumerate(y)]
    with pytest.raises(hc.ProblemTooLargeError) as err:
        make(solver="reference", solver_options={"max_size": 10}).fit(X, y)
    message = str(err.value)
    assert "(solver='reference')" in message and "pass max_size=" not in message
    advised = int(message.split("solver_options={'max_size': ")[1].split("}")[0])
    assert advised == err.value.size > 10
    # the advice admits the fit itself (the cutting-plane master's: every master of its loop)
    est = make(solver="reference", solver_options={"max_size": advised}).fit(X, y)
    assert est.gap_ <= est.tol


def test_multilabel_nhsvm_reference_certifies_at_tol():
    X, y = _data(18)
    sets = [{v} if i % 3 else {v, "B1" if v != "B1" else "A1"} for i, v in enumerate(y)]
    est = NormalizedHierarchicalSVC(hierarchy=H, solver="reference", tol=2e-3).fit(X, sets)
    assert est.multilabel_   # the cutting-plane reference over label sets
    assert est.result_.tol == pytest.approx(2e-3) and est.gap_ <= 2e-3


def test_topdown_warm_start_refits_the_node_svms_from_their_duals():
    """``TopDownSVC(solver_options={"warm_start": True})`` keeps its node SVMs across fits:
    along a C path each starts from its previous dual and reaches the cold fit's optimum."""
    from hiercvx.estimators import TopDownSVC
    X, y = _data(40)
    warm = TopDownSVC(hierarchy=H, C=0.5, solver_options={"warm_start": True}).fit(X, y)
    first = {v: id(est) for v, est in warm.estimators_.items()}
    warm.set_params(C=2.0).fit(X, y)
    cold = TopDownSVC(hierarchy=H, C=2.0).fit(X, y)
    assert {v: id(est) for v, est in warm.estimators_.items()} == first
    for v, est in warm.estimators_.items():
        assert est.C == 2.0
        ref = cold.estimators_[v]
        assert abs(est.objective_ - ref.objective_) <= (est.gap_ + ref.gap_) * ref.objective_
    assert np.array_equal(warm.predict(X), cold.predict(X))


def test_sequential_svm_errors_name_it():
    """SequentialHierarchicalSVC trains through SiblingMarginSVC; its refusals still name it."""
    from hiercvx.estimators import SequentialHierarchicalSVC
    X, y = _data(12)
    sets = [{v, "A1"} if v != "A1" else {v} for v in y]
    with pytest.raises(ValueError, match="^SequentialHierarchicalSVC is single-label"):
        SequentialHierarchicalSVC(hierarchy=H).fit(X, sets)
    X[0, 0] = np.nan
    with pytest.raises(ValueError) as info:
        SequentialHierarchicalSVC(hierarchy=H).fit(X, y)
    assert "SiblingMarginSVC" not in str(info.value) and "SimpleImputer" in str(info.value)


def test_the_estimators_named_for_label_sets_take_them():
    """A single-label estimator's refusal names MULTILABEL_ESTIMATORS: each of them fits label
    sets."""
    from hiercvx import estimators
    from hiercvx.estimators._labels import MULTILABEL_ESTIMATORS
    X, y = _data(18)
    sets = [{v} if i % 3 else {v, "B1" if v != "B1" else "A1"} for i, v in enumerate(y)]
    for name in MULTILABEL_ESTIMATORS:
        est = getattr(estimators, name)(hierarchy=H).fit(X, sets)
        predicted = est.predict(X[:3])
        assert len(predicted) == 3, name


def test_nhsvm_on_label_sets_prints_its_passes_like_every_solver(capsys):
    """``verbose=True`` prints one line per pass with the certified gap (as the margin solvers
    print theirs); without it the fit is silent."""
    X, y = _data(18)
    sets = [{v} if i % 3 else {v, "B1" if v != "B1" else "A1"} for i, v in enumerate(y)]
    NormalizedHierarchicalSVC(hierarchy=H, verbose=True).fit(X, sets)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if " pass " in line]
    assert lines and all("gap" in line and line.startswith("[") for line in lines)
    NormalizedHierarchicalSVC(hierarchy=H).fit(X, sets)
    assert capsys.readouterr().err == ""
