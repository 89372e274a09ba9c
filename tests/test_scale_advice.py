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
    assert scale_advice(model, {"C": 1e12}) != "" and scale_advice(model, {"C": 1e12}, limit=1e20) == ""


def test_a_stalled_gap_does_not_advise_more_iterations():
    history = {"gap": [0.5] * 8, "n_iter": list(range(8))}
    sol = Solution(objective=1.0, lower_bound=0.5, weights=np.zeros(2), tol=1e-6, n_iter=8,
                   history=history, converged=False, name="stalled")
    with pytest.warns(ConvergenceWarning) as record:
        sol.warn_unless_converged()
    text = str(record[0].message)
    assert "has not decreased" in text and "raise max_iter" not in text
