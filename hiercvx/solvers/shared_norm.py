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
"""

from __future__ import annotations

import numpy as np

from ..exceptions import HierarchyError, InputError
from ..hierarchy import Hierarchy

__all__ = ["optimal_alpha", "depth_levels"]


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
