"""What ``check_solver`` and the plain assertions make of the certificate a result carries
(lower bound, status, converged), of a nonconvex method's local reference (HPSI's DC fixed
point), of intercepts on models without one, of failures that change kind when shrunk, and of
options the certified reference cannot take."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest

from hiercvx.exceptions import InputError
from hiercvx.result import Solution
from hiercvx.testing import (Problem, SolverCheckError, assert_same_optimum, check_solver,
                             objective, problems_for)
from hiercvx.testing.bugs import answer_of
from hiercvx.testing.check import run_one
from hiercvx.testing.diagnose import diagnose
from hiercvx.testing.diagnostics import read_result


@pytest.fixture(scope="module")
def flat():
    """The multiclass problem on flat data, its reference solved once."""
    p = problems_for("multiclass", structures=["flat"], probes=False)[0]
    p.reference()
    return p


def _reference_fit(p, transform):
    def fit(X, Y, H, **opts):
        return transform(p.reference())
    return fit


# ------------------------------------------------------------------ the user's certificate
def test_a_false_certificate_fails(flat):
    """Optimal weights with a bound ten times the objective and status 'infeasible' fail, each
    claim named with its numbers."""
    fit = _reference_fit(flat, lambda s: dataclasses.replace(s, lower_bound=10 * s.objective,
                                                             status="infeasible"))
    out = run_one(fit, flat)
    assert not out.ok
    text = "\n".join(out.reasons)
    assert "status 'infeasible'" in text
    assert "exceeds its own objective" in text and "exceeds the certified optimum" in text
    assert f"{10 * flat.reference().objective:.10g}" in text


def test_a_bound_above_the_optimum_fails_within_rtol(flat):
    """Weights whose objective excess is under rtol, with a bound equal to that objective:
    the bound lies above the certified optimum, which no lower bound can."""
    W = {k: 0.99995 * v for k, v in answer_of(flat.reference()).items()}
    f = objective("multiclass", W, flat.X, flat.Y, flat.H, **flat.options)
    assert f > flat.reference().objective
    result = {**W, "objective": f, "lower_bound": f, "status": "optimal"}
    out = run_one(lambda X, Y, H, **o: result, flat, weight_rtol=1e-2)
    assert out.kinds == ["certificate"], out.reasons
    assert "exceeds the certified optimum" in out.reasons[0]


def test_a_true_certificate_passes(flat):
    ref = flat.reference()
    assert run_one(lambda X, Y, H, **o: ref, flat).ok
    loose = {**answer_of(ref), "lower_bound": -math.inf, "status": "Optimal", "converged": np.True_}
    assert run_one(lambda X, Y, H, **o: loose, flat).ok


@pytest.mark.parametrize("flag", ["False", np.array([False]), 0])
def test_converged_must_be_a_bool(flat, flag):
    result = {**answer_of(flat.reference()), "converged": flag}
    out = run_one(lambda X, Y, H, **o: result, flat)
    assert out.kinds == ["unreadable"] and "converged must be True or False" in out.reasons[0]
    with pytest.raises(InputError, match="converged must be True or False"):
        read_result(result)


def test_no_weights_and_no_objective_fails(flat):
    class Gave:                     # a user's own result type: the solver gave up
        objective = None
        weights = None

    with pytest.raises(SolverCheckError, match="fit returned no weights and no objective"):
        check_solver(lambda X, Y, H, **o: Gave(), "multiclass", problems=[flat])


# ------------------------------------------------------------------ assert_same_optimum
def test_same_optimum_needs_finite_tight_bounds(flat):
    ref = flat.reference()
    with pytest.raises(AssertionError, match="optima differ"):
        assert_same_optimum(Solution(objective=10 * ref.objective, lower_bound=-np.inf), ref)
    with pytest.raises(AssertionError, match="own gap .* is over the tolerance"):
        assert_same_optimum(Solution(objective=10 * ref.objective, lower_bound=0.0), ref)
    with pytest.raises(AssertionError, match="weak duality fails"):
        assert_same_optimum(Solution(objective=ref.objective * 2, lower_bound=ref.objective * 2),
                            ref)
    assert_same_optimum(ref, ref.objective)
    assert_same_optimum(Solution(objective=ref.objective, lower_bound=-np.inf), ref)


# ------------------------------------------------------------------ a nonconvex method
def test_a_better_point_than_the_dc_fixed_point_passes():
    """HPSI's reference is a DC fixed point: a point of lower psi cost is a better answer, not
    "below the certified lower bound", and no neighbour is called optimal."""
    p = problems_for("hpsi", structures=["flat"], probes=False)[0]
    better = answer_of(p.variant({}, {"C": 0.5 * p.params["C"]}).reference())
    mine = p.model().objective(better["weights"], **p.params, biases=better["biases"])
    assert mine < p.reference().objective * (1 - 1e-3)
    assert check_solver(lambda X, Y, H, **o: better, "hpsi", problems=[p])[0].ok
    assert diagnose(p, read_result(better), 1e-4, 1e-3) == []
    worse = {"weights": 0.5 * better["weights"], "biases": better["biases"]}
    with pytest.raises(SolverCheckError) as info:
        check_solver(lambda X, Y, H, **o: worse, "hpsi", problems=[p], shrink_failures=False)
    text = str(info.value)
    assert "above the reference's DC fixed point" in text
    assert "certified lower bound" not in text and "optimal for" not in text
    assert "diagnosis" not in text


# ------------------------------------------------------------------ intercepts without a model bias
@pytest.mark.parametrize("method", ["multiclass", "hsvm", "nhsvm", "shared_norm"])
def test_an_intercept_on_a_model_without_one_is_refused(method):
    p = problems_for(method, structures=["tree"] if method != "multiclass" else ["flat"],
                     probes=False)[0]
    assert not p.model_options.get("fit_intercept")
    answer = answer_of(p.reference())
    rows = np.shape(answer["weights"])[0]
    user = {**answer, "intercept": np.arange(rows) * 1000.0}
    out = run_one(lambda X, Y, H, **o: user, p)
    assert not out.ok and "has no intercept" in out.reasons[0], out.reasons
    zeros = {**answer, "intercept": np.zeros(rows)}
    assert run_one(lambda X, Y, H, **o: zeros, p).ok


# ------------------------------------------------------------------ shrinking
def test_the_smallest_variant_fails_the_same_way():
    """A fit whose bug is ignoring sample_weight and which refuses data where a leaf has no
    sample: the smallest failing variant shown is one where the bug shows, not the refusal."""
    def fit(X, Y, H, C=1.0, sample_weight=None, **options):
        missing = set(H.leaves) - set(np.asarray(Y, dtype=object).tolist())
        if missing:
            raise ValueError(f"every leaf needs a training sample; {sorted(missing)} have none")
        return answer_of(Problem.from_arrays("hsvm", X, Y, H, C=C, **options).reference())

    probe = [p for p in problems_for("hsvm", structures=["tree"]) if "sample_weight" in p.model_options]
    with pytest.raises(SolverCheckError) as info:
        check_solver(fit, "hsvm", problems=probe[:1])
    text = str(info.value)
    assert "fit raised" not in text
    if "smallest failing variant" in text:
        assert "relative difference" in text.split("smallest failing variant")[1]


# ------------------------------------------------------------------ options the reference refuses
def test_an_option_the_primal_reference_cannot_take_is_refused():
    with pytest.raises(InputError, match=r"does not take kernel, sigma.*'dual' reference takes them"):
        problems_for("hsvm", structures=["tree"], kernel="rbf", sigma=1.0)
    p = problems_for("multiclass", structures=["flat"], probes=False)[0]
    q = Problem.from_arrays("multiclass", p.X, p.Y, kernel="rbf", sigma=1.0)
    with pytest.raises(InputError, match="primal reference.*does not take kernel"):
        check_solver(lambda X, Y, H, **o: None, "multiclass", problems=[q])


# ------------------------------------------------------------------ strategies and inference answers
def test_hierarchies_applies_shared_keywords_to_dags():
    from hypothesis import given, settings

    from hiercvx.testing.strategies import hierarchies

    seen = set()

    @settings(max_examples=60, database=None, derandomize=True)
    @given(hierarchies(max_nodes=4, name_style="str"))
    def drawn(H):
        seen.add(H.is_tree)
        real = [v for v in H.nodes if v != H.root] if len(H.nodes) > 4 else H.nodes
        assert len(real) <= 4 and all(isinstance(v, str) for v in H.nodes)

    drawn()
    assert seen == {True, False}


def test_check_inference_reads_nested_01_lists():
    from hiercvx import inference
    from hiercvx.testing import check_inference

    def exact(S, H, loss=None, true_indicator=None):
        return inference.best_label_set(S, H, "dp" if H.is_tree else "enumerate", loss=loss,
                                        true_indicator=true_indicator)
    assert check_inference(lambda S, H, **kw: exact(S, H, **kw).astype(int).tolist())
