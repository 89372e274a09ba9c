"""The primal interior point of the sibling-margin QP (8) in reduced coordinates.

The QP (8) of Wang, Shen & Pan (JMLR 12, 2011)::

    min_{w, b, xi}  1/2 sum_v ||w_v||^2 + C sum_i xi_i + sum_p lam_p m_p(f)
    s.t.  xi_i >= 0,  m_p(f) + xi_i >= 1  (p = (i, j, t), (j, t) in Q(y_i)),  sum-to-zero

is written with every sibling group ``g`` in an orthonormal basis of ``{sum = 0}``
(:func:`group_basis`: the sum-to-zero constraints of Theorem 1 hold by construction and the
penalty is unchanged), and the inputs enter through features ``phi`` of dimension ``q``:
``x`` itself (linear) or a pivoted-Cholesky factor ``K ~ L L^T`` (kernel,
:func:`pivoted_cholesky`; the pivot columns are reproduced exactly, so the functions are
exact kernel expansions on the pivot points).  Eliminating the slacks ``xi`` leaves one dense
``(M'(q+1))``-square Newton matrix per step (:class:`NormalBuilder`), whatever ``C``; the
steps are Mehrotra's predictor-corrector (Nocedal & Wright, *Numerical Optimization*, 2nd
ed., 2006, Algorithm 16.4) with Gondzio's centrality correctors (*Computational Optimization
and Applications* 6, 1996; :func:`hiercvx.solvers.primitives.centrality_correctors`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ...models.sibling import SiblingPairs
from ...result import gap_scale, relative_gap, stopping_gap
from ..dual_qp import DenseNewton, factor_newton, step_length
from ..primitives import centrality_correctors, kronecker_sum
from ..primitives import pivoted_cholesky as _pivoted_cholesky
from ._kernels import example_sums, schur_blocks
from .options import Options
from .problem import PairProblem, StepResult

__all__ = ["PrimalIPM", "NormalBuilder", "pivoted_cholesky", "group_basis", "ipm_step_cost"]


def pivoted_cholesky(K, rtol: float = 1e-12, max_rank: int | None = None):
    """Greedy pivoted Cholesky ``K ~ L L^T`` with ``L`` ``(n, r)`` and pivots ``S``.

    Stops when the largest residual diagonal is ``<= rtol * max(diag K)`` or at ``max_rank``.
    The pivot columns are reproduced exactly (``K[:, S] = L L[S]^T`` up to round-off) and
    ``K - L L^T`` is PSD (a Nystrom approximation on ``S``).  Returns ``(L, S, complete)``
    where ``complete`` says whether the tolerance was reached.
    """
    K = np.asarray(K, dtype=float)
    n = K.shape[0]
    cap = n if max_rank is None else max(1, min(n, int(max_rank)))
    L, pivots, residual = _pivoted_cholesky(np.diag(K), lambda j: K[:, j], max_rank=cap,
                                            rtol=rtol, rule="diagonal")
    dmax = max(float(np.diag(K).max()), 1e-300) if n else 1.0
    complete = bool(residual.max() <= rtol * dmax) if n else True
    return L, pivots, complete


def group_basis(pairs: SiblingPairs) -> np.ndarray:
    """``E'`` ``(M, M')``: each sibling group of size ``s >= 2`` gets ``s - 1`` orthonormal
    columns spanning ``{sum over the group = 0}``; singleton groups (only children) and
    the root get none (their functions are 0 by the sum-to-zero constraints)."""
    M = pairs.n_nodes
    blocks = [g for g in pairs.groups if len(g) >= 2]
    E = np.zeros((M, sum(len(g) - 1 for g in blocks)))
    col = 0
    for g in blocks:
        s = len(g)
        basis, _ = np.linalg.qr(np.eye(s)[:, : s - 1] - 1.0 / s)
        E[np.asarray(g), col:col + s - 1] = basis
        col += s - 1
    return E


def _rowdot(A, B):
    return np.einsum("ij,ij->i", A, B)


class NormalBuilder:
    """Builds ``sum_i T_i (x) phi_i phi_i^T + diag`` (the ``(a, f)`` row-major ordering) for
    a fixed ``Phi1``.  With symmetric ``T_i`` and ``phi_i phi_i^T`` only the blocks ``a <= b``
    and the entries ``f <= g`` are needed: one product of ``T``'s upper triangle
    ``(n, Mr(Mr+1)/2)`` with the upper triangles of the ``phi_i phi_i^T`` (computed once and
    kept when they fit in ``max_cache`` floats; else, and for a few wide blocks, block by
    block; ``options`` (:class:`Options`) sets ``normal_cache`` (the default ``max_cache``)
    and the few-wide-blocks rule)."""

    def __init__(self, Phi1, Mr, max_cache=None, options=None):
        opts = Options() if options is None else options
        max_cache = opts.normal_cache if max_cache is None else max_cache
        self.Phi1 = Phi1
        n, q1 = Phi1.shape
        self.Mr, self.q1 = Mr, q1
        self.ia, self.ib = np.triu_indices(Mr)
        self.jf, self.jg = np.triu_indices(q1)
        self.K2 = None
        # few blocks of a wide factor: one product Phi^T diag(t) Phi per block is
        # compute-bound, reading the cached triangles memory-bound
        by_products = (len(self.ia) <= opts.block_products_max
                       and q1 >= opts.block_products_min_rank)
        if n * len(self.jf) <= max_cache and not by_products:
            self.K2 = Phi1[:, self.jf] * Phi1[:, self.jg]          # (n, q1(q1+1)/2)
            # every block sum_i T_i[a, b] phi_i phi_i^T is symmetric and N is: entry
            # ((a, f), (b, g)) of N is entry (tri(a, b), tri(f, g)) of the product R below
            self.gather = (self._tri(Mr)[:, None, :, None] * len(self.jf)
                           + self._tri(q1)[None, :, None, :]).ravel()

    @staticmethod
    def _tri(m):
        """``(m, m)``: the position of ``(min(a, b), max(a, b))`` in ``np.triu_indices(m)``."""
        a = np.arange(m)
        lo, hi = np.minimum.outer(a, a), np.maximum.outer(a, a)
        return lo * m - lo * (lo - 1) // 2 + hi - lo

    def __call__(self, T, diag):
        Mr, q1, Phi1 = self.Mr, self.q1, self.Phi1
        if self.K2 is not None:
            R = T[:, self.ia, self.ib].T @ self.K2                # (Mr(Mr+1)/2, q1(q1+1)/2)
            N = R.ravel().take(self.gather).reshape(Mr * q1, Mr * q1)
            N[np.diag_indices_from(N)] += diag
            return N
        N = kronecker_sum(Phi1, Mr, lambda a, b: T[:, a, b])
        N[np.diag_indices_from(N)] += diag
        return N


def ipm_step_cost(n, Mr, q1):
    """Flops of one Newton step of ``_ipm``: the Cholesky of the ``(Mr q1)``-square matrix
    and its assembly from the ``n`` samples' triangles (:class:`NormalBuilder`).  Compared
    with :meth:`hiercvx.solvers.dual_qp.DenseNewton.cost` by ``method="auto"``: few samples
    and a kernel of high rank make the dual's Newton matrix (one row per pair) the smaller."""
    rows = Mr * q1
    return rows ** 3 / 3.0 + n * Mr * (Mr + 1) * q1 * (q1 + 1) / 2.0


class _Path:
    """The iterate of :func:`mehrotra_path`: ``Z`` ``(M', q + 1)`` (last column: the biases),
    ``xi`` ``(n,)``, the slacks ``s`` (margins) and ``s0`` (``xi >= 0``) and their
    multipliers ``lm`` and ``lm0``.  Starts cold, centred (a warm start from a neighbouring
    DC step's optimum sits on the boundary and takes more steps)."""

    def __init__(self, Phi1, Delta, pair_of, C):
        n, q1 = Phi1.shape
        P, Mr = Delta.shape
        k_i = np.bincount(pair_of, minlength=n)
        self.Z = np.zeros((Mr, q1))
        self.xi = np.full(n, 2.0)
        self.s = np.ones(P)
        self.s0 = self.xi.copy()
        self.lm = C / (k_i[pair_of] + 1.0)
        self.lm0 = C / (k_i + 1.0)

    def move(self, step, a):
        dZ, dxi, ds, ds0, dl, dl0 = step
        self.Z += a * dZ
        self.xi += a * dxi
        # strictly interior against round-off
        self.s = np.maximum(self.s + a * ds, 1e-300)
        self.s0 = np.maximum(self.s0 + a * ds0, 1e-300)
        self.lm = np.maximum(self.lm + a * dl, 1e-300)
        self.lm0 = np.maximum(self.lm0 + a * dl0, 1e-300)


class _Newton:
    """The Newton system of one interior point step, factored once: :meth:`direction` solves
    it for a complementarity right-hand side, :meth:`longest` is a direction's step to the
    boundary."""

    def __init__(self, ipm, x: _Path, rp, rp0, rd_Z, rd_x):
        self.ipm, self.x = ipm, x
        self.rp, self.rp0, self.rd_Z, self.rd_x = rp, rp0, rd_Z, rd_x
        n = ipm.Phi1.shape[0]
        self.w, self.w0 = x.lm / x.s, x.lm0 / x.s0
        self.Dx = np.bincount(ipm.pair_of, weights=self.w, minlength=n) + self.w0
        self.V = example_sums(self.w, ipm.Delta, ipm.pair_ptr)
        T = schur_blocks(ipm.Delta, self.w, self.w0, ipm.pair_ptr)
        self.cho = factor_newton(ipm.normal(T, ipm.qdiag.ravel()))

    def direction(self, rc, rc0):
        ipm, x = self.ipm, self.x
        Phi1, Delta, pair_of = ipm.Phi1, ipm.Delta, ipm.pair_of
        t = rc / x.s - self.w * self.rp
        t0 = rc0 / x.s0 - self.w0 * self.rp0
        rZ = -self.rd_Z + example_sums(t, Delta, ipm.pair_ptr).T @ Phi1
        rx = -self.rd_x + np.bincount(pair_of, weights=t, minlength=x.xi.size) + t0
        rhs = rZ - ((rx / self.Dx)[:, None] * self.V).T @ Phi1
        dZ = sla.cho_solve(self.cho, rhs.ravel(), check_finite=False).reshape(x.Z.shape)
        dF = Phi1 @ dZ.T
        dxi = (rx - _rowdot(self.V, dF)) / self.Dx
        ds = _rowdot(Delta, dF[pair_of]) + dxi[pair_of] + self.rp
        ds0 = dxi + self.rp0
        dl = (rc - x.lm * ds) / x.s
        dl0 = (rc0 - x.lm0 * ds0) / x.s0
        return dZ, dxi, ds, ds0, dl, dl0

    def longest(self, step):
        x = self.x
        _, _, ds, ds0, dl, dl0 = step
        return min(step_length(x.s, ds), step_length(x.s0, ds0), step_length(x.lm, dl),
                   step_length(x.lm0, dl0))


class PrimalIPM:
    """(8) by the interior point in reduced coordinates (module docstring) on one problem.

    ``PrimalIPM.of(problem, options, forced)`` builds the features (``None`` when ``"auto"``
    should not take this method: see :meth:`of`); :meth:`solve` runs one certified path.
    Attributes: ``rank`` ``q``, ``basis`` ``(M, M')``, ``pivots`` (kernel: the pivot points)."""

    def __init__(self, problem: PairProblem, Phi, options: Options, pivots=None, factor_inv=None):
        pr = problem.pairs
        self.problem, self.options = problem, options
        self.rank = Phi.shape[1]
        self.Phi1 = np.hstack([Phi, np.ones((problem.n, 1))])
        self.basis = group_basis(pr)
        self.Delta = self.basis[pr.pair_pos] - self.basis[pr.pair_neg]
        self.pivots, self.factor_inv = pivots, factor_inv
        self.pair_of = pr.pair_i
        k_i = np.bincount(self.pair_of, minlength=problem.n)
        self.pair_ptr = np.r_[0, np.cumsum(k_i)].astype(np.int64)
        Mr, q1 = self.Delta.shape[1], self.Phi1.shape[1]
        self.qdiag = np.ones((Mr, q1))
        self.qdiag[:, -1] = 0.0
        # coordinates no pair touches (sibling groups below which no example lies) do not
        # change the cost: their bias is pinned to 0 by a unit weight (their w part has one)
        self.qdiag[~np.any(self.Delta != 0, axis=0), -1] = 1.0
        self.normal = NormalBuilder(self.Phi1, Mr, options=options)

    @classmethod
    def of(cls, problem: PairProblem, options: Options, forced: bool):
        """The method on ``problem``, or ``None`` when ``"auto"`` (``forced`` False) should not
        take it: the Newton system has more than ``max_ipm_size`` rows ``M' (q + 1)``, the
        kernel's numerical rank is not reached within them, or the dual's Newton matrix on all
        pairs is smaller (:func:`ipm_step_cost`)."""
        m, o = problem.model, options
        Mr = sum(len(g) - 1 for g in problem.pairs.groups if len(g) >= 2)
        pivots = factor_inv = None
        if m.linear:
            if not forced and Mr * (m.X.shape[1] + 1) > o.max_ipm_size:
                return None
            Phi = m.X.toarray() if sp.issparse(m.X) else np.asarray(m.X, dtype=float)
        else:
            cap = None if forced else max(1, o.max_ipm_size // max(Mr, 1) - 1)
            Phi, pivots, complete = pivoted_cholesky(m.K, rtol=o.rank_rtol, max_rank=cap)
            if not (complete or forced):
                return None
            factor_inv = pivots.size and sla.solve_triangular(
                Phi[pivots], np.eye(pivots.size), lower=True, check_finite=False)
        if not forced and problem.P <= o.max_dual_pairs and \
                DenseNewton.cost(problem.P, Mr) < ipm_step_cost(problem.n, Mr, Phi.shape[1] + 1):
            return None   # few pairs, a wide kernel factor: the dual's Newton matrix is smaller
        return cls(problem, Phi, o, pivots, factor_inv)

    def to_functions(self, Z):
        """Reduced coordinates ``Z`` ``(M', q + 1)`` -> (weights or coefficients, biases)."""
        Wq = self.basis @ Z[:, :-1]            # (M, q)
        b = self.basis @ Z[:, -1]
        if self.problem.model.linear:
            return Wq, b
        coef = np.zeros((self.problem.M, self.problem.n))
        if self.pivots.size:
            coef[:, self.pivots] = Wq @ self.factor_inv  # c_S = L_S^{-T} w
        return coef, b

    def solve(self, C, lam, tol, max_iter, certificate, at_zero, log) -> StepResult:
        """(8) for ``C`` and the DC term ``lam`` to the certified relative gap ``tol``
        (``certificate``: :class:`~.certificate.Certificate`; ``at_zero``: (8) at zero
        functions, the gap's scale; ``log``: takes one line per step and per certificate)."""
        state = {}

        def accept(Z, lm):
            W, b = self.to_functions(Z)
            primal = self.problem.model.primal_value(W, b, C, lam)
            lower, feas = certificate.lower_bound(lm, lam, C)
            gap = stopping_gap(primal, lower, at_zero)
            state.update(W=W, b=b, primal=primal, lower=lower, feas=feas, beta=lm.copy(), gap=gap)
            log("sibling_qp ipm certificate: primal %.10g, lower bound %.10g, gap %.3e",
                primal, lower, relative_gap(primal, lower))
            return gap <= tol

        Z, lm, it, ok = self.mehrotra_path(C, lam, tol, max_iter, accept, log)
        if not ok:
            ok = accept(Z, lm)
        return StepResult(state["W"], state["b"], state["primal"], state["lower"], state["feas"],
                          it, ok, {"gap": [state["gap"]]}, state["beta"], "interior point steps")

    def mehrotra_path(self, C, lam, tol, max_iter, accept, log):
        """Mehrotra predictor-corrector on (8) in reduced coordinates.

        Variables ``Z`` ``(M', q + 1)`` and ``xi`` ``(n)``; constraints
        ``Delta_p . (Z phi~_i) + xi_i >= 1`` (slack ``s``, multiplier ``lm``) and ``xi >= 0``
        (``s0``, ``lm0``); objective ``1/2 ||Z[:, :q]||^2 + C sum xi +
        sum_p lam_p Delta_p . (Z phi~_i)``.  ``accept(Z, lm)`` is called once the residuals
        and the complementarity gap are small (relative to ``tol``); it returns True when the
        certificate holds; ``log`` takes one line per step.  Returns
        ``(Z, lm, n_iter, accepted)``."""
        Phi1, Delta, pair_of, qdiag = self.Phi1, self.Delta, self.pair_of, self.qdiag
        n = Phi1.shape[0]
        lin = example_sums(lam, Delta, self.pair_ptr).T @ Phi1
        x = _Path(Phi1, Delta, pair_of, C)
        m_total = Delta.shape[0] + n
        accepted = False
        it = 0
        for it in range(1, int(max_iter) + 1):
            F = Phi1 @ x.Z.T
            rp = _rowdot(Delta, F[pair_of]) + x.xi[pair_of] - 1.0 - x.s
            rp0 = x.xi - x.s0
            rd_Z = qdiag * x.Z + lin - example_sums(x.lm, Delta, self.pair_ptr).T @ Phi1
            rd_x = C - np.bincount(pair_of, weights=x.lm, minlength=n) - x.lm0
            mu = (x.s @ x.lm + x.s0 @ x.lm0) / m_total
            res_p = max(float(np.abs(rp).max(initial=0.0)), float(np.abs(rp0).max()))
            res_d = max(float(np.abs(rd_Z).max()), float(np.abs(rd_x).max())) / (1.0 + C)
            value = (0.5 * float(np.sum(qdiag * x.Z * x.Z)) + C * float(x.xi.sum())
                     + float(np.sum(lin * x.Z)))
            log("sibling_qp ipm step %d/%d: path objective %.10g, complementarity %.2e, primal "
                "residual %.2e, dual residual %.2e", it, max_iter, value, mu * m_total,
                res_p, res_d)
            # the certificate is worth computing once the complementarity gap is small
            if res_p <= 1e-6 and res_d <= 1e-6 and \
                    mu * m_total <= 0.1 * tol * gap_scale(value, 0.0):
                if accept(x.Z, x.lm):
                    accepted = True
                    break
            newton = _Newton(self, x, rp, rp0, rd_Z, rd_x)
            step, a = self._predictor_corrector(newton, x, mu, m_total)
            x.move(step, a)
        return x.Z, x.lm, it, accepted

    def _predictor_corrector(self, newton: _Newton, x: _Path, mu, m_total):
        """Mehrotra's affine predictor, centring and corrector, then Gondzio's correctors
        after short steps only (later steps stay Mehrotra's, so that a DC path of HPSI stops
        where the reference's does).  Returns the direction and its step."""
        aff = newton.direction(-x.s * x.lm, -x.s0 * x.lm0)
        a = newton.longest(aff)
        mu_aff = ((x.s + a * aff[2]) @ (x.lm + a * aff[4])
                  + (x.s0 + a * aff[3]) @ (x.lm0 + a * aff[5])) / m_total
        sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0   # Mehrotra's centring
        rc = -x.s * x.lm + sigma * mu - aff[2] * aff[4]
        rc0 = -x.s0 * x.lm0 + sigma * mu - aff[3] * aff[5]
        step = newton.direction(rc, rc0)
        a = min(1.0, 0.99 * newton.longest(step))
        return centrality_correctors(newton.direction, lambda d: min(1.0, 0.99 * newton.longest(d)),
                                     step, a, (rc, rc0),
                                     ((x.s, x.lm, 2, 4), (x.s0, x.lm0, 3, 5)), sigma * mu,
                                     below=self.options.correct_below)
