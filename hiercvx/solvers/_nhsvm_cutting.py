"""n-slack cutting planes with an exact interior-point master for the NHSVM primal (10) / (13).

Every round runs one batched exact loss-augmented inference at the master's ``W`` (the exact
primal, hence the certificate) and adds each violated sample's most violating vertex (label
set or leaf) to its working set (Joachims, Finley & Yu, "Cutting-plane training of structural
SVMs", Machine Learning 2009).  The master -- the primal restricted to the working sets, rows
``sqrt(alpha) * c_iy`` and offsets ``b_iy`` -- is solved by the interior point on explicit pair
rows (:func:`~hiercvx.solvers.interior_point.solve_pair_rows`, ``C = 1 / (2 lam)``, objective
times ``2 lam``); its multipliers ``beta = 2 lam alpha`` are a feasible point of the full dual
(Choi, Sasaki & Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479, 2016, (10); the dual
in :mod:`hiercvx.solvers.nhsvm_fw`), valued by the model: the certificate.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError
from ..result import Solution, reached, relative_gap
from . import interior_point, interior_point_cg
from ._nhsvm_dual import VertexModel, finish, progress, record
from ._nhsvm_options import Options
from ._nhsvm_pairwise import pairwise

__all__ = ["cutting_plane_applicable", "master_newton", "cutting_plane", "pairwise_then_cutting_planes"]


def cutting_plane_applicable(model: VertexModel, options: Options | None = None) -> bool:
    """Whether the cutting-plane master (an interior point in the ``M d`` node weights) is
    affordable: the dense features within ``interior_point.Options().max_feature_entries``
    and, unless its Newton systems are matrix-free (``master_newton``), ``M d <=
    options.master_max_dimension`` and a Newton step within ``options.master_max_step_cost``."""
    options = Options() if options is None else options
    n, d = model.X.shape
    M = model.n_nodes
    if n * d > interior_point.Options().max_feature_entries:
        return False
    return (master_newton(model, options) == "matrix_free"
            or (M * d <= options.master_max_dimension
                and interior_point.row_step_cost(n, M, d) <= options.master_max_step_cost))


def master_newton(model: VertexModel, options: Options) -> str:
    """``"dense"`` or ``"matrix_free"``: how the master solves its Newton systems
    (``options.master_newton``; ``"auto"``: dense while ``M d <= options.master_max_dimension``)."""
    choice = options.master_newton
    if choice not in ("dense", "matrix_free", "auto"):
        raise InputError(f"master_newton must be 'dense', 'matrix_free' or 'auto', got {choice!r}")
    if choice == "auto":
        dense = model.n_nodes * model.X.shape[1] <= options.master_max_dimension
        choice = "dense" if dense else "matrix_free"
    return choice


class _WorkingSets:
    """Each sample's cuts: coefficients ``c`` over the nodes, offsets ``b`` and the vertices
    seen (a vertex enters a working set once)."""

    def __init__(self, model: VertexModel):
        n = model.n_samples
        self.model = model
        self.rows: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.offsets: list[list[float]] = [[] for _ in range(n)]
        self.seen: list[set] = [set() for _ in range(n)]

    def add(self, i, vertex) -> bool:
        key = vertex.tobytes() if self.model.multilabel else int(vertex)
        if key in self.seen[i] or key == -1:
            return False
        self.seen[i].add(key)
        c, b_i = self.model.vertex_terms(i, vertex)
        self.rows[i].append(c)
        self.offsets[i].append(b_i)
        return True

    def add_support(self, state) -> None:
        """The vertices a pairwise :class:`~hiercvx.solvers._nhsvm_dual.DualState` holds with mass."""
        for i, k in zip(*np.nonzero((state.cid >= 0) & (state.cbeta > 0))):
            vertex = state.pool[state.cid[i, k]]
            self.add(i, vertex.astype(bool) if self.model.multilabel else int(state.cid[i, k]))

    def counts(self) -> np.ndarray:
        return np.array([len(r) for r in self.rows])

    def solve_master(self, F, lam: float, master_tol: float, newton: str = "dense"):
        """The master by the interior point (``newton``: its Newton systems, ``"dense"`` or
        ``"matrix_free"``); ``(W, G, l, cuts, b, sample, master)``: its weights, the dual point
        in node space (``g`` ``(n, M)``, ``l`` ``(n,)``), the stacked cuts and the interior
        point's :class:`~hiercvx.result.Solution`."""
        model = self.model
        n, M = model.n_samples, model.n_nodes
        counts = self.counts()
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        cuts = np.vstack([np.asarray(r) for r in self.rows if r])
        b = np.concatenate([np.asarray(o) for o in self.offsets if o])
        solver = interior_point_cg if newton == "matrix_free" else interior_point
        master = solver.solve_pair_rows(F, cuts * model.sqrt_alpha, ptr, b, np.ones(b.size),
                                        np.full(n, 1.0 / (2.0 * lam)), tol=master_tol,
                                        max_iter=200)
        beta = 2.0 * lam * np.asarray(master.dual)
        sample = np.repeat(np.arange(n), counts)
        G = np.zeros((n, M))
        np.add.at(G, sample, beta[:, None] * cuts)
        l = np.bincount(sample, weights=beta * b, minlength=n)
        return np.asarray(master.weights), G, l, cuts, b, sample, master


def cutting_plane(model: VertexModel, lam, options: Options, time_limit=None, verbose=False,
                  start: Solution | None = None, warn: bool = True) -> Solution:
    """n-slack cutting planes to ``options.tol`` within ``options.max_iter`` rounds (module
    docstring).  The master is solved to a tolerance a tenth of the current gap (at most 1e-3,
    at least a tenth of ``tol``), so early rounds take few Newton steps.

    ``start``: a pairwise Frank-Wolfe result to continue from (``"auto"``): its weights are the
    first round's ``W``, the vertices its caches hold with mass are the first working sets,
    and its primal and dual stay in the certificate.  ``warn``: a ``ConvergenceWarning`` when
    ``tol`` is not reached (the hand-over warns itself, counting the pairwise passes too)."""
    t0 = time.perf_counter()
    tol, max_iter = options.tol, options.max_iter
    X = model.X
    F = np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=float)
    n, M = model.n_samples, model.n_nodes
    sets = _WorkingSets(model)
    W = np.zeros((M, F.shape[1]))
    master_slack = np.zeros(n)
    history: dict = {}
    best = (np.inf, W, None)
    best_D, n_oracle, converged = -np.inf, 0, False
    dual_point = (np.zeros((n, M)), 0.0)  # (g, sum_i l_i) of best_D
    master_tol = 1e-3
    newton = master_newton(model, options)
    _check_dense_master(model, newton)
    if start is not None:
        W = np.asarray(start.weights, dtype=float)
        best_D, n_oracle = float(start.lower_bound), int(start.extras.get("n_oracle", 0))
        dual_point = (np.asarray(start.dual, dtype=float), float(start.extras["loss_term"]))
        sets.add_support(start.extras["state"])
        master_tol = min(1e-3, max(0.1 * tol, 0.1 * start.gap, 1e-12))
    bar = progress(verbose, max_iter, "NHSVM cutting planes")
    try:
        S = None  # node scores at W, when the last round computed them already
        for it in range(max_iter + 1):
            S = model.node_scores(W) if S is None else S
            H, Z = model.most_violating(S)
            n_oracle += n
            P = lam * float(np.sum(W * W)) + float(H.sum())
            if P < best[0]:
                best = (P, W, H)
            gap = relative_gap(best[0], best_D)
            record(history, it, t0, best[0], best_D, n_oracle)
            bar.set_postfix(gap=f"{gap:.2e}", cuts=int(sets.counts().sum()))
            if it:  # pass `it` is done: its line shows the certificate taken after it
                bar.update(1)
            if reached(gap, tol):
                converged = True
                break
            if it == max_iter or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                break
            margin = 1e-9 * max(1.0, best[0]) / n  # a cut found again below the master's slack adds nothing
            added = sum(sets.add(i, Z[i]) for i in np.flatnonzero(H > master_slack + margin))
            if not added:  # nothing new violated: only a more accurate master can close the gap
                if master_tol <= 1e-12:
                    break
                master_tol = max(1e-12, 0.01 * master_tol)
            else:
                master_tol = min(1e-3, max(0.1 * tol, 0.1 * gap, 1e-12))
            if not sets.counts().any():  # nothing was ever violated: W = 0 is optimal, the bound 0
                best_D = max(best_D, 0.0)
                continue
            W, G, l, cuts, b, sample, master = sets.solve_master(F, lam, master_tol, newton)
            _record_master(history, master)
            D = model.source.dual_value(G, l, lam)
            if D > best_D:
                best_D, dual_point = D, (G, float(l.sum()))
            S = model.node_scores(W)  # the master's slack at W; also the next round's scores
            master_slack = np.zeros(n)
            np.maximum.at(master_slack, sample, b - np.einsum("pm,pm->p", cuts, S[sample]))
    finally:
        bar.close()
    P, W, H = best
    return finish("cutting_plane", W, P, best_D, H, it, converged, tol, history, t0, n_oracle,
                  G=dual_point[0], loss_term=dual_point[1], warn=warn)


def _check_dense_master(model: VertexModel, newton: str) -> None:
    """Refuse, before the first round, a dense master larger than the interior point factors."""
    dim, limit = model.n_nodes * model.X.shape[1], interior_point.Options().max_dimension
    if newton == "dense" and dim > limit:
        raise InputError(
            f"method='cutting_plane' solves its master by an interior point whose dense Newton "
            f"systems have n_nodes * columns of X (with the intercept's) = {model.n_nodes} * "
            f"{model.X.shape[1]} = {dim:,} rows here, above the {limit:,} it factors "
            "(interior_point.Options.max_dimension); "
            "use method='pairwise' (what method='auto' runs at this size), or set "
            "master_newton='matrix_free' (conjugate gradients: any size, but slow; "
            "solver_options={'master_newton': 'matrix_free'} on the estimator)")


def _record_master(history, master) -> None:
    """Per round: the master's Newton steps, its time and (matrix-free) conjugate-gradient
    steps over its Newton systems."""
    linear = master.history.get("linear", {}) if isinstance(master.history, dict) else {}
    history.setdefault("master_newton_steps", []).append(int(master.n_iter))
    history.setdefault("master_time", []).append(float(master.solve_time))
    history.setdefault("master_cg_steps", []).append(int(linear.get("cg_steps", 0)))
    history.setdefault("master_systems", []).append(int(linear.get("systems", 0)))
    history.setdefault("master_cuts", []).append(int(np.size(master.dual)))


def pairwise_then_cutting_planes(view: VertexModel, lam, options: Options, state, time_limit,
                                 random_state, verbose) -> Solution:
    """``"auto"`` on label sets and (13): up to ``options.handoff_passes`` pairwise passes
    (enough where the labels carry signal), then cutting planes from the support of its caches
    (where they do not: random labels take pairwise thousands of passes to a 1e-8 gap)."""
    t0 = time.perf_counter()
    first_options = replace(options, max_iter=min(options.max_iter, options.handoff_passes))
    first = pairwise(view, lam, first_options, state, time_limit, random_state, verbose, t0=t0,
                     quiet=True)
    left = options.max_iter - first.n_iter
    if first.converged or left <= 0:  # certified, or the pairwise passes used every pass allowed
        # the pairwise passes' own trend says nothing of the cutting planes that would follow
        first.warn_unless_converged("passes", stacklevel=3, hint=(
            f" (cutting planes take over after {options.handoff_passes} passes)"))
        return first
    res = cutting_plane(view, lam, replace(options, max_iter=left), time_limit, verbose,
                        start=first, warn=False)
    res.n_iter += first.n_iter  # one budget: max_iter counts passes and rounds together
    res.extras["pairwise_passes"] = first.n_iter
    res.solve_time = time.perf_counter() - t0
    res.warn_unless_converged("passes and rounds", stacklevel=3)
    return res
