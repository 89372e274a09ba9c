"""Gurobi: the size-limited licence of the pip wheel, measured and detected before solving, and
the Gurobi route of ``hiercvx verify``.

:func:`test_measured_limits_still_hold` checks the limits in
:data:`hiercvx.reference.GUROBI_SIZE_LIMITS` at their thresholds, so a licence that changes
shows up here.
"""

import subprocess
import sys

import cvxpy as cp
import numpy as np
import pytest

import hiercvx as hc
from hiercvx import cli, methods, reference, testing
from hiercvx.reference import GUROBI_SIZE_LIMITS, ReferenceProblem, gurobi_licence, gurobi_size
from hiercvx.verify import gurobi_route

gp = pytest.importorskip("gurobipy")
LIMITED = gurobi_licence() == "size-limited"
needs_limited = pytest.mark.skipif(not LIMITED, reason=f"Gurobi licence: {gurobi_licence()}")
needs_gurobi = pytest.mark.skipif(gurobi_licence() not in ("full", "size-limited"),
                                  reason=f"Gurobi licence: {gurobi_licence()}")


def _gurobi_accepts(build) -> bool:
    """Whether Gurobi itself takes the model ``build(model)`` builds (error 10010 otherwise)."""
    with gp.Env(empty=True) as env:
        env.setParam("OutputFlag", 0)
        env.start()
        with gp.Model(env=env) as m:
            build(m)
            try:
                m.optimize()
            except gp.GurobiError as exc:
                assert exc.errno == 10010, exc
                return False
    return True


def _lp(n_var, n_con=1):
    def build(m):
        x = m.addMVar(n_var, lb=0, ub=1)
        m.addConstr(np.ones((n_con, n_var)) @ x <= 1)
        m.setObjective(x.sum())
    return build


def _qp(n_var):
    def build(m):
        x = m.addMVar(n_var, lb=-1, ub=1)
        m.setObjective(x[:2] @ x[:2] + x.sum())  # one quadratic term suffices
    return build


def _milp(n_var):
    def build(m):
        x = m.addMVar(n_var, lb=0, ub=3, vtype=gp.GRB.INTEGER)
        m.setObjective(x.sum())
    return build


@needs_limited
def test_measured_limits_still_hold():
    lim = GUROBI_SIZE_LIMITS
    assert _gurobi_accepts(_lp(lim["variables"])) and not _gurobi_accepts(_lp(lim["variables"] + 1))
    assert _gurobi_accepts(_lp(2, lim["constraints"])) and not _gurobi_accepts(_lp(2, lim["constraints"] + 1))
    assert _gurobi_accepts(_milp(lim["variables"])) and not _gurobi_accepts(_milp(lim["variables"] + 1))
    q = lim["quadratic_variables"]
    assert _gurobi_accepts(_qp(q)) and not _gurobi_accepts(_qp(q + 1))


def _qp_reference(n):
    """``min 1/2 ||x||^2 - sum x`` s.t. ``x >= 0``: ``n`` variables as compiled (``||x - 1||^2``
    would add ``n`` more), optimum ``-n/2`` in closed form."""
    x = cp.Variable(n, name="x")
    nonneg = x >= 0
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x) - cp.sum(x)), [nonneg])
    return ReferenceProblem(prob, variables={"x": x},
                            objective=lambda v: float(0.5 * v["x"] @ v["x"] - v["x"].sum()),
                            lower_bound=lambda v, d: -0.5 * n, weights=lambda v: v["x"],
                            constraints={"nonneg": nonneg}, name=f"QP n={n}")


@needs_limited
def test_size_is_checked_before_solving_and_matches_gurobi(monkeypatch):
    """200 variables in a QP solve; 201 are refused before Gurobi runs, naming the limit and the
    open-source solver; without the check Gurobi itself fails (CVXPY hides why)."""
    q = GUROBI_SIZE_LIMITS["quadratic_variables"]
    sol = _qp_reference(q).solve(solver="GUROBI")
    assert sol.solver == "GUROBI"
    testing.assert_certified(sol)
    big = _qp_reference(q + 1)
    assert gurobi_size(big.problem) == {"variables": q + 1, "constraints": q + 1, "quadratic": True,
                                        "integer": False}
    with pytest.raises(hc.SolverUnavailableError, match=rf"{q + 1} variables with a quadratic term \(QP objective or cone\) > {q}") as err:
        big.solve(solver="GUROBI")
    assert err.value.status == "licence" and err.value.solver == "GUROBI"
    assert "solver='CLARABEL'" in str(err.value) and "size-limited licence" in str(err.value)
    monkeypatch.setattr(reference, "check_gurobi_size", lambda *a, **k: None)
    with pytest.raises(hc.SolverError):
        _qp_reference(q + 1).solve(solver="GUROBI")


@needs_limited
def test_each_problem_class_is_refused_over_its_limit():
    lim = GUROBI_SIZE_LIMITS
    x = cp.Variable(lim["variables"] + 1)
    lp = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 0])
    with pytest.raises(hc.SolverUnavailableError, match="solver='HIGHS' for this LP"):
        reference.check_gurobi_size(lp)
    x_ok = cp.Variable(lim["variables"])
    reference.check_gurobi_size(cp.Problem(cp.Minimize(cp.sum(x_ok)), [x_ok >= 0]))
    z = cp.Variable(lim["variables"] + 1, integer=True)
    with pytest.raises(hc.SolverUnavailableError, match="solver='HIGHS' for this MILP"):
        reference.check_gurobi_size(cp.Problem(cp.Minimize(cp.sum(z)), [z >= 0]))
    y = cp.Variable(2)
    rows = cp.Problem(cp.Minimize(cp.sum(y)), [y[0] >= k for k in range(lim["constraints"] + 1)])
    with pytest.raises(hc.SolverUnavailableError, match=f"{lim['constraints'] + 1:,} constraints"):
        reference.check_gurobi_size(rows)
    # a cone reaches Gurobi as a quadratic constraint over auxiliary variables: min ||s|| over
    # s in R^k compiles to k + 1 columns (s, t) and k + 1 auxiliary ones, 2k + 2 in all
    for k, fits in ((99, True), (100, False)):
        s = cp.Variable(k)
        socp = cp.Problem(cp.Minimize(cp.norm(s, 2)), [s >= 1])
        size = gurobi_size(socp)
        assert size["quadratic"] and size["variables"] == 2 * k + 2
        if fits:
            reference.check_gurobi_size(socp)
            socp.solve(solver="GUROBI")  # Gurobi agrees: 200 variables are taken
            assert socp.status == "optimal" and abs(socp.value - np.sqrt(k)) < 1e-5
        else:
            with pytest.raises(hc.SolverUnavailableError, match="solver='CLARABEL' for this SOCP"):
                reference.check_gurobi_size(socp)
            with pytest.raises(cp.error.SolverError):  # and Gurobi refuses 202
                socp.solve(solver="GUROBI")


@needs_limited
def test_usable_solvers_and_info_state_the_measured_limits(capsys):
    state = reference.usable_solvers()["GUROBI"]
    assert state.startswith("size-limited licence") and "2000 variables" in state and "200" in state
    assert cli.main(["info"]) == 0
    assert "200 variables with a quadratic term" in capsys.readouterr().out


@needs_limited
def test_automatic_choice_never_stops_at_the_licence():
    """Gurobi is last in the preference order of the continuous classes, so solver=None
    certifies with an open-source solver even when the problem is over the licence."""
    sol = _qp_reference(GUROBI_SIZE_LIMITS["quadratic_variables"] + 1).solve()
    assert sol.solver != "GUROBI" and sol.failed_solvers == ()


@needs_gurobi
def test_verify_gurobi_route():
    """A quick case within the licence: Gurobi's certified optimum agrees with the reference's;
    a case over it is reported, not counted as a disagreement."""
    method = methods.get("multiclass")
    case = method.cases(True)[0]
    primal = method.build("primal", case).solve()
    cell, problem = gurobi_route(method, case, primal)
    assert problem == "" and float(cell) <= 1e-6
    if LIMITED:
        orth = methods.get("orthogonal")  # the lifted SDP: Gurobi takes no SDP
        ocase = orth.cases(True)[0]
        cell, problem = gurobi_route(orth, ocase, orth.build("primal", ocase).solve())
        assert problem == "" and cell == "unsupported class"


@needs_gurobi
def test_a_gurobi_solve_prints_no_licence_banner():
    """gurobipy's default environment prints its licence banner to stdout with the first model
    of a process; a reference solved by Gurobi must not (it would open ``verify --gurobi``'s
    table).  A new interpreter: the banner comes once per process."""
    code = ("from hiercvx import methods\n"
            "m = methods.get('multiclass')\n"
            "sol = m.build('primal', m.cases(True)[0]).solve(solver='GUROBI')\n"
            "print('solver', sol.solver)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout == "solver GUROBI\n", done.stdout
