"""The machinery of the margin-family dual coordinate solvers, written once.

The Cai–Hofmann working-set solver (:mod:`.working_set`, thesis Algorithm 2) and the flat
Crammer–Singer solver (:mod:`.crammer_singer`) both ascend the dual (4.15) of the margin
model (:mod:`hiercvx.models.margin`) and share:

* :class:`MarginDualState`: the expansion coefficients ``G(alpha)`` (thesis (4.12)), the
  incrementally updated score factor ``F`` (class weights ``U = Q G^T X`` ``(q, d)`` for
  features, the transposed class scores ``S^T = (K G Q)^T`` ``(q, n)`` for a Gram matrix; the
  compiled passes read it with :func:`~.primitives.row_dot` and update it with
  :func:`~.primitives.row_axpy`), the certificate (primal (4.10) recomputed at ``w(alpha)``,
  dual (4.14)) and the approximate step 8b of Algorithm 2 (a Newton step on the union of
  the working sets, :meth:`MarginDualState.newton_step`);
* :func:`violation_scores`: psi_i of thesis (4.32) for every example;
* :func:`scatter_coefficients`: ``G(alpha)`` without ``np.add.at``;
* :data:`ROW_FASTMATH`: the flags of the compiled passes that call the shared row kernels
  (``row_dot`` / ``row_axpy`` are inlined into the caller and compiled with its flags; without
  reassociation LLVM does not vectorize them).  The passes take the dense / CSR / Gram switch
  outside their loops over classes and call the kernels with a constant mode (a switch per
  call is not folded away: 2-3x slower passes, measured).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import relative_gap
from .primitives import MODE_GRAM, RowData, row_sq_norms

__all__ = ["MarginDualState", "violation_scores", "scatter_coefficients", "BUDGET_RTOL", "MAX_CG",
           "SUPPORT_CHANGE", "ROW_FASTMATH"]

#: An example's budget counts as slack (zeta_i > 0 in thesis (4.13)) above this relative margin.
BUDGET_RTOL = 1e-10
#: Newton step (8b): at most MAX_CG conjugate-gradient iterations, tried when at most
#: SUPPORT_CHANGE of the support changed between two certificates.
MAX_CG = 30
SUPPORT_CHANGE = 0.01
#: row_dot / row_axpy are inlined into their caller and compiled with the caller's flags: the
#: reassociation that lets LLVM vectorize them must be set on the caller too
ROW_FASTMATH = {"reassoc", "contract", "nsz"}


@njit(cache=True)
def scatter_coefficients(alpha, pair_i, pair_y, pair_ybar, G):
    """``G[i, y] += alpha_p, G[i, ybar] -= alpha_p`` (thesis (4.12)), without np.add.at."""
    G[:, :] = 0.0
    for p in range(alpha.shape[0]):
        G[pair_i[p], pair_y[p]] += alpha[p]
        G[pair_i[p], pair_ybar[p]] -= alpha[p]


def violation_scores(alpha, S, data: _margin.MarginData, C: float = 1.0) -> np.ndarray:
    """The score ``psi_i = l_i - u_i`` of thesis (4.32) for every example.

    ``alpha`` is a dual feasible point and ``S`` the class scores ``(n, q)`` of ``w(alpha)``.
    ``l_i = max(0, max_p H_p)`` (4.29); ``u_i`` (4.30) is the smallest ``H_p`` over the pairs
    with ``alpha_p > 0``, capped at 0 when the example's budget is not exhausted (``zeta_i > 0``),
    and 0 when all of the example's alphas are 0.  By Proposition 3 alpha is optimal iff every
    ``psi_i = 0``.  Examples with ``C_i = 0`` cannot move and get ``psi_i = 0``.
    """
    alpha = np.asarray(alpha, dtype=float)
    diff = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    cost = data.pair_cost
    H = (data.pair_offset - diff) / cost
    n = data.n_samples
    lo = np.zeros(n)
    np.maximum.at(lo, data.pair_i, H)
    up = np.full(n, np.inf)
    pos = alpha > 0
    np.minimum.at(up, data.pair_i[pos], H[pos])
    budget = C * data.Cw
    used = np.bincount(data.pair_i, weights=cost * alpha, minlength=n)
    slack = used < budget * (1.0 - BUDGET_RTOL)
    up[slack] = np.minimum(up[slack], 0.0)
    up[~np.isfinite(up)] = 0.0  # no support and a tight budget only when C_i = 0
    psi = lo - up
    psi[budget <= 0] = 0.0
    return psi


class MarginDualState:
    """Coefficients, incremental scores and the certificate at the current alpha.

    ``model`` the :class:`~hiercvx.models.margin.MarginModel`, ``rows`` its
    :class:`~.primitives.RowData` (features, or the Gram matrix in ``MODE_GRAM``), ``C``
    the regularization constant.  ``F`` is the score factor the compiled passes read and
    update (module docstring); :meth:`certify` recomputes it from scratch (no drift).
    """

    def __init__(self, model: MarginModel, rows: RowData, C: float):
        data = model.data
        self.mode, self.data, self.C = rows.mode, data, C
        self.X = model.X
        self.K = rows.K if rows.mode == MODE_GRAM else None
        self.budget = np.ascontiguousarray(C * data.Cw, dtype=float)
        self.offset = np.ascontiguousarray(data.pair_offset, dtype=float)
        self.cost = np.ascontiguousarray(data.pair_cost, dtype=float)
        self.support = None  # support of alpha at the last checkpoint
        self.n_newton = 0
        self.pass_work = 0.0  # multiply-adds of the passes since the last Newton step
        self.Q = np.ascontiguousarray(data.Q, dtype=float)
        self.G = np.zeros((data.n_samples, data.n_classes))
        self.kdiag = np.ascontiguousarray(row_sq_norms(rows), dtype=float)
        self.F = np.zeros((1, 1))
        self.W = None
        self.scores = None

    def certify(self, alpha):
        """Primal (4.10) at ``w(alpha)``, dual (4.14), class scores; resyncs ``F``."""
        data = self.data
        scatter_coefficients(alpha, data.pair_i, data.pair_y, data.pair_ybar, self.G)
        if self.mode == MODE_GRAM:
            S = self.K @ self.G @ self.Q
            norm2 = float(np.sum(self.G * S))
            self.F = np.ascontiguousarray(S.T)  # S^T: row_dot reads F[c, i] = S[i, c]
            self.W = None
        else:
            W = _margin.weights_from_coefficients(self.G, self.X, data.Lam)
            S = _margin.class_scores(W, self.X, data.Lam)
            norm2 = float(np.sum(W * W))
            self.F = np.ascontiguousarray(data.Lam @ W)  # class weights Q G^T X
            self.W = W
        primal = 0.5 * norm2 + self.C * float(data.Cw @ _margin.slacks(S, data))
        dual = float(data.pair_offset @ alpha) - 0.5 * norm2
        psi = violation_scores(alpha, S, data, self.C)
        self.scores = S
        return primal, dual, psi

    def certificate_work(self) -> float:
        """Multiply-adds of one certificate (for :class:`~.primitives.CertificateSchedule`)."""
        data = self.data
        n, q = data.n_samples, data.n_classes
        if self.mode == MODE_GRAM:
            return float(n * n * q + 4 * data.n_pairs)
        nnz = self.X.nnz if sp.issparse(self.X) else self.X.size
        return float((2 * q + data.Lam.shape[1]) * nnz + 4 * data.n_pairs)

    def checkpoint(self, alpha, tol, polish):
        """Certify; when the working sets (the support of alpha) barely changed since the last
        checkpoint, try a Newton step on their union (Algorithm 2, step 8b) and keep it if the
        dual improves.  ``alpha`` is updated in place.  Returns (primal, dual, psi)."""
        primal, dual, psi = self.certify(alpha)
        support = alpha > 0
        gap = relative_gap(primal, dual)
        settled = self.support is not None and (
            np.count_nonzero(support != self.support) <= SUPPORT_CHANGE * max(1, support.sum()))
        # a Newton step costs about MAX_CG + 2 certificates; spend at most as much on them as
        # on the passes since the last one
        affordable = self.pass_work >= (MAX_CG + 2) * self.certificate_work()
        if polish and gap > tol and settled and affordable:
            self.pass_work = 0.0
            stepped = self.newton_step(alpha, self.budget, self.offset, self.cost)
            if stepped is not None:
                keep = alpha.copy()
                alpha[:] = stepped
                p2, d2, psi2 = self.certify(alpha)
                if d2 >= dual:
                    primal, dual, psi = p2, d2, psi2
                    self.n_newton += 1
                else:  # rounding made it worse: undo
                    alpha[:] = keep
                    primal, dual, psi = self.certify(alpha)
                support = alpha > 0
        self.support = support
        return primal, dual, psi

    def _pair_products(self, v, pi, py, pyb):
        """``<dPhi_p, w(v)>`` for the pairs ``(pi, py, pyb)`` carrying the values ``v``."""
        G = np.empty_like(self.G)
        scatter_coefficients(v, pi, py, pyb, G)
        if self.mode == MODE_GRAM:
            S = self.K @ (G @ self.Q)
        else:
            GX = (self.X.T @ G).T if sp.issparse(self.X) else G.T @ self.X
            S = np.asarray(self.X @ (self.Q @ GX).T)
        return S[pi, py] - S[pi, pyb]

    def newton_step(self, alpha, budget, offset, cost, max_cg: int | None = None):
        """Step 8b of Algorithm 2, approximately: a Newton step on the reduced QP over every
        working set at once, then a feasible exact line search (the dual never decreases).

        The support of alpha is kept, examples whose budget is exhausted keep it exhausted
        (``sum_p cost_p d_p = 0``), and projected conjugate gradients solve
        ``max_d g.d - 1/2 d^T (Phi Phi^T) d`` on that subspace.  The step is cut where an alpha
        reaches 0 or a free budget fills up.  Returns the new alpha (or None: no ascent).
        """
        max_cg = MAX_CG if max_cg is None else max_cg
        data = self.data
        free = np.flatnonzero(alpha > 0)
        if free.size == 0:
            return None
        n = data.n_samples
        pi, py, pyb = data.pair_i[free], data.pair_y[free], data.pair_ybar[free]
        c, a = cost[free], alpha[free]
        used = np.bincount(data.pair_i, weights=cost * alpha, minlength=n)
        tight = used >= budget * (1.0 - 1e-9)
        S = self.scores
        g = offset[free] - (S[pi, py] - S[pi, pyb])
        den = np.bincount(pi, weights=c * c, minlength=n)
        scale = np.where(tight & (den > 0), 1.0 / np.maximum(den, 1e-300), 0.0)

        def project(v):  # onto {sum_p cost_p v_p = 0 for every example with a full budget}
            return v - c * (np.bincount(pi, weights=c * v, minlength=n) * scale)[pi]

        r = project(g)
        r0 = float(np.sqrt(r @ r))
        if r0 == 0.0:
            return None
        d = np.zeros_like(r)
        p = r.copy()
        rr = r0 * r0
        for _ in range(max_cg):
            Hp = project(self._pair_products(p, pi, py, pyb))
            curv = float(p @ Hp)
            if curv <= 1e-14 * rr:  # a flat direction: ascend along it up to the bounds
                d = p if not d.any() else d
                break
            step = rr / curv
            d += step * p
            r -= step * Hp
            rr_new = float(r @ r)
            if np.sqrt(rr_new) <= 1e-10 * r0:
                break
            p = r + (rr_new / rr) * p
            rr = rr_new
        gd = float(g @ d)
        if not gd > 0:
            return None
        dHd = float(d @ self._pair_products(d, pi, py, pyb))
        t = gd / dHd if dHd > 0 else np.inf
        down = d < 0
        if down.any():
            t = min(t, float(np.min(a[down] / -d[down])))
        grow = np.bincount(pi, weights=c * d, minlength=n)
        fill = (grow > 0) & ~tight
        if fill.any():
            t = min(t, float(np.min((budget[fill] - used[fill]) / grow[fill])))
        if not (np.isfinite(t) and t > 0):
            return None
        new = alpha.copy()
        new[free] = a + t * d
        new[new < 1e-14 * max(1.0, float(a.max()))] = 0.0
        return _margin.project_dual(new, data, self.C)


