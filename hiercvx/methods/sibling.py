"""Registry entries of Wang, Shen & Pan: the sibling-margin SVM (HSVM, (2) with the hinge
loss) and HPSI ((2) with the psi-loss, by the DC algorithm (3)).

- ``sibling_svm``: references :func:`hiercvx.formulations.hpsi.primal` (2)/(8) and
  :func:`~hiercvx.formulations.hpsi.dual` (9)-(11); fast solvers
  :func:`hiercvx.solvers.sibling_qp.solve` with ``method="ipm"`` and ``method="alm"``.
- ``hpsi``: (2) with the psi-loss is not convex, so it has no certified optimum.  Its
  "primal" reference is the DC loop of certified CVXPY steps
  (:func:`~hiercvx.formulations.hpsi.dc_reference`), its fast solver the same DC loop on the
  fast QP (:func:`hiercvx.solvers.sibling_qp.solve_dc`).  Agreement means the two routes,
  started at the same point (the HSVM solution), reach the same DC fixed point: the psi costs
  agree within ``rtol`` plus the reference's fixed-point gap (``lower_bound`` of a DC result is
  the certified bound of its last convex majorant, see :mod:`hiercvx.solvers.dc`), and every
  convex step of both routes is certified (the reference raises otherwise; the fast route
  reports ``converged=False``) and checked against the DC algorithm (both raise
  ``SolverError`` on a bound above the cost it bounds or a rising psi cost).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_target
from ..exceptions import LabelError
from ..formulations import hpsi
from ..models.sibling import SiblingModel
from ..models.sibling import PsiModel, prepare_psi
from ..models.sibling import prepare as prepare_on_tree
from ..solvers import sibling_qp
from ..targets import flat_hierarchy
from ._papers import WANG
from ._registry import Case, FastSolver, Method
from .cases import problem

__all__ = ["METHODS", "cases", "prepare", "prepare_hpsi", "primal", "dual", "dc_reference"]

PAPER = WANG.citation


# ---------------------------------------------------------------------- adapters: H=None is flat
def _tree(Y, H):
    """``H``, or for ``H=None`` one level over the labels (the flat multi-class SVM of Liu &
    Shen, the paper's "SVM" / "psi-learning" baselines)."""
    if H is not None:
        return H
    check_target(Y, "Y")  # before sorting the labels: None, sets and 3-D arrays are refused
    labels = np.asarray(Y)
    if labels.ndim != 1:
        raise LabelError(f"Y must hold one label per sample (a 1-D sequence), got shape "
                         f"{labels.shape}")
    items = labels.tolist()
    if any(isinstance(v, (set, frozenset, list, tuple)) for v in items):
        raise LabelError("the sibling-margin SVM is single-label: give one label per sample, "
                         "not label sets")
    return flat_hierarchy(sorted(set(items)))


def prepare(X, Y, H=None, kernel="linear", sigma=None) -> SiblingModel:
    """:func:`hiercvx.models.sibling.prepare`, with ``H=None`` a one-level hierarchy."""
    return prepare_on_tree(X, Y, _tree(Y, H), kernel, sigma)


def prepare_hpsi(X, Y, H=None, kernel="linear", sigma=None) -> PsiModel:
    """``hiercvx.models.sibling.prepare_psi``, with ``H=None`` a one-level hierarchy."""
    return prepare_psi(X, Y, _tree(Y, H), kernel, sigma)


def primal(X, Y, H=None, **options):
    """:func:`hiercvx.formulations.hpsi.primal`, with ``H=None`` a one-level hierarchy."""
    return hpsi.primal(X, Y, _tree(Y, H), **options)


def dual(X, Y, H=None, **options):
    """:func:`hiercvx.formulations.hpsi.dual`, with ``H=None`` a one-level hierarchy."""
    return hpsi.dual(X, Y, _tree(Y, H), **options)


def dc_reference(X, Y, H=None, **options):
    """:func:`hiercvx.formulations.hpsi.dc_reference`, with ``H=None`` a one-level hierarchy."""
    return hpsi.dc_reference(X, Y, _tree(Y, H), **options)


def cases(quick: bool = True) -> list[Case]:
    """Built-in problems: flat classes, a tree (linear and Gaussian kernel), partial paths
    (self leaves) and a sparse ``X``; one label per sample (the method takes neither DAGs nor
    label sets)."""
    n, d = (36, 3) if quick else (120, 5)
    out = []
    for structure in ("flat", "tree", "partial", "sparse"):
        X, Y, H = problem(structure, n=n, d=d, seed=1)
        out.append(Case(structure, structure, X, Y, H, params={"C": 1.0}))
    X, Y, H = problem("tree", n=n, d=d, seed=2)
    out.append(Case("tree, rbf kernel", "tree", X, Y, H,
                    model_options={"kernel": "rbf", "sigma": 1.5}, params={"C": 10.0}))
    return out


METHODS = (
    Method(
        name="sibling_svm",
        title="HSVM: sibling-margin hierarchical SVM",
        paper=PAPER,
        bibtex=WANG.bibtex,
        equations={"primal": "(2), (8)", "dual": "(9)-(11)"},
        prepare=prepare,
        references={"primal": primal, "dual": dual},
        fast_solvers={
            "ipm": FastSolver("ipm", sibling_qp.solve, algorithm="interior point in reduced "
                              "coordinates", options={"tol": 1e-8, "method": "ipm"}, rtol=1e-6),
            "alm": FastSolver("alm", sibling_qp.solve, algorithm="dual block coordinate ascent "
                              "with an augmented Lagrangian",
                              options={"tol": 1e-8, "method": "alm"}, rtol=1e-6),
            "dual_ipm": FastSolver("dual_ipm", sibling_qp.solve, algorithm="dense dual interior "
                                   "point on the live pairs", options={"tol": 1e-8,
                                                                       "method": "dual_ipm"},
                                   rtol=1e-6),
            "working_set": FastSolver("working_set", sibling_qp.solve, algorithm="dense dual "
                                      "interior point on a growing working set of pairs",
                                      options={"tol": 1e-8, "method": "working_set"}, rtol=1e-6),
        },
        estimator="hiercvx.estimators.sibling.SiblingMarginSVC",
        sheet="formulations/hpsi.md",
        params={"C": 1.0},
        structures=("flat", "tree", "partial", "sparse"),
        cases=cases,
    ),
    Method(
        name="hpsi",
        title="HPSI: hierarchical psi-learning by DC programming",
        paper=PAPER,
        bibtex=WANG.bibtex,
        equations={"primal": "(2) with psi, by (3)"},
        prepare=prepare_hpsi,
        references={"primal": dc_reference},
        instead={"dual": "(2) with the psi-loss is not convex, so it has no dual; the dual of each "
                         "convex DC step (8) is the sibling-margin SVM's dual (9)-(11) with "
                         "pair_weights = the step's linearization: hiercvx show sibling_svm --dual"},
        fast_solvers={
            "solve_dc": FastSolver("solve_dc", sibling_qp.solve_dc, algorithm="DC loop (3), fast "
                                   "QP steps", options={"tol": 1e-8, "gap_tol": 1e-8}, rtol=1e-6),
            "solve_dc_dual_ipm": FastSolver("solve_dc_dual_ipm", sibling_qp.solve_dc,
                                            algorithm="DC loop (3), dense dual interior point "
                                            "steps", options={"tol": 1e-8, "gap_tol": 1e-8,
                                                              "method": "dual_ipm"}, rtol=1e-6),
        },
        estimator="hiercvx.estimators.sibling.HierarchicalPsiClassifier",
        sheet="formulations/hpsi.md",
        params={"C": 1.0},
        structures=("flat", "tree", "partial", "sparse"),
        cases=cases,
    ),
)
