"""Hierarchical SVM with orthogonal transfer (Zhou, Xiao and Wu, 2011) and its four baselines:
the CVXPY declarations.

Source: Dengyong Zhou, Lin Xiao, Mingrui Wu, *Hierarchical Classification via Orthogonal
Transfer*, ICML 2011 (long version: Microsoft Research MSR-TR-2011-54); the sheet ``formulations/orthogonal.md`` has the
derivations.  The data model (pairs, K, Omega, certificates, classifiers) is
:mod:`hiercvx.models.orthogonal`; its public names are re-exported here.

* :func:`primal` -- problem (4)::

      min  1/2 sum_{i,j} K_ij |<w_i, w_j>|  +  C/N sum_k xi_k
      s.t. <w_i - w_j, x_k> >= 1 - xi_k   for j in S(i), i in A^+(y_k);   xi >= 0

  declared *exactly* as a semidefinite program by lifting the Gram matrix ``G = W W^T``:
  ``[[I, W^T], [W, G]] >= 0`` (i.e. ``G >= W W^T``), the penalty ``1/2 sum_i K_ii G_ii +
  sum_{i<j} K_ij t_ij`` with ``t_ij >= |G_ij|``.  Under Theorem 1 (``K >= 0``, comparison
  matrix PSD) the relaxation ``G >= W W^T`` is tight; with a PD comparison matrix the
  optimal ``G`` *equals* ``W W^T``.  With more features than samples the weights are
  written in an orthonormal basis of the data's row space (Theorem 3), so the PSD block is
  ``(m + rank X)`` instead of ``(m + n_features)``.
* The baselines of section 5: :func:`flatmult` (12) over the leaves, :func:`hiermult` (one
  Crammer--Singer problem (12) per internal node), :func:`transfer`, :func:`treeloss`.
* :func:`primal_from_model` -- any of the five declared from a prepared
  :class:`~hiercvx.models.orthogonal.PairModel` (no re-validation).
* The duals: :func:`dual` / :func:`dual_from_model` -- the SDP dual of the lifting,
  ``max sum alpha - 1/2 tr(T)`` s.t. ``[[T, U^T], [U, S]] >= 0``, ``S`` in the box of K,
  recovery ``W = S^{-1} U(alpha)``; for the baselines one QP dual, :func:`baseline_dual`
  (``flatmult_dual``, ``hiermult_dual``, ``transfer_dual``, ``treeloss_dual``).

Every builder takes ``fit_intercept`` / ``intercept_scaling`` (LIBLINEAR's regularized bias,
:mod:`hiercvx.bias`): the problem on ``[X, s]``, declared with a bias variable ``b`` per
weighted node whose weight ``b / s`` joins the node's weights in the regularizer (Omega (5)
under K, or ``1/2 tr(W~^T R W~)``); ``sol.weights`` exclude the bias column and
``sol.values["intercept"]`` holds the biases ``(n_nodes,)`` (root and unweighted nodes 0).

Every problem is the pairwise hinge of :mod:`hiercvx.models.margin` with its own pairs and a
quadratic-type regularizer; certificates: objective recomputed in numpy from the weights
(``model.objective``); lower bound = ``model.lower_bound`` at the solver's margin multipliers
and, for (4), the matrix ``S`` (``S_ii = K_ii``, ``|S_ij| <= K_ij``) read off the duals of
``t_ij >= +-G_ij`` (see the sheet for why any such pair gives a valid bound).
"""

from __future__ import annotations

import logging
import time

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from .._validation import check_positive
from ..bias import append_constant
from ..exceptions import HierarchyError, InputError
from ..hierarchy import Hierarchy
from ..models.orthogonal import (METHODS, NonConvexKError, PairModel, check_convexity, comparison_matrix,
                                 edge_incidence, heuristic_K, omega, omega_subgradient, predict_flat,
                                 predict_top_down, prepare, strong_convexity, top_down_errors,
                                 transfer_matrix, tree_distance)
from ..describe import Symbol
from .._reference_scaling import rescales_features
from ..reference import Formulation, ReferenceProblem, check_size
from ._orthogonal_parts import (
    bias_columns,
    estimate,
    features,
    margin_constraint,
    QPDualRoutes,
    QPRoutes,
    Recovered,
    SDPDualRoutes,
    SDPRoutes,
)

logger = logging.getLogger(__name__)

__all__ = [
    "primal",
    "primal_from_model",
    "dual",
    "dual_from_model",
    "baseline_dual",
    "flatmult_dual",
    "hiermult_dual",
    "transfer_dual",
    "treeloss_dual",
    "flatmult",
    "hiermult",
    "transfer",
    "treeloss",
    "sdp_formulation",
    "sdp_dual_formulation",
    "baseline_formulation",
    "baseline_dual_formulation",
    "heuristic_K",
    "comparison_matrix",
    "check_convexity",
    "strong_convexity",
    "NonConvexKError",
    "omega",
    "omega_subgradient",
    "transfer_matrix",
    "tree_distance",
    "prepare",
    "PairModel",
    "METHODS",
    "predict_top_down",
    "predict_flat",
    "top_down_errors",
]

_NAMES = {"flatmult": "FLATMULT (12) over the leaves",
          "hiermult": "HIERMULT: Crammer-Singer (12) at each internal node",
          "transfer": "TRANSFER (section 5)"}


# =============================================================================== how `describe` shows it
#: the pairs of each method's hinge, as ``prepare`` builds them (text, LaTeX)
_PAIRS = {
    "orthogonal": ("<w_i - w_j, x_k> + xi_k >= 1 for j in S(i), i in A+(y_k), every k",
                   ("\\langle w_i - w_j, x_k \\rangle + \\xi_k \\ge 1 \\quad "
                    "\\forall k,\\ i \\in A^+(y_k),\\ j \\in S(i)")),
    "transfer": ("<w_i - w_j, x_k> + xi_k >= 1 for j in S(i), i in A+(y_k), every k",
                 ("\\langle w_i - w_j, x_k \\rangle + \\xi_k \\ge 1 \\quad "
                  "\\forall k,\\ i \\in A^+(y_k),\\ j \\in S(i)")),
    "hiermult": (("<w_i - w_l, x_k> + xi_kj >= 1 for l in S(i), i in A+(y_k), j = pi(i) the parent of i "
                  "(one slack per example and internal node j on its path)"),
                 ("\\langle w_i - w_l, x_k \\rangle + \\xi_{kj} \\ge 1 \\quad "
                  "\\forall k,\\ i \\in A^+(y_k),\\ l \\in S(i),\\ j = \\pi(i)")),
    "flatmult": ("<w_{y_k} - w_l, x_k> + xi_k >= 1 for every leaf l in L, l != y_k, every k",
                 ("\\langle w_{y_k} - w_l, x_k \\rangle + \\xi_k \\ge 1 \\quad "
                  "\\forall k,\\ l \\in \\mathcal{L} \\setminus \\{y_k\\}")),
    "treeloss": (("sum_{A+(y_k)} <u_i, x_k> - sum_{A+(y)} <u_j, x_k> + xi_k / Delta(y_k, y) >= 1 "
                  "for every class y != y_k, every k"),
                 ("\\textstyle\\sum_{i \\in A^+(y_k)} \\langle u_i, x_k \\rangle - \\sum_{j \\in A^+(y)} "
                  "\\langle u_j, x_k \\rangle + \\xi_k / \\Delta(y_k, y) \\ge 1 \\quad \\forall k,\\ y \\ne y_k")),
}

#: the paper's numbers of each problem (TRANSFER and TREELOSS are described in section 5)
_EQ = {"orthogonal": "(4)", "flatmult": "(12)", "hiermult": "(12)", "transfer": "section 5",
       "treeloss": "section 5, (3)"}

_XI_NONNEG = ("xi >= 0", "\\xi \\ge 0")

#: the paper writes N examples indexed by k; the weighted nodes are the non-root nodes
_DIMS = {"N": ("examples", "examples"),
         "m": ("weighted nodes: the non-root nodes (M - 1)", "weighted nodes: the non-root nodes ($M - 1$)"),
         "f": ("columns of the features F: d, or the representer basis (Theorem 3)",
               "columns of the features $F$: $d$, or the representer basis (Theorem 3)"),
         "e": ("pairs i < j with K_ij > 0", "pairs $i < j$ with $K_{ij} > 0$"),
         "P": ("margin pairs, one per row of (4)", "margin pairs, one per row of (4)")}
_BASELINE_PAIRS = ("margin pairs, one per row of the primal", "margin pairs, one per row of the primal")
_PATHS = Symbol("the path of y without the root; the siblings of i",
                "the path of $y$ without the root; the siblings of $i$", "A^+(y),\\ S(i)")
_K = Symbol("(4)'s matrix over the non-root nodes (heuristic (6) by default), Theorem 1",
            "the matrix of (4) over the non-root nodes (heuristic (6) by default), Theorem 1")
_XI = Symbol("hinge slacks, one per example", "hinge slacks, one per example", "\\xi", ("N",))


def _with_bias(form: Formulation, fit_intercept: bool, dual: bool = False) -> Formulation:
    """``form`` with LIBLINEAR's bias feature named: the features are ``x~ = [x, s]``; the
    primal declares the biases ``b`` of the weighted nodes as a variable apart from the
    weights (``f`` stays the columns of ``F``), the dual works on ``x~`` (``f`` counts ``s``)."""
    if not fit_intercept:
        return form
    variables, dims = dict(form.variables), dict(form.dims)
    notation = {**form.notation, "x~": Symbol(
        "[x, s], s = intercept_scaling: the features with the constant feature of the bias "
        "(x_k in the rows stands for x~_k)",
        "$[x, s]$, the features with the constant feature $s$ of the bias ($x_k$ in the rows "
        "stands for $\\tilde x_k$)", "\\tilde x")}
    if dual:
        variables["intercept"] = Symbol(
            "node biases b = s * (last column of the recovered W~), recovered",
            "node biases $b = s \\cdot$ (the last column of the recovered $\\tilde W$)", "b", ("M",))
        notation["W~"] = Symbol("[W, b / s]: the recovered weights of x~",
                                "$[W, b / s]$: the recovered weights of $\\tilde x$", "\\tilde W")
        dims["f"] = ("columns of the features F of x~: d + 1, or the representer basis of x~ (Theorem 3)",
                     "columns of the features $F$ of $\\tilde x$: $d + 1$, or the representer basis "
                     "of $\\tilde x$ (Theorem 3)")
        return Formulation(objective=form.objective, constraints=form.constraints,
                           variables=variables, notation=notation, dims=dims)
    lifted = "V" in variables  # the SDP of (4): its lift holds [V, b / s]
    notation["W~"] = Symbol(
        "[W, b / s]: the weights of x~; w_i in the rows and the regularizer"
        + (" (V in the lift)" if lifted else "") + " stand for the rows of W~",
        "$[W, b / s]$: the weights of $\\tilde x$; $w_i$ in the rows and in the regularizer"
        + (" ($V$ in the lift)" if lifted else "") + " stand for the rows of $\\tilde W$", "\\tilde W")
    variables["b"] = Symbol("biases of the weighted nodes (the bias column of W~ is b / s)",
                            "biases of the weighted nodes (the bias column of $\\tilde W$ is $b / s$)",
                            "b", ("m",))
    # values["intercept"] is b spread over all nodes, an expression of b, not a second bias
    variables["intercept"] = Symbol(
        "b spread over all nodes (0 at the root and other unweighted nodes): an expression "
        "of b, reported as sol.values['intercept']",
        "$b$ spread over all nodes (0 at the root and the other unweighted nodes): an expression "
        "of $b$, not a variable of its own", "\\bar b", ("M",))
    return Formulation(objective=form.objective, constraints=form.constraints, variables=variables,
                       notation=notation, dims=dims)


def sdp_formulation(off_diagonal: bool = True) -> Formulation:
    """(4) as declared by :func:`primal`: the lifting ``G >= V V^T`` makes Omega (5) linear in
    ``G`` (exact under Theorem 1).  ``off_diagonal=False``: K is diagonal, so there is no ``t``
    and no epigraph of (5)."""
    form = Formulation(
        objective=("1/2 sum_i K_ii G_ii + sum_{i<j, K_ij>0} K_ij t_ij + C/N sum_k xi_k",
                   ("\\tfrac12 \\sum_i K_{ii} G_{ii} + \\sum_{i<j,\\, K_{ij}>0} K_{ij} t_{ij} "
                    "+ \\tfrac{C}{N} \\sum_k \\xi_k"), "(4), (5)"),
        constraints={"margin": (*_PAIRS["orthogonal"], "(4)"),
                     "xi_nonneg": (*_XI_NONNEG, "(4)"),
                     "abs_upper": ("t_ij >= G_ij", "t_{ij} \\ge G_{ij}", "(5)"),
                     "abs_lower": ("t_ij >= -G_ij", "t_{ij} \\ge -G_{ij}", "(5)"),
                     "lift": ("[[I, V^T], [V, G]] is PSD  (G >= V V^T)",
                              "\\begin{bmatrix} I & V^\\top \\\\ V & G \\end{bmatrix} \\succeq 0",
                              "(4) lifted")},
        variables={"V": Symbol("weights w_i of the non-root nodes (rows), in X's features or the "
                               "representer basis B (Theorem 3): W = V, or V B^T",
                               "weights $w_i$ of the non-root nodes (rows), in the features of $X$ or "
                               "the representer basis (Theorem 3)", shape=("m", "f")),
                   "G": Symbol("the lifted Gram matrix, G >= V V^T; G_ij stands for <w_i, w_j>",
                               "the lifted Gram matrix, $G \\succeq V V^\\top$; $G_{ij}$ stands for "
                               "$\\langle w_i, w_j \\rangle$", shape=("m", "m")),
                   "t": Symbol("|G_ij| for the pairs i < j with K_ij > 0 (epigraph of (5))",
                               "$|G_{ij}|$ for the pairs $i < j$ with $K_{ij} > 0$ (epigraph of (5))",
                               shape=("e",)),
                   "xi": _XI},
        notation={"K": _K, "A+(y), S(i)": _PATHS}, dims=_DIMS)
    if off_diagonal:
        return form
    return Formulation(
        objective=("1/2 sum_i K_ii G_ii + C/N sum_k xi_k",
                   "\\tfrac12 \\sum_i K_{ii} G_{ii} + \\tfrac{C}{N} \\sum_k \\xi_k", "(4), (5)"),
        constraints={k: v for k, v in form.constraints.items() if not k.startswith("abs_")},
        variables={k: v for k, v in form.variables.items() if k != "t"}, notation=form.notation,
        dims={k: v for k, v in _DIMS.items() if k != "e"})


def sdp_dual_formulation() -> Formulation:
    """The dual of the lifted SDP of (4), derived in the sheet (section "Dual")."""
    eq = "dual of (4), derived"
    return Formulation(
        objective=("sum_p alpha_p - 1/2 tr(T)", "\\sum_p \\alpha_p - \\tfrac12 \\operatorname{tr} T", eq),
        constraints={"budget": ("sum_{p of k} alpha_p <= C/N for every k,  alpha >= 0",
                                "\\textstyle\\sum_{p \\ni k} \\alpha_p \\le C/N,\\ \\alpha \\ge 0", eq),
                     "box": ("|S_ij| <= K_ij  (S_ij = 0 where K_ij = 0)", "|S_{ij}| \\le K_{ij}",
                             "dual of (5), derived"),
                     "diagonal": ("S_ii = K_ii", "S_{ii} = K_{ii}", "dual of (5), derived"),
                     "lift": ("[[T, U(alpha)^T], [U(alpha), S]] is PSD",
                              ("\\begin{bmatrix} T & U(\\alpha)^\\top \\\\ U(\\alpha) & S \\end{bmatrix} "
                               "\\succeq 0"), eq)},
        variables={"alpha": Symbol("margin multipliers, one per row of (4)",
                                   "margin multipliers $\\alpha_p$, one per row of (4)", "\\alpha", ("P",)),
                   "S": Symbol("in the box of K: the multipliers of t_ij >= +-G_ij (S_ij = mu+_ij - mu-_ij)",
                               "in the box of $K$: the multipliers of $t_{ij} \\ge \\pm G_{ij}$ "
                               "($S_{ij} = \\mu^+_{ij} - \\mu^-_{ij}$)", shape=("m", "m")),
                   "T": Symbol("epigraph of U^T S^{-1} U", "epigraph of $U^\\top S^{-1} U$",
                               shape=("f", "f"))},
        notation={"U(alpha)": Symbol("sum_p alpha_p (e_i - e_j) x_k^T over the non-root nodes",
                                     "$\\sum_p \\alpha_p (e_i - e_j) x_k^\\top$ over the non-root nodes",
                                     "U(\\alpha)"),
                  "K": _K,
                  "W": Symbol("S^{-1} U(alpha) (recovery)", "$S^{-1} U(\\alpha)$ (recovery)")},
        dims=_DIMS)


def baseline_formulation(method: str) -> Formulation:
    """A baseline of section 5 as declared by :func:`primal_from_model`."""
    eq = _EQ[method]
    reg = {"transfer": ("1/2 sum_i ||w_i||^2 + 1/2 sum_{(i,j) tree edges} ||w_i - w_j||^2",
                        "\\tfrac12 \\sum_i \\|w_i\\|^2 + \\tfrac12 \\sum_{(i,j)} \\|w_i - w_j\\|^2"),
           "treeloss": ("1/2 sum_i ||u_i||^2", "\\tfrac12 \\sum_i \\|u_i\\|^2"),
           "flatmult": ("1/2 sum_{l in L} ||w_l||^2", "\\tfrac12 \\sum_{l \\in \\mathcal{L}} \\|w_l\\|^2")
           }.get(method, ("1/2 sum_i ||w_i||^2", "\\tfrac12 \\sum_i \\|w_i\\|^2"))
    if method == "hiermult":
        loss = (" + sum_j C/N_j sum_{k below j} xi_kj",
                " + \\sum_j \\tfrac{C}{N_j} \\sum_{k \\text{ below } j} \\xi_{kj}")
    else:
        loss = (" + C/N sum_k xi_k", " + \\tfrac{C}{N} \\sum_k \\xi_k")
    weights = {"treeloss": ("the increments u_i of (3), non-root nodes (class weights w_y = sum_{A+(y)} u)",
                            "the increments $u_i$ of (3) of the non-root nodes (class weights $w_y = "
                            "\\sum_{i \\in A^+(y)} u_i$)"),
               "flatmult": ("weights w_l of the leaves", "weights $w_l$ of the leaves")
               }.get(method, ("weights w_i of the non-root nodes", "weights $w_i$ of the non-root nodes"))
    dims = {**_DIMS, "P": _BASELINE_PAIRS}
    if method == "flatmult":
        dims["m"] = ("weighted nodes: the leaves", "weighted nodes: the leaves")
    if method == "hiermult":
        # N keeps its meaning (examples); the slacks get their own symbol
        dims["T"] = ("slacks: one per example and internal node on its path (T = sum_j N_j)",
                     "slacks: one per example and internal node on its path ($T = \\sum_j N_j$)")
    variables = {"W": Symbol(*weights, shape=("m", "d")),
                 "xi": Symbol("hinge slacks, one per example and internal node on its path",
                              "hinge slacks $\\xi_{kj}$, one per example $k$ and internal node $j$ on "
                              "its path", "\\xi", ("T",)) if method == "hiermult" else _XI}
    notation = {"A+(y), S(i)": _PATHS}
    if method == "flatmult":
        notation = {"L": Symbol("the leaves", "the leaves", "\\mathcal{L}")}
    if method == "treeloss":
        notation = {"A+(y)": Symbol("the path of y without the root",
                                    "the path of $y$ without the root", "A^+(y)")}
        notation["Delta(y_k, y)"] = Symbol("half the tree distance between y_k and y",
                                           "half the tree distance between $y_k$ and $y$",
                                           "\\Delta(y_k, y)")
    if method == "transfer":
        notation["(i, j)"] = Symbol("parent-child edges between non-root nodes",
                                    "parent-child edges between non-root nodes", "(i,j)")
    if method == "hiermult":
        notation["N_j"] = Symbol("the number of examples whose path reaches a child of the internal node j",
                                 "the number of examples whose path reaches a child of the internal "
                                 "node $j$")
        notation["pi(i)"] = Symbol("the parent of i", "the parent of $i$", "\\pi(i)")
    return Formulation(
        objective=(reg[0] + loss[0], reg[1] + loss[1], eq),
        constraints={"margin": (*_PAIRS[method], eq), "xi_nonneg": (*_XI_NONNEG, eq)},
        variables=variables, notation=notation, dims=dims)


def baseline_dual_formulation(method: str) -> Formulation:
    """The baselines' QP dual (one builder for the family), derived in the sheet."""
    eq = f"dual of {_EQ[method]}, derived"
    if method == "treeloss":
        budget = ("sum_{p of k} alpha_p / Delta_p <= C/N for every k,  alpha >= 0",
                  "\\textstyle\\sum_{p \\ni k} \\alpha_p / \\Delta_p \\le C/N,\\ \\alpha \\ge 0")
    elif method == "hiermult":
        budget = ("sum_{p of s} alpha_p <= C/N_j for every slack s = (k, j),  alpha >= 0",
                  "\\textstyle\\sum_{p \\ni s} \\alpha_p \\le C/N_j,\\ \\alpha \\ge 0")
    else:
        budget = ("sum_{p of k} alpha_p <= C/N for every k,  alpha >= 0",
                  "\\textstyle\\sum_{p \\ni k} \\alpha_p \\le C/N,\\ \\alpha \\ge 0")
    if method == "treeloss":
        U = Symbol("sum_p alpha_p (a_{y_k} - a_y) x_k^T over the non-root nodes, a_y the ancestor "
                   "indicators of (3) (root excluded)",
                   "$\\sum_p \\alpha_p (a_{y_k} - a_y) x_k^\\top$ over the non-root nodes, $a_y$ the "
                   "ancestor indicators of (3) (root excluded)", "U(\\alpha)")
    else:
        U = Symbol("sum_p alpha_p (e_pos - e_neg) x_k^T over the weighted nodes",
                   "$\\sum_p \\alpha_p (e_{\\mathrm{pos}} - e_{\\mathrm{neg}}) x_k^\\top$ over the "
                   "weighted nodes, for the pair $p$ of example $k$", "U(\\alpha)")
    R = (Symbol("I + E^T E, E the incidence of the edges between non-root nodes",
                "$I + E^\\top E$, $E$ the incidence matrix of the edges between non-root nodes")
         if method == "transfer" else Symbol("I", "the identity $I$"))
    notation = {"U(alpha)": U, "R": R, "W": Symbol("R^{-1} U(alpha) (recovery)",
                                                   "$R^{-1} U(\\alpha)$ (recovery)")}
    if method == "treeloss":
        notation["Delta_p"] = Symbol("the loss of the pair p", "the loss of the pair $p$", "\\Delta_p")
    if method == "hiermult":
        notation["N_j"] = Symbol("the number of examples whose path reaches a child of j",
                                 "the number of examples whose path reaches a child of $j$")
    return Formulation(
        objective=("sum_p alpha_p - 1/2 tr(U(alpha)^T R^{-1} U(alpha))",
                   "\\sum_p \\alpha_p - \\tfrac12 \\operatorname{tr}(U(\\alpha)^\\top R^{-1} U(\\alpha))", eq),
        constraints={"budget": (*budget, eq)},
        variables={"alpha": Symbol("margin multipliers, one per row of the primal",
                                   "margin multipliers $\\alpha_p$, one per row of the primal",
                                   "\\alpha", ("P",))},
        notation=notation, dims={**_DIMS, "P": _BASELINE_PAIRS})



# =============================================================================== declarations
@rescales_features({"V": -1, "G": -2, "t": -2, "xi": 0, "W": -1, "intercept": -1})
def primal(X, y, H: Hierarchy, C: float = 1.0, K=None, alpha: float = 1.0, representer: bool | None = None,
           max_size: int | None = None, *, fit_intercept: bool = False,
           intercept_scaling: float = 1.0) -> ReferenceProblem:
    """Problem (4), orthogonal transfer, as an exact semidefinite program.

    ``y``: one node name per sample (leaf or internal, not the root).  ``K``: ``(m, m)`` over
    ``H.nodes[1:]`` satisfying Theorem 1 (``NonConvexKError`` otherwise, quoting the smallest
    eigenvalue of its comparison matrix); default heuristic (6) with ``alpha`` (lowered, with
    a warning, when its comparison matrix is not positive definite).  ``representer``: write
    the weights in an orthonormal basis of the rows of X (Theorem 3); default when
    ``n_features > n_samples``.  ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's
    regularized bias, (4) on ``x~ = [x, s]``: ``w~_i = [w_i, b_i / s]`` in the margin rows,
    the lifting and Omega (5) (``<w~_i, w~_j> = <w_i, w_j> + b_i b_j / s^2``).

    Declared problem (``W`` = the non-root weights, or ``V Bt`` with the representer)::

        min  1/2 sum_i K_ii G_ii + sum_{i<j, K_ij>0} K_ij t_ij + C sum_k xi_k / N
        s.t. t_ij >= G_ij,  t_ij >= -G_ij,  [[I, W~^T], [W~, G]] >= 0 (PSD),
             <w~_i - w~_j, x~_k> + xi_k >= 1  (j in S(i), i in A^+(y_k)),  xi >= 0
        (W~ = W, x~ = x without an intercept).

    ``sol.weights``: ``(n_nodes, n_features)``, rows in ``H.nodes`` order, root row zero, no
    bias column; ``sol.values``: ``V`` (the weights in the basis; ``= W[1:]`` without
    representer), ``G``, ``t`` (when K has off-diagonal entries), ``xi`` and, with
    ``fit_intercept``, ``intercept`` ``(n_nodes,)`` (root 0).  Certificate: objective =
    ``omega(W~[1:], K) + C/N sum_k xi_k(W~)`` recomputed in numpy; lower bound =
    ``sum alpha - 1/2 tr(U^T S^{-1} U)`` with alpha the projected margin duals and
    ``S_ij = clip(mu+_ij - mu-_ij, -K_ij, K_ij)``, ``S_ii = K_ii`` from the duals of the
    absolute-value epigraph (valid for any such S when Kbar is PSD; see the sheet).
    """
    model = prepare(X, y, H, "orthogonal", K=K, alpha=alpha, fit_intercept=fit_intercept,
                    intercept_scaling=intercept_scaling)
    return primal_from_model(model, C, representer=representer, max_size=max_size)


def primal_from_model(model: PairModel, C: float = 1.0, *, representer: bool | None = None,
                      max_size: int | None = None) -> ReferenceProblem:
    """The reference of ``model.method`` on a prepared model: the lifted SDP of (4) for
    ``"orthogonal"`` (:func:`primal`), the QP of the baseline otherwise (:func:`flatmult`,
    :func:`hiermult`, :func:`transfer`, :func:`treeloss`), with the model's intercept
    (``fit_intercept``).  ``C`` is a ``cp.Parameter`` (``prob.set(C=...)`` re-solves without
    recompiling)."""
    Cval = check_positive(C, "C")
    if model.method == "orthogonal":
        return _sdp_from_model(model, Cval, representer, max_size)
    name = _NAMES.get(model.method) or (
        f"TREELOSS (section 5), classes={'nodes' if len(model.classes) == len(model.H) - 1 else 'leaves'}")
    return _qp_from_model(model, Cval, name, max_size)


def _sdp_from_model(model: PairModel, Cval: float, representer, max_size) -> ReferenceProblem:
    """The lifted SDP of (4) (see :func:`primal`)."""
    t0 = time.perf_counter()
    X, K = model.X_features, model.K
    m = len(model.H) - 1
    n = X.shape[0]
    F, basis = features(X, representer)
    # the bias column joins the features: x~ = [F, s] (the representer coordinates of x and
    # the constant stay orthonormal coordinates of x~, so Theorem 3 loses nothing)
    s = model.bias_scaling
    F_aug = F if s is None else (model.X if basis is None else append_constant(F, s))
    r = F_aug.shape[1]
    pi, pj = np.nonzero(np.triu(K, 1))
    Kp = K[pi, pj]
    estimate(model, r, "the orthogonal-transfer SDP (4)", max_size,
              extra_vars=m * (m + 1) // 2 + len(pi), extra_rows=2 * len(pi) + (m + r) ** 2,
              extra_nnz=4 * len(pi) + (m + r) ** 2)

    Cp = cp.Parameter(pos=True, value=Cval, name="C")
    V = cp.Variable((m, F.shape[1]), name="V")
    G = cp.Variable((m, m), symmetric=True, name="G")
    xi = cp.Variable(n, name="xi")
    V_aug, intercept = bias_columns(model, V)
    margin_rows = margin_constraint(model, F_aug, V_aug, xi)
    nonneg = xi >= 0
    lift = cp.bmat([[np.eye(r), V_aug.T], [V_aug, G]]) >> 0
    penalty = 0.5 * (np.diag(K) @ cp.diag(G))
    constraints = [margin_rows, nonneg, lift]
    named = {"margin": margin_rows, "xi_nonneg": nonneg}
    variables = {"V": V, "G": G, "xi": xi}
    if intercept is not None:
        variables["intercept"] = intercept
    if len(pi):
        sel = sp.csr_matrix((np.ones(len(pi)), (np.arange(len(pi)), pi * m + pj)), shape=(len(pi), m * m))
        g = sel @ cp.vec(G, order="C")
        t = cp.Variable(len(pi), name="t")
        upper, lower = t - g >= 0, t + g >= 0
        constraints += [upper, lower]
        named.update(abs_upper=upper, abs_lower=lower)
        variables["t"] = t
        penalty = penalty + Kp @ t
    problem = cp.Problem(cp.Minimize(penalty + Cp * (model.data.Cw @ xi)), constraints)

    routes = SDPRoutes(model, Cp, basis, K, (pi, pj))
    logger.debug("orthogonal SDP: n=%d, d=%d, r=%d, m=%d, pairs=%d, K pairs=%d, intercept=%s", n,
                 X.shape[1], r, m, model.data.n_pairs, len(pi), model.fit_intercept)
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints=named, parameters={"C": Cp},
        infeasibility=routes.infeasibility,
        name="orthogonal transfer (4), lifted SDP" + ("" if basis is None else " in the representer basis"),
        build_time=time.perf_counter() - t0,
        formulation=_with_bias(sdp_formulation(off_diagonal=bool(len(pi))), model.fit_intercept),
        data={"X": X, "H": model.H, "y_index": model.y_index, "K": K, "alpha": model.K_alpha, "model": model,
              "representer": basis is not None, "basis": basis, "features": F, "psd_block": m + r,
              "fit_intercept": model.fit_intercept, "intercept_scaling": model.intercept_scaling})


def _qp_from_model(model: PairModel, Cval: float, name: str, max_size) -> ReferenceProblem:
    """``min 1/2 ||W~||^2 (+ 1/2 ||E W~||^2) + C sum_s Cw_s xi_s`` over ``model``'s rows: the
    regularizer is ``1/2 tr(W~^T S W~)`` with ``S = I (+ E^T E)`` (``model.S``), ``W~ = [W, b / s]``
    with an intercept (else ``W``)."""
    t0 = time.perf_counter()
    X = model.X_features
    n_vars = len(model.var_nodes)
    estimate(model, model.X.shape[1], name, max_size)
    Cp = cp.Parameter(pos=True, value=Cval, name="C")
    V = cp.Variable((n_vars, X.shape[1]), name="W")
    xi = cp.Variable(model.data.n_samples, name="xi")
    V_aug, intercept = bias_columns(model, V)
    margin_rows = margin_constraint(model, model.X, V_aug, xi)
    nonneg = xi >= 0
    reg = 0.5 * cp.sum_squares(V_aug)
    if model.method == "transfer":  # I + E^T E: a sum of squares, DCP as written
        incidence = edge_incidence(model.H)
        if incidence.shape[0] > 0:
            reg = reg + 0.5 * cp.sum_squares(incidence @ V_aug)
    problem = cp.Problem(cp.Minimize(reg + Cp * (model.data.Cw @ xi)), [margin_rows, nonneg])
    variables = {"W": V, "xi": xi}
    if intercept is not None:
        variables["intercept"] = intercept

    routes = QPRoutes(model, Cp)
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints={"margin": margin_rows, "xi_nonneg": nonneg},
        parameters={"C": Cp}, infeasibility=routes.infeasibility,
        name=name, build_time=time.perf_counter() - t0,
        formulation=_with_bias(baseline_formulation(model.method), model.fit_intercept),
        data={"X": X, "H": model.H, "y_index": model.y_index, "model": model, "regularizer": model.S,
              "fit_intercept": model.fit_intercept, "intercept_scaling": model.intercept_scaling})


def flatmult(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None, *,
             fit_intercept: bool = False, intercept_scaling: float = 1.0) -> ReferenceProblem:
    """FLATMULT, (12) over the leaves (Crammer--Singer with the paper's C/N)::

        min 1/2 sum_{l in L} ||w_l||^2 + C/N sum_k xi_k
        s.t. <w_{y_k} - w_l, x_k> >= 1 - xi_k  for every leaf l != y_k;  xi >= 0

    Labels must be leaves.  Every leaf of H has a weight vector (also leaves without
    training examples).  ``sol.weights`` ``(n_nodes, n_features)``, non-leaf rows zero;
    predict with :func:`predict_flat`.  Lower bound: the Crammer--Singer dual at the
    projected duals.  ``fit_intercept``, ``intercept_scaling``: a regularized bias per
    weighted node (the problem on ``x~ = [x, s]``, ``sol.values["intercept"]``; see
    :func:`primal`)."""
    model = prepare(X, y, H, "flatmult", fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    return primal_from_model(model, C, max_size=max_size)


def hiermult(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None, *,
             fit_intercept: bool = False, intercept_scaling: float = 1.0) -> ReferenceProblem:
    """HIERMULT: for every internal node j, (12) with ``Y = C(j)`` on the ``N_j`` examples whose
    label lies below j, each child trained on the examples of its subtree::

        sum_j [ 1/2 sum_{i in C(j)} ||w_i||^2 + C/N_j sum_{k below j} xi_kj ],
        <w_i - w_l, x_k> >= 1 - xi_kj  for i = the child of j on k's path, l in S(i)

    The node problems are independent; they are declared as one problem (one slack per
    example and internal node on its path) whose optimum is their sum.  Predict with
    :func:`predict_top_down`.  ``fit_intercept``, ``intercept_scaling``: a regularized bias
    per weighted node (the problem on ``x~ = [x, s]``, ``sol.values["intercept"]``; see
    :func:`primal`)."""
    model = prepare(X, y, H, "hiermult", fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    return primal_from_model(model, C, max_size=max_size)


def transfer(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None, *,
             fit_intercept: bool = False, intercept_scaling: float = 1.0) -> ReferenceProblem:
    """TRANSFER: (4)'s constraints with the regularizer
    ``1/2 sum_i (||w_i||^2 + sum_{j in C(i)} ||w_i - w_j||^2)`` (``= 1/2 tr(W^T R W)``,
    :func:`transfer_matrix`) instead of Omega.  Predict with :func:`predict_top_down`.
    ``fit_intercept``, ``intercept_scaling``: a regularized bias per weighted node (the
    problem on ``x~ = [x, s]``, ``sol.values["intercept"]``; see :func:`primal`); the edge
    differences ``w~_i - w~_j`` include ``(b_i - b_j) / s``."""
    model = prepare(X, y, H, "transfer", fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    return primal_from_model(model, C, max_size=max_size)


def treeloss(X, y, H: Hierarchy, C: float = 1.0, classes: str = "nodes",
             max_size: int | None = None, *, fit_intercept: bool = False,
             intercept_scaling: float = 1.0) -> ReferenceProblem:
    """TREELOSS (Cai--Hofmann form, section 5), in the increments ``u_i`` of (3)::

        min 1/2 sum_i ||u_i||^2 + C/N sum_k xi_k
        s.t. sum_{A^+(y_k)} <u_i, x_k> - sum_{A^+(y)} <u_j, x_k> >= 1 - xi_k / Delta(y_k, y)
             for y in classes, y != y_k;  xi >= 0,   Delta = half the tree distance.

    ``classes="nodes"`` (the paper: every non-root node) or ``"leaves"``.  ``sol.weights``
    are the increments ``u`` ``(n_nodes, n_features)`` (root row zero); class weights
    ``w_y = sum_{A^+(y)} u`` -- predict with ``predict_flat(..., cumulative=True)``.
    ``fit_intercept``, ``intercept_scaling``: a regularized bias per weighted node (the
    problem on ``x~ = [x, s]``, ``sol.values["intercept"]``; see :func:`primal`); one bias
    per increment, class biases ``sum_{A^+(y)} b``."""
    model = prepare(X, y, H, "treeloss", classes=classes, fit_intercept=fit_intercept,
                    intercept_scaling=intercept_scaling)
    return primal_from_model(model, C, max_size=max_size)


# =============================================================================== duals
def _pair_gradient(model: PairModel, F, alpha):
    """``U(alpha)^T`` ``(r, n_vars)`` as a CVXPY expression: ``F_s^T G(alpha) Lam_v`` with
    ``G`` the expansion coefficients of the pairs (``+alpha_p`` at the positive class,
    ``-alpha_p`` at the negative one of slack ``s``), ``F_s`` the features of each slack and
    ``Lam_v`` the class attributes restricted to ``var_nodes``: the linear term of the
    Lagrangian, so the margin rows read ``<U(alpha), W> = sum_p alpha_p (diff_p)``."""
    d = model.data
    q, P = d.n_classes, d.n_pairs
    p = np.arange(P)
    coef = sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                          (np.r_[d.pair_i * q + d.pair_y, d.pair_i * q + d.pair_ybar], np.r_[p, p])),
                         shape=(d.n_samples * q, P))
    G = cp.reshape(coef @ alpha, (d.n_samples, q), order="C")
    Fs = F if model.X_slacks is model.X else F[model.slack_example]  # HIERMULT: a row per slack
    FsT = Fs.T.tocsr() if sp.issparse(Fs) else np.ascontiguousarray(np.asarray(Fs).T)
    return FsT @ G @ d.Lam[:, model.var_nodes]


@rescales_features({"alpha": -2}, multipliers=("alpha",))
def dual(X, y, H: Hierarchy, C: float = 1.0, K=None, alpha: float = 1.0, representer: bool | None = None,
         max_size: int | None = None, *, fit_intercept: bool = False,
         intercept_scaling: float = 1.0) -> ReferenceProblem:
    """The dual of the lifted SDP of (4) (same signature as :func:`primal`)::

        max_{alpha, S, T}  sum_p alpha_p - 1/2 tr(T)
        s.t.  [[T, U(alpha)^T], [U(alpha), S]] >= 0 (PSD),
              S_ii = K_ii,  |S_ij| <= K_ij,
              alpha >= 0,  sum_{p of slack k} alpha_p <= C/N

    (derived in ``formulations/orthogonal.md``, section "Dual").  At the optimum ``T =
    U^T S^{-1} U`` and the primal weights are recovered as ``W = S^{-1} U(alpha)`` (``S`` is
    positive definite whenever ``Kbar`` is); the multiplier ``Z`` of the PSD block is the
    primal's lifted matrix up to scale, a second recovery ``W = -Z_21 Z_11^{-1}`` (as accurate
    as the solver's primal, where ``S^{-1} U`` at an interior point loses digits).
    Certificate: objective = (4) at the better of the two recovered ``W``; lower bound = the
    dual objective ``sum alpha - 1/2 tr(U^T S^{-1} U)`` at the projected ``alpha`` and ``S``
    clipped to the box (:meth:`PairModel.lower_bound`).

    With ``fit_intercept`` this is the dual of (4) on ``x~ = [x, s]`` (``U(alpha)`` over the
    augmented features): the recovered ``W~ = [W, b / s]`` gives ``sol.weights`` (``W``) and
    ``sol.values["intercept"]`` (``b`` per node, recovered from the solved point)."""
    model = prepare(X, y, H, "orthogonal", K=K, alpha=alpha, fit_intercept=fit_intercept,
                    intercept_scaling=intercept_scaling)
    return dual_from_model(model, C, representer=representer, max_size=max_size)


def dual_from_model(model: PairModel, C: float = 1.0, *, representer: bool | None = None,
                    max_size: int | None = None) -> ReferenceProblem:
    """The dual of ``model.method``'s reference on a prepared model: the SDP dual of the
    lifting for ``"orthogonal"`` (:func:`dual`), the QP dual of the baselines otherwise
    (:func:`baseline_dual`).  ``C`` is a ``cp.Parameter``."""
    Cval = check_positive(C, "C")
    if model.method == "orthogonal":
        return _sdp_dual_from_model(model, Cval, representer, max_size)
    return _qp_dual_from_model(model, Cval, max_size)


def _dual_pieces(model: PairModel, Cval: float, F):
    """The margin multipliers, their budget rows, the parameter C and ``U(alpha)^T``."""
    d = model.data
    if d.n_pairs == 0:  # a CVXPY variable of size 0 does not compile
        raise HierarchyError(f"the dual of {model.method.upper()} has no multipliers: the labels "
                             "give no two classes to separate (the hierarchy's leaves: "
                             f"{', '.join(map(repr, model.H.leaves[:3]))}); give a hierarchy with "
                             "at least two leaves (the primal's optimum is W = 0)")
    Cp = cp.Parameter(pos=True, value=Cval, name="C")
    alpha = cp.Variable(d.n_pairs, nonneg=True, name="alpha")
    budget_rows = sp.csr_matrix((d.pair_cost, (d.pair_i, np.arange(d.n_pairs))),
                                shape=(d.n_samples, d.n_pairs))
    budget = budget_rows @ alpha <= Cp * d.Cw
    return Cp, alpha, budget, _pair_gradient(model, F, alpha)


def _sdp_dual_from_model(model: PairModel, Cval: float, representer, max_size) -> ReferenceProblem:
    """The SDP dual of (4)'s lifting (see :func:`dual`)."""
    t0 = time.perf_counter()
    K = model.K
    m = K.shape[0]
    # the dual is (4)'s on the augmented features (x~ = [x, s] with an intercept); the
    # representer default follows the features as given, as in the primal
    F, basis = features(model.X, model.n_features > model.n_samples if representer is None
                         else representer)
    r = F.shape[1]
    P = model.data.n_pairs
    check_size(P + m * m + r * r, model.n_samples + m * m + (m + r) ** 2, 3 * P * r + (m + r) ** 2,
               max_size, what="the dual of the orthogonal-transfer SDP (4)")
    Cp, alpha, budget, Ut = _dual_pieces(model, Cval, F)
    S = cp.Variable((m, m), symmetric=True, name="S")
    T = cp.Variable((r, r), symmetric=True, name="T")
    box = cp.abs(S) <= K  # K_ij = 0 pins S_ij to 0
    diagonal = cp.diag(S) == np.diag(K)
    lift = cp.bmat([[T, Ut], [Ut.T, S]]) >> 0
    problem = cp.Problem(cp.Maximize(model.data.pair_offset @ alpha - 0.5 * cp.trace(T)),
                         [budget, box, diagonal, lift])

    routes = SDPDualRoutes(model, Cp, basis, lift, (alpha, S), r)
    variables = {"alpha": alpha, "S": S, "T": T}
    if model.fit_intercept:
        variables["intercept"] = Recovered((len(model.H),), routes.intercept)
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints={"budget": budget, "lift": lift},
        parameters={"C": Cp},
        name="orthogonal transfer (4), dual of the lifted SDP"
             + ("" if basis is None else " in the representer basis"),
        build_time=time.perf_counter() - t0,
        formulation=_with_bias(sdp_dual_formulation(), model.fit_intercept, dual=True),
        data={"X": model.X_features, "X_augmented": model.X, "H": model.H, "K": K, "model": model,
              "basis": basis, "features": F, "fit_intercept": model.fit_intercept,
              "intercept_scaling": model.intercept_scaling})


def _qp_dual_from_model(model: PairModel, Cval: float, max_size) -> ReferenceProblem:
    """The QP dual of a baseline (see :func:`baseline_dual`)."""
    t0 = time.perf_counter()
    X = model.X
    P = model.data.n_pairs
    n_vars = len(model.var_nodes)
    check_size(P, model.data.n_samples, 3 * P * X.shape[1] + n_vars * n_vars, max_size,
               what=f"the dual of {model.method.upper()}")
    Cp, alpha, budget, Ut = _dual_pieces(model, Cval, X)
    L = np.linalg.cholesky(model.S)
    # tr(U^T S^{-1} U) = ||L^{-1} U||_F^2 with S = L L^T (S = I except TRANSFER)
    Linv_T = np.linalg.solve(L, np.eye(n_vars)).T
    problem = cp.Problem(cp.Maximize(model.data.pair_offset @ alpha - 0.5 * cp.sum_squares(Ut @ Linv_T)),
                         [budget])

    routes = QPDualRoutes(model, Cp, alpha)
    variables = {"alpha": alpha}
    if model.fit_intercept:
        variables["intercept"] = Recovered((len(model.H),), routes.intercept)
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints={"budget": budget},
        parameters={"C": Cp}, name=f"{_NAMES.get(model.method, 'TREELOSS (section 5)')}, dual",
        build_time=time.perf_counter() - t0,
        formulation=_with_bias(baseline_dual_formulation(model.method), model.fit_intercept, dual=True),
        data={"X": model.X_features, "X_augmented": X, "H": model.H, "model": model,
              "regularizer": model.S, "fit_intercept": model.fit_intercept,
              "intercept_scaling": model.intercept_scaling})


def baseline_dual(X, y, H: Hierarchy, C: float = 1.0, method: str = "flatmult", classes: str = "nodes",
                  max_size: int | None = None, *, fit_intercept: bool = False,
                  intercept_scaling: float = 1.0) -> ReferenceProblem:
    """The QP dual shared by the four baselines (FLATMULT, HIERMULT, TRANSFER, TREELOSS)::

        max_alpha  sum_p b_p alpha_p - 1/2 tr(U(alpha)^T R^{-1} U(alpha))
        s.t.       alpha >= 0,  sum_{p of slack s} cost_p alpha_p <= C Cw_s

    ``R`` the regularizer's matrix (``I``, or ``I + E^T E`` for TRANSFER), ``b_p = 1``,
    ``cost_p = 1 / Delta_p`` (slack rescaling; ``Delta = 1`` except TREELOSS).  Recovery
    ``W = R^{-1} U(alpha)``.  ``classes`` is TREELOSS's option.  With ``fit_intercept`` the
    dual of the baseline on ``x~ = [x, s]``: ``U(alpha)`` over the augmented features, the
    recovered ``W~ = [W, b / s]`` gives ``sol.weights`` and ``sol.values["intercept"]``."""
    if method == "orthogonal":
        raise InputError("method='orthogonal' has its own SDP dual: use dual(...)")
    bias = {"fit_intercept": fit_intercept, "intercept_scaling": intercept_scaling}
    model = (prepare(X, y, H, method, classes, **bias) if method == "treeloss"
             else prepare(X, y, H, method, **bias))
    return dual_from_model(model, C, max_size=max_size)


def flatmult_dual(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None, *,
                  fit_intercept: bool = False, intercept_scaling: float = 1.0) -> ReferenceProblem:
    """The dual of :func:`flatmult` (see :func:`baseline_dual`)."""
    return baseline_dual(X, y, H, C, "flatmult", max_size=max_size, fit_intercept=fit_intercept,
                         intercept_scaling=intercept_scaling)


def hiermult_dual(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None, *,
                  fit_intercept: bool = False, intercept_scaling: float = 1.0) -> ReferenceProblem:
    """The dual of :func:`hiermult` (see :func:`baseline_dual`)."""
    return baseline_dual(X, y, H, C, "hiermult", max_size=max_size, fit_intercept=fit_intercept,
                         intercept_scaling=intercept_scaling)


def transfer_dual(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None, *,
                  fit_intercept: bool = False, intercept_scaling: float = 1.0) -> ReferenceProblem:
    """The dual of :func:`transfer` (see :func:`baseline_dual`)."""
    return baseline_dual(X, y, H, C, "transfer", max_size=max_size, fit_intercept=fit_intercept,
                         intercept_scaling=intercept_scaling)


def treeloss_dual(X, y, H: Hierarchy, C: float = 1.0, classes: str = "nodes",
                  max_size: int | None = None, *, fit_intercept: bool = False,
                  intercept_scaling: float = 1.0) -> ReferenceProblem:
    """The dual of :func:`treeloss` (see :func:`baseline_dual`)."""
    return baseline_dual(X, y, H, C, "treeloss", classes, max_size=max_size,
                         fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
