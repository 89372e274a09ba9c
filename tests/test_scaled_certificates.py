"""Certificates that mean what they say at every scale of X.

On separable data scaled by ``s`` the optimum is known in closed form: the weights scale by
``1 / s``, so where the hard margin is active (``C s^2`` past the largest multiplier) the
objective is ``hard_margin(X) / s^2``, ``hard_margin(X)`` the optimum at a ``C`` past it; for two
symmetric points of two classes (Crammer and Singer's SVM) the optimum is known for every
``C`` and ``s``.  Each reference's ``gap`` must be the relative gap
``(objective - lower_bound) / max(|objective|, |lower_bound|)``; an answer certified by it must
have the closed-form objective, and no certified answer may be beaten by a feasible point (the
fast solver's).  An answer certified only by the decrease from zero says so
(``converged_by``) and reports its true relative gap.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hiercvx import methods
from hiercvx.exceptions import SolverError
from hiercvx.formulations import multiclass as mc
from hiercvx.result import DECREASE_FROM_ZERO, RELATIVE_GAP, relative_gap

TOL = 1e-6


def _separable(method: str):
    """The registry's first quick case of ``method`` with tight clusters (centres 3 apart,
    spread 0.05): separable, the hard margin active at ``C = 1``."""
    case = methods.get(method).cases(True)[0]
    X = case.X.toarray() if hasattr(case.X, "toarray") else np.asarray(case.X, dtype=float)
    labels = [str(sorted(y)) if isinstance(y, (set, frozenset)) else str(y) for y in case.Y]
    rng = np.random.default_rng(0)
    distinct = sorted(set(labels))
    centres = 3.0 * rng.standard_normal((len(distinct), X.shape[1]))
    X = np.array([centres[distinct.index(v)] for v in labels]) + 0.05 * rng.standard_normal(X.shape)
    return case, X


def _reference(method: str, role: str, scale: float, weight: float = 1.0):
    """The reference on the separable data times ``scale``, ``C`` times ``weight`` (``lam``
    divided by it)."""
    case, X = _separable(method)
    params = {k: (v * weight if k == "C" else v / weight) for k, v in case.params.items()}
    scaled = methods.Case(case.name, case.structure, X * scale, case.Y, case.H,
                          case.model_options, params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return methods.get(method).build(role, scaled).solve(), scaled


def _fast(method: str, case):
    """The first fast solver's feasible point on ``case`` (its objective recomputed)."""
    m = methods.get(method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m.run_fast(next(iter(m.fast_solvers)), case)


def _check_honest(sol):
    """The gap is the relative gap; the test that certified is named and holds."""
    assert sol.gap == relative_gap(sol.objective, sol.lower_bound)
    assert sol.converged_by in (RELATIVE_GAP, DECREASE_FROM_ZERO)
    if sol.converged_by == RELATIVE_GAP:
        assert sol.gap <= TOL * (1 + 1e-6)
    else:
        at_zero = sol.extras["at_zero"]
        assert sol.objective - sol.lower_bound <= TOL * 1e-9 * at_zero * (1 + 1e-6)
    assert "relative gap" in sol.certificate()


# --------------------------------------------------------- two symmetric points, every scale
def _two_points_optimum(a: float, C: float) -> float:
    """Crammer--Singer on ``x_A = a e_1``, ``x_B = -a e_1``: by symmetry ``w_A = -w_B = u e_1``
    and the objective is ``u^2 + 2 C max(0, 1 - 2 u a)``: ``1 / (4 a^2)`` when ``4 C a^2 >= 1``
    (hard margin), else ``2 C - 4 C^2 a^2`` at ``u = 2 C a``."""
    return 1.0 / (4 * a * a) if 4 * C * a * a >= 1 else 2 * C - 4 * C * C * a * a


@pytest.mark.parametrize("role", ["primal", "dual"])
@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e6])
def test_two_symmetric_points_certify_the_closed_form(role, scale):
    X = np.array([[scale, 0.0], [-scale, 0.0]])
    y = np.array([0, 1])
    build = mc.primal if role == "primal" else mc.dual
    sol = build(X, y, C=1.0).solve()
    _check_honest(sol)
    assert sol.converged_by == RELATIVE_GAP
    assert sol.objective == pytest.approx(_two_points_optimum(scale, 1.0), rel=10 * TOL)


# ------------------------------------------------------- every family, scaled separable data
FAMILIES = [("multiclass", "primal"), ("multiclass", "dual"), ("hsvm", "primal"), ("hsvm", "dual"),
            ("sibling_svm", "primal"), ("sibling_svm", "dual"), ("orthogonal", "primal"),
            ("orthogonal", "dual"), ("nhsvm", "primal"), ("nhsvm", "dual")]


@pytest.fixture(scope="module")
def unscaled():
    """Each family's hard-margin optimum on the unscaled separable data (certified at ``C``
    times 1e3 and 1e4, which agree: the margin is hard)."""
    return {}


def _optimum(unscaled, method, role):
    """``hard_margin(X)``: ``1/2 ||W||^2`` terms at the hard margin (``lam ||W||^2`` for a
    ``lam`` form, whose objective at ``lam / w`` is that divided by ``w``)."""
    if (method, role) not in unscaled:
        per = 1.0 if "C" in methods.get(method).cases(True)[0].params else None
        big, _ = _reference(method, role, 1.0, 1e3)
        bigger, _ = _reference(method, role, 1.0, 1e4)
        assert big.converged_by == bigger.converged_by == RELATIVE_GAP
        values = (big.objective, bigger.objective) if per else (big.objective * 1e3,
                                                                 bigger.objective * 1e4)
        assert values[0] == pytest.approx(values[1], rel=10 * TOL)
        unscaled[(method, role)] = values[1]
    return unscaled[(method, role)]


def _check_scaled(unscaled, method, role, scale):
    sol, case = _reference(method, role, scale)
    _check_honest(sol)
    fast = _fast(method, case)
    # no certified answer is beaten by a feasible point: its objective is above the bound
    assert fast.objective >= sol.lower_bound - 1e-9 * abs(sol.lower_bound)
    if scale >= 1e6:
        optimum = _optimum(unscaled, method, role) / scale ** 2  # C s^2 >= 1e12: hard margin
        assert sol.lower_bound <= optimum * (1 + 10 * TOL)
        if sol.converged_by == RELATIVE_GAP:
            assert sol.objective == pytest.approx(optimum, rel=10 * TOL)
    return sol


@pytest.mark.parametrize("method, role", [("multiclass", "primal"), ("hsvm", "dual"),
                                          ("sibling_svm", "primal"), ("nhsvm", "dual")])
def test_scaled_up_references_certify_the_optimum(unscaled, method, role):
    """X * 1e6: certified by the relative gap at hard_margin(X) / 1e12 (the sibling-margin
    SVM's reference was 7% above the fast solver's point, "certified")."""
    sol = _check_scaled(unscaled, method, role, 1e6)
    assert sol.converged_by == RELATIVE_GAP


@pytest.mark.parametrize("method, role", [("multiclass", "primal"), ("hsvm", "dual"),
                                          ("sibling_svm", "primal"), ("nhsvm", "dual")])
def test_scaled_down_references_certify(unscaled, method, role):
    """X * 1e-6 (``C s^2`` tiny: the objective is almost its value at zero): certified by
    the relative gap, the decrease from zero reported beside it."""
    sol = _check_scaled(unscaled, method, role, 1e-6)
    assert sol.converged_by == RELATIVE_GAP
    assert np.isfinite(sol.gap_from_zero)


# the hsvm primal on X * 1e-6 is C s^2 = 1e-12 after rescaling: the decrease from W = 0 is a
# 1e-12 share of the objective, second order in C, and no conic solver certifies the share of
# it the tiny-C guard asks (1 - sqrt(tol)); the reference raises SolverError (the dual, whose
# multipliers carry that decrease to first order, certifies: test_scaled_down_references_certify)
_TINY_C_PRIMAL = pytest.mark.xfail(raises=SolverError, strict=True,
                                   reason="hsvm primal at C s^2 = 1e-12: decrease from zero below "
                                          "what a conic solver certifies")


def _family_cases():
    for scale in (1e-6, 1e6, 1e8):
        for method, role in FAMILIES:
            marks = [_TINY_C_PRIMAL] if (method, role, scale) == ("hsvm", "primal", 1e-6) else []
            yield pytest.param(method, role, scale, marks=marks, id=f"{method}-{role}-{scale:g}")


@pytest.mark.slow
@pytest.mark.parametrize("method, role, scale", list(_family_cases()))
def test_every_family_at_every_scale(unscaled, method, role, scale):
    """Every family: certified by the relative gap, never beaten by a feasible point, at the
    closed form where the margin is hard (the orthogonal dual, an SDP whose multipliers do not
    scale by one power of ``s``, is not rebuilt: scaled up it raises ``SolverError``)."""
    try:
        sol = _check_scaled(unscaled, method, role, scale)
    except SolverError as exc:
        if (method, role, scale) == ("hsvm", "primal", 1e-6):
            raise
        assert (method, role) == ("orthogonal", "dual") and scale > 1
        assert exc.gap is None or not exc.gap <= TOL
        return
    assert sol.converged_by == RELATIVE_GAP


@pytest.mark.parametrize("C", [1e18, 1e20])
def test_reference_at_a_huge_C_never_passes_a_relative_gap_over_tol_silently(C):
    """Nearly hard-margin at a C far beyond a conic solver's precision: the reference either
    raises, or its answer (certified by the decrease from zero only) comes with a
    ConvergenceWarning naming its relative gap; never a gap over tol in silence."""
    from sklearn.exceptions import ConvergenceWarning

    from hiercvx import Hierarchy
    from hiercvx.estimators import HierarchicalSVC

    H = Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                "B1": "B", "B2": "B"})
    leaves = ["A1", "A2", "B1", "B2"]
    rng = np.random.default_rng(0)
    y = np.array([leaves[i % 4] for i in range(32)])
    X = 3 * rng.normal(size=(4, 3))[np.arange(32) % 4] + rng.normal(size=(32, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est = HierarchicalSVC(hierarchy=H, solver="reference", tol=TOL, C=C).fit(X, y)
        except SolverError:
            return
    if est.gap_ > TOL:
        assert est.result_.converged_by == DECREASE_FROM_ZERO
        said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert any("certified only by the decrease from zero" in m and "relative gap" in m
                   for m in said), said
