"""Fast certified solvers for the sibling-margin QP of Wang, Shen & Pan (*Large Margin
Hierarchical Classification with Mutually Exclusive Class Membership*, JMLR 12, 2011): HSVM
(2) and every DC step (8) of HPSI (3).

Entry points (on a model from :func:`hiercvx.models.sibling.prepare`; both return a
:class:`~hiercvx.result.Solution`):

* :func:`solve` -- one certified solve of (8);
* :func:`solve_dc` -- HPSI by the DC loop :func:`hiercvx.solvers.dc.dc_iterations`, one
  :class:`SiblingQPSolver` (the engine that keeps the factorizations and the warm start) for
  all its steps.

Both take ``options=`` (:class:`Options`, every setting with its reason).

The QP (Appendix B, (8); :func:`hiercvx.formulations.hpsi.primal`)::

    min_{w, b, xi}  1/2 sum_v ||w_v||^2 + C sum_i xi_i + sum_p lam_p m_p(f)
    s.t.  xi_i >= 0,  m_p(f) + xi_i >= 1  (p = (i, j, t), (j, t) in Q(y_i)),  sum-to-zero

with ``m_p(f) = f_j(x_i) - f_t(x_i)`` and ``lam`` the DC linearization (0 for HSVM), and its
dual (9)-(11) after eliminating ``delta`` (see ``formulations/hpsi.md``)::

    max_beta  D(beta) = sum_p beta_p - 1/2 ||W(gamma)||^2,   gamma = beta - lam
    s.t.      beta >= 0,  sum_{p of i} beta_p <= C  (11),   r(beta) = E^T gamma = 0  (10)

``W(gamma) = Gamma(gamma)^T X`` (linear) or the representer coefficients ``Gamma(gamma)``
(kernel); ``Gamma`` is ``(n, M)`` with ``+gamma_p`` at ``(i, j_p)``, ``-gamma_p`` at
``(i, t_p)``; one equality ``r_v = 0`` per node (the biases are their multipliers).

Four methods, one certificate (the pieces live in ``hiercvx.solvers._sibling``):

* ``"ipm"`` -- a primal-dual interior point on (8) in reduced coordinates: every sibling
  group in an orthonormal basis of ``{sum = 0}``, the inputs through ``x`` or a pivoted
  Cholesky factor of the kernel; one dense ``(M'(q+1))``-square Newton system per step,
  whatever ``C`` (``PrimalIPM``);
* ``"dual_ipm"`` -- a Mehrotra interior point on the dual (9)-(11) over the *live* pairs (a
  pair whose beaten node lies on no label's path and carries no DC term has ``beta = 0`` at
  every dual feasible point, by (10)), its Newton matrix factored by sibling-group blocks
  (:func:`hiercvx.solvers.dual_qp.solve_dual_qp`);
* ``"working_set"`` -- the same on a set of pairs grown until the certificate holds
  (``WorkingSet``);
* ``"alm"`` -- dual block coordinate ascent with an augmented Lagrangian for (10), warm
  started across DC steps and C values (``ALM``).

Certificate (celer-style stop): the primal (8) recomputed at the returned ``(w, b)`` by the
model (:meth:`hiercvx.models.sibling.SiblingModel.primal_value`) against the dual ``D`` at a
*feasible* point -- the method's ``beta`` repaired so that ``r = 0`` holds to round-off
(``Certificate``).  Success means
``(primal - dual) / max(1, |primal|) <= tol``.  For a kernel the bound is the dual of the
problem with the exact Gram matrix (``K - L L^T`` is PSD, so a low-rank factor can only widen
the gap, never fake it).
"""

from __future__ import annotations

from dataclasses import MISSING

from .._validation import check_positive
from ..models.sibling import SiblingModel
from ..result import Solution, check_iteration_options
from ._sibling.certificate import least_norm_step
from ._sibling.dual import group_blocks
from ._sibling.engine import SiblingQPSolver
from ._sibling.ipm import NormalBuilder, ipm_step_cost, pivoted_cholesky
from ._sibling.options import METHODS, Options
from .dc import check_dc_options


__all__ = ["Options", "METHODS", "solve", "solve_dc", "SiblingQPSolver", "pivoted_cholesky",
           "least_norm_step", "group_blocks", "NormalBuilder", "ipm_step_cost"]


def solve(model: SiblingModel, C=1.0, *, tol=1e-6, max_iter=None, verbose=False,
          pair_weights=None, options: Options | None = None, method=None, max_passes=None,
          rank_rtol=None, max_ipm_size=None, rho=None, random_state=MISSING,
          max_dual_pairs=None) -> Solution:
    """One certified solve of (8) on ``model`` (:func:`hiercvx.models.sibling.prepare`): HSVM
    (2) when ``pair_weights`` is None, else a DC step of (3).

    Parameters
    ----------
    model : SiblingModel
        The prepared problem.
    C : float
        The loss weight of (2), > 0.
    tol : float
        The certified relative gap at which the solve stops.
    max_iter : int, optional
        IPM iterations (default ``options.ipm_max_iter``; working set: in all rounds,
        ``options.working_set_max_iter``) or ALM multiplier steps (``options.alm_max_iter``).
    verbose : bool
        Log the method's steps at INFO: interior point steps and certificates, working-set
        rounds, ALM multiplier steps (the last line carries the returned gap).
    pair_weights : array of shape (n_pairs,), optional
        The DC term ``lam`` of (8).
    options : Options, optional
        The solver's settings; the keywords ``method``, ``max_passes``, ``rank_rtol``,
        ``max_ipm_size``, ``rho``, ``random_state`` and ``max_dual_pairs`` override its
        fields of the same name when given (not ``None``; ``random_state=None`` is given:
        fresh entropy).

    Returns
    -------
    Solution
        ``weights`` ``(M, d)`` (linear) or ``(M, n)`` representer coefficients (kernel) in the
        working hierarchy's order; extras ``biases`` ``(M,)``, ``dual_feasible`` (the repaired
        ``beta`` of the bound), ``pair_weights``, ``C``, ``method``; ``dual`` is ``beta`` as
        iterated.
    """
    C = check_positive(C, "C")
    check_iteration_options(tol, max_iter, who="sibling_qp.solve")
    opts = Options.of(options, method=method, max_passes=max_passes, rank_rtol=rank_rtol,
                      max_ipm_size=max_ipm_size, rho=rho, random_state=random_state,
                      max_dual_pairs=max_dual_pairs)
    engine = SiblingQPSolver(model, options=opts)
    return engine.solve(C, pair_weights, tol=float(tol), max_iter=max_iter, warm_start=False,
                        verbose=verbose)


def solve_dc(model: SiblingModel, C=1.0, *, tol=1e-6, max_iter=50, verbose=False, gap_tol=1e-6,
             step_max_iter=None, options: Options | None = None, method=None, rank_rtol=None,
             max_ipm_size=None, rho=None, random_state=MISSING,
             max_dual_pairs=None) -> Solution:
    """HPSI by the DC algorithm (3) on ``model``, every convex step by one
    :class:`SiblingQPSolver` certified to ``gap_tol``.

    Parameters
    ----------
    model, C, verbose, options, method, rank_rtol, max_ipm_size, rho, random_state, max_dual_pairs
        As :func:`solve` (``options.dc`` holds the DC loop's settings).
    tol : float
        Stop when the psi cost changes by at most this (absolute, as in the paper).
    max_iter : int
        DC steps (0: HSVM only).
    gap_tol : float
        The certified relative gap of every convex step.
    step_max_iter : int, optional
        Iterations of every convex step (as ``max_iter`` of :func:`solve`).

    Returns
    -------
    Solution
        The result of :func:`hiercvx.solvers.dc.dc_iterations` (a certified DC fixed point,
        or ``SolverError`` when the path cannot be certified; extras ``biases``,
        ``dc_objectives``, ``best_iteration``, ``step_gaps``, ``steps``,
        ``hsvm``, ``method``).
    """
    C = check_positive(C, "C")
    check_dc_options(tol, max_iter)
    check_iteration_options(gap_tol, step_max_iter,
                            who="sibling_qp.solve_dc (gap_tol, step_max_iter)")
    opts = Options.of(options, method=method, rank_rtol=rank_rtol, max_ipm_size=max_ipm_size,
                      rho=rho, random_state=random_state, max_dual_pairs=max_dual_pairs)
    engine = SiblingQPSolver(model, options=opts)
    return engine.solve_dc(C, tol=tol, max_iter=int(max_iter), gap_tol=float(gap_tol),
                           step_max_iter=step_max_iter, verbose=verbose)
