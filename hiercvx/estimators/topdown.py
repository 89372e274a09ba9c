"""The divide-and-conquer SVM of Cai thesis section 7.4.2 (DNC-SVM): one flat SVM per node.

Training (thesis 7.4.2, steps 1-3): every internal node ``v`` gets the training samples with
at least one label below ``v``; a sample's targets at ``v`` are the children of ``v`` that
have one of its labels below them (several children for multi-label data, or when a DAG
leaf is reachable through several children); a flat Crammer-Singer SVM
(:class:`~hiercvx.estimators.MulticlassSVC`) is trained on them, independently of every
other node.  (A sample whose targets are all the children seen at ``v`` has no
(relevant, irrelevant) pair there, so it constrains nothing and is left out of ``v``'s SVM.)

Prediction starts at the root and lets each node's classifier route the sample to one of
its children; the leaf reached is the predicted class.  For multi-label data each node
routes to the set of children its classifier predicts (its own label-set rule), and the
prediction is the set of leaves reached.

Class scores (for the ranking metrics of thesis 7.3) are the *top-down ranking*: the
classes in the order of a depth-first walk from the root that visits each node's children
in decreasing local score (ties: the hierarchy's child order).  The greedy route comes
first, then the classes that leave it at the deepest level, and so on.  A class's score is
``q - 1 - position`` (``q`` classes); on a DAG a class takes its best position over its
root-to-leaf paths.
"""

from __future__ import annotations

import logging

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..exceptions import InputError, LabelError, ProblemTooLargeError
from ..kernels import Kernel, median_heuristic
from ..reference import check_size
from ._base import (NodeScoresMixin, LabelSetScoreMixin, check_solver_options, check_training_weights,
                    held_nodes, is_precomputed, kernel_parts, ravel_column_target, solver_route,
                    validate_training_X, validate_X)
from ._habits import reports_progress, verbosity
from ._labels import in_target_form, read_training_labels, user_label_sets, user_names
from .svm import MulticlassSVC

logger = logging.getLogger(__name__)

__all__ = ["TopDownSVC", "top_down_ranking"]

def _lexicographic_positions(keys: np.ndarray) -> np.ndarray:
    """Per row of ``keys`` ``(n, P, D)``: the position of each of the ``P`` key tuples in
    lexicographic order (ties keep their index order).  Stable sorts from the last key to
    the first (a radix sort), vectorized over rows."""
    n, P, D = keys.shape
    order = np.broadcast_to(np.arange(P), (n, P)).copy()
    for level in range(D - 1, -1, -1):
        k = np.take_along_axis(keys[:, :, level], order, axis=1)
        order = np.take_along_axis(order, np.argsort(k, axis=1, kind="stable"), axis=1)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(P)[None, :], axis=1)
    return position


def root_to_leaf_paths(H, classes):
    """Every root-to-leaf path as a row of edge ids (padded with ``n_edges``), the class
    column of its leaf, and the ``(parent, child) -> edge id`` map."""
    edge_of = {(int(p), int(c)): e for e, (p, c) in enumerate(H.edge_index)}
    col = {H.index(c): j for j, c in enumerate(classes)}
    paths, stack = [], [(H.index(H.root),)]
    while stack:  # depth-first, children in hierarchy order
        path = stack.pop()
        ch = H.children_indices[path[-1]]
        if len(ch) == 0:
            paths.append(path)
        else:
            stack.extend(path + (int(c),) for c in ch[::-1])
    depth = max(1, max(len(p) for p in paths) - 1)
    path_edges = np.full((len(paths), depth), len(edge_of), dtype=np.int64)
    for p, path in enumerate(paths):
        path_edges[p, :len(path) - 1] = [edge_of[e] for e in zip(path[:-1], path[1:])]
    return path_edges, np.array([col[p[-1]] for p in paths], dtype=np.int64), edge_of


def top_down_ranking(H, local: dict, classes, paths=None) -> np.ndarray:
    """Class scores of the top-down ranking, ``(n_samples, n_classes)``.

    ``local[v]`` holds ``(n_samples, len(H.children(v)))`` scores of every internal node
    ``v``.  The classes are ranked as a depth-first walk from the root that visits each
    node's children in decreasing local score (ties: child order); on a DAG a class keeps
    its best position over its paths.  Returns ``q - 1 - position``, so the class reached by
    greedy routing scores ``q - 1``.  Vectorized: each path is its tuple of sibling ranks
    along the way, and the tuples are sorted lexicographically per sample.
    """
    classes = list(classes)
    path_edges, path_class, edge_of = root_to_leaf_paths(H, classes) if paths is None else paths
    n = next(iter(local.values())).shape[0]
    ranks = np.zeros((n, len(edge_of) + 1), dtype=np.int64)  # last column: padding
    for v in np.flatnonzero(~H.leaf_mask):
        S = local[H.nodes[v]]
        order = np.argsort(-S, axis=1, kind="stable")  # rank 0 = best; ties by child order
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(S.shape[1])[None, :], axis=1)
        ranks[:, [edge_of[(int(v), int(c))] for c in H.children_indices[v]]] = rank
    # padding never decides: a path ends at a leaf, so no path is a prefix of another
    n_paths, depth = path_edges.shape
    position = np.empty((n, n_paths), dtype=np.int64)
    step = max(1, int(4_000_000 // max(1, n_paths * depth)))  # bounded memory
    for lo in range(0, n, step):
        keys = ranks[lo:lo + step][:, path_edges]  # (chunk, paths, depth)
        position[lo:lo + step] = _lexicographic_positions(keys)
    q = len(classes)
    best = np.full((n, q), n_paths, dtype=np.int64)
    np.minimum.at(best.T, path_class, position.T)  # a DAG class: its best path
    # positions over paths -> positions over classes
    class_order = np.argsort(best, axis=1, kind="stable")
    class_pos = np.empty_like(class_order)
    np.put_along_axis(class_pos, class_order, np.arange(q)[None, :], axis=1)
    return (q - 1 - class_pos).astype(float)


class TopDownSVC(NodeScoresMixin, LabelSetScoreMixin, ClassifierMixin, BaseEstimator):
    """Divide-and-conquer SVM (Cai thesis 7.4.2): a Crammer-Singer SVM at every internal node
    over its children, applied top-down from the root.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The class hierarchy (tree or DAG); None: a flat hierarchy over the labels seen in
        ``fit``; the model is then exactly one :class:`~hiercvx.estimators.MulticlassSVC`.
    C, fit_intercept, intercept_scaling, kernel, solver, tol, max_iter, verbose : \
default=1.0, True, 1.0, "linear", "fast", 1e-6, 10000, False
        Passed to every node's :class:`~hiercvx.estimators.MulticlassSVC`: C in LIBLINEAR's meaning
        (``1/2 ||W||^2 + C sum_i xi_i`` per node), ``fit_intercept=True`` (as in
        ``LinearSVC``) a regularized bias per node's class through a constant feature
        ``intercept_scaling`` appended to X (``k + intercept_scaling**2`` for other kernels),
        each node's ``intercept_`` on its estimator; ``solver="fast"``: the node's margin
        engine, certified gap ``tol``, ``max_iter`` its budget per node (as in
        :class:`~hiercvx.estimators.MulticlassSVC`); ``"reference"``: CVXPY.  For ``kernel="rbf"``
        without a width (a :class:`hiercvx.kernels.Kernel` carries one) the median heuristic is
        taken once on all training data, so every node uses the same kernel.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        As in :class:`~hiercvx.estimators.HierarchicalSVC`: labels come as loaders give them
        (label sets with their ancestors; a label that stops at an internal node is a leaf for
        the node itself, Cai thesis section 3.1, predicted back as the node).
    solver_options : dict, Options or None, default=None
        Passed to every node's :class:`~hiercvx.estimators.MulticlassSVC`.
        ``solver_options={"warm_start": True}`` fits the previous fit's node SVMs again, each
        from its own dual variables when they fit the new problem at its node (a path of
        ``C`` on the same data).  ``solver="reference"`` checks every node's declaration
        against ``solver_options["max_size"]`` before fitting any node; a refusal names the
        largest, which admits them all.
    max_paths : int, default=200000
        The largest number of root-to-leaf paths the top-down ranking enumerates (a DAG can
        have exponentially many); a hierarchy with more is refused before training.

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    hierarchy_ : Hierarchy
        The hierarchy trained on (with self leaves when labels stop at internal nodes).
    self_leaves_ : PartialPaths or None
        The self-leaf map (:class:`~hiercvx.hierarchy.PartialPaths`), or None.
    classes_ : ndarray of shape (n_classes,)
        The leaves of the hierarchy (columns of ``class_scores``), in the caller's names.
    multilabel_ : bool
        Whether the training labels were label sets.
    estimators_ : dict
        ``node -> fitted MulticlassSVC`` for the nodes whose training data reach two or more
        children.  Its classes are positions in ``hierarchy_.children(node)``.
    routes_ : dict
        ``node -> int array`` of the child positions seen in training at every internal
        node.
    child_counts_ : dict
        ``node -> (n_children,)`` (weighted) number of training samples with a label below
        each child.  A node without a classifier (fewer than two children seen, or nothing
        that tells them apart) scores its children by these counts: it routes to the most
        frequent child (multi-label: every most frequent child); a node that no training
        sample reaches scores all children 0 (the first one wins).
    n_iter_ : int
        Total solver iterations over all nodes.
    node_calibration_ : NodeCalibration or None
        The :class:`~hiercvx.metrics.NodeCalibration` of ``node_decision_function`` (local
        routing margins); None without a ``hierarchy``.
    """

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                 kernel="linear", solver="fast", tol=1e-6, max_iter=10000, verbose=False,
                 internal_labels="self_leaf", solver_options=None, max_paths=200_000):
        self.hierarchy = hierarchy
        self.internal_labels = internal_labels
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.kernel = kernel
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose
        self.solver_options = solver_options
        self.max_paths = max_paths

    # ------------------------------------------------------------------ fit
    def _precomputed(self) -> bool:
        return is_precomputed(self.kernel)

    @reports_progress
    def fit(self, X, y, sample_weight=None):
        """Fit one :class:`~hiercvx.estimators.MulticlassSVC` per internal node (thesis 7.4.2,
        steps 1-3)."""
        check_solver_options(self.C, "C", self.tol, self.solver, self.max_iter, who=type(self).__name__)
        given = X  # the node calibration reads X as the caller gave it (its feature names)
        X = validate_training_X(self, X, precomputed=self._precomputed())
        y = ravel_column_target(y)
        read = read_training_labels(y, self.hierarchy, X.shape[0], who=type(self).__name__,
                                    internal_labels=self.internal_labels)
        H, classes, labels, multilabel = read.hierarchy, read.classes, read.labels, read.multilabel
        _check_leaf_labels(H, classes, labels, multilabel)
        R = H.closure(labels)  # R[i, v]: sample i has a label at or below node v (unknowns raise)
        weight = check_training_weights(sample_weight, X, self.C)
        if weight is not None:
            R = R & (weight > 0)[:, None]  # a zero-weight sample carries no mass at any node
        self._n_paths(H, self.max_paths)  # refuse an unmanageable DAG before training
        routes, counts, problems = self._node_problems(X, H, R, weight, multilabel)
        svms = self._node_svms(problems, self._shared_kernel(X))
        if self.solver == "reference":
            self._check_reference_sizes(svms, problems)
        n_iter, log = 0, logger.info if verbosity(self.verbose) else logger.debug
        for k, (name, (_, Xv, targets, w)) in enumerate(problems.items(), start=1):
            log("TopDownSVC node %r (%d of %d node SVMs)", name, k, len(problems))
            n_iter += int(svms[name].fit(Xv, targets, sample_weight=w).n_iter_)
        self.hierarchy_ = H
        self.self_leaves_ = read.paths
        self.classes_ = user_names(classes, read.paths)
        self._class_cols = H.indices(classes.tolist())
        self.multilabel_ = multilabel
        self._target_form = read.form   # predict answers in the form of an indicator y
        self.estimators_ = svms
        self.routes_ = routes
        self.child_counts_ = counts
        self._node_rows = {name: problem[0] for name, problem in problems.items()}
        self._paths_data = root_to_leaf_paths(H, classes.tolist())
        self.n_iter_ = n_iter
        self._fit_node_calibration(given, held=held_nodes(labels, H, self.hierarchy))
        return self

    def _node_problems(self, X, H, R, weight, multilabel):
        """Thesis 7.4.2, steps 1-2: per internal node the child positions seen (``routes_``),
        the (weighted) samples per child (``child_counts_``) and, for the nodes whose samples
        tell two or more children apart, the SVM problem ``(rows, X rows, targets, weights)``
        (``R``: each sample's nodes closed upward)."""
        routes, counts, problems = {}, {}, {}
        for v in np.flatnonzero(~H.leaf_mask):
            ch = H.children_indices[v]
            rows = np.flatnonzero(R[:, v])
            T = R[np.ix_(rows, ch)]  # targets at v: children with a label below them
            seen = np.flatnonzero(T.any(axis=0))
            routes[H.nodes[v]] = seen
            w = np.ones(len(rows)) if weight is None else weight[rows]
            counts[H.nodes[v]] = w @ T  # (weighted) training samples per child
            rows, T, active = _informative(rows, T, seen)
            if len(active) < 2:
                continue  # nothing to tell the children apart: v predicts its most frequent child
            if multilabel or np.any(T.sum(axis=1) > 1):
                targets = [frozenset(np.flatnonzero(t).tolist()) for t in T]
            else:
                targets = np.argmax(T, axis=1)
            Xv = X[np.ix_(rows, rows)] if self._precomputed() else X[rows]
            problems[H.nodes[v]] = (rows, Xv, targets, None if weight is None else weight[rows])
            logger.debug("node %r: %d samples, %d children seen", H.nodes[v], len(rows), len(seen))
        return routes, counts, problems

    def _node_svms(self, problems, kernel) -> dict:
        """An unfitted :class:`~hiercvx.estimators.MulticlassSVC` per node problem, with this
        estimator's settings; with ``warm_start`` the previous fit's node SVM, so that it starts
        from its own dual variables when they fit the new problem at its node (MulticlassSVC's warm
        start)."""
        previous = getattr(self, "estimators_", {}) if solver_route(self).warm_start else {}
        settings = dict(C=self.C, fit_intercept=self.fit_intercept,
                        intercept_scaling=self.intercept_scaling, kernel=kernel,
                        solver=self.solver, tol=self.tol, max_iter=self.max_iter,
                        solver_options=self.solver_options, verbose=self.verbose)
        svms = {}
        for name in problems:
            clf = previous.get(name)
            svms[name] = (clf.set_params(**settings) if isinstance(clf, MulticlassSVC)
                          else MulticlassSVC(**settings))
        return svms

    def _check_reference_sizes(self, svms, problems) -> None:
        """Refuse, before any node is fitted, a fit whose largest node reference is over
        ``solver_options["max_size"]``: every node is checked against the same limit, so the
        refusal names the largest node's size, which admits them all."""
        sizes = {name: svms[name]._reference_size(Xv, targets, w)
                 for name, (_, Xv, targets, w) in problems.items()}
        if not sizes:
            return
        node = max(sizes, key=lambda name: sizes[name][0].nonzeros)
        size, what = sizes[node]
        check_size(size.variables, size.constraints, size.nonzeros, solver_route(self).max_size,
                   what=f"{what} at node {node!r} (the largest of the {len(sizes)} node SVMs)")

    def _shared_kernel(self, X):
        """The kernel of every node's SVM: a Gaussian without a width gets the median heuristic
        on all training data once, so that every node uses the same kernel."""
        kernel, sigma = kernel_parts(self.kernel)
        if isinstance(kernel, str) and kernel in ("rbf", "gaussian"):
            return Kernel("rbf", sigma=median_heuristic(X) if sigma is None else sigma)
        return self.kernel

    @staticmethod
    def _n_paths(H, max_paths: int) -> int:
        """The number of root-to-leaf paths of ``H``, refused above ``max_paths``."""
        if (isinstance(max_paths, (bool, np.bool_))
                or not isinstance(max_paths, (int, np.integer)) or max_paths < 1):
            raise InputError(f"max_paths must be a positive integer, got {max_paths!r}")
        counts = np.zeros(len(H), dtype=float)
        counts[H.index(H.root)] = 1.0
        for v, ps in enumerate(H.parent_indices):
            if len(ps):
                counts[v] = counts[ps].sum()
        total = float(counts[H.leaf_mask].sum())
        if total > max_paths:
            raise ProblemTooLargeError(
                f"the hierarchy has {total:.0f} root-to-leaf paths (limit max_paths={max_paths}); "
                "the top-down ranking enumerates them. Use a tree (e.g. a spanning tree of the DAG) "
                "or raise max_paths")
        return int(total)

    # ------------------------------------------------------------------ scores
    def _check_X(self, X):
        check_is_fitted(self)
        precomputed = self._precomputed()
        return validate_X(self, X, accept_sparse=False if precomputed else "csr", dtype=np.float64,
                          reset=False)

    def _local(self, X) -> dict:
        """Local scores per internal node: ``(n, n_children)`` over ``children(v)`` order;
        ``-inf`` for children never seen in training at ``v``; a node without classifier
        scores its seen children by their training counts."""
        H, n, out = self.hierarchy_, X.shape[0], {}
        for v in np.flatnonzero(~H.leaf_mask):
            name = H.nodes[v]
            k = len(H.children_indices[v])
            seen = self.routes_[name]
            S = np.full((n, k), -np.inf)
            clf = self.estimators_.get(name)
            if clf is not None:
                Xv = X[:, self._node_rows[name]] if self._precomputed() else X
                S[:, np.asarray(clf.classes_, dtype=np.int64)] = clf.class_scores(Xv)
            elif len(seen):  # no classifier: the training frequency of each seen child
                S[:, seen] = self.child_counts_[name][seen]
            else:
                S[:] = 0.0  # no training data below v: every child ties, the first one wins
            out[name] = S
        return out

    #: calibrated on the local routing margins (the class scores are ranking positions)
    _node_margin_method = "threshold"

    def _node_margins(self, X, method: str):
        """Node margins from the local classifiers (Cai thesis 7.4.2's top-down routing).

        Parameters
        ----------
        X : array of shape (n_samples, n_features), or the test-train Gram matrix
        method : {"threshold", "max_marginal"} read the local classifiers; any other method
            reads the ranking class scores (:meth:`class_scores`)

        Returns
        -------
        ndarray of shape (n_samples, n_nodes), over ``hierarchy.nodes``

        Notes
        -----
        The local margin of the edge ``p -> c`` is ``l_pc = s_p(c) - max_c' s_p(c') + t_p``
        for ``"threshold"`` (``t_p`` the label-set threshold of ``p``, 0 for a single-label
        fit; ``l_pc >= 0`` exactly when ``p`` routes to ``c``) and
        ``l_pc = s_p(c) - max_{c' != c} s_p(c')`` for ``"max_marginal"``.  The routing margin
        ``r_v = max_p min(r_p, l_pv)`` over the parents ``p`` (``r_root = +inf``) is ``>= 0``
        exactly when a routed path reaches ``v``, as ``predict`` reaches nodes through any
        parent.  A node scores ``m_v = max(r_v, max_c m_c)`` over its children ``c``, so it is
        ``>= 0`` exactly when it is reached or lies above a reached class: on the nodes of
        ``predict``'s label sets closed upward, also on a DAG, where an ancestor of the
        predicted class need not be on its route.  On a tree ``m_v = r_v``, the smallest local
        margin on the path to ``v``.  No node scores above an ancestor.
        """
        if method not in ("threshold", "max_marginal"):
            return super()._node_margins(X, method)
        X = self._check_X(X)
        local = self._local(X)
        H = self.hierarchy_
        m = np.full((X.shape[0], len(H)), np.inf)
        edge = {p: self._local_margins(H.nodes[p], local[H.nodes[p]], method)
                for p in np.flatnonzero(~H.leaf_mask)}
        for v in range(1, len(H)):  # parents before children: the routing margins r_v
            at = {p: int(np.flatnonzero(H.children_indices[p] == v)[0]) for p in H.parent_indices[v]}
            reach = [np.minimum(m[:, p], edge[p][:, k]) for p, k in at.items()]
            m[:, v] = np.max(reach, axis=0)
        for v in range(len(H) - 1, -1, -1):  # children before parents: ancestors of reached nodes
            ch = H.children_indices[v]
            if len(ch):
                m[:, v] = np.maximum(m[:, v], m[:, ch].max(axis=1))
        # nodes above every branching (the root, one-child chains) take the row's largest margin
        finite = np.where(np.isfinite(m), m, -np.inf).max(axis=1, keepdims=True)
        m = np.where(np.isinf(m) & (m > 0), np.where(np.isfinite(finite), finite, 0.0), m)
        return m[:, H.indices(list(self._node_hierarchy().nodes))]

    def _local_margins(self, name, S, method: str) -> np.ndarray:
        """``(n, n_children)`` local margins at node ``name`` (unseen children: one below the
        lowest margin of the seen ones; one child: +inf, it is always routed to)."""
        if S.shape[1] == 1:
            return np.full(S.shape, np.inf)
        seen = np.isfinite(S)
        low = np.where(seen, S, np.inf).min(axis=1, keepdims=True)
        S = np.where(seen, S, np.where(np.isfinite(low), low, 0.0) - 1.0)
        if method == "threshold":
            clf = self.estimators_.get(name)
            t = float(clf.threshold_) if (clf is not None and self.multilabel_) else 0.0
            return S - S.max(axis=1, keepdims=True) + t
        order = np.sort(S, axis=1)
        best, second = order[:, -1:], order[:, -2:-1]
        return S - np.where(S >= best, second, best)

    def local_scores(self, X) -> dict:
        """``{internal node: (n_samples, n_children) scores}``, columns in
        ``hierarchy_.children(node)`` order (see ``_local`` for unseen children)."""
        return self._local(self._check_X(X))

    def _class_scores(self, X) -> np.ndarray:
        return top_down_ranking(self.hierarchy_, self._local(X), self.classes_.tolist(),
                                paths=self._paths_data)

    def class_scores(self, X) -> np.ndarray:
        """The top-down ranking as scores ``(n_samples, n_classes)`` in ``classes_`` order:
        ``q - 1 - position`` of each class in the depth-first walk that visits children in
        decreasing local score (the routed class scores ``q - 1``)."""
        return self._class_scores(self._check_X(X))

    def decision_function(self, X):
        """:meth:`class_scores`; with two classes (single-label), the scikit-learn convention:
        one column, ``score(classes_[1]) - score(classes_[0])`` (here +-1)."""
        S = self.class_scores(X)
        if S.shape[1] == 2 and not self.multilabel_:
            return S[:, 1] - S[:, 0]
        return S

    def predict(self, X):
        """The leaf reached from the root by the node classifiers; for a multi-label fit the
        set of leaves reached when every node routes to the children its classifier predicts.
        After a fit on a 0/1 indicator ``y``, an indicator with its columns."""
        X = self._check_X(X)
        if not self.multilabel_:
            return in_target_form(self, self.classes_[np.argmax(self._class_scores(X), axis=1)])
        H = self.hierarchy_
        local = self._local(X)
        reached = np.zeros((X.shape[0], len(H)), dtype=bool)
        reached[:, H.index(H.root)] = True
        for v in np.flatnonzero(~H.leaf_mask):  # topological order: parents are settled first
            name = H.nodes[v]
            S = local[name]
            clf = self.estimators_.get(name)
            if clf is not None:  # the node classifier's own label-set rule
                top = S.max(axis=1, keepdims=True)
                # a gap at the threshold up to round-off (64 ulps of the scores' magnitude, so
                # that dense and CSR copies of X, whose products round differently, agree)
                scale = np.maximum(np.abs(S).max(axis=1, keepdims=True), 1e-300)
                slack = 64 * np.finfo(float).eps * scale
                chosen = top - S <= clf.threshold_ + slack
            else:  # the most frequent children in training (ties: all of them)
                chosen = S >= S.max(axis=1, keepdims=True)
            ch = H.children_indices[v]
            reached[:, ch] |= reached[:, [v]] & chosen
        hits = reached[:, self._class_cols]
        return in_target_form(self, user_label_sets(
            [frozenset(self.classes_[row].tolist()) for row in hits], self.self_leaves_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self._precomputed()
        return tags


def _check_leaf_labels(H, classes, labels, multilabel) -> None:
    """Refuse labels that are not leaves of ``H`` (thesis section 3.1; empty label sets are
    refused where every estimator reads its labels, :func:`read_training_labels`)."""
    leaf_set = set(classes.tolist())
    off_leaf = {v for s in labels for v in (s if multilabel else (s,)) if v not in leaf_set}
    internal = [v for v in off_leaf if v in H][:3]
    if internal:  # only with a hierarchy whose own leaves are not the classes
        raise LabelError(f"labels must be leaves of the hierarchy (thesis section 3.1); "
                         f"{internal!r} are not")


def _informative(rows, T, seen):
    """The samples at a node that constrain its ranking SVM, their targets ``T`` and the
    children they still tell apart.  A sample whose targets are every such child has no
    (relevant, irrelevant) pair, so it puts no constraint on the SVM (which refuses it);
    dropping samples can leave fewer children and so more such samples, hence the repeat."""
    active = seen
    while len(active) >= 2:
        informative = T[:, active].sum(axis=1) < len(active)
        rows, T = rows[informative], T[informative]
        now = np.flatnonzero(T.any(axis=0))
        if len(now) == len(active):
            break
        active = now
    return rows, T, active
