"""The label-set oracle: the best label set of ``Y_m`` for many score vectors on one hierarchy.

Solves ``argmax_{y in Y_m} sum_{n in y} s_n``, the loss-augmented argmax (18) of Choi, Sasaki
and Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479, 2016, once a decomposable loss is
folded into the scores, i.e. the integer program (19), by one of four methods:

- ``"dp"``: the tree dynamic program (:mod:`.tree_dp`), compiled, O(M) per sample;
- ``"ilp"``: program (19) (:mod:`.programs`) behind the bound certificate of :mod:`.bounds`;
- ``"lp"``: its LP relaxation; the samples whose LP optimum is fractional go the way of
  ``"ilp"`` (root split, bounds, branching, then (19));
- ``"enumerate"``: brute force over ``Y_m`` (:func:`~.labelsets.enumerate_label_sets`).

``"auto"`` picks by :func:`~.labelsets.auto_method`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from ..exceptions import HierarchyError, InputError, ProblemTooLargeError, SolverError
from ..hierarchy import Hierarchy
from ._checks import check_hierarchy, check_scores
from .bounds import DagBounds
from .closure import ClosureCut
from .components import RootSplit, root_components
from .labelsets import auto_method, enumerate_label_sets, is_valid_label_set, label_set_scores
from .losses import loss_augmented_scores
from .options import METHODS, SOLVERS, Options, resolve
from .programs import BACKENDS
from .tree_dp import TreeDP

logger = logging.getLogger(__name__)

__all__ = ["InferenceInfo", "LabelSetOracle", "best_label_set"]


@dataclass(frozen=True)
class InferenceInfo:
    """What an inference call did.  Arrays run over samples (length 1 for a 1-D input).

    ``objective``: value of each returned set, recomputed in numpy: ``sum_{n in y} s_n``,
    plus ``Delta(y, t)`` when a loss was given.  ``relaxation_objective``: the LP optimum
    (an upper bound on ``objective``; method ``"lp"`` only, else ``None``).  ``fractional``:
    the LP optimum was not integral; ``fell_back``: (19) was solved instead, the way of method
    ``"ilp"``; ``n_fractional``: how many samples fell back.  ``n_bounded`` (method ``"ilp"``):
    how many samples the bound certificate answered without the solver (see
    :class:`LabelSetOracle`).
    ``n_closure`` (methods ``"ilp"``, ``"lp"``): how many samples the closure relaxation
    answered exactly (a minimum cut, :mod:`hiercvx.inference.closure`), before any bound or
    program; ``n_branched`` (method ``"ilp"``): how many of the others branch and bound on that
    relaxation proved (:meth:`~hiercvx.inference.closure.ClosureCut.branch`).  When ``"ilp"``
    splits at the root (:mod:`hiercvx.inference.components`), these three are its components'
    counts summed: a sample counts once per component that the stage answered (a tree
    component is solved by the tree DP and counts in none).
    """

    method: str
    solver: str | None
    objective: np.ndarray
    relaxation_objective: np.ndarray | None
    fractional: np.ndarray
    fell_back: np.ndarray
    n_fractional: int
    solve_time: float
    n_bounded: int = 0  # samples answered by the bound certificate, without the solver
    n_closure: int = 0  # samples answered by the closure relaxation (a minimum cut)
    n_branched: int = 0  # samples answered by branch and bound on the closure relaxation



class LabelSetOracle:
    """Reusable argmax over ``Y_m`` for one hierarchy: build once, solve many score vectors.

    ``method``: ``"auto"`` (:func:`~hiercvx.inference.labelsets.auto_method`), ``"dp"``, ``"ilp"``,
    ``"lp"`` or ``"enumerate"``.  ``solver``: ``"highs"`` (default) or ``"gurobi"`` for
    ``"ilp"``/``"lp"``.  The tree levels, the enumerated sets and the solver models are built on
    first use and kept; for the solvers only the objective changes from one sample to the next (the
    LP re-solve warm-starts from the previous basis).

    Methods ``"ilp"`` and ``"lp"`` first solve the closure relaxation of (19) by a minimum cut
    (:class:`~hiercvx.inference.closure.ClosureCut`, ``options.closure_cut``): a sample whose
    largest-score closed set is a label set of ``Y_m`` has its optimum
    (``InferenceInfo.n_closure``); only the others go on.  Method ``"lp"`` solves the LP
    relaxation for them, and the samples whose LP optimum is fractional the way of method
    ``"ilp"`` (an ``"ilp"`` oracle with the same solver, ``presolve`` and options, built once).
    Both take the root's score, which every label set has, out of the scores they solve on, so
    that tolerances and rounding see only the scores that tell sets apart.

    ``presolve`` (method ``"ilp"``): before the integer program, every sample gets a label
    set and per-node upper bounds in O(nodes + ancestor entries) (plus a few subgradient steps
    of a tree relaxation), batched over the samples (:mod:`hiercvx.inference.bounds`).  A sample whose
    set reaches the bound is answered without a solver (``InferenceInfo.n_bounded``); the
    others whose closed set misses a label set at few nodes get best-first branch and bound on
    the closure relaxation within ``options.closure_branch_cuts`` minimum cuts
    (``InferenceInfo.n_branched``); the rest get the LP relaxation (an integral LP optimum is
    optimal for (19)), and where it is
    fractional, (19) restricted to the nodes whose bound reaches the set's value (the rest are
    in no optimal set; the LP too is built on them when they are under
    ``options.restrict_below`` of the graph).  Exact either way; ``presolve=False`` solves (19)
    on the whole hierarchy for every sample.

    ``options``: an :class:`~hiercvx.inference.Options`; ``max_nodes`` and ``integrality_tol``,
    when given, override its ``enumerate_max_nodes`` and ``integrality_tol``.

    ``param``: what the caller's users call ``method``, as the errors name it (an estimator
    passes ``"inference"``); only under the name ``"method"`` do they suggest ``max_nodes``,
    which only this class and :func:`best_label_set` take.
    """

    def __init__(self, H: Hierarchy, method: str = "auto", *, solver: str | None = None,
                 max_nodes: int | None = None, integrality_tol: float | None = None,
                 presolve: bool = True, options: Options | None = None, param: str = "method"):
        self.H = check_hierarchy(H)
        self.options = resolve(options, enumerate_max_nodes=max_nodes,
                               integrality_tol=integrality_tol)
        max_nodes = self.options.enumerate_max_nodes
        self.presolve = bool(presolve)
        if method not in METHODS:
            what = "inference method" if param == "method" else param
            raise InputError(f"unknown {what} {method!r}; choose one of {METHODS}")
        if method == "auto":
            method = auto_method(H, options=self.options)
        _check_fits(H, method, max_nodes, param)
        if solver is not None:
            if method not in ("ilp", "lp"):
                raise InputError(f"solver={solver!r} applies to methods 'ilp' and 'lp' only; "
                                 f"method {method!r} uses no solver, so drop the solver argument")
            if str(solver).lower() not in SOLVERS:
                raise InputError(f"unknown inference solver {solver!r}; choose one of {SOLVERS}")
            solver = str(solver).lower()
        elif method in ("ilp", "lp"):
            solver = "highs"
        self.method = method
        self.solver = solver
        self.max_nodes = max_nodes
        self.integrality_tol = self.options.integrality_tol
        if method == "enumerate":  # refuse large graphs now, not at the first solve
            self._sets = enumerate_label_sets(H, max_nodes=max_nodes)
        if method == "ilp" and solver == "gurobi":
            self._model(integer=True)  # reports a missing gurobipy / licence right away
        if method == "lp" and solver == "gurobi":
            self._model(integer=False)

    # lazily built pieces; dropped when pickling (solver handles are not picklable)
    def __getstate__(self):
        state = self.__dict__.copy()
        for key in ("_ilp", "_lp", "_dp", "_bounds", "_cut", "_split", "_integer"):
            state.pop(key, None)
        return state

    def _model(self, integer: bool):
        key = "_ilp" if integer else "_lp"
        if key not in self.__dict__:
            setattr(self, key, BACKENDS[self.solver](self.H, integer=integer,
                                                     options=self.options))
        return self.__dict__[key]

    def __repr__(self):
        solver = f", solver={self.solver!r}" if self.solver else ""
        return f"LabelSetOracle({self.H!r}, method={self.method!r}{solver})"

    def solve(self, scores, *, loss=None, true_indicator=None, return_info: bool = False,
              verbose: bool | None = None):
        """Best label set(s) for ``scores`` (``(n_nodes,)`` or ``(n_samples, n_nodes)``).

        Returns a bool indicator over ``H.nodes`` of the same shape; with ``return_info=True``
        also an :class:`InferenceInfo`.  ``loss`` + ``true_indicator``: loss-augmented
        inference ``argmax_y sum_{n in y} s_n + Delta(y, t)`` (see
        :func:`~hiercvx.inference.losses.loss_augmented_scores`).  ``verbose``: a progress bar over
        samples for the solver methods (``None``: only from ``options.progress_from`` samples).
        """
        H = self.H
        S, single = check_scores(scores, H)
        constant = np.zeros(S.shape[0])
        if (loss is None) != (true_indicator is None):
            raise InputError("loss-augmented inference needs both loss= and true_indicator= "
                             "(the true label sets); give both, or neither for plain prediction")
        if loss is not None:
            S, constant = loss_augmented_scores(S, H, true_indicator, loss)
        t0 = time.perf_counter()
        n = S.shape[0]
        relaxation = None
        fractional = np.zeros(n, dtype=bool)
        if self.method == "dp":
            if "_dp" not in self.__dict__:
                self._dp = TreeDP(H)
            Z = self._dp.solve(S)[0]
        elif self.method == "enumerate":
            Z = self._enumerate(S)
        else:
            # the root is in every set: its score, a constant of every set's value, is left
            # out, so that tolerances and rounding see only the scores that tell sets apart
            shifted = S.copy()
            shifted[:, 0] = 0.0
            Z, relaxation, fractional = self._solve_programs(shifted, verbose)
            if relaxation is not None:
                relaxation = relaxation + S[:, 0]
        if self.method in ("ilp", "lp") and n:
            # guards against solver tolerances, never expected (the cut's sets are checked
            # where they are made)
            solved = np.flatnonzero(~self._cut_exact) if self._cut_exact is not None else np.arange(n)
            valid = is_valid_label_set(Z[solved], H)
            if not np.all(valid):
                raise SolverError(f"the {self.method} solution of sample {int(solved[np.argmin(valid)])} "
                                  "is not a valid label set after rounding", solver=self.solver)
        if n and fractional.any():
            logger.info("LP relaxation fractional for %d of %d samples; solved those with the ILP",
                        int(fractional.sum()), n)
        out = Z[0] if single else Z
        if not return_info:
            return out
        objective = label_set_scores(S, Z) + constant if n else np.zeros(0)
        info = InferenceInfo(
            method=self.method, solver=self.solver, objective=objective,
            relaxation_objective=None if relaxation is None else relaxation + constant,
            fractional=fractional, fell_back=fractional.copy(),
            n_fractional=int(fractional.sum()), solve_time=time.perf_counter() - t0,
            n_bounded=int(self.__dict__.get("_n_bounded", 0)) if self.method == "ilp" else 0,
            n_closure=int(self.__dict__.get("_n_closure", 0)) if self.method in ("ilp", "lp") else 0,
            n_branched=int(self.__dict__.get("_n_branched", 0)) if self.method == "ilp" else 0)
        return out, info

    def _enumerate(self, S: np.ndarray) -> np.ndarray:
        sets = self._sets
        values_per_chunk = max(1, self.options.enumerate_chunk_entries // max(1, len(sets)))
        Z = np.empty(S.shape, dtype=bool)
        set_matrix = sets.astype(float).T
        set_matrix[0] = 0.0  # the root is in every set: its score would only add rounding
        for lo in range(0, S.shape[0], values_per_chunk):
            hi = min(S.shape[0], lo + values_per_chunk)
            Z[lo:hi] = sets[np.argmax(S[lo:hi] @ set_matrix, axis=1)]
        return Z

    def _solve_programs(self, S: np.ndarray, verbose):
        n, M = S.shape
        integer = self.method == "ilp"
        Z = np.zeros((n, M), dtype=bool)
        relaxation = None if integer else np.empty(n)
        fractional = np.zeros(n, dtype=bool)
        self._n_bounded = self._n_closure = self._n_branched = 0
        self._cut_exact = None
        if integer and n and self._root_split() is not None:
            # one program per disjoint component under the root, combined exactly
            show = (n >= self.options.progress_from) if verbose is None else bool(verbose)
            Z, self._cut_exact, counts = self._split.solve(S, show=show)
            self._n_closure, self._n_bounded, self._n_branched = counts
            return Z, relaxation, fractional
        model = self._model(integer=integer)
        todo = np.arange(n)
        if self.options.closure_cut and n:
            # the closure relaxation by a minimum cut: exact wherever its set is a label set
            if "_cut" not in self.__dict__:
                self._cut = ClosureCut(self.H)
            Zc, value, exact = self._cut.run(S)
            Z[exact] = Zc[exact]
            if relaxation is not None:  # closure >= LP >= (19), equal here
                relaxation[exact] = value[exact]
            todo = np.flatnonzero(~exact)
            self._n_closure = int(exact.sum())
            self._cut_exact = exact
        if integer and self.presolve:
            if len(todo):
                closed = Zc[todo] if self.options.closure_cut else None
                Z[todo] = self._solve_bounded(S[todo], model, verbose, closed)
            return Z, relaxation, fractional
        show = (len(todo) >= self.options.progress_from) if verbose is None else bool(verbose)
        rows = todo
        if show:
            rows = tqdm(rows, desc=f"inference ({self.method})", unit="sample")
        for i in rows:
            z, value = model.solve(-S[i])
            rounded = z > 0.5
            if not integer:
                relaxation[i] = -value
                fractional[i] = np.max(np.abs(z - rounded)) > self.integrality_tol
            Z[i] = rounded
        if not integer and fractional.any():
            # (19) for the fractional rows by method "ilp"'s route: its root split, bounds and
            # branching, not the integer program on the whole graph
            Z[fractional] = self._integer_oracle().solve(S[fractional], verbose=False)
        return Z, relaxation, fractional

    def _integer_oracle(self) -> "LabelSetOracle":
        """Method ``"ilp"`` on this hierarchy with this oracle's solver and settings (built
        once): method ``"lp"`` solves its fractional rows with it."""
        if "_integer" not in self.__dict__:
            self._integer = LabelSetOracle(self.H, "ilp", solver=self.solver,
                                           presolve=self.presolve, options=self.options)
            if "_lp" in self.__dict__:  # one warm-started LP model for both
                self._integer._lp = self._lp
        return self._integer

    def _root_split(self):
        """The :class:`~hiercvx.inference.components.RootSplit` of this hierarchy (built once),
        or None when it is under ``options.split_root_from`` nodes or its root does not split."""
        if "_split" not in self.__dict__:
            parts = None
            if 0 < self.options.split_root_from <= len(self.H):
                parts = root_components(self.H)
            self._split = None if parts is None else RootSplit(self.H, parts, self._component_oracle)
        return self._split

    def _component_oracle(self, sub: Hierarchy) -> "LabelSetOracle":
        """The oracle of one component of a root split: the tree DP on a tree, else this
        oracle's method, solver and settings."""
        if sub.is_tree:
            return LabelSetOracle(sub, "dp", options=self.options)
        return LabelSetOracle(sub, self.method, solver=self.solver, presolve=self.presolve,
                              options=self.options)

    def _solve_bounded(self, S: np.ndarray, model, verbose, closed=None) -> np.ndarray:
        """Program (19) behind the bound certificate of :class:`DagBounds`: samples whose
        lower bound reaches the upper bound keep their set (no solver call); the others get
        branch and bound on the closure relaxation when their closed sets ``closed`` (from
        the cut) miss a label set at few nodes
        (:meth:`~hiercvx.inference.closure.ClosureCut.branch`), then the LP relaxation (an
        integral LP optimum is optimal for (19)) -- on the nodes that can still be in an
        optimal set when they are few, else on the whole graph, warm-started -- and where it
        is fractional, (19) restricted to those nodes, by branch and bound on the LP
        (:meth:`~hiercvx.inference.programs.HighsModel.branch_subset`) or, past its node
        budget, the integer program."""
        if "_bounds" not in self.__dict__:
            self._bounds = DagBounds(self.H, self.options)
        value, Z, certified, keep, _ = self._bounds.run(S)
        self._n_bounded = int(certified.sum())
        rows = np.flatnonzero(~certified)
        if closed is not None and len(rows) and self.options.closure_branch_cuts:
            # a few dangling nodes: branch and bound on the cut proves them in a few cuts
            Zb, proved = self._cut.branch(S, rows, self.options.closure_branch_cuts,
                                          self.options.bound_rtol, closed=closed[rows],
                                          keep=keep[rows], start=(value[rows], Z[rows]))
            Z[rows[proved]] = Zb[proved]
            self._n_branched = int(proved.sum())
            rows = rows[~proved]
        show = (len(rows) >= self.options.progress_from) if verbose is None else bool(verbose)
        if show:
            rows = tqdm(rows, desc="inference (ilp)", unit="sample")
        relaxation = self._model(integer=False)
        for i in rows:
            # a program over the kept nodes only when they are few: rebuilding it costs a load,
            # the whole-graph LP only a warm-started re-solve
            few = keep[i].sum() <= self.options.restrict_below * len(keep[i])
            z, _ = relaxation.solve_subset(-S[i], keep[i]) if few else relaxation.solve(-S[i])
            rounded = z > 0.5
            if np.max(np.abs(z - rounded)) > self.integrality_tol:
                rounded = self._branch(relaxation, model, S[i], keep[i], Z[i])
            # the bound's set is feasible in both programs: never return less
            if label_set_scores(S[i], rounded)[0] >= value[i]:
                Z[i] = rounded
        return Z


    def _branch(self, relaxation, model, s: np.ndarray, keep: np.ndarray, start: np.ndarray):
        """(19) on the nodes ``keep`` for one score row whose LP is fractional: branch and
        bound on the LP from the bound's set ``start`` (``options.branch_max_nodes`` LPs), else
        the integer program."""
        o = self.options
        if o.branch_max_nodes and hasattr(relaxation, "branch_subset"):
            tol = o.bound_rtol * float(np.abs(s[1:]).sum())  # the root (node 0) is in every set
            z = relaxation.branch_subset(-s, keep, start, o.branch_max_nodes,
                                         self.integrality_tol, tol)
            if z is not None:
                return z
        z, _ = model.solve_subset(-s, keep)
        return z > 0.5


def _check_fits(H: Hierarchy, method: str, max_nodes: int, param: str) -> None:
    """Refuse a method that cannot run on ``H``; the errors call it ``param``."""
    if method == "dp" and not H.is_tree:
        some = next(v for v, ps in zip(H.nodes, H.parent_indices) if len(ps) > 1)
        raise HierarchyError(
            f"{param}='dp' needs a tree, but this hierarchy is a DAG (node {some!r} has "
            f"{len(H.parents(some))} parents); use {param}='ilp' (exact) or 'lp' for DAGs")
    if method == "enumerate" and len(H) > max_nodes:
        exact = "'dp'" if H.is_tree else "'ilp'"
        limit = f"max_nodes={max_nodes}" if param == "method" else f"of {max_nodes} nodes"
        raise ProblemTooLargeError(
            f"{param}='enumerate' lists all 2^{len(H.leaf_indices)} - 1 label sets; the hierarchy "
            f"has {len(H)} nodes, over the limit {limit}. Use {param}={exact} "
            f"(exact, for {'trees' if H.is_tree else 'DAGs'}) or {param}='auto'"
            + (", or raise max_nodes if you really want brute force" if param == "method" else ""))


def best_label_set(scores, H: Hierarchy, method: str = "auto", *, loss=None, true_indicator=None,
                   solver: str | None = None, return_info: bool = False, **options):
    """The label set of ``Y_m`` (NHSVM section 3) with the largest total node score.

    Solves ``argmax_{y in Y_m} sum_{n in y} s_n`` -- eq. (18) with a decomposable loss, i.e.
    the integer program (19) -- by the tree DP (``"dp"``), program (19) (``"ilp"``), its LP
    relaxation with ILP fallback (``"lp"``) or brute force (``"enumerate"``); ``"auto"``
    picks ``"dp"`` on trees, ``"enumerate"`` on DAGs with at most
    ``Options.enumerate_auto_leaves`` leaves and ``"ilp"`` on larger ones
    (:func:`~hiercvx.inference.labelsets.auto_method`).

    ``scores``: ``(n_nodes,)`` -> ``(n_nodes,)`` bool, or ``(n_samples, n_nodes)`` ->
    ``(n_samples, n_nodes)`` bool, columns in ``H.nodes`` order.  ``loss`` and
    ``true_indicator``: loss-augmented inference (see
    :func:`~hiercvx.inference.losses.loss_augmented_scores`).  ``return_info=True`` also returns an
    :class:`InferenceInfo`.  Other keywords go to :class:`LabelSetOracle` (``max_nodes``,
    ``integrality_tol``, ``presolve``, ``options``) or its ``solve`` (``verbose``).  For many calls
    on one hierarchy, build a :class:`LabelSetOracle` once and reuse it.
    """
    verbose = options.pop("verbose", None)
    oracle = LabelSetOracle(H, method, solver=solver, **options)
    return oracle.solve(scores, loss=loss, true_indicator=true_indicator, return_info=return_info,
                        verbose=verbose)

