"""Registry entries of Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*
(arXiv:1508.02479, 2016): the normalized hierarchical SVM (10) / (13) and the shared-norm SVM (14).

``nhsvm``: model :func:`hiercvx.models.nhsvm.prepare` (through
:func:`hiercvx.formulations.nhsvm.prepare`, which solves the path-weight program (6)-(8) first); reference
:func:`hiercvx.formulations.nhsvm.primal` (single-label: one QP; multi-label: the certified
cutting-plane loop of ``hiercvx.formulations._nhsvm_cutting_plane``); fast solvers the
pairwise block-coordinate Frank–Wolfe of :mod:`hiercvx.solvers.nhsvm_fw`, its n-slack cutting
planes with an interior-point master, and ``auto`` (the margin engine for single-label (10),
cutting planes or pairwise otherwise); its other methods, ``"bcfw"``, ``"sgd"``,
``"working_set"``, are not registered: plain BCFW does not reach a tight certified gap in
reasonable time, SGD has no certificate and the working-set route is single-label (10) only;
estimator :class:`~hiercvx.estimators.NormalizedHierarchicalSVC`.

``shared_norm``: model :func:`hiercvx.models.nhsvm.prepare_shared`; reference
:func:`hiercvx.formulations.nhsvm.shared_primal`; fast solver the alternating algorithm of
:func:`hiercvx.solvers.shared_norm.solve`; estimator :class:`~hiercvx.estimators.SharedNormSVC`.

NHSVM labels are leaves (or sets of leaves); a partial path goes through
``H.with_self_leaves()`` first, which the ``partial`` problems here do not (not registered).
"""

from __future__ import annotations

from ..formulations import nhsvm
from ..models import nhsvm as nhsvm_model
from ..solvers import nhsvm_fw, shared_norm
from ._papers import CHOI
from ._registry import Case, FastSolver, Method
from .cases import problem

__all__ = ["METHODS", "nhsvm_cases", "shared_norm_cases"]

PAPER = CHOI.citation


def nhsvm_cases(quick: bool = True) -> list[Case]:
    """A tree (eq. (10), and the variant (13)), a CSR ``X``, label sets of two leaves (cutting
    planes, tree DP), a DAG with single and multi-label samples (cutting planes, the DAG
    program (19), path weights from (8)) and a tree with LIBLINEAR's bias (``fit_intercept``,
    ``intercept_scaling = 2``)."""
    n, d = (36, 4) if quick else (120, 8)
    out = []
    for structure in ("tree", "sparse", "multilabel", "dag"):
        X, Y, H = problem(structure, n=n, d=d, seed=0)
        out.append(Case(f"{structure} n={n} d={d}", structure, X, Y, H, {}, {"lam": 0.1}))
    X, Y, H = problem("tree", n=n, d=d, seed=1)
    out.append(Case(f"tree n={n} d={d}, variant (13)", "tree", X, Y, H, {"variant": "13"},
                    {"lam": 0.1}))
    X, Y, H = problem("tree", n=n, d=d, seed=2)
    out.append(Case(f"tree n={n} d={d}, intercept (scaling 2)", "tree", X, Y, H,
                    {"fit_intercept": True, "intercept_scaling": 2.0}, {"lam": 0.1}))
    return out


def shared_norm_cases(quick: bool = True) -> list[Case]:
    """A tree, a CSR ``X``, a DAG with one leaf per sample (the alpha step (20) is then a
    program) and a CSR ``X`` with LIBLINEAR's bias (``fit_intercept``), ``lam = 1``."""
    n, d = (36, 4) if quick else (120, 8)
    out = []
    for structure in ("tree", "sparse", "dag"):
        X, Y, H = problem(structure, n=n, d=d, seed=0)
        if structure == "dag":  # (14) is multi-class: keep one leaf of each label set
            Y = [min(labels) for labels in Y]
        out.append(Case(f"{structure} n={n} d={d}", structure, X, Y, H, {}, {"lam": 1.0}))
    X, Y, H = problem("sparse", n=n, d=d, seed=1)
    out.append(Case(f"sparse n={n} d={d}, intercept", "sparse", X, Y, H, {"fit_intercept": True},
                    {"lam": 1.0}))
    return out


METHODS = (
    Method(
        name="nhsvm",
        title="Normalized hierarchical SVM",
        paper=PAPER,
        bibtex=CHOI.bibtex,
        equations={"attributes": "(5)", "path weights": "(6)-(8)", "margin": "(9)",
                   "primal": "(10)", "variant": "(13)", "inference": "(19)",
                   "dual": "derived (sheet: Dual)"},
        prepare=nhsvm.prepare,
        references={"primal": nhsvm.primal, "dual": nhsvm.dual},
        fast_solvers={
            "pairwise": FastSolver("pairwise", nhsvm_fw.solve,
                                   algorithm="pairwise block-coordinate Frank-Wolfe with vertex caches",
                                   options={"tol": 1e-8, "max_iter": 5000}, rtol=1e-6),
            "cutting_plane": FastSolver("cutting_plane", nhsvm_fw.solve,
                                        algorithm="n-slack cutting planes, master by the interior "
                                                  "point on explicit pair rows",
                                        options={"tol": 1e-9, "max_iter": 500,
                                                 "method": "cutting_plane"}, rtol=1e-6),
            "auto": FastSolver("auto", nhsvm_fw.solve,
                               algorithm="single-label (10): the margin engine on its pair model "
                                         "(interior point when affordable); otherwise cutting "
                                         "planes when their master is affordable, else pairwise",
                               options={"tol": 1e-9, "max_iter": 5000, "method": "auto"},
                               rtol=1e-6),
        },
        estimator="hiercvx.estimators.NormalizedHierarchicalSVC",
        sheet="formulations/nhsvm.md",
        params={"lam": 1.0},
        structures=("tree", "dag", "multilabel", "sparse"),
        cases=nhsvm_cases,
    ),
    Method(
        name="shared_norm",
        title="Shared-norm SVM",
        paper=PAPER,
        bibtex=CHOI.bibtex,
        equations={"primal": "(14)", "alpha step": "(20)", "shared norm": "(16)",
                   "dual": "derived (sheet: Dual)"},
        prepare=nhsvm_model.prepare_shared,
        references={"primal": nhsvm.shared_primal, "dual": nhsvm.shared_dual},
        fast_solvers={
            "alternating": FastSolver("alternating", shared_norm.solve,
                                      algorithm="alternating minimization: pairwise BCFW weight "
                                                "step, closed-form alpha step (20)",
                                      options={"tol": 1e-6, "max_iter": 1000}, rtol=1e-5),
        },
        estimator="hiercvx.estimators.SharedNormSVC",
        sheet="formulations/nhsvm.md",
        params={"lam": 1.0},
        structures=("tree", "dag", "sparse"),
        cases=shared_norm_cases,
    ),
)
