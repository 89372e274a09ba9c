"""The numpy model of the sibling-margin SVM (HSVM) and HPSI of Wang, Shen & Pan.

Source: *Large Margin Hierarchical Classification with Mutually Exclusive Class Membership*
(Huixin Wang, Xiaotong Shen, Wei Pan, JMLR 12, 2011), sections 2-3 and Appendix B; the sheet
``formulations/hpsi.md`` has the equations and the paper's typos.

``H`` is a tree with root 0; every non-root node ``v`` has ``f_v(x) = w_v^T x~ + b_v``
(linear: ``x~ = x``; kernel: ``x~ = (k(x_1, x), ..., k(x_n, x))``, ``||w_v||^2 = c_v^T K c_v``).
For a label ``y`` the pairs ``Q(y) = {(j, t): t in sib(j), j in anc(y) + {y}}`` (Appendix B,
(8)) give the generalized margin ``u_min(f(x), y) = min_{(j, t) in Q(y)} f_j(x) - f_t(x)``
(section 3.1).  The cost (2) is ``1/2 sum_v ||w_v||^2 + C sum_i v(u_min(f(x_i), y_i))`` under
the sum-to-zero constraints of Theorem 1, with ``v`` the hinge (HSVM) or the psi-loss (HPSI).

:func:`prepare` validates ``(X, y, H, kernel, sigma)`` once and returns a
:class:`SiblingModel`: pairs, groups, the (kernel) data, the cost (2)/(8) at given functions,
the dual (9) at a repaired dual feasible point, the bias recoveries of Appendix B, and the DC
linearization of (3).  :mod:`hiercvx.formulations.hpsi` declares the CVXPY problems from it,
:mod:`hiercvx.solvers.sibling_qp` and :mod:`hiercvx.solvers.dc` solve on it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.linalg import lsqr

from .._sparse import expand_ranges
from .._validation import check_features, check_positive
from ..exceptions import HierarchyError, InputError, LabelError, SolverError
from ..hierarchy import Hierarchy, PartialPaths
from ..kernels import Kernel, check_psd, make_kernel, psd_factor
from ._base import Model, Variable

logger = logging.getLogger(__name__)

__all__ = ["prepare", "SiblingModel", "SiblingPairs", "sibling_pairs", "checked_inputs",
           "group_matrix", "check_tree", "node_pair_table", "check_pair_weights",
           "predict_top_down", "u_min", "psi", "hinge", "cost", "linearization"]

# ---------------------------------------------------------------------- losses of u
def hinge(u) -> np.ndarray:
    """``(1 - u)_+``, the HSVM loss (section 3.2)."""
    return np.maximum(0.0, 1.0 - np.asarray(u, dtype=float))


def psi(u) -> np.ndarray:
    """The psi-loss of section 3.2: 1 for ``u < 0``, ``1 - u`` on ``[0, 1)``, 0 for ``u >= 1``,
    i.e. ``min(1, (1 - u)_+) = psi_1(u) - psi_2(u)`` with ``psi_1 = (1 - u)_+``, ``psi_2 = (-u)_+``."""
    return np.clip(1.0 - np.asarray(u, dtype=float), 0.0, 1.0)


# ---------------------------------------------------------------------- hierarchy and pairs
def check_tree(H) -> Hierarchy:
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




def node_pair_table(H: Hierarchy, nodes=None):
    """The pairs ``Q(v)`` of the nodes ``v`` in ``nodes`` (node indices; default: every node)
    as CSR over that list: ``ptr`` (len(nodes) + 1), ``pos``, ``neg``.

    ``Q(v) = Q(par(v)) + {(v, t): t in sib(v)}``, each node's own part listed once and the
    paths built from the parts of its ancestors, root first.  Only the requested nodes and
    their ancestors are visited, so the work is the size of the output (on a star with a few
    labelled leaves, not the square of the number of leaves).
    """
    M = len(H)
    parent = H.parent_index
    children = H.children_indices
    nodes = np.arange(M) if nodes is None else np.asarray(nodes, dtype=np.int64)
    own: dict = {0: (np.zeros(0, np.int64), np.zeros(0, np.int64))}

    def own_part(v):
        if v not in own:
            sib = np.asarray(children[parent[v]], dtype=np.int64)
            sib = sib[sib != v]
            own[v] = (np.full(len(sib), v, dtype=np.int64), sib)
        return own[v]

    def path(v):
        out = []
        while v != 0:
            out.append(v)
            v = parent[v]
        return out[::-1]

    pos_lists, neg_lists = [], []
    for v in nodes:
        parts = [own_part(a) for a in path(int(v))]
        pos_lists.append(np.concatenate([p for p, _ in parts]) if parts else own[0][0])
        neg_lists.append(np.concatenate([q for _, q in parts]) if parts else own[0][1])
    counts = np.fromiter((len(a) for a in pos_lists), dtype=np.int64, count=len(nodes))
    ptr = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    if not len(nodes):
        return ptr, np.zeros(0, np.int64), np.zeros(0, np.int64)
    return ptr, np.concatenate(pos_lists), np.concatenate(neg_lists)


def names_array(H: Hierarchy) -> np.ndarray:
    """Node names as an array (int64 when every name is an integer, else object)."""
    names = H.nodes
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in names):
        return np.asarray(names, dtype=np.int64)
    out = np.empty(len(names), dtype=object)
    for k, v in enumerate(names):  # element-wise: tuple names must not be unpacked
        out[k] = v
    return out


def label_indices(y, H: Hierarchy) -> np.ndarray:
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
        names = names_array(self.hierarchy)[idx]
        if self.partial_paths is None:
            return names
        back = self.partial_paths.inverse_transform(list(names))
        return as_label_array(back)


def as_label_array(labels) -> np.ndarray:
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
    H = check_tree(H)
    idx = label_indices(y, H)
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
    used, slot = np.unique(idx, return_inverse=True)
    ptr, qpos, qneg = node_pair_table(H, used)       # only the labels' paths
    counts = ptr[slot + 1] - ptr[slot]
    sel = expand_ranges(ptr[slot], counts)
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
def score_matrix(scores, H: Hierarchy, X=None) -> np.ndarray:
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
    S = score_matrix(scores, H, X)
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
    return current if return_index else names_array(H)[current]


def u_min(scores, y, H: Hierarchy, *, X=None, return_pairs: bool = False):
    """The generalized functional margin of section 3.1 for every sample:
    ``u_min(f(x_i), y_i) = min_{(j, t) in Q(y_i)} f_j(x_i) - f_t(x_i)``.

    ``scores`` as in :func:`predict_top_down`; ``y`` node names of ``H`` (an internal node
    keeps the paper's literal ``Q(y)``).  ``+inf`` when ``Q(y)`` is empty.  With
    ``return_pairs`` also each sample's minimizing pair as ``(j, t)`` node names (``None``
    when there is none).
    """
    pairs = sibling_pairs(y, H, partial_paths=False)
    S = score_matrix(scores, H, X)
    if S.shape[0] != pairs.n_samples:
        raise InputError(f"scores have {S.shape[0]} rows but y has {pairs.n_samples} labels")
    u, arg = pairs.u_min(S, return_pairs=True)
    if not return_pairs:
        return u
    names = H.nodes
    which = [None if a < 0 else (names[pairs.pair_pos[a]], names[pairs.pair_neg[a]]) for a in arg]
    return u, which


@dataclass(eq=False)
class SiblingModel(Model):
    """The problem (2)/(8) of Wang, Shen & Pan on validated data, in numpy.

    Functions are ``(M, p)`` arrays over all nodes of the working hierarchy
    ``pairs.hierarchy`` (``H`` plus a self leaf under every internal label; root row zero):
    ``p = d`` weights (linear) or ``p = n`` representer coefficients (kernel), with the
    biases ``b`` ``(M,)`` alongside.  Kernel: ``K`` is the symmetrized Gram matrix and ``L``
    is ``None`` (the fast solver needs no eigendecomposition); :meth:`factored` returns the
    model the CVXPY declarations use, with ``K = L L^T`` its PSD part and the factor ``L``.
    """

    method = "sibling_svm"
    equations = {"primal": "(2), (8)", "dual": "(9)-(11)", "dc": "(3)"}
    variables = {
        "W": Variable("(M, d) or (M, n)", "node weights w_v (linear) or representer "
                      "coefficients c_v (kernel), rows in the working hierarchy's order"),
        "b": Variable("(M,)", "node biases b_v"),
        "xi": Variable("(n,)", "slacks: the hinge of u_min(f(x_i), y_i)"),
        "beta": Variable("(P,)", "multipliers of the pair constraints of (8), budget C per "
                         "sample (11)", side="dual"),
    }

    pairs: SiblingPairs
    X: Any
    kernel: Kernel
    linear: bool
    K: np.ndarray | None        # Gram matrix (kernel form only); L L^T once factored
    L: np.ndarray | None        # its PSD factor (n, r), set by factored()
    group_matrix: sp.csr_matrix  # (n_groups, M) membership
    group_size: np.ndarray
    _factored: Any = field(default=None, repr=False)

    def factored(self) -> "SiblingModel":
        """The model with ``K = L L^T`` and ``L`` its PSD factor (:func:`psd_factor`), as the
        CVXPY declarations need (``x^T K x = ||L^T x||^2``); computed once.  Linear: self."""
        if self.linear or self.L is not None:
            return self
        if self._factored is None:
            L = psd_factor(self.K)
            self._factored = replace(self, K=L @ L.T, L=L, _factored=None)
        return self._factored

    # -- the Model interface
    def objective(self, weights, *, biases, C=1.0, pair_weights=None) -> float:
        """(8) at ``(weights, biases)`` (centred first): HSVM (2) when ``pair_weights`` is None."""
        coef, b = self.center(np.asarray(weights, float), np.asarray(biases, float))
        lam = None if pair_weights is None else check_pair_weights(pair_weights, self)
        return self.primal_value(coef, b, float(C), lam)

    def objective_at(self, solution, **params) -> float:
        """:meth:`objective` at a solution's weights and its biases (``values`` or ``extras``)."""
        biases = solution.values.get("biases", solution.extras.get("biases"))
        if biases is None:
            raise InputError("the solution carries no biases (values['biases'] or "
                             "extras['biases']); call objective(weights, biases=...)")
        return self.objective(solution.weights, biases=biases, **params)

    def lower_bound(self, dual, *, C=1.0, pair_weights=None) -> float:
        """(9) at the pair multipliers ``dual`` made dual feasible (:meth:`dual_feasible`)."""
        lam = check_pair_weights(pair_weights, self)
        return self.dual_value(self.dual_feasible(np.asarray(dual, float), lam, float(C)), lam)

    def scores(self, weights, X, biases=None) -> np.ndarray:
        """``f_v(x)`` ``(m, M)`` of new points: ``X W^T + b`` (linear) or ``k(X, X_train) C^T + b``
        (kernel; for ``kernel="precomputed"`` pass the ``(m, n)`` kernel rows)."""
        coef = np.asarray(weights, float)
        b = np.zeros(self.M) if biases is None else np.asarray(biases, float)
        if self.linear:
            Xn = check_features(X, "X_new")
            if Xn.shape[1] != self.X.shape[1]:
                raise InputError(f"X_new has {Xn.shape[1]} features, the training data has "
                                 f"{self.X.shape[1]}")
            out = Xn @ coef.T
            return (out.toarray() if sp.issparse(out) else np.asarray(out)) + b[None, :]
        if self.kernel.name == "precomputed":
            Kn = check_features(X, "X_new (kernel rows)", allow_sparse=False)
        else:
            Xn = check_features(X, "X_new")
            if Xn.shape[1] != self.X.shape[1]:
                raise InputError(f"X_new has {Xn.shape[1]} features, the training data has "
                                 f"{self.X.shape[1]}")
            support = np.flatnonzero(np.any(coef != 0, axis=0))
            Kn = np.zeros((Xn.shape[0], self.n))
            if support.size:
                Kn[:, support] = self.kernel(Xn, self.X[support])
        if Kn.shape[1] != self.n:
            raise InputError(f"kernel rows need one column per training point ({self.n}), "
                             f"got shape {Kn.shape}")
        return Kn @ coef.T + b[None, :]

    def oracle(self, scores, *args, **kwargs):
        """The most violated pair of every training sample: ``(u_min, pair index)`` from the
        node scores ``(n, M)`` (``-1`` where ``Q(y_i)`` is empty)."""
        return self.pairs.u_min(np.asarray(scores, float), return_pairs=True)

    def predict(self, weights, biases, X) -> np.ndarray:
        """``d^H`` at new points, as node names of the caller's hierarchy."""
        idx = predict_top_down(self.scores(weights, X, biases), self.pairs.hierarchy,
                               return_index=True)
        return self.pairs.to_original(idx)

    @property
    def n(self) -> int:
        return self.pairs.n_samples

    @property
    def M(self) -> int:
        return self.pairs.n_nodes

    # -- functions
    def coefficients(self, Z: np.ndarray) -> np.ndarray:
        """Rows of feature weights -> rows of the model's weights: the identity (linear), or
        the representer coefficients ``c_v = L diag(1/s) z_v`` of ``z_v = L^T c_v`` (kernel;
        ``s`` the kept eigenvalues, ``L^T L = diag(s)``), the ones in the span of ``L``."""
        if self.linear:
            return Z
        s = np.einsum("ij,ij->j", self.L, self.L)
        return Z @ (self.L / s).T

    def train_scores(self, coef: np.ndarray, b: np.ndarray) -> np.ndarray:
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
        if self.L is None:
            return 0.5 * float(np.sum(coef * (coef @ self.K)))
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
        S = self.train_scores(coef, b)
        return float(np.abs(S @ self.group_matrix.T).max())

    # -- costs
    def hinge_terms(self, S: np.ndarray) -> np.ndarray:
        u = self.pairs.u_min(S)
        return np.where(np.isfinite(u), hinge(np.where(np.isfinite(u), u, 0.0)), 0.0)

    def primal_value(self, coef, b, C: float, lam: np.ndarray | None = None) -> float:
        """(8): ``J(f) + C sum_i (1 - u_min)_+ + sum_p lam_p m_p(f)``."""
        S = self.train_scores(coef, b)
        val = self.penalty(coef) + C * float(self.hinge_terms(S).sum())
        if lam is not None:
            val += float(lam @ self.pairs.margins(S))
        return val

    def psi_value(self, coef, b, C: float) -> float:
        """(2) with the psi-loss: ``J(f) + C sum_i psi(u_min(f(x_i), y_i))``."""
        S = self.train_scores(coef, b)
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
        if self.L is None:
            return float(np.sum(A * (self.K @ A)))
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
            # not a warning: the weak bound shows in the gap, which every caller checks (the
            # fast solver tries this as one of several repairs, often mid-path)
            logger.debug("hpsi: could not make the solver's duals satisfy the bias condition (10); "
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
        keep = self.independent_rows()
        r = r[keep]
        Es = self.incidence()[keep][:, cols]
        Bs = sp.csr_matrix((np.ones(cols.size), (pr.pair_i[cols], np.arange(cols.size))),
                           shape=(self.n, cols.size))[dc_rows]
        A = sp.vstack([Es, Bs]).tocsr()
        rhs = np.r_[-r, np.zeros(dc_rows.size)]
        if A.shape[0] * A.shape[1] <= 4_000_000:
            delta = np.linalg.lstsq(A.toarray(), rhs, rcond=None)[0]   # least-norm solution
        else:  # pragma: no cover - large references
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
        pr = self.pairs
        P = pr.n_pairs
        # scale: large enough that round-off of the data (~1e-16 C) stays below HiGHS'
        # tolerances, small enough that the needed change is of order one
        s = max(float(np.abs(r).max()), 1e-7 * max(1.0, C))
        E = self.incidence()
        used = self.independent_rows()             # each group's rows sum to zero: drop one
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

    def independent_rows(self) -> np.ndarray:
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
        S0 = self.train_scores(coef, np.zeros(self.M))
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
        pr = self.pairs
        S0 = self.train_scores(coef, np.zeros(self.M))
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

class PsiModel(SiblingModel):
    """HPSI: the problem (2) with the psi-loss instead of the hinge (Wang, Shen & Pan).  Not
    convex: :meth:`objective` is the psi cost, the quantity the DC algorithm (3) decreases;
    :meth:`lower_bound` (inherited) bounds one convex DC majorant (8), not (2) itself."""

    method = "hpsi"
    equations = {"primal": "(2) with psi", "dc": "(3)", "convex step": "(8)"}

    def objective(self, weights, *, biases, C=1.0, pair_weights=None) -> float:
        """(2) with the psi-loss at ``(weights, biases)`` (centred first); ``pair_weights`` is
        accepted for the interface and not used (the psi cost has no linear term)."""
        coef, b = self.center(np.asarray(weights, float), np.asarray(biases, float))
        return self.psi_value(coef, b, float(C))


def prepare_psi(X, y, H, kernel="linear", sigma=None) -> PsiModel:
    """:func:`prepare` for HPSI: the same validated data as a :class:`PsiModel`."""
    model = prepare(X, y, H, kernel, sigma)
    return PsiModel(**{f.name: getattr(model, f.name) for f in fields(model)})


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


def prepare(X, y, H, kernel="linear", sigma=None) -> SiblingModel:
    """Validate the inputs of (2) once and return the :class:`SiblingModel` (Gram form for a
    kernel; the CVXPY declarations call :meth:`SiblingModel.factored`).  ``y``: one node name
    of the tree ``H`` per sample (internal nodes get a self leaf); ``kernel``: ``"linear"``,
    ``"rbf"`` (``sigma`` or the between-class median of section 4.1), ``"precomputed"`` (``X``
    the Gram matrix), a callable ``k(A, B)`` or a :class:`~hiercvx.kernels.Kernel`."""
    X, pairs, kern = checked_inputs(X, y, H, kernel, sigma)
    Gm, gsize = group_matrix(pairs)
    if kern.is_linear:
        return SiblingModel(pairs=pairs, X=X, kernel=kern, linear=True, K=None, L=None,
                            group_matrix=Gm, group_size=gsize)
    K = np.ascontiguousarray(kern(X), dtype=float)
    if kern.name not in ("rbf", "precomputed"):  # precomputed: checked in checked_inputs
        check_psd(K, what=f"{kern.name} kernel matrix")
    return SiblingModel(pairs=pairs, X=X, kernel=kern, linear=False, K=0.5 * (K + K.T), L=None,
                        group_matrix=Gm, group_size=gsize)


def check_pair_weights(pair_weights, model: "SiblingModel") -> np.ndarray:
    """The DC term ``lam`` of (8) (``None``: zeros, HSVM), refused unless it has one finite
    non-negative entry per pair."""
    P = model.pairs.n_pairs
    if pair_weights is None:
        return np.zeros(P)
    lam = np.asarray(pair_weights, dtype=float)
    if lam.shape != (P,) or not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise InputError(f"pair_weights must be {P} finite non-negative numbers, one per pair of "
                         "sibling_pairs(y, H) (the DC linearization of (3)); see hpsi.linearization")
    return lam


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
def linearization(model: SiblingModel, S: np.ndarray, C: float,
                  tie_rtol: float = 0.0) -> np.ndarray:
    """The DC linear term of (3) at scores ``S`` ``(n, M)`` as pair weights ``lam``:
    ``lam_p = C`` for a minimizing pair ``p`` of every sample with ``u_min <= 0``
    (``grad psi_2(u) = -1`` there, section 3.4), else 0.  Then
    ``-<f, grad s_2(f^(m-1))> = sum_p lam_p m_p(f)``.

    Ties: pairs whose margin is within ``tie_rtol max(1, |u_min|)`` of ``u_min`` count as
    minimizing and the first of them (root first) is taken (``tie_rtol=0``: exact ties only).
    The DC loop (:func:`hiercvx.solvers.dc.dc_iterations`) passes a tolerance above the
    convex steps' accuracy, so that two solvers whose scores differ by that accuracy pick the
    same subgradient (siblings without data tie exactly, and at small ``C`` every margin is
    near 0).  Any pair gives a majorant (``-C u_min(f) >= -C m_p(f)`` for every ``f``); a
    near-tie pair makes it tight at ``f^(m-1)`` to ``C tie_rtol`` per sample instead of exactly.
    """
    pr = model.pairs
    lam = np.zeros(pr.n_pairs)
    if pr.n_pairs == 0:
        return lam
    u = pr.u_min(S)
    m = pr.margins(S)
    ui = u[pr.pair_i]
    cand = np.flatnonzero((ui <= 0) & (m <= ui + tie_rtol * np.maximum(1.0, np.abs(ui))))
    if cand.size:
        first = np.r_[True, pr.pair_i[cand[1:]] != pr.pair_i[cand[:-1]]]
        lam[cand[first]] = C
    return lam
