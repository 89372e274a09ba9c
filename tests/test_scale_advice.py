"""Features in raw units: a fit that cannot finish says why and what to do (standardize X or
rescale C), and a stalled gap is not answered with 'raise max_iter'."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from hiercvx import methods
from hiercvx.estimators import HierarchicalSVC, MulticlassSVC, NormalizedHierarchicalSVC
from hiercvx.methods._scale import scale_advice
from hiercvx.methods.cases import problem
from hiercvx.exceptions import InputError
from hiercvx.result import Solution

X, Y, H = problem("tree", n=40, d=4, seed=0)


@pytest.mark.parametrize("make", [lambda: MulticlassSVC(), lambda: HierarchicalSVC(hierarchy=H),
                                  lambda: NormalizedHierarchicalSVC(hierarchy=H)],
                         ids=["MulticlassSVC", "HierarchicalSVC", "NormalizedHierarchicalSVC"])
def test_raw_unit_features_converge_or_say_to_standardize(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = make().fit(X * 1e6, Y)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    if messages:  # did not finish: the warning names the scale and the fix
        assert any("badly scaled" in m and "StandardScaler" in m for m in messages), messages
    else:
        assert est.gap_ <= 1e-5


def test_no_advice_on_standardized_data():
    model = methods.get("hsvm").prepare(X, Y, H)
    assert scale_advice(model, {"C": 1.0}) == ""
    assert "badly scaled" in scale_advice(methods.get("hsvm").prepare(X * 1e6, Y, H), {"C": 1.0})
    assert scale_advice(model, {"C": 1e12}) != ""
    assert scale_advice(model, {"C": 1e12}, limit=1e20) == ""


def test_a_stalled_gap_does_not_advise_more_iterations():
    history = {"gap": [0.5] * 8, "n_iter": list(range(8))}
    sol = Solution(objective=1.0, lower_bound=0.5, weights=np.zeros(2), tol=1e-6, n_iter=8,
                   history=history, converged=False, name="stalled")
    with pytest.warns(ConvergenceWarning) as record:
        sol.warn_unless_converged()
    text = str(record[0].message)
    assert "has not decreased" in text and "raise max_iter" not in text


# ---------------------------------------------------------------------- every estimator at X x 1e6
import inspect  # noqa: E402

import hiercvx.estimators as E  # noqa: E402
from hiercvx.solvers import shared_norm  # noqa: E402

#: every scikit-learn classifier the package exports
ESTIMATORS = sorted(name for name in E.__all__ if inspect.isclass(getattr(E, name))
                    and hasattr(getattr(E, name), "fit") and hasattr(getattr(E, name), "predict"))
FLAT = ("MulticlassSVC", "AdaBoostMH")
#: what bounds each fast fit on raw-unit features (an iteration budget, never a clock)
BUDGETS = {"OrthogonalTransferSVC": {"max_iter": 300},
           "SharedNormSVC": {"max_iter": 30,
                             "solver_options": shared_norm.Options(inner_max_iter=100)}}


def _make(name, **params):
    cls = getattr(E, name)
    known = cls().get_params()
    kwargs = {k: v for k, v in {**BUDGETS.get(name, {}), **params}.items() if k in known}
    if "hierarchy" in known and name not in FLAT:
        kwargs["hierarchy"] = H
    return cls(**kwargs)


def _fit(est, X_fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X_fit, Y)
    return est, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


def test_the_scale_matrix_covers_every_estimator():
    assert {"HierarchicalSVC", "MulticlassSVC", "SharedNormSVC", "NormalizedHierarchicalSVC",
            "OrthogonalTransferSVC", "SiblingMarginSVC", "AdaBoostMH"} <= set(ESTIMATORS)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_estimator_at_raw_unit_scale_reaches_the_reference_or_says_to_standardize(name):
    """``X x 1e6`` at ``C = 1``: the fast fit returns (its budget is iterations) with the
    reference's objective, or with a ConvergenceWarning that names the scale and the fix;
    estimators without an objective (perceptron, boosting) still fit and predict the labels."""
    X_raw = X * 1e6
    est, messages = _fit(_make(name), X_raw)
    predicted = est.predict(X_raw)
    assert len(predicted) == len(Y) and set(map(str, predicted)) <= set(map(str, Y)) | set(H.nodes)
    if messages:
        assert any("badly scaled" in m and "StandardScaler" in m for m in messages), messages
        assert not any("raise max_iter" in m for m in messages), messages
        return
    if "solver" not in est.get_params() or getattr(est, "objective_", None) is None:
        return  # nothing to compare: no reference (perceptron, boosting) or no single objective
    ref, ref_messages = _fit(_make(name, solver="reference"), X_raw)
    assert not ref_messages
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-4, abs=1e-9)


def test_shared_norm_alternation_stops_when_the_gap_stalls():
    """Raw-unit features: no weight step finishes and the gap does not move, so the alternation
    stops after stall_alternations of them, however large max_iter, and says so with the
    advice."""
    registered = methods.get("shared_norm")
    model = registered.prepare(X * 1e6, Y, H)
    options = shared_norm.Options(inner_max_iter=20, stall_alternations=3)
    with pytest.warns(ConvergenceWarning) as record:
        res = registered.fast_solvers["alternating"].solve(model, 0.5, max_iter=1000,
                                                           options=options)
    assert not res.converged and res.n_iter <= 3 + 1
    text = " ".join(str(w.message) for w in record)
    assert "has not decreased" in text and "badly scaled" in text and "raise max_iter" not in text
    # on standardized data the rule never fires before convergence
    res = shared_norm.solve(registered.prepare(X, Y, H), 0.5, options=options)
    assert res.converged


def test_stall_alternations_is_checked():
    with pytest.raises(InputError, match="stall_alternations"):
        shared_norm.solve(methods.get("shared_norm").prepare(X, Y, H), 0.5,
                          options=shared_norm.Options(stall_alternations=0))


def test_orthogonal_transfer_ascent_stops_when_the_gap_stalls():
    """Raw-unit features: the certified gap of orthogonal transfer's coordinate ascent does not
    move, so it stops after about stall_window passes, far below max_iter, and says so with the
    advice; on standardized data the rule does not fire (same passes as without it)."""
    from hiercvx.solvers import orthogonal_dual

    registered = methods.get("orthogonal")
    options = orthogonal_dual.Options(stall_window=50)
    model = registered.prepare(X * 1e6, Y, H, fit_intercept=True)
    with pytest.warns(ConvergenceWarning) as record:
        res = registered.fast_solvers["dual_cd"].solve(model, 40.0, options=options)
    assert not res.converged and res.n_iter < options.max_iter
    assert res.extras["route"] == "coordinate" and res.n_iter <= 2 * options.stall_window
    text = " ".join(str(w.message) for w in record)
    assert "has not decreased" in text and "badly scaled" in text and "raise max_iter" not in text
    model = registered.prepare(X, Y, H, fit_intercept=True)
    res = orthogonal_dual.solve(model, 40.0, options=options)
    without = orthogonal_dual.solve(model, 40.0, options=orthogonal_dual.Options(
        stall_window=options.max_iter))
    assert res.converged and res.n_iter == without.n_iter and res.objective == without.objective


def test_stall_window_is_checked():
    from hiercvx.solvers import orthogonal_dual

    with pytest.raises(InputError, match="stall_window"):
        orthogonal_dual.Options(stall_window=0)
