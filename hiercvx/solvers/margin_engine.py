"""One entry point for the margin family: the solver chosen by the shape of the problem.

Crammer–Singer and the Cai–Hofmann hierarchical SVM are one model
(:mod:`hiercvx.models.margin`) with five fast solvers that win in different regimes:

- :mod:`.interior_point` — 15-30 Newton steps whatever the noise; a step factorizes a dense
  matrix of the primal dimension (classes x features, or classes x samples when the features
  outnumber them), so it is chosen when that step is affordable (:func:`.interior_point.applicable`):
  few features or few samples, up to a few thousand primal variables;
- :mod:`.crammer_singer` — LIBLINEAR-style sequential dual coordinate descent with shrinking,
  for the flat single-label linear problem with many features;
- :mod:`.working_set` — thesis Algorithm 2 for everything else (many classes x features,
  kernels on many samples, label sets);
- :mod:`.labelset` — cutting planes over pairs with the loss-augmented oracle, the working set
  solving the model restricted to the pairs met, for label sets with hundreds of pairs per
  example (before the classes are collapsed: it never lists the pairs it does not need);
- :mod:`.smoothing` — L-BFGS on the soft-max primal, its dual finished by the working set, for
  linear models with thousands of pairs per example (label sets over a large DAG), or hundreds
  per example on millions of pairs in all, where a coordinate pass is long and ``w(alpha)`` a
  poor primal point.

Classes that no example holds and that are interchangeable (a wide hierarchy's unused leaves)
are first collapsed to one class per group (:mod:`hiercvx.models.symmetry`); the solution is
lifted back and certified on the full model, so a 5000-leaf star with one class in use costs
what a two-class problem costs.

A warm start (``alpha0``) is a dual point: only the coordinate methods and the label-set
engine (whose first working set starts from its support) use it, so it selects them.
:func:`choose` says which solver :func:`solve` runs; the estimators call :func:`solve`.

When the interior-point method is chosen but its predicted work (``newton_steps`` steps of
:func:`.interior_point.step_cost`) is large, the coordinate method goes first
(:func:`coordinates_first`), as in ski rental (Karlin, Manasse, Rudolph & Sleator,
"Competitive snoopy caching", Algorithmica 3, 1988): for as long as the interior point is
predicted to take (its dense products run ``pass_work_speedup`` times more multiply-adds per
second than the passes count), unless after ``probe_passes`` passes its support already holds
more than ``degenerate_support`` pairs per primal dimension -- the noisy regime where
coordinate ascent crawls and no exact face step applies.  Well-separated problems converge
within the budget; a noisy one is recognised after the probe.  Settings in :class:`Options`,
the solvers' own among them.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..models.multiclass import MulticlassModel
from ..models.symmetry import CollapsedModel, collapse_interchangeable
from ..result import Solution, reached, relative_gap
from . import crammer_singer, interior_point, labelset, low_rank_kernel, smoothing, working_set

__all__ = ["Options", "SOLVERS", "choose", "coordinates_first", "solve"]

#: The values of ``solver`` in :func:`~hiercvx.solvers.margin_engine.solve`: ``"auto"`` (the
#: choice of :func:`~hiercvx.solvers.margin_engine.choose`) or the name of a solver module of
#: :mod:`hiercvx.solvers`.
SOLVERS = ("auto", "interior_point", "crammer_singer", "working_set", "smoothing", "labelset")


@dataclass(frozen=True)
class Options:
    """The engine's choice and the solvers' settings.  Each default with its reason.

    Attributes
    ----------
    labelset_from_pairs : int
        Pairs per example (on average) from which ``auto`` runs :mod:`.labelset` (cutting
        planes over pairs with the oracle) on a model with label sets: its working sets hold a
        few tens of pairs per example whatever the number of classes, so it wins once the
        examples list hundreds.
    smooth_from_pairs : int
        Pairs per example (on average) from which ``auto`` runs :mod:`.smoothing` rather than
        the working set on a linear hierarchical model: a coordinate pass then visits thousands
        of pairs per example and ``w(alpha)`` is a poor primal point (label sets over a large
        DAG) ...
    smooth_label_sets_from_pairs, smooth_from_total_pairs : int
        ... and from this many per example when there are also that many pairs in all (label
        sets over a few hundred classes on thousands of noisy examples).
    newton_steps : int
        Newton steps the interior point typically takes, for its predicted work (Mehrotra's
        method: 15-30 on problems of every size).
    try_coordinates_above : float
        Predicted interior-point work (multiply-adds) above which the coordinate method goes
        first (below it the interior point takes a second or less).
    probe_passes : int
        Passes of the coordinate method before its support is looked at.
    degenerate_support : float
        Support pairs per primal dimension above which the probe hands over to the interior
        point (a degenerate dual: coordinate ascent crawls).
    pass_work_speedup : float
        The interior point's dense products run about this many more multiply-adds per second
        than the passes count in theirs (BLAS level 3 against scattered updates; the passes'
        bookkeeping goes uncounted).
    interior_point, crammer_singer, working_set, smoothing, labelset : Options
        The solvers' own settings (:class:`.interior_point.Options`,
        :class:`.crammer_singer.Options`, :class:`.working_set.Options`,
        :class:`.smoothing.Options`, :class:`.labelset.Options`).
    low_rank : low_rank_kernel.Options
        When a kernel model is solved as the linear model on a pivoted-Cholesky factor of its
        kernel, and at what residual trace (:mod:`.low_rank_kernel`).
    """

    labelset_from_pairs: int = 200
    smooth_from_pairs: int = 2000
    smooth_label_sets_from_pairs: int = 500
    smooth_from_total_pairs: int = 1_000_000
    newton_steps: int = 25
    try_coordinates_above: float = 2e9
    probe_passes: int = 100
    degenerate_support: float = 3.0
    pass_work_speedup: float = 30.0
    interior_point: interior_point.Options = field(default_factory=interior_point.Options)
    crammer_singer: crammer_singer.Options = field(default_factory=crammer_singer.Options)
    working_set: working_set.Options = field(default_factory=working_set.Options)
    smoothing: smoothing.Options = field(default_factory=smoothing.Options)
    labelset: labelset.Options = field(default_factory=labelset.Options)
    low_rank: low_rank_kernel.Options = field(default_factory=low_rank_kernel.Options)


def choose(model: MarginModel, *, warm: bool = False, options: Options | None = None) -> str:
    """The solver :func:`solve` runs on ``model`` with ``solver="auto"``."""
    options = Options() if options is None else options
    if not warm and interior_point.applicable(model, options.interior_point):
        return "interior_point"
    if isinstance(model, MulticlassModel) and model.node_weights:
        return "crammer_singer"
    data = model.data
    per_example = data.n_pairs / max(data.n_samples, 1)
    label_sets = bool(np.any(np.count_nonzero(data.Y, axis=1) > 1))
    if label_sets and per_example >= options.labelset_from_pairs:
        return "labelset"
    if not warm and model.node_weights and (
            per_example >= options.smooth_from_pairs
            or (per_example >= options.smooth_label_sets_from_pairs
                and data.n_pairs >= options.smooth_from_total_pairs)):
        return "smoothing"
    return "working_set"


def solve(model: MarginModel, C: float = 1.0, *, solver: str = "auto", tol: float = 1e-6,
          max_iter: int | None = None, verbose: bool = False, alpha0=None,
          random_state=0, options: Options | None = None) -> Solution:
    """Solve the margin model (thesis (4.10) / (4.15), Crammer–Singer) to a certified gap.

    ``solver``: one of :data:`~hiercvx.solvers.margin_engine.SOLVERS` (``"auto"``:
    :func:`choose`); ``max_iter``: passes for the coordinate methods, Newton steps for the
    interior-point method (each solver's own default when None; the interior-point method
    takes at most its own default, since it never needs thousands of steps); ``alpha0``: a
    warm start for the coordinate methods; ``options``: :class:`Options`, the engine's and the
    solvers' settings.
    """
    if not isinstance(model, MarginModel):
        raise InputError("model must be a margin model: hiercvx.models.hsvm.prepare(X, Y, H, ...) "
                         f"or hiercvx.models.multiclass.prepare(...), got {type(model).__name__}")
    if solver not in SOLVERS:
        raise InputError(f"solver must be one of {SOLVERS}, got {solver!r}")
    options = Options() if options is None else options
    if low_rank_kernel.applies(model, options.low_rank, functools.partial(
            interior_point.applicable, options=options.interior_point)):
        return low_rank_kernel.solve(model, C, functools.partial(
            solve, C=C, solver=solver, tol=tol, max_iter=max_iter, verbose=verbose,
            alpha0=alpha0, random_state=random_state, options=options),
            options=options.low_rank, verbose=verbose)
    if solver == "labelset" or (solver == "auto" and choose(
            model, warm=alpha0 is not None, options=options) == "labelset"):
        return labelset.solve(model, C, tol=tol, verbose=verbose, random_state=random_state,
                              alpha0=alpha0, options=options.labelset,
                              **({} if max_iter is None else {"max_iter": max_iter}))
    if sp.issparse(alpha0):  # a label-set engine's dual, for a coordinate method: dense
        alpha0 = sp.coo_array(alpha0).toarray()
    if alpha0 is None and not isinstance(model, MulticlassModel):
        collapsed = collapse_interchangeable(model)
        if collapsed is not None:
            return _solve_collapsed(collapsed, C, solver=solver, tol=tol, max_iter=max_iter,
                                    verbose=verbose, random_state=random_state,
                                    options=options)
    name = choose(model, warm=alpha0 is not None, options=options) if solver == "auto" \
        else solver
    kwargs = dict(tol=tol, verbose=verbose, alpha0=alpha0, random_state=random_state)
    if max_iter is not None:
        kwargs["max_iter"] = max_iter
    flat = isinstance(model, MulticlassModel) and model.node_weights
    coordinates = _coordinates("crammer_singer" if flat else "working_set", options)
    if name == "smoothing":
        if kwargs.pop("alpha0") is not None:
            raise InputError("the smoothing solver starts from W = 0 and takes no dual warm "
                             "start; pass alpha0 with solver='auto' or 'working_set'")
        return smoothing.solve(model, C, options=options.smoothing, **kwargs)
    if name == "interior_point":
        ipm_work = options.newton_steps * interior_point.step_cost(
            model, options=options.interior_point)
        if solver == "auto" and ipm_work > options.try_coordinates_above:
            first = coordinates_first(coordinates, model, C, kwargs, ipm_work, options)
            if first is not None:
                return first
        steps = 100 if max_iter is None else min(int(max_iter), 100)
        return interior_point.solve(model, C, tol=tol, max_iter=steps, verbose=verbose,
                                    options=options.interior_point)
    return _coordinates(name, options)(model, C, **kwargs)


def _coordinates(name: str, options: Options):
    """The coordinate solver ``name`` with its settings from ``options``."""
    if name == "crammer_singer":
        return functools.partial(crammer_singer.solve, options=options.crammer_singer)
    return functools.partial(working_set.solve, options=options.working_set)


def coordinates_first(coordinates, model: MarginModel, C: float, kwargs: dict,
                      ipm_work: float, options: Options | None = None) -> Solution | None:
    """The coordinate method's converged solution within the interior point's predicted time
    (module docstring), or None: the caller runs the interior point.

    The method runs with a ``stop_when`` rule: at its first certificate after
    ``probe_passes`` passes it stops if its support holds more than ``degenerate_support``
    pairs per primal dimension, and at any certificate once its passes counted
    ``ipm_work / pass_work_speedup`` multiply-adds.  ``kwargs`` are :func:`solve`'s
    (``max_iter``, if given, caps the passes)."""
    options = Options() if options is None else options
    dim = model.data.n_classes * interior_point.feature_dimension(model,
                                                                  options.interior_point)
    budget = ipm_work / options.pass_work_speedup
    probed = []

    def stop_when(n_iter, work, alpha):
        if n_iter >= options.probe_passes and not probed:
            probed.append(n_iter)
            if np.count_nonzero(alpha > 0) > options.degenerate_support * dim:
                return True
        return work >= budget

    with warnings.catch_warnings():  # stopped short: no news, the interior point follows
        warnings.simplefilter("ignore")
        first = coordinates(model, C, **kwargs, stop_when=stop_when)
    return first if first.converged else None


def _solve_collapsed(collapsed: CollapsedModel, C: float, *, solver: str, tol: float,
                     max_iter, verbose: bool, random_state, options: Options) -> Solution:
    """Solve the collapsed model, spread its ``alpha`` over each group and certify on the
    full model (its own objective at ``W(alpha)`` (4.12) and its dual bound).  With node
    weights the collapsed model's own primal point lives in the same space (only classes
    merged) and is valued on the full model too; the better of the two is returned -- a
    primal solver stopped early (smoothing on GO) has a far better ``W`` than ``W(alpha)`` of
    its unfinished dual.  If the lifted gap misses ``tol`` (the groups were equal only to
    rounding), the full model is solved warm-started from the lifted point."""
    small = solve(collapsed.model, C, solver=solver, tol=tol, max_iter=max_iter,
                  verbose=verbose, random_state=random_state, options=options)
    model, data = collapsed.full, collapsed.full.data
    alpha = _margin.project_dual(collapsed.lift_dual(small.dual), data, C)
    weights = model.weights_from_dual(alpha)
    objective = (_margin.primal_objective(weights, model.X, data, C) if model.node_weights
                 else model.objective(weights, C))
    from_alpha = True
    if model.node_weights:
        own = model.augmented_weights(small.weights, small.extras.get("intercept"))
        own_objective = _margin.primal_objective(own, model.X, data, C)
        if own_objective < objective:
            weights, objective, from_alpha = own, own_objective, False
    lower = model.lower_bound(alpha, C)
    converged = reached(relative_gap(objective, lower), tol)
    if small.converged and not converged:
        return solve(model, C, solver=solver if solver != "interior_point" else "auto", tol=tol,
                     max_iter=max_iter, verbose=verbose, alpha0=alpha, random_state=random_state,
                     options=options)
    extras = {**small.extras, "collapsed_classes": collapsed.n_removed}
    extras.pop("coefficients", None)
    if from_alpha:  # G of the reported weights; the solver's own W has none
        extras["coefficients"] = _margin.coefficients(alpha, data)
    split = getattr(model, "split_weights", None)  # a bias column, if the model has one
    if model.node_weights and split is not None:
        weights, extras["intercept"] = split(weights)
    return dataclasses.replace(
        small, weights=weights, objective=float(objective), lower_bound=float(lower),
        dual=alpha, converged=small.converged and converged,
        status="" if converged else small.status, extras=extras,
        name=f"{small.name} on {collapsed.model.data.n_classes} of {data.n_classes} classes "
             "(interchangeable classes collapsed)")
