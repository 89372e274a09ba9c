"""A dual feasible point of the sibling-margin QP near a solver's duals: the lower bound of
the certified references of Wang, Shen & Pan (JMLR 12, 2011), dual (9)-(11).

Unregularized biases make the Lagrangian of (8) ``-inf`` unless the bias condition (10)
holds exactly, so approximately stationary duals are repaired before the dual (9) is
evaluated: :func:`dual_feasible` (used by
:meth:`hiercvx.models.sibling.SiblingModel.dual_feasible`).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.linalg import lsqr

logger = logging.getLogger("hiercvx.models.sibling")

__all__ = ["dual_feasible"]


def dual_feasible(model, beta: np.ndarray, lam: np.ndarray, C: float) -> np.ndarray:
    """A dual feasible point near ``beta``: ``beta >= 0``, ``sum_{p of i} beta_p <= C``
    (11), and the bias condition ``sum_i Gamma_iv(beta - lam) = 0`` for every node (10).

    Unregularized biases make the Lagrangian ``-inf`` unless (10) holds exactly, so a
    solver's approximately stationary duals are repaired: clip at 0 and scale each
    sample's budget; then :func:`_least_norm_repair` (a least-norm correction on the
    clearly positive pairs, then a shrink of ``beta - lam`` that restores the budgets),
    or, when that fails, :func:`_lp_repair` (a small-change LP, polished exactly).  The
    last resort is ``beta = lam`` (always feasible, but a weak bound that the gap check
    flags).  Success means (10) holds to ``1e-11 max(1, C)`` and the box to round-off.
    """
    b = _scale_budget(model, np.maximum(np.asarray(beta, dtype=float), 0.0), C)
    r = model.bias_residual(b, lam)
    tol = 1e-11 * max(1.0, C)
    if np.abs(r).max() <= tol:
        return b
    out = _least_norm_repair(model, b, r, lam, C, tol)
    if out is None:
        out = _lp_repair(model, b, r, lam, C, tol)
    if out is None:
        # not a warning: the weak bound shows in the gap, which every caller checks (the
        # fast solver tries this as one of several repairs, often mid-path)
        logger.debug("hpsi: could not make the solver's duals satisfy the bias condition (10); "
                     "using beta = lam, a feasible but weak point")
        return np.asarray(lam, dtype=float).copy()
    logger.debug("hpsi: bias condition repaired: residual %.2e -> %.2e", np.abs(r).max(),
                 np.abs(model.bias_residual(out, lam)).max())
    return out


def _least_norm_repair(model, b, r, lam, C, tol):
    """Exact repair of (10) in two moves.

    1. The least-norm ``Delta`` with ``E_S^T Delta = -r``, supported on the clearly
       positive pairs ``S``, keeping ``sum_{p of i} Delta_p = 0`` for the samples that
       carry a DC term (``sum lam_i = C``: their budget has no room).
    2. Shrink ``gamma = beta - lam`` towards 0: ``beta <- (1 - theta) beta + theta lam``.
       This keeps (10) (it scales ``E^T gamma = 0``) and ``beta >= 0``, leaves the
       DC samples' budgets alone, and with the smallest ``theta`` brings every other
       sample back within ``C``.
    ``None`` if the system is inconsistent or the result is not feasible to round-off.
    """
    pr = model.pairs
    thresh = max(1e-7 * C, 100.0 * float(np.abs(r).max()))
    cols = np.flatnonzero(b > thresh)
    if cols.size == 0:
        return None
    dc_rows = np.flatnonzero(model.budget(lam) > 0)
    keep = model.independent_rows()
    r = r[keep]
    Es = model.incidence()[keep][:, cols]
    Bs = sp.csr_matrix((np.ones(cols.size), (pr.pair_i[cols], np.arange(cols.size))),
                       shape=(model.n, cols.size))[dc_rows]
    A = sp.vstack([Es, Bs]).tocsr()
    rhs = np.r_[-r, np.zeros(dc_rows.size)]
    if A.shape[0] * A.shape[1] <= 4_000_000:
        delta = np.linalg.lstsq(A.toarray(), rhs, rcond=None)[0]   # least-norm solution
    else:  # pragma: no cover - large references
        delta = lsqr(A, rhs, atol=0.0, btol=0.0, iter_lim=20 * A.shape[1])[0]
    out = b.copy()
    out[cols] += delta
    return _shrink_and_accept(model, out, lam, C, tol)


def _shrink_and_accept(model, out, lam, C, tol):
    """Step 2 of :func:`_least_norm_repair`, then :func:`_accept`."""
    used = model.budget(out)
    lam_used = model.budget(lam)
    over = (used > C) & (lam_used < used)
    if over.any():
        # (1 - theta) used + theta lam_used <= C  <=>  theta >= (used - C) / (used - lam_used)
        theta = float(np.max((used[over] - C) / (used[over] - lam_used[over])))
        if theta < 1e-6:
            out = (1.0 - theta) * out + theta * lam
    return _accept(model, out, lam, C, tol)


def _lp_repair(model, b, r, lam, C, tol):
    """The smallest L1 change ``Delta`` restoring (10) inside the box, from HiGHS' dual
    simplex on the problem scaled by ``s ~ max|r|`` with the trust region
    ``|Delta_p| <= 1000 s`` (so every number in the LP is of order one), then polished:
    the changes the LP leaves at a bound are set exactly to it and the basic ones are
    re-solved from the equalities and the tight budgets."""
    pr = model.pairs
    P = pr.n_pairs
    # scale: large enough that round-off of the data (~1e-16 C) stays below HiGHS'
    # tolerances, small enough that the needed change is of order one
    s = max(float(np.abs(r).max()), 1e-7 * max(1.0, C))
    E = model.incidence()
    used = model.independent_rows()             # each group's rows sum to zero: drop one
    Eu = E[used]
    Bm = sp.csr_matrix((np.ones(P), (pr.pair_i, np.arange(P))), shape=(model.n, P))
    slack = np.maximum(C - model.budget(b), 0.0) / s
    box = 1000.0
    lo = -np.minimum(b / s, box)                       # beta_p + Delta_p >= 0
    hi = np.minimum((C - b) / s, box)
    res = linprog(np.r_[np.ones(P), np.ones(P)], A_ub=sp.hstack([Bm, -Bm]).tocsr(), b_ub=slack,
                  A_eq=sp.hstack([Eu, -Eu]).tocsr(), b_eq=-r[used] / s,
                  bounds=np.c_[np.zeros(2 * P), np.r_[np.maximum(hi, 0.0), -lo]],
                  method="highs-ds", options={"presolve": False})  # presolve misjudges
    if res.status != 0:                                   # these tiny systems as infeasible
        logger.debug("hpsi: bias-repair LP failed: %s", res.message)
        return None
    step = res.x[:P] - res.x[P:]                       # Delta / s
    eps = 1e-9
    to_zero = (step <= lo + eps) & (lo > -box)         # beta_p becomes exactly 0
    idle = np.abs(step) <= eps
    basic = ~to_zero & ~idle
    delta = np.zeros(P)
    delta[to_zero] = -b[to_zero]
    budget_lp = model.budget(b) + s * np.bincount(pr.pair_i, weights=step, minlength=model.n)
    tight = np.flatnonzero(budget_lp >= C - 1e-7 * s)
    cols = np.flatnonzero(basic)
    if cols.size:
        A = sp.vstack([Eu[:, cols], Bm[tight][:, cols]]).tocsr()
        rhs = np.r_[-r[used] - (Eu @ delta), C - model.budget(b + delta)[tight]]
        delta[cols] = np.linalg.lstsq(A.toarray(), rhs, rcond=None)[0]
    out = b + delta
    out[to_zero] = 0.0
    return _shrink_and_accept(model, out, lam, C, tol)


def _accept(model, out, lam, C, tol):
    """``out`` if it is dual feasible to round-off (entries above ``-1e-14 C`` are set to
    0, budgets within ``C (1 + 1e-13)``, (10) within ``tol``), else ``None``."""
    if out.min() < -1e-14 * C or model.budget(out).max() > C * (1 + 1e-13):
        return None
    out = np.maximum(out, 0.0)
    if np.abs(model.bias_residual(out, lam)).max() > tol:
        return None
    return out


def _scale_budget(model, b: np.ndarray, C: float) -> np.ndarray:
    used = model.budget(b)
    scale = np.ones(model.n)
    over = used > C
    scale[over] = C / used[over]
    return b * scale[model.pairs.pair_i]
