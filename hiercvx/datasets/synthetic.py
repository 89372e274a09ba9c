"""Synthetic data of the source papers, with their Bayes rules.

Every generator takes ``random_state`` (``None``, a non-negative int, a
``numpy.random.Generator`` or a ``numpy.random.RandomState``; one generator is drawn from
in a fixed order, so a seed fixes the whole data set) and returns a
:class:`~hiercvx.datasets.Dataset` whose ``bayes_rule`` has ``predict(X)`` and
``classes_``, and whose ``bayes_error`` is the population 0-1 error of that rule.  The
linear rules (:class:`LinearBayesRule`) also have ``decision_function``, the probabilistic
ones (:class:`ProbabilisticBayesRule`) ``predict_proba``; the cascade of
:func:`make_nhsvm_unbalanced` (:class:`CascadeBayesRule`) has ``predict`` only.

=============================  ========================================================
generator                      source
=============================  ========================================================
:func:`make_cai_synthetic`     Cai thesis, section 7.1.1 (Table 7.5: fan-out 3 / depth 3
                               and fan-out 6 / depth 2, 20 features, 200 examples)
:func:`make_nhsvm_balanced`    NHSVM section 8.1, balanced tree (Table 2: M = 15, 8 leaves)
:func:`make_nhsvm_unbalanced`  NHSVM section 8.1, one-sided binary tree of hyperplanes
:func:`make_wang_example1`     Wang, Shen & Pan, section 4.1, Example 1 (Fig. 2(a))
:func:`make_wang_example2`     Wang, Shen & Pan, section 4.1, Example 2 (Fig. 2(b))
:func:`make_wang_example3`     Wang, Shen & Pan, section 4.1, Example 3 (Fig. 2(c))
=============================  ========================================================

Where the papers leave a detail open or contradict themselves, the choice made here is
stated in the generator's docstring.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import random_generator as _rng
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ._common import Dataset

__all__ = [
    "make_cai_synthetic",
    "make_nhsvm_balanced",
    "make_nhsvm_unbalanced",
    "make_wang_example1",
    "make_wang_example2",
    "make_wang_example3",
    "LinearBayesRule",
    "CascadeBayesRule",
    "ProbabilisticBayesRule",
    "complete_tree",
]


# ---------------------------------------------------------------------- helpers
def _check_int(value, name: str, low: int, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InputError(f"{name} must be an integer >= {low}{why}, got {value!r}")
    return int(value)


def _check_real(value, name: str) -> float:
    """``value`` as a finite float; a string, a bool, None, NaN or an infinity raise
    :class:`~hiercvx.exceptions.InputError` naming ``name``."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                      np.floating))
            or not math.isfinite(value)):
        raise InputError(f"{name} must be a finite real number, got {value!r}")
    return float(value)


def complete_tree(branching: int, depth: int) -> Hierarchy:
    """The complete tree with ``branching`` children per internal node and leaves at
    ``depth`` (edges from the root).  Nodes are ints in breadth-first order, root 0."""
    branching = _check_int(branching, "branching", 1)
    depth = _check_int(depth, "depth", 1)
    parents = {0: None}
    level, nxt = [0], 1
    for _ in range(depth):
        new_level = []
        for p in level:
            for _ in range(branching):
                parents[nxt] = p
                new_level.append(nxt)
                nxt += 1
        level = new_level
    return Hierarchy.from_parents(parents)


def _feature_names(d: int) -> list[str]:
    return [f"x{j}" for j in range(d)]


# ---------------------------------------------------------------------- Bayes rules
class LinearBayesRule:
    """Scores ``F(x, y) = <w_y, x>`` with fixed class weights.

    ``multilabel=False``: ``predict`` is the class of maximal score.
    ``multilabel=True``: ``predict`` is the set ``{y : F(x, y) > 0}`` (a list of frozensets).
    """

    def __init__(self, class_weights: np.ndarray, classes, multilabel: bool = False):
        self.class_weights = np.asarray(class_weights, dtype=float)
        self.classes_ = np.asarray(classes)
        self.multilabel = multilabel

    def decision_function(self, X) -> np.ndarray:
        return np.asarray(X, dtype=float) @ self.class_weights.T

    def predict(self, X):
        F = self.decision_function(X)
        if not self.multilabel:
            return self.classes_[np.argmax(F, axis=1)]
        pos = F > 0
        return [frozenset(self.classes_[row].tolist()) for row in pos]


class CascadeBayesRule:
    """A one-sided cascade of hyperplanes through the origin (NHSVM 8.1, unbalanced).

    Split ``k`` sends ``x`` to ``leaves[k]`` when ``<a_k, x> < 0`` and on to split
    ``k + 1`` otherwise; past the last split ``x`` goes to ``leaves[-1]``.
    """

    def __init__(self, normals: np.ndarray, leaves):
        self.normals = np.asarray(normals, dtype=float)
        self.classes_ = np.asarray(leaves)

    def predict(self, X):
        left = (np.asarray(X, dtype=float) @ self.normals.T) < 0
        first = np.where(left.any(axis=1), np.argmax(left, axis=1), left.shape[1])
        return self.classes_[first]


class ProbabilisticBayesRule:
    """The Bayes rule of a known conditional law: ``predict = argmax_y P(Y = y | x)``."""

    def __init__(self, classes, proba):
        self.classes_ = np.asarray(classes)
        self._proba = proba

    def predict_proba(self, X) -> np.ndarray:
        return self._proba(np.asarray(X, dtype=float))

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


# ---------------------------------------------------------------------- Cai thesis 7.1.1
def make_cai_synthetic(n_samples: int = 200, n_features: int = 20, branching: int = 3,
                       depth: int = 3, variances=None, variance_decay: float = 0.5,
                       min_labels: int = 1, max_batches: int = 1000,
                       random_state=None) -> Dataset:
    """Multi-label data on a perfect tree, Cai thesis section 7.1.1.

    The thesis: node weights are Gaussian, the same diagonal covariance for all nodes of
    one depth, variances decreasing with depth; a class's weight is the sum of the node
    weights on its root path, ``w_y = sum_{v in anc(y)} W_v`` (the class-attribute form
    (3.7) with ``t_v = 1``); ``x`` is multivariate normal; ``x`` gets every class with
    ``F(x, y) = <w_y, x> > 0`` and is kept only when it has fewer than ``sqrt(q)``
    classes (``q`` = number of classes, the leaves).  Table 7.5 uses fan-out 3 / depth 3
    and fan-out 6 / depth 2, 20 features and 200 examples; the defaults are the first.

    Choices where the thesis is silent:

    - node weights at depth ``d >= 1`` are ``N(0, s_d I)`` with ``s_d = variance_decay **
      (d - 1)`` unless ``variances`` (length ``depth``, for depths 1..depth) is given;
    - the root's weight is zero: it is an ancestor of every class, so it would add the
      same term to every score (the thesis also gives the root ``t_v = 0``, section 7.2);
    - ``x ~ N(0, I)``; there is no label noise;
    - a sample with no class (all scores <= 0) is also rejected (``min_labels=1``): the
      thesis evaluates one-accuracy and ranking measures, which need a relevant class.

    The labels are a deterministic function of ``x``, so the Bayes rule
    (``LinearBayesRule(..., multilabel=True)``: ``{y : F(x, y) > 0}``) has error 0.
    ``y`` is a list of frozensets of leaf names (ints, breadth-first, root 0).
    ``metadata`` holds the node weights, the class weights and the acceptance rate.

    ``min_labels`` (an integer below ``sqrt(q)``) is the fewest classes a kept sample
    has; ``x`` is drawn in at most ``max_batches`` batches (each within about 128 MiB)
    before the generator gives up.  A tree too large to hold (over about 2 GiB of weights
    and nodes) is refused before it is built.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1)
    branching = _check_int(branching, "branching", 2, " (with one child per node the tree "
                                                      "has a single class)")
    depth = _check_int(depth, "depth", 1)
    min_labels = _check_int(min_labels, "min_labels", 1)
    max_batches = _check_int(max_batches, "max_batches", 1)
    _check_cai_size(branching, depth, n_features)
    variances = _cai_variances(variances, variance_decay, depth)
    rng = _rng(random_state)
    H = complete_tree(branching, depth)
    node_sd = np.zeros(len(H))
    node_sd[1:] = np.sqrt(variances[H.depths[1:] - 1])
    W = rng.standard_normal((len(H), n_features)) * node_sd[:, None]
    leaves = H.leaf_indices
    Lam = H.ancestor_matrix[leaves].astype(float)  # (q, n_nodes) indicator of anc(y)
    Wc = np.asarray(Lam @ W)
    q = len(leaves)
    bound = math.sqrt(q)
    if not min_labels < bound:
        raise InputError(f"min_labels must be below sqrt(q) = {bound:.3g}, the bound on the "
                         f"number of classes of a sample (q = {q} classes), got {min_labels}; "
                         "lower min_labels or grow the tree")
    X, Z, drawn, kept = _accepted_draws(rng, Wc, n_samples, (min_labels, bound), max_batches)
    classes = np.asarray(H.leaves)
    y = [frozenset(classes[row].tolist()) for row in Z]
    rule = LinearBayesRule(Wc, classes, multilabel=True)
    return Dataset(X=X, y=y, hierarchy=H, feature_names=_feature_names(n_features),
                   name="cai_synthetic", bayes_rule=rule, bayes_error=0.0,
                   metadata={"source": "Cai thesis 7.1.1", "node_weights": W,
                             "class_weights": Wc, "acceptance_rate": kept / drawn,
                             "branching": branching, "depth": depth,
                             "variances": variances})


def _check_cai_size(branching: int, depth: int, n_features: int) -> None:
    """Refuse a tree whose nodes and weights would not fit, before building it: about 2 KiB
    per node for the hierarchy, and ``n_features`` floats per node and per class."""
    if depth * math.log2(branching) > 40:   # far past the limit: do not form the huge ints
        size = "more than 2**40 classes"
    else:
        q = branching ** depth
        n_nodes = (branching ** (depth + 1) - 1) // (branching - 1)
        need = 2048 * n_nodes + 8 * n_features * (n_nodes + q)
        if need <= 2**31:
            return
        size = f"{n_nodes} nodes and {q} classes, which needs about {need / 2**30:.3g} GiB"
    raise InputError(f"branching={branching}, depth={depth} gives a tree of {size}; lower "
                     "branching or depth (the thesis uses 3 / 3 and 6 / 2)")


def _cai_variances(variances, variance_decay, depth: int) -> np.ndarray:
    """The node weight variances of depths 1..depth: ``variances``, else the powers of
    ``variance_decay``; all must be finite and positive."""
    if variances is None:
        decay = _check_real(variance_decay, "variance_decay")
        if not decay > 0:
            raise InputError(f"variance_decay must be positive, got {variance_decay!r}")
        with np.errstate(over="ignore", under="ignore"):
            out = decay ** np.arange(depth, dtype=float)
        if not np.all(np.isfinite(out) & (out > 0)):
            raise InputError(f"variance_decay={variance_decay!r} makes the variance at depth "
                             f"{depth} (variance_decay ** {depth - 1}) overflow or underflow; "
                             "bring it closer to 1")
        return out
    try:
        out = np.asarray(variances, dtype=float)
    except (TypeError, ValueError):
        out = None
    if out is None or out.shape != (depth,) or not np.all(np.isfinite(out) & (out > 0)):
        raise InputError(f"variances must hold {depth} finite positive numbers (depths "
                         f"1..{depth}), got {variances!r}")
    return out


def _accepted_draws(rng, Wc: np.ndarray, n_samples: int, label_range, max_batches: int):
    """Rejection sampling of Cai thesis section 7.1.1: ``x ~ N(0, I)`` drawn in batches until
    ``n_samples`` have a number of classes ``F(x, y) > 0`` in ``[low, high)``
    (``label_range``).  Returns ``(X, Z, drawn, kept)`` with ``Z`` the class indicator."""
    low, high = label_range
    q, n_features = Wc.shape
    # a batch holds its draws and their q scores: at most 2**24 numbers (128 MiB)
    most = max(1, 2**24 // (n_features + q))
    X_parts, Z_parts, drawn, kept = [], [], 0, 0
    batch = min(most, max(256, 4 * n_samples))
    for _ in range(max_batches):
        Xb = rng.standard_normal((batch, n_features))
        Zb = (Xb @ Wc.T) > 0
        k = Zb.sum(axis=1)
        ok = (k >= low) & (k < high)
        drawn += batch
        kept += int(ok.sum())
        X_parts.append(Xb[ok])
        Z_parts.append(Zb[ok])
        if kept >= n_samples:
            break
        # size the next batch from the acceptance rate seen so far (rare acceptance is common)
        rate = max(kept, 1) / drawn
        batch = int(min(max(256, 1.2 * (n_samples - kept) / rate), most))
    else:
        raise InputError(f"only {kept} of {drawn} draws had between {low} and sqrt(q) = "
                         f"{high:.3g} of the q = {q} classes, short of n_samples = {n_samples}; "
                         "change random_state or variances, use a smaller tree (lower branching "
                         "or depth), or raise max_batches")
    return np.concatenate(X_parts)[:n_samples], np.concatenate(Z_parts)[:n_samples], drawn, kept


# ---------------------------------------------------------------------- NHSVM 8.1
def make_nhsvm_balanced(n_samples: int = 15000, n_features: int = 1000, depth: int = 4,
                        branching: int = 2, random_state=None) -> Dataset:
    """Balanced synthetic data, NHSVM section 8.1.

    A complete ``branching``-ary tree with ``depth`` levels *counting the root level*
    (the paper's "complete balanced tree with depth 4" has M = 15 nodes and 8 leaves,
    Table 2); a weight ``W_n ~ N(0, I_d)`` for every node and ``x_i ~ N(0, I_d)``; each
    instance gets the leaf of maximal potential ``sum_{n in anc(l)} <W_n, x>``.

    Paper inconsistencies, resolved: the text indexes nodes by ``[2^3 - 1]`` (7 nodes)
    while a depth-4 tree and Table 2 have 15 (we use 15); the text says N = 15000 while
    Table 2 says 8K (default: 15000); d = 1000 is from Table 2.

    Labels are a deterministic function of ``x``: the Bayes rule is the argmax itself
    (``LinearBayesRule``), error 0.  ``y`` is a 1-D int array of leaf names.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1)
    depth = _check_int(depth, "depth", 2)
    branching = _check_int(branching, "branching", 2, " (with one child per node the tree "
                                                      "has a single class)")
    rng = _rng(random_state)
    H = complete_tree(branching, depth - 1)
    W = rng.standard_normal((len(H), n_features))
    X = rng.standard_normal((n_samples, n_features))
    leaves = H.leaf_indices
    Wc = np.asarray(H.ancestor_matrix[leaves].astype(float) @ W)
    rule = LinearBayesRule(Wc, np.asarray(H.leaves))
    y = rule.predict(X)
    return Dataset(X=X, y=y, hierarchy=H, feature_names=_feature_names(n_features),
                   name="nhsvm_balanced", bayes_rule=rule, bayes_error=0.0,
                   metadata={"source": "NHSVM 8.1 (balanced)", "node_weights": W,
                             "class_weights": Wc})


def make_nhsvm_unbalanced(n_samples: int = 10000, n_features: int = 1000, depth: int = 10,
                          random_state=None) -> Dataset:
    """Unbalanced synthetic data, NHSVM section 8.1.

    ``x ~ N(0, I_d)`` scaled to unit norm.  The space is cut by a random hyperplane
    through the origin (normal ``a ~ N(0, I_d)``) into two children; one child is a leaf,
    the other is cut again, until the tree has ``depth`` levels counting the root level
    (``depth - 1`` cuts, ``2 depth - 1`` nodes, ``depth`` leaves).  Node names are ints:
    root 0; cut ``k`` splits internal node ``2k`` into leaf ``2k + 1`` (side
    ``<a_k, x> < 0``) and node ``2k + 2``.

    Paper inconsistency, resolved: Table 2 gives M = 19 nodes but 11 labels, which no
    such tree has (19 nodes means 10 leaves, 11 leaves means 21 nodes).  We count depth
    as for the balanced set (depth 4 = 15 nodes), which gives M = 19 and 10 leaves.

    The Bayes rule is the cascade itself (``CascadeBayesRule``), error 0.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    n_features = _check_int(n_features, "n_features", 1)
    depth = _check_int(depth, "depth", 2)
    rng = _rng(random_state)
    n_cuts = depth - 1
    parents = {0: None}
    for k in range(n_cuts):
        parents[2 * k + 1] = 2 * k
        parents[2 * k + 2] = 2 * k
    H = Hierarchy.from_parents(parents)
    normals = rng.standard_normal((n_cuts, n_features))
    X = rng.standard_normal((n_samples, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    leaves = [2 * k + 1 for k in range(n_cuts)] + [2 * n_cuts]
    rule = CascadeBayesRule(normals, leaves)
    y = rule.predict(X)
    return Dataset(X=X, y=y, hierarchy=H, feature_names=_feature_names(n_features),
                   name="nhsvm_unbalanced", bayes_rule=rule, bayes_error=0.0,
                   metadata={"source": "NHSVM 8.1 (unbalanced)", "normals": normals})


# ---------------------------------------------------------------------- Wang, Shen & Pan 4.1
def _draw_exact(rng, n: int, fraction: float) -> np.ndarray:
    """``round(fraction * n)`` distinct sample indices ("x% of the samples are chosen")."""
    return rng.choice(n, size=int(round(fraction * n)), replace=False)


def make_wang_example1(n_samples: int = 100, random_state=None) -> Dataset:
    """Example 1 of Wang, Shen & Pan, section 4.1: labels independent of ``x``.

    ``x ~ U(0, 1)^2``; ``P(Y = 1) = P(Y = 2) = P(Y = 3) = 0.17``, ``P(Y = 4) = 0.49``
    whatever ``x``.  The Bayes rule always predicts 4; Bayes error 0.51 (paper: 0.51).

    Hierarchy (Fig. 2(a), "four leaf-nodes asymmetric tree"; the figure is not in the
    text): root 0 with children 4 and 5, node 5 with children 1, 2, 3.  This is the
    reading under which the paper's Bayes errors under ``l_sib`` and ``l_sub`` (0.51,
    Table 1) equal the 0-1 error: every Bayes mistake then disagrees at the top level,
    whose two nodes cover the whole tree.  Note the trap it sets: node 5 has mass 0.51
    > 0.49, so a greedy top-down rule on node marginals goes wrong.

    The paper does not give the training size (tuning and test sizes are n and 5e4);
    default ``n_samples = 100``.  ``y`` is a 1-D int array.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    rng = _rng(random_state)
    H = Hierarchy.from_parents({0: None, 4: 0, 5: 0, 1: 5, 2: 5, 3: 5})
    X = rng.uniform(0.0, 1.0, size=(n_samples, 2))
    classes = np.array([1, 2, 3, 4])
    p = np.array([0.17, 0.17, 0.17, 0.49])
    y = classes[rng.choice(4, size=n_samples, p=p)]
    rule = ProbabilisticBayesRule(classes, lambda Z: np.tile(p, (len(Z), 1)))
    return Dataset(X=X, y=y, hierarchy=H, feature_names=["x1", "x2"], name="wang_example1",
                   bayes_rule=rule, bayes_error=0.51,
                   metadata={"source": "Wang, Shen & Pan 4.1, Example 1",
                             "paper_bayes_error": 0.51})


def _example2_law(p: float) -> np.ndarray:
    """``M[k0, k]`` = P(Y = k + 1 | Y0 = k0 + 1) for Example 2's two independent shifts."""
    M = np.zeros((8, 8))
    for up, pu in ((True, p), (False, 1 - p)):
        for down, pd in ((True, p), (False, 1 - p)):
            k = np.arange(8)
            if up:
                k = np.minimum(k + 1, 7)
            if down:
                k = np.maximum(k - 1, 0)
            M[np.arange(8), k] += pu * pd
    return M


def make_wang_example2(n_samples: int = 100, shift_fraction: float = 0.05,
                       random_state=None) -> Dataset:
    """Example 2 of Wang, Shen & Pan, section 4.1: complete binary tree of depth 3.

    Leaves 1..8, internal nodes 9..14 (9 = {1, 2}, 10 = {3, 4}, 11 = {5, 6},
    12 = {7, 8}, 13 = {9, 10}, 14 = {11, 12}), root 0.  ``Y0 = ceil(8 x_1)``; then 5%
    of the samples are chosen and shifted up (``Y + 1`` unless 8), and another 5% are
    chosen and shifted down (``Y - 1`` unless 1).

    Two readings, resolved:

    - the paper writes ``X ~ U^2(-1, 1)``, "the uniform distribution on the unit
      square", with ``ceil(8 x_1) in {1..8}``; only ``U(0, 1)^2`` gives labels 1..8, so
      that is what is drawn;
    - the second 5% is drawn from *all* samples, independently of the first.  Then the
      Bayes rule predicts ``Y0`` and its error is ``1 - [6((1-p)^2 + p^2) + (1 - p) +
      (1 - p + p^2)] / 8 = 0.0834`` for ``p = 0.05``, the paper's 0.083 (drawing the
      second 5% among the unchosen 95% would give 0.0875).

    ``y`` is a 1-D int array.  ``bayes_rule.predict_proba`` gives ``P(Y = k | x)``.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    shift_fraction = _check_real(shift_fraction, "shift_fraction")
    if not 0 <= shift_fraction < 0.5:
        raise InputError(f"shift_fraction must be in [0, 0.5), got {shift_fraction!r}")
    rng = _rng(random_state)
    parents = {0: None, 13: 0, 14: 0, 9: 13, 10: 13, 11: 14, 12: 14}
    for leaf in range(1, 9):
        parents[leaf] = 9 + (leaf - 1) // 2
    H = Hierarchy.from_parents(parents)
    X = rng.uniform(0.0, 1.0, size=(n_samples, 2))
    y0 = np.clip(np.ceil(8 * X[:, 0]).astype(np.int64), 1, 8)
    y = y0.copy()
    up = _draw_exact(rng, n_samples, shift_fraction)
    y[up] = np.minimum(y[up] + 1, 8)
    down = _draw_exact(rng, n_samples, shift_fraction)
    y[down] = np.maximum(y[down] - 1, 1)
    classes = np.arange(1, 9)
    M = _example2_law(shift_fraction)

    def proba(Z):
        k0 = np.clip(np.ceil(8 * Z[:, 0]).astype(np.int64), 1, 8) - 1
        return M[k0]

    bayes_error = 1.0 - float(np.mean(M.max(axis=1)))
    return Dataset(X=X, y=y, hierarchy=H, feature_names=["x1", "x2"], name="wang_example2",
                   bayes_rule=ProbabilisticBayesRule(classes, proba), bayes_error=bayes_error,
                   metadata={"source": "Wang, Shen & Pan 4.1, Example 2",
                             "paper_bayes_error": 0.083,
                             "clean_labels": y0})


def make_wang_example3(n_samples: int = 150, noise: float = 0.2, random_state=None) -> Dataset:
    """Example 3 of Wang, Shen & Pan, section 4.1: four quadrants, 20% relabelled.

    ``x ~ U(-1, 1)^2``; ``Y = 1`` if ``x1 < 0, x2 < 0``; 2 if ``x1 < 0, x2 >= 0``; 3 if
    ``x1 >= 0, x2 < 0``; 4 if ``x1 >= 0, x2 >= 0``; then 20% of the samples are chosen
    and given one of the other three classes uniformly at random.  Hierarchy: root 0,
    node 5 = {1, 2}, node 6 = {3, 4} (the paper says "nodes 1 and 2 are siblings of node
    5"; it means children).  Bayes rule: the quadrant; Bayes error 0.2 (paper: 0.200).
    Training sizes in the paper: 50, 150, 500, 1500 (default 150).  ``y`` is 1-D int.
    """
    n_samples = _check_int(n_samples, "n_samples", 1)
    noise = _check_real(noise, "noise")
    if not 0 <= noise < 0.75:
        raise InputError(f"noise must be in [0, 0.75) so that the quadrant stays the Bayes "
                         f"rule, got {noise!r}")
    rng = _rng(random_state)
    H = Hierarchy.from_parents({0: None, 5: 0, 6: 0, 1: 5, 2: 5, 3: 6, 4: 6})
    X = rng.uniform(-1.0, 1.0, size=(n_samples, 2))

    def quadrant(Z):
        return 1 + 2 * (Z[:, 0] >= 0) + (Z[:, 1] >= 0)

    y0 = quadrant(X).astype(np.int64)
    y = y0.copy()
    flip = _draw_exact(rng, n_samples, noise)
    # one of the other three classes, uniformly: add 1, 2 or 3 modulo 4
    y[flip] = (y0[flip] - 1 + rng.integers(1, 4, size=len(flip))) % 4 + 1
    classes = np.arange(1, 5)

    def proba(Z):
        P = np.full((len(Z), 4), noise / 3)
        P[np.arange(len(Z)), quadrant(Z) - 1] = 1.0 - noise
        return P

    return Dataset(X=X, y=y, hierarchy=H, feature_names=["x1", "x2"], name="wang_example3",
                   bayes_rule=ProbabilisticBayesRule(classes, proba), bayes_error=float(noise),
                   metadata={"source": "Wang, Shen & Pan 4.1, Example 3", "paper_bayes_error": 0.2,
                             "clean_labels": y0})
