"""Checks for test suites (ours and our users'): references against independent routes,
fast solvers against references.  Plain functions raising ``AssertionError``.

Objects accepted as "a solution": a :class:`~hiercvx.result.Solution` (what references and
fast solvers return; ``ReferenceSolution`` is another name of it) or a plain
float objective (taken as exact: its lower bound is itself).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive
from ..exceptions import InputError, InputTypeError
from ..reference import installed_solvers
from ..result import comparison_scale

__all__ = [
    "assert_bounds_bracket",
    "assert_certified",
    "assert_fast_matches_reference",
    "assert_same_optimum",
    "check_gradient",
    "fast_vs_reference",
    "solve_with_each",
]


def _number(value, what: str) -> float:
    """``value`` as a float, or the package's error saying what was expected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise InputTypeError(f"{what} must be a number (or a hiercvx Solution carrying it), got "
                             f"{type(value).__name__} {value!r}")
    return float(value)


def _objective(sol) -> float:
    return _number(getattr(sol, "objective", sol), "a solution's objective")


def _lower_bound(sol) -> float:
    return _number(getattr(sol, "lower_bound", _objective(sol)), "a solution's lower bound")


_scale = comparison_scale  # the largest magnitude: a comparison means the same at every scale


def assert_certified(sol, gap_tol: float = 1e-6) -> None:
    """Finite objective and bound, bound below objective (up to rounding), gap within tol.

    ``sol`` must carry a certificate (a :class:`~hiercvx.result.Solution`)."""
    if not (hasattr(sol, "objective") and hasattr(sol, "lower_bound")):
        raise InputTypeError(f"sol must carry a certificate (objective and lower_bound, as a "
                             f"hiercvx Solution does), got {type(sol).__name__}")
    gap_tol = check_positive(gap_tol, "gap_tol")
    obj, lb = _objective(sol), _lower_bound(sol)
    assert np.isfinite(obj) and np.isfinite(lb), f"non-finite certificate: objective {obj}, bound {lb}"
    assert lb <= obj + 1e-9 * _scale(obj), f"lower bound {lb!r} exceeds objective {obj!r}"
    gap = (obj - lb) / _scale(obj)
    assert gap <= gap_tol, f"gap {gap:.3e} over {gap_tol:g}"


def assert_same_optimum(a, b, rtol: float = 1e-6) -> None:
    """Two routes (primal/dual, two solvers, two formulations) reach the same optimal value.

    The objectives must agree within ``rtol`` relative to the larger magnitude.  A side that
    carries a finite ``lower_bound`` (a certificate, as a :class:`~hiercvx.result.Solution`
    does) must also have its own gap ``objective - lower_bound`` within ``rtol`` of that scale,
    and its bound must lie below the other side's objective (weak duality across the routes,
    up to ``rtol``).  A plain float, or a bound of ``-inf`` (a solver stopped before its first
    certified step), certifies nothing: that side is compared by its objective alone.
    """
    rtol = check_positive(rtol, "rtol")
    fa, fb = _objective(a), _objective(b)
    assert np.isfinite(fa) and np.isfinite(fb), f"non-finite objective: {fa!r} vs {fb!r}"
    tol = rtol * _scale(fa, fb)
    for name, s, f_own, f_other in (("first", a, fa, fb), ("second", b, fb, fa)):
        if not hasattr(s, "lower_bound"):
            continue
        lb = _lower_bound(s)
        assert not np.isnan(lb), f"the {name} solution's lower bound is nan, not a number"
        if not np.isfinite(lb):
            assert lb < 0, f"the {name} solution's lower bound is {lb!r}: no bound is +inf"
            continue
        assert f_own - lb <= tol, (f"the {name} solution's own gap {f_own - lb:.3e} (objective "
                                   f"{f_own!r}, lower bound {lb!r}) is over the tolerance {tol:.3e} "
                                   f"(rtol {rtol:g}): it does not certify its optimum to rtol")
        assert lb <= f_other + tol, (f"the {name} solution's lower bound {lb!r} exceeds the other's "
                                     f"objective {f_other!r} by {lb - f_other:.3e} (> {tol:.3e}): "
                                     "weak duality fails, so they are not the same problem")
    assert abs(fa - fb) <= tol, (f"optima differ: {fa!r} vs {fb!r} (|diff| {abs(fa - fb):.3e} > "
                                 f"{tol:.3e}, rtol {rtol:g})")


def fast_vs_reference(fast, ref, rtol: float = 1e-6) -> str:
    """Why a fast solver's answer disagrees with its certified reference ("" when it agrees).

    * the fast solver converged (when it says so: a plain float objective is taken as is);
    * its objective is within ``rtol`` (relative) of the reference optimum, allowing for the
      reference's own gap;
    * weak duality across the two: each lower bound is below the other's objective.
    """
    rtol = check_positive(rtol, "rtol")
    f_obj, r_obj, r_lb = _objective(fast), _objective(ref), _lower_bound(ref)
    if not getattr(fast, "converged", True):
        return f"the fast solver did not converge: {fast}"
    scale = _scale(f_obj, r_obj)
    tol = rtol * scale
    if not abs(f_obj - r_obj) <= tol + abs(r_obj - r_lb):
        return (f"fast objective {f_obj!r} vs reference {r_obj!r}: relative difference "
                f"{abs(f_obj - r_obj) / scale:.3e} > {rtol:g}")
    if hasattr(fast, "lower_bound") and not float(fast.lower_bound) <= r_obj + tol:
        return f"fast lower bound {fast.lower_bound!r} exceeds the reference optimum {r_obj!r}"
    if not r_lb <= f_obj + tol:
        return f"reference lower bound {r_lb!r} exceeds the fast objective {f_obj!r}"
    return ""


def assert_fast_matches_reference(fast, ref, rtol: float = 1e-6) -> None:
    """A fast solver (a :class:`~hiercvx.result.Solution` or a float objective) agrees with its
    certified reference; see :func:`fast_vs_reference` for what is checked."""
    reason = fast_vs_reference(fast, ref, rtol)
    assert not reason, reason


def assert_bounds_bracket(lower, upper, optimum, rtol: float = 1e-7) -> None:
    """Iterates' bounds bracket the optimum: ``lower <= optimum <= upper`` (arrays allowed)."""
    rtol = check_positive(rtol, "rtol")
    optimum = _number(optimum, "optimum")
    try:
        lower = np.atleast_1d(np.asarray(lower, float))
        upper = np.atleast_1d(np.asarray(upper, float))
    except (TypeError, ValueError):
        raise InputTypeError(f"lower and upper must be numbers or arrays of numbers, got "
                             f"{lower!r} and {upper!r}") from None
    tol = rtol * _scale(optimum)
    bad_lo = np.flatnonzero(lower > optimum + tol)
    bad_up = np.flatnonzero(upper < optimum - tol)
    assert bad_lo.size == 0, f"lower bound above the optimum {optimum!r} at iterations {bad_lo[:5]}"
    assert bad_up.size == 0, f"upper bound below the optimum {optimum!r} at iterations {bad_up[:5]}"


def solve_with_each(build, solvers, **solve_kw):
    """Build a fresh problem per solver (``build()`` -> ReferenceProblem) and solve it with
    each installed solver of ``solvers``; returns ``{solver: ReferenceSolution}``."""
    have = set(installed_solvers())
    out = {}
    for s in solvers:
        if s.upper() in have:
            out[s.upper()] = build().solve(solver=s, **solve_kw)
    assert len(out) >= 2, f"need two installed solvers among {solvers}, have {sorted(have)}"
    return out


def check_gradient(f, grad, x, eps: float = 1e-6, rtol: float = 1e-4, random_state=0) -> None:
    """Central finite differences of ``f`` along random directions against ``grad(x)``.

    Scale-free: the directional derivatives agree within ``rtol`` of the larger of the two, plus
    the round-off of the difference quotient (machine epsilon times ``|f|`` over ``eps``), so
    a wrong gradient is caught however small the function's values are."""
    rng = np.random.default_rng(random_state)
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise InputTypeError(f"x must be an array of numbers, got {x!r}") from None
    if x.ndim == 0 or x.size == 0 or not np.all(np.isfinite(x)):
        raise InputError(f"x must be a non-empty finite array (the point where the gradient is "
                         f"checked), got {x!r}")
    eps, rtol = check_positive(eps, "eps"), check_positive(rtol, "rtol")
    g = np.asarray(grad(x), dtype=float)
    for _ in range(5):
        d = rng.standard_normal(x.shape)
        d /= np.linalg.norm(d)
        up, down = float(f(x + eps * d)), float(f(x - eps * d))
        fd = (up - down) / (2 * eps)
        an = float(np.sum(g * d))
        round_off = 16 * np.finfo(float).eps * max(abs(up), abs(down)) / eps
        assert abs(fd - an) <= rtol * max(abs(fd), abs(an)) + round_off, (
            f"directional derivative {an!r} vs finite difference {fd!r}")
