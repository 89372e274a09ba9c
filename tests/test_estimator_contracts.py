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


# ---------------------------------------------------------------- the docstrings' sections


def _doc_sections(cls) -> dict:
    """``{header: [lines]}`` of a numpydoc class docstring (a header is a line underlined
    with dashes); the lines keep their indentation relative to the docstring."""
    import inspect
    lines = inspect.getdoc(cls).splitlines()
    out, current = {}, None
    for i, line in enumerate(lines):
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if underline and line.strip() and not line.startswith(" "):
            current = out.setdefault(line.strip(), [])
        elif current is not None and set(line.strip()) != {"-"}:
            current.append(line)
    return out


def _documented_names(cls, section: str) -> list:
    """The names a section documents, in order: each unindented line opens an entry, the names
    before its ``" : "`` (several on one line, ``"a, b : ..."``); an unindented line without one
    is a name alone (``"n_iter_"``), so a paragraph of prose shows up as unknown names."""
    names = []
    for line in _doc_sections(cls).get(section, []):
        if not line.strip() or line.startswith(" "):
            continue
        head = line.split(" : ", 1)[0] if " : " in line else line.rstrip(" :")
        names += [name.strip() for name in head.split(",")]
    return names


def _estimator_classes():
    import inspect

    from sklearn.base import BaseEstimator

    from hiercvx import estimators
    return [getattr(estimators, name) for name in estimators.__all__
            if inspect.isclass(getattr(estimators, name))
            and issubclass(getattr(estimators, name), BaseEstimator)]


def _fitted(cls):
    from hiercvx.estimators import AdaBoostMH
    X, y = _data(24)
    if cls is MulticlassSVC:
        return cls().fit(X, y)
    if cls is AdaBoostMH:
        return cls(n_rounds=3).fit(X, y)
    return cls(hierarchy=H).fit(X, y)


@pytest.mark.parametrize("cls", _estimator_classes(), ids=lambda cls: cls.__name__)
def test_docstring_documents_every_parameter_in_signature_order(cls):
    """The Parameters section lists exactly the parameters of ``__init__``, in their order."""
    import inspect
    signature = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    documented = _documented_names(cls, "Parameters")
    assert documented == signature, (cls.__name__, documented, signature)


@pytest.mark.parametrize("cls", _estimator_classes(), ids=lambda cls: cls.__name__)
def test_docstring_documents_every_fitted_attribute(cls):
    """Every public attribute ending in ``_`` that ``fit`` sets (n_features_in_ and, for named
    columns, feature_names_in_ included) is an entry of the Attributes section, and every entry
    there is an attribute of the fitted estimator (or of its class)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _fitted(cls)
    fitted = {name for name in vars(est) if name.endswith("_") and not name.startswith("_")}
    documented = _documented_names(cls, "Attributes")
    assert "n_features_in_" in documented and "feature_names_in_" in documented, cls.__name__
    assert not fitted - set(documented), (cls.__name__, sorted(fitted - set(documented)))
    unknown = [name for name in documented
               if name != "feature_names_in_" and not hasattr(est, name)]
    assert not unknown, (cls.__name__, unknown)


def test_multiclass_svc_coef_holds_one_weight_vector_per_class():
    """scikit-learn's contract (``LinearSVC(multi_class="crammer_singer")``): ``coef_`` is
    ``(n_classes, n_features)``, ``intercept_`` ``(n_classes,)`` and the decision function is
    ``X @ coef_.T + intercept_``, on both routes and for label sets."""
    X, y = _data(30)
    n_classes = len(set(y))
    for est in (MulticlassSVC().fit(X, y), MulticlassSVC(solver="reference").fit(X, y),
                MulticlassSVC(fit_intercept=False).fit(X, y)):
        assert est.coef_.shape == (n_classes, X.shape[1])
        assert est.intercept_.shape == (n_classes,)
        np.testing.assert_allclose(est.decision_function(X), X @ est.coef_.T + est.intercept_,
                                   rtol=1e-10, atol=1e-10)
    sets = [{v} if i % 3 else {v, "B1" if v != "B1" else "A1"} for i, v in enumerate(y)]
    multi = MulticlassSVC().fit(X, sets)
    assert multi.coef_.shape == (len(multi.classes_), X.shape[1])
    np.testing.assert_allclose(multi.decision_function(X), X @ multi.coef_.T + multi.intercept_,
                               rtol=1e-10, atol=1e-10)
