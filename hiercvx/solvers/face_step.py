"""The face step: the margin dual maximized exactly on the face the passes identified.

Step 8b of Cai's Algorithm 2 ("optimize over all selected variables"), done exactly.  Near the
optimum dual coordinate ascent converges linearly with a rate close to 1 on nearly hard-margin
problems, and the primal at ``w(alpha)`` lags behind the dual (its error is first order in
``w - w*``, the dual's second order), while the *face* -- which pairs carry ``alpha_p > 0``
(the support ``S``) and which examples exhaust their budget (``T``) -- is already right.

On the face the dual (4.14) is an equality-constrained QP.  Eliminating in each tight example
the multiplier of its first support pair ``p0``,
``alpha_p0 = (C_i - sum_{p != p0} cost_p alpha_p) / cost_p0``, leaves free variables ``lam``
with ``alpha_S = a_fix + E^T lam`` and the normal equations::

    (E B E^T) lam = E (b_S - B a_fix),    B = Phi_S Phi_S^T,
    B_pp' = K_ii' (Q_yy' - Q_yb' - Q_by' + Q_bb')

one row per support pair, never the features' dimension; :mod:`.face` forms it, factorizes it
by Cholesky with a small relative ridge (the face is often degenerate) and reuses the previous
round's factor when a round changed few rows.  Faces above ``max_face`` rows (label sets) are
solved on linear models without forming the matrix, by preconditioned conjugate gradients
(:mod:`.face_cg`); a system they cannot solve is inconsistent, the face not yet the
optimum's, and ends the step.

The solution's primal point ``w(alpha_S)`` is a primal candidate even where some
``alpha_p < 0``.  The face is then corrected as in a primal-dual active-set method
(Hintermüller, Ito & Kunisch, "The primal-dual active set strategy as a semismooth Newton
method", SIAM J. Optim. 13, 2002): pairs with ``alpha_p < 0`` leave, examples over budget
become tight, tight examples whose slack ``xi_i`` comes out negative are released, pairs whose
violation exceeds ``xi_i`` enter; and the face is solved again while few pairs change.  The
rounds are safeguarded by the primal at ``w(alpha_S)``: a round worse than the best round goes
back to the best round's face with only the larger half of its corrections (then a quarter,
...), since unguarded corrections can cycle.  Every round is certified on the full model (the
dual at the projected ``alpha``, :func:`~hiercvx.models.margin.project_dual`; the primal at
``w(alpha_S)``) and the best of each is kept, so the step never makes the certificate worse.
"""

from __future__ import annotations

import logging

import numpy as np

from ..models import margin as _margin
from ..result import reached, relative_gap
from .face import FaceSolver, face_rows
from .margin_dual import MarginDualState, Options

logger = logging.getLogger(__name__)

__all__ = ["FaceStep"]


def _segment_min(values, ptr):
    """Per example the smallest of its entries (``inf`` when it has none)."""
    return -_margin.segment_max(-values, ptr)


def _largest_share(mask, size, share):
    """The ``ceil(share * count)`` entries of ``mask`` with the largest ``size``."""
    idx = np.flatnonzero(mask)
    k = int(np.ceil(share * idx.size))
    if k >= idx.size:
        return mask
    out = np.zeros_like(mask)
    out[idx[np.argsort(-size[idx], kind="stable")[:k]]] = True
    return out


class FaceStep:
    """The face step on a :class:`~.margin_dual.MarginDualState` (module docstring).

    ``solver`` is the :class:`~.face.FaceSolver` of the face systems; ``miss`` the changes of
    the face in the last round over the changes allowed (how far the face was from
    identified: :mod:`.margin_polish` waits that much longer after a miss); ``n_steps`` the
    steps tried."""

    def __init__(self, state: MarginDualState, options: Options | None = None):
        self.state = state
        self.options = state.options if options is None else options
        self.solver = FaceSolver(state.data, state.mode, state.X, state.K, state.Q,
                                 self.options.face)
        self.miss = 0.0
        self.n_steps = 0

    def iterative(self, n_support: int) -> bool:
        """Whether a face of ``n_support`` pairs is solved matrix-free (:mod:`.face_cg`):
        above ``max_face`` on linear models."""
        return n_support > self.options.max_face and self.solver.matrix_free

    def fits(self, support) -> bool:
        """Whether the face of ``support`` is small enough to factorize (``max_face``) or, on
        linear models, to solve matrix-free (``max_face_cg``)."""
        n_support = int(np.count_nonzero(support))
        limit = self.options.max_face_cg if self.solver.matrix_free else self.options.max_face
        if n_support == 0 or n_support > limit:
            return False
        return np.unique(self.state.data.pair_i[support]).size <= limit

    def work(self, n_support: int) -> float:
        """The cost of one face round in multiply-adds of the passes: building (16 per entry)
        and factorizing the face matrix (``face_speedup`` converts) or, matrix-free, the
        expected products (the mean of the solves so far, else ``cg.expected_iter``; four
        multiply-adds per row and feature each, and the class weights' product with the class
        attributes, or with the class Gram matrix without them), and the two evaluations on
        the full model."""
        m = float(n_support)
        if self.iterative(n_support):
            d = float(self.state.X.shape[1])
            solver = self.solver
            classes = float(self.state.Q.size) if solver.Lam is None else 2.0 * solver.Lam.nnz
            products = (solver.n_products / solver.n_iterative if solver.n_iterative
                        else self.options.face.cg.expected_iter)
            solve = products * (4.0 * m + classes) * d
        else:
            solve = (m ** 3 / 3.0 + 16.0 * m * m) / self.options.face_speedup
        return solve + 2.0 * self.state.certificate_work()

    def solve_face(self, support, tight, alpha):
        """The dual point that maximizes (4.14) on the face (``alpha_p = 0`` off ``support``,
        budgets of the ``tight`` examples exhausted, the others free) nearest to ``alpha`` --
        not necessarily feasible: some ``alpha_p`` may come out negative.  Returns it, or None
        when the face matrix cannot be factorized.

        On a degenerate face (more support pairs than the primal has dimensions) the
        maximizers form an affine set; the ridge pulls ``lam`` towards the current alpha's
        (``(M + eps I) lam = rhs + eps lam_0``), which picks the maximizer nearest to it, not
        the least-norm one (whose entries are negative far more often)."""
        state = self.state
        rows = face_rows(support, tight, state.data.pair_i, state.cost, state.budget)
        lam = self.solver.solve(rows, alpha[rows.pair], iterative=self.iterative(rows.size))
        if lam is None:  # FaceSolver returns finite answers only
            return None
        return rows.scatter(lam, state.data.n_pairs)

    def _corrections(self, a, S, support, tight):
        """The face's corrections at ``w(a)`` (class scores ``S``): the masks ``(leave, over,
        release, enter)`` and their sizes (how far each is violated)."""
        state, data = self.state, self.state.data
        H, xi = state.violations(S)
        xi_face = _segment_min(np.where(support, H, np.inf), data.pair_ptr)
        used = np.bincount(data.pair_i, weights=state.cost * a, minlength=data.n_samples)
        leave = support & (a < 0)
        over = ~tight & (used > state.budget * (1.0 + 1e-9))
        release = tight & (xi_face < -1e-9)
        enter = ~support & (H > 1e-9) & (H >= xi[data.pair_i] - 1e-9)
        sizes = (-a, used - state.budget, -xi_face, H - xi[data.pair_i])
        return (leave, over, release, enter), sizes

    def step(self, alpha, tol, primal, dual):
        """Step 8b exactly: :meth:`solve_face` on the face of ``alpha``, corrected for up to
        ``face_rounds`` rounds while at most ``face_change`` of it changes (counted in the
        rounds whose corrections are applied: those that improve on the best), and up to
        ``face_rounds_max`` while the changes shrink below ``face_finish`` of it.  The best
        dual point replaces ``alpha`` (in place), the best primal point goes to the state's
        ``best_primal`` / ``best_G``; both certified on the full model.  Returns (primal at
        ``w(alpha)``, dual, psi) of the final ``alpha``."""
        state, opts, n = self.state, self.options, self.state.data.n_samples
        self.n_steps += 1
        support = alpha > 0
        tight, _ = state.tight(alpha)
        best_alpha, best_round = None, None  # (primal at w(a), support, tight, corrections)
        self.miss = 0.0
        share = 1.0  # of the best round's corrections applied
        last_changes = np.inf
        for round_ in range(opts.face_rounds_max):
            a = self.solve_face(support, tight, alpha)
            if a is None:
                break
            p_face, S = state.primal_at(a, primal)
            best_alpha, primal, dual = state.certify_candidate(a, primal, dual, best_alpha)
            if reached(relative_gap(min(primal, state.best_primal), dual), tol):
                break
            corrections, sizes = self._corrections(a, S, support, tight)
            changes = int(sum(c.sum() for c in corrections))
            improved = best_round is None or p_face < best_round[0]
            if improved:
                best_round = (p_face, support, tight, corrections, sizes)
                share = 1.0
            else:
                share *= 0.5
            logger.debug("face round: primal %.10g (at w(alpha_S) %.10g) dual %.10g; %d changes "
                         "of %d pairs; next applies %.3g of the best round's", primal, p_face,
                         dual, changes, support.sum(), share)
            allowed = opts.face_change * support.sum() + opts.face_change_pairs
            self.miss = changes / allowed
            # too many changes end the step only when they are to be applied: a worse round's
            # are not (the next round corrects the best round's face by half as much)
            if changes == 0 or (improved and changes > allowed):
                break
            if round_ + 1 >= opts.face_rounds and not (
                    changes < last_changes and changes <= opts.face_finish * support.sum()):
                break
            last_changes = changes
            _, support, tight, corrections, sizes = best_round
            leave, over, release, enter = (_largest_share(c, z, share)
                                           for c, z in zip(corrections, sizes))
            support = (support & ~leave) | enter
            tight = (tight | over) & ~release
            tight &= np.bincount(state.data.pair_i, weights=support, minlength=n) > 0
            if not self.fits(support):
                break
        # the next step comes after many passes, on a face too far from this one's for the
        # factor to serve: its two m-square matrices are dropped between passes
        self.solver.release()
        if best_alpha is not None:
            alpha[:] = best_alpha
            state.n_newton += 1
        return state.certify(alpha)
