"""Sibling-margin hierarchical SVM (HSVM) and hierarchical psi-learning (HPSI).

Source: Wang, Shen & Pan, *Large Margin Hierarchical Classification with Mutually Exclusive
Class Membership* (seed ``004_1fb6e3d151170c1b.txt``), sections 2-3 and Appendix B.  The
sheet ``formulations/hpsi.md`` has the equations, the derivations and the paper's typos.

Notation.  ``H`` is a tree with root 0 and non-root nodes ``1..K`` (here: the rows of
``H.nodes`` after the root).  Each non-root node ``v`` has a decision function
``f_v(x) = w_v^T x~ + b_v`` (linear: ``x~ = x``; kernel: ``x~ = (k(x_1, x), ..., k(x_n, x))``
and ``||w_v||_X^2 = w_v^T K w_v``, section 3.2).  For a label ``y`` the pairs

    Q(y) = {(j, t) : t in sib(j), j in anc(y) + {y}}               (Appendix B, (8))

compare the label and its ancestors with their siblings; the generalized functional margin
is ``u_min(f(x), y) = min_{(j, t) in Q(y)} f_j(x) - f_t(x)`` (section 3.1), and the top-down
rule ``d^H`` walks from the root to the child with the largest ``f`` (section 2).  Lemma 1:
``d^H(f(x)) != y`` iff ``u_min < 0`` (up to ties, see the sheet).

The cost (2) is ``1/2 sum_v ||w_v||^2 + C sum_i v(u_min(f(x_i), y_i))`` subject to the
sum-to-zero constraints ``sum_{t in sib(j) + {j}} f_t(x_i) = 0`` at the training points
(Theorem 1); HSVM takes the hinge ``v(u) = (1 - u)_+``, HPSI ``psi(u) = min(1, (1 - u)_+)``
minimized by the DC algorithm (3).

Declarations (each a :class:`~hiercvx.ReferenceProblem`):

* :func:`primal` -- (2) / (8) as a QP in ``(W, b, xi)`` (linear) or ``(coefficients, b, xi)``
  (kernel, representer form), with the DC linear term of (8) as a ``cvxpy.Parameter``
  (zero for HSVM);
* :func:`dual` -- the dual (9)-(11) in ``(beta, delta)``, with the recovery of ``w`` from
  (10) and of ``b`` from the KKT conditions, or from the paper's linear program when they
  do not pin the biases;
* :func:`dc` -- HPSI: the DC iterations (3) on one compiled :func:`primal`.

Helpers: :func:`predict_top_down` (``d^H``), :func:`u_min`, :func:`psi`,
:func:`sibling_pairs`, :func:`decision_function`, :func:`predict`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from .._validation import check_features, check_positive
from ..exceptions import HierarchyError, InputError, LabelError, SolverError
from ..hierarchy import Hierarchy, PartialPaths
from ..kernels import psd_factor, Kernel, check_psd, make_kernel
from ..reference import ReferenceProblem, ReferenceSolution, check_size
from .._sparse import expand_ranges

logger = logging.getLogger(__name__)

__all__ = [
    "SiblingPairs",
    "sibling_pairs",
    "primal",
    "dual",
    "dc",
    "DCResult",
    "predict_top_down",
    "u_min",
    "psi",
    "hinge",
    "cost",
    "decision_function",
    "predict",
    "linearization",
]


# ---------------------------------------------------------------------- losses of u
def hinge(u) -> np.ndarray:
    """``(1 - u)_+``, the HSVM loss (section 3.2)."""
    return np.maximum(0.0, 1.0 - np.asarray(u, dtype=float))


def psi(u) -> np.ndarray:
    """The psi-loss of section 3.2: 1 for ``u < 0``, ``1 - u`` on ``[0, 1)``, 0 for ``u >= 1``,
    i.e. ``min(1, (1 - u)_+) = psi_1(u) - psi_2(u)`` with ``psi_1 = (1 - u)_+``, ``psi_2 = (-u)_+``."""
    return np.clip(1.0 - np.asarray(u, dtype=float), 0.0, 1.0)


# ---------------------------------------------------------------------- hierarchy and pairs
def _check_tree(H) -> Hierarchy:
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if not H.is_tree:
        raise HierarchyError("the sibling-margin SVM (Wang, Shen & Pan) is defined on trees: every "
                             "non-root node needs exactly one parent so that the top-down rule and "
                             "the sibling comparisons are well defined; this hierarchy is a DAG")
    if H.index(H.root) != 0:  # pragma: no cover - Hierarchy puts the root first
        raise HierarchyError("the root must be the first node of H.nodes")
    if len(H.leaves) < 2:
        raise HierarchyError(f"the hierarchy has a single leaf ({H.leaves[0]!r}): there is nothing to "
                             "classify; it needs at least two leaves")
    return H




def _node_pair_table(H: Hierarchy):
    """For every node v, the pairs ``Q(v)`` as CSR: ``ptr`` (M + 1), ``pos``, ``neg``.

    Built root-first: ``Q(v) = Q(par(v)) + {(v, t): t in sib(v)}`` (one pass over the nodes).
    """
    M = len(H)
    parent = H.parent_index
    children = H.children_indices
    pos_lists: list = [np.zeros(0, np.int64)] * M
    neg_lists: list = [np.zeros(0, np.int64)] * M
    for v in range(1, M):  # nodes are topologically ordered, root first
        p = parent[v]
        sib = np.asarray(children[p], dtype=np.int64)
        sib = sib[sib != v]
        pos_lists[v] = np.concatenate([pos_lists[p], np.full(len(sib), v, dtype=np.int64)])
        neg_lists[v] = np.concatenate([neg_lists[p], sib])
    counts = np.fromiter((len(a) for a in pos_lists), dtype=np.int64, count=M)
    ptr = np.zeros(M + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, np.concatenate(pos_lists), np.concatenate(neg_lists)


def _names_array(H: Hierarchy) -> np.ndarray:
    """Node names as an array (int64 when every name is an integer, else object)."""
    names = H.nodes
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in names):
        return np.asarray(names, dtype=np.int64)
    out = np.empty(len(names), dtype=object)
    for k, v in enumerate(names):  # element-wise: tuple names must not be unpacked
        out[k] = v
    return out


def _label_indices(y, H: Hierarchy) -> np.ndarray:
    """One node index per sample; refuses label sets, unknown labels and the root."""
    if isinstance(y, np.ndarray) and y.ndim != 1:
        raise LabelError(f"y must be 1-D (one node name per sample), got shape {y.shape}")
    if sp.issparse(y):
        raise LabelError("y must be a 1-D sequence of node names, not an indicator matrix")
    ind = H.label_indicator(y)  # unknown names raise LabelError here
    counts = np.diff(ind.indptr)
    if ind.shape[0] == 0:
        raise LabelError("y is empty")
    if np.any(counts != 1):
        i = int(np.flatnonzero(counts != 1)[0])
        raise LabelError(
            f"sample {i} has {int(counts[i])} labels; the sibling-margin SVM needs exactly one "
            "label per sample (mutually exclusive classes). Wang et al. (section 4.2) turn a "
            "set of co-occurring categories into one new category")
    idx = ind.indices.astype(np.int64)
    if np.any(idx == 0):
        i = int(np.flatnonzero(idx == 0)[0])
        raise LabelError(f"sample {i} is labelled with the root {H.root!r}, which is not a class; "
                         "labels must be non-root nodes")
    return idx


@dataclass(frozen=True)
class SiblingPairs:
    """The pairs ``Q(y_i)`` of every sample on the working hierarchy.

    ``hierarchy`` is ``H`` itself, or ``H`` with a "self" leaf under every internal node used
    as a label (``partial_paths``; section 2: a child "defined as itself").  Node indices
    refer to ``hierarchy.nodes`` (root 0).  Pairs are sorted by sample, each sample's pairs
    from the root down; ``pair_ptr`` are the CSR offsets per sample.  ``groups`` are the
    children of every internal node (sibling groups, singletons included).
    """

    hierarchy: Hierarchy
    partial_paths: PartialPaths | None
    labels: np.ndarray
    pair_i: np.ndarray
    pair_pos: np.ndarray
    pair_neg: np.ndarray
    pair_ptr: np.ndarray
    groups: tuple
    group_of: np.ndarray

    @property
    def n_samples(self) -> int:
        return len(self.labels)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_i)

    @property
    def n_nodes(self) -> int:
        return len(self.hierarchy)

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    def margins(self, S: np.ndarray) -> np.ndarray:
        """``f_j(x_i) - f_t(x_i)`` for every pair, from scores ``S`` ``(n, M)``."""
        return S[self.pair_i, self.pair_pos] - S[self.pair_i, self.pair_neg]

    def u_min(self, S: np.ndarray, return_pairs: bool = False):
        """``u_min`` per sample (``+inf`` for a sample without pairs); with ``return_pairs``
        also the index of a minimizing pair (``-1`` when there is none)."""
        m = self.margins(S)
        u = np.full(self.n_samples, np.inf)
        arg = np.full(self.n_samples, -1, dtype=np.int64)
        if self.n_pairs:
            order = np.lexsort((m, self.pair_i))       # by sample, then by margin
            first = order[np.r_[0, np.flatnonzero(np.diff(self.pair_i[order])) + 1]]
            u[self.pair_i[first]] = m[first]
            arg[self.pair_i[first]] = first
        return (u, arg) if return_pairs else u

    def to_original(self, idx: np.ndarray) -> np.ndarray:
        """Node indices of the working hierarchy -> node names of the caller's hierarchy."""
        names = _names_array(self.hierarchy)[idx]
        if self.partial_paths is None:
            return names
        back = self.partial_paths.inverse_transform(list(names))
        return _as_label_array(back)


def _as_label_array(labels) -> np.ndarray:
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in labels):
        return np.asarray(labels, dtype=np.int64)
    out = np.empty(len(labels), dtype=object)
    for k, v in enumerate(labels):
        out[k] = v
    return out


def sibling_pairs(y, H: Hierarchy, partial_paths: bool = True) -> SiblingPairs:
    """Validate single labels ``y`` on the tree ``H`` and list the pairs ``Q(y_i)`` of (8).

    Labels on internal nodes (partial paths) get a self leaf under that node when
    ``partial_paths`` (the paper's device, section 2); with ``partial_paths=False`` they keep
    the paper's literal ``Q(y)`` (the label and its ancestors against their siblings), which
    is what :func:`u_min` computes.
    """
    H = _check_tree(H)
    idx = _label_indices(y, H)
    pp = None
    if partial_paths:
        internal = np.unique(idx[~H.leaf_mask[idx]])
        if internal.size:
            pp = H.with_self_leaves([H.nodes[v] for v in internal])
            logger.info("hpsi: %d internal node(s) used as labels get a self leaf (partial paths)",
                        internal.size)
            W = pp.hierarchy
            idx = W.indices(pp.transform([H.nodes[v] for v in idx]))
            H = W
    ptr, qpos, qneg = _node_pair_table(H)
    counts = ptr[idx + 1] - ptr[idx]
    sel = expand_ranges(ptr[idx], counts)
    pair_i = np.repeat(np.arange(len(idx), dtype=np.int64), counts)
    sample_ptr = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(counts, out=sample_ptr[1:])
    groups = tuple(np.sort(np.asarray(g, dtype=np.int64)) for g in H.sibling_groups())
    group_of = np.full(len(H), -1, dtype=np.int64)
    for g, members in enumerate(groups):
        group_of[members] = g
    return SiblingPairs(hierarchy=H, partial_paths=pp, labels=idx, pair_i=pair_i,
                        pair_pos=qpos[sel], pair_neg=qneg[sel], pair_ptr=sample_ptr,
                        groups=groups, group_of=group_of)


# ---------------------------------------------------------------------- public helpers
def _score_matrix(scores, H: Hierarchy, X=None) -> np.ndarray:
    if callable(scores):
        if X is None:
            raise InputError("pass X= when scores is a function f(X) -> (n, n_nodes) array")
        scores = scores(X)
    S = np.asarray(scores, dtype=float)
    if S.ndim != 2 or S.shape[1] != len(H):
        raise InputError(f"scores must be (n_samples, {len(H)}): one column per node of H.nodes "
                         f"(the root's column is ignored), got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise InputError("scores have non-finite entries")
    return S


def predict_top_down(scores, H: Hierarchy, *, X=None, return_index: bool = False) -> np.ndarray:
    """The top-down rule ``d^H`` of section 2: from the root, move to the child with the
    largest score until a leaf is reached.

    ``scores``: ``(n, len(H))`` values ``f_v(x_i)`` in ``H.nodes`` order (root column
    ignored), or a callable ``f(X)`` returning them (then pass ``X``).  Ties go to the first
    child in ``H.nodes`` order.  Returns leaf names (or indices with ``return_index``).
    """
    if not isinstance(H, Hierarchy) or not H.is_tree:
        raise HierarchyError("the top-down rule needs a tree hiercvx.Hierarchy")
    S = _score_matrix(scores, H, X)
    n, M = S.shape
    children = [np.sort(np.asarray(c, dtype=np.int64)) for c in H.children_indices]
    width = max(1, max(len(c) for c in children))
    table = np.full((M, width), -1, dtype=np.int64)  # padded children lists
    for v, c in enumerate(children):
        table[v, :len(c)] = c
    current = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    for _ in range(int(H.depths.max())):
        active = ~H.leaf_mask[current]
        if not active.any():
            break
        kids = table[current[active]]                    # (n_active, width)
        vals = np.where(kids >= 0, S[rows[active][:, None], np.maximum(kids, 0)], -np.inf)
        current[active] = kids[np.arange(len(kids)), np.argmax(vals, axis=1)]
    return current if return_index else _names_array(H)[current]


def u_min(scores, y, H: Hierarchy, *, X=None, return_pairs: bool = False):
    """The generalized functional margin of section 3.1 for every sample:
    ``u_min(f(x_i), y_i) = min_{(j, t) in Q(y_i)} f_j(x_i) - f_t(x_i)``.

    ``scores`` as in :func:`predict_top_down`; ``y`` node names of ``H`` (an internal node
    keeps the paper's literal ``Q(y)``).  ``+inf`` when ``Q(y)`` is empty.  With
    ``return_pairs`` also each sample's minimizing pair as ``(j, t)`` node names (``None``
    when there is none).
    """
    pairs = sibling_pairs(y, H, partial_paths=False)
    S = _score_matrix(scores, H, X)
    if S.shape[0] != pairs.n_samples:
        raise InputError(f"scores have {S.shape[0]} rows but y has {pairs.n_samples} labels")
    u, arg = pairs.u_min(S, return_pairs=True)
    if not return_pairs:
        return u
    names = H.nodes
    which = [None if a < 0 else (names[pairs.pair_pos[a]], names[pairs.pair_neg[a]]) for a in arg]
    return u, which


# ---------------------------------------------------------------------- the numpy model
@dataclass
class _Model:
    """Everything the certificates, recoveries and DC steps compute in numpy.

    Functions are stored as ``(M, p)`` arrays over all nodes of the working hierarchy (root
    row zero): ``p = d`` weights (linear) or ``p = n`` representer coefficients (kernel).
    """

    pairs: SiblingPairs
    X: Any
    kernel: Kernel
    linear: bool
    K: np.ndarray | None        # PSD Gram matrix actually used (L L^T), kernel form only
    L: np.ndarray | None        # its factor (n, r)
    group_matrix: sp.csr_matrix  # (n_groups, M) membership
    group_size: np.ndarray

    @property
    def n(self) -> int:
        return self.pairs.n_samples

    @property
    def M(self) -> int:
        return self.pairs.n_nodes

    # -- functions
    def scores(self, coef: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``S[i, v] = f_v(x_i)`` ``(n, M)``."""
        if self.linear:
            XW = self.X @ coef.T
            XW = XW.toarray() if sp.issparse(XW) else np.asarray(XW)
            return XW + b[None, :]
        return self.K @ coef.T + b[None, :]

    def penalty(self, coef: np.ndarray) -> float:
        """``J(f) = 1/2 sum_v ||w_v||_X^2`` (section 3.2)."""
        if self.linear:
            return 0.5 * float(np.sum(coef * coef))
        Z = self.L.T @ coef.T
        return 0.5 * float(np.sum(Z * Z))

    def center(self, coef: np.ndarray, b: np.ndarray):
        """Remove each sibling group's mean function.  Pair margins are differences of
        siblings, so they do not change; the penalty does not grow; and the sum-to-zero
        constraints then hold everywhere (exactly feasible).  Singleton groups become 0."""
        G = self.group_matrix
        g = self.pairs.group_of
        inner = g >= 0
        mc = (G @ coef) / self.group_size[:, None]
        mb = (G @ b) / self.group_size
        coef = coef.copy()
        b = b.copy()
        coef[inner] -= mc[g[inner]]
        b[inner] -= mb[g[inner]]
        coef[0] = 0.0
        b[0] = 0.0
        return coef, b

    def sum_to_zero_residual(self, coef: np.ndarray, b: np.ndarray) -> float:
        S = self.scores(coef, b)
        return float(np.abs(S @ self.group_matrix.T).max())

    # -- costs
    def hinge_terms(self, S: np.ndarray) -> np.ndarray:
        u = self.pairs.u_min(S)
        return np.where(np.isfinite(u), hinge(np.where(np.isfinite(u), u, 0.0)), 0.0)

    def primal_value(self, coef, b, C: float, lam: np.ndarray | None = None) -> float:
        """(8): ``J(f) + C sum_i (1 - u_min)_+ + sum_p lam_p m_p(f)``."""
        S = self.scores(coef, b)
        val = self.penalty(coef) + C * float(self.hinge_terms(S).sum())
        if lam is not None:
            val += float(lam @ self.pairs.margins(S))
        return val

    def psi_value(self, coef, b, C: float) -> float:
        """(2) with the psi-loss: ``J(f) + C sum_i psi(u_min(f(x_i), y_i))``."""
        S = self.scores(coef, b)
        u = self.pairs.u_min(S)
        return self.penalty(coef) + C * float(psi(np.where(np.isfinite(u), u, 1.0)).sum())

    # -- dual side
    def gmat(self, gamma: np.ndarray) -> np.ndarray:
        """``Gamma`` ``(n, M)``: ``+gamma_p`` at ``(i, j)`` and ``-gamma_p`` at ``(i, t)``."""
        pr = self.pairs
        flat = pr.pair_i * self.M
        out = (np.bincount(flat + pr.pair_pos, weights=gamma, minlength=self.n * self.M)
               - np.bincount(flat + pr.pair_neg, weights=gamma, minlength=self.n * self.M))
        return out.reshape(self.n, self.M)

    def quad(self, A: np.ndarray) -> float:
        """``||W(A)||^2`` for ``W = A^T X`` (linear) or ``tr(A^T K A)`` (kernel)."""
        if self.linear:
            AX = (self.X.T @ A).T if sp.issparse(self.X) else A.T @ self.X
            return float(np.sum(np.asarray(AX) ** 2))
        Z = self.L.T @ A
        return float(np.sum(Z * Z))

    def dual_value(self, beta: np.ndarray, lam: np.ndarray) -> float:
        """(9) after substituting (10): ``sum_p beta_p - 1/2 ||W(beta - lam)||^2``, valid when
        ``beta`` is dual feasible (see :meth:`dual_feasible`)."""
        return float(beta.sum()) - 0.5 * self.quad(self.gmat(beta - lam))

    def budget(self, beta: np.ndarray) -> np.ndarray:
        return np.bincount(self.pairs.pair_i, weights=beta, minlength=self.n)

    def bias_residual(self, beta: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """``dL/db_v``: column sums of ``Gamma(beta - lam)`` (must vanish, (10))."""
        return self.gmat(beta - lam).sum(axis=0)

    def incidence(self) -> sp.csr_matrix:
        """``E^T`` ``(M, P)``: column p is ``e_j - e_t`` (so ``E^T gamma`` = column sums of
        ``Gamma(gamma)``)."""
        pr = self.pairs
        P = pr.n_pairs
        ar = np.arange(P)
        return sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                              (np.r_[pr.pair_pos, pr.pair_neg], np.r_[ar, ar])), shape=(self.M, P))

    def dual_feasible(self, beta: np.ndarray, lam: np.ndarray, C: float) -> np.ndarray:
        """A dual feasible point near ``beta``: ``beta >= 0``, ``sum_{p of i} beta_p <= C``
        (11), and the bias condition ``sum_i Gamma_iv(beta - lam) = 0`` for every node (10).

        Unregularized biases make the Lagrangian ``-inf`` unless (10) holds exactly, so a
        solver's approximately stationary duals are repaired: clip at 0 and scale each
        sample's budget; then :meth:`_least_norm_repair` (a least-norm correction on the
        clearly positive pairs, then a shrink of ``beta - lam`` that restores the budgets),
        or, when that fails, :meth:`_lp_repair` (a small-change LP, polished exactly).  The
        last resort is ``beta = lam`` (always feasible, but a weak bound that the gap check
        flags).  Success means (10) holds to ``1e-11 max(1, C)`` and the box to round-off.
        """
        b = self._scale_budget(np.maximum(np.asarray(beta, dtype=float), 0.0), C)
        r = self.bias_residual(b, lam)
        tol = 1e-11 * max(1.0, C)
        if np.abs(r).max() <= tol:
            return b
        out = self._least_norm_repair(b, r, lam, C, tol)
        if out is None:
            out = self._lp_repair(b, r, lam, C, tol)
        if out is None:
            logger.warning("hpsi: could not make the solver's duals satisfy the bias condition (10); "
                           "using beta = lam, a feasible but weak point")
            return np.asarray(lam, dtype=float).copy()
        logger.debug("hpsi: bias condition repaired: residual %.2e -> %.2e", np.abs(r).max(),
                     np.abs(self.bias_residual(out, lam)).max())
        return out

    def _least_norm_repair(self, b, r, lam, C, tol):
        """Exact repair of (10) in two moves.

        1. The least-norm ``Delta`` with ``E_S^T Delta = -r``, supported on the clearly
           positive pairs ``S``, keeping ``sum_{p of i} Delta_p = 0`` for the samples that
           carry a DC term (``sum lam_i = C``: their budget has no room).
        2. Shrink ``gamma = beta - lam`` towards 0: ``beta <- (1 - theta) beta + theta lam``.
           This keeps (10) (it scales ``E^T gamma = 0``) and ``beta >= 0``, leaves the
           DC samples' budgets alone, and with the smallest ``theta`` brings every other
           sample back within ``C``.
        ``None`` if the system is inconsistent or the result is not feasible to round-off.
        """
        pr = self.pairs
        thresh = max(1e-7 * C, 100.0 * float(np.abs(r).max()))
        cols = np.flatnonzero(b > thresh)
        if cols.size == 0:
            return None
        dc_rows = np.flatnonzero(self.budget(lam) > 0)
        keep = self._independent_rows()
        r = r[keep]
        Es = self.incidence()[keep][:, cols]
        Bs = sp.csr_matrix((np.ones(cols.size), (pr.pair_i[cols], np.arange(cols.size))),
                           shape=(self.n, cols.size))[dc_rows]
        A = sp.vstack([Es, Bs]).tocsr()
        rhs = np.r_[-r, np.zeros(dc_rows.size)]
        if A.shape[0] * A.shape[1] <= 4_000_000:
            delta = np.linalg.lstsq(A.toarray(), rhs, rcond=None)[0]   # least-norm solution
        else:  # pragma: no cover - large references
            from scipy.sparse.linalg import lsqr
            delta = lsqr(A, rhs, atol=0.0, btol=0.0, iter_lim=20 * A.shape[1])[0]
        out = b.copy()
        out[cols] += delta
        return self._shrink_and_accept(out, lam, C, tol)

    def _shrink_and_accept(self, out, lam, C, tol):
        """Step 2 of :meth:`_least_norm_repair`, then :meth:`_accept`."""
        used = self.budget(out)
        lam_used = self.budget(lam)
        over = (used > C) & (lam_used < used)
        if over.any():
            # (1 - theta) used + theta lam_used <= C  <=>  theta >= (used - C) / (used - lam_used)
            theta = float(np.max((used[over] - C) / (used[over] - lam_used[over])))
            if theta < 1e-6:
                out = (1.0 - theta) * out + theta * lam
        return self._accept(out, lam, C, tol)

    def _lp_repair(self, b, r, lam, C, tol):
        """The smallest L1 change ``Delta`` restoring (10) inside the box, from HiGHS' dual
        simplex on the problem scaled by ``s ~ max|r|`` with the trust region
        ``|Delta_p| <= 1000 s`` (so every number in the LP is of order one), then polished:
        the changes the LP leaves at a bound are set exactly to it and the basic ones are
        re-solved from the equalities and the tight budgets."""
        from scipy.optimize import linprog

        pr = self.pairs
        P = pr.n_pairs
        # scale: large enough that round-off of the data (~1e-16 C) stays below HiGHS'
        # tolerances, small enough that the needed change is of order one
        s = max(float(np.abs(r).max()), 1e-7 * max(1.0, C))
        E = self.incidence()
        used = self._independent_rows()             # each group's rows sum to zero: drop one
        Eu = E[used]
        Bm = sp.csr_matrix((np.ones(P), (pr.pair_i, np.arange(P))), shape=(self.n, P))
        slack = np.maximum(C - self.budget(b), 0.0) / s
        box = 1000.0
        lo = -np.minimum(b / s, box)                       # beta_p + Delta_p >= 0
        hi = np.minimum((C - b) / s, box)
        res = linprog(np.r_[np.ones(P), np.ones(P)], A_ub=sp.hstack([Bm, -Bm]).tocsr(), b_ub=slack,
                      A_eq=sp.hstack([Eu, -Eu]).tocsr(), b_eq=-r[used] / s,
                      bounds=np.c_[np.zeros(2 * P), np.r_[np.maximum(hi, 0.0), -lo]],
                      method="highs-ds", options={"presolve": False})  # presolve misjudges
        if res.status != 0:                                   # these tiny systems as infeasible
            logger.debug("hpsi: bias-repair LP failed: %s", res.message)
            return None
        step = res.x[:P] - res.x[P:]                       # Delta / s
        eps = 1e-9
        to_zero = (step <= lo + eps) & (lo > -box)         # beta_p becomes exactly 0
        idle = np.abs(step) <= eps
        basic = ~to_zero & ~idle
        delta = np.zeros(P)
        delta[to_zero] = -b[to_zero]
        budget_lp = self.budget(b) + s * np.bincount(pr.pair_i, weights=step, minlength=self.n)
        tight = np.flatnonzero(budget_lp >= C - 1e-7 * s)
        cols = np.flatnonzero(basic)
        if cols.size:
            A = sp.vstack([Eu[:, cols], Bm[tight][:, cols]]).tocsr()
            rhs = np.r_[-r[used] - (Eu @ delta), C - self.budget(b + delta)[tight]]
            delta[cols] = np.linalg.lstsq(A.toarray(), rhs, rcond=None)[0]
        out = b + delta
        out[to_zero] = 0.0
        return self._shrink_and_accept(out, lam, C, tol)

    def _independent_rows(self) -> np.ndarray:
        """Rows of ``E^T`` without the dependency of each sibling group (its rows sum to
        zero, since every pair joins two siblings): all group members but the last."""
        return np.concatenate([g[:-1] for g in self.pairs.groups])

    def _accept(self, out, lam, C, tol):
        """``out`` if it is dual feasible to round-off (entries above ``-1e-14 C`` are set to
        0, budgets within ``C (1 + 1e-13)``, (10) within ``tol``), else ``None``."""
        if out.min() < -1e-14 * C or self.budget(out).max() > C * (1 + 1e-13):
            return None
        out = np.maximum(out, 0.0)
        if np.abs(self.bias_residual(out, lam)).max() > tol:
            return None
        return out

    def _scale_budget(self, b: np.ndarray, C: float) -> np.ndarray:
        used = self.budget(b)
        scale = np.ones(self.n)
        over = used > C
        scale[over] = C / used[over]
        return b * scale[self.pairs.pair_i]

    # -- recovery of the biases (Appendix B)
    def _bias_system(self):
        """Pair / slack / group selection matrices over the non-root biases ``b[1:]``."""
        pr = self.pairs
        P, M1 = pr.n_pairs, self.M - 1
        Eb = sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                            (np.r_[np.arange(P), np.arange(P)], np.r_[pr.pair_pos, pr.pair_neg] - 1)),
                           shape=(P, M1))
        Gb = self.group_matrix[:, 1:]
        return Eb, Gb

    def biases_kkt(self, coef: np.ndarray, beta: np.ndarray, C: float, tol: float = 1e-6):
        """Biases from complementary slackness, or ``None`` when they are not pinned.

        Free examples (``sum beta < C``, so ``xi_i = 0``) with ``beta_p > 0`` give
        ``m_p = 1``; bounded examples give equal margins over their active pairs; the
        sum-to-zero constraints give ``sum_{v in g} b_v = 0``.  Accepted when this linear
        system has full column rank and is consistent.
        """
        pr = self.pairs
        S0 = self.scores(coef, np.zeros(self.M))
        g = pr.margins(S0)                       # margins without biases
        Eb, Gb = self._bias_system()
        active = beta > tol * C
        free = self.budget(beta) < C * (1 - tol)
        eq_free = active & free[pr.pair_i]
        rows = [Eb[eq_free]]
        rhs = [1.0 - g[eq_free]]
        bnd = np.flatnonzero(active & ~free[pr.pair_i])
        if bnd.size > 1:
            same = pr.pair_i[bnd[1:]] == pr.pair_i[bnd[:-1]]
            p, q = bnd[1:][same], bnd[:-1][same]
            rows.append(Eb[p] - Eb[q])           # m_p = m_q
            rhs.append(g[q] - g[p])
        rows.append(Gb)
        rhs.append(np.zeros(Gb.shape[0]))
        R = sp.vstack(rows).toarray()
        t = np.concatenate(rhs)
        sol, _, rank, _ = np.linalg.lstsq(R, t, rcond=None)
        if rank < R.shape[1]:
            return None
        if np.abs(R @ sol - t).max() > 1e-5 * max(1.0, np.abs(t).max()):
            return None
        return np.r_[0.0, sol]

    def biases_lp(self, coef: np.ndarray, C: float, lam: np.ndarray) -> np.ndarray:
        """The paper's fallback: with ``w`` fixed, (8) is a linear program in ``(b, xi)``."""
        from scipy.optimize import linprog

        pr = self.pairs
        S0 = self.scores(coef, np.zeros(self.M))
        g = pr.margins(S0)
        Eb, Gb = self._bias_system()
        P, n, M1 = pr.n_pairs, self.n, self.M - 1
        Exi = sp.csr_matrix((np.ones(P), (np.arange(P), pr.pair_i)), shape=(P, n))
        c = np.r_[Eb.T @ lam, np.full(n, C)]
        res = linprog(c, A_ub=sp.hstack([-Eb, -Exi]).tocsr(), b_ub=g - 1.0,
                      A_eq=sp.hstack([Gb, sp.csr_matrix((Gb.shape[0], n))]).tocsr(),
                      b_eq=np.zeros(Gb.shape[0]),
                      bounds=[(None, None)] * M1 + [(0, None)] * n, method="highs")
        if res.status != 0:
            raise SolverError(f"hpsi: the bias linear program failed: {res.message}", status=res.status,
                              solver="HIGHS")
        return np.r_[0.0, res.x[:M1]]


def checked_inputs(X, y, H, kernel, sigma):
    """Validate the inputs of (2) once: ``(X, pairs, kernel)`` with the kernel resolved
    (``sigma`` by the between-class median when not given, section 4.1).  Shared by the
    reference and the fast solver (:mod:`hiercvx.solvers.sibling_qp`)."""
    pairs = sibling_pairs(y, H)
    kern = kernel if isinstance(kernel, Kernel) else None
    precomputed = kern.name == "precomputed" if kern else (isinstance(kernel, str)
                                                          and kernel == "precomputed")
    if precomputed:
        X = check_features(X, "X (the precomputed Gram matrix)", allow_sparse=False)
        if X.shape[0] != X.shape[1]:
            raise InputError(f"with kernel='precomputed' X must be the square (n, n) Gram matrix, "
                             f"got shape {X.shape}")
        check_psd(X, what="precomputed kernel matrix")
    else:
        X = check_features(X)
    if X.shape[0] != pairs.n_samples:
        raise InputError(f"X has {X.shape[0]} rows but y has {pairs.n_samples} labels")
    if kern is None:
        kern = make_kernel(kernel, X=None if precomputed else X,
                           y=None if precomputed else np.asarray(pairs.labels), sigma=sigma)
    return X, pairs, kern


def group_matrix(pairs) -> tuple[sp.csr_matrix, np.ndarray]:
    """Sibling-group membership ``(n_groups, n_nodes)`` and the group sizes."""
    groups = pairs.groups
    rows = np.concatenate([np.full(len(g), k) for k, g in enumerate(groups)])
    cols = np.concatenate(groups)
    Gm = sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(groups), pairs.n_nodes))
    return Gm, np.array([len(g) for g in groups], dtype=float)


def _model(X, y, H, kernel, sigma) -> _Model:
    X, pairs, kern = checked_inputs(X, y, H, kernel, sigma)
    K = L = None
    if not kern.is_linear:
        K0 = kern(X)
        if kern.name != "rbf":
            check_psd(K0, what=f"{kern.name} kernel matrix")
        L = psd_factor(K0)
        K = L @ L.T
    Gm, gsize = group_matrix(pairs)
    return _Model(pairs=pairs, X=X, kernel=kern, linear=kern.is_linear, K=K, L=L,
                  group_matrix=Gm, group_size=gsize)


def _row_space(Bfeat):
    """``None`` when ``B = [Bfeat, 1]`` has full column rank (then ``B z = 0`` iff ``z = 0``,
    Theorem 1), else an orthonormal basis ``(rho, p + 1)`` of its row space."""
    B = Bfeat.toarray() if sp.issparse(Bfeat) else np.asarray(Bfeat, dtype=float)
    B = np.hstack([B, np.ones((B.shape[0], 1))])
    _, s, Vt = np.linalg.svd(B, full_matrices=False)
    keep = s > 1e-10 * max(float(s.max()), 1e-300)
    if keep.sum() == B.shape[1]:
        return None
    return Vt[keep]


def _selection_matrices(model: _Model):
    """``D`` ``(P, n M1)`` picking ``S_ij - S_it`` from ``vec(S, "C")``, ``Exi`` ``(P, n)``,
    ``Gt`` ``(M1, n_groups)``, for the non-root columns ``S`` ``(n, M1)``."""
    pr = model.pairs
    P, n, M1 = pr.n_pairs, model.n, model.M - 1
    base = pr.pair_i * M1
    D = sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                       (np.r_[np.arange(P), np.arange(P)],
                        np.r_[base + pr.pair_pos - 1, base + pr.pair_neg - 1])), shape=(P, n * M1))
    Exi = sp.csr_matrix((np.ones(P), (np.arange(P), pr.pair_i)), shape=(P, n))
    Gt = model.group_matrix[:, 1:].T.tocsr()
    return D, Exi, Gt


def _nnz_estimate(model: _Model) -> int:
    n, M1, P = model.n, model.M - 1, model.pairs.n_pairs
    cols = model.X.shape[1] if model.linear else model.L.shape[1] + n
    if model.linear and sp.issparse(model.X):
        cols = max(1, model.X.nnz // max(1, n))
    return n * cols * M1 + 3 * P + n * M1


class _HierReference(ReferenceProblem):
    """A :class:`ReferenceProblem` that adds recovered quantities (full weights with the root
    row, biases, the bias route) to ``sol.values`` after the certificate."""

    def __init__(self, *args, extras: Callable | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._extras = extras

    def solve(self, solver: str | None = None, **kwargs) -> ReferenceSolution:
        sol = super().solve(solver, **kwargs)
        if self._extras is not None:
            sol.values.update(self._extras(sol.values))
        return sol


def _full(rows: np.ndarray) -> np.ndarray:
    """Prepend the root's zero row (or entry)."""
    rows = np.asarray(rows, dtype=float)
    return np.concatenate([np.zeros((1,) + rows.shape[1:]), rows], axis=0)


def _check_pair_weights(pair_weights, model: _Model) -> np.ndarray:
    P = model.pairs.n_pairs
    if pair_weights is None:
        return np.zeros(P)
    lam = np.asarray(pair_weights, dtype=float)
    if lam.shape != (P,) or not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise InputError(f"pair_weights must be {P} finite non-negative numbers, one per pair of "
                         "sibling_pairs(y, H) (the DC linearization of (3)); see hpsi.linearization")
    return lam


# ---------------------------------------------------------------------- primal (2) / (8)
def primal(X, y, H, C=1.0, kernel="linear", sigma=None, pair_weights=None,
           max_size=None) -> ReferenceProblem:
    """HSVM (2), or one DC step (8) of HPSI, as a QP::

        min  1/2 sum_v ||w_v||_X^2 + C sum_i xi_i + sum_p lam_p m_p(f)
        s.t. xi_i >= 0,   m_p(f) + xi_i >= 1                for p = (i, j, t), (j, t) in Q(y_i)
             sum_{t in chi(s)} f_t(x_i) = 0                 for every internal node s, every i

    with ``m_p(f) = f_j(x_i) - f_t(x_i)``.  ``lam = 0`` is HSVM (2) (hinge of ``u_min``);
    ``lam`` = :func:`linearization` is the DC step (3) (Appendix B writes the same linear
    term as ``-<grad w^(m-1), w> - <grad b^(m-1), b>``).

    ``kernel="linear"``: variables ``W`` ``(K, d)``, ``b``, ``xi``.  Otherwise (``"rbf"``
    with ``sigma`` or the between-class median of section 4.1, a callable ``k(A, B)``, or
    ``"precomputed"``): representer form ``f_v = sum_i c_vi k(x_i, .) + b_v``, variables
    ``coef`` ``(K, n)``, ``b``, ``xi``, penalty ``||L^T c_v||^2`` with ``K = L L^T``.

    ``C`` and ``pair_weights`` are ``cvxpy.Parameter``s (``prob.set(C=..., pair_weights=...)``
    re-solves without recompiling).  ``sol.weights``: ``(len(H'), d)`` (or ``(len(H'), n)``)
    with a zero root row, rows in ``H'.nodes`` order, where ``H' = prob.data["hierarchy"]``
    is ``H`` plus self leaves for internal labels; ``sol.values["biases"]`` ``(len(H'),)``.
    Both are centred within sibling groups (margins unchanged, the sum-to-zero constraints
    hold exactly).  Certificate: (8) recomputed; lower bound: (9) at the constraint duals
    made dual feasible (:meth:`_Model.dual_feasible`).
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    Cval = check_positive(C, "C")
    model = _model(X, y, H, kernel, sigma)
    lam0 = _check_pair_weights(pair_weights, model)
    n, M1, P = model.n, model.M - 1, model.pairs.n_pairs
    p = model.X.shape[1] if model.linear else n
    check_size(M1 * p + M1 + n, P + n + n * model.pairs.n_groups, _nnz_estimate(model), max_size,
               what="the sibling-margin SVM primal (2)/(8)")
    D, Exi, Gt = _selection_matrices(model)

    Cp = cp.Parameter(nonneg=True, value=Cval, name="C")
    lam = cp.Parameter(P, nonneg=True, value=lam0, name="pair_weights")
    name_f = "W" if model.linear else "coef"
    F = cp.Variable((M1, p), name=name_f)
    b = cp.Variable(M1, name="b")
    xi = cp.Variable(n, name="xi")
    bias_rows = np.ones((n, 1)) @ cp.reshape(b, (1, M1), order="C")
    if model.linear:
        S = model.X @ F.T + bias_rows
        penalty = 0.5 * cp.sum_squares(F)
    else:
        S = model.K @ F.T + bias_rows
        penalty = 0.5 * cp.sum_squares(model.L.T @ F.T)
    margins = D @ cp.vec(S, order="C")
    pairs = margins + Exi @ xi >= 1
    nonneg = xi >= 0
    # sum_{t in g} f_t(x_i) = 0 for all i  <=>  B z_g = 0 with B = [x~_i, 1] rows and z_g the
    # group sums of (w, b): declared through B's row space so that no equality is redundant
    # (interior-point solvers stop on rank-deficient equalities, e.g. a low-rank Gram matrix)
    Bfeat = model.X if model.linear else model.L
    Vt = _row_space(Bfeat)
    lifted = F.T if model.linear else model.L.T @ F.T
    Z = cp.vstack([lifted @ Gt, cp.reshape(b, (1, M1), order="C") @ Gt])
    sum_zero = (Z == 0) if Vt is None else (Vt @ Z == 0)
    problem = cp.Problem(cp.Minimize(penalty + Cp * cp.sum(xi) + lam @ margins),
                         [pairs, nonneg, sum_zero])

    def functions(v):
        return model.center(_full(v[name_f]), _full(v["b"]))

    def objective(v):
        coef, bb = functions(v)
        return model.primal_value(coef, bb, float(Cp.value), np.asarray(lam.value, float))

    def lower_bound(v, duals):
        lv, Cv = np.asarray(lam.value, float), float(Cp.value)
        return model.dual_value(model.dual_feasible(duals["pairs"], lv, Cv), lv)

    def infeasibility(v):
        coef, bb = _full(v[name_f]), _full(v["b"])
        return model.sum_to_zero_residual(coef, bb) / max(1.0, float(np.abs(bb).max()))

    def extras(v):
        coef, bb = functions(v)
        return {"biases": bb, "weights": coef}

    what = "linear" if model.linear else f"{model.kernel.name} kernel"
    return _HierReference(
        problem, variables={name_f: F, "b": b, "xi": xi}, objective=objective,
        lower_bound=lower_bound, weights=lambda v: functions(v)[0],
        constraints={"pairs": pairs, "xi_nonneg": nonneg, "sum_to_zero": sum_zero},
        parameters={"C": Cp, "pair_weights": lam}, infeasibility=infeasibility,
        name=f"sibling-margin SVM primal (2)/(8), {what}", build_time=time.perf_counter() - t0,
        extras=extras,
        data={"model": model, "hierarchy": model.pairs.hierarchy, "pairs": model.pairs,
              "kernel": model.kernel, "X": model.X, "K": model.K, "D": D})


# ---------------------------------------------------------------------- dual (9)-(11)
def dual(X, y, H, C=1.0, kernel="linear", sigma=None, pair_weights=None, bias="auto",
         keep_delta=False, max_size=None) -> ReferenceProblem:
    """The dual of Appendix B, (9)-(11)::

        max_{beta, delta}  sum_p beta_p - 1/2 ||A^T X||_F^2        (kernel: tr(A^T K A))
        s.t.  beta >= 0,   sum_{p of i} beta_p <= C                 (11)
              sum_i A_iv = 0  for every non-root v                  (10), d/db_v
        A = Gamma(beta - lam) + Delta(delta),  A_iv = sum_{p of i: j_p = v} (beta_p - lam_p)
            - sum_{p of i: t_p = v} (beta_p - lam_p) + delta_{i, par(v)}

    ``beta_p`` is the multiplier of the pair constraint of (8), ``alpha_i = C - sum beta``
    that of ``xi_i >= 0`` (eliminated), and ``delta_{i,s}`` that of the sum-to-zero
    constraint of internal node ``s`` at ``x_i`` -- *free*, since it is an equality (the
    paper writes ``delta >= 0``).  ``lam`` = ``pair_weights`` (DC term; 0 for HSVM).

    ``delta`` drops out: every pair joins two siblings, so the rows of ``Gamma`` sum to 0 over
    each sibling group; summing (10) over a group then forces ``sum_i delta_{i,s} = 0``,
    hence ``sum_i Gamma_iv = 0`` for every ``v``, and ``delta`` only adds the PSD term
    ``|g| ||X^T delta_g||^2`` to the quadratic, so ``delta = 0`` is optimal.  The default
    declaration is therefore ``max sum beta - 1/2 ||Gamma^T X||^2`` s.t. (11) and
    ``E^T (beta - lam) = 0`` (one row per node, one dropped per group as it is implied);
    ``keep_delta=True`` declares (9) literally, with ``delta`` free (same optimum; its free
    directions can stall interior-point solvers on low-rank kernels).

    Recovery.  (10): ``w_v = sum_i A_iv x~_i`` (coefficients ``c_v = A[:, v]``), centred
    per sibling group (which removes ``delta``'s contribution exactly).  Biases
    (``bias="auto"``): the KKT conditions -- ``m_p = 1`` on free support pairs, equal
    margins on an at-bound example's support pairs, ``sum_{v in g} b_v = 0`` -- when they pin
    every bias; otherwise the paper's fallback, the linear program (8) in ``(b, xi)`` with
    ``w`` fixed (``bias="kkt"`` / ``"lp"`` force a route).  ``sol.values``: ``beta``,
    (``delta``), ``weights``, ``biases``, ``bias_route``.  Certificate: (8) at the recovered
    ``(w, b)``; lower bound: the dual objective at ``beta`` made dual feasible.
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    if bias not in ("auto", "kkt", "lp"):
        raise InputError(f"bias must be 'auto', 'kkt' or 'lp', got {bias!r}")
    Cval = check_positive(C, "C")
    model = _model(X, y, H, kernel, sigma)
    lam0 = _check_pair_weights(pair_weights, model)
    n, M1, P, ng = model.n, model.M - 1, model.pairs.n_pairs, model.pairs.n_groups
    if model.linear and model.X.shape[1] <= n:
        LK = model.X
    elif model.linear:
        Xd = model.X.toarray() if sp.issparse(model.X) else model.X
        LK = psd_factor(Xd @ Xd.T)
    else:
        LK = model.L
    r = LK.shape[1]
    check_size(P + (n * ng if keep_delta else 0), n + M1 + P, n * M1 * r + 4 * P + n * M1, max_size,
               what="the sibling-margin SVM dual (9)-(11)")
    D, _, Gt = _selection_matrices(model)
    GtT = Gt.T.tocsr()

    Cp = cp.Parameter(nonneg=True, value=Cval, name="C")
    lam = cp.Parameter(P, nonneg=True, value=lam0, name="pair_weights")
    beta = cp.Variable(P, name="beta")
    Bm = sp.csr_matrix((np.ones(P), (model.pairs.pair_i, np.arange(P))), shape=(n, P))
    nonneg = beta >= 0
    budget = Bm @ beta <= Cp
    A = cp.reshape(D.T @ (beta - lam), (n, M1), order="C")
    variables = {"beta": beta}
    if keep_delta:
        delta = cp.Variable((n, ng), name="delta")
        variables["delta"] = delta
        A = A + delta @ GtT
        stationary = cp.sum(A, axis=0) == 0
    else:
        Eind = model.incidence()[model._independent_rows()]
        stationary = Eind @ (beta - lam) == 0
    problem = cp.Problem(cp.Maximize(cp.sum(beta) - 0.5 * cp.sum_squares(A.T @ LK)),
                         [nonneg, budget, stationary])
    cache: dict = {}

    def coefficients(v):
        Afull = model.gmat(v["beta"] - np.asarray(lam.value, float))
        if keep_delta:
            Afull[:, 1:] += v["delta"] @ GtT.toarray()
        return Afull

    def recover(v):
        key = (v["beta"].tobytes(), v["delta"].tobytes() if keep_delta else b"", float(Cp.value),
               np.asarray(lam.value, float).tobytes())
        if cache.get("key") == key:
            return cache["value"]
        Cv, lv = float(Cp.value), np.asarray(lam.value, float)
        Afull = coefficients(v)
        if model.linear:
            coef = np.asarray((model.X.T @ Afull).T if sp.issparse(model.X) else Afull.T @ model.X)
        else:
            coef = Afull.T
        coef, _ = model.center(coef, np.zeros(model.M))
        bb, route = None, "lp"
        if bias in ("auto", "kkt"):
            bb = model.biases_kkt(coef, v["beta"], Cv)
            route = "kkt"
            if bb is None:
                if bias == "kkt":
                    raise InputError("the KKT conditions do not pin the biases here (no free "
                                     "support pair in some sibling group); use bias='lp' or 'auto'")
                route = "lp"
        if bb is None:
            bb = model.biases_lp(coef, Cv, lv)
        coef, bb = model.center(coef, bb)
        out = {"weights": coef, "biases": bb, "bias_route": route}
        cache["key"], cache["value"] = key, out
        return out

    def objective(v):
        rec = recover(v)
        return model.primal_value(rec["weights"], rec["biases"], float(Cp.value),
                                  np.asarray(lam.value, float))

    def lower_bound(v, duals):
        lv, Cv = np.asarray(lam.value, float), float(Cp.value)
        return model.dual_value(model.dual_feasible(v["beta"], lv, Cv), lv)

    def infeasibility(v):
        bt = v["beta"]
        Cv = float(Cp.value)
        Afull = coefficients(v)
        return max(0.0, float(-bt.min()), float((model.budget(bt) - Cv).max()),
                   float(np.abs(Afull[:, 1:].sum(axis=0)).max()) / max(1.0, Cv))

    what = "linear" if model.linear else f"{model.kernel.name} kernel"
    return _HierReference(
        problem, variables=variables, objective=objective,
        lower_bound=lower_bound, weights=lambda v: recover(v)["weights"],
        constraints={"beta_nonneg": nonneg, "budget": budget, "bias_stationarity": stationary},
        parameters={"C": Cp, "pair_weights": lam}, infeasibility=infeasibility,
        name=f"sibling-margin SVM dual (9)-(11), {what}" + (", with delta" if keep_delta else ""),
        build_time=time.perf_counter() - t0,
        extras=lambda v: dict(recover(v)),
        data={"model": model, "hierarchy": model.pairs.hierarchy, "pairs": model.pairs,
              "kernel": model.kernel, "X": model.X, "K": model.K})


# ---------------------------------------------------------------------- scores of new points
def _solution_parts(solution):
    if isinstance(solution, DCResult):
        return solution.weights, solution.biases
    vals = getattr(solution, "values", None)
    if vals is None or "biases" not in vals:
        raise InputError("solution must be a solved hpsi.primal / hpsi.dual solution or a DCResult")
    return np.asarray(solution.weights, float), np.asarray(vals["biases"], float)


def decision_function(problem: ReferenceProblem, solution, X_new) -> np.ndarray:
    """``f_v(x)`` ``(m, len(H'))`` for new points, columns in ``problem.data["hierarchy"]``
    order: ``X_new W^T + b`` (linear) or ``k(X_new, X_train) C^T + b`` (kernel; for
    ``kernel="precomputed"`` pass the ``(m, n)`` kernel rows)."""
    model: _Model = problem.data["model"]
    coef, b = _solution_parts(solution)
    kern = model.kernel
    if model.linear:
        Xn = check_features(X_new, "X_new")
        if Xn.shape[1] != model.X.shape[1]:
            raise InputError(f"X_new has {Xn.shape[1]} features, the training data {model.X.shape[1]}")
        out = Xn @ coef.T
        return (out.toarray() if sp.issparse(out) else np.asarray(out)) + b[None, :]
    if kern.name == "precomputed":
        Kn = check_features(X_new, "X_new (kernel rows)", allow_sparse=False)
    else:
        Kn = kern(check_features(X_new, "X_new"), model.X)
    if Kn.shape[1] != model.n:
        raise InputError(f"kernel rows need one column per training point ({model.n}), got {Kn.shape}")
    return Kn @ coef.T + b[None, :]


def predict(problem: ReferenceProblem, solution, X_new) -> np.ndarray:
    """``d^H`` on new points, as node names of the caller's hierarchy (a self leaf maps back
    to its internal node)."""
    S = decision_function(problem, solution, X_new)
    pairs: SiblingPairs = problem.data["pairs"]
    idx = predict_top_down(S, pairs.hierarchy, return_index=True)
    return pairs.to_original(idx)


# ---------------------------------------------------------------------- cost (2)
def cost(scores, y, H, C: float, penalty: float = 0.0, loss: str = "psi") -> float:
    """The cost (2) at given scores: ``penalty + C sum_i v(u_min(f(x_i), y_i))``, with
    ``v = psi`` (HPSI) or ``"hinge"`` (HSVM); ``penalty`` is ``J(f)``."""
    if loss not in ("psi", "hinge"):
        raise InputError(f"loss must be 'psi' or 'hinge', got {loss!r}")
    C = check_positive(C, "C")
    u = u_min(scores, y, H)
    fin = np.isfinite(u)
    v = (psi if loss == "psi" else hinge)(np.where(fin, u, 1.0))
    return float(penalty) + C * float(v[fin].sum())


# ---------------------------------------------------------------------- DC algorithm (3)
def linearization(model_or_problem, S: np.ndarray, C: float) -> np.ndarray:
    """The DC linear term of (3) at scores ``S`` ``(n, M)`` as pair weights ``lam``:
    ``lam_p = C`` for the minimizing pair ``p`` of every sample with ``u_min <= 0``
    (``grad psi_2(u) = -1`` there, section 3.4), else 0.  Then
    ``-<f, grad s_2(f^(m-1))> = sum_p lam_p m_p(f)``."""
    model = model_or_problem.data["model"] if isinstance(model_or_problem, ReferenceProblem) \
        else model_or_problem
    u, arg = model.pairs.u_min(S, return_pairs=True)
    lam = np.zeros(model.pairs.n_pairs)
    hit = (u <= 0) & (arg >= 0)
    lam[arg[hit]] = C
    return lam


@dataclass
class DCPath:
    """What every DC route (the reference :func:`dc`, the fast ``sibling_qp.solve_dc``) returns.

    ``weights`` / ``biases``: the best iterate (lowest psi cost), rows in hierarchy order;
    ``objective``: its cost (2) with the psi-loss; ``dc_objectives``: the cost at every iterate,
    first entry the HSVM start; ``best_iteration``, ``n_iter``, ``converged`` (the cost change
    fell below ``tol``).
    """

    weights: np.ndarray
    biases: np.ndarray
    objective: float
    dc_objectives: np.ndarray
    best_iteration: int
    n_iter: int
    converged: bool
    tol: float

    @property
    def values(self) -> dict:
        return {"weights": self.weights, "biases": self.biases}


@dataclass
class DCResult(DCPath):
    """Outcome of :func:`dc` (the fields of :class:`DCPath`, and): ``hsvm`` the certified HSVM
    start; ``problem`` the one compiled problem; ``step_gaps``: the certified relative gap of
    every convex step (first: HSVM); ``compilations``: how many times CVXPY compiled the
    problem (1: every step reused it).
    """

    hsvm: ReferenceSolution
    problem: ReferenceProblem
    compilations: int
    step_gaps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    solve_time: float = 0.0

    def decision_function(self, X_new) -> np.ndarray:
        return decision_function(self.problem, self, X_new)

    def predict(self, X_new) -> np.ndarray:
        return predict(self.problem, self, X_new)


def check_dc_options(tol, max_iter) -> None:
    """The DC loop's stopping options: ``tol >= 0`` (cost change) and ``max_iter >= 0``."""
    if not (np.isfinite(tol) and tol >= 0):
        raise InputError(f"tol must be a non-negative number, got {tol!r}")
    if int(max_iter) < 0:
        raise InputError(f"max_iter must be >= 0, got {max_iter!r}")


@dataclass
class _DCRun:
    path: dict       # the DCPath fields
    gaps: np.ndarray  # certified relative gap of every convex step (first: HSVM)
    results: list    # every step's solution (first: HSVM)


def dc_iterations(model, C: float, tol: float, max_iter: int, step, who: str) -> _DCRun:
    """The DC algorithm (3) around a convex solver, shared by the reference and the fast route.

    ``step(pair_weights)`` solves (8) (``None``: HSVM, the start) and returns ``(weights,
    biases, gap, result)``.  Step ``m`` uses :func:`linearization` at ``f^(m-1)``; the loop stops
    when ``|s(f^(m)) - s(f^(m-1))| <= tol`` or after ``max_iter`` steps (logged as a warning);
    the best iterate (lowest psi cost) is kept.
    """
    coef, b, gap, res = step(None)
    costs, gaps, results = [model.psi_value(coef, b, C)], [gap], [res]
    best = (costs[0], 0, coef, b)
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        coef, b, gap, res = step(linearization(model, model.scores(coef, b), C))
        costs.append(model.psi_value(coef, b, C))
        gaps.append(gap)
        results.append(res)
        logger.debug("%s step %d: cost %.10g (gap %.2e)", who, it, costs[-1], gap)
        if costs[-1] < best[0]:
            best = (costs[-1], it, coef, b)
        if abs(costs[-1] - costs[-2]) <= tol:
            converged = True
            break
    if not converged and max_iter > 0:
        logger.warning("%s: no convergence within max_iter=%d (last change %.3g > tol=%g)",
                       who, max_iter, abs(costs[-1] - costs[-2]), tol)
    path = dict(weights=best[2], biases=best[3], objective=float(best[0]),
                dc_objectives=np.asarray(costs), best_iteration=int(best[1]), n_iter=it,
                converged=converged or max_iter == 0, tol=float(tol))
    return _DCRun(path, np.asarray(gaps), results)


def dc(X, y, H, C=1.0, kernel="linear", sigma=None, tol=1e-6, max_iter=50, solver=None,
       gap_tol=1e-6, max_size=None, **solver_options) -> DCResult:
    """HPSI: minimize (2) with the psi-loss by the DC algorithm (3).

    ``s = s_1 - s_2`` with ``s_1 = J + C sum psi_1(u_min)`` (HSVM's cost) and
    ``s_2 = C sum psi_2(u_min)``, ``psi_1 = (1 - u)_+``, ``psi_2 = (-u)_+``.  Start from
    the HSVM solution ``f^(0)``; step ``m`` minimizes the convex majorant
    ``s_1(f) - <f, grad s_2(f^(m-1))>``, i.e. :func:`primal` with ``pair_weights`` =
    :func:`linearization` at ``f^(m-1)`` -- one compiled problem, re-solved after
    ``prob.set(pair_weights=...)``.  Stop when ``|s(f^(m)) - s(f^(m-1))| <= tol`` (absolute,
    as in the paper) or after ``max_iter`` steps; return the best iterate.  Each step is
    certified (``gap_tol``); the cost never increases (up to the steps' solver accuracy).
    """
    C = check_positive(C, "C")
    check_dc_options(tol, max_iter)
    t0 = time.perf_counter()
    prob = primal(X, y, H, C=C, kernel=kernel, sigma=sigma, max_size=max_size)
    model: _Model = prob.data["model"]
    compiled: list = []

    def step(pair_weights):
        if pair_weights is not None:
            prob.set(pair_weights=pair_weights)
        sol = prob.solve(solver, gap_tol=gap_tol, **solver_options)
        pp = prob.problem._cache.param_prog
        if pp is None or not compiled or compiled[-1] is not pp:
            compiled.append(pp)
        return sol.weights, sol.values["biases"], sol.gap, sol

    run = dc_iterations(model, C, tol, max_iter, step, "hpsi.dc")
    prob.set(pair_weights=np.zeros(model.pairs.n_pairs))
    return DCResult(**run.path, hsvm=run.results[0], problem=prob, compilations=len(compiled),
                    step_gaps=run.gaps, solve_time=time.perf_counter() - t0)
