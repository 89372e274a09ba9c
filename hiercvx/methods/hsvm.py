"""Registry entry of the Cai–Hofmann hierarchical multi-label SVM (Lijuan Cai, *Multilabel
Classification over Category Taxonomies*, PhD thesis, Brown University, 2008, chapters 3, 4, 7).

Model :func:`hiercvx.models.hsvm.prepare`; references the primal (4.10)
(:func:`hiercvx.formulations.hsvm.primal`) and the dual (4.15)
(:func:`hiercvx.formulations.hsvm.dual`); fast solvers the variable-selection method of
Algorithm 2 (:func:`hiercvx.solvers.working_set.solve`), a primal-dual interior-point method
(:func:`hiercvx.solvers.interior_point.solve`, for noisy labels and few features) and L-BFGS
on the smoothed primal (:func:`hiercvx.solvers.smoothing.solve`, for thousands of pairs per
example); estimator :class:`~hiercvx.estimators.HierarchicalSVC`.  Classes are leaves: labels that stop at an
internal node go through ``H.with_self_leaves()`` (the ``partial`` problem).  With
``fit_intercept`` (LIBLINEAR's regularized bias, not in the thesis) every builder and fast
solver reports the node biases apart: ``values["intercept"]`` / ``extras["intercept"]``.
"""

from __future__ import annotations

from ..formulations import hsvm
from ..models import hsvm as hsvm_model
from ..solvers import labelset, smoothing, working_set
from ._margin import ENGINE_SOLVERS
from ._papers import CAI
from ._registry import Case, FastSolver, Method
from .cases import problem

__all__ = ["METHODS", "cases"]

PAPER = CAI.cite("chapters 3, 4 and 7")


def cases(quick: bool = True) -> list[Case]:
    """One problem per structure: a tree, a DAG with margin rescaling at C = 0.5, label sets
    of two leaves, partial paths (internal labels as self-leaves) and a CSR ``X``; then the
    label sets and the CSR ``X`` again with LIBLINEAR's regularized node biases
    (``fit_intercept``; the CSR one at ``intercept_scaling=2``)."""
    n, d = (36, 4) if quick else (120, 8)
    out = []
    for structure in ("tree", "dag", "multilabel", "partial", "sparse"):
        X, Y, H = problem(structure, n=n, d=d, seed=0)
        options, params, name = {}, {"C": 1.0}, f"{structure} n={n} d={d}"
        if structure == "dag":
            options, params = {"rescaling": "margin"}, {"C": 0.5}
            name += ", margin rescaling"
        if structure == "partial":
            paths = H.with_self_leaves()
            Y, H = paths.transform(Y), paths.hierarchy
            name += ", self-leaves"
        out.append(Case(name, structure, X, Y, H, options, params))
    for structure, scaling in (("multilabel", 1.0), ("sparse", 2.0)):
        X, Y, H = problem(structure, n=n, d=d, seed=0)
        out.append(Case(f"{structure} n={n} d={d}, intercept (scaling {scaling:g})", structure,
                        X, Y, H, {"fit_intercept": True, "intercept_scaling": scaling},
                        {"C": 1.0}))
    return out


METHODS = (
    Method(
        name="hsvm",
        title="Cai-Hofmann hierarchical multi-label SVM",
        paper=PAPER,
        bibtex=CAI.bibtex,
        equations={"primal": "(4.10)", "dual": "(4.15)", "class form": "(4.48)"},
        prepare=hsvm_model.prepare,
        references={"primal": hsvm.primal, "dual": hsvm.dual},
        fast_solvers={"working_set": FastSolver(
            "working_set", working_set.solve,
            algorithm="variable selection, thesis Algorithm 2",
            options={"tol": 1e-8}, rtol=1e-6),
            "smoothing": FastSolver(
            "smoothing", smoothing.solve,
            algorithm="L-BFGS on the soft-max smoothed primal (continuation in mu), the dual "
                      "finished by Algorithm 2 warm-started at the soft multipliers",
            options={"tol": 1e-8}, rtol=1e-6),
            "labelset": FastSolver(
            "labelset", labelset.solve,
            algorithm="n-slack cutting planes over pairs with the loss-augmented oracle, the "
                      "model restricted to the working pairs solved by Algorithm 2",
            options={"tol": 1e-8}, rtol=1e-6),
            **ENGINE_SOLVERS},
        estimator="hiercvx.estimators.HierarchicalSVC",
        sheet="formulations/hsvm.md",
        params={"C": 1.0},
        structures=("tree", "dag", "multilabel", "partial", "sparse"),
        cases=cases,
    ),
)
