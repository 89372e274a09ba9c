"""How ``describe`` and ``hiercvx show`` write the NHSVM declarations: the single-label programs
(10) / (13), the shared-norm SVM (14) and their duals (Choi, Sasaki and Srebro, "Normalized
Hierarchical SVM", arXiv:1508.02479, 2016), as :class:`~hiercvx.describe.Formulation` records in
the paper's symbols."""

from __future__ import annotations

from ..describe import Formulation, Symbol

__all__ = ["nhsvm_formulation", "nhsvm_dual_formulation", "shared_formulation",
           "shared_dual_formulation"]


_SCORE = Symbol("sum_{n in anc(l)} sqrt(alpha_n) <w_n, x>: the score of leaf l (the normalized "
                "attributes (5), row l of Lam)",
                "$\\sum_{n \\in \\mathrm{anc}(l)} \\sqrt{\\alpha_n}\\, \\langle w_n, x \\rangle$: the "
                "score of leaf $l$ (the normalized attributes (5), row $l$ of $\\Lambda$)", "s_l(x)")
_LEAF = Symbol("the leaf of example i", "the leaf of example $i$", "l_i")
_INTERCEPT = Symbol("node biases b_n (with fit_intercept; not in the paper)",
                    "node biases $b_n$ (with an intercept; not in the paper)", "b", ("M",))
_XI = Symbol("one slack per example", "one slack per example", "\\xi", ("N",))
_BETA = Symbol("masses on the leaves, one simplex with slack per example",
               "masses $\\beta_{il}$ on the leaves, one simplex with slack per example", "\\beta",
               ("N", "q"))
# the sheet's symbols: N examples, n a node, L the set of leaves (q = |L| their number)
_DIMS = {"N": ("examples", "examples"),
         "q": ("the number of leaves |L| (the classes)",
               "the number of leaves $\\lvert\\mathcal L\\rvert$ (the classes)")}
_NODE = Symbol("a node of the hierarchy (sum_n: over all M nodes)",
               "a node of the hierarchy ($\\sum_n$: over all $M$ nodes)")
_LEAVES = Symbol("the set of leaves", "the set of leaves", "\\mathcal L")
_S = Symbol("intercept_scaling: the value of the constant feature of LIBLINEAR's bias",
            "the value of the constant feature of LIBLINEAR's bias (intercept scaling)")
_X_TILDE = Symbol("[X, s 1]: the features with the constant column s of the bias (N x (d + 1))",
                  "$[X,\\ s\\mathbf 1]$: the features with the constant column $s$ of the bias "
                  "($N \\times (d + 1)$)", "\\tilde X")


def nhsvm_formulation(variant: str = "nhsvm", fit_intercept: bool = False) -> Formulation:
    """Single-label (10) or (13) as declared by :func:`primal_from_model` (with LIBLINEAR's
    regularized node biases ``b`` when ``fit_intercept``)."""
    if variant == "nhsvm":
        eq = "(10)"
        margin = (("s_{l_i}(x_i) - s_l(x_i) + xi_i >= Delta(l_i, l) for every i and leaf l in L "
                   "(l = l_i reads xi_i >= 0)"),
                  "s_{l_i}(x_i) - s_l(x_i) + \\xi_i \\ge \\tilde\\Delta(l_i, l) \\quad \\forall i,\\ l \\in \\mathcal L")
    else:
        eq = "(13)"
        margin = (("(s_{l_i}(x_i) - s_l(x_i)) / Delta(l_i, l) + xi_i >= 1 for every i and leaf l != l_i "
                   "in L; xi_i >= 0"),
                  ("\\frac{s_{l_i}(x_i) - s_l(x_i)}{\\tilde\\Delta(l_i, l)} + \\xi_i \\ge 1 \\quad "
                   "\\forall i,\\ l \\in \\mathcal L,\\ l \\ne l_i;\\ \\xi_i \\ge 0"))
    objective = ("lam sum_n ||w_n||^2 + sum_i xi_i", "\\lambda \\sum_n \\|w_n\\|^2 + \\sum_i \\xi_i", eq)
    score = _SCORE
    variables = {"W": Symbol("node weights w_n, rows in H.nodes order",
                             "node weights $w_n$, one row per node", shape=("M", "d")), "xi": _XI}
    extra = {}
    if fit_intercept:
        objective = ("lam sum_n (||w_n||^2 + b_n^2 / s^2) + sum_i xi_i",
                     "\\lambda \\sum_n \\bigl(\\|w_n\\|^2 + b_n^2 / s^2\\bigr) + \\sum_i \\xi_i", eq)
        score = Symbol("sum_{n in anc(l)} sqrt(alpha_n) (<w_n, x> + b_n): the score of leaf l (the "
                       "normalized attributes (5), row l of Lam)",
                       "$\\sum_{n \\in \\mathrm{anc}(l)} \\sqrt{\\alpha_n}\\, (\\langle w_n, x \\rangle + "
                       "b_n)$: the score of leaf $l$ (the normalized attributes (5), row $l$ of $\\Lambda$)",
                       "s_l(x)")
        variables["intercept"] = _INTERCEPT
        extra["s"] = _S
    return Formulation(
        objective=objective,
        constraints={"margin": (*margin, eq)},
        variables=variables,
        notation={"n": _NODE, "s_l(x)": score, "l_i": _LEAF,
                  "Delta(l_i, l)": Symbol(
                      "the normalized margin (9): sqrt(sum_{n in anc(l) xor anc(l_i)} alpha_n)",
                      "the normalized margin (9): $\\sqrt{\\sum_{n \\in \\mathrm{anc}(l) \\triangle "
                      "\\mathrm{anc}(l_i)} \\alpha_n}$", "\\tilde\\Delta(l_i, l)"),
                  "alpha": Symbol("path weights alpha_n, (6) on trees / (8) on DAGs by default",
                                  "path weights $\\alpha_n$, (6) on trees and (8) on DAGs by default",
                                  "\\alpha"),
                  "L": _LEAVES, **extra},
        dims=_DIMS)


def nhsvm_dual_formulation(variant: str = "nhsvm", fit_intercept: bool = False) -> Formulation:
    """The dual of single-label (10) / (13) (derived in the sheet), scaled by ``lam``; with
    ``fit_intercept`` the same dual on ``X~ = [X, s 1]`` (LIBLINEAR's bias)."""
    eq = f"dual of {'(10)' if variant == 'nhsvm' else '(13)'}, derived"
    if variant == "nhsvm":
        e = Symbol("Delta(l_i, l) (9) off the own leaf, 0 on it",
                   "$\\tilde\\Delta(l_i, l)$ (9) off the own leaf, 0 on it", "e_{il}")
        sigma, sigma_tex = "1", "1"
    else:
        e = Symbol("1 off the own leaf, 0 on it", "1 off the own leaf, 0 on it", "e_{il}")
        sigma, sigma_tex = "1 / Delta(l_i, l) (9)", "1 / \\tilde\\Delta(l_i, l)$ (9)$"
    x, x_tex = ("X~", "\\tilde X") if fit_intercept else ("X", "X")
    recovery = Symbol("Lam^T Gc^T X / (2 lam): the node weights (recovery)",
                      "$\\Lambda^\\top G_c^\\top X / (2 \\lambda)$: the node weights (recovery)")
    extra = {}
    if fit_intercept:
        recovery = Symbol("[W, b / s] = Lam^T Gc^T X~ / (2 lam): the node weights and, in the last "
                          "column, the node biases b_n over s (recovery)",
                          "$[W,\\ b / s] = \\Lambda^\\top G_c^\\top \\tilde X / (2 \\lambda)$: the node "
                          "weights and, in the last column, the node biases $b_n$ over $s$ (recovery)")
        extra = {"X~": _X_TILDE, "s": _S}
    return Formulation(
        objective=(f"lam sum_{{i,l}} beta_il e_il - 1/4 ||Lam^T Gc(beta)^T {x}||_F^2  (the dual times lam)",
                   f"\\lambda \\sum_{{i,l}} \\beta_{{il}} e_{{il}} - \\tfrac14 \\|\\Lambda^\\top "
                   f"G_c(\\beta)^\\top {x_tex}\\|_F^2",
                   eq),
        constraints={"simplex": ("sum_l beta_il <= 1 for every i", "\\textstyle\\sum_l \\beta_{il} \\le 1", eq),
                     "own_leaf": ("beta_{i,l_i} = 0,  beta >= 0", "\\beta_{i l_i} = 0,\\ \\beta \\ge 0", eq)},
        variables={"beta": _BETA},
        notation={"e_il": e, "l_i": _LEAF,
                  "Gc(beta)": Symbol(
                      f"Gc_il = -sigma_il beta_il (l != l_i), Gc_{{i,l_i}} = sum_l sigma_il beta_il, "
                      f"sigma_il = {sigma}",
                      f"$(G_c)_{{il}} = -\\sigma_{{il}} \\beta_{{il}}$ for $l \\ne l_i$, $(G_c)_{{i l_i}} = "
                      f"\\sum_l \\sigma_{{il}} \\beta_{{il}}$, with $\\sigma_{{il}} = {sigma_tex}$",
                      "G_c(\\beta)"),
                  "Lam": Symbol("the normalized attributes (5), one row per leaf",
                                "the normalized attributes (5), one row per leaf", "\\Lambda"),
                  **extra,
                  "W": recovery},
        dims=_DIMS)


def shared_formulation(fit_intercept: bool = False) -> Formulation:
    """The shared-norm SVM (14) as declared by :func:`shared_primal_from_model` (with LIBLINEAR's
    regularized node biases ``b`` inside each node's term when ``fit_intercept``)."""
    objective = ("lam sum_n ||u_n||^2 / alpha_n + sum_i xi_i",
                 "\\lambda \\sum_n \\|u_n\\|^2 / \\alpha_n + \\sum_i \\xi_i", "(14)")
    score = Symbol("sum_{n in anc(l)} <u_n, x>: the score of leaf l (indicator attributes)",
                   "$\\sum_{n \\in \\mathrm{anc}(l)} \\langle u_n, x \\rangle$: the score "
                   "of leaf $l$ (indicator attributes)")
    variables = {"U": Symbol("node weights u_n, rows in H.nodes order",
                             "node weights $u_n$, one row per node", shape=("M", "d")),
                 "alpha": Symbol("the sharing weight alpha_n of each node",
                                 "the sharing weight $\\alpha_n$ of each node", "\\alpha", ("M",)),
                 "xi": _XI}
    extra = {}
    if fit_intercept:
        objective = ("lam sum_n (||u_n||^2 + b_n^2 / s^2) / alpha_n + sum_i xi_i",
                     "\\lambda \\sum_n \\bigl(\\|u_n\\|^2 + b_n^2 / s^2\\bigr) / \\alpha_n + \\sum_i \\xi_i",
                     "(14)")
        score = Symbol("sum_{n in anc(l)} (<u_n, x> + b_n): the score of leaf l (indicator attributes)",
                       "$\\sum_{n \\in \\mathrm{anc}(l)} (\\langle u_n, x \\rangle + b_n)$: the score "
                       "of leaf $l$ (indicator attributes)")
        variables["intercept"] = _INTERCEPT
        extra["s"] = _S
    return Formulation(
        objective=objective,
        constraints={"margin": (("s_{l_i}(x_i) - s_l(x_i) + xi_i >= Delta(l_i, l) for every i and leaf l "
                                 "in L (l = l_i reads xi_i >= 0)"),
                                ("s_{l_i}(x_i) - s_l(x_i) + \\xi_i \\ge \\Delta(l_i, l) \\quad \\forall i,\\ "
                                 "l \\in \\mathcal L"),
                                "(14)"),
                     "paths": ("sum_{n in anc(l)} alpha_n <= 1 for every leaf l in L",
                               ("\\textstyle\\sum_{n \\in \\mathrm{anc}(l)} \\alpha_n \\le 1 \\quad "
                                "\\forall l \\in \\mathcal L"),
                               "(14)"),
                     "alpha_nonneg": ("alpha >= 0", "\\alpha \\ge 0", "(14)")},
        variables=variables,
        notation={"n": _NODE, "s_l(x)": score,
                  "l_i": _LEAF,
                  "anc(l)": Symbol("the ancestors of leaf l, itself included",
                                   "the ancestors of leaf $l$, itself included", "\\mathrm{anc}(l)"),
                  "Delta(l_i, l)": Symbol("the loss (loss=, zero_one by default); the paper fixes none",
                                          "the loss (zero-one by default); the paper fixes none",
                                          "\\Delta(l_i, l)"),
                  "L": _LEAVES, **extra},
        dims=_DIMS)


def shared_dual_formulation(fit_intercept: bool = False) -> Formulation:
    """The dual of (14), derived in the sheet: one rotated cone per node; with ``fit_intercept``
    the same dual on ``X~ = [X, s 1]`` (LIBLINEAR's bias)."""
    eq = "dual of (14), derived"
    x, x_tex = ("X~", "\\tilde X") if fit_intercept else ("X", "X")
    cols = "(d + 1)" if fit_intercept else "d"
    recovery = Symbol("alpha_n V_n / (2 lam), alpha_n the multiplier of node n's cone (recovery)",
                      "$\\alpha_n V_n / (2 \\lambda)$, $\\alpha_n$ the multiplier of the cone of "
                      "node $n$ (recovery)")
    extra = {}
    if fit_intercept:
        recovery = Symbol("[u_n, b_n / s] = alpha_n V_n / (2 lam), alpha_n the multiplier of node n's "
                          "cone: the node weights and bias (recovery)",
                          "$[u_n,\\ b_n / s] = \\alpha_n V_n / (2 \\lambda)$, $\\alpha_n$ the multiplier "
                          "of the cone of node $n$: the node weights and bias (recovery)")
        extra = {"X~": _X_TILDE, "s": _S}
    return Formulation(
        objective=("sum_{i,l} beta_il Delta(l_i, l) - sum_{l in L} mu_l",
                   "\\sum_{i,l} \\beta_{il} \\Delta(l_i, l) - \\sum_{l \\in \\mathcal L} \\mu_l", eq),
        constraints={"simplex": ("sum_l beta_il <= 1 for every i", "\\textstyle\\sum_l \\beta_{il} \\le 1", eq),
                     "own_leaf": ("beta_{i,l_i} = 0,  beta >= 0,  mu >= 0",
                                  "\\beta_{i l_i} = 0,\\ \\beta \\ge 0,\\ \\mu \\ge 0", eq),
                     "cones": ("||V_n(beta)||^2 <= 4 lam (A^T mu)_n for every node n (rotated cone)",
                               "\\|V_n(\\beta)\\|^2 \\le 4 \\lambda (A^\\top \\mu)_n \\quad \\forall n", eq)},
        variables={"beta": _BETA,
                   "mu": Symbol("multipliers mu_l of the path budgets, one per leaf l in L",
                                "multipliers $\\mu_l$ of the path budgets, one per leaf $l \\in \\mathcal L$",
                                "\\mu", ("q",))},
        notation={"V_n(beta)": Symbol(
                      f"row n of A^T Gc(beta)^T {x} (M x {cols}): Gc_il = -beta_il (l != l_i), "
                      "Gc_{i,l_i} = sum_l beta_il",
                      f"row $n$ of $A^\\top G_c(\\beta)^\\top {x_tex}$ ($M \\times {cols}$), with $(G_c)_{{il}} = "
                      "-\\beta_{il}$ for $l \\ne l_i$ and $(G_c)_{i l_i} = \\sum_l \\beta_{il}$",
                      "V_n(\\beta)"),
                  "A": Symbol("the leaf-path matrix, A_ln = 1 iff n in anc(l)",
                              "the leaf-path matrix: $A_{ln} = 1$ iff $n$ is an ancestor of $l$ or $l$"),
                  "L": _LEAVES,
                  "Delta(l_i, l)": Symbol("the loss of predicting l for l_i",
                                          "the loss of predicting $l$ for $l_i$", "\\Delta(l_i, l)"),
                  **extra,
                  "u_n": recovery},
        dims=_DIMS)
