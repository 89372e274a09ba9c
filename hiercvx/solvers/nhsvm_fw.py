"""Fast NHSVM solvers with a certified duality gap: block-coordinate Frank–Wolfe on the dual.

The problem is the Normalized Hierarchical SVM (10) of Choi, Sasaki & Srebro,
*Normalized Hierarchical SVM* (arXiv:1508.02479, 2016), single-label (leaves, margin (9), or the variant (13)) or
multi-label (label sets of ``Y_m`` with a decomposable loss, section 7.1)::

    P(W) = lam ||W||_F^2 + sum_i H_i(W),
    H_i(W) = max_y  b_iy - sigma_iy (s_i(y_i) - s_i(y)),        s_i(y) = sum_{n in y} sqrt(alpha_n) W_n . x_i

with ``b = Delta``, ``sigma = 1`` for (10) and ``b = 1``, ``sigma = 1 / Delta~`` for (13) (``y != y_i``;
the term ``y = y_i`` is 0).  Writing ``c_iy = sigma_iy (t_i - z_y)`` (``t_i``, ``z_y`` the node
indicators of the true and the candidate set), its dual has one simplex block per sample::

    D(beta) = sum_i l_i - ||V||_F^2 / (4 lam),      beta_i in simplex(Y),
    g_i = sum_y beta_iy c_iy   (M,),    l_i = sum_y beta_iy b_iy,    V = sum_i (sqrt(alpha) * g_i) x_i^T,

and ``W(beta) = V / (2 lam)``; ``P(W(beta)) - D(beta)`` is the duality gap, and the sum of the
per-block gaps ``H_i(W) - (l_i - <W, (sqrt(alpha) * g_i) x_i^T>)`` (Lacoste-Julien et al. 2013).
The state is ``g`` ``(n, M)`` and ``l`` ``(n,)``: the dual point never needs one variable per
label set, so the exponential multi-label space costs nothing but the oracle.

Methods (``solve(model, lam, method=)``, ``model`` from :func:`hiercvx.models.nhsvm.prepare`):

``"pairwise"`` (default)  Block-coordinate *pairwise* Frank–Wolfe over a per-sample cache of
    vertices (label sets): every pass starts with one batched loss-augmented inference at the
    current ``W`` (:class:`~hiercvx.inference.LabelSetOracle` on all samples at once, or the
    argmax over the leaves), which gives the exact primal, hence the certificate, and one new
    vertex per sample; then each sample's block takes exact-line-search pairwise steps
    (mass moved from its worst to its best cached vertex, the true set acting as the slack)
    until its cached block gap is small.  Blocks whose exact gap is 0 at the certificate are
    skipped (exact shrinking: they are optimal for the current ``W``), and several sweeps over
    the caches run between two certificates (more when the oracle is a DAG program).  With a
    cheap oracle each certificate also takes the exact primal at a running average of
    ``W(beta)`` (``Options.primal_average``) and the best primal point is returned.  This is
    the multi-plane BCFW idea (Shah, Kolmogorov & Lampert 2015) with pairwise steps (Osokin et
    al. 2016); the sweep is compiled (numba), each block read on its support (the nodes where a
    cached vertex differs from the true set) and stepped on the Gram matrix of its cached
    directions (the ``DualState``).
``"bcfw"``  Lacoste-Julien et al.'s BCFW exactly: per sample, fresh loss-augmented inference at
    the current ``W``, one Frank–Wolfe step with exact line search.  Single-label sweeps are
    compiled; multi-label sweeps call the oracle once per sample from Python.
``"sgd"``  The paper's optimizer (section 7, Pegasos, Shalev-Shwartz et al. 2007): step
    ``1 / (lam' t)`` with ``lam' = 2 lam / n``, projection on the ball that holds the optimum.
    It has no dual: its ``lower_bound`` is the trivial 0, it runs ``max_iter`` epochs and
    always ends with the one ``ConvergenceWarning`` (uncertified).
``"cutting_plane"``  n-slack cutting planes (Joachims, Finley & Yu 2009) with an exact master:
    every round one batched exact inference at the master's ``W`` (the primal, hence the
    certificate) and one new vertex per violated sample; the master, the problem restricted to
    the vertices found, is solved by the interior point on explicit pair rows
    (:func:`~hiercvx.solvers.interior_point.solve_pair_rows`) in ``M d`` node weights, and its
    multipliers are the dual point (``hiercvx.solvers._nhsvm_cutting``).  Few rounds of a
    few Newton steps each, where the Frank–Wolfe methods need many passes on noisy label sets;
    affordable while ``M d`` is at most ``Options.master_max_dimension``
    (:func:`cutting_plane_applicable`), or at any size with matrix-free Newton systems
    (``Options.master_newton``, :mod:`hiercvx.solvers.interior_point_cg`).
``"working_set"``, ``"interior_point"``  Single-label (10) only: the pair model ``model.margin``
    (``C = 1/(2 lam)``, objective times ``2 lam``) handed to the margin engine
    (:func:`hiercvx.solvers.margin_engine.solve`) with that solver.
``"auto"``  the margin engine's choice for single-label (10); otherwise (multi-label, (13))
    up to ``Options.handoff_passes`` pairwise passes -- enough where the labels carry signal --
    then, if the gap is still above ``tol``, cutting planes started from the support of the
    pairwise caches and its weights, when the master is affordable; else ``"pairwise"`` alone
    (GO-sized DAGs).

Every method's ``objective`` is recomputed exactly (all samples' loss-augmented inference at
the returned ``W``); the dual methods' ``lower_bound`` is ``D`` at a feasible ``beta``.
Settings live in the frozen :class:`Options`.  The module is the entry point; the compiled
sweeps are in ``hiercvx.solvers._nhsvm_kernels``, the dual state in
``_nhsvm_dual``, the methods in ``_nhsvm_pairwise``,
``_nhsvm_cutting`` and ``_nhsvm_baselines``.

Single-label models are first collapsed (:meth:`~hiercvx.models.nhsvm.NHSVMModel.collapsed`:
each group of interchangeable idle leaves becomes one leaf of that multiplicity), solved, and
lifted back: the objective is recomputed and the dual point (node-space ``g``, or the margin
engine's pair multipliers) evaluated on the full model, so a 5000-leaf star whose samples sit
on a few leaves costs what those leaves cost (``extras["n_collapsed"]``: nodes removed).

With ``fit_intercept`` the model's ``X`` carries LIBLINEAR's bias column (``[X, s]``): every
method runs on it unchanged and :func:`split_intercept` reports ``weights`` without that
column and ``extras["intercept"]`` (``b_n = s * W~[n, -1]``).
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.nhsvm import CollapsedLeaves, NHSVMModel, primal_objective
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import margin_engine
from ._nhsvm_baselines import bcfw, sgd
from ._nhsvm_cutting import cutting_plane, cutting_plane_applicable, pairwise_then_cutting_planes
from ._nhsvm_dual import DualState, VertexModel, certify, vertex_model
from ._nhsvm_kernels import add_outer, node_products
from ._nhsvm_options import Options, with_keywords
from ._nhsvm_pairwise import pairwise
from .primitives import blas_threads

__all__ = ["METHODS", "Options", "solve", "DualState", "VertexModel", "vertex_model", "pairwise",
           "cutting_plane", "cutting_plane_applicable",
           "certify", "node_products", "add_outer", "split_intercept"]

METHODS = ("pairwise", "cutting_plane", "bcfw", "sgd", "working_set", "interior_point", "auto")


def solve(model: NHSVMModel, lam: float = 1.0, *, method: str = "pairwise", tol: float | None = None,
          max_iter: int | None = None, verbose: bool = False, cache_size: int | None = None,
          max_steps: int | None = None, inference: str = "auto", state: DualState | None = None,
          time_limit: float | None = None, random_state=0, options: Options | None = None) -> Solution:
    """NHSVM (10) / (13) on a prepared model (:func:`hiercvx.models.nhsvm.prepare`).

    Parameters
    ----------
    model : :class:`~hiercvx.models.nhsvm.NHSVMModel` (single-label (10) or (13), or multi-label (10))
    lam : the regularization weight of (10)
    method : ``"pairwise"`` (default), ``"cutting_plane"``, ``"bcfw"``, ``"sgd"``,
        ``"working_set"``, ``"interior_point"`` or ``"auto"`` (module docstring)
    tol, max_iter, cache_size, max_steps : override the fields of ``options`` of the same name
        (certified relative gap, passes, vertices cached per sample, pairwise steps per visit)
    inference : the multi-label oracle's method (``"auto"``: tree DP; on large DAGs program
        (19) split at the root into its disjoint components, each behind the closure cut of
        :mod:`hiercvx.inference.closure` (exact for most loss-augmented samples), branch and
        bound on that cut and the bounds, with LP and integer programs for what is left)
    state : a :class:`DualState` to warm-start from (``"pairwise"``; e.g. ``result.state``)
    time_limit : seconds; stop (unconverged) after the first certificate past it
    random_state : seed of the visiting order
    options : :class:`Options` (defaults with their reasons there)

    Returns
    -------
    :class:`~hiercvx.result.Solution`: ``weights`` = ``W`` ``(M, d)`` (predict with
    ``model.scores`` and :func:`hiercvx.inference.best_leaf` /
    :func:`~hiercvx.inference.best_label_set`), ``dual`` = ``g`` ``(n, M)``; extras
    ``slacks`` (``H_i(W)``), ``dual_coef`` (``g``; ``None`` for SGD), ``loss_term``
    (``sum_i l_i``), ``n_oracle`` (samples passed to loss-augmented inference), ``method``,
    ``state`` (the :class:`DualState`, for warm starts).
    """
    if not isinstance(model, NHSVMModel):
        raise InputError("model must be an NHSVMModel from hiercvx.models.nhsvm.prepare(X, Y, H, ...), "
                         f"got {type(model).__name__}")
    if method not in METHODS:
        raise InputError(f"unknown NHSVM solver method {method!r}; choose one of {METHODS}")
    lam = check_positive(lam, "lam")
    options = with_keywords(options, tol=tol, max_iter=max_iter, cache_size=cache_size,
                            max_steps=max_steps)
    check_iteration_options(options.tol, options.max_iter, who="nhsvm_fw.solve")
    tol, max_iter = float(options.tol), int(options.max_iter)
    single = not model.multilabel and model.variant == "nhsvm"
    # interchangeable idle leaves solved as one, unless warm-started from a full-model state
    collapse = model.collapsed()
    if collapse is not None and state is not None and state.G.shape[1] != collapse.model.n_nodes:
        collapse = None
    work = model if collapse is None else collapse.model
    if method in ("working_set", "interior_point") or (method == "auto" and single):
        res = _solve_margin(work, lam, tol, max_iter, random_state, verbose, method)
    else:
        view = vertex_model(work, inference)
        if method == "auto":  # multi-label or (13): pairwise, finished by cutting planes
            method = "auto" if cutting_plane_applicable(view, options) else "pairwise"
        with blas_threads(1):
            if method == "auto":
                res = pairwise_then_cutting_planes(view, lam, options, state, time_limit,
                                                   random_state, verbose)
            elif method == "cutting_plane":
                res = cutting_plane(view, lam, options, time_limit, verbose)
            elif method == "pairwise":
                res = pairwise(view, lam, options, state, time_limit, random_state, verbose)
            elif method == "bcfw":
                res = bcfw(view, lam, tol, max_iter, time_limit, random_state, verbose)
            else:
                res = sgd(view, lam, max_iter, time_limit, random_state, verbose)
    if collapse is not None:
        res = _lift(collapse, res, lam, tol)
    return split_intercept(model, res)


def _lift(collapse: CollapsedLeaves, res: Solution, lam: float, tol: float) -> Solution:
    """A solution of the collapsed model as the full model's, certified on the full model:
    the objective recomputed at the lifted ``W`` and the lower bound the full model's dual at
    the lifted dual point (node-space ``g`` of the Frank-Wolfe and cutting-plane methods, or
    the margin engine's pair multipliers ``alpha``, ``beta = 2 lam alpha``; SGD has none)."""
    full, small = collapse.full, collapse.model
    W = collapse.lift_weights(res.weights)
    P, H = primal_objective(W, full, lam, return_slacks=True)
    method = res.extras.get("method")
    if method in ("pairwise", "bcfw", "cutting_plane"):
        D = full.dual_value(collapse.lift_dual(res.dual), np.array([res.extras["loss_term"]]), lam)
    elif method == "sgd":
        D = 0.0
    else:
        md = small.margin
        beta = np.zeros((small.n_samples, len(small.H.leaves)))
        beta[md.pair_i, md.pair_ybar] = 2.0 * lam * np.asarray(res.dual, dtype=float)
        D = full.lower_bound(collapse.lift_masses(beta), lam)
    res.weights, res.objective, res.lower_bound = W, float(P), float(D)
    res.extras["slacks"] = H
    res.extras["n_collapsed"] = collapse.n_removed
    res.converged = bool(res.converged and reached(relative_gap(P, D), tol))
    return res


def split_intercept(model, result: Solution) -> Solution:
    """``result`` with ``weights`` over the features as given and, when the model has
    ``fit_intercept``, ``extras["intercept"]`` (the bias column split off, ``b = s * W~[:, -1]``)."""
    if model.fit_intercept:
        result.weights, result.extras["intercept"] = model.split_weights(result.weights)
    return result


def _solve_margin(model: NHSVMModel, lam, tol, max_iter, random_state, verbose,
                  solver: str) -> Solution:
    """Single-label (10) through its pair model (``C = 1 / (2 lam)``, objective times ``2 lam``)
    and the margin engine (:func:`hiercvx.solvers.margin_engine.solve`: ``solver`` is
    ``"working_set"``, ``"interior_point"`` or ``"auto"``)."""
    if model.multilabel or model.variant != "nhsvm":
        raise InputError(f"method={solver!r} solves single-label NHSVM (10) only (its pairs are "
                         "leaves); use method='pairwise' for multi-label data or variant '13'")
    t0 = time.perf_counter()
    res = margin_engine.solve(_margin.model_from_data(model.X, model.margin), C=1.0 / (2.0 * lam),
                              solver=solver, tol=tol, max_iter=max_iter,
                              random_state=random_state, verbose=verbose)
    W = np.asarray(res.weights, dtype=float)
    P, H = primal_objective(W, model, lam, return_slacks=True)
    D = 2.0 * lam * float(res.lower_bound)
    history = {k: list(v) if isinstance(v, (list, np.ndarray)) else v for k, v in res.history.items()}
    if "objective" in history and "lower_bound" in history:  # margin scale -> (10)'s scale
        history["objective"] = [2.0 * lam * v for v in history["objective"]]
        history["lower_bound"] = [2.0 * lam * v for v in history["lower_bound"]]
        history["gap"] = [relative_gap(a, b) for a, b in zip(history["objective"], history["lower_bound"])]
    return Solution(weights=W, objective=float(P), lower_bound=D, n_iter=res.n_iter,
                    converged=reached(relative_gap(P, D), tol), tol=tol, dual=res.dual, history=history,
                    solve_time=time.perf_counter() - t0, name=f"NHSVM ({res.solver})",
                    solver=f"nhsvm_fw.{res.solver}", extras={"slacks": H, "method": res.solver})
