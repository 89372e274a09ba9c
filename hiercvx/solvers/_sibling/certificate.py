"""The certificate of the sibling-margin QP: a dual feasible point near an iterate, and the
dual (9) there.

A method's ``beta`` satisfies the box (11) and the equalities (10) of Wang, Shen & Pan
(JMLR 12, 2011) only to its own accuracy.  :class:`Certificate` moves it onto the feasible
set -- a least-norm move on the support (:meth:`Certificate.repair`, :func:`least_norm_step`),
a one-sided L1 move by an LP (:meth:`Certificate.repair_lp`), after rounding onto the face it
is near (:meth:`Certificate.snap`), or the model's own
:meth:`~hiercvx.models.sibling.SiblingModel.dual_feasible` -- and evaluates the dual objective
``D(beta) = sum_p beta_p - 1/2 ||W(gamma)||^2`` there: a lower bound of (8) by weak duality.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.optimize import linprog

from ...exceptions import SolverError
from .options import Options
from .problem import PairProblem

__all__ = ["Certificate", "least_norm_step"]


def least_norm_step(A, rhs, options=None):
    """The least-norm ``s`` with ``A s = rhs`` for a sparse ``A`` (rows: independent bias
    equations, columns: the support's moves): ``s = A^T y`` with ``(A A^T) y = rhs``.

    Small systems: dense least squares on ``A A^T`` (exact on rank-deficient supports).  Wide
    ones: the normal matrix is sparse (a node meets only the pairs of the examples below its
    parent), so only the rows the support touches are factored (sparse LU, with a ridge
    ``1e-13 max diag`` against a singular support; the caller's loop re-measures the
    residual and refines).  ``options`` (:class:`Options`): ``dense_repair_rows`` and
    ``dense_repair_size`` bound the dense route.  Returns ``None`` when the sparse
    factorization fails."""
    opts = Options() if options is None else options
    if A.shape[0] <= opts.dense_repair_rows and A.shape[0] * A.shape[1] <= opts.dense_repair_size:
        Ad = A.toarray()
        y, *_ = np.linalg.lstsq(Ad @ Ad.T, rhs, rcond=None)
        return Ad.T @ y
    normal = (A @ A.T).tocsc()
    diag = normal.diagonal()
    touched = np.flatnonzero(diag > 0)
    y = np.zeros(A.shape[0])
    if touched.size:
        sub = normal[touched][:, touched]
        ridge = 1e-13 * float(diag.max())
        try:
            lu = spla.splu((sub + ridge * sp.identity(touched.size, format="csc")).tocsc())
        except RuntimeError:  # pragma: no cover - singular even with the ridge
            return None
        b = rhs[touched]
        yt = lu.solve(b)
        yt += lu.solve(b - sub @ yt)  # one refinement step against the unridged matrix
        y[touched] = yt
    return np.asarray(A.T @ y).ravel()


class Certificate:
    """Dual feasible points and lower bounds of (8) on one :class:`~.problem.PairProblem`;
    ``options`` (:class:`~.options.Options`) bounds the dense least-norm route."""

    def __init__(self, problem: PairProblem, options: Options):
        self.problem = problem
        self.options = options

    def into_box(self, beta, C):
        """Clip at 0 and scale every example's pairs back within its budget C."""
        beta = np.maximum(np.asarray(beta, dtype=float), 0.0)
        used = self.problem.model.budget(beta)
        over = used > C
        if over.any():
            factor = np.ones(self.problem.n)
            factor[over] = C / used[over]
            beta = beta * factor[self.problem.pairs.pair_i]
        return beta

    def repair(self, beta, lam, C):
        """A dual feasible point near ``beta`` (``r = 0`` to ``1e-11 max(1, C)``, the box kept),
        or ``None``.

        Least-norm change on the support: examples inside their budget move their positive
        pairs freely; examples at their budget move mass between their positive pairs
        (columns ``E_p - E_ref``, budget-neutral).  ``M`` rows only, so this is cheap.
        """
        m = self.problem.model
        pr = self.problem.pairs
        beta = self.into_box(beta, C)
        used = m.budget(beta)
        tol = 1e-11 * max(1.0, C)
        keep = m.independent_rows()
        E = m.incidence()[keep]
        for _ in range(3):
            r = m.bias_residual(beta, lam)
            big = float(np.abs(r).max())
            if big <= tol:
                return beta
            thresh = max(1e-9 * C, 1e3 * big)
            positive = beta > thresh
            interior = used < C - thresh
            free_cols = np.flatnonzero(positive & interior[pr.pair_i])
            bound = np.flatnonzero(positive & ~interior[pr.pair_i])
            ref = np.full(self.problem.n, -1, dtype=np.int64)
            if bound.size:  # reference pair of an example at its budget: its largest beta
                order = np.lexsort((-beta[bound], pr.pair_i[bound]))
                bound = bound[order]
                first = np.r_[True, pr.pair_i[bound[1:]] != pr.pair_i[bound[:-1]]]
                ref[pr.pair_i[bound[first]]] = bound[first]
                bound = bound[~first]
            cols = [E[:, free_cols]]
            if bound.size:
                cols.append(E[:, bound] - E[:, ref[pr.pair_i[bound]]])
            A = sp.hstack(cols).tocsr()
            if A.shape[1] == 0:
                return None
            step = least_norm_step(A, -r[keep], self.options)
            if step is None:
                return None
            new = beta.copy()
            new[free_cols] += step[:free_cols.size]
            if bound.size:
                sb = step[free_cols.size:]
                new[bound] += sb
                np.add.at(new, ref[pr.pair_i[bound]], -sb)
            if new.min() < -1e-14 * max(C, 1.0):
                return None
            beta = np.maximum(new, 0.0)
            used = m.budget(beta)
            if used.max() > C * (1 + 1e-13):
                return None
        return beta if np.abs(m.bias_residual(beta, lam)).max() <= tol else None

    def repair_lp(self, beta, lam, C):
        """The smallest L1 move restoring ``r = 0`` with one-sided moves allowed: a pair may
        grow (within its example's budget) or shrink (down to 0).  Needed when the support
        alone cannot absorb the residual, e.g. a DC step where every example at its budget
        has one positive pair and the others have none.  An LP with ``M'`` equality rows,
        scaled by the residual so that its numbers are of order one, solved by HiGHS's default
        (simplex) method (Huangfu & Hall, *Mathematical Programming Computation* 10, 2018);
        HiGHS's interior point with crossover can stall on these degenerate LPs.  ``None`` on
        failure."""
        m = self.problem.model
        P = self.problem.P
        beta = self.into_box(beta, C)
        r = m.bias_residual(beta, lam)
        keep = m.independent_rows()
        scale = max(float(np.abs(r).max()), 1e-300)
        E = m.incidence()[keep]
        slack = np.maximum(C - m.budget(beta), 0.0) / scale
        Bm = self.problem.Bm
        res = linprog(np.ones(2 * P), A_ub=sp.hstack([Bm, -Bm]).tocsr(), b_ub=slack,
                      A_eq=sp.hstack([E, -E]).tocsr(), b_eq=-r[keep] / scale,
                      bounds=np.c_[np.zeros(2 * P), np.r_[np.full(P, np.inf), beta / scale]],
                      method="highs")
        if res.status != 0:
            return None
        new = self.into_box(beta + scale * (res.x[:P] - res.x[P:]), C)  # LP round-off
        if np.abs(m.bias_residual(new, lam)).max() > 1e-11 * max(1.0, C):
            return None
        return new

    def lower_bound(self, beta, lam, C, final=True):
        """``D`` at a feasible point near ``beta``: the least-norm repair on the support, else
        (final iterates only) the one-sided LP repair, else the reference's
        :meth:`~hiercvx.models.sibling.SiblingModel.dual_feasible`; intermediate iterates get
        ``-inf`` when the cheap repair fails.  Returns ``(D, feasible point)``.  A final
        ``beta`` with non-finite entries (a method's iterate that overflowed) raises
        :class:`~hiercvx.exceptions.SolverError`: no feasible point is near it."""
        if not np.isfinite(beta).all():
            if not final:
                return -np.inf, None
            raise SolverError("sibling_qp certificate: the method's dual iterate has non-finite "
                              "entries (its path overflowed); no lower bound can be certified "
                              f"from it (C={C:.3g})", status="non-finite iterate",
                              solver="sibling_qp")
        feas = self.repair(beta, lam, C)
        if feas is None:
            if not final:
                return -np.inf, None
            snapped = self.snap(beta, lam, C)
            for attempt in (lambda: self.repair(snapped, lam, C),
                            lambda: self.repair_lp(beta, lam, C),
                            lambda: self.repair_lp(snapped, lam, C),
                            lambda: self.problem.model.dual_feasible(beta, lam, C)):
                feas = attempt()
                if feas is not None:
                    break
        return self.problem.model.dual_value(feas, lam), feas

    def snap(self, beta, lam, C, rtol=1e-7):
        """Round ``beta`` onto the face it is near: entries below ``1e-12 C`` to 0, and every
        DC example whose pairs are within ``rtol C`` of its DC term ``lam`` to ``lam`` exactly
        (``gamma = 0`` there).  An interior point method stops just inside such faces (e.g.
        an example given up by the DC step: ``beta = lam = C`` on one pair); their round-off
        can leave a residual that no move inside the budgets absorbs."""
        pr = self.problem.pairs
        out = np.where(beta < 1e-12 * C, 0.0, np.asarray(beta, dtype=float))
        dev = np.zeros(self.problem.n)
        np.maximum.at(dev, pr.pair_i, np.abs(out - lam))
        close = (self.problem.model.budget(lam) > 0) & (dev <= rtol * C)
        rows = close[pr.pair_i]
        out[rows] = lam[rows]
        return out
