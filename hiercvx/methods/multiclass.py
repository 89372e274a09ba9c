"""Registry entry of the flat Crammer–Singer multi-class SVM (Chung-Chin Lu, *EE6550 Machine
Learning, Lecture 7: Multi-Class Classification*, National Tsing Hua University, 2017; Crammer
& Singer, JMLR 2001; the objective of LIBLINEAR's ``MCSVM_CS``).

Model :func:`hiercvx.models.multiclass.prepare`; references the notes' primal (exactly
LIBLINEAR's, :func:`hiercvx.formulations.multiclass.primal`) and the notes' Lagrangian dual
(:func:`hiercvx.formulations.multiclass.dual`); fast solver the sequential dual method with
shrinking (:func:`hiercvx.solvers.crammer_singer.solve`); estimator
:class:`~hiercvx.estimators.MulticlassSVC`.  The method is flat: its builders take ``H = None``.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive
from ..exceptions import InputError
from ..formulations import multiclass as mc
from ..models import multiclass as mcm
from ..solvers import crammer_singer
from ._margin import ENGINE_SOLVERS
from ._papers import CRAMMER_SINGER, LU
from ._registry import Case, FastSolver, Method
from .cases import problem

__all__ = ["METHODS", "primal_flat", "dual_flat", "cases"]

PAPER = (f"{LU.citation}; {CRAMMER_SINGER.citation}; LIBLINEAR MCSVM_CS (Fan et al., JMLR 9, "
         "2008, appendix)")


def _flat(H):
    if H is not None:
        raise InputError("the Crammer-Singer SVM is flat: its builders take H=None")


def primal_flat(X, Y, H=None, **options):
    """The registry's ``(X, Y, H, **params, **model_options)`` signature of
    :func:`hiercvx.formulations.multiclass.primal` (``H`` must be None)."""
    _flat(H)
    return mc.primal(X, Y, **options)


def dual_flat(X, Y, H=None, *, fit_intercept=False, intercept_scaling=1.0, **options):
    """The registry's signature of :func:`hiercvx.formulations.multiclass.dual` (``H`` None).
    With ``fit_intercept`` (LIBLINEAR's regularized bias) the primal is the notes' primal on
    ``[X, intercept_scaling]``, so its dual is the notes' dual on those augmented features."""
    _flat(H)
    if fit_intercept:
        X = mcm.augment(X, check_positive(intercept_scaling, "intercept_scaling"))
    return mc.dual(X, Y, **options)


def cases(quick: bool = True) -> list[Case]:
    """Flat Gaussian clusters (plain, and with sample and balanced class weights) and the
    leaves of the tree problem with a CSR ``X`` of density about 0.4; both also with
    LIBLINEAR's bias feature (``fit_intercept``)."""
    n, d = (36, 4) if quick else (150, 8)
    X, y, _ = problem("flat", n=n, d=d, seed=0)
    weights = np.random.default_rng(1).uniform(0.2, 2.0, n)
    Xs, ys, _ = problem("sparse", n=n, d=d, seed=0)
    return [Case(f"flat n={n} d={d}", "flat", X, y, None, {}, {"C": 1.0}),
            Case(f"flat n={n} d={d}, sample and class weights", "flat", X, y, None,
                 {"sample_weight": weights, "class_weight": "balanced"}, {"C": 0.5}),
            Case(f"sparse n={n} d={d}", "sparse", Xs, np.asarray(ys), None, {}, {"C": 1.0}),
            Case(f"flat n={n} d={d}, intercept (LinearSVC's defaults, scaling 2)", "flat", X, y,
                 None, {"fit_intercept": True, "intercept_scaling": 2.0}, {"C": 1.0}),
            Case(f"sparse n={n} d={d}, intercept", "sparse", Xs, np.asarray(ys), None,
                 {"fit_intercept": True}, {"C": 1.0})]


METHODS = (
    Method(
        name="multiclass",
        title="Crammer-Singer multi-class SVM (flat)",
        paper=PAPER,
        bibtex=f"{LU.bibtex}\n\n{CRAMMER_SINGER.bibtex}",
        equations={"primal": "notes: primal (= LIBLINEAR MCSVM_CS)", "dual": "notes: Lagrangian dual"},
        prepare=mcm.prepare,
        references={"primal": primal_flat, "dual": dual_flat},
        fast_solvers={"crammer_singer": FastSolver(
            "crammer_singer", crammer_singer.solve,
            algorithm="sequential dual block coordinate ascent with shrinking (Keerthi et al.)",
            options={"tol": 1e-8}, rtol=1e-6),
            **ENGINE_SOLVERS},
        estimator="hiercvx.estimators.MulticlassSVC",
        sheet="formulations/multiclass.md",
        params={"C": 1.0},
        structures=("flat", "sparse"),
        cases=cases,
    ),
)
