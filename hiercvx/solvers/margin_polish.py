"""When the margin-family coordinate solvers take step 8b, and the Newton-CG form of it.

Cai's Algorithm 2 (thesis section 4.3) alternates step 8a, the reduced QP of one example
(the passes of :mod:`.working_set`, :mod:`.crammer_singer`), with step 8b, "optimize over all
selected variables", which the algorithm needs for finite convergence.  At every certificate
:class:`Polisher` decides whether to take 8b and which form:

1. the face step (:mod:`.face_step`), when the working sets have settled (at most
   ``settled_change`` of the support changed since the last certificate), the face fits
   (``max_face``) and the passes since the last face step did at least ``face_wait`` times
   its predicted cost;
2. if that did not halve the gap, the support step (:mod:`.support_step`), settled or not,
   when its working pairs fit one of its forms and the passes paid for it likewise;
3. if neither halved the gap and the support settled, a Newton step on the union of the
   working sets (:func:`newton_step`), whose cost is about ``max_cg + 2`` certificates.

Spending on a step at most what the passes spent since the last one keeps the total work
within a constant factor of the better of the two strategies (the ski-rental argument); after
a step that did not halve the gap the wait grows (up to ``face_wait``), since the face was
not identified yet.  Every step is certified on the full model and kept only where it improves
the certificate.

The Newton step.  The support of alpha is kept, examples whose budget is exhausted keep it
exhausted (``sum_p cost_p d_p = 0``), and projected conjugate gradients (Nocedal & Wright,
*Numerical Optimization*, 2nd ed., 2006, algorithm 16.2) solve
``max_d g.d - 1/2 d^T (Phi Phi^T) d`` on that subspace; the step is cut where an alpha reaches 0
or a free budget fills up (an exact, feasible line search: the dual never decreases).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ..models import margin as _margin
from ..result import relative_gap
from ._margin_kernels import scatter_coefficients
from .face_step import FaceStep
from .margin_dual import MarginDualState, Options
from .primitives import MODE_GRAM
from .support_step import SupportStep

logger = logging.getLogger(__name__)

__all__ = ["Polisher", "newton_step"]


class Polisher:
    """Step 8b's policy on a :class:`~.margin_dual.MarginDualState` (module docstring).

    ``warm``: the passes start from a warm start, whose own solve is credited with
    ``warm_support_credit`` certificates' worth of passes towards the first support step
    (which may then come at the first certificate: the support of a rough solution is usually
    the optimum's or close to it).  ``carry``: the :attr:`carry` of a solve this one continues
    (the label-set engine's rounds solve a growing working set one after the other: the face
    step's credit, its wait and the products its matrix-free solves took go on across them as
    in one run).  The passes report their work
    (multiply-adds) through :meth:`passed`; ``work_done`` is their total (the margin engine's
    budgets)."""

    def __init__(self, state: MarginDualState, *, warm: bool = False,
                 options: Options | None = None, carry: tuple | None = None):
        self.state = state
        self.options = state.options if options is None else options
        self.face = FaceStep(state, self.options)
        self.support = SupportStep(state, self.face, self.options)
        self.last_support = None  # support of alpha at the last checkpoint
        self.pass_work = 0.0  # multiply-adds of the passes since the last Newton step
        self.work_done = 0.0  # multiply-adds of every pass
        self._work_seen = 0.0
        self.face_wait = 1.0  # pass work before the next face step, in units of its cost
        self.face_credit = 0.0  # pass work since the last face step
        self.support_wait = 1.0  # the same for the support step
        self.support_credit = (self.options.warm_support_credit * state.certificate_work()
                               if warm else 0.0)
        if carry is not None:
            self.face_credit, self.face_wait, products = carry
            self.face.solver.n_iterative, self.face.solver.n_products = products

    @property
    def carry(self) -> tuple:
        """``(face credit, face wait, (matrix-free solves, their products))`` for a solve that
        continues this one."""
        solver = self.face.solver
        return self.face_credit, self.face_wait, (solver.n_iterative, solver.n_products)

    def passed(self, work: float) -> None:
        """A pass did ``work`` multiply-adds."""
        self.pass_work += work
        self.work_done += work

    def checkpoint(self, alpha, tol, polish: bool = True):
        """Certify and take step 8b when due (module docstring); ``alpha`` is updated in
        place.  Returns ``(primal, dual, psi)``: the primal is the best met (the state's
        ``best_primal`` when lower than the primal at ``w(alpha)``)."""
        state, opts = self.state, self.options
        primal, dual, psi = state.certify(alpha)
        support = alpha > 0
        gap = relative_gap(min(primal, state.best_primal), dual)
        settled = self.last_support is not None and (
            np.count_nonzero(support != self.last_support)
            <= opts.settled_change * max(1, support.sum()))
        n_support = int(np.count_nonzero(support))
        work_new = self.pass_work - self._work_seen
        self.face_credit += work_new
        self.support_credit += work_new
        self._work_seen = self.pass_work
        halved = False
        cert = (primal, dual, psi)
        if polish and gap > tol and settled and self.face.fits(support) \
                and self.face_credit >= self.face_wait * self.face.work(n_support):
            cert, gap, halved = self._face_step(alpha, tol, cert, gap)
        if polish and not halved and gap > tol and 0 < n_support \
                and self.support.form(n_support) is not None \
                and self.support_credit >= self.support_wait * self.support.work(n_support):
            cert, gap, halved = self._support_step(alpha, tol, cert, gap)
        if polish and not halved and gap > tol and settled \
                and self.pass_work >= (opts.max_cg + 2) * state.certificate_work():
            cert = self._newton_step(alpha, cert)
        self.last_support = alpha > 0
        primal, dual, psi = cert
        return min(primal, state.best_primal), dual, psi

    def _face_step(self, alpha, tol, cert, gap):
        """The face step, then its wait: 1 after a step that halved the gap, else 1.5 times
        longer or as many times as the changes exceeded those allowed, at most ``face_wait``."""
        self.face_credit = 0.0
        primal, dual, psi = self.face.step(alpha, tol, cert[0], cert[1])
        new_gap = relative_gap(min(primal, self.state.best_primal), dual)
        self.state.n_newton += new_gap < gap  # an exact step counts when it closed gap
        halved = new_gap <= 0.5 * gap
        self.face_wait = 1.0 if halved else min(max(1.5 * self.face_wait, self.face.miss),
                                                self.options.face_wait)
        return (primal, dual, psi), new_gap, halved

    def _support_step(self, alpha, tol, cert, gap):
        """The support step, then its wait (doubled after a step that did not halve the gap)."""
        self.support_credit = 0.0
        primal, dual, psi = self.support.step(alpha, tol, cert[0], cert[1])
        new_gap = relative_gap(min(primal, self.state.best_primal), dual)
        self.state.n_newton += new_gap < gap
        halved = new_gap <= 0.5 * gap
        self.support_wait = 1.0 if halved else min(2.0 * self.support_wait,
                                                   self.options.face_wait)
        return (primal, dual, psi), new_gap, halved

    def _newton_step(self, alpha, cert):
        """The Newton step, kept when the certified dual did not decrease (rounding)."""
        state = self.state
        self.pass_work = self._work_seen = 0.0
        stepped = newton_step(state, alpha, max_cg=self.options.max_cg)
        if stepped is None:
            return cert
        keep = alpha.copy()
        alpha[:] = stepped
        new = state.certify(alpha)
        if new[1] >= cert[1]:
            state.n_newton += 1
            return new
        alpha[:] = keep  # rounding made it worse: undo
        return state.certify(alpha)


def _pair_products(state: MarginDualState, v, pi, py, pyb):
    """``<dPhi_p, w(v)>`` for the pairs ``(pi, py, pyb)`` carrying the values ``v``."""
    G = np.empty_like(state.G)
    scatter_coefficients(v, pi, py, pyb, G)
    if state.mode == MODE_GRAM:
        S = state.K @ (G @ state.Q)
    else:
        X = state.X
        GX = (X.T @ G).T if sp.issparse(X) else G.T @ X
        S = np.asarray(X @ (state.Q @ GX).T)
    return S[pi, py] - S[pi, pyb]


def _conjugate_gradients(state, g, project, pairs, max_cg):
    """Projected conjugate gradients for ``(Phi Phi^T) d = g`` on the subspace of
    ``project``; a flat direction is returned as it is (ascend along it up to the bounds)."""
    r = project(g)
    r0 = float(np.sqrt(r @ r))
    if r0 == 0.0:
        return None
    d = np.zeros_like(r)
    p = r.copy()
    rr = r0 * r0
    for _ in range(max_cg):
        Hp = project(_pair_products(state, p, *pairs))
        curv = float(p @ Hp)
        if curv <= 1e-14 * rr:
            return p if not d.any() else d
        step = rr / curv
        d += step * p
        r -= step * Hp
        rr_new = float(r @ r)
        if np.sqrt(rr_new) <= 1e-10 * r0:
            break
        p = r + (rr_new / rr) * p
        rr = rr_new
    return d


def newton_step(state: MarginDualState, alpha, max_cg: int = Options.max_cg):
    """Step 8b approximately: a Newton step on the reduced QP over every working set at once,
    then a feasible exact line search (module docstring).  Returns the new alpha (projected
    onto the dual feasible set) or None: no ascent."""
    data = state.data
    free = np.flatnonzero(alpha > 0)
    if free.size == 0:
        return None
    n = data.n_samples
    pairs = (data.pair_i[free], data.pair_y[free], data.pair_ybar[free])
    pi = pairs[0]
    c, a = state.cost[free], alpha[free]
    tight, used = state.tight(alpha)
    S = state.scores
    g = state.offset[free] - (S[pi, pairs[1]] - S[pi, pairs[2]])
    den = np.bincount(pi, weights=c * c, minlength=n)
    scale = np.where(tight & (den > 0), 1.0 / np.maximum(den, 1e-300), 0.0)

    def project(v):  # onto {sum_p cost_p v_p = 0 for every example with a full budget}
        return v - c * (np.bincount(pi, weights=c * v, minlength=n) * scale)[pi]

    d = _conjugate_gradients(state, g, project, pairs, max_cg)
    if d is None:
        return None
    gd = float(g @ d)
    if not gd > 0:
        return None
    dHd = float(d @ _pair_products(state, d, *pairs))
    t = gd / dHd if dHd > 0 else np.inf
    down = d < 0
    if down.any():
        t = min(t, float(np.min(a[down] / -d[down])))
    grow = np.bincount(pi, weights=c * d, minlength=n)
    fill = (grow > 0) & ~tight
    if fill.any():
        t = min(t, float(np.min((state.budget[fill] - used[fill]) / grow[fill])))
    if not (np.isfinite(t) and t > 0):
        return None
    new = alpha.copy()
    new[free] = a + t * d
    new[new < 1e-14 * max(1.0, float(a.max()))] = 0.0
    return _margin.project_dual(new, data, state.C)
