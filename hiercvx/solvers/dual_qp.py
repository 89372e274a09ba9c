"""A Mehrotra interior point for the budgeted dual QPs of the margin family, written once.

Both the sibling-margin QP of Wang, Shen & Pan (dual (9)-(11), :mod:`.sibling_qp`) and the
final exact step of the margin engine's working sets (thesis Algorithm 2, step 8b,
:class:`.support_step.SupportStep`) are, on the pairs they keep::

    min_x  1/2 x^T Q x - g^T x   s.t.  x >= 0,  Bm x <= C,  E^T x = h

``Q`` the dual Hessian on the pairs (PSD), ``Bm`` ``(n', k)`` the examples' budget rows (their
pairs' costs), ``C`` the budgets, ``E`` ``(k, m)`` equality rows (Wang's (10); none for the
margin engine).  :func:`solve_dual_qp` factors one Newton matrix per step: by the blocks of a
block-diagonal ``Q`` (:class:`GroupNewton`: each block, then the small Schur complement of the
couplings) or dense (:class:`DenseNewton`), whichever counts fewer flops.  Unlike coordinate
ascent it does not slow down on degenerate duals (more support pairs than primal dimensions,
noisy labels), where the face of the support has no unique maximizer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numba import njit

from ..exceptions import InputError

logger = logging.getLogger(__name__)

__all__ = ["Options", "BlockDiagonal", "DenseNewton", "GroupNewton", "factor_newton",
           "solve_dual_qp", "step_length"]


@dataclass(frozen=True)
class Options:
    """Settings of :func:`solve_dual_qp` and its Newton systems.

    Every default is the one the certified solvers are validated with; the interior point
    is Mehrotra's predictor-corrector (Nocedal & Wright, *Numerical Optimization*, 2nd ed.,
    2006, Algorithm 16.4) on the dual (9)-(11) of Wang, Shen & Pan (JMLR 12, 2011)."""

    #: complementarity (relative to the objective) at which the certificate is tried (with
    #: ``tol / 100``): well below any certified gap a caller asks for
    accept_rtol: float = 1e-9
    #: complementarity (relative) from which a working set is probed: about halfway along the
    #: path, before the ill-conditioned last steps
    probe_rtol: float = 1e-4
    #: ``"auto"`` (fewer flops of :meth:`GroupNewton.cost` and :meth:`DenseNewton.cost`),
    #: ``"group"`` (the group route whenever there are several blocks) or ``"dense"``
    newton: str = "auto"
    #: iterative-refinement steps of a group-route solve before it hands over to the dense
    #: route (Golub & Van Loan, *Matrix Computations*, 4th ed., section 3.5.3)
    group_refine: int = 3
    #: relative residual a group-route solve must reach, the dense route's accuracy
    refine_rtol: float = 1e-8
    #: refinement steps of a dense solve: one recovers the digits a shifted Cholesky lost
    dense_refine: int = 1
    #: certificates tried at the round-off floor of the dual residual before the path ends
    #: (the residual only grows after it)
    floor_tries: int = 3

    def __post_init__(self):
        if self.newton not in ("auto", "group", "dense"):
            raise InputError(f"newton must be 'auto', 'group' or 'dense', got {self.newton!r}")
        for name in ("accept_rtol", "probe_rtol", "refine_rtol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not np.isfinite(value) or value < 0:
                raise InputError(f"dual_qp Options.{name} must be a number >= 0, got {value!r}")
        for name in ("group_refine", "dense_refine", "floor_tries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise InputError(f"dual_qp Options.{name} must be an integer >= 0, got {value!r}")


class BlockDiagonal:
    """A symmetric matrix kept as its diagonal blocks: ``index[b]`` the rows of block ``b``,
    ``blocks[b]`` its dense entries (rows of two blocks do not interact)."""

    def __init__(self, index, blocks, size: int):
        self.index, self.blocks, self.size = list(index), list(blocks), int(size)

    @classmethod
    def of_matrix(cls, Q) -> "BlockDiagonal":
        """One dense block: the whole matrix."""
        Q = np.asarray(Q, dtype=float)
        return cls([np.arange(Q.shape[0])], [Q], Q.shape[0])

    def dot(self, x):
        out = np.empty_like(x)
        for idx, Qb in zip(self.index, self.blocks):
            out[idx] = Qb @ x[idx]
        return out

    def dense(self):
        Q = np.zeros((self.size, self.size))
        for idx, Qb in zip(self.index, self.blocks):
            Q[np.ix_(idx, idx)] = Qb
        return Q


def factor_newton(N):
    """Cholesky of the Newton matrix, with a growing diagonal shift if round-off has made
    it indefinite (the interior point iteration corrects the perturbed step)."""
    scale = max(1.0, float(np.abs(np.diag(N)).max()))
    for shift in (0.0, 1e-14, 1e-12, 1e-10, 1e-8, 1e-6):
        try:
            if shift:
                N = N.copy()
                N[np.diag_indices_from(N)] += shift * scale
            return sla.cho_factor(N, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("the interior point Newton matrix is not positive definite")


@njit(cache=True)
def step_length(v, dv):
    """Largest ``t <= 1`` keeping ``v + t dv`` non-negative (compiled: an interior point calls
    it four times per Newton solve, on small vectors, thousands of times per fit)."""
    t = 1.0
    for i in range(v.size):
        if dv[i] < 0.0:
            r = -v[i] / dv[i]
            if r < t:
                t = r
    return t


class DenseNewton:
    """The Newton system of :func:`solve_dual_qp`, ``(Q + diag(d) + Bm^T diag(c) Bm) dx + E dy = r``,
    ``E^T dx = -re``, by one dense Cholesky of the ``(k, k)`` matrix and the ``(m, m)`` Schur
    complement of ``y``.  The route for one large block (a flat problem, a working set)."""

    def __init__(self, Q, Bm, E, refine: int = 1):
        self.Q = Q.dense()
        self.BmT = Bm.T.tocsr()
        self.Bm = Bm
        self.E = E
        self.refine = int(refine)

    @staticmethod
    def cost(k, me):
        """Flops of one factorization: the Cholesky and the ``m`` solves of the Schur step."""
        return k ** 3 / 3.0 + 2.0 * k * k * me

    def factor(self, d, c):
        k, me = self.Q.shape[0], self.E.shape[1]
        Hm = self.Q.copy()
        Hm[np.diag_indices(k)] += d
        BW = (self.BmT @ sp.diags(c) @ self.Bm).tocoo()
        np.add.at(Hm, (BW.row, BW.col), BW.data)
        self.Hm = Hm
        self.cho = factor_newton(Hm)
        self.HE = sla.cho_solve(self.cho, self.E, check_finite=False) if me else np.zeros((k, 0))
        self.Sc = factor_newton(self.E.T @ self.HE) if me else None

    def _solve_once(self, r, re):
        Hr = sla.cho_solve(self.cho, r, check_finite=False)
        if self.Sc is None:
            return Hr, np.zeros(0)
        dy = sla.cho_solve(self.Sc, self.E.T @ Hr + re, check_finite=False)
        return Hr - self.HE @ dy, dy

    def solve(self, r, re):
        dx, dy = self._solve_once(r, re)
        # at the end of the path the matrix is ill-conditioned (z / x spans 20 decades):
        # iterative refinement against the formed matrix recovers the digits the (possibly
        # shifted) factorization lost
        for _ in range(self.refine):
            rx = r - self.Hm @ dx - self.E @ dy
            rz = -re - self.E.T @ dx
            cx, cy = self._solve_once(rx, -rz)
            dx, dy = dx + cx, dy + cy
        return dx, dy


class GroupNewton:
    """The Newton system of :func:`solve_dual_qp` through the diagonal blocks of ``Q`` (sibling groups).

    With ``B = Q + diag(d)`` block diagonal (:class:`BlockDiagonal`), ``F = [Bm; E^T]`` and
    ``v = [diag(c) Bm dx; dy]`` the system
    ``(B + Bm^T diag(c) Bm) dx + E dy = r``, ``E^T dx = -re`` becomes
    ``(F B^{-1} F^T + diag(1/c, 0)) v = F B^{-1} r + [0; re]``, ``dx = B^{-1} (r - F^T v)``:
    one Cholesky per block, and one of the ``(n' + m)``-square matrix of the couplings (the
    examples' budgets and the equality rows; Wang's (11) and (10)).  Cheaper than the dense route
    when the groups are many and small (:meth:`cost`)."""

    def __init__(self, Q, Bm, E, options: Options | None = None):
        self.options = Options() if options is None else options
        self.Q = Q
        self.nb = Bm.shape[0]
        self.F = sp.vstack([Bm, sp.csr_matrix(E.T)]).tocsr()
        self.FT = self.F.T.tocsr()
        # the couplings each block meets: its samples' budgets and its nodes' bias rows
        self.cols = [np.unique(self.FT[idx].indices) for idx in Q.index]
        self.Ft = None
        self.Bm, self.BmT, self.E = Bm, Bm.T.tocsr(), E
        self.dense = None   # the dense route, once the blocks lose accuracy

    def cost(self):
        """Flops of one factorization: per block its Cholesky, the triangular solve with its
        couplings and their product; then the couplings' Cholesky."""
        total = sum(idx.size ** 3 / 3.0 + idx.size ** 2 * cols.size + idx.size * cols.size ** 2
                    for idx, cols in zip(self.Q.index, self.cols))
        return total + self.F.shape[0] ** 3 / 3.0

    def _apply(self, dx, dy):
        return self.Q.dot(dx) + self.d * dx + self.BmT @ (self.c * (self.Bm @ dx)) + self.E @ dy

    def factor(self, d, c):
        self.d, self.c = d, c
        if self.dense is not None:
            self.dense.factor(d, c)
            return
        if self.Ft is None:
            self.Ft = [self.FT[idx][:, cols].toarray() for idx, cols in zip(self.Q.index, self.cols)]
        nv = self.F.shape[0]
        S = np.zeros((nv, nv))
        S[np.arange(self.nb), np.arange(self.nb)] = 1.0 / np.maximum(c, 1e-300)
        self.chos = []
        for idx, Qb, cols, Ft in zip(self.Q.index, self.Q.blocks, self.cols, self.Ft):
            Hb = Qb.copy()
            Hb[np.diag_indices(idx.size)] += d[idx]
            cho = factor_newton(Hb)
            self.chos.append(cho)
            Y = sla.solve_triangular(cho[0], Ft, lower=True, check_finite=False)
            S[np.ix_(cols, cols)] += Y.T @ Y
        self.S = factor_newton(S)

    def _block_solve(self, r):
        out = np.empty_like(r)
        for idx, cho in zip(self.Q.index, self.chos):
            out[idx] = sla.cho_solve(cho, r[idx], check_finite=False)
        return out

    def _solve_once(self, r, re):
        t = self._block_solve(r)
        rhs = self.F @ t
        rhs[self.nb:] += re
        v = sla.cho_solve(self.S, rhs, check_finite=False)
        return self._block_solve(r - self.FT @ v), v[self.nb:]

    def solve(self, r, re):
        if self.dense is not None:
            return self.dense.solve(r, re)
        dx, dy = self._solve_once(r, re)
        # near the end of the path the blocks become nearly singular (``z / x -> 0`` on the
        # active pairs; only the budgets and (10) keep the whole system definite): iterative
        # refinement against the exact products, and once that no longer reaches the
        # accuracy of the dense route, the dense route for the rest of the path
        scale_r = max(float(np.abs(r).max(initial=0.0)), 1e-300)
        scale_e = 1.0 + float(np.abs(re).max(initial=0.0))
        max_refine = self.options.group_refine
        for attempt in range(max_refine + 1):
            rx = r - self._apply(dx, dy)
            rz = -re - self.E.T @ dx
            err = max(float(np.abs(rx).max(initial=0.0)) / scale_r,
                      float(np.abs(rz).max(initial=0.0)) / scale_e)
            if err <= self.options.refine_rtol:
                return dx, dy
            if attempt == max_refine:
                break
            cx, cy = self._solve_once(rx, -rz)
            dx, dy = dx + cx, dy + cy
        self.dense = DenseNewton(self.Q, self.Bm, self.E, self.options.dense_refine)
        self.dense.factor(self.d, self.c)
        return self.dense.solve(r, re)


class _Point:
    """An interior point of :func:`solve_dual_qp`: ``x`` (pairs) and ``z`` its multipliers,
    ``s`` the budgets' slacks and ``u`` their multipliers, ``y`` the equalities'."""

    def __init__(self, Bm, C, me):
        k, nb = Bm.shape[1], Bm.shape[0]
        count = np.asarray(Bm.sum(axis=1)).ravel()
        self.x = np.asarray(Bm.T @ (C / (count + 1.0))).ravel()
        self.s = C - Bm @ self.x
        self.z = np.ones(k)
        self.u = np.ones(nb)
        self.y = np.zeros(me)

    def move(self, step, a):
        dx, dy, dz, ds, du = step
        self.x = np.maximum(self.x + a * dx, 1e-300)
        self.y = self.y + a * dy
        self.z = np.maximum(self.z + a * dz, 1e-300)
        self.s = np.maximum(self.s + a * ds, 1e-300)
        self.u = np.maximum(self.u + a * du, 1e-300)


def _newton_system(Q, Bm, E, opts: Options):
    """The group route (:class:`GroupNewton`) or the dense one (:class:`DenseNewton`), as
    ``opts.newton`` says (``"auto"``: whichever counts fewer flops)."""
    group = GroupNewton(Q, Bm, E, opts)
    if len(Q.index) == 1 or opts.newton == "dense" or (
            opts.newton == "auto" and group.cost() > DenseNewton.cost(Q.size, E.shape[1])):
        return DenseNewton(Q, Bm, E, opts.dense_refine)
    return group


def _mehrotra_step(system, p: _Point, Bm, BmT, residuals, mu, m_total):
    """One predictor-corrector step from ``p`` with the factored ``system``, in place
    (Nocedal & Wright, *Numerical Optimization*, 2nd ed., 2006, Algorithm 16.4)."""
    rd, re, rb = residuals
    x, s, z, u = p.x, p.s, p.z, p.u

    def newton(rcx, rcs):
        r1 = -rd + rcx / x - BmT @ ((rcs + u * rb) / s)
        dx, dy = system.solve(r1, re)
        dz = (rcx - z * dx) / x
        ds = -rb - Bm @ dx
        du = (rcs - u * ds) / s
        return dx, dy, dz, ds, du

    def longest(step):
        dx, _, dz, ds, du = step
        return min(step_length(x, dx), step_length(z, dz), step_length(s, ds),
                   step_length(u, du))

    aff = newton(-x * z, -s * u)
    a = longest(aff)
    mu_aff = ((x + a * aff[0]) @ (z + a * aff[2]) + (s + a * aff[3]) @ (u + a * aff[4])) / m_total
    sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0   # Mehrotra's centring
    step = newton(sigma * mu - x * z - aff[0] * aff[2], sigma * mu - s * u - aff[3] * aff[4])
    p.move(step, min(1.0, 0.99 * longest(step)))


class _Stopping:
    """When :func:`solve_dual_qp` offers an iterate to ``accept``: residuals and
    complementarity small, or a stalled complementarity, or the dual residual at its
    round-off floor (degenerate duals: the Newton matrix loses its last digits as
    ``z / x -> 0``, and the residual then grows again, so the iterate is certified now rather
    than never; at most ``opts.floor_tries`` times)."""

    def __init__(self, tol, opts: Options):
        self.target = min(opts.accept_rtol, 1e-2 * tol)  # complementarity's share of the gap
        self.opts = opts
        self.mus: list = []
        self.best_rd = np.inf
        self.floor_tries = 0

    def classify(self, gap, value, scale, rd_max, re_max, x):
        """``"accept"``, ``"floor"``, ``"probe"`` or ``None`` for an iterate with
        complementarity ``gap = mu m_total``, objective ``value``, residuals ``rd_max`` (of
        scale ``scale``) and ``re_max``."""
        mus = self.mus
        stalled = len(mus) >= 5 and gap > 0.5 * mus[-5] and gap <= 1e-6 * abs(value)
        mus.append(gap)
        small = gap <= self.target * max(abs(value), 1e-300)
        at_floor = small and rd_max <= 1e-5 * scale and rd_max > 0.5 * self.best_rd
        self.best_rd = min(self.best_rd, rd_max)
        equalities_met = re_max <= 1e-10 * (1.0 + float(np.abs(x).max(initial=0.0)))
        if (rd_max <= 1e-8 * scale and equalities_met and small) or stalled:
            return "accept"
        if at_floor and equalities_met:
            self.floor_tries += 1
            return "floor"
        if gap <= self.opts.probe_rtol * max(abs(value), 1e-300):
            return "probe"
        return None


def solve_dual_qp(Q, g, Bm, E, h, C, max_iter, accept, tol=1e-6, probe=None, *,
                  options: Options | None = None, log=logger.debug):
    """Mehrotra predictor-corrector on the budgeted dual QP over the pairs kept.

    The QP is Wang, Shen & Pan's (9)-(11) of (8) (module docstring)::

        min_x  1/2 x^T Q x - g^T x   s.t.  x >= 0 (z),  Bm x <= C (slack s, u),  E^T x = h (y)

    Parameters
    ----------
    Q : BlockDiagonal
        The dual Hessian on the pairs as its diagonal blocks (the sibling groups).
    g : array (k,)
        The linear term.
    Bm : sparse (n', k)
        The examples' budget rows (1, or the pairs' costs).
    E, h : arrays (k, m), (m,)
        Independent equality rows (Wang's (10); ``m`` may be 0).
    C : float or array (n',)
        The examples' budgets, the right-hand side of ``Bm x <= C``.
    max_iter : int
        Interior point steps at most.
    accept : callable ``(x, y, u) -> bool``
        Called once the residuals and the complementarity are small
        (``min(options.accept_rtol, tol / 100)`` relative), and at the round-off floor of
        the dual residual (at most ``options.floor_tries`` times); True stops.  ``y`` are
        Wang's biases, ``u`` the examples' slacks ``xi`` (the primal's KKT conditions).
    tol : float
        The relative accuracy the caller asks for; it sets the threshold at which ``accept``
        is called (above).
    probe : callable ``(x, y) -> bool``, optional
        Called at iterates whose complementarity is within ``options.probe_rtol`` of the
        objective, before that; True stops the path there (not accepted).
    options : Options, optional
    log : callable, optional
        Takes one line per step (``logger.info`` under ``verbose``).

    Returns
    -------
    x : array (k,)
        The dual point.
    y : array (m,)
        The multipliers of ``E^T x = h`` (Wang's biases).
    n_iter : int
        The interior point steps taken.
    accepted : bool
        Whether ``accept`` returned True.

    Notes
    -----
    Each step factors ``Q + diag(z / x) + Bm^T diag(u / s) Bm`` once, with ``y`` eliminated:
    by the groups (:class:`GroupNewton`) or dense (:class:`DenseNewton`).
    """
    k, nb, me = Q.size, Bm.shape[0], E.shape[1]
    if k == 0:  # no pair kept: nothing to solve (the caller certifies the empty point)
        return np.zeros(0), np.zeros(me), 0, False
    opts = Options() if options is None else options
    system = _newton_system(Q, Bm, E, opts)
    p = _Point(Bm, C, me)
    m_total = k + nb
    BmT = Bm.T.tocsr()
    stop = _Stopping(tol, opts)
    accepted = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        Qx = Q.dot(p.x)
        rd = Qx - g - p.z + BmT @ p.u + E @ p.y
        re = E.T @ p.x - h
        rb = Bm @ p.x + p.s - C
        mu = (p.x @ p.z + p.s @ p.u) / m_total
        value = 0.5 * float(p.x @ Qx) - float(g @ p.x)
        scale = 1.0 + float(np.abs(Qx).max(initial=0.0)) + float(np.abs(g).max(initial=0.0))
        rd_max, re_max = float(np.abs(rd).max(initial=0.0)), float(np.abs(re).max(initial=0.0))
        log("dual interior point step %d/%d on %d pairs: complementarity %.2e, dual residual "
            "%.2e, equality residual %.2e", it, max_iter, k,
            mu * m_total / max(abs(value), 1e-300), rd_max / scale, re_max)
        verdict = stop.classify(mu * m_total, value, scale, rd_max, re_max, p.x)
        if verdict in ("accept", "floor"):
            if accept(p.x, p.y, p.u):
                accepted = True
                break
            if verdict == "floor" and stop.floor_tries >= opts.floor_tries:
                break   # no digit left to gain: the caller keeps its best certificate
        elif verdict == "probe" and probe is not None and probe(p.x, p.y):
            break
        system.factor(p.z / p.x, p.u / p.s)
        _mehrotra_step(system, p, Bm, BmT, (rd, re, rb), mu, m_total)
    return p.x, p.y, it, accepted
