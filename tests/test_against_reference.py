"""Every registered method's fast solvers against its certified references (DESIGN.md, "Layout").

The table is the registry (:mod:`hiercvx.methods`): for each method and each of its quick
built-in problems (one per structure it supports), the reference primal is certified, the
declared dual reaches the same optimum, and every fast solver agrees with the reference
(objective within the solver's registered ``rtol``, weak duality across the two) through
``hiercvx.testing``.  A new paper adds its registry entry and is checked here.  The detailed
checks of each pair live in the paper's own test file.
"""

import pytest

import math

from hiercvx import methods, testing
from hiercvx.result import reached
from hiercvx.verify import DUAL_RTOL

CASES = [(m.name, k, case.name) for m in methods.REGISTRY.values()
         for k, case in enumerate(m.cases(True))]
SOLVERS = [(m.name, k, s) for m in methods.REGISTRY.values()
           for k, _ in enumerate(m.cases(True)) for s in m.fast_solvers]
# RDA (Zhou et al. Alg. 1) takes seconds to a tight gap: its rows run in `make test-slow`;
# the family's default solver dual_cd runs here, and tests/test_rda.py checks RDA on the cases
SOLVER_PARAMS = [pytest.param(n, k, s, marks=[pytest.mark.slow] if s == "rda" else [],
                              id=f"{n}-{k}-{s}") for n, k, s in SOLVERS]


def _case(name, k):
    return methods.get(name).cases(True)[k]


@pytest.mark.parametrize("name, k, case_name", CASES, ids=[f"{n}-{c}" for n, _, c in CASES])
def test_reference_primal_is_certified_and_meets_its_dual(name, k, case_name):
    method, case = methods.get(name), _case(name, k)
    primal = method.build("primal", case).solve()
    testing.assert_certified(primal)
    if "dual" in method.references:
        dual = method.build("dual", case).solve()
        testing.assert_certified(dual)
        assert abs(primal.objective - dual.lower_bound) <= DUAL_RTOL * max(1.0, abs(primal.objective))


@pytest.mark.parametrize("name, k, solver", SOLVER_PARAMS)
def test_fast_solver_agrees_with_reference(name, k, solver):
    method, case = methods.get(name), _case(name, k)
    ref = method.build("primal", case).solve()
    fast = method.run_fast(solver, case)
    assert fast.converged, f"{name} / {case.name} / {solver}: {fast}"
    if math.isfinite(fast.lower_bound) and fast.tol is not None:
        # converged means the gap it reports: solvers stop on the same measure
        assert reached(fast.gap, fast.tol), f"{name} / {case.name} / {solver}: {fast}"
    testing.assert_fast_matches_reference(fast, ref, rtol=method.fast_solvers[solver].rtol)
