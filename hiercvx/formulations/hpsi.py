"""Sibling-margin hierarchical SVM (HSVM) and hierarchical psi-learning (HPSI): the CVXPY
declarations.

Source: Wang, Shen & Pan, *Large Margin Hierarchical Classification with Mutually Exclusive
Class Membership*, JMLR 12, 2011, sections 2-3 and Appendix B.  The
sheet ``formulations/hpsi.md`` has the equations, the derivations and the paper's typos; the
numpy model (pairs ``Q(y)``, the cost (2)/(8), the dual (9), the bias recoveries) is
:mod:`hiercvx.models.sibling`.

Declarations (each a :class:`~hiercvx.ReferenceProblem`, built from a prepared
:class:`~hiercvx.models.sibling.SiblingModel`; the public wrappers take ``(X, y, H, ...)``
and call :func:`~hiercvx.models.sibling.prepare` first):

* :func:`primal` / :func:`primal_from_model` -- (2) / (8) as a QP in ``(W, b, xi)`` (linear)
  or ``(Z, b, xi)`` (kernel: features ``z_v = L^T c_v`` of ``K = L L^T``), with the DC linear
  term of (8) as a ``cvxpy.Parameter`` (zero for HSVM);
* :func:`dual` / :func:`dual_from_model` -- the dual (9)-(11) in ``(beta, delta)``, with the
  recovery of ``w`` from (10) and of ``b`` from the KKT conditions, or from the paper's
  linear program when they do not pin the biases;
* :func:`dc` / :func:`dc_from_model` -- HPSI: the DC iterations (3)
  (:func:`hiercvx.solvers.dc.dc_iterations`) on one compiled :func:`primal`; and
  :func:`dc_reference`, the same as an object with ``solve()`` for the method registry.

Helpers re-exported from the model: :func:`predict_top_down` (``d^H``), :func:`u_min`,
:func:`psi`, :func:`hinge`, :func:`cost`, :func:`sibling_pairs`; and :func:`decision_function`,
:func:`predict`, :func:`linearization`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from .._validation import check_positive
from ..exceptions import InputError
from ..models import sibling as sibling_model
from ..models.sibling import (SiblingModel, SiblingPairs, check_pair_weights, cost, hinge,
                              predict_top_down, prepare, psi, sibling_pairs, u_min)
from ..kernels import psd_factor
from ..describe import Symbol, latex_text
from .._reference_scaling import rescales_features
from ..reference import (Formulation, ProblemSize, ReferenceProblem, ReferenceSolution,
                         check_size)
from ..result import Solution
from ..solvers.dc import check_dc_options, dc_iterations

logger = logging.getLogger(__name__)

__all__ = [
    "SiblingPairs",
    "sibling_pairs",
    "primal",
    "primal_from_model",
    "dual",
    "dual_from_model",
    "dc",
    "dc_from_model",
    "dc_reference",
    "DCReference",
    "primal_formulation",
    "dual_formulation",
    "predict_top_down",
    "u_min",
    "psi",
    "hinge",
    "cost",
    "decision_function",
    "predict",
    "linearization",
]


def linearization(model_or_problem, S: np.ndarray, C: float, tie_rtol: float = 0.0) -> np.ndarray:
    """:func:`hiercvx.models.sibling.linearization` (the DC term of (3) at scores ``S``), for a
    model or a declared problem."""
    model = model_or_problem.data["model"] if isinstance(model_or_problem, ReferenceProblem) \
        else model_or_problem
    return sibling_model.linearization(model, S, C, tie_rtol)


def _row_space(Bfeat):
    """``None`` when ``B = [Bfeat, 1]`` has full column rank (then ``B z = 0`` iff ``z = 0``,
    Theorem 1), else an orthonormal basis ``(rho, p + 1)`` of its row space."""
    B = Bfeat.toarray() if sp.issparse(Bfeat) else np.asarray(Bfeat, dtype=float)
    B = np.hstack([B, np.ones((B.shape[0], 1))])
    _, s, Vt = np.linalg.svd(B, full_matrices=False)
    keep = s > 1e-10 * max(float(s.max()), 1e-300)
    if keep.sum() == B.shape[1]:
        return None
    return Vt[keep]


def _selection_matrices(model: SiblingModel):
    """``D`` ``(P, n M1)`` picking ``S_ij - S_it`` from ``vec(S, "C")``, ``Exi`` ``(P, n)``,
    ``Gt`` ``(M1, n_groups)``, for the non-root columns ``S`` ``(n, M1)``."""
    pr = model.pairs
    P, n, M1 = pr.n_pairs, model.n, model.M - 1
    base = pr.pair_i * M1
    D = sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                       (np.r_[np.arange(P), np.arange(P)],
                        np.r_[base + pr.pair_pos - 1, base + pr.pair_neg - 1])), shape=(P, n * M1))
    Exi = sp.csr_matrix((np.ones(P), (np.arange(P), pr.pair_i)), shape=(P, n))
    Gt = model.group_matrix[:, 1:].T.tocsr()
    return D, Exi, Gt


def _nnz_estimate(model: SiblingModel, cols: int) -> int:
    n, M1, P = model.n, model.M - 1, model.pairs.n_pairs
    if model.linear and sp.issparse(model.X):
        cols = max(1, model.X.nnz // max(1, n))
    return n * cols * M1 + 3 * P + n * M1


PRIMAL_NAME = "the sibling-margin SVM primal (2)/(8)"


def primal_size(model: SiblingModel) -> ProblemSize:
    """The estimated size of (2)/(8) declared from ``model`` (:func:`primal_from_model`),
    without declaring it; a kernel model not yet factored counts ``n`` columns for its factor
    ``L`` (the factor's rank is at most ``n``), so the size is then a bound."""
    n, M1, P = model.n, model.M - 1, model.pairs.n_pairs
    if model.linear:
        p = model.X.shape[1]
    else:
        p = n if model.L is None else model.L.shape[1]
    return ProblemSize(M1 * p + M1 + n, P + n + n * model.pairs.n_groups, _nnz_estimate(model, p))


class _HierReference(ReferenceProblem):
    """A :class:`ReferenceProblem` that maps the solver's point to a canonical one on the same
    optimal face before the certificate (``point``: the primal's pinned biases), and adds
    recovered quantities (full weights with the root row, biases, the bias route) to
    ``sol.values`` after it."""

    def __init__(self, *args, extras: Callable | None = None, point: Callable | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self._extras, self._canonical = extras, point

    def _point(self, ctx, attempt):
        values, duals = super()._point(ctx, attempt)
        return (values if self._canonical is None else self._canonical(values)), duals

    def solve(self, solver: str | None = None, **kwargs) -> ReferenceSolution:
        sol = super().solve(solver, **kwargs)
        if self._extras is not None:
            sol.values.update(self._extras(sol.values))
        return sol


def _full(rows: np.ndarray) -> np.ndarray:
    """Prepend the root's zero row (or entry)."""
    rows = np.asarray(rows, dtype=float)
    return np.concatenate([np.zeros((1,) + rows.shape[1:]), rows], axis=0)



# ---------------------------------------------------------------------- what describe() shows
_NOTATION = {
    "f_v(x)": Symbol("<w_v, x> + b_v (kernel: sum_i c_vi k(x_i, x) + b_v), v a non-root node of H'",
                     "$\\langle w_v, x \\rangle + b_v$ (with a kernel: $\\sum_i c_{vi}\\, k(x_i, x) + "
                     "b_v$), $v$ a non-root node of $H'$"),
    "Q(y)": Symbol("the pairs (j, t): j on the path of y, t a sibling of j",
                   "the pairs $(j, t)$: $j$ on the path of $y$, $t$ a sibling of $j$"),
    "m_p(f)": Symbol("f_j(x_i) - f_t(x_i), the margin of pair p = (i, j, t)",
                     "$f_j(x_i) - f_t(x_i)$, the margin of the pair $p = (i, j, t)$"),
    "lam_p": Symbol("pair_weights: 0 for HSVM (2), the DC linearization (3) for a step (8) of HPSI",
                    "pair weights: 0 for HSVM (2), the linearization (3) of the concave part for a "
                    "step (8) of HPSI", "\\lambda_p"),
    "chi(s)": Symbol("the children of s", "the children of $s$", "\\chi(s)"),
    "H'": Symbol("the hierarchy trained on: H with a self leaf under every internal node used as "
                 "a label (H itself when every label is a leaf; prob.data['hierarchy'])",
                 "the hierarchy trained on: $H$ with a self leaf under every internal node used as "
                 "a label ($H$ itself when every label is a leaf)"),
}
_DIMS = {"m": ("non-root nodes of H'", "non-root nodes of $H'$"),
         "r": ("columns of the kernel's factor L (K = L L^T)",
               "columns of the kernel's factor $L$ ($K = L L^\\top$)"),
         "g": ("sibling groups (internal nodes of H')", "sibling groups (internal nodes of $H'$)")}


def primal_formulation(linear: bool = True) -> Formulation:
    """The primal (2)/(8) as
    :meth:`ReferenceProblem.describe() <hiercvx.reference.ReferenceProblem.describe>` shows it
    (``linear=False``: the kernel form in the factor's features ``z_v = L^T c_v``)."""
    w, wl = ("w_v", "w_v") if linear else ("z_v", "z_v")
    weight = (Symbol("node weights w_v, rows in H'.nodes order without the root",
                     "node weights $w_v$, one row per non-root node of $H'$", shape=("m", "d"))
              if linear else
              Symbol("features z_v = L^T c_v of the kernel's factor K = L L^T, rows in H'.nodes order",
                     "features $z_v = L^\\top c_v$ of the kernel's factor $K = L L^\\top$, one row per "
                     "non-root node of $H'$", shape=("m", "r")))
    return Formulation(
        objective=(f"1/2 sum_v ||{w}||^2 + C sum_i xi_i + sum_p lam_p m_p(f)",
                   f"\\tfrac12 \\sum_v \\|{wl}\\|^2 + C \\sum_i \\xi_i + \\sum_p \\lambda_p\\, m_p(f)",
                   "(2)/(8)"),
        constraints={
            "pairs": ("m_p(f) + xi_i >= 1 for every p = (i, j, t), (j, t) in Q(y_i)",
                      "m_p(f) + \\xi_i \\ge 1 \\quad \\forall p = (i, j, t),\\ (j, t) \\in Q(y_i)", "(2)"),
            "xi_nonneg": ("xi_i >= 0 for every i", "\\xi_i \\ge 0 \\quad \\forall i", "(2)"),
            "sum_to_zero": (f"sum_{{t in chi(s)}} f_t(x_i) = 0 for every internal node s, every i; declared "
                            f"as V_B sum_{{t in chi(s)}} ({w[0]}_t, b_t) = 0: rank(B) rows per s",
                            f"\\textstyle\\sum_{{t \\in \\chi(s)}} f_t(x_i) = 0 \\ \\forall s, i"
                            f"\\ \\Leftrightarrow\\ V_B \\sum_{{t \\in \\chi(s)}} ({w[0]}_t, b_t) = 0 "
                            f"\\ \\forall s", "(2)"),
        },
        variables={"W": weight, "Z": weight,
                   "b": Symbol("node biases b_v", "node biases $b_v$", shape=("m",)),
                   "xi": Symbol("slacks: the hinge of u_min(f(x_i), y_i)",
                                "slacks: the hinge of $u_{\\min}(f(x_i), y_i)$", "\\xi", ("n",))},
        notation={**_NOTATION, "V_B": _row_space_symbol(linear)}, dims=_DIMS,
        parameters={"pair_weights": "\\lambda_p"})


def _row_space_symbol(linear: bool) -> Symbol:
    """How the sum-to-zero rows are declared (:func:`_row_space`): through the row space of
    ``B``, so that no equality is redundant."""
    B, Bl = ("[X, 1]", "[X,\\ \\mathbf 1]") if linear else ("[L, 1]", "[L,\\ \\mathbf 1]")
    return Symbol(f"an orthonormal basis of the row space of B = {B} (one row per sample: its "
                  "features and 1); B u = 0 iff V_B u = 0, so the n rows of each s are declared as "
                  "rank(B) rows (V_B = I when B has full column rank, Theorem 1)",
                  f"an orthonormal basis of the row space of $B = {Bl}$ (one row per sample: its "
                  "features and 1); $B u = 0$ iff $V_B u = 0$, so the $n$ rows of each $s$ are "
                  "declared as $\\operatorname{rank}(B)$ rows ($V_B = I$ when $B$ has full column "
                  "rank, Theorem 1)", "V_B")


def dual_formulation(linear: bool = True, keep_delta: bool = False) -> Formulation:
    """The dual (9)-(11) as
    :meth:`ReferenceProblem.describe() <hiercvx.reference.ReferenceProblem.describe>` shows it."""
    feats, featsl = ("X", "X") if linear else ("L", "L")
    notation = {"lam_p": _NOTATION["lam_p"],
                "A": Symbol("Gamma(beta - lam)" + (" + Delta(delta)" if keep_delta else "")
                            + ": A_iv = sum of (beta_p - lam_p) over i's pairs with j_p = v, minus over t_p = v, "
                            "v a non-root node of H'",
                            "$\\Gamma(\\beta - \\lambda)" + (" + \\Delta(\\delta)" if keep_delta else "")
                            + "$: $A_{iv}$ sums $\\beta_p - \\lambda_p$ over the pairs of $i$ with "
                            "$j_p = v$, minus over those with $t_p = v$, $v$ a non-root node of $H'$"),
                "w_v": Symbol("sum_i A_iv x_i, the recovery (10) (kernel: c_v = A[:, v])",
                              "$\\sum_i A_{iv} x_i$, the recovery (10) (with a kernel: $c_v = A_{:v}$)"),
                "H'": _NOTATION["H'"]}
    if not keep_delta:
        notation["E"] = Symbol("the sibling-group incidence of the pairs", "the incidence of the "
                               "pairs in the sibling groups")
    stationary = (("sum_i A_iv = 0 for every non-root v", "\\textstyle\\sum_i A_{iv} = 0 \\quad \\forall v",
                   "(10)") if keep_delta else
                  ("E^T (beta - lam) = 0: (10) with delta eliminated, one row per node "
                   "(one dropped per sibling group)", "E^\\top (\\beta - \\lambda) = 0", "(10)"))
    return Formulation(
        objective=(f"sum_p beta_p - 1/2 ||A^T {feats}||_F^2",
                   f"\\sum_p \\beta_p - \\tfrac12 \\|A^\\top {featsl}\\|_F^2", "(9)"),
        constraints={
            "beta_nonneg": ("beta_p >= 0 for every pair p", "\\beta_p \\ge 0 \\quad \\forall p", "(11)"),
            "budget": ("sum_{p of i} beta_p <= C for every i",
                       "\\textstyle\\sum_{p \\ni i} \\beta_p \\le C \\quad \\forall i", "(11)"),
            "bias_stationarity": stationary,
        },
        variables={"beta": Symbol("multipliers of the pair constraints of (8)",
                                  "multipliers $\\beta_p$ of the pair constraints of (8)", "\\beta", ("P",)),
                   "delta": Symbol("multipliers of the sum-to-zero constraints (free: equalities)",
                                   "multipliers of the sum-to-zero constraints (free: equalities)",
                                   "\\delta", ("n", "g"))},
        notation=notation, dims=_DIMS, parameters={"pair_weights": "\\lambda_p"})


# ---------------------------------------------------------------------- primal (2) / (8)
@rescales_features({"W": -1, "Z": -1, "b": 0, "xi": 0})
def primal(X, y, H, C=1.0, kernel="linear", sigma=None, pair_weights=None,
           max_size=None) -> ReferenceProblem:
    """HSVM (2), or one DC step (8) of HPSI, on ``(X, y, H)``:
    :func:`~hiercvx.models.sibling.prepare` then :func:`primal_from_model` (see there)."""
    check_positive(C, "C")
    return primal_from_model(prepare(X, y, H, kernel, sigma), C, pair_weights, max_size)


def primal_from_model(model: SiblingModel, C=1.0, pair_weights=None,
                      max_size=None) -> ReferenceProblem:
    """HSVM (2), or one DC step (8) of HPSI, as a QP::

        min  1/2 sum_v ||w_v||_X^2 + C sum_i xi_i + sum_p lam_p m_p(f)
        s.t. xi_i >= 0,   m_p(f) + xi_i >= 1                for p = (i, j, t), (j, t) in Q(y_i)
             sum_{t in chi(s)} f_t(x_i) = 0                 for every internal node s, every i

    with ``m_p(f) = f_j(x_i) - f_t(x_i)``.  ``lam = 0`` is HSVM (2) (hinge of ``u_min``);
    ``lam`` = :func:`linearization` is the DC step (3) (Appendix B writes the same linear
    term as ``-<grad w^(m-1), w> - <grad b^(m-1), b>``).

    Linear kernel: variables ``W`` ``(K, d)``, ``b``, ``xi``.  Otherwise the representer form
    ``f_v = sum_i c_vi k(x_i, .) + b_v`` declared in the features of ``K = L L^T``
    (:meth:`SiblingModel.factored() <hiercvx.models.sibling.SiblingModel.factored>`): variables
    ``Z`` ``(K, r)`` with ``z_v = L^T c_v``, so the training scores are ``L z_v + b_v`` and the
    penalty ``1/2 ||z_v||^2``; the coefficients are recovered as ``c_v = L diag(1/s) z_v``
    (:meth:`SiblingModel.coefficients() <hiercvx.models.sibling.SiblingModel.coefficients>`).
    Declared in ``c_v`` directly (scores ``K c_v``, penalty ``||L^T c_v||^2``), ``c_v`` would be
    free on the null space of ``K`` and nearly free along its eigenvalues down to
    ``1e-12 lambda_max``: at ``C = 1000`` on Example 3 no installed QP solver could certify that
    problem.

    ``C`` and ``pair_weights`` are ``cvxpy.Parameter``s (``prob.set(C=..., pair_weights=...)``
    re-solves without recompiling).  ``sol.weights``: ``(len(H'), d)`` (or ``(len(H'), n)``)
    with a zero root row, rows in ``H'.nodes`` order, where ``H' = prob.data["hierarchy"]``
    is ``H`` plus self leaves for internal labels; ``sol.values["biases"]`` ``(len(H'),)``.
    Both are centred within sibling groups (margins unchanged, the sum-to-zero constraints
    hold exactly), and the biases are the optimal ones of least norm for the returned weights
    (:meth:`SiblingModel.least_biases() <hiercvx.models.sibling.SiblingModel.least_biases>`): (8)
    may be flat along a ray of the biases, and this pins the point on it whatever the solver.
    Certificate: (8) recomputed; lower bound: (9) at the constraint duals made dual feasible
    (:meth:`SiblingModel.dual_feasible() <hiercvx.models.sibling.SiblingModel.dual_feasible>`).
    """
    t0 = time.perf_counter()
    Cval = float(C)
    model = model.factored()
    lam0 = check_pair_weights(pair_weights, model)
    n, M1, P = model.n, model.M - 1, model.pairs.n_pairs
    # kernel: declared in the features L of K = L L^T (z_v = L^T c_v), not in the coefficients
    # c_v: K c_v leaves c_v free on the null space of K and nearly free on its tiny eigenvalues,
    # which interior-point solvers cannot certify at large C (Example 3, C = 1000)
    feats = model.X if model.linear else model.L
    p = feats.shape[1]
    check_size(*dataclasses.astuple(primal_size(model)), max_size, what=PRIMAL_NAME)
    D, Exi, Gt = _selection_matrices(model)

    Cp = cp.Parameter(pos=True, value=Cval, name="C")
    lam = cp.Parameter(P, nonneg=True, value=lam0, name="pair_weights")
    name_f = "W" if model.linear else "Z"
    F = cp.Variable((M1, p), name=name_f)
    b = cp.Variable(M1, name="b")
    xi = cp.Variable(n, name="xi")
    bias_rows = np.ones((n, 1)) @ cp.reshape(b, (1, M1), order="C")
    S = feats @ F.T + bias_rows
    penalty = 0.5 * cp.sum_squares(F)
    margins = D @ cp.vec(S, order="C")
    pairs = margins + Exi @ xi >= 1
    nonneg = xi >= 0
    # sum_{t in g} f_t(x_i) = 0 for all i  <=>  B z_g = 0 with B = [x~_i, 1] rows and z_g the
    # group sums of (w, b): declared through B's row space so that no equality is redundant
    # (interior-point solvers stop on rank-deficient equalities, e.g. a low-rank Gram matrix)
    Vt = _row_space(feats)
    Z = cp.vstack([F.T @ Gt, cp.reshape(b, (1, M1), order="C") @ Gt])
    sum_zero = (Z == 0) if Vt is None else (Vt @ Z == 0)
    problem = cp.Problem(cp.Minimize(penalty + Cp * cp.sum(xi) + lam @ margins),
                         [pairs, nonneg, sum_zero])

    cert = _PrimalCertificate(model, Cp, lam, name_f)
    what = "linear" if model.linear else f"{model.kernel.name} kernel"
    return _HierReference(
        problem, variables={name_f: F, "b": b, "xi": xi}, objective=cert.objective,
        lower_bound=cert.lower_bound, weights=cert.weights,
        constraints={"pairs": pairs, "xi_nonneg": nonneg, "sum_to_zero": sum_zero},
        parameters={"C": Cp, "pair_weights": lam}, infeasibility=cert.infeasibility,
        name=f"sibling-margin SVM primal (2)/(8), {what}", build_time=time.perf_counter() - t0,
        extras=cert.extras, point=cert.pin, formulation=primal_formulation(model.linear),
        data={"model": model, "hierarchy": model.pairs.hierarchy, "pairs": model.pairs,
              "kernel": model.kernel, "X": model.X, "K": model.K, "D": D})


class _PrimalCertificate:
    """What :func:`primal_from_model` certifies at the solver's point with its biases pinned
    (:meth:`pin`): the centred functions (coefficients from ``Z`` for a kernel), (8)
    recomputed there, (9) at the pair duals made dual feasible, and the sum-to-zero
    residual."""

    def __init__(self, model: SiblingModel, Cp, lam, name_f: str):
        self.model, self.Cp, self.lam, self.name_f = model, Cp, lam, name_f

    def functions(self, v):
        return self.model.center(_full(self.model.coefficients(v[self.name_f])), _full(v["b"]))

    def pin(self, v):
        """The solver's point with the optimal biases of least norm for its weights
        (:meth:`~hiercvx.models.sibling.SiblingModel.least_biases`): (8) may be flat along a
        ray of the biases, and a solver may stop anywhere on it.  Each group keeps the mean
        bias the solver gave it, so the sum-to-zero residual does not change; the centred
        biases are the least-norm ones."""
        coef, bb = self.functions(v)
        least = self.model.least_biases(coef, bb, float(self.Cp.value),
                                        np.asarray(self.lam.value, float))
        # the linear program's round-off can leave the group sums off zero: centre again
        least = self.model.center(coef, least)[1]
        return {**v, "b": v["b"] + (least - bb)[1:]}

    def objective(self, v):
        coef, bb = self.functions(v)
        return self.model.primal_value(coef, bb, float(self.Cp.value),
                                       np.asarray(self.lam.value, float))

    def lower_bound(self, v, duals):
        lv, Cv = np.asarray(self.lam.value, float), float(self.Cp.value)
        return self.model.dual_value(self.model.dual_feasible(duals["pairs"], lv, Cv), lv)

    def infeasibility(self, v):
        coef, bb = _full(self.model.coefficients(v[self.name_f])), _full(v["b"])
        return self.model.sum_to_zero_residual(coef, bb) / max(1.0, float(np.abs(bb).max()))

    def weights(self, v):
        return self.functions(v)[0]

    def extras(self, v):
        coef, bb = self.functions(v)
        return {"biases": bb, "weights": coef}


# ---------------------------------------------------------------------- dual (9)-(11)
@rescales_features({"beta": -2}, multipliers=("beta",))
def dual(X, y, H, C=1.0, kernel="linear", sigma=None, pair_weights=None, bias="auto",
         keep_delta=False, max_size=None) -> ReferenceProblem:
    """The dual (9)-(11) on ``(X, y, H)``: :func:`~hiercvx.models.sibling.prepare` then
    :func:`dual_from_model`."""
    check_positive(C, "C")
    return dual_from_model(prepare(X, y, H, kernel, sigma), C, pair_weights, bias=bias,
                           keep_delta=keep_delta, max_size=max_size)


def _gram_factor(model: SiblingModel):
    """``L`` with ``L L^T`` the Gram matrix of the inputs, of at most ``n`` columns: ``X``
    itself when it is narrow, else a factor of ``X X^T`` or of the kernel."""
    if model.linear and model.X.shape[1] <= model.n:
        return model.X
    if model.linear:
        Xd = model.X.toarray() if sp.issparse(model.X) else model.X
        return psd_factor(Xd @ Xd.T)
    return model.L


def dual_from_model(model: SiblingModel, C=1.0, pair_weights=None, bias="auto",
                    keep_delta=False, max_size=None) -> ReferenceProblem:
    """The dual of Appendix B, (9)-(11)::

        max_{beta, delta}  sum_p beta_p - 1/2 ||A^T X||_F^2        (kernel: tr(A^T K A))
        s.t.  beta >= 0,   sum_{p of i} beta_p <= C                 (11)
              sum_i A_iv = 0  for every non-root v                  (10), d/db_v
        A = Gamma(beta - lam) + Delta(delta),  A_iv = sum_{p of i: j_p = v} (beta_p - lam_p)
            - sum_{p of i: t_p = v} (beta_p - lam_p) + delta_{i, par(v)}

    ``beta_p`` is the multiplier of the pair constraint of (8), ``alpha_i = C - sum beta``
    that of ``xi_i >= 0`` (eliminated), and ``delta_{i,s}`` that of the sum-to-zero
    constraint of internal node ``s`` at ``x_i`` -- *free*, since it is an equality (the
    paper writes ``delta >= 0``).  ``lam`` = ``pair_weights`` (DC term; 0 for HSVM).

    ``delta`` drops out: every pair joins two siblings, so the rows of ``Gamma`` sum to 0 over
    each sibling group; summing (10) over a group then forces ``sum_i delta_{i,s} = 0``,
    hence ``sum_i Gamma_iv = 0`` for every ``v``, and ``delta`` only adds the PSD term
    ``|g| ||X^T delta_g||^2`` to the quadratic, so ``delta = 0`` is optimal.  The default
    declaration is therefore ``max sum beta - 1/2 ||Gamma^T X||^2`` s.t. (11) and
    ``E^T (beta - lam) = 0`` (one row per node, one dropped per group as it is implied);
    ``keep_delta=True`` declares (9) literally, with ``delta`` free (same optimum; its free
    directions can stall interior-point solvers on low-rank kernels).

    Recovery.  (10): ``w_v = sum_i A_iv x~_i`` (coefficients ``c_v = A[:, v]``), centred
    per sibling group (which removes ``delta``'s contribution exactly).  Biases
    (``bias="auto"``): the KKT conditions -- ``m_p = 1`` on free support pairs, equal
    margins on an at-bound example's support pairs, ``sum_{v in g} b_v = 0`` -- when they pin
    every bias; otherwise the paper's fallback, the linear program (8) in ``(b, xi)`` with
    ``w`` fixed (``bias="kkt"`` / ``"lp"`` force a route).  ``sol.values``: ``beta``,
    (``delta``), ``weights``, ``biases``, ``bias_route``.  Certificate: (8) at the recovered
    ``(w, b)``; lower bound: the dual objective at ``beta`` made dual feasible.
    """
    t0 = time.perf_counter()
    if bias not in ("auto", "kkt", "lp"):
        raise InputError(f"bias must be 'auto', 'kkt' or 'lp', got {bias!r}")
    Cval = float(C)
    model = model.factored()
    lam0 = check_pair_weights(pair_weights, model)
    n, M1, P, ng = model.n, model.M - 1, model.pairs.n_pairs, model.pairs.n_groups
    LK = _gram_factor(model)
    r = LK.shape[1]
    check_size(P + (n * ng if keep_delta else 0), n + M1 + P, n * M1 * r + 4 * P + n * M1, max_size,
               what="the sibling-margin SVM dual (9)-(11)")
    D, _, Gt = _selection_matrices(model)
    GtT = Gt.T.tocsr()

    Cp = cp.Parameter(pos=True, value=Cval, name="C")
    lam = cp.Parameter(P, nonneg=True, value=lam0, name="pair_weights")
    beta = cp.Variable(P, name="beta")
    Bm = sp.csr_matrix((np.ones(P), (model.pairs.pair_i, np.arange(P))), shape=(n, P))
    nonneg = beta >= 0
    budget = Bm @ beta <= Cp
    A = cp.reshape(D.T @ (beta - lam), (n, M1), order="C")
    variables = {"beta": beta}
    if keep_delta:
        delta = cp.Variable((n, ng), name="delta")
        variables["delta"] = delta
        A = A + delta @ GtT
        stationary = cp.sum(A, axis=0) == 0
    else:
        Eind = model.incidence()[model.independent_rows()]
        stationary = Eind @ (beta - lam) == 0
    problem = cp.Problem(cp.Maximize(cp.sum(beta) - 0.5 * cp.sum_squares(A.T @ LK)),
                         [nonneg, budget, stationary])
    cert = _DualCertificate(model, Cp, lam, bias, GtT if keep_delta else None)
    what = "linear" if model.linear else f"{model.kernel.name} kernel"
    return _HierReference(
        problem, variables=variables, objective=cert.objective,
        lower_bound=cert.lower_bound, weights=cert.weights,
        constraints={"beta_nonneg": nonneg, "budget": budget, "bias_stationarity": stationary},
        parameters={"C": Cp, "pair_weights": lam}, infeasibility=cert.infeasibility,
        name=f"sibling-margin SVM dual (9)-(11), {what}" + (", with delta" if keep_delta else ""),
        build_time=time.perf_counter() - t0,
        extras=cert.extras, formulation=dual_formulation(model.linear, keep_delta),
        data={"model": model, "hierarchy": model.pairs.hierarchy, "pairs": model.pairs,
              "kernel": model.kernel, "X": model.X, "K": model.K})


class _DualCertificate:
    """What :func:`dual_from_model` certifies at the solver's ``(beta, delta)``: the recovery of
    ``(w, b)`` (Appendix B), the primal (8) there, the dual (9) at ``beta`` made dual feasible,
    and the residual of (10)-(11).  ``GtT`` is given when ``delta`` is declared."""

    def __init__(self, model: SiblingModel, Cp, lam, bias: str, GtT=None):
        self.model, self.Cp, self.lam, self.bias = model, Cp, lam, bias
        self.GtT = None if GtT is None else GtT.toarray()
        self._cache: dict = {}

    def coefficients(self, v):
        Afull = self.model.gmat(v["beta"] - np.asarray(self.lam.value, float))
        if self.GtT is not None:
            Afull[:, 1:] += v["delta"] @ self.GtT
        return Afull

    def recover(self, v):
        """``{"weights", "biases", "bias_route"}``: (10), then the biases by KKT or the LP."""
        model = self.model
        Cv, lv = float(self.Cp.value), np.asarray(self.lam.value, float)
        key = (v["beta"].tobytes(), v["delta"].tobytes() if self.GtT is not None else b"", Cv,
               lv.tobytes())
        if self._cache.get("key") == key:
            return self._cache["value"]
        Afull = self.coefficients(v)
        if model.linear:
            coef = np.asarray((model.X.T @ Afull).T if sp.issparse(model.X) else Afull.T @ model.X)
        else:
            coef = Afull.T
        coef, _ = model.center(coef, np.zeros(model.M))
        bb, route = None, "lp"
        if self.bias in ("auto", "kkt"):
            bb = model.biases_kkt(coef, v["beta"], Cv)
            route = "kkt"
            if bb is None:
                if self.bias == "kkt":
                    raise InputError("the KKT conditions do not pin the biases here (no free "
                                     "support pair in some sibling group); use bias='lp' or 'auto'")
                route = "lp"
        if bb is None:
            bb = model.biases_lp(coef, Cv, lv)
        coef, bb = model.center(coef, bb)
        out = {"weights": coef, "biases": bb, "bias_route": route}
        self._cache["key"], self._cache["value"] = key, out
        return out

    def weights(self, v):
        return self.recover(v)["weights"]

    def extras(self, v):
        return dict(self.recover(v))

    def objective(self, v):
        rec = self.recover(v)
        return self.model.primal_value(rec["weights"], rec["biases"], float(self.Cp.value),
                                       np.asarray(self.lam.value, float))

    def lower_bound(self, v, duals):
        lv, Cv = np.asarray(self.lam.value, float), float(self.Cp.value)
        return self.model.dual_value(self.model.dual_feasible(v["beta"], lv, Cv), lv)

    def infeasibility(self, v):
        bt, Cv = v["beta"], float(self.Cp.value)
        Afull = self.coefficients(v)
        return max(0.0, float(-bt.min()), float((self.model.budget(bt) - Cv).max()),
                   float(np.abs(Afull[:, 1:].sum(axis=0)).max()) / max(1.0, Cv))


# ---------------------------------------------------------------------- scores of new points
def _solution_parts(solution):
    vals = getattr(solution, "values", None) or {}
    extras = getattr(solution, "extras", None) or {}
    biases = vals.get("biases", extras.get("biases"))
    if biases is None:
        raise InputError("solution must be a solved hpsi.primal / hpsi.dual solution or an "
                         "hpsi.dc result")
    return np.asarray(solution.weights, float), np.asarray(biases, float)


def decision_function(problem: ReferenceProblem, solution, X_new) -> np.ndarray:
    """``f_v(x)`` ``(m, len(H'))`` for new points, columns in ``problem.data["hierarchy"]``
    order: ``X_new W^T + b`` (linear) or ``k(X_new, X_train) C^T + b`` (kernel; for
    ``kernel="precomputed"`` pass the ``(m, n)`` kernel rows)."""
    coef, b = _solution_parts(solution)
    return problem.data["model"].scores(coef, X_new, b)


def predict(problem: ReferenceProblem, solution, X_new) -> np.ndarray:
    """``d^H`` on new points, as node names of the caller's hierarchy (a self leaf maps back
    to its internal node)."""
    coef, b = _solution_parts(solution)
    return problem.data["model"].predict(coef, b, X_new)


# ---------------------------------------------------------------------- DC algorithm (3)
def dc(X, y, H, C=1.0, kernel="linear", sigma=None, tol=1e-6, max_iter=50, solver=None,
       gap_tol=1e-6, max_size=None, **solver_options) -> Solution:
    """HPSI on ``(X, y, H)``: :func:`~hiercvx.models.sibling.prepare` then :func:`dc_from_model`
    (see there)."""
    C = check_positive(C, "C")
    check_dc_options(tol, max_iter)
    return dc_from_model(prepare(X, y, H, kernel, sigma), C, tol=tol, max_iter=max_iter,
                         solver=solver, gap_tol=gap_tol, max_size=max_size, **solver_options)


def dc_from_model(model: SiblingModel, C=1.0, *, tol=1e-6, max_iter=50, solver=None,
                  gap_tol=1e-6, max_size=None, **solver_options) -> Solution:
    """HPSI: minimize (2) with the psi-loss by the DC algorithm (3), every convex step a
    certified CVXPY solve.

    ``s = s_1 - s_2`` with ``s_1 = J + C sum psi_1(u_min)`` (HSVM's cost) and
    ``s_2 = C sum psi_2(u_min)``, ``psi_1 = (1 - u)_+``, ``psi_2 = (-u)_+``.  Start from
    the HSVM solution ``f^(0)``; step ``m`` minimizes the convex majorant
    ``s_1(f) - <f, grad s_2(f^(m-1))>``, i.e. :func:`primal_from_model` with ``pair_weights``
    = :func:`linearization` at ``f^(m-1)`` -- one compiled problem, re-solved after
    ``prob.set(pair_weights=...)``.  The loop is :func:`hiercvx.solvers.dc.dc_iterations`
    (stop when ``|s(f^(m)) - s(f^(m-1))| <= tol``; the iterate of the last linearization,
    every step checked against the DC algorithm).  Each step is certified
    (``gap_tol``).  Returns its :class:`~hiercvx.result.Solution` with the extras ``problem``
    (the compiled :func:`primal`) and ``compilations`` (how many times CVXPY compiled it).
    """
    t0 = time.perf_counter()
    prob = primal_from_model(model, C=C, max_size=max_size)
    model = prob.data["model"]
    compiled: list = []

    def step(pair_weights):
        if pair_weights is not None:
            prob.set(pair_weights=pair_weights)
        sol = prob.solve(solver, gap_tol=gap_tol, **solver_options)
        pp = prob.problem._cache.param_prog
        if pp is None or not compiled or compiled[-1] is not pp:
            compiled.append(pp)
        return sol.weights, sol.values["biases"], sol

    out = dc_iterations(model, float(C), tol, max_iter, step, "hpsi.dc")
    prob.set(pair_weights=np.zeros(model.pairs.n_pairs))
    out.extras.update(problem=prob, compilations=len(compiled))
    out.solver = out.hsvm.solver
    out.solve_time = time.perf_counter() - t0
    return out


class DCReference:
    """The reference DC route as the method registry uses a reference: ``solve()`` runs
    :func:`dc_from_model` and returns its :class:`~hiercvx.result.Solution` (a certified DC
    fixed point; see :mod:`hiercvx.solvers.dc` for what ``lower_bound`` certifies).

    (2) with the psi-loss is not one convex program, so there is no single CVXPY problem to
    inspect: :attr:`step` is the convex step (8) the loop re-solves (a
    :class:`~hiercvx.ReferenceProblem`, its parameter ``pair_weights`` the linearization: 0,
    i.e. HSVM (2), the loop's first step), and ``problem``, ``formulation``, ``variables``,
    ``constraints``, ``parameters``, ``data`` and :meth:`size` are that step's.  Its dual is
    :func:`dual` with the same ``pair_weights`` (``hiercvx show sibling_svm --dual``).
    ``solve()`` runs the loop from ``model`` and ``C``, whatever the step's parameters hold.
    """

    def __init__(self, model: SiblingModel, C=1.0, tol=1e-8, max_iter=50, max_size=None):
        self.model, self.C, self.tol, self.max_iter = model, C, tol, max_iter
        self.max_size = max_size
        self.name = "HPSI DC algorithm (3), CVXPY steps"
        self._step = None

    @property
    def step(self) -> ReferenceProblem:
        """The convex step (8) as a :class:`~hiercvx.ReferenceProblem` (built on first use;
        after ``solve()``, the problem the loop compiled, with ``pair_weights`` back at 0)."""
        if self._step is None:
            self._step = primal_from_model(self.model, self.C, max_size=self.max_size)
        return self._step

    @property
    def problem(self):
        """The ``cvxpy.Problem`` of the convex step (8) (:attr:`step`)."""
        return self.step.problem

    @property
    def formulation(self):
        """The formulation of the convex step (8) (:attr:`step`)."""
        return self.step.formulation

    @property
    def variables(self) -> dict:
        """The named variables of the convex step (8) (:attr:`step`)."""
        return self.step.variables

    @property
    def constraints(self) -> dict:
        """The named constraints of the convex step (8) (:attr:`step`)."""
        return self.step.constraints

    @property
    def parameters(self) -> dict:
        """The parameters of the convex step (8): ``C`` and ``pair_weights`` (:attr:`step`)."""
        return self.step.parameters

    @property
    def data(self) -> dict:
        """What the convex step (8) holds for inspection (:attr:`step`)."""
        return self.step.data

    def size(self):
        """The size of the convex step (8) (:attr:`step`), the program each DC step solves."""
        return self.step.size()

    def __repr__(self):
        return (f"DCReference({self.name!r}, C={self.C:g}, tol={self.tol:g}, max_iter={self.max_iter}; "
                "its convex step (8): .step)")

    def describe(self, fmt: str = "text") -> str:
        """The DC loop (3) in one line, then the convex step (8) it re-solves
        (:meth:`ReferenceProblem.describe() <hiercvx.reference.ReferenceProblem.describe>` of
        :func:`primal_from_model`)."""
        step = self.step
        head = (f"{self.name}: from the HSVM solution of (2), re-solve the convex step (8) below "
                "with lam = the linearization of the psi-loss's concave part at the last iterate, "
                f"until the cost changes by at most tol={self.tol:g} (at most {self.max_iter} steps)")
        if fmt == "latex":
            mant, exp = f"{self.tol:.1e}".split("e")
            tol = (f"{float(mant):g} \\cdot " if float(mant) != 1 else "") + f"10^{{{int(exp)}}}"
            head = (f"\\noindent {latex_text(self.name)}: from the HSVM solution of (2), re-solve the "
                    "convex step (8) below with $\\lambda_p$ the linearization of the concave part of "
                    "the $\\psi$-loss at the last iterate, until the cost changes by at most "
                    f"${tol}$ (at most {self.max_iter} steps).")
        return head + "\n\n" + step.describe(fmt)

    def solve(self, solver=None, *, gap_tol=1e-6, **solver_options) -> Solution:
        out = dc_from_model(self.model, self.C, tol=self.tol, max_iter=self.max_iter,
                            solver=solver, gap_tol=gap_tol, max_size=self.max_size,
                            **solver_options)
        self._step = out.extras.get("problem", self._step)
        return out


def dc_reference(X, y, H, C=1.0, kernel="linear", sigma=None, tol=1e-8, max_iter=50,
                 max_size=None) -> DCReference:
    """:class:`DCReference` on ``(X, y, H)`` (the registry's "primal" reference of ``hpsi``)."""
    C = check_positive(C, "C")
    check_dc_options(tol, max_iter)
    return DCReference(prepare(X, y, H, kernel, sigma), C, tol, max_iter, max_size)
