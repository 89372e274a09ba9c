"""Registry entries of Zhou, Xiao, Wu, *Hierarchical Classification via Orthogonal Transfer*
(2011): orthogonal transfer (4) and the four baselines of section 5, each with its certified
CVXPY reference (lifted SDP for (4), QPs for the baselines) and its declared dual (the SDP
dual of the lifting; one QP dual for the baselines), and two fast solvers: ``"dual_cd"``,
dual block-coordinate ascent on the joint dual ``D(alpha, S)``
(:mod:`hiercvx.solvers.orthogonal_dual`, the estimator's default: it reaches tight certified
gaps where RDA's ``O(1/t)`` rate stalls), and ``"rda"``, RDA with optimality bounds (the
paper's Algorithm 1).

All five share one model (:func:`hiercvx.models.orthogonal.prepare`, a
:class:`~hiercvx.models.orthogonal.PairModel`) and one estimator
(:class:`~hiercvx.estimators.OrthogonalTransferSVC`, ``method=...``).  The problems are defined
on trees with single labels; all but FLATMULT take internal labels (partial paths).  The
``flat`` built-in problem is run on the flat tree over its classes (what the estimator builds
for ``hierarchy=None``), where the five problems reduce to Crammer--Singer with C/N.  Every
method also has quick cases with LIBLINEAR's regularized bias (``fit_intercept=True``, one
with ``intercept_scaling != 1``), so the fast solvers are checked against the reference with
an intercept too.
"""

from __future__ import annotations

import numpy as np

from ..formulations import orthogonal as ot
from ..hierarchy import Hierarchy
from ..models import orthogonal as otm
from ..solvers import orthogonal_dual, rda
from ._papers import ZHOU
from ._registry import Case, FastSolver, Method
from .cases import problem

__all__ = ["METHODS", "prepare_orthogonal", "prepare_flatmult", "prepare_hiermult", "prepare_transfer",
           "prepare_treeloss", "quick_cases"]

PAPER = ZHOU.citation

# ---------------------------------------------------------------------- prepare, one per method
# ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's regularized bias (the problem on
# ``[X, s]``; solutions carry ``intercept`` per node), see ``otm.prepare``
def prepare_orthogonal(X, Y, H, *, K=None, alpha: float = 1.0, fit_intercept: bool = False,
                       intercept_scaling: float = 1.0, check_input: bool = True):
    """The model of orthogonal transfer (4): ``otm.prepare(X, Y, H, "orthogonal", K=K, alpha=alpha)``."""
    return otm.prepare(X, Y, H, "orthogonal", K=K, alpha=alpha, fit_intercept=fit_intercept,
                       intercept_scaling=intercept_scaling, check_input=check_input)


def prepare_flatmult(X, Y, H, *, K=None, fit_intercept: bool = False, intercept_scaling: float = 1.0,
                     check_input: bool = True):
    """The model of FLATMULT (12) over the leaves (``K`` must stay None)."""
    return otm.prepare(X, Y, H, "flatmult", K=K, fit_intercept=fit_intercept,
                       intercept_scaling=intercept_scaling, check_input=check_input)


def prepare_hiermult(X, Y, H, *, K=None, fit_intercept: bool = False, intercept_scaling: float = 1.0,
                     check_input: bool = True):
    """The model of HIERMULT ((12) at every internal node; ``K`` must stay None)."""
    return otm.prepare(X, Y, H, "hiermult", K=K, fit_intercept=fit_intercept,
                       intercept_scaling=intercept_scaling, check_input=check_input)


def prepare_transfer(X, Y, H, *, K=None, fit_intercept: bool = False, intercept_scaling: float = 1.0,
                     check_input: bool = True):
    """The model of TRANSFER (section 5; ``K`` must stay None)."""
    return otm.prepare(X, Y, H, "transfer", K=K, fit_intercept=fit_intercept,
                       intercept_scaling=intercept_scaling, check_input=check_input)


def prepare_treeloss(X, Y, H, *, classes: str = "nodes", K=None, fit_intercept: bool = False,
                     intercept_scaling: float = 1.0, check_input: bool = True):
    """The model of TREELOSS (section 5) over ``classes`` (``"nodes"`` or ``"leaves"``)."""
    return otm.prepare(X, Y, H, "treeloss", classes, K=K, fit_intercept=fit_intercept,
                       intercept_scaling=intercept_scaling, check_input=check_input)


# ---------------------------------------------------------------------- built-in problems
def _flat_tree(X, y):
    """The flat problem on a tree: one leaf ``"c<k>"`` below a root per class index ``k``."""
    names = [f"c{k}" for k in sorted(set(int(v) for v in y))]
    H = Hierarchy.from_parents({"root": None, **{v: "root" for v in names}})
    return X, np.array([f"c{int(v)}" for v in y], dtype=object), H


def _problems(structures, quick: bool, params=None, **model_options):
    n, d = (32, 3) if quick else (80, 6)
    cases = []
    for structure in structures:
        X, Y, H = problem(structure, n=n, d=d, seed=0)
        if structure == "flat":
            X, Y, H = _flat_tree(X, Y)
        params = dict(params or {"C": 1.0})
        cases.append(Case(f"{structure} n={n} d={d} C={params['C']:g}", structure, X, Y, H,
                          dict(model_options), params))
    return cases


def _intercept_cases(intercepts, quick: bool):
    """The built-in problems with LIBLINEAR's bias: ``intercepts`` maps a structure to its
    ``intercept_scaling``."""
    cases = []
    for structure, scaling in intercepts.items():
        case = _problems((structure,), quick, fit_intercept=True, intercept_scaling=scaling)[0]
        case.name += f", intercept (scaling {scaling:g})"
        cases.append(case)
    return cases


def quick_cases(structures, intercepts=None, **model_options):
    """``cases(quick)`` over ``structures``: the built-in problems with n = 32, d = 3 (quick)
    or n = 80, d = 6, C = 1 (quick=False adds C = 4 on the first structure), then the
    problems of ``intercepts`` (structure -> ``intercept_scaling``) with ``fit_intercept``.
    C stays small: RDA's certified gap closes slowly at large C."""
    def cases(quick: bool = True):
        out = _problems(structures, quick, **model_options)
        if not quick:
            out += _problems(structures[:1], quick, params={"C": 4.0}, **model_options)
        return out + _intercept_cases(intercepts or {}, quick)

    return cases


def _orthogonal_cases(quick: bool = True):
    """(4)'s problems, and (quick=False) an explicit K and the representer basis (d > n)."""
    cases = quick_cases(("tree", "partial", "sparse", "flat"), _INTERCEPTS["orthogonal"])(quick)
    if not quick:
        X, Y, H = problem("partial", n=24, d=40, seed=1)
        cases.append(Case("partial n=24 d=40 C=1 (representer basis)", "partial", X, Y, H, {}, {"C": 1.0}))
        X, Y, H = problem("tree", n=40, d=4, seed=2)
        cases.append(Case("tree n=40 d=4 C=1, heuristic (6) alpha=0.5", "tree", X, Y, H, {"alpha": 0.5},
                          {"C": 1.0}))
    return cases


#: the problems solved with an intercept, structure -> ``intercept_scaling`` (the bias is
#: regularized, so the scaling changes the optimum: one case per method away from 1)
_INTERCEPTS = {"orthogonal": {"tree": 2.0, "sparse": 1.0}, "flatmult": {"tree": 2.0, "sparse": 1.0},
               "hiermult": {"partial": 2.0}, "transfer": {"partial": 0.5}, "treeloss": {"tree": 2.0}}

#: the equations the registry lists (the model's ``equations`` has them all)
_TABLE = ("primal", "regularizer", "convexity", "K", "fast solver")


def _method(name, title, prepare, reference, dual, structures, cases=None):
    return Method(
        name=name, title=title, paper=PAPER, bibtex=ZHOU.bibtex,
        equations={**{k: v for k, v in otm.EQUATIONS[name].items() if k in _TABLE},
                   "dual": "derived (sheet: Dual)"}, prepare=prepare,
        references={"primal": reference, "dual": dual},
        fast_solvers={"dual_cd": FastSolver("dual_cd", orthogonal_dual.solve,
                                            algorithm="dual block-coordinate ascent on D(alpha, S)",
                                            # for ``hiercvx verify``: a tight certified gap,
                                            # agreement with the reference within 1e-6
                                            options={"tol": 1e-8, "max_iter": 100_000}, rtol=1e-6),
                      "rda": FastSolver("rda", rda.solve,
                                        algorithm="RDA with optimality bounds (Algorithm 1)",
                                        # its certified gap closes like 1/t: a target of 2e-5
                                        # and agreement within 1e-4 (plus the reference's gap)
                                        options={"tol": 2e-5, "max_iter": 200_000}, rtol=1e-4)},
        estimator="hiercvx.estimators.OrthogonalTransferSVC", sheet="formulations/orthogonal.md",
        params={"C": 1.0}, structures=structures,
        cases=cases or quick_cases(structures, _INTERCEPTS[name]))


METHODS = (
    _method("orthogonal", "Hierarchical SVM with orthogonal transfer (lifted SDP)", prepare_orthogonal,
            ot.primal, ot.dual, ("tree", "partial", "sparse", "flat"), _orthogonal_cases),
    _method("flatmult", "FLATMULT: Crammer-Singer over the leaves", prepare_flatmult,
            ot.flatmult, ot.flatmult_dual, ("tree", "sparse", "flat")),
    _method("hiermult", "HIERMULT: Crammer-Singer at every internal node", prepare_hiermult,
            ot.hiermult, ot.hiermult_dual, ("tree", "partial", "sparse", "flat")),
    _method("transfer", "TRANSFER: parent-child difference regularizer", prepare_transfer,
            ot.transfer, ot.transfer_dual, ("tree", "partial", "sparse", "flat")),
    _method("treeloss", "TREELOSS: Cai-Hofmann tree-loss SVM in increments", prepare_treeloss,
            ot.treeloss, ot.treeloss_dual, ("tree", "partial", "sparse", "flat")),
)
