"""Argmax over label sets of a hierarchy: tree DP, DAG integer program (19), its LP relaxation,
brute force.

The multi-label space of the Normalized Hierarchical SVM paper (section 3) is
``Y_m = {anc(L) : L a non-empty set of leaves}``: label sets that are

* ancestor-closed (every parent of a chosen node is chosen, so the root is always in),
* extendable downwards (every chosen internal node has at least one chosen child), and
* non-empty (at least one leaf is chosen).

Given node scores ``s`` (``s_n = sqrt(alpha_n) W_n . x`` for NHSVM, ``W_n . x`` for the plain
hierarchical SVM), prediction and loss-augmented inference ask for
``argmax_{y in Y_m} sum_{n in y} s_n``, the paper's eq. (18) once a decomposable loss has
been folded into the scores.  With ``z`` the indicator of ``y`` this is the integer program
(19) of the paper, written here as a maximization (the paper's ``argmin`` of ``z . r`` with
``r = -s``)::

    max  s . z   over z in {0, 1}^M
    s.t. z_c <= z_p                    for every edge p -> c        (closure)
         sum_{c in C(n)} z_c >= z_n    for every internal node n    (a chosen node has a chosen child)
         sum_{l in leaves} z_l >= 1                                  (non-empty)
         z_root = 1

Methods (all share one entry point, :func:`best_label_set`, and one reusable object,
:class:`LabelSetOracle`):

``"dp"``         O(M) dynamic program on trees, vectorized over samples (refuses DAGs).
``"ilp"``        the integer program (19) with HiGHS (``highspy``) or Gurobi; trees and DAGs.
``"lp"``         its LP relaxation; samples whose LP optimum is fractional are re-solved with
                 the integer program and reported (``InferenceInfo.fell_back``).
``"enumerate"``  brute force over ``Y_m`` (one set per non-empty leaf subset), tiny graphs only.
``"auto"``       ``"dp"`` on trees; on DAGs ``"enumerate"`` when there are at most
                 :data:`ENUMERATE_AUTO_LEAVES` leaves (at most 1023 sets: one matrix product
                 beats a program per sample by orders of magnitude), else ``"ilp"``.

Ties are broken deterministically: the DP adds an optional child only when its subtree
gains strictly (> 0) and, when it must add one, takes the first best child in ``H.nodes``
order; enumeration returns the first best leaf subset in bit order; the solvers are
deterministic for a given input.  Different methods may return different optimal sets on
exact ties; their objective values agree.  HiGHS runs with its tightest reduced-cost and MIP
tolerances (1e-10), so near-ties are resolved exactly down to about that level.

:func:`reference` declares (19) and its LP relaxation in CVXPY and returns a certified
:class:`~hiercvx.result.Solution` (integrality check, the LP's Lagrangian bound, the gap
between them); the tests check the HiGHS fast path against it.

Also here: :func:`best_leaf` (the single-label rule, argmax over ``Y_s``),
:class:`DecomposableLoss` and :func:`loss_augmented_scores` (a node-decomposable loss turned
into added node scores), :func:`is_valid_label_set` and :func:`enumerate_label_sets`.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass

import cvxpy as cp
import highspy
import numpy as np
import scipy.sparse as sp
from numba import njit
from tqdm.auto import tqdm

try:  # optional (extra "gurobi"): needs a licence
    import gurobipy as gp
except ImportError:  # pragma: no cover - depends on the environment
    gp = None

from .exceptions import (
    HierarchyError,
    InputError,
    LabelError,
    ProblemTooLargeError,
    SolverError,
    SolverUnavailableError,
)
from .hierarchy import Hierarchy
from .result import OPTIMAL, Solution

logger = logging.getLogger(__name__)

__all__ = [
    "METHODS",
    "best_label_set",
    "best_leaf",
    "LabelSetOracle",
    "InferenceInfo",
    "DecomposableLoss",
    "loss_augmented_scores",
    "is_valid_label_set",
    "enumerate_label_sets",
    "auto_method",
    "label_set_scores",
    "reference",
]

METHODS = ("auto", "dp", "ilp", "lp", "enumerate")
SOLVERS = ("highs", "gurobi")

#: Largest hierarchy :func:`enumerate_label_sets` accepts by default (2^leaves sets).
ENUMERATE_MAX_NODES = 20
#: ``"auto"`` enumerates a DAG's label sets up to this many leaves (``2^10 - 1`` sets).
ENUMERATE_AUTO_LEAVES = 10

#: Distance from {0, 1} above which an LP coordinate counts as fractional.
INTEGRALITY_TOL = 1e-6

# Entries of one (samples x nodes) work array: the DP runs fastest on cache-sized blocks;
# enumeration bounds the memory of its (samples x sets) value matrix.
_DP_CHUNK_ENTRIES = 1 << 18
_CHUNK_ENTRIES = 1 << 22


# ---------------------------------------------------------------------- input checks
def _check_hierarchy(H) -> Hierarchy:
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}; build one with "
                         "Hierarchy.from_parents / from_edges / from_paths")
    return H


def _check_scores(scores, H: Hierarchy, name: str = "scores") -> tuple[np.ndarray, bool]:
    """Scores as a float ``(n_samples, n_nodes)`` array, and whether the input was 1-D."""
    if sp.issparse(scores):
        scores = scores.toarray()
    try:
        arr = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric array over H.nodes: {exc}") from None
    M = len(H)
    if arr.ndim == 1:
        single = True
        arr = arr[None, :]
    elif arr.ndim == 2:
        single = False
    else:
        raise InputError(f"{name} must have shape (n_nodes,) = ({M},) or (n_samples, n_nodes) = "
                         f"(n, {M}), got shape {arr.shape}")
    if arr.shape[1] != M:
        raise InputError(f"{name} has {arr.shape[1]} columns but the hierarchy has {M} nodes; "
                         f"give one score per node of H.nodes (root included), shape (n, {M})")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        where = f"node {H.nodes[bad[1]]!r}" if single else f"sample {bad[0]}, node {H.nodes[bad[1]]!r}"
        raise InputError(f"{name} has non-finite entries (NaN or inf), first at {where}; check the "
                         "weights or features that produced them")
    return arr, single


def _check_indicator(indicator, H: Hierarchy, name: str) -> np.ndarray:
    """A 0/1 (or bool) array over ``H.nodes`` as bool, 1-D or 2-D (not reshaped)."""
    if sp.issparse(indicator):
        indicator = indicator.toarray()
    arr = np.asarray(indicator)
    if arr.ndim not in (1, 2) or arr.shape[-1] != len(H):
        raise LabelError(f"{name} must have shape ({len(H)},) or (n_samples, {len(H)}) (one column "
                         f"per node of H.nodes), got shape {arr.shape}; build it with H.closure(labels)")
    if arr.dtype != bool:
        try:
            num = arr.astype(float)
        except (TypeError, ValueError):
            raise LabelError(f"{name} must be a 0/1 or boolean array, got dtype {arr.dtype}") from None
        if not np.all((num == 0) | (num == 1)):
            raise LabelError(f"{name} must contain only 0/1 (or True/False) entries; "
                             "build it with H.closure(labels)")
        arr = num == 1
    return arr


# ---------------------------------------------------------------------- label-set helpers
def label_set_scores(scores, indicator) -> np.ndarray:
    """``sum_{n in y} s_n`` for each row: the potential gamma(x, y) of the paper's eq. (1)."""
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    indicator = np.atleast_2d(np.asarray(indicator, dtype=bool))
    return np.where(indicator, scores, 0.0).sum(axis=1)


def is_valid_label_set(indicator, H: Hierarchy) -> np.ndarray:
    """Per row: is the set a member of the multi-label space ``Y_m`` (section 3 / (19))?

    True when the root is chosen, every chosen node's parents are chosen, every chosen
    internal node has a chosen child, and at least one leaf is chosen.  Returns a bool array
    of shape ``(n_samples,)`` (length 1 for a 1-D input).
    """
    H = _check_hierarchy(H)
    Z = np.atleast_2d(_check_indicator(indicator, H, "indicator"))
    parent, child = H.edge_index[:, 0], H.edge_index[:, 1]
    closed = ~np.any(Z[:, child] & ~Z[:, parent], axis=1)
    internal = ~H.leaf_mask
    # child_of[p, c] = 1 for each edge; chosen children per node = child_of @ z
    child_of = sp.csr_matrix((np.ones(len(parent), dtype=np.int64), (parent, child)),
                             shape=(len(H), len(H)))
    n_chosen_children = np.asarray((child_of @ Z.T.astype(np.int64)).T)
    extendable = ~np.any(Z[:, internal] & (n_chosen_children[:, internal] == 0), axis=1)
    has_leaf = np.any(Z[:, H.leaf_mask], axis=1)
    return Z[:, 0] & closed & extendable & has_leaf


def auto_method(H: Hierarchy, max_nodes: int = ENUMERATE_MAX_NODES) -> str:
    """What ``method="auto"`` runs on ``H``: ``"dp"`` on trees, ``"enumerate"`` on DAGs with at
    most :data:`ENUMERATE_AUTO_LEAVES` leaves and ``max_nodes`` nodes, ``"ilp"`` otherwise."""
    if H.is_tree:
        return "dp"
    if len(H.leaf_indices) <= ENUMERATE_AUTO_LEAVES and len(H) <= max_nodes:
        return "enumerate"
    return "ilp"


def enumerate_label_sets(H: Hierarchy, max_nodes: int = ENUMERATE_MAX_NODES) -> np.ndarray:
    """Every member of ``Y_m = {anc(L) : L non-empty set of leaves}`` as a bool ``(n_sets, M)``.

    Distinct leaf subsets give distinct sets (a leaf is nobody's ancestor), so there are
    ``2^|leaves| - 1`` of them, listed in increasing bit order of ``L`` (bit k = k-th leaf of
    ``H.leaf_indices``).  Refuses hierarchies with more than ``max_nodes`` nodes.
    """
    H = _check_hierarchy(H)
    if len(H) > max_nodes:
        raise ProblemTooLargeError(
            f"enumeration lists 2^{len(H.leaf_indices)} - 1 label sets; the hierarchy has {len(H)} "
            f"nodes, over the limit max_nodes={max_nodes}. Use method='dp' (trees) or 'ilp' (DAGs), "
            "or raise max_nodes if you really want brute force")
    leaves = H.leaf_indices
    k = len(leaves)
    masks = np.arange(1, 1 << k, dtype=np.int64)
    chosen_leaves = ((masks[:, None] >> np.arange(k)) & 1).astype(np.int32)   # (n_sets, k)
    anc_of_leaf = H.ancestor_matrix[leaves].astype(np.int32)                   # (k, M)
    return np.asarray((anc_of_leaf.T @ chosen_leaves.T).T > 0)


# ---------------------------------------------------------------------- decomposable losses
@dataclass(frozen=True)
class DecomposableLoss:
    """A loss that decomposes over nodes (NHSVM section 7.1)::

        Delta(y, t) = sum_n  fp_n * 1{n in y, n not in t}  +  fn_n * 1{n not in y, n in t}

    for a predicted set ``y`` and a true set ``t``.  Because ``1{n not in y} = 1 - 1{n in y}``,

        Delta(y, t) = sum_{n in y} a_n(t) + c(t),   a_n(t) = fp_n [n not in t] - fn_n [n in t],
                                                     c(t)   = sum_{n in t} fn_n,

    so loss-augmented inference ``argmax_y s(y) + Delta(y, t)`` is plain inference on the
    scores ``s + a(t)`` (:meth:`node_terms`).  ``false_positive`` / ``false_negative`` are
    finite non-negative arrays over ``H.nodes``.
    """

    false_positive: np.ndarray
    false_negative: np.ndarray

    def __post_init__(self):
        for name in ("false_positive", "false_negative"):
            w = np.asarray(getattr(self, name), dtype=float)
            if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise InputError(f"{name} costs must be a finite non-negative 1-D array over the "
                                 f"nodes, got {w!r}")
            w = w.copy()
            w.flags.writeable = False
            object.__setattr__(self, name, w)
        if self.false_positive.shape != self.false_negative.shape:
            raise InputError(f"false_positive has {self.false_positive.shape[0]} entries but "
                             f"false_negative has {self.false_negative.shape[0]}; give one per node")

    @classmethod
    def hamming(cls, H: Hierarchy, on: str = "nodes", weight=1.0) -> "DecomposableLoss":
        """Symmetric-difference losses of the paper.

        ``on="nodes"``: Delta^H(y, t) = |y xor t| over all nodes (the Hamming loss of eq. (2)).
        ``on="leaves"``: Delta_L(y, t) = |(y xor t) cap leaves|, the decomposing surrogate of
        section 7.1 (its per-node terms are the ``+-1`` leaf terms of ``r_n`` below (19)).
        ``weight``: a scalar or one weight per node (multiplies both error kinds).
        """
        H = _check_hierarchy(H)
        if on == "nodes":
            mask = np.ones(len(H))
        elif on == "leaves":
            mask = H.leaf_mask.astype(float)
        else:
            raise InputError(f"on must be 'nodes' or 'leaves', got {on!r}")
        w = np.broadcast_to(np.asarray(weight, dtype=float), (len(H),)) * mask
        return cls(w, w)

    def node_terms(self, true_indicator) -> tuple[np.ndarray, np.ndarray]:
        """``(a, c)``: added node scores ``a`` (same shape as ``true_indicator``) and the
        constant ``c`` (a float for a 1-D input, else ``(n_samples,)``), with
        ``Delta(y, t) = sum_{n in y} a_n + c`` for every ``y``."""
        t = np.asarray(true_indicator, dtype=bool)
        added = np.where(t, -self.false_negative, self.false_positive)
        constant = np.where(t, self.false_negative, 0.0).sum(axis=-1)
        return added, constant

    def __call__(self, predicted, true) -> np.ndarray:
        """``Delta(y, t)`` per row, computed directly from the two indicators."""
        y = np.asarray(predicted, dtype=bool)
        t = np.asarray(true, dtype=bool)
        return ((y & ~t) * self.false_positive + (~y & t) * self.false_negative).sum(axis=-1)


def as_loss(loss, H: Hierarchy) -> DecomposableLoss:
    """``loss`` (a name, a :class:`DecomposableLoss` or per-node costs) as a DecomposableLoss on ``H``."""
    if isinstance(loss, DecomposableLoss):
        out = loss
    elif isinstance(loss, str):
        if loss == "hamming":
            out = DecomposableLoss.hamming(H, on="nodes")
        elif loss == "leaf_hamming":
            out = DecomposableLoss.hamming(H, on="leaves")
        else:
            raise InputError(f"unknown loss {loss!r}; use 'hamming', 'leaf_hamming', a "
                             "DecomposableLoss, or an array of per-node costs")
    else:
        w = np.asarray(loss, dtype=float)
        out = DecomposableLoss(w, w)
    if out.false_positive.shape != (len(H),):
        raise InputError(f"the loss has {out.false_positive.shape[0]} node costs but the hierarchy "
                         f"has {len(H)} nodes; give one cost per node of H.nodes")
    return out


def loss_augmented_scores(scores, H: Hierarchy, true_indicator, loss="leaf_hamming"):
    """Fold a node-decomposable loss into the node scores (NHSVM eq. (18) -> (19)).

    Returns ``(augmented, constant)`` with ``augmented = scores + a(t)`` and
    ``sum_{n in y} augmented_n + constant = sum_{n in y} scores_n + Delta(y, t)`` for every
    label set ``y``; see :class:`DecomposableLoss`.  ``loss``: a :class:`DecomposableLoss`,
    ``"hamming"`` (all nodes), ``"leaf_hamming"`` (leaves, the paper's Delta_L), or an array
    of per-node costs (symmetric Hamming with those weights).  ``true_indicator``: bool over
    ``H.nodes``, 1-D (shared by all samples) or ``(n_samples, n_nodes)``.
    """
    H = _check_hierarchy(H)
    arr, single = _check_scores(scores, H)
    t = _check_indicator(true_indicator, H, "true_indicator")
    if t.ndim == 2 and (single or t.shape[0] != arr.shape[0]):
        raise LabelError(f"true_indicator has {t.shape[0]} rows but scores has "
                         f"{1 if single else arr.shape[0]} sample(s); give one true set per sample "
                         "(or a single 1-D set shared by all samples)")
    added, constant = as_loss(loss, H).node_terms(t)
    augmented = arr + added
    constant = np.broadcast_to(constant, (arr.shape[0],)).astype(float)
    if single:
        return augmented[0], float(constant[0])
    return augmented, constant


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class InferenceInfo:
    """What an inference call did.  Arrays run over samples (length 1 for a 1-D input).

    ``objective``: value of each returned set, recomputed in numpy: ``sum_{n in y} s_n``,
    plus ``Delta(y, t)`` when a loss was given.  ``relaxation_objective``: the LP optimum
    (an upper bound on ``objective``; method ``"lp"`` only, else ``None``).  ``fractional``:
    the LP optimum was not integral; ``fell_back``: the integer program was solved instead;
    ``n_fractional``: how many samples fell back.  ``n_bounded`` (method ``"ilp"``): how many
    samples the bound certificate answered without the solver (see :class:`LabelSetOracle`).
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


# ---------------------------------------------------------------------- tree DP
class _TreeDP:
    """Per-depth index arrays of a tree, built once, for the vectorized DP."""

    def __init__(self, H: Hierarchy):
        parent = H.parent_index
        depths = H.depths
        self.n_nodes = len(H)
        # per depth d: (parents at d that have children, children at d+1 grouped by parent,
        #              parent of each child, start of each group, group sizes)
        self.levels = []
        for d in range(int(depths.max()) if len(H) > 1 else 0):
            children = np.flatnonzero(depths == d + 1)
            # group the children by parent (stable, so ties keep H.nodes order)
            children = children[np.argsort(parent[children], kind="stable")]
            par = parent[children]
            starts = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
            counts = np.diff(np.r_[starts, len(children)])
            self.levels.append((par[starts], children, par, starts, counts))

    def solve(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best sets ``(n, M)`` bool and their values ``(n,)`` for the score rows of ``S``.

        Bottom-up: ``f(n) = s_n + sum_c max(f(c), 0) + min(0, max_c f(c))`` for internal n
        (take every child subtree that gains; if none does, the least-losing one), f = s at a
        leaf.  Top-down: root in; a child of a chosen node is in iff ``f(c) > 0`` or it is its
        parent's first best child.
        """
        # node-major layout: each node's values over the samples are one contiguous row
        f = np.array(S.T, order="C")
        n = S.shape[0]
        forced = np.zeros((self.n_nodes, n), dtype=np.int64)  # first best child of each node
        for parents, children, _, starts, counts in reversed(self.levels):
            fc = f[children]
            group_max = np.maximum.reduceat(fc, starts, axis=0)
            gain = np.add.reduceat(np.maximum(fc, 0.0), starts, axis=0)
            f[parents] += gain + np.minimum(group_max, 0.0)
            is_best = fc == np.repeat(group_max, counts, axis=0)
            position = np.where(is_best, np.arange(len(children))[:, None], len(children))
            forced[parents] = children[np.minimum.reduceat(position, starts, axis=0)]
        chosen = np.zeros((self.n_nodes, n), dtype=bool)
        chosen[0] = True
        for _, children, par, _, _ in self.levels:
            chosen[children] = chosen[par] & ((f[children] > 0) | (forced[par] == children[:, None]))
        return chosen.T, f[0]


# ---------------------------------------------------------------------- bounds before (19)
#: Relative tolerance (times ``1 + sum |s|``) of the bound certificate: far above the rounding
#: of the sums, far below HiGHS's own 1e-10.
BOUND_RTOL = 1e-12
#: Subgradient steps on the multipliers of the non-tree edges per uncertified sample.
LAGRANGE_STEPS = 10
#: Fraction of the nodes below which an uncertified sample's LP is built on its kept nodes.
RESTRICT_BELOW = 0.5


class _DagBounds:
    """Index arrays of a hierarchy for :func:`_bound_kernel`, built once per oracle."""

    def __init__(self, H: Hierarchy, steps: int = LAGRANGE_STEPS):
        M = len(H)
        anc = H.ancestor_matrix
        self.anc_ptr = np.asarray(anc.indptr, dtype=np.int64)
        self.anc_idx = np.asarray(anc.indices, dtype=np.int64)
        self.child_ptr, self.child_idx = _csr_lists(H.children_indices, M)
        parents = H.parent_indices
        self.parent_ptr, self.parent_idx = _csr_lists(parents, M)
        # the spanning tree T of the tree relaxation: each node under its first parent; the
        # other edges (extra_parent -> extra_child) get Lagrange multipliers
        self.first_parent = np.array([ps[0] if len(ps) else -1 for ps in parents], dtype=np.int64)
        extra = [(int(p), v) for v, ps in enumerate(parents) for p in ps[1:]]
        self.extra_parent = np.array([e[0] for e in extra], dtype=np.int64)
        self.extra_child = np.array([e[1] for e in extra], dtype=np.int64)
        self.leaves = np.asarray(H.leaf_indices, dtype=np.int64)
        self.steps = int(steps)

    def run(self, S: np.ndarray):
        """``(value, Z, certified, keep, ub)`` per row of ``S``: see :func:`_bound_kernel`."""
        n, M = S.shape
        value = np.empty(n)
        Z = np.zeros((n, M), dtype=np.bool_)
        certified = np.zeros(n, dtype=np.bool_)
        keep = np.ones((n, M), dtype=np.bool_)
        ub = np.empty((n, M))
        _bound_kernel(np.ascontiguousarray(S, dtype=float), self.anc_ptr, self.anc_idx,
                      self.child_ptr, self.child_idx, self.parent_ptr, self.parent_idx,
                      self.first_parent, self.extra_parent, self.extra_child, self.leaves,
                      self.steps, BOUND_RTOL, value, Z, certified, keep, ub)
        return value, Z, certified, keep, ub


def _csr_lists(lists, M: int) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(M + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=ptr[1:])
    idx = np.concatenate(lists).astype(np.int64) if ptr[-1] else np.zeros(0, dtype=np.int64)
    return ptr, idx


@njit(cache=True)
def _tree_values(s, first_parent, f, g):
    """Tree relaxation over T: ``f(v) = s_v + sum_{T-children c} max(f(c), 0)`` (best T-closed
    set inside v's T-subtree that contains v), ``g(v) = g(T-parent) + min(f(v), 0)`` (best
    T-closed set containing v)."""
    M = s.shape[0]
    for v in range(M):
        f[v] = s[v]
    for v in range(M - 1, 0, -1):
        f[first_parent[v]] += max(f[v], 0.0)
    g[0] = f[0]
    for v in range(1, M):
        g[v] = g[first_parent[v]] + min(f[v], 0.0)


@njit(cache=True)
def _repaired_set(s, f, first_parent, parent_ptr, parent_idx, child_ptr, child_idx, anc_ptr,
                  anc_idx, cand) -> float:
    """The tree relaxation's best set (``v`` in iff its T-parent is and ``f(v) > 0``) made a
    label set of the DAG: closed upward, then every chosen internal node without a chosen child
    extended by its child of largest ``f`` (with that child's ancestors).  Returns its value."""
    M = s.shape[0]
    cand[0] = True
    for v in range(1, M):
        cand[v] = cand[first_parent[v]] and f[v] > 0.0
    for v in range(M - 1, 0, -1):
        if cand[v]:
            for k in range(parent_ptr[v], parent_ptr[v + 1]):
                cand[parent_idx[k]] = True
    for v in range(M):
        if not cand[v] or child_ptr[v + 1] == child_ptr[v]:
            continue
        best_c = -1
        for k in range(child_ptr[v], child_ptr[v + 1]):
            c = child_idx[k]
            if cand[c]:
                best_c = -2
                break
            if best_c == -1 or f[c] > f[best_c]:
                best_c = c
        if best_c >= 0:
            for k in range(anc_ptr[best_c], anc_ptr[best_c + 1]):
                cand[anc_idx[k]] = True
    total = 0.0
    for v in range(M):
        if cand[v]:
            total += s[v]
    return total


@njit(cache=True)
def _node_bounds(s, positive, up, g, child_ptr, child_idx, ub):
    """``ub(v)``: the smallest bound that applies (leaf bound, tree bound ``g``, the largest
    bound of the children), children first."""
    M = s.shape[0]
    for v in range(M - 1, -1, -1):
        if child_ptr[v + 1] == child_ptr[v]:
            bound = s[0] + positive + up[v]
        else:
            bound = -np.inf
            for k in range(child_ptr[v], child_ptr[v + 1]):
                bound = max(bound, ub[child_idx[k]])
        ub[v] = min(bound, g[v], ub[v])


@njit(cache=True)
def _bound_kernel(S, anc_ptr, anc_idx, child_ptr, child_idx, parent_ptr, parent_idx,
                  first_parent, extra_parent, extra_child, leaves, steps, rtol, value, Z,
                  certified, keep, ub_out):
    """Per sample: a label set of (19) (lower bound), upper bounds per node, and the nodes that
    can be in no optimal set.

    Upper bounds on the value of a label set containing node ``v``:

    * leaves, ``P = sum_{j != root} max(s_j, 0)``: a set containing leaf ``l`` contains
      ``anc(l)`` and at most the positive scores beyond it, so its value is at most
      ``s_root + P + sum_{j in anc(l), j != root} min(s_j, 0)``;
    * tree relaxation (:func:`_tree_values`): with every node under its first parent only (a
      spanning tree T) each label set is T-closed, so ``g(v)`` bounds it; with multipliers
      ``lam >= 0`` on the other edges ``p -> c`` (score ``+lam`` at p, ``-lam`` at c: a label
      set has ``z_c <= z_p``, so its value can only grow) the same holds for the moved scores.
      The multipliers take ``steps`` subgradient steps (Polyak step towards the lower bound)
      on uncertified samples; every bound met is kept, node by node;
    * a set containing ``v`` contains a leaf below ``v`` (extendability): at most the largest
      bound of ``v``'s children.

    Lower bound: the best of the leaf of largest path score and the repaired tree-relaxation
    sets met on the way (:func:`_repaired_set`), grown by two sweeps that add every leaf
    (in decreasing path score) whose uncovered ancestors add a positive score.
    ``certified``: the lower bound reaches ``ub(root)`` within ``rtol * (1 + sum |s|)``;
    ``keep``: ``ub(v) >= value - tol`` (outside it, a node lowers every set containing it below
    the value found).  ``ub_out`` receives ``ub``.
    """
    n, M = S.shape
    up = np.empty(M)
    path = np.empty(M)
    f = np.empty(M)
    g = np.empty(M)
    moved = np.empty(M)
    cand = np.zeros(M, dtype=np.bool_)
    n_extra = extra_parent.shape[0]
    lam = np.zeros(n_extra)
    direction = np.zeros(n_extra)
    n_leaves = leaves.shape[0]
    leaf_path = np.empty(n_leaves)
    for i in range(n):
        s = S[i]
        ub = ub_out[i]
        z = Z[i]
        total = 0.0
        positive = 0.0
        for j in range(M):
            total += abs(s[j])
            if j > 0 and s[j] > 0.0:
                positive += s[j]
        tol = rtol * (1.0 + total)
        # negative mass (root excluded) and full score of each ancestor set
        up[0] = 0.0
        path[0] = s[0]
        for v in range(1, M):
            if parent_ptr[v + 1] - parent_ptr[v] == 1:
                p = first_parent[v]
                up[v] = up[p] + min(s[v], 0.0)
                path[v] = path[p] + s[v]
            else:
                a = 0.0
                b = 0.0
                for k in range(anc_ptr[v], anc_ptr[v + 1]):
                    j = anc_idx[k]
                    b += s[j]
                    if j > 0:
                        a += min(s[j], 0.0)
                up[v] = a
                path[v] = b
        _tree_values(s, first_parent, f, g)
        for v in range(M):
            ub[v] = np.inf
        _node_bounds(s, positive, up, g, child_ptr, child_idx, ub)
        # lower bound: best leaf or repaired tree set
        for r in range(n_leaves):
            leaf_path[r] = path[leaves[r]]
        order = np.argsort(-leaf_path, kind="mergesort")
        first = leaves[order[0]]
        val = path[first]
        cand_val = _repaired_set(s, f, first_parent, parent_ptr, parent_idx, child_ptr,
                                 child_idx, anc_ptr, anc_idx, cand)
        if cand_val > val:
            val = cand_val
            for v in range(M):
                z[v] = cand[v]
        else:
            for k in range(anc_ptr[first], anc_ptr[first + 1]):
                z[anc_idx[k]] = True
        # Lagrange multipliers on the non-tree edges
        if n_extra and val < ub[0] - tol:
            for e in range(n_extra):
                lam[e] = 0.0
            best = ub[0]
            theta = 1.0
            stall = 0
            for _ in range(steps):
                for v in range(M):
                    moved[v] = s[v]
                for e in range(n_extra):
                    moved[extra_parent[e]] += lam[e]
                    moved[extra_child[e]] -= lam[e]
                _tree_values(moved, first_parent, f, g)
                _node_bounds(s, positive, up, g, child_ptr, child_idx, ub)
                cand_val = _repaired_set(s, f, first_parent, parent_ptr, parent_idx, child_ptr,
                                         child_idx, anc_ptr, anc_idx, cand)
                if cand_val > val:
                    val = cand_val
                    for v in range(M):
                        z[v] = cand[v]
                if ub[0] < best - 1e-9 * (1.0 + abs(best)):
                    best = ub[0]
                    stall = 0
                else:
                    stall += 1
                    if stall >= 4:
                        theta *= 0.5
                        stall = 0
                if ub[0] <= val + tol:
                    break
                # subgradient of the bound f(root): z_p - z_c at the tree optimum (in cand before
                # the repair: recompute it)
                norm = 0.0
                cand[0] = True
                for v in range(1, M):
                    cand[v] = cand[first_parent[v]] and f[v] > 0.0
                for e in range(n_extra):
                    d = (1.0 if cand[extra_parent[e]] else 0.0) - (1.0 if cand[extra_child[e]] else 0.0)
                    direction[e] = d
                    norm += d * d
                if norm == 0.0:
                    break  # the tree optimum is closed in the DAG: the multipliers are optimal
                step = theta * (f[0] - val) / norm
                for e in range(n_extra):
                    lam[e] = max(0.0, lam[e] - step * direction[e])
        # grow the set leaf by leaf
        for _ in range(2):
            if val >= ub[0] - tol:
                break
            for r in range(n_leaves):
                leaf = leaves[order[r]]
                if z[leaf]:
                    continue
                gain = 0.0
                for k in range(anc_ptr[leaf], anc_ptr[leaf + 1]):
                    j = anc_idx[k]
                    if not z[j]:
                        gain += s[j]
                if gain > 0.0:
                    for k in range(anc_ptr[leaf], anc_ptr[leaf + 1]):
                        z[anc_idx[k]] = True
                    val += gain
        value[i] = val
        certified[i] = val >= ub[0] - tol
        for v in range(M):
            keep[i, v] = ub[v] >= val - tol


# ---------------------------------------------------------------------- program (19)
def _constraint_matrix(H: Hierarchy):
    """Rows of (19) as a CSC matrix with row bounds: edges, internal nodes, the leaf row."""
    M = len(H)
    parent, child = H.edge_index[:, 0], H.edge_index[:, 1]
    n_edges = len(parent)
    internal = np.flatnonzero(~H.leaf_mask)
    row_of_internal = np.full(M, -1)
    row_of_internal[internal] = n_edges + np.arange(len(internal))
    leaf_row = n_edges + len(internal)
    e = np.arange(n_edges)
    rows = np.concatenate([e, e,                                  # z_c - z_p <= 0
                           row_of_internal[parent], row_of_internal[internal],  # sum z_c - z_n >= 0
                           np.full(len(H.leaf_indices), leaf_row)])             # sum z_l >= 1
    cols = np.concatenate([child, parent, child, internal, H.leaf_indices])
    vals = np.concatenate([np.ones(n_edges), -np.ones(n_edges), np.ones(n_edges),
                           -np.ones(len(internal)), np.ones(len(H.leaf_indices))])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(leaf_row + 1, M))
    A.sort_indices()
    lower = np.concatenate([np.full(n_edges, -np.inf), np.zeros(len(internal)), [1.0]])
    upper = np.concatenate([np.zeros(n_edges), np.full(len(internal), np.inf), [np.inf]])
    col_lower = np.zeros(M)
    col_lower[0] = 1.0  # the root is always in
    return A, lower, upper, col_lower, np.ones(M)


def new_highs() -> "highspy.Highs":
    """A silent ``highspy.Highs``.  HiGHS writes its banner to file descriptor 1 from C++ when
    the first instance of a process is built (before ``silent()`` can act), so stdout is sent
    to ``/dev/null`` at the descriptor level around the constructor only."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no usable descriptor 1: nothing to protect
        h = highspy.Highs()
        h.silent()
        return h
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            try:
                h = highspy.Highs()
            finally:
                os.dup2(saved, 1)
    finally:
        os.close(saved)
    h.silent()
    return h


def _highs_options(integer: bool):
    """HiGHS options of the inference programs."""
    # HiGHS's default reduced-cost tolerance (1e-7) accepts sets that lose up to ~1e-7 in
    # score; 1e-10 (its smallest) keeps near-ties exact, as the brute-force tests demand
    yield "dual_feasibility_tolerance", 1e-10
    # (19) has nothing for presolve to remove but what the bounds already dropped: on GO's
    # kept-node programs it was 60% of the time (LP 27 -> 11 ms, ILP 400 -> 150 ms, same optima)
    yield "presolve", "off"
    if integer:  # exact optimum, not HiGHS's default 1e-4 relative MIP gap; the MIP
        # feasibility tolerance also serves as its epsilon when comparing objectives
        yield "mip_rel_gap", 0.0
        yield "mip_abs_gap", 1e-10
        yield "mip_feasibility_tolerance", 1e-10


def _pass_program(h, A, lower, upper, col_lower, col_upper, integer: bool) -> None:
    """Load the program with rows ``A`` (CSC, sorted) and these bounds into ``h`` (zero costs)."""
    M = A.shape[1]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = M, A.shape[0]
    lp.col_cost_ = np.zeros(M)
    lp.col_lower_, lp.col_upper_ = col_lower, col_upper
    lp.row_lower_, lp.row_upper_ = lower, upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = M, A.shape[0]
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * M
    status = h.passModel(lp)
    if status == highspy.HighsStatus.kError:  # pragma: no cover
        raise SolverError("HiGHS refused the inference model", status=str(status), solver="HIGHS")


class _HighsModel:
    """Program (19) (or its relaxation) loaded into one ``highspy.Highs``; only costs change."""

    name = "highs"

    def __init__(self, H: Hierarchy, integer: bool):
        self._rows = _constraint_matrix(H)
        self._integer = integer
        self._h, self._M = self._load(*self._rows, integer)
        self._cols = np.arange(self._M, dtype=np.int32)
        self._small = None  # a second instance for the programs restricted to a subset of nodes

    @staticmethod
    def _load(A, lower, upper, col_lower, col_upper, integer: bool):
        """A silent ``Highs`` holding the program with rows ``A`` (CSC) and these bounds."""
        h = new_highs()
        for name, value in _highs_options(integer):
            h.setOptionValue(name, value)
        _pass_program(h, A, lower, upper, col_lower, col_upper, integer)
        return h, A.shape[1]

    @staticmethod
    def _run(h) -> tuple[np.ndarray, float]:
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # the simplex starts from the previous sample's basis without presolve; on GO that
            # ended once in thousands of solves with status "Unknown" (600 s into a fit):
            # solve once more from scratch with presolve before giving up
            first = h.modelStatusToString(status)
            h.clearSolver()
            h.setOptionValue("presolve", "on")
            try:
                h.run()
            finally:
                h.setOptionValue("presolve", "off")
            status = h.getModelStatus()
            if status != highspy.HighsModelStatus.kOptimal:
                raise SolverError("HiGHS did not solve the inference program to optimality, "
                                  "warm-started nor from scratch with presolve",
                                  status=f"{first}, then {h.modelStatusToString(status)}",
                                  solver="HIGHS")
        z = np.asarray(h.getSolution().col_value, dtype=float)
        return z, float(h.getInfo().objective_function_value)

    def solve(self, cost: np.ndarray) -> tuple[np.ndarray, float]:
        """Minimize ``cost . z``; returns ``(z, cost . z)``."""
        self._h.changeColsCost(self._M, self._cols, cost)
        return self._run(self._h)

    def solve_subset(self, cost: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, float]:
        """:meth:`solve` with ``z_j = 0`` for the nodes outside ``keep`` (bool over the nodes),
        as a program over the kept columns only (rows left empty are dropped)."""
        A, lower, upper, col_lower, col_upper = self._rows
        cols = np.flatnonzero(keep)
        sub = A[:, cols].tocsr()
        used = np.diff(sub.indptr) > 0
        sub = sub[used].tocsc()
        sub.sort_indices()
        if self._small is None:
            self._small = new_highs()
            for name, value in _highs_options(self._integer):
                self._small.setOptionValue(name, value)
        h = self._small
        _pass_program(h, sub, lower[used], upper[used], col_lower[cols], col_upper[cols],
                      self._integer)
        h.changeColsCost(len(cols), np.arange(len(cols), dtype=np.int32), cost[cols])
        zs, value = self._run(h)
        z = np.zeros(self._M)
        z[cols] = zs
        return z, value


class _GurobiModel:  # pragma: no cover - needs gurobipy and a licence
    """Program (19) in one ``gurobipy.Model``; only the objective changes between samples."""

    name = "gurobi"

    def __init__(self, H: Hierarchy, integer: bool):
        if gp is None:
            raise SolverUnavailableError(
                "gurobipy is not installed; use solver='highs' (the default, open source) or "
                "pip install gurobipy", solver="GUROBI")
        self._gp = gp
        A, lower, upper, col_lower, col_upper = _constraint_matrix(H)
        try:
            env = gp.Env(params={"OutputFlag": 0})
            m = gp.Model(env=env)
            vtype = gp.GRB.BINARY if integer else gp.GRB.CONTINUOUS
            z = m.addMVar(A.shape[1], lb=col_lower, ub=col_upper, vtype=vtype)
            A = A.tocsr()
            finite_up, finite_lo = np.isfinite(upper), np.isfinite(lower)
            m.addMConstr(A[finite_up], z, "<", upper[finite_up])
            m.addMConstr(A[finite_lo], z, ">", lower[finite_lo])
            if integer:
                m.Params.MIPGap = 0.0
            m.Params.Threads = 1
        except gp.GurobiError as exc:
            raise SolverUnavailableError(f"Gurobi cannot build the inference model ({exc}); use "
                                         "solver='highs' (the default, open source)",
                                         solver="GUROBI") from None
        self._m, self._z = m, z
        self._upper = np.asarray(col_upper, dtype=float)

    def solve_subset(self, cost: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, float]:
        """:meth:`solve` with ``z_j = 0`` outside ``keep`` (Gurobi's presolve drops them)."""
        self._z.UB = np.where(keep, self._upper, 0.0)
        try:
            return self.solve(cost)
        finally:
            self._z.UB = self._upper

    def solve(self, cost: np.ndarray) -> tuple[np.ndarray, float]:
        gp = self._gp
        self._z.Obj = cost
        try:
            self._m.optimize()
        except gp.GurobiError as exc:
            raise SolverUnavailableError(f"Gurobi failed on the inference program ({exc}); a "
                                         "size-limited licence is the usual cause; use "
                                         "solver='highs'", solver="GUROBI") from None
        if self._m.Status != gp.GRB.OPTIMAL:
            raise SolverError("Gurobi did not solve the inference program to optimality",
                              status=str(self._m.Status), solver="GUROBI")
        return np.asarray(self._z.X, dtype=float), float(self._m.ObjVal)


_BACKENDS = {"highs": _HighsModel, "gurobi": _GurobiModel}


# ---------------------------------------------------------------------- the oracle
class LabelSetOracle:
    """Reusable argmax over ``Y_m`` for one hierarchy: build once, solve many score vectors.

    ``method``: ``"auto"`` (:func:`auto_method`), ``"dp"``, ``"ilp"``, ``"lp"`` or
    ``"enumerate"``.  ``solver``: ``"highs"`` (default) or ``"gurobi"`` for ``"ilp"``/``"lp"``.
    The tree levels, the enumerated sets and the solver models are built on first use and
    kept; for the solvers only the objective changes from one sample to the next (the LP
    re-solve warm-starts from the previous basis).

    ``presolve`` (method ``"ilp"``): before the integer program, every sample gets a label
    set and per-node upper bounds in O(nodes + ancestor entries) (plus a few subgradient steps
    of a tree relaxation), batched over the samples (:func:`_bound_kernel`).  A sample whose
    set reaches the bound is answered without a solver (``InferenceInfo.n_bounded``); the
    others get the LP relaxation (an integral LP optimum is optimal for (19)), and where it is
    fractional, (19) restricted to the nodes whose bound reaches the set's value (the rest are
    in no optimal set; the LP too is built on them when they are under :data:`RESTRICT_BELOW`
    of the graph).  Exact either way; ``presolve=False`` solves (19) on the whole
    hierarchy for every sample.
    """

    def __init__(self, H: Hierarchy, method: str = "auto", *, solver: str | None = None,
                 max_nodes: int = ENUMERATE_MAX_NODES, integrality_tol: float = INTEGRALITY_TOL,
                 presolve: bool = True):
        self.H = _check_hierarchy(H)
        self.presolve = bool(presolve)
        if method not in METHODS:
            raise InputError(f"unknown inference method {method!r}; choose one of {METHODS}")
        if method == "auto":
            method = auto_method(H, max_nodes)
        if method == "dp" and not H.is_tree:
            some = next(v for v, ps in zip(H.nodes, H.parent_indices) if len(ps) > 1)
            raise HierarchyError(
                f"method='dp' needs a tree, but this hierarchy is a DAG (node {some!r} has "
                f"{len(H.parents(some))} parents); use method='ilp' (exact) or 'lp' for DAGs")
        if solver is not None:
            if method not in ("ilp", "lp"):
                raise InputError(f"solver={solver!r} applies to methods 'ilp' and 'lp' only; "
                                 f"method {method!r} uses no solver, so drop the solver argument")
            if str(solver).lower() not in SOLVERS:
                raise InputError(f"unknown inference solver {solver!r}; choose one of {SOLVERS}")
            solver = str(solver).lower()
        elif method in ("ilp", "lp"):
            solver = "highs"
        if not (0 < integrality_tol < 0.5):
            raise InputError(f"integrality_tol must be in (0, 0.5), got {integrality_tol!r}")
        self.method = method
        self.solver = solver
        self.max_nodes = max_nodes
        self.integrality_tol = integrality_tol
        if method == "enumerate":  # refuse large graphs now, not at the first solve
            self._sets = enumerate_label_sets(H, max_nodes=max_nodes)
        if method == "ilp" and solver == "gurobi":
            self._model(integer=True)  # reports a missing gurobipy / licence right away
        if method == "lp" and solver == "gurobi":
            self._model(integer=False)

    # lazily built pieces; dropped when pickling (solver handles are not picklable)
    def __getstate__(self):
        state = self.__dict__.copy()
        for key in ("_ilp", "_lp", "_dp", "_bounds"):
            state.pop(key, None)
        return state

    def _model(self, integer: bool):
        key = "_ilp" if integer else "_lp"
        if key not in self.__dict__:
            setattr(self, key, _BACKENDS[self.solver](self.H, integer=integer))
        return self.__dict__[key]

    def __repr__(self):
        solver = f", solver={self.solver!r}" if self.solver else ""
        return f"LabelSetOracle({self.H!r}, method={self.method!r}{solver})"

    def solve(self, scores, *, loss=None, true_indicator=None, return_info: bool = False,
              verbose: bool | None = None):
        """Best label set(s) for ``scores`` (``(n_nodes,)`` or ``(n_samples, n_nodes)``).

        Returns a bool indicator over ``H.nodes`` of the same shape; with ``return_info=True``
        also an :class:`InferenceInfo`.  ``loss`` + ``true_indicator``: loss-augmented
        inference ``argmax_y sum_{n in y} s_n + Delta(y, t)`` (see :func:`loss_augmented_scores`).
        ``verbose``: a progress bar over samples for the solver methods (``None``: only for
        2000 samples or more).
        """
        H = self.H
        S, single = _check_scores(scores, H)
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
                self._dp = _TreeDP(H)
            Z = np.empty(S.shape, dtype=bool)
            chunk = max(64, _DP_CHUNK_ENTRIES // len(H))  # cache-sized blocks of samples
            for lo in range(0, n, chunk):
                Z[lo:lo + chunk] = self._dp.solve(S[lo:lo + chunk])[0]
        elif self.method == "enumerate":
            Z = self._enumerate(S)
        else:
            Z, relaxation, fractional = self._solve_programs(S, verbose)
        if self.method in ("ilp", "lp") and n:
            valid = is_valid_label_set(Z, H)
            if not np.all(valid):  # guards against solver tolerances, never expected
                raise SolverError(f"the {self.method} solution of sample {int(np.argmin(valid))} is "
                                  "not a valid label set after rounding", solver=self.solver)
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
            n_bounded=int(self.__dict__.get("_n_bounded", 0)) if self.method == "ilp" else 0)
        return out, info

    def _enumerate(self, S: np.ndarray) -> np.ndarray:
        sets = self._sets
        values_per_chunk = max(1, _CHUNK_ENTRIES // max(1, len(sets)))
        Z = np.empty(S.shape, dtype=bool)
        set_matrix = sets.astype(float).T
        for lo in range(0, S.shape[0], values_per_chunk):
            hi = min(S.shape[0], lo + values_per_chunk)
            Z[lo:hi] = sets[np.argmax(S[lo:hi] @ set_matrix, axis=1)]
        return Z

    def _solve_programs(self, S: np.ndarray, verbose):
        n, M = S.shape
        integer = self.method == "ilp"
        model = self._model(integer=integer)
        Z = np.zeros((n, M), dtype=bool)
        relaxation = None if integer else np.empty(n)
        fractional = np.zeros(n, dtype=bool)
        self._n_bounded = 0
        if integer and self.presolve and n:
            return self._solve_bounded(S, model, verbose), relaxation, fractional
        show = (n >= 2000) if verbose is None else bool(verbose)
        rows = range(n)
        if show:
            rows = tqdm(rows, desc=f"inference ({self.method})", unit="sample")
        for i in rows:
            z, value = model.solve(-S[i])
            rounded = z > 0.5
            if not integer:
                relaxation[i] = -value
                if np.max(np.abs(z - rounded)) > self.integrality_tol:
                    fractional[i] = True
                    z, _ = self._model(integer=True).solve(-S[i])
                    rounded = z > 0.5
            Z[i] = rounded
        return Z, relaxation, fractional

    def _solve_bounded(self, S: np.ndarray, model, verbose) -> np.ndarray:
        """Program (19) behind the bound certificate of :func:`_bound_kernel`: samples whose
        lower bound reaches the upper bound keep their set (no solver call); the others get
        the LP relaxation (an integral LP optimum is optimal for (19)) -- on the nodes that
        can still be in an optimal set when they are few, else on the whole graph,
        warm-started -- and where it is fractional, (19) restricted to those nodes."""
        if "_bounds" not in self.__dict__:
            self._bounds = _DagBounds(self.H)
        value, Z, certified, keep, _ = self._bounds.run(S)
        self._n_bounded = int(certified.sum())
        rows = np.flatnonzero(~certified)
        show = (len(rows) >= 2000) if verbose is None else bool(verbose)
        if show:
            rows = tqdm(rows, desc="inference (ilp)", unit="sample")
        relaxation = self._model(integer=False)
        for i in rows:
            # a program over the kept nodes only when they are few: rebuilding it costs a load,
            # the whole-graph LP only a warm-started re-solve
            few = keep[i].sum() <= RESTRICT_BELOW * len(keep[i])
            z, _ = relaxation.solve_subset(-S[i], keep[i]) if few else relaxation.solve(-S[i])
            rounded = z > 0.5
            if np.max(np.abs(z - rounded)) > self.integrality_tol:
                z, _ = model.solve_subset(-S[i], keep[i])
                rounded = z > 0.5
            # the bound's set is feasible in both programs: never return less
            if label_set_scores(S[i], rounded)[0] >= value[i]:
                Z[i] = rounded
        return Z


def best_label_set(scores, H: Hierarchy, method: str = "auto", *, loss=None, true_indicator=None,
                   solver: str | None = None, return_info: bool = False, **options):
    """The label set of ``Y_m`` (NHSVM section 3) with the largest total node score.

    Solves ``argmax_{y in Y_m} sum_{n in y} s_n`` -- eq. (18) with a decomposable loss, i.e.
    the integer program (19) -- by the tree DP (``"dp"``), program (19) (``"ilp"``), its LP
    relaxation with ILP fallback (``"lp"``) or brute force (``"enumerate"``); ``"auto"``
    picks ``"dp"`` on trees, ``"enumerate"`` on DAGs with at most
    :data:`ENUMERATE_AUTO_LEAVES` leaves and ``"ilp"`` on larger ones (:func:`auto_method`).

    ``scores``: ``(n_nodes,)`` -> ``(n_nodes,)`` bool, or ``(n_samples, n_nodes)`` ->
    ``(n_samples, n_nodes)`` bool, columns in ``H.nodes`` order.  ``loss`` and
    ``true_indicator``: loss-augmented inference (see :func:`loss_augmented_scores`).
    ``return_info=True`` also returns an :class:`InferenceInfo`.  Other keywords go to
    :class:`LabelSetOracle` (``max_nodes``, ``integrality_tol``) or its ``solve`` (``verbose``).
    For many calls on one hierarchy, build a :class:`LabelSetOracle` once and reuse it.
    """
    verbose = options.pop("verbose", None)
    oracle = LabelSetOracle(H, method, solver=solver, **options)
    return oracle.solve(scores, loss=loss, true_indicator=true_indicator, return_info=return_info,
                        verbose=verbose)


def best_leaf(scores, H: Hierarchy, return_indicator: bool = False):
    """Single-label prediction: the leaf ``l`` maximizing ``sum_{n in anc(l)} s_n`` (argmax over
    ``Y_s``, NHSVM section 3 and the prediction rule of section 4).

    Path sums are ``scores @ A[leaves].T`` with ``A = H.ancestor_matrix``.  Returns the node
    index (into ``H.nodes``) of the best leaf: an int for 1-D ``scores``, else an
    ``(n_samples,)`` int array; ties go to the first leaf in ``H.nodes`` order.  With
    ``return_indicator=True`` returns the bool indicator of ``anc(l)`` instead.
    """
    H = _check_hierarchy(H)
    S, single = _check_scores(scores, H)
    leaves = H.leaf_indices
    anc_of_leaf = H.ancestor_matrix[leaves].astype(float)       # (n_leaves, M)
    path_sums = np.asarray((anc_of_leaf @ S.T).T)                # (n, n_leaves)
    best = leaves[np.argmax(path_sums, axis=1)]
    if return_indicator:
        Z = H.ancestor_matrix[best].toarray().astype(bool)
        return Z[0] if single else Z
    return int(best[0]) if single else best


# ---------------------------------------------------------------------- CVXPY reference of (19)
#: MILP solvers :func:`reference` tries for the integer program, first installed wins
_MILP_SOLVERS = ("HIGHS", "GUROBI", "SCIP", "CBC", "GLPK_MI")
#: LP solvers for the relaxation
_LP_SOLVERS = ("HIGHS", "CLARABEL", "ECOS", "SCS")


def _pick_solver(solver: str | None, preference: tuple) -> str:
    installed = cp.installed_solvers()
    if solver is not None:
        if solver.upper() not in installed:
            raise SolverUnavailableError(f"solver {solver!r} is not installed; installed: {installed}",
                                         solver=solver)
        return solver.upper()
    for name in preference:
        if name in installed:
            return name
    raise SolverUnavailableError(f"no solver for this program among {preference}; install highspy",
                                 solver=None)


def _declare_19(H: Hierarchy, S: np.ndarray, integer: bool):
    """Program (19) for every row of ``S`` as one CVXPY problem ``min sum_i -s_i . z_i`` (the
    paper's ``argmin z . r``, ``r = -s``): closure rows ``z_c - z_p <= 0``, cover rows (a chosen
    node has a chosen child; a leaf is chosen) ``>= b``, ``z_root = 1``, ``0 <= z <= 1``."""
    A, lower, upper, col_lower, _ = _constraint_matrix(H)
    A = A.tocsr()
    le = np.isfinite(upper)
    A_le, A_ge, b_ge = A[le], A[~le], lower[~le]
    n, M = S.shape
    Z = cp.Variable((n, M), boolean=integer, name="z")
    closure = Z @ A_le.T <= 0
    cover = Z @ A_ge.T >= np.broadcast_to(b_ge, (n, len(b_ge)))
    box = [Z >= np.broadcast_to(col_lower, (n, M)), Z <= 1]
    problem = cp.Problem(cp.Minimize(-cp.sum(cp.multiply(S, Z))), [closure, cover, *box])
    return problem, Z, closure, cover, (A_le, A_ge, b_ge, col_lower)


def _lp_dual_bound(S, duals_le, duals_ge, rows) -> np.ndarray:
    """Per sample, the Lagrangian bound of the LP at the clipped multipliers ``y >= 0``:
    ``b . y_ge + sum_j min_{z_j in box} r_j z_j``, ``r = -s + A_le^T y_le - A_ge^T y_ge`` (box
    ``[1, 1]`` for the root, ``[0, 1]`` otherwise).  Valid for any ``y >= 0``."""
    A_le, A_ge, b_ge, col_lower = rows
    y_le = np.maximum(np.asarray(duals_le, dtype=float), 0.0)
    y_ge = np.maximum(np.asarray(duals_ge, dtype=float), 0.0)
    r = -S + y_le @ A_le - y_ge @ A_ge
    fixed = col_lower > 0
    return y_ge @ b_ge + r[:, fixed].sum(axis=1) + np.minimum(r[:, ~fixed], 0.0).sum(axis=1)


def _lp_reference(H: Hierarchy, S: np.ndarray, solver: str | None, integrality_tol: float) -> Solution:
    """The LP relaxation of (19), certified: objective at the returned point, Lagrangian bound."""
    t0 = time.perf_counter()
    problem, Z, closure, cover, rows = _declare_19(H, S, integer=False)
    name = _pick_solver(solver, _LP_SOLVERS)
    build = time.perf_counter() - t0
    problem.solve(solver=name)
    if problem.status != cp.OPTIMAL:
        raise SolverError("the LP relaxation of (19) was not solved to optimality",
                          status=problem.status, solver=name)
    z = np.clip(np.asarray(Z.value, dtype=float), 0.0, 1.0)
    z[:, 0] = 1.0
    A_le, A_ge, b_ge, _ = rows
    violation = max(float((z @ A_le.T).max(initial=0.0)), float((b_ge - z @ A_ge.T).max(initial=0.0)))
    if violation > 1e-6:
        raise SolverError(f"the LP point violates (19)'s rows by {violation:.3g}", solver=name)
    cost = -(S * z).sum(axis=1)
    bound = _lp_dual_bound(S, closure.dual_value, cover.dual_value, rows)
    fractional = np.abs(z - np.round(z)).max(axis=1, initial=0.0) > integrality_tol
    return Solution(objective=float(cost.sum()), lower_bound=float(bound.sum()), weights=z,
                    status=OPTIMAL, solver=name, tol=integrality_tol, build_time=build,
                    solve_time=time.perf_counter() - t0 - build, values={"z": z},
                    duals={"closure": closure.dual_value, "cover": cover.dual_value},
                    name="LP relaxation of (19)", problem_class="LP",
                    extras={"cost": cost, "bound": bound, "fractional": fractional})


def reference(scores, H: Hierarchy, *, loss=None, true_indicator=None, relaxation: bool = False,
              solver: str | None = None, integrality_tol: float = INTEGRALITY_TOL) -> Solution:
    """Program (19) (or, ``relaxation=True``, its LP relaxation) declared in CVXPY and certified.

    Minimizes ``sum_i -s_i . z_i`` (the paper's ``argmin z . r`` with ``r = -s``; one program
    per row of ``scores``, declared together) over the label sets of ``Y_m`` (rows of (19):
    closure, a chosen node has a chosen child, a leaf is chosen, the root is in).

    * LP: ``objective`` = the cost at the returned point (checked feasible), ``lower_bound``
      = the Lagrangian bound at the clipped LP multipliers; ``extras["fractional"]`` flags
      samples whose LP optimum is not integral.
    * ILP: ``objective`` = the cost of the returned sets, after the integrality check
      (``|z - round(z)| <= integrality_tol``) and the validity check (:func:`is_valid_label_set`);
      ``lower_bound`` = the LP bound per sample, replaced by the exact optimum by enumeration
      where the LP is fractional and ``H`` has at most ``ENUMERATE_MAX_NODES`` nodes
      (``extras["bound_source"]``).  ``gap`` is the relative integrality gap left; ``extras``:
      ``"value"`` (best score per sample, plus ``Delta`` with a loss), ``"lp_value"``,
      ``"integrality_gap"`` (``lp_value - value >= 0``), ``"relaxation"`` (the LP's Solution).

    ``weights`` are the sets (bool ``(n, M)``, or ``(M,)`` for 1-D ``scores``; the LP's
    fractional point for ``relaxation=True``).  ``loss`` / ``true_indicator``: loss-augmented
    inference as in :meth:`LabelSetOracle.solve`.  The fast path (``method="ilp"``/``"lp"``)
    calls HiGHS directly on the same rows; the tests check that both agree.
    """
    H = _check_hierarchy(H)
    S, single = _check_scores(scores, H)
    if (loss is None) != (true_indicator is None):
        raise InputError("loss-augmented inference needs both loss= and true_indicator=")
    constant = np.zeros(S.shape[0])
    if loss is not None:
        S, constant = loss_augmented_scores(S, H, true_indicator, loss)
    if S.shape[0] == 0:
        raise InputError("scores has no samples; pass at least one row of node scores")
    lp = _lp_reference(H, S, solver if relaxation else None, integrality_tol)
    lp.extras["value"] = -lp.extras["cost"] + constant
    if relaxation:
        if single:
            lp.weights = lp.weights[0]
        return lp
    t0 = time.perf_counter()
    problem, Z, _, _, _ = _declare_19(H, S, integer=True)
    name = _pick_solver(solver, _MILP_SOLVERS)
    problem.solve(solver=name)
    if problem.status != cp.OPTIMAL:
        raise SolverError("the integer program (19) was not solved to optimality",
                          status=problem.status, solver=name)
    z = np.asarray(Z.value, dtype=float)
    off = float(np.abs(z - np.round(z)).max(initial=0.0))
    if off > integrality_tol:
        raise SolverError(f"the ILP solution is {off:.3g} away from integral (> {integrality_tol:g})",
                          solver=name)
    sets = z > 0.5
    valid = is_valid_label_set(sets, H)
    if not np.all(valid):
        raise SolverError(f"the ILP solution of sample {int(np.argmin(valid))} is not a label set of "
                          "Y_m", solver=name)
    cost = -label_set_scores(S, sets)
    bound = lp.extras["bound"].copy()
    source = np.array(["lp"] * len(cost), dtype=object)
    frac = lp.extras["fractional"] | (cost - bound > 1e-9 * np.maximum(1.0, np.abs(cost)))
    if frac.any() and len(H) <= ENUMERATE_MAX_NODES:
        everything = enumerate_label_sets(H)
        bound[frac] = -(S[frac] @ everything.T.astype(float)).max(axis=1)
        source[frac] = "enumeration"
    value = -cost + constant
    lp_value = lp.extras["value"]
    return Solution(objective=float(cost.sum()), lower_bound=float(bound.sum()),
                    weights=sets[0] if single else sets, status=OPTIMAL, solver=name,
                    tol=integrality_tol, build_time=lp.build_time,
                    solve_time=time.perf_counter() - t0, values={"z": z},
                    name="integer program (19)", problem_class="MILP",
                    extras={"value": value, "lp_value": lp_value, "integrality_gap": lp_value - value,
                            "bound": bound, "bound_source": source, "relaxation": lp})
