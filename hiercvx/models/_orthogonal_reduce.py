"""The part of an orthogonal-transfer problem that the data use, solved small and lifted exactly.

Zhou, Xiao, Wu, "Hierarchical Classification via Orthogonal Transfer", ICML 2011: on a wide
or deep tree most weight rows of (4) are on no margin row, and many negatives are
interchangeable (a star's unlabelled leaves).  :func:`reduce_model` drops the first and
merges the second; :class:`ReducedModel` lifts weights, multipliers and the box matrix back,
so the certified bounds of the reduced problem are those of the full one (the proof is the
docstring of :func:`reduce_model`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ._orthogonal_pairs import pair_data

__all__ = ["ReducedModel", "reduce_model"]


@dataclass
class ReducedModel:
    """A :class:`~hiercvx.models.orthogonal.PairModel` on the weight rows the data use, with each group of interchangeable
    negatives merged into one row (:func:`reduce_model`), and the maps back to the full model.

    ``row_of[r]``: the reduced row of full weight row ``r`` (a position in ``full.var_nodes``),
    ``-1`` for a row that is zero at the optimum; ``size[t]``: the number of full rows reduced
    row ``t`` stands for (its group, 1 for a row of its own); ``pair_of[p]``: the reduced pair of
    full pair ``p``, ``pair_share[p]`` the share of its multiplier ``p`` gets (``1 / size`` of
    its negative's group)."""

    full: object   # the PairModel
    model: object  # the reduced PairModel
    row_of: np.ndarray
    size: np.ndarray
    pair_of: np.ndarray
    pair_share: np.ndarray

    def lift_weights(self, V) -> np.ndarray:
        """Full weight rows ``(m, d)`` from the reduced rows ``V`` ``(m', d)``: every member of a
        group gets its row, the dropped rows zero."""
        V = np.asarray(V, dtype=float)
        out = np.zeros((len(self.row_of), V.shape[1]))
        has = self.row_of >= 0
        out[has] = V[self.row_of[has]]
        return out

    def lift_dual(self, alpha) -> np.ndarray:
        """The full model's multipliers: reduced pair ``(s, i, r)``'s spread evenly over the
        pairs ``(s, i, j)`` of the members ``j`` of ``r``'s group."""
        return np.asarray(alpha, dtype=float)[self.pair_of] * self.pair_share

    def lift_box(self, S_reduced, K) -> sp.csr_matrix:
        """(4) only: the matrix of K's box over ``full.var_nodes`` that certifies the lifted
        multipliers (:func:`reduce_model`): ``S_ii = K_ii``; inside a group ``S_ab = K_ab``;
        between reduced rows ``t != u``, ``S_ab = S'_tu / (size_t size_u)``; 0 next to a
        dropped row."""
        S_reduced = sp.coo_matrix(S_reduced)
        m = len(self.row_of)
        has = np.flatnonzero(self.row_of >= 0)
        order = has[np.argsort(self.row_of[has], kind="stable")]
        bounds = np.r_[0, np.cumsum(np.bincount(self.row_of[has], minlength=len(self.size)))]
        members = [order[bounds[t]:bounds[t + 1]] for t in range(len(self.size))]
        K = sp.csr_matrix(K)
        rows, cols, vals = [np.arange(m)], [np.arange(m)], [K.diagonal()]
        for t, u, v in zip(S_reduced.row.tolist(), S_reduced.col.tolist(), S_reduced.data.tolist()):
            if t == u or v == 0.0:
                continue
            a, b = np.meshgrid(members[t], members[u], indexing="ij")
            rows.append(a.ravel())
            cols.append(b.ravel())
            vals.append(np.full(a.size, v / (len(members[t]) * len(members[u]))))
        for g in members:
            if len(g) > 1:
                inner = sp.coo_matrix(K[g][:, g])
                off = inner.row != inner.col
                rows.append(g[inner.row[off]])
                cols.append(g[inner.col[off]])
                vals.append(inner.data[off])
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(m, m))


def _mix(keys: np.ndarray) -> np.ndarray:
    """A 64-bit mix of integer keys (splitmix64's finalizer), for grouping by hashed sets."""
    z = keys.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _same_rows(B: sp.csr_matrix, scale: float, rtol: float) -> bool:
    """Whether every row of ``B`` equals its first (within ``rtol * scale``)."""
    if B.shape[0] < 2 or B.nnz == 0:
        return True
    diff = B - sp.csr_matrix(np.ones((B.shape[0], 1))) @ B[0]
    return diff.nnz == 0 or float(np.abs(diff.data).max()) <= rtol * scale


def _interchangeable(model, Rs: sp.csr_matrix, keep: np.ndarray, rtol: float) -> list[np.ndarray]:
    """The groups (positions in ``var_nodes``, at least two each) of interchangeable negatives
    among the kept rows: classes = nodes (``Lam = I``), never a positive, the same pairs
    ``(slack, positive, Delta)``, the same diagonal of ``R``, the same ``R`` entries to every
    row outside the group and one common ``R`` entry inside it (equalities within ``rtol``
    times the largest entry of ``R``)."""
    d = model.data
    var = np.asarray(model.var_nodes)
    M = len(model.H)
    row_at = np.full(M, -1, dtype=np.int64)
    row_at[var] = np.arange(len(var))
    positive = np.zeros(len(var), dtype=bool)
    node = np.asarray(model.classes)  # classes are nodes: class c is node classes[c]
    pos_rows = row_at[node[d.pair_y]]
    positive[pos_rows[pos_rows >= 0]] = True
    cand = np.flatnonzero(keep & ~positive)
    if cand.size < 2:
        return []
    scale = max(1.0, float(np.abs(Rs.data).max(initial=0.0)))
    # hashed signature: the pairs (slack, positive, Delta) the row is the negative of ...
    neg_row = row_at[node[d.pair_ybar]]
    key = (d.pair_i.astype(np.int64) * M + d.pair_y) * 1_000_003 + np.round(d.pair_loss * 1e6).astype(np.int64)
    h = np.zeros(len(var), dtype=np.uint64)
    np.add.at(h, neg_row, _mix(key))
    count = np.bincount(neg_row, minlength=len(var))
    # ... and R: its diagonal, a random projection of its entries outside the candidates, the
    # sum and number of its off-diagonal entries among them
    rng = np.random.default_rng(0)
    outside = np.ones(len(var))
    outside[cand] = 0.0
    z = rng.standard_normal(len(var)) * outside
    Rc = Rs[cand]
    diag = Rs.diagonal()[cand]
    proj = Rc @ z
    in_cand = Rc @ (1.0 - outside) - diag
    nnz_in = np.asarray((Rc[:, cand] != 0).sum(axis=1)).ravel() - (diag != 0)
    step = scale * 1e-9  # quantized: equal entries hash alike (the exact check follows)
    sig = np.column_stack([count[cand], h[cand].view(np.int64),
                           *(np.round(np.asarray(v) / step).astype(np.int64) for v in (diag, proj, in_cand)),
                           nnz_in])
    _, group_of, sizes = np.unique(sig, axis=0, return_inverse=True, return_counts=True)
    group_of = np.asarray(group_of).reshape(-1)
    groups = []
    order = np.lexsort((d.pair_y, d.pair_i, neg_row))
    neg_sorted = neg_row[order]
    start = np.searchsorted(neg_sorted, np.arange(len(var) + 1))
    for g in np.flatnonzero(sizes >= 2):
        members = cand[group_of == g]
        # exact check of the pairs: the same (slack, positive, Delta) sequence for every member
        at = np.concatenate([order[start[r]:start[r + 1]] for r in members]).reshape(len(members), -1)
        if at.size and not (np.all(d.pair_i[at] == d.pair_i[at[0]]) and np.all(d.pair_y[at] == d.pair_y[at[0]])
                            and np.all(d.pair_loss[at] == d.pair_loss[at[0]])):
            continue
        # exact check of R: equal rows outside the group, one diagonal, one entry inside
        others = np.setdiff1d(np.arange(len(var)), members, assume_unique=True)
        block = Rs[members]
        inner = sp.coo_matrix(block[:, members])
        diagonal = inner.diagonal()
        off = inner.data[(inner.row != inner.col) & (inner.data != 0)]
        g = len(members)
        common = off.size == 0 or (off.size == g * (g - 1) and float(np.ptp(off)) <= rtol * scale)
        if (common and _same_rows(block[:, others], scale, rtol)
                and float(np.ptp(diagonal)) <= rtol * scale):
            groups.append(members)
    return groups


def reduce_model(model, R=None, rtol: float = 1e-12) -> ReducedModel | None:
    """The problem on the weight rows the data use (:class:`ReducedModel`), or None when it is
    the model itself.  ``R``: (4)'s K over ``model.var_nodes`` (default ``model.K``), or the
    baselines' fixed S (``model.S``).  ``rtol``: relative tolerance of the equalities of the
    interchangeability condition (K and S are built from a few numbers).

    **Rows off every pair are zero (4).**  Let ``O`` be the weight rows no margin row of the
    hinge involves (for (4): the nodes neither on a labelled path nor a sibling of one).  For
    any feasible ``W``, setting ``W_O = 0`` keeps every margin row (they do not see ``W_O``) and
    removes from Omega (5) the terms ``K_ij |<w_i, w_j>| >= 0`` with ``i`` or ``j`` in ``O``
    (``K >= 0``, Theorem 1), the others unchanged: so ``min (4) = min (4)`` restricted to the
    other rows ``U`` with ``K_UU`` (a principal submatrix: its comparison matrix is PSD, Theorem
    1 holds).  For a baseline's fixed ``S`` the same holds for the rows of the connected
    components of ``S``'s pattern that hold no used row (``S`` is block diagonal over them).
    On a chain of 1000 nodes whose two leaves are the labels, (4) keeps the two leaves.

    **Interchangeable negatives merge (all but TREELOSS, whose classes are paths).**  Rows
    ``a, b`` (classes = nodes) that are never a positive, are the negative of the same pairs
    ``(slack, positive, Delta)``, and have ``R_aa = R_bb``, ``R_ac = R_bc`` for every ``c``
    outside their group and a common ``R_ab = c_G`` inside it, are swapped by a symmetry of the
    problem (its rows and regularizer are invariant).  The objective is convex, so averaging an
    optimum over the group's permutations gives an optimum with ``w_a = w_b = w_G``: the
    problem restricted to ``W = P W'`` (``P`` copies ``w_G`` to every member) has the same
    optimal value.  On it the margin rows of the members coincide (one is kept) and
    ``Omega(P W') = 1/2 sum K'_tu |<w'_t, w'_u>|`` with ``K' = P^T K P`` off the diagonal and
    ``K'_GG = g K_aa + g (g - 1) c_G`` (``g = |G|``; ``|<w_G, w_G>| = ||w_G||^2``), i.e.
    ``K'_tu = g_t g_u K_ab``.  ``Kbar' = P^T Kbar P + diag(2 g (g - 1) c_G) >= 0``: Theorem 1
    holds for ``K'``.  The baselines' ``S' = P^T S P`` (the same formula).

    **Certificates lift exactly.**  Primal: ``(7)`` at ``P W'`` equals the reduced (7) at
    ``W'``.  Dual: spread each reduced multiplier ``beta_(s,i,G)`` evenly,
    ``alpha_(s,i,a) = beta / g`` (:meth:`ReducedModel.lift_dual`, feasible: the budgets see the
    same sums), so ``U_a = U'_G / g``; take ``S`` of K's box with ``S_aa = K_aa``, ``S_ab =
    c_G`` inside a group, ``S_ab = S'_tu / (g_t g_u)`` between groups, 0 next to a dropped row
    (:meth:`ReducedModel.lift_box`; in the box since ``|S'_tu| <= K'_tu``; positive definite
    when ``S'`` is: on the vectors of a group summing to zero it is ``K_aa - c_G > 0`` under
    Corollary 2, elsewhere it acts as ``S'``, and a dropped row has ``K_ii > 0``).  Then ``(S P W')_a = (S' W')_G / g`` (and
    ``(S P W')_k = (S' W')_k`` off the groups, 0 on a dropped row), so ``S^{-1} U = P S'^{-1}
    U'`` and ``D(alpha, S) = sum beta - 1/2 tr(U'^T S'^{-1} U') = D'(beta, S')``.  For a
    baseline the lifted S is its own (the same computation with ``S' = P^T S P``).  On a
    5000-leaf star with labels on 3 leaves, the 4997 others are one row with ``K'_GG = 4997``.
    """
    var = np.asarray(model.var_nodes)
    m = len(var)
    if R is None:
        R = model.sparse_K() if model.method == "orthogonal" else model.S
    Rs = sp.csr_matrix(R)
    row_at = np.full(len(model.H), -1, dtype=np.int64)
    row_at[var] = np.arange(m)
    keep = _kept_rows(model, Rs, row_at)
    groups = _interchangeable(model, Rs, keep, rtol) if model.method != "treeloss" else []
    if keep.all() and not groups:
        return None
    rep = np.arange(m)
    for g in groups:
        rep[g] = g[0]
    reduced_rows = np.flatnonzero(keep & (rep == np.arange(m)))
    position = np.full(m, -1, dtype=np.int64)
    position[reduced_rows] = np.arange(len(reduced_rows))
    row_of = np.where(keep, position[rep], -1)
    size = np.bincount(row_of[row_of >= 0], minlength=len(reduced_rows)).astype(float)
    # R' = P^T R P: scaled rows and columns, the diagonal g R_aa + g (g - 1) c_G
    Rr = Rs[reduced_rows][:, reduced_rows].toarray()
    inside = np.zeros(len(reduced_rows))
    for g in groups:
        inside[position[g[0]]] = Rs[g[0], g[1]]
    Rr = size[:, None] * Rr * size[None, :]
    np.fill_diagonal(Rr, size * Rs.diagonal()[reduced_rows] + size * (size - 1) * inside)
    data, classes_used, pair_of, share = _reduced_pairs(model, row_at, rep, groups, size, row_of)
    small = type(model)(model.method, model.H, model.X, model.y_index, data, model.slack_example,
                        var[reduced_rows], np.asarray(model.classes)[classes_used], X_slacks=model.X_slacks,
                        K=Rr if model.method == "orthogonal" else None, K_alpha=model.K_alpha,
                        S=None if model.method == "orthogonal" else Rr, X_features=model.X_features,
                        fit_intercept=model.fit_intercept, intercept_scaling=model.intercept_scaling)
    return ReducedModel(full=model, model=small, row_of=row_of, size=size, pair_of=pair_of, pair_share=share)


def _kept_rows(model, Rs: sp.csr_matrix, row_at: np.ndarray) -> np.ndarray:
    """The weight rows that can be non-zero at the optimum (positions in ``var_nodes``): those
    a margin row uses for (4), the components of S's pattern holding a used row otherwise."""
    d = model.data
    Lam = sp.csr_matrix(d.Lam)
    used_classes = np.unique(np.r_[d.pair_y, d.pair_ybar])
    used_nodes = np.unique(Lam[used_classes].indices) if len(used_classes) else np.zeros(0, np.int64)
    used_rows = row_at[used_nodes]
    used = np.zeros(len(model.var_nodes), dtype=bool)
    used[used_rows[used_rows >= 0]] = True
    if model.method == "orthogonal":
        return used
    off = Rs - sp.diags(Rs.diagonal())
    off.eliminate_zeros()
    _, comp = connected_components(abs(off) + abs(off).T, directed=False)
    return np.isin(comp, comp[used])


def _reduced_pairs(model, row_at, rep, groups, size, row_of):
    """The reduced model's pairs: those whose negative is a dropped member of a group go (their
    representative's stay).  Returns ``(data, classes_used, pair_of, pair_share)``."""
    d = model.data
    var = np.asarray(model.var_nodes)
    node = np.asarray(model.classes)  # the node of each class (all but TREELOSS: one node)
    neg_row = row_at[node[d.pair_ybar]] if model.method != "treeloss" else np.zeros(d.n_pairs, np.int64)
    kept_pair = np.ones(d.n_pairs, dtype=bool)
    if groups:
        kept_pair = rep[neg_row] == neg_row
    classes_used = np.unique(np.r_[d.pair_y[kept_pair], d.pair_ybar[kept_pair]])
    cls_at = np.full(d.n_classes, -1, dtype=np.int64)
    cls_at[classes_used] = np.arange(len(classes_used))
    Lam_r = sp.csr_matrix(d.Lam)[classes_used]
    data = pair_data(d.n_samples, Lam_r, d.pair_i[kept_pair], cls_at[d.pair_y[kept_pair]],
                     cls_at[d.pair_ybar[kept_pair]], d.Cw, pair_loss=d.pair_loss[kept_pair])
    # the full pairs -> the reduced pair (slack, positive, representative of the negative)
    q = d.n_classes
    class_of = np.full(len(model.H), -1, dtype=np.int64)
    class_of[node] = np.arange(len(node))
    rep_class = d.pair_ybar.copy() if model.method == "treeloss" else class_of[var[rep[neg_row]]]
    full_key = (d.pair_i.astype(np.int64) * q + d.pair_y) * q + rep_class
    red_key = (data.pair_i.astype(np.int64) * q + classes_used[data.pair_y]) * q + classes_used[data.pair_ybar]
    order = np.argsort(red_key, kind="stable")
    pair_of = order[np.searchsorted(red_key[order], full_key)]
    share = 1.0 / size[row_of[neg_row]] if model.method != "treeloss" else np.ones(d.n_pairs)
    return data, classes_used, pair_of, share
