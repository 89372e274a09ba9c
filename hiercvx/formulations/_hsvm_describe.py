"""How ``describe`` and ``hiercvx show`` write the hierarchical SVM declarations of Cai's thesis
(chapters 3 and 4): the primal (4.10), the dual (4.15) and the class form (4.48), as
:class:`~hiercvx.describe.Formulation` records in the thesis' symbols.  Each record lists the
constraint families in the order the builder hands them to CVXPY."""

from __future__ import annotations

from ..describe import Formulation, Symbol

__all__ = ["primal_formulation", "dual_formulation", "class_form_formulation"]

#: the hierarchical SVM's classes are leaves (``resolve_classes`` refuses internal nodes)
_DIMS = {"q": ("classes: the leaves of the hierarchy (H.leaves, or the leaves given as classes)",
               "classes: the leaves of the hierarchy ($H$'s leaves, or the leaves given as classes)")}
_NOTATION = {
    "Lam": Symbol("class attributes (q x M): Lam_yv = t_v(y) for v an ancestor of y, thesis (3.7)",
                  "class attributes ($q \\times M$): $\\Lambda_{yv} = t_v(y)$ for $v$ an ancestor of "
                  "$y$, thesis (3.7)", "\\Lambda"),
    "S_iy": Symbol("class score <u_y, x_i> = <W, Lam_y (x) x_i>, thesis (3.8)",
                   "class score $\\langle u_y, x_i \\rangle = \\langle W, \\Lambda_y \\otimes x_i "
                   "\\rangle$, thesis (3.8)", "S_{iy}"),
    "Delta(y, ybar)": Symbol("the loss of the pair (y relevant, ybar irrelevant)",
                             "the loss of the pair ($y$ relevant, $\\bar y$ irrelevant)",
                             "\\Delta(y, \\bar y)"),
    "c_i": Symbol("the weight of example i in the loss (sample_weight; 1 by default)",
                  "the weight of example $i$ in the loss (its sample weight; 1 by default)"),
    "Y_i": Symbol("the relevant classes of example i", "the relevant classes of example $i$"),
}
_VARIABLES = {
    "W": Symbol("node weights, rows in H.nodes order", "node weights $w_v$, one row per node",
                shape=("M", "d")),
    "xi": Symbol("one slack per example", "one slack per example", "\\xi", ("n",)),
    "U": Symbol("class weights u_y = sum_v Lam_yv w_v", "class weights $u_y = \\sum_v "
                "\\Lambda_{yv} w_v$", shape=("q", "d")),
    "S": Symbol("class scores of the examples", "class scores of the examples", shape=("n", "q")),
    "intercept": Symbol("node biases b_v (LIBLINEAR's, not in the thesis)",
                        "node biases $b_v$ (LIBLINEAR's, not in the thesis)", "b", ("M",)),
}
_INTERCEPT_NOTE = Symbol("intercept_scaling: the constant feature whose weight is b / s",
                         "the value of the constant feature, whose weight is $b / s$")


def _pair_family(rescaling: str, eq: str) -> tuple:
    if rescaling == "slack":
        return ("S_iy - S_iybar >= 1 - xi_i / Delta(y, ybar) for every i, y in Y_i, ybar not in Y_i",
                "S_{iy} - S_{i\\bar y} \\ge 1 - \\xi_i / \\Delta(y, \\bar y) \\quad "
                "\\forall i,\\ y \\in Y_i,\\ \\bar y \\notin Y_i", eq)
    return ("S_iy - S_iybar >= Delta(y, ybar) - xi_i for every i, y in Y_i, ybar not in Y_i",
            "S_{iy} - S_{i\\bar y} \\ge \\Delta(y, \\bar y) - \\xi_i \\quad "
            "\\forall i,\\ y \\in Y_i,\\ \\bar y \\notin Y_i", eq)


def primal_formulation(rescaling: str = "slack", fit_intercept: bool = False) -> Formulation:
    """Thesis (4.10) as
    :meth:`ReferenceProblem.describe() <hiercvx.reference.ReferenceProblem.describe>` shows it
    (with LIBLINEAR's regularized node biases ``b`` when ``fit_intercept``)."""
    reg, reg_tex = "1/2 ||W||_F^2", "\\tfrac12 \\|W\\|_F^2"
    scores, scores_tex = "S = X U^T", "S = X U^\\top"
    variables = {k: _VARIABLES[k] for k in ("W", "xi", "U", "S")}
    notation = dict(_NOTATION)
    if fit_intercept:
        reg, reg_tex = reg + " + 1/2 ||b||^2 / s^2", reg_tex + " + \\tfrac12 \\|b\\|^2 / s^2"
        scores, scores_tex = scores + " + 1 (Lam b)^T", scores_tex + " + 1 (\\Lambda b)^\\top"
        variables["intercept"] = _VARIABLES["intercept"]
        notation["s"] = _INTERCEPT_NOTE
    return Formulation(
        objective=(reg + " + C sum_i c_i xi_i", reg_tex + " + C \\sum_i c_i \\xi_i", "(4.10)"),
        constraints={"pairs": _pair_family(rescaling, "(4.10)"),
                     "xi_nonneg": ("xi_i >= 0", "\\xi_i \\ge 0", "(4.10)"),
                     "class_weights": ("U = Lam W (auxiliary: class weights)", "U = \\Lambda W", "(3.9)"),
                     "class_scores": (scores + " (auxiliary: class scores)", scores_tex, "(3.10)")},
        variables=variables, notation=notation, dims=_DIMS)


def dual_formulation(rescaling: str = "slack", fit_intercept: bool = False,
                     bias: bool = False) -> Formulation:
    """Thesis (4.15) as
    :meth:`ReferenceProblem.describe() <hiercvx.reference.ReferenceProblem.describe>` shows it;
    ``fit_intercept``: the kernel of ``[x, s]`` (LIBLINEAR's bias); ``bias``: the node biases
    recovered with the node weights by an auxiliary equality (linear kernel with attributes)."""
    budget = ("sum_{p of i} alpha_p / Delta_p <= C c_i" if rescaling == "slack"
              else "sum_{p of i} alpha_p <= C c_i")
    budget_tex = ("\\textstyle\\sum_{p \\ni i} \\alpha_p / \\Delta_p \\le C c_i" if rescaling == "slack"
                  else "\\textstyle\\sum_{p \\ni i} \\alpha_p \\le C c_i")
    offset = "alpha_p" if rescaling == "slack" else "Delta_p alpha_p"
    offset_tex = "\\alpha_p" if rescaling == "slack" else "\\Delta_p \\alpha_p"
    constraints = {
        "alpha_nonneg": ("alpha_p >= 0 for every pair p = (i, y, ybar)",
                         "\\alpha_p \\ge 0 \\quad \\forall p", "(4.15)"),
        "budget": (budget + " for every i", budget_tex + " \\quad \\forall i", "(4.13)"),
        "expansion": ("G_iy = sum of alpha_p over i's pairs with y relevant, minus over y "
                      "irrelevant (auxiliary)", "G = G(\\alpha)", "(4.12)"),
        "factor": ("T = L_K^T G with K = L_K L_K^T (auxiliary)", "T = L_K^\\top G", "(4.16)-(4.17)")}
    variables = {
        "alpha": Symbol("one multiplier per pair p = (i, y, ybar), thesis (4.11)",
                        "one multiplier per pair $p = (i, y, \\bar y)$, thesis (4.11)", "\\alpha", ("P",)),
        "G": Symbol("expansion coefficients G(alpha): G_iy sums alpha_p over i's pairs, "
                    "+ where y is relevant, - where it is not",
                    "expansion coefficients $G(\\alpha)$: $G_{iy}$ sums $\\alpha_p$ over "
                    "the pairs of $i$, with $+$ where $y$ is relevant and $-$ where not",
                    shape=("n", "q")),
        "T": Symbol("L_K^T G", "$L_K^\\top G$", shape=("r", "q")),
        "intercept": _VARIABLES["intercept"]}
    notation = {
        "K": Symbol("the input kernel's Gram matrix (linear: X X^T), K = L_K L_K^T",
                    "the input kernel's Gram matrix (linear: $X X^\\top$), $K = L_K L_K^\\top$"),
        "Q": Symbol("the class kernel Lam Lam^T, or the given class_kernel (q x q), thesis (4.17)",
                    "the class kernel $\\Lambda \\Lambda^\\top$, or the given one ($q \\times q$), "
                    "thesis (4.17)"),
        "Lam": _NOTATION["Lam"],
        "Delta_p": Symbol("the loss of the pair p", "the loss of the pair $p$", "\\Delta_p"),
        "c_i": _NOTATION["c_i"],
        # (M x q)(q x n)(n x d): W is declared M x d, one row per node
        "W": Symbol("Lam^T G^T X (M x d), the node weights (recovery (4.12), linear kernel)",
                    "$\\Lambda^\\top G^\\top X$ ($M \\times d$), the node weights (recovery (4.12), "
                    "linear kernel)")}
    r = ("columns of the kernel factor L_K (d for the linear kernel)",
         "columns of the kernel factor $L_K$ ($d$ for the linear kernel)")
    if fit_intercept:
        notation["K"] = Symbol("the Gram matrix of [x, s] (linear: X X^T + s^2, else k + s^2), "
                               "K = L_K L_K^T",
                               "the Gram matrix of $[x, s]$ (linear: $X X^\\top + s^2$, else $k + "
                               "s^2$), $K = L_K L_K^\\top$")
        notation["s"] = _INTERCEPT_NOTE
        r = ("columns of the kernel factor L_K (d + 1 for the linear kernel: x and s)",
             "columns of the kernel factor $L_K$ ($d + 1$ for the linear kernel: $x$ and $s$)")
    if bias:
        constraints["bias"] = ("b = s^2 Lam^T G^T 1: (4.12) for the constant feature s (auxiliary)",
                               "b = s^2 \\Lambda^\\top G^\\top \\mathbf{1}", "(4.12)")
    return Formulation(
        objective=(f"sum_p {offset} - 1/2 tr(G^T K G Q)",
                   f"\\sum_p {offset_tex} - \\tfrac12 \\operatorname{{tr}}(G^\\top K G Q)", "(4.15)"),
        constraints=constraints, variables=variables, notation=notation,
        dims={**_DIMS, "r": r})


def class_form_formulation(rescaling: str = "slack", rank_deficient: bool = False,
                           fit_intercept: bool = False) -> Formulation:
    """Thesis (4.48) as :func:`~hiercvx.formulations.hsvm.class_form_from_model` declares it:
    the regularizer through a factor ``R^{1/2}`` of ``R``; ``rank_deficient``: ``Lam`` has a
    left null space ``N``, and ``N U = 0`` keeps ``U = Lam W`` attainable; ``fit_intercept``:
    the class weights are over ``[X, s]`` and the node biases are recovered from them."""
    scores = ("S = [X, s] U^T" if fit_intercept else "S = X U^T")
    scores_tex = ("S = [X, s] U^\\top" if fit_intercept else "S = X U^\\top")
    constraints = {"pairs": _pair_family(rescaling, "(4.48)"),
                   "xi_nonneg": ("xi_i >= 0", "\\xi_i \\ge 0", "(4.48)"),
                   "class_scores": (scores + " (auxiliary: class scores)", scores_tex, "(3.10)")}
    notation = {**_NOTATION,
                "R": Symbol("the regularizer (q x q): tr(U^T R U) = ||W||_F^2 at the least-norm W with "
                            "Lam W = U; the taxonomy's (4.40)-(4.46), or (Lam Lam^T)^+ "
                            "(prob.data['regularizer'] says which)",
                            "the regularizer ($q \\times q$): $\\operatorname{tr}(U^\\top R U) = "
                            "\\|W\\|_F^2$ at the least-norm $W$ with $\\Lambda W = U$; the taxonomy's "
                            "(4.40)--(4.46), or $(\\Lambda \\Lambda^\\top)^+$"),
                "R^{1/2}": Symbol("a factor of R, (R^{1/2})^T R^{1/2} = R: the first term is "
                                  "1/2 tr(U^T R U)",
                                  "a factor of $R$, $(R^{1/2})^\\top R^{1/2} = R$: the first term is "
                                  "$\\tfrac12 \\operatorname{tr}(U^\\top R U)$")}
    dims = dict(_DIMS)
    if rank_deficient:
        constraints["range"] = ("N U = 0: U in the range of Lam, so that U = Lam W (auxiliary)",
                                "N U = 0", "(3.9)")
        notation["N"] = Symbol("a basis of the left null space of Lam (rows), N Lam = 0",
                               "a basis of the left null space of $\\Lambda$ (its rows), "
                               "$N \\Lambda = 0$")
    variables = {"U": Symbol("class weights, one row per class", "class weights $u_y$, one row per "
                             "class", shape=("q", "d")),
                 "xi": _VARIABLES["xi"],
                 "S": Symbol("class scores of the examples", "class scores of the examples",
                             shape=("n", "q"))}
    if fit_intercept:
        constraints["bias"] = ("b = s Lam^+ U_{:,last}: the node biases of the least-norm "
                               "node weights (auxiliary)",
                               "b = s\\, \\Lambda^+ U_{:,d}", "(3.9)")
        variables["intercept"] = _VARIABLES["intercept"]
        notation["s"] = _INTERCEPT_NOTE
        dims["d"] = ("features, and the constant feature s of the bias (the last column)",
                     "features, and the constant feature $s$ of the bias (the last column)")
    return Formulation(
        objective=("1/2 ||R^{1/2} U||_F^2 + C sum_i c_i xi_i",
                   "\\tfrac12 \\|R^{1/2} U\\|_F^2 + C \\sum_i c_i \\xi_i", "(4.48)"),
        constraints=constraints, variables=variables, notation=notation, dims=dims)
