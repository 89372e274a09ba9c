"""The numpy model of the sibling-margin SVM (HSVM) and HPSI of Wang, Shen & Pan.

Source: *Large Margin Hierarchical Classification with Mutually Exclusive Class Membership*
(Huixin Wang, Xiaotong Shen, Wei Pan, JMLR 12, 2011), sections 2-3 and Appendix B; the sheet
``formulations/hpsi.md`` has the equations and the paper's typos.

``H`` is a tree with root 0; every non-root node ``v`` has ``f_v(x) = w_v^T x~ + b_v``
(linear: ``x~ = x``; kernel: ``x~ = (k(x_1, x), ..., k(x_n, x))``, ``||w_v||^2 = c_v^T K c_v``).
For a label ``y`` the pairs ``Q(y) = {(j, t): t in sib(j), j in anc(y) + {y}}`` (Appendix B,
(8)) give the generalized margin ``u_min(f(x), y) = min_{(j, t) in Q(y)} f_j(x) - f_t(x)``
(section 3.1).  The cost (2) is ``1/2 sum_v ||w_v||^2 + C sum_i v(u_min(f(x_i), y_i))`` under
the sum-to-zero constraints of Theorem 1, with ``v`` the hinge (HSVM) or the psi-loss (HPSI).

:func:`prepare` validates ``(X, y, H, kernel, sigma)`` once and returns a
:class:`SiblingModel`: pairs (``hiercvx.models._sibling_pairs``, re-exported here),
groups, the (kernel) data, the cost (2)/(8) at given functions,
the dual (9) at a repaired dual feasible point, the bias recoveries of Appendix B, and the DC
linearization of (3).  :mod:`hiercvx.formulations.hpsi` declares the CVXPY problems from it,
:mod:`hiercvx.solvers.sibling_qp` and :mod:`hiercvx.solvers.dc` solve on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from .._validation import check_features, check_positive
from ..exceptions import InputError, SolverError
from ..kernels import Kernel, check_psd, make_kernel, psd_factor
from ._base import Model, Variable
from ._sibling_repair import dual_feasible
from ._sibling_pairs import (SiblingPairs, as_label_array, check_tree, hinge,  # noqa: F401
                             label_indices, names_array, node_pair_table, predict_top_down, psi,
                             score_matrix, sibling_pairs, u_min)

__all__ = ["prepare", "SiblingModel", "BiasOptions", "SiblingPairs", "sibling_pairs",
           "checked_inputs", "group_matrix", "check_tree", "node_pair_table", "check_pair_weights",
           "predict_top_down", "u_min", "psi", "hinge", "cost", "linearization"]


@dataclass(frozen=True)
class BiasOptions:
    """Settings of :meth:`SiblingModel.least_biases`, the least-norm choice among the optimal
    biases of (8) for given weights (Wang, Shen & Pan, Appendix B)."""

    #: the round-off of the cost of (8) in the biases and slacks, relative to the sum of the
    #: magnitudes of its terms: the room the least-norm program gets over the optimum, and
    #: the uncertainty of the cost at the solver's biases (large far along a flat ray)
    roundoff_rtol: float = 1e-14
    #: how much more (relative to ``|cost|``) the least-norm biases may cost than the given
    #: ones, for the linear program's own accuracy: far below every step's ``gap_tol``
    #: (1e-8 and up), so certificates do not move; past it the given biases are kept
    accept_rtol: float = 1e-10
    #: HiGHS's primal feasibility tolerance: its smallest value; at its default (1e-7) the
    #: answer may cost 1e-8 more than the level it was given
    feasibility_tol: float = 1e-10

    def __post_init__(self):
        for name in ("roundoff_rtol", "accept_rtol", "feasibility_tol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not np.isfinite(value) or value < 0:
                raise InputError(f"BiasOptions.{name} must be a number >= 0, got {value!r}")


@dataclass(eq=False)
class SiblingModel(Model):
    """The problem (2)/(8) of Wang, Shen & Pan on validated data, in numpy.

    Functions are ``(M, p)`` arrays over all nodes of the working hierarchy
    ``pairs.hierarchy`` (``H`` plus a self leaf under every internal label; root row zero):
    ``p = d`` weights (linear) or ``p = n`` representer coefficients (kernel), with the
    biases ``b`` ``(M,)`` alongside.  Kernel: ``K`` is the symmetrized Gram matrix and ``L``
    is ``None`` (the fast solver needs no eigendecomposition); :meth:`factored` returns the
    model the CVXPY declarations use, with ``K = L L^T`` its PSD part and the factor ``L``.
    """

    method = "sibling_svm"
    equations = {"primal": "(2), (8)", "dual": "(9)-(11)", "dc": "(3)"}
    variables = {
        "W": Variable("(M, d) or (M, n)", "node weights w_v (linear) or representer "
                      "coefficients c_v (kernel), rows in the working hierarchy's order"),
        "b": Variable("(M,)", "node biases b_v"),
        "xi": Variable("(n,)", "slacks: the hinge of u_min(f(x_i), y_i)"),
        "beta": Variable("(P,)", "multipliers of the pair constraints of (8), budget C per "
                         "sample (11)", side="dual"),
    }

    pairs: SiblingPairs
    X: Any
    kernel: Kernel
    linear: bool
    K: np.ndarray | None        # Gram matrix (kernel form only); L L^T once factored
    L: np.ndarray | None        # its PSD factor (n, r), set by factored()
    group_matrix: sp.csr_matrix  # (n_groups, M) membership
    group_size: np.ndarray
    _factored: Any = field(default=None, repr=False)

    def factored(self) -> "SiblingModel":
        """The model with ``K = L L^T`` and ``L`` its PSD factor
        (:func:`~hiercvx.kernels.psd_factor`), as the CVXPY declarations need
        (``x^T K x = ||L^T x||^2``); computed once.  Linear: self."""
        if self.linear or self.L is not None:
            return self
        if self._factored is None:
            L = psd_factor(self.K)
            self._factored = replace(self, K=L @ L.T, L=L, _factored=None)
        return self._factored

    # -- the Model interface
    def objective(self, weights, *, biases, C=1.0, pair_weights=None) -> float:
        """(8) at ``(weights, biases)`` (centred first): HSVM (2) when ``pair_weights`` is None."""
        coef, b = self.center(np.asarray(weights, float), np.asarray(biases, float))
        lam = None if pair_weights is None else check_pair_weights(pair_weights, self)
        return self.primal_value(coef, b, float(C), lam)

    def objective_at(self, solution, **params) -> float:
        """:meth:`objective` at a solution's weights and its biases (``values`` or ``extras``)."""
        biases = solution.values.get("biases", solution.extras.get("biases"))
        if biases is None:
            raise InputError("the solution carries no biases (values['biases'] or "
                             "extras['biases']); call objective(weights, biases=...)")
        return self.objective(solution.weights, biases=biases, **params)

    def lower_bound(self, dual, *, C=1.0, pair_weights=None) -> float:
        """(9) at the pair multipliers ``dual`` made dual feasible (:meth:`dual_feasible`)."""
        lam = check_pair_weights(pair_weights, self)
        return self.dual_value(self.dual_feasible(np.asarray(dual, float), lam, float(C)), lam)

    def scores(self, weights, X, biases=None) -> np.ndarray:
        """``f_v(x)`` ``(m, M)`` of new points: ``X W^T + b`` (linear) or ``k(X, X_train) C^T + b``
        (kernel; for ``kernel="precomputed"`` pass the ``(m, n)`` kernel rows)."""
        coef = np.asarray(weights, float)
        b = np.zeros(self.M) if biases is None else np.asarray(biases, float)
        if self.linear:
            Xn = check_features(X, "X_new")
            if Xn.shape[1] != self.X.shape[1]:
                raise InputError(f"X_new has {Xn.shape[1]} features, the training data has "
                                 f"{self.X.shape[1]}")
            out = Xn @ coef.T
            return (out.toarray() if sp.issparse(out) else np.asarray(out)) + b[None, :]
        if self.kernel.name == "precomputed":
            Kn = check_features(X, "X_new (kernel rows)", allow_sparse=False)
        else:
            Xn = check_features(X, "X_new")
            if Xn.shape[1] != self.X.shape[1]:
                raise InputError(f"X_new has {Xn.shape[1]} features, the training data has "
                                 f"{self.X.shape[1]}")
            support = np.flatnonzero(np.any(coef != 0, axis=0))
            Kn = np.zeros((Xn.shape[0], self.n))
            if support.size:
                Kn[:, support] = self.kernel(Xn, self.X[support])
        if Kn.shape[1] != self.n:
            raise InputError(f"kernel rows need one column per training point ({self.n}), "
                             f"got shape {Kn.shape}")
        return Kn @ coef.T + b[None, :]

    def oracle(self, scores, *args, **kwargs):
        """The most violated pair of every training sample: ``(u_min, pair index)`` from the
        node scores ``(n, M)`` (``-1`` where ``Q(y_i)`` is empty)."""
        return self.pairs.u_min(np.asarray(scores, float), return_pairs=True)

    def predict(self, weights, biases, X) -> np.ndarray:
        """``d^H`` at new points, as node names of the caller's hierarchy."""
        idx = predict_top_down(self.scores(weights, X, biases), self.pairs.hierarchy,
                               return_index=True)
        return self.pairs.to_original(idx)

    @property
    def n(self) -> int:
        return self.pairs.n_samples

    @property
    def M(self) -> int:
        return self.pairs.n_nodes

    # -- functions
    def coefficients(self, Z: np.ndarray) -> np.ndarray:
        """Rows of feature weights -> rows of the model's weights: the identity (linear), or
        the representer coefficients ``c_v = L diag(1/s) z_v`` of ``z_v = L^T c_v`` (kernel;
        ``s`` the kept eigenvalues, ``L^T L = diag(s)``), the ones in the span of ``L``."""
        if self.linear:
            return Z
        s = np.einsum("ij,ij->j", self.L, self.L)
        return Z @ (self.L / s).T

    def train_scores(self, coef: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``S[i, v] = f_v(x_i)`` ``(n, M)``."""
        if self.linear:
            XW = self.X @ coef.T
            XW = XW.toarray() if sp.issparse(XW) else np.asarray(XW)
            return XW + b[None, :]
        return self.K @ coef.T + b[None, :]

    def penalty(self, coef: np.ndarray) -> float:
        """``J(f) = 1/2 sum_v ||w_v||_X^2`` (section 3.2)."""
        if self.linear:
            return 0.5 * float(np.sum(coef * coef))
        if self.L is None:
            return 0.5 * float(np.sum(coef * (coef @ self.K)))
        Z = self.L.T @ coef.T
        return 0.5 * float(np.sum(Z * Z))

    def center(self, coef: np.ndarray, b: np.ndarray):
        """Remove each sibling group's mean function.  Pair margins are differences of
        siblings, so they do not change; the penalty does not grow; and the sum-to-zero
        constraints then hold everywhere (exactly feasible).  Singleton groups become 0."""
        G = self.group_matrix
        g = self.pairs.group_of
        inner = g >= 0
        mc = (G @ coef) / self.group_size[:, None]
        mb = (G @ b) / self.group_size
        coef = coef.copy()
        b = b.copy()
        coef[inner] -= mc[g[inner]]
        b[inner] -= mb[g[inner]]
        coef[0] = 0.0
        b[0] = 0.0
        return coef, b

    def sum_to_zero_residual(self, coef: np.ndarray, b: np.ndarray) -> float:
        S = self.train_scores(coef, b)
        return float(np.abs(S @ self.group_matrix.T).max())

    # -- costs
    def hinge_terms(self, S: np.ndarray) -> np.ndarray:
        u = self.pairs.u_min(S)
        return np.where(np.isfinite(u), hinge(np.where(np.isfinite(u), u, 0.0)), 0.0)

    def primal_value(self, coef, b, C: float, lam: np.ndarray | None = None) -> float:
        """(8): ``J(f) + C sum_i (1 - u_min)_+ + sum_p lam_p m_p(f)``."""
        S = self.train_scores(coef, b)
        val = self.penalty(coef) + C * float(self.hinge_terms(S).sum())
        if lam is not None:
            val += float(lam @ self.pairs.margins(S))
        return val

    def psi_value(self, coef, b, C: float) -> float:
        """(2) with the psi-loss: ``J(f) + C sum_i psi(u_min(f(x_i), y_i))``."""
        S = self.train_scores(coef, b)
        u = self.pairs.u_min(S)
        return self.penalty(coef) + C * float(psi(np.where(np.isfinite(u), u, 1.0)).sum())

    # -- dual side
    def gmat(self, gamma: np.ndarray) -> np.ndarray:
        """``Gamma`` ``(n, M)``: ``+gamma_p`` at ``(i, j)`` and ``-gamma_p`` at ``(i, t)``."""
        pr = self.pairs
        flat = pr.pair_i * self.M
        out = (np.bincount(flat + pr.pair_pos, weights=gamma, minlength=self.n * self.M)
               - np.bincount(flat + pr.pair_neg, weights=gamma, minlength=self.n * self.M))
        return out.reshape(self.n, self.M)

    def quad(self, A: np.ndarray) -> float:
        """``||W(A)||^2`` for ``W = A^T X`` (linear) or ``tr(A^T K A)`` (kernel)."""
        if self.linear:
            AX = (self.X.T @ A).T if sp.issparse(self.X) else A.T @ self.X
            return float(np.sum(np.asarray(AX) ** 2))
        if self.L is None:
            return float(np.sum(A * (self.K @ A)))
        Z = self.L.T @ A
        return float(np.sum(Z * Z))

    def dual_value(self, beta: np.ndarray, lam: np.ndarray) -> float:
        """(9) after substituting (10): ``sum_p beta_p - 1/2 ||W(beta - lam)||^2``, valid when
        ``beta`` is dual feasible (see :meth:`dual_feasible`)."""
        return float(beta.sum()) - 0.5 * self.quad(self.gmat(beta - lam))

    def budget(self, beta: np.ndarray) -> np.ndarray:
        return np.bincount(self.pairs.pair_i, weights=beta, minlength=self.n)

    def bias_residual(self, beta: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """``dL/db_v``: column sums of ``Gamma(beta - lam)`` (must vanish, (10))."""
        return self.gmat(beta - lam).sum(axis=0)

    def incidence(self) -> sp.csr_matrix:
        """``E^T`` ``(M, P)``: column p is ``e_j - e_t`` (so ``E^T gamma`` = column sums of
        ``Gamma(gamma)``)."""
        pr = self.pairs
        P = pr.n_pairs
        ar = np.arange(P)
        return sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                              (np.r_[pr.pair_pos, pr.pair_neg], np.r_[ar, ar])), shape=(self.M, P))

    def dual_feasible(self, beta: np.ndarray, lam: np.ndarray, C: float) -> np.ndarray:
        """A dual feasible point near ``beta``: ``beta >= 0``, ``sum_{p of i} beta_p <= C``
        (11), and the bias condition (10) (``hiercvx.models._sibling_repair.dual_feasible``)."""
        return dual_feasible(self, beta, lam, C)

    def independent_rows(self) -> np.ndarray:
        """Rows of ``E^T`` without the dependency of each sibling group (its rows sum to
        zero, since every pair joins two siblings): all group members but the last."""
        return np.concatenate([g[:-1] for g in self.pairs.groups])

    # -- recovery of the biases (Appendix B)
    def _bias_system(self):
        """Pair / slack / group selection matrices over the non-root biases ``b[1:]``."""
        pr = self.pairs
        P, M1 = pr.n_pairs, self.M - 1
        Eb = sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                            (np.r_[np.arange(P), np.arange(P)], np.r_[pr.pair_pos, pr.pair_neg] - 1)),
                           shape=(P, M1))
        Gb = self.group_matrix[:, 1:]
        return Eb, Gb

    def biases_kkt(self, coef: np.ndarray, beta: np.ndarray, C: float, tol: float = 1e-6):
        """Biases from complementary slackness, or ``None`` when they are not pinned.

        Free examples (``sum beta < C``, so ``xi_i = 0``) with ``beta_p > 0`` give
        ``m_p = 1``; bounded examples give equal margins over their active pairs; the
        sum-to-zero constraints give ``sum_{v in g} b_v = 0``.  Accepted when this linear
        system has full column rank and is consistent.
        """
        pr = self.pairs
        S0 = self.train_scores(coef, np.zeros(self.M))
        g = pr.margins(S0)                       # margins without biases
        Eb, Gb = self._bias_system()
        active = beta > tol * C
        free = self.budget(beta) < C * (1 - tol)
        eq_free = active & free[pr.pair_i]
        rows = [Eb[eq_free]]
        rhs = [1.0 - g[eq_free]]
        bnd = np.flatnonzero(active & ~free[pr.pair_i])
        if bnd.size > 1:
            same = pr.pair_i[bnd[1:]] == pr.pair_i[bnd[:-1]]
            p, q = bnd[1:][same], bnd[:-1][same]
            rows.append(Eb[p] - Eb[q])           # m_p = m_q
            rhs.append(g[q] - g[p])
        rows.append(Gb)
        rhs.append(np.zeros(Gb.shape[0]))
        R = sp.vstack(rows).toarray()
        t = np.concatenate(rhs)
        sol, _, rank, _ = np.linalg.lstsq(R, t, rcond=None)
        if rank < R.shape[1]:
            return None
        if np.abs(R @ sol - t).max() > 1e-5 * max(1.0, np.abs(t).max()):
            return None
        return np.r_[0.0, sol]

    def biases_lp(self, coef: np.ndarray, C: float, lam: np.ndarray) -> np.ndarray:
        """The paper's fallback: with ``w`` fixed, (8) is a linear program in ``(b, xi)``."""
        pr = self.pairs
        S0 = self.train_scores(coef, np.zeros(self.M))
        g = pr.margins(S0)
        Eb, Gb = self._bias_system()
        P, n, M1 = pr.n_pairs, self.n, self.M - 1
        Exi = sp.csr_matrix((np.ones(P), (np.arange(P), pr.pair_i)), shape=(P, n))
        c = np.r_[Eb.T @ lam, np.full(n, C)]
        res = linprog(c, A_ub=sp.hstack([-Eb, -Exi]).tocsr(), b_ub=g - 1.0,
                      A_eq=sp.hstack([Gb, sp.csr_matrix((Gb.shape[0], n))]).tocsr(),
                      b_eq=np.zeros(Gb.shape[0]),
                      bounds=[(None, None)] * M1 + [(0, None)] * n, method="highs")
        if res.status != 0:
            raise SolverError(f"hpsi: the bias linear program failed: {res.message}", status=res.status,
                              solver="HIGHS")
        return np.r_[0.0, res.x[:M1]]

    def least_biases(self, coef: np.ndarray, b: np.ndarray, C: float, lam=None,
                     options: BiasOptions | None = None) -> np.ndarray:
        """The optimal biases of least L1 norm for the weights ``coef``: the paper's bias
        linear program (Appendix B: with ``w`` fixed, (8) in ``(b, xi)``) solved, then
        ``||b||_1`` minimized with the cost held at that optimum (:class:`BiasOptions` for
        the round-off).

        With ``coef`` fixed, (8) is piecewise linear in ``b`` and may be flat along a ray: a
        DC term ``lam`` that gives up every example of a class (past the psi-loss's corner)
        lets that class's bias go to ``-inf`` at no cost, and a solver may stop anywhere on
        the ray.  This choice depends on ``coef``, ``C`` and ``lam`` only, and is bounded;
        sibling groups keep their biases summing to zero.  ``b`` (the solver's biases) is
        returned unchanged when HiGHS fails or its answer costs more than ``b`` does, beyond
        ``options.accept_rtol`` and the round-off of that cost."""
        opts = BiasOptions() if options is None else options
        b = np.asarray(b, float)
        lam = np.zeros(self.pairs.n_pairs) if lam is None else np.asarray(lam, float)
        if self.pairs.n_pairs == 0:
            return np.zeros(self.M)
        cheapest = self._bias_program(coef, C, lam, None, opts)
        if cheapest is None:
            return b.copy()
        level, room = self._bias_level(coef, cheapest, C, lam, opts)
        new = self._bias_program(coef, C, lam, level + room, opts)
        new = cheapest if new is None else new
        value, room_b = self.primal_value(coef, b, C, lam), self._bias_level(coef, b, C, lam,
                                                                              opts)[1]
        if self.primal_value(coef, new, C, lam) > value + opts.accept_rtol * abs(value) + room_b:
            return b.copy()
        return new

    def _bias_level(self, coef, b, C, lam, options: BiasOptions):
        """The part of (8) that the biases and slacks move, at ``b``, and its round-off
        (``options.roundoff_rtol`` times the magnitudes summed)."""
        Eb, _ = self._bias_system()
        hinge = C * float(self.hinge_terms(self.train_scores(coef, b)).sum())
        shift = Eb @ b[1:]
        magnitude = abs(self.primal_value(coef, b, C, lam)) + hinge + float(lam @ np.abs(shift))
        return hinge + float(lam @ shift), options.roundoff_rtol * magnitude

    def _bias_program(self, coef, C, lam, level, options: BiasOptions):
        """The linear programs of :meth:`least_biases` in ``(b+, b-, xi) >= 0``: with
        ``level=None`` the paper's ``min C sum xi + lam.(E b)``, else::

            min sum(b+ + b-)  s.t.  C sum xi + lam.(E b) <= level

        both under ``m_p + xi_i >= 1`` and group sums of ``b = b+ - b-`` equal to 0; the cost
        row is divided by ``C`` (entries of order one).  Solved by HiGHS; the biases ``(M,)``
        (root 0), or ``None`` when it fails."""
        pr = self.pairs
        P, n, M1 = pr.n_pairs, self.n, self.M - 1
        Eb, Gb = self._bias_system()
        g = pr.margins(self.train_scores(coef, np.zeros(self.M)))
        Exi = sp.csr_matrix((np.ones(P), (np.arange(P), pr.pair_i)), shape=(P, n))
        cost = np.r_[Eb.T @ lam, -(Eb.T @ lam), np.full(n, float(C))] / C
        A_ub, b_ub = sp.hstack([-Eb, Eb, -Exi]).tocsr(), g - 1.0
        if level is None:
            c = cost
        else:
            c = np.r_[np.ones(2 * M1), np.zeros(n)]
            A_ub, b_ub = sp.vstack([A_ub, sp.csr_matrix(cost[None, :])]).tocsr(), \
                np.r_[b_ub, level / C]
        res = linprog(c, A_ub=A_ub, b_ub=b_ub,
                      A_eq=sp.hstack([Gb, -Gb, sp.csr_matrix((Gb.shape[0], n))]).tocsr(),
                      b_eq=np.zeros(Gb.shape[0]), bounds=(0, None), method="highs",
                      options={"primal_feasibility_tolerance": options.feasibility_tol})
        if res.status != 0:
            return None
        return np.r_[0.0, res.x[:M1] - res.x[M1:2 * M1]]


class PsiModel(SiblingModel):
    """HPSI: the problem (2) with the psi-loss instead of the hinge (Wang, Shen & Pan).  Not
    convex: :meth:`objective` is the psi cost, the quantity the DC algorithm (3) decreases;
    :meth:`lower_bound` (inherited) bounds one convex DC majorant (8), not (2) itself."""

    method = "hpsi"
    equations = {"primal": "(2) with psi", "dc": "(3)", "convex step": "(8)"}

    def objective(self, weights, *, biases, C=1.0, pair_weights=None) -> float:
        """(2) with the psi-loss at ``(weights, biases)`` (centred first); ``pair_weights`` is
        accepted for the interface and not used (the psi cost has no linear term)."""
        coef, b = self.center(np.asarray(weights, float), np.asarray(biases, float))
        return self.psi_value(coef, b, float(C))


def prepare_psi(X, y, H, kernel="linear", sigma=None) -> PsiModel:
    """:func:`prepare` for HPSI: the same validated data as a :class:`PsiModel`."""
    model = prepare(X, y, H, kernel, sigma)
    return PsiModel(**{f.name: getattr(model, f.name) for f in fields(model)})


def checked_inputs(X, y, H, kernel, sigma):
    """Validate the inputs of (2) once: ``(X, pairs, kernel)`` with the kernel resolved
    (``sigma`` by the between-class median when not given, section 4.1).  Shared by the
    reference and the fast solver (:mod:`hiercvx.solvers.sibling_qp`)."""
    pairs = sibling_pairs(y, H)
    kern = kernel if isinstance(kernel, Kernel) else None
    precomputed = kern.name == "precomputed" if kern else (isinstance(kernel, str)
                                                          and kernel == "precomputed")
    if precomputed:
        X = check_features(X, "X (the precomputed Gram matrix)", allow_sparse=False)
        if X.shape[0] != X.shape[1]:
            raise InputError(f"with kernel='precomputed' X must be the square (n, n) Gram matrix, "
                             f"got shape {X.shape}")
    else:
        X = check_features(X)
    if X.shape[0] != pairs.n_samples:
        raise InputError(f"X has {X.shape[0]} rows but y has {pairs.n_samples} labels")
    if kern is None:
        kern = make_kernel(kernel, X=None if precomputed else X,
                           y=None if precomputed else np.asarray(pairs.labels), sigma=sigma)
    return X, pairs, kern


def group_matrix(pairs) -> tuple[sp.csr_matrix, np.ndarray]:
    """Sibling-group membership ``(n_groups, n_nodes)`` and the group sizes."""
    groups = pairs.groups
    rows = np.concatenate([np.full(len(g), k) for k, g in enumerate(groups)])
    cols = np.concatenate(groups)
    Gm = sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(groups), pairs.n_nodes))
    return Gm, np.array([len(g) for g in groups], dtype=float)


def prepare(X, y, H, kernel="linear", sigma=None) -> SiblingModel:
    """Validate the inputs of (2) once and return the :class:`SiblingModel` (Gram form for a
    kernel; the CVXPY declarations call :meth:`SiblingModel.factored`).  ``y``: one node name
    of the tree ``H`` per sample (internal nodes get a self leaf); ``kernel``: ``"linear"``,
    ``"rbf"`` (``sigma`` or the between-class median of section 4.1), ``"precomputed"`` (``X``
    the Gram matrix), a callable ``k(A, B)`` or a :class:`~hiercvx.kernels.Kernel`."""
    X, pairs, kern = checked_inputs(X, y, H, kernel, sigma)
    Gm, gsize = group_matrix(pairs)
    if kern.is_linear:
        return SiblingModel(pairs=pairs, X=X, kernel=kern, linear=True, K=None, L=None,
                            group_matrix=Gm, group_size=gsize)
    K = np.ascontiguousarray(kern(X), dtype=float)
    K = 0.5 * (K + K.T)
    if kern.name != "rbf":   # the Gaussian Gram matrix is PSD by construction
        what = "precomputed kernel matrix" if kern.name == "precomputed" else f"{kern.name} kernel matrix"
        if check_psd(K, what=what) < 0:
            # a rounded PSD matrix (float32 entries, say): the certificates' weak duality needs
            # K PSD, so the model is the PSD part, within the rounding check_psd accepts
            L = psd_factor(K)
            K = L @ L.T
    return SiblingModel(pairs=pairs, X=X, kernel=kern, linear=False, K=K, L=None,
                        group_matrix=Gm, group_size=gsize)


def check_pair_weights(pair_weights, model: "SiblingModel") -> np.ndarray:
    """The DC term ``lam`` of (8) (``None``: zeros, HSVM), refused unless it has one finite
    non-negative entry per pair."""
    P = model.pairs.n_pairs
    if pair_weights is None:
        return np.zeros(P)
    lam = np.asarray(pair_weights, dtype=float)
    if lam.shape != (P,) or not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise InputError(f"pair_weights must be {P} finite non-negative numbers, one per pair of "
                         "sibling_pairs(y, H) (the DC linearization of (3)); see hpsi.linearization")
    return lam


# ---------------------------------------------------------------------- cost (2)
def cost(scores, y, H, C: float, penalty: float = 0.0, loss: str = "psi") -> float:
    """The cost (2) at given scores: ``penalty + C sum_i v(u_min(f(x_i), y_i))``, with
    ``v = psi`` (HPSI) or ``"hinge"`` (HSVM); ``penalty`` is ``J(f)``."""
    if loss not in ("psi", "hinge"):
        raise InputError(f"loss must be 'psi' or 'hinge', got {loss!r}")
    C = check_positive(C, "C")
    u = u_min(scores, y, H)
    fin = np.isfinite(u)
    v = (psi if loss == "psi" else hinge)(np.where(fin, u, 1.0))
    return float(penalty) + C * float(v[fin].sum())


# ---------------------------------------------------------------------- DC algorithm (3)
def linearization(model: SiblingModel, S: np.ndarray, C: float,
                  tie_rtol: float = 0.0) -> np.ndarray:
    """The DC linear term of (3) at scores ``S`` ``(n, M)`` as pair weights ``lam``:
    ``lam_p = C`` for a minimizing pair ``p`` of every sample with ``u_min <= 0``
    (``grad psi_2(u) = -1`` there, section 3.4), else 0.  Then
    ``-<f, grad s_2(f^(m-1))> = sum_p lam_p m_p(f)``.

    Ties: pairs whose margin is within ``tie_rtol max(1, |u_min|)`` of ``u_min`` count as
    minimizing and the first of them (root first) is taken (``tie_rtol=0``: exact ties only).
    The DC loop (:func:`hiercvx.solvers.dc.dc_iterations`) passes a tolerance above the
    convex steps' accuracy, so that two solvers whose scores differ by that accuracy pick the
    same subgradient (siblings without data tie exactly, and at small ``C`` every margin is
    near 0).  Any pair gives a majorant (``-C u_min(f) >= -C m_p(f)`` for every ``f``); a
    near-tie pair makes it tight at ``f^(m-1)`` to ``C tie_rtol`` per sample instead of exactly.
    """
    pr = model.pairs
    lam = np.zeros(pr.n_pairs)
    if pr.n_pairs == 0:
        return lam
    u = pr.u_min(S)
    m = pr.margins(S)
    ui = u[pr.pair_i]
    cand = np.flatnonzero((ui <= 0) & (m <= ui + tie_rtol * np.maximum(1.0, np.abs(ui))))
    if cand.size:
        first = np.r_[True, pr.pair_i[cand[1:]] != pr.pair_i[cand[:-1]]]
        lam[cand[first]] = C
    return lam
