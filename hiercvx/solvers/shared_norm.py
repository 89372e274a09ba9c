"""The alpha step of the shared-norm SVM in closed form (NHSVM paper, Algorithm 1, Appendix D).

For node weights ``U`` ``(M, d)`` (one row per node of ``H.nodes``, root included) the alpha
step is problem (20)::

    min_alpha  sum_n ||U_n||^2 / alpha_n
    s.t.       sum_{n in anc(l)} alpha_n <= 1     for every leaf l,      alpha >= 0.

On a tree it separates along the tree (Appendix D).  With ``B_n = ||U_n||^2`` and the
subtree value ``f(n, l) = N_n / l`` for a budget ``l`` left to the subtree of ``n``:

    N_n = (sqrt(B_n) + sqrt(S_n))^2,   S_n = sum_{c child of n} N_c       (26), bottom-up
    E_n = sqrt(B_n) / (sqrt(B_n) + sqrt(S_n))   (the share of the budget n keeps; 1 at leaves)
    alpha_n = l_n E_n,   l_c = l_n (1 - E_n) for each child c,  l_root = 1,  top-down.

The optimum of (20) is ``N_root``, and every root-leaf path sum of alpha is exactly 1.
Two passes over the depth levels, each vectorized: O(M) work, O(depth) Python steps.

The paper's Algorithm 1 prints this with four slips (the test
``test_paper_algorithm_1_as_printed_is_not_optimal`` runs it literally): line 9 overwrites
``N_n`` before computing ``E_n`` from it, leaves keep ``E_n = 0`` (so every leaf gets
``alpha = 0``), the root's ``alpha_1 = E_1`` is never assigned, and line 16 takes
``alpha_n = sqrt(L_p E_n)`` where Appendix D's recursion gives ``alpha_n = L_p E_n``.
See ``formulations/nhsvm.md``.

:func:`solve_alternating` is the paper's alternating algorithm for the whole shared-norm SVM
(14) (section 7.2): the weight step by the pairwise BCFW of :mod:`hiercvx.solvers.nhsvm_fw`,
the alpha step by :func:`optimal_alpha` (trees) or problem (20) (DAGs), stopped on a
certified gap for (14) itself (:func:`min_path_cover` is the dual's path part).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ..exceptions import HierarchyError, InputError, SolverError
from ..hierarchy import Hierarchy
from ._result import SolverResult

__all__ = ["optimal_alpha", "depth_levels", "solve_alternating", "min_path_cover", "SharedNormResult"]


def depth_levels(H: Hierarchy) -> list[np.ndarray]:
    """Node indices grouped by depth, root level first (parents always lie on earlier levels)."""
    depths = np.asarray(H.depths)
    order = np.argsort(depths, kind="stable")
    cuts = np.flatnonzero(np.diff(depths[order])) + 1
    return np.split(order, cuts)


def optimal_alpha(U, H: Hierarchy, return_value: bool = False):
    """Closed-form solution of the alpha step (20) on a tree (NHSVM Algorithm 1, Appendix D).

    ``U``: node weights ``(M, d)``, rows in ``H.nodes`` order (root included).  Returns
    ``alpha`` ``(M,)``; with ``return_value=True`` also the optimal value
    ``min (20) = N_root``.  Where the optimum is not unique (nodes whose whole subtree has
    ``U = 0``), the budget is passed down to the leaves, so every root-leaf path sums to 1.
    DAGs are refused: use :func:`hiercvx.formulations.nhsvm.alpha_step`.
    """
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if not H.is_tree:
        raise HierarchyError("the closed-form alpha step (Algorithm 1) needs a tree, and this "
                             "hierarchy is a DAG; solve problem (20) with "
                             "hiercvx.formulations.nhsvm.alpha_step(U, H) instead")
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise InputError("U must be a numeric (n_nodes, n_features) array") from None
    M = len(H)
    if U.ndim != 2 or U.shape[0] != M:
        raise InputError(f"U must have one row per node of H.nodes (root included): shape ({M}, d), "
                         f"got {U.shape}; a vector of squared row norms b can be passed as "
                         "np.sqrt(b).reshape(-1, 1)")
    if not np.all(np.isfinite(U)):
        raise InputError("U has non-finite entries (NaN or inf)")
    B = np.einsum("ij,ij->i", U, U)
    parent = H.parent_index
    leaf = H.leaf_mask
    levels = depth_levels(H)

    # bottom-up: N_n and the share E_n of the budget that node n keeps
    N = np.zeros(M)
    E = np.zeros(M)
    child_sum = np.zeros(M)
    for v in reversed(levels):
        root_b, root_s = np.sqrt(B[v]), np.sqrt(child_sum[v])
        total = root_b + root_s
        N[v] = total * total
        positive = total > 0
        # a leaf keeps its whole budget; an all-zero subtree passes it on (any split is optimal)
        E[v] = np.where(positive, root_b / np.where(positive, total, 1.0), leaf[v].astype(float))
        p = parent[v]
        has_parent = p >= 0
        np.add.at(child_sum, p[has_parent], N[v][has_parent])

    # top-down: budget l_n, alpha_n = l_n E_n, children get l_n (1 - E_n)
    alpha = np.zeros(M)
    budget_out = np.zeros(M)
    for k, v in enumerate(levels):
        budget = np.ones(len(v)) if k == 0 else budget_out[parent[v]]
        alpha[v] = budget * E[v]
        budget_out[v] = budget * (1.0 - E[v])
    if return_value:
        return alpha, float(N[H.index(H.root)])
    return alpha


# ============================================================================ alternating solver
@dataclass
class SharedNormResult(SolverResult):
    """:class:`~hiercvx.solvers.SolverResult` of :func:`solve_alternating`.

    ``weights``: ``U`` ``(M, d)`` (rows in ``H.nodes`` order; class scores ``X U^T A^T``);
    ``alpha``: the sharing weights (optimal for ``U``); ``n_inner``: weight-step iterations
    in total; ``history``: per alternation ``objective``, ``lower_bound``, ``gap``,
    ``inner_gap`` (the weight step's), ``time``.
    """

    alpha: np.ndarray | None = None
    n_inner: int = 0


def min_path_cover(b, H: Hierarchy) -> tuple[np.ndarray, float]:
    """``min 1^T mu`` s.t. ``(A^T mu)_n >= b_n`` for every node, ``mu >= 0`` (``A`` the leaf-path
    matrix): the path-multiplier part of the dual of (14) and, by LP duality, ``max b . alpha``
    over ``A alpha <= 1, alpha >= 0``.  Returns ``(mu, value)``.

    On a tree the value is ``m_root`` with ``m_n = max(b_n, sum_{c child of n} m_c)`` (any feasible
    ``mu`` puts at least ``m_n`` under ``n``, and raising one leaf below each deficit reaches it):
    the bottom-up repair of :func:`hiercvx.formulations.nhsvm._cover` from ``mu = 0``.  On a DAG
    it is a linear program (HiGHS through scipy), repaired to exact feasibility.
    """
    from ..formulations.nhsvm import _cover, _leaf_paths

    b = np.maximum(np.asarray(b, dtype=float), 0.0)
    A = _leaf_paths(H)
    q = A.shape[0]
    if H.is_tree:
        mu = _cover(np.zeros(q), b, H, A)
    else:
        from scipy.optimize import linprog

        res = linprog(np.ones(q), A_ub=-A.T.tocsr(), b_ub=-b, bounds=(0, None), method="highs")
        if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
            raise SolverError(f"the path-cover LP failed: {res.message}", status=str(res.status),
                              solver="HIGHS")
        mu = _cover(res.x, b, H, A)
    return mu, float(mu.sum())


def _alpha_step(U, H: Hierarchy):
    """Optimal ``alpha`` for ``U`` and the value ``min (20)``: closed form on trees, the CVXPY
    program (20) on DAGs."""
    if H.is_tree:
        return optimal_alpha(U, H, return_value=True)
    from ..formulations.nhsvm import alpha_step

    sol = alpha_step(U, H).solve()
    return np.asarray(sol.weights, dtype=float), float(sol.objective)


def solve_alternating(X, y, H: Hierarchy, lam: float = 1.0, loss="zero_one", *, tol: float = 1e-6,
                      max_iter: int = 200, inner_max_iter: int = 2000, alpha0=None, cache_size: int = 32,
                      time_limit: float | None = None, random_state=0, verbose: bool = False) -> SharedNormResult:
    """The shared-norm SVM (14) by alternating minimization (NHSVM paper, section 7.2).

    ``min_{U, alpha} lam sum_n ||U_n||^2 / alpha_n + sum_i max_l [S_il - S_{i l_i} + Delta(l, l_i)]``,
    ``A alpha <= 1``, ``alpha >= 0``, ``S = X U^T A^T``.  Alternates

    * the **weight step**: for fixed alpha, ``U_n = sqrt(alpha_n) V_n`` turns (14) into the
      NHSVM-type problem ``lam ||V||^2 + hinge`` with node scores ``sqrt(alpha_n) V_n . x`` and the
      loss ``Delta`` (the paper's change of variables); solved by the pairwise BCFW of
      :mod:`hiercvx.solvers.nhsvm_fw`, **warm-started** from the previous dual point (the dual
      feasible set does not depend on alpha);
    * the **alpha step** (20) for the new ``U``: :func:`optimal_alpha` (trees, O(M)) or the CVXPY
      program :func:`hiercvx.formulations.nhsvm.alpha_step` (DAGs).

    Certificate (jointly, for (14)): the objective at ``(U, alpha*(U))`` is
    ``lam min(20) + hinge(U)``; the lower bound is the dual of (14) (``formulations/nhsvm.md``)
    at the weight step's dual point ``beta``: ``sum beta Delta - min_path_cover(||(G^T X)_n||^2 /
    (4 lam))`` with ``G`` its node coefficients.  Stops when the relative gap is ``<= tol``.  The
    weight step's tolerance shrinks with the joint gap (``max(tol / 4, gap / 10)``).

    ``y``: one leaf per sample; ``loss``: a name of :data:`hiercvx.losses.LOSSES` or a ``(q, q)``
    array over ``H.leaves`` (``[true, predicted]``), as in :func:`~hiercvx.formulations.nhsvm.shared_primal`;
    ``alpha0``: the first alpha (default: the closed form for unit rows on trees, uniform
    ``1 / longest path`` on DAGs); ``max_iter``: alternations.
    """
    import time
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from .._validation import check_features, check_positive
    from ..formulations import nhsvm as _nh
    from . import nhsvm_fw as _fw

    t0 = time.perf_counter()
    H = _nh._check_hierarchy(H)
    X = check_features(X)
    lam = check_positive(lam, "lam")
    tol = float(tol)
    if not (np.isfinite(tol) and tol >= 0):
        raise InputError(f"tol must be a non-negative number, got {tol!r}")
    if int(max_iter) < 1:
        raise InputError(f"max_iter must be a positive integer, got {max_iter!r}")
    n = X.shape[0]
    leaf_pos = _nh._leaf_labels(y, H, n)
    L = _nh._class_loss(H, loss)
    A = _nh._leaf_paths(H)
    M = len(H)
    if alpha0 is None:
        alpha = optimal_alpha(np.ones((M, 1)), H) if H.is_tree else _nh._scaled_alpha(np.ones(M), A)
    else:
        alpha = _nh._node_matrix(np.asarray(alpha0, dtype=float).reshape(-1, 1), H, "alpha0").ravel()
        if np.any(alpha < 0) or float((A @ alpha).max()) > 1.0 + 1e-9:
            raise InputError("alpha0 must be non-negative with every leaf's ancestor sum <= 1 "
                             "(the constraint of (14))")
    T = np.asarray(H.ancestor_matrix[H.leaf_indices[leaf_pos]].toarray(), dtype=bool)
    Xm = sp.csr_matrix(X) if sp.issparse(X) else np.ascontiguousarray(X, dtype=float)
    if sp.issparse(Xm):
        Xm.sort_indices()
    model = _fw._Model(X=Xm, sqrt_alpha=np.sqrt(alpha), T=T, multilabel=False)
    model = _fw._leaf_model(model, leaf_pos, H, offset=L, scale=np.ones_like(L))
    state = None
    history: dict = {}
    best_ub, best_lb = (np.inf, None, None), -np.inf
    inner_tol = max(tol, 1e-3)
    n_inner = 0
    converged = False
    from tqdm.auto import tqdm

    bar = tqdm(total=max_iter, desc="shared-norm SVM (alternating)", unit="step", disable=not verbose)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            for it in range(1, max_iter + 1):
                model.sqrt_alpha = np.sqrt(np.maximum(alpha, 0.0))
                res = _fw._pairwise(model, lam, inner_tol, inner_max_iter, cache_size, 50, state, None,
                                    random_state, False, quiet=True)
                state, n_inner = res.state, n_inner + res.n_iter
                U = model.sqrt_alpha[:, None] * res.weights
                new_alpha, value = _alpha_step(U, H)
                ub = lam * value + float(res.slacks.sum())
                Vj = np.asarray(model.X.T @ state.G).T                    # (G^T X), (M, d)
                need = np.einsum("ij,ij->i", Vj, Vj) / (4.0 * lam)
                lb = float(state.l.sum()) - min_path_cover(need, H)[1]
                if ub < best_ub[0]:
                    best_ub = (ub, U, new_alpha)
                best_lb = max(best_lb, lb)
                gap = (best_ub[0] - best_lb) / max(1.0, abs(best_ub[0]))
                for key, val in (("objective", best_ub[0]), ("lower_bound", best_lb), ("gap", gap),
                                 ("inner_gap", res.gap), ("time", time.perf_counter() - t0)):
                    history.setdefault(key, []).append(val)
                bar.update(1)
                bar.set_postfix(gap=f"{gap:.2e}")
                if gap <= tol:
                    converged = True
                    break
                if time_limit is not None and time.perf_counter() - t0 > time_limit:
                    break
                alpha = new_alpha
                inner_tol = max(0.25 * tol, min(inner_tol, 0.1 * gap))
    finally:
        bar.close()
    if not converged:
        warnings.warn(f"shared-norm alternating solver: relative gap {gap:.2e} over tol={tol:g} after "
                      f"{it} alternations; raise max_iter", ConvergenceWarning, stacklevel=2)
    ub, U, alpha = best_ub
    return SharedNormResult(weights=U, objective=float(ub), lower_bound=float(best_lb), n_iter=it,
                            converged=converged, tol=tol, history=history,
                            solve_time=time.perf_counter() - t0, name="shared-norm SVM (alternating)",
                            alpha=alpha, n_inner=n_inner)
