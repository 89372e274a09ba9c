"""The NHSVM models: the normalized hierarchical SVM (10) / (13) and the shared-norm SVM (14).

Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479,
2016.  Notation (sections 3-6): ``M`` nodes (``H.nodes``, root included), leaves ``L``
(``H.leaves``), ``anc(l)`` the ancestors of ``l`` with ``l`` itself, node weights ``W``
``(M, d)``, path weights ``alpha`` ``(M,)``; the leaf-path matrix ``A`` ``(|L|, M)`` has
``A[l, n] = 1`` iff ``n in anc(l)``.

What the CVXPY declarations (:mod:`hiercvx.formulations.nhsvm`) and the fast solvers
(:mod:`hiercvx.solvers.nhsvm_fw`, :mod:`hiercvx.solvers.shared_norm`) both use, validated
once, in numpy:

* :func:`prepare` -> :class:`NHSVMModel`: labels as closed sets, the normalized attributes
  (5) ``Lam[l, n] = sqrt(alpha_n) [n in anc(l)]``, the normalized margin (9)
  ``Delta(l, l') = sqrt(sum_{n in anc(l) xor anc(l')} alpha_n)``, the decomposable loss of
  section 7.1 (multi-label), the primal objective of (10) / (13) (:func:`primal_objective`),
  node scores (:func:`node_scores`), a certified lower bound at a dual point, and the
  loss-augmented oracle (over the leaves, or over label sets through
  :class:`~hiercvx.inference.LabelSetOracle`, the DAG program (19));
* :func:`prepare_shared` -> :class:`~hiercvx.models.nhsvm.SharedNormModel`: the shared-norm SVM (14)
  ``min lam sum_n ||U_n||^2 / alpha_n + sum_i hinge_i`` over ``A alpha <= 1``, its objective
  at the alpha step (20) and the dual of (14) through the path cover;
* path weights (6)-(8), the alpha step (20) and the path cover
  (``hiercvx.models._nhsvm_paths``); labels, leaf vertices, interchangeable leaves and
  LIBLINEAR's bias (``hiercvx.models._nhsvm_leaves``); both re-exported here.

Single-label models keep only what the data use: the rows of the margin / loss from the
leaves some sample holds (``held_leaves``, ``offset_rows``, ``loss_rows``) and the sparse
``A``; the dense pieces over all leaves (``Lam``, (9) as a matrix, the pair model of
:mod:`hiercvx.models.margin`) are built on first use (the CVXPY references).
``collapsed()`` replaces each group of interchangeable idle leaves by one leaf of that
multiplicity (:class:`~hiercvx.models.nhsvm.CollapsedLeaves`).

Intercept (both models): LIBLINEAR's regularized bias (:mod:`hiercvx.bias`).  With
``fit_intercept`` the model's ``X`` is ``[X, s]`` (``s = intercept_scaling``; the features as
given are ``X_features``) and the augmented weights are ``W~_n = [W_n, b_n / s]``: one bias
per node, node scores ``sqrt(alpha_n) (W_n . x + b_n)`` for (10) / (13) and ``U_n . x + b_n``
for (14), regularized as ``lam (||W_n||^2 + b_n^2 / s^2)`` (resp. ``/ alpha_n``).
:meth:`~NHSVMModel.objective` and :meth:`~NHSVMModel.scores` take weights without the bias
column and ``intercept=``; ``split_weights`` /
``augmented_weights`` convert.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .._validation import check_features
from ..bias import append_constant, bias_scaling
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..inference import DecomposableLoss, LabelSetOracle, as_loss
from ..losses import loss_matrix
from . import margin as _margin
from ._base import Model, Variable
from ._nhsvm_leaves import (CollapsedLeaves, LeafVertices, NodeBias, class_loss, closed_labels,
                            dense, held_rows, interchangeable_groups, leaf_pair_loss,
                            leaf_vertices, leaf_violations, one_leaf_margin)
from ._nhsvm_paths import (DAG_T, MAX_RHO, PATH_METHODS, barrier_alpha, check_hierarchy,
                           check_path_weights, check_rho, check_T, cover, dag_alpha,
                           depth_levels, edge_differences, leaf_paths, min_path_cover,
                           node_matrix, optimal_alpha, path_weight_settings, path_weights_route, ratio_sum,
                           scaled_alpha, solve_path_weights, tree_path_weights)

__all__ = [
    "PATH_METHODS", "VARIANTS", "DAG_T", "MAX_RHO",
    "check_hierarchy", "check_T", "check_rho", "leaf_paths", "edge_differences", "depth_levels",
    "cover", "scaled_alpha", "ratio_sum", "node_matrix",
    "check_path_weights", "path_weight_settings", "path_weights_route", "solve_path_weights", "tree_path_weights",
    "resolve_alpha",
    "optimal_alpha", "dag_alpha", "barrier_alpha", "min_path_cover",
    "closed_labels", "class_loss",
    "NHSVMModel", "prepare", "node_scores", "primal_objective", "multilabel_slacks",
    "SharedNormModel", "CollapsedLeaves", "prepare_shared",
]

VARIANTS = ("nhsvm", "13")


def resolve_alpha(alpha, H: Hierarchy, T=None) -> np.ndarray:
    """Path weights from ``alpha``: an array over ``H.nodes`` (checked against (4) / (8)), or a
    method name / ``None`` (``"power"`` on trees, ``"dag"`` on DAGs) where the closed form of
    :func:`solve_path_weights` applies; the programs (7), (8) and (6) on DAGs are resolved by
    :func:`hiercvx.formulations.nhsvm.prepare`."""
    if alpha is None:
        alpha = "power" if H.is_tree else "dag"
    if isinstance(alpha, str):
        return solve_path_weights(H, method=alpha, T=T)
    return check_path_weights(alpha, H, T=T)


# ====================================================================== NHSVM (10) / (13)
@dataclass(eq=False)
class NHSVMModel(NodeBias, LeafVertices, Model):
    """Validated NHSVM inputs (:func:`prepare`); what the references and fast solvers share.

    ``T`` ``(n, M)`` bool: each sample's closed label set ``y_i``; ``leaf_pos``: its leaf
    (position in ``H.leaves``, single-label); ``loss``: the decomposable loss of section 7.1
    (multi-label).  ``X``: the features the solvers see (``[X, s]`` with ``fit_intercept``),
    ``X_features``: as given (module docstring).

    Single-label: ``held_leaves`` the leaves some sample holds (sorted), ``held_row[i]``
    sample ``i``'s row among them; ``offset_rows`` / ``scale_rows`` ``(len(held_leaves), q)``:
    ``b`` and ``sigma`` from each held leaf to every leaf (``b = (9)``, ``sigma = 1`` for (10);
    ``b = 1``, ``sigma = 1 / (9)`` for (13); 0 on the own leaf), the only rows the problem
    uses.  The dense pieces over all leaves are built on first use (the fast path on a wide
    hierarchy never needs them): ``Lam`` ``(|L|, M)`` the normalized class attributes (5),
    ``structural`` ``(|L|, |L|)`` the normalized margin (9), ``margin`` the pair model of
    :mod:`hiercvx.models.margin` ((10)), ``paths`` / ``offset`` / ``scale`` the leaf vertices.

    ``multiplicity`` (None: all 1) makes node ``n`` stand for ``k_n`` interchangeable leaves
    (:meth:`collapsed`): its score is ``sqrt(alpha_n / k_n) W_n . x`` while the margin (9)
    keeps ``alpha``.
    """

    X: object
    H: Hierarchy
    alpha: np.ndarray
    T: np.ndarray
    multilabel: bool
    variant: str
    leaf_pos: np.ndarray | None = None
    loss: DecomposableLoss | None = None
    held_leaves: np.ndarray | None = None
    held_row: np.ndarray | None = None
    offset_rows: np.ndarray | None = None
    scale_rows: np.ndarray | None = None
    multiplicity: np.ndarray | None = None
    X_features: object = None
    fit_intercept: bool = False
    intercept_scaling: float = 1.0

    method = "nhsvm"
    equations = {"attributes": "(5)", "path weights": "(6)-(8)", "margin": "(9)",
                 "primal": "(10)", "variant": "(13)", "inference": "(19)"}
    variables = {
        "W": Variable("(n_nodes, n_features)", "node weights; node score sqrt(alpha_n) W_n . x"),
        "xi": Variable("(n_samples,)", "hinge slack of each sample"),
        "intercept": Variable("(n_nodes,)", "node biases b_n with fit_intercept (LIBLINEAR's, "
                                            "not in the paper)"),
        "beta": Variable("(n_samples, n_vertices)", "mass of each sample on its candidate labels "
                         "(leaves, or label sets found by the oracle), in a simplex with slack", "dual"),
    }

    @property
    def scored_alpha(self) -> np.ndarray:
        """The weights of the node scores ``sqrt(alpha_n / k_n) W_n . x`` (``alpha`` itself
        without ``multiplicity``)."""
        return self.alpha if self.multiplicity is None else self.alpha / self.multiplicity

    @property
    def sqrt_alpha(self) -> np.ndarray:
        return np.sqrt(self.scored_alpha)

    @cached_property
    def A(self) -> sp.csr_matrix:
        """The leaf-path matrix (sparse)."""
        return leaf_paths(self.H)

    # the dense single-label pieces, built on first use -------------------------------------
    @cached_property
    def Lam(self) -> np.ndarray | None:
        """The normalized attributes (5) of the leaves (score weights ``sqrt(alpha / k)``)."""
        if self.multilabel:
            return None
        return self.A.toarray() * self.sqrt_alpha[None, :]

    @cached_property
    def structural(self) -> np.ndarray | None:
        """The normalized margin (9) between all leaves ``(|L|, |L|)``."""
        if self.multilabel:
            return None
        return loss_matrix(self.H, "structural", classes=self.H.leaves, alpha=self.alpha)

    @cached_property
    def margin(self) -> _margin.MarginData | None:
        """The pair model of single-label (10) (margin rescaling, ``Lam`` (5), loss (9))."""
        if self.multilabel or self.variant != "nhsvm":
            return None
        return one_leaf_margin(self.leaf_pos, len(self.H.leaves), self.structural, self.Lam)

    @cached_property
    def _vertices(self):
        if self.multilabel:
            return None, None, None
        dist = np.asarray(self.structural, dtype=float)
        if self.variant == "nhsvm":
            return leaf_vertices(self.H, dist, np.ones_like(dist))
        off = ~np.eye(len(dist), dtype=bool)
        return leaf_vertices(self.H, off.astype(float),
                              np.where(off, 1.0 / np.where(off, dist, 1.0), 0.0))

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_nodes(self) -> int:
        return len(self.H)

    def scores(self, weights, X=None, intercept=None) -> np.ndarray:
        """Node scores ``sqrt(alpha_n) (W_n . x + b_n)`` ``(n, M)`` of ``X`` (default: the
        training rows) at ``W`` without the bias column and ``intercept`` ``b`` (None: zeros)."""
        W, X = self._scored(weights, X, intercept)
        return node_scores(W, X, self.scored_alpha)

    def objective(self, weights, lam: float = 1.0, oracle: LabelSetOracle | None = None,
                  intercept=None) -> float:
        """The primal objective of (10) / (13) at ``W`` (without the bias column) and the node
        biases ``intercept`` (:func:`primal_objective` at the augmented weights)."""
        return primal_objective(self.augmented_weights(weights, intercept), self, lam, oracle)

    def label_oracle(self, inference: str = "auto") -> LabelSetOracle:
        """The exact label-set oracle (tree DP, DAG program (19)); one per method, cached."""
        cache = self.__dict__.setdefault("_oracles", {})
        if inference not in cache:
            cache[inference] = LabelSetOracle(self.H, inference)
        return cache[inference]

    def oracle(self, scores, rows=None, *, label_oracle: LabelSetOracle | None = None):
        """Loss-augmented inference at node scores ``scores`` (rows ``rows`` of the data).

        Returns ``(xi, vertex)``: the slacks ``max(0, max_y b - sigma (s(y_i) - s(y)))`` and the
        maximizer: a leaf position (``-1`` when the true leaf is best) or a bool label set
        ``(len, M)`` (equal to the true set when nothing is violated).
        """
        if self.multilabel:
            label_oracle = self.label_oracle() if label_oracle is None else label_oracle
            added, constant, Tf = self._loss_terms
            if rows is not None:
                added, constant, Tf = added[rows], constant[rows], Tf[rows]
            # the loss folded into the scores (eq. (18) -> (19)) once per model, not per call
            Z, info = label_oracle.solve(scores + added, return_info=True, verbose=False)
            own = np.einsum("ij,ij->i", scores, Tf)
            return np.maximum(info.objective + constant - own, 0.0), Z
        rows = np.arange(scores.shape[0]) if rows is None else rows
        held = self.held_row[rows]
        return leaf_violations(scores, self.leaf_pos[rows], self.A, self.offset_rows[held],
                                self.scale_rows[held])

    @cached_property
    def _loss_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(a, c, t)`` of every sample's true set: ``Delta(y, t_i) = sum_{n in y} a_in + c_i``
        (:meth:`~hiercvx.inference.DecomposableLoss.node_terms`) and ``t_i`` as floats."""
        added, constant = as_loss(self.loss, self.H).node_terms(self.T)
        return added, np.asarray(constant, dtype=float), np.asarray(self.T, dtype=float)

    def vertex_terms(self, i: int, vertex) -> tuple[np.ndarray, float]:
        """``(c, b)`` of one vertex for sample ``i``: ``c = sigma (t_i - z)`` over the nodes
        (unscaled by alpha) and ``b``."""
        t = self.T[i].astype(float)
        if self.multilabel:
            return t - np.asarray(vertex, dtype=float), float(self.loss(vertex, self.T[i]))
        if vertex < 0:
            return np.zeros_like(t), 0.0
        h = self.held_row[i]
        path = self.A[vertex].toarray().ravel()
        return self.scale_rows[h, vertex] * (t - path), float(self.offset_rows[h, vertex])

    def dual_value(self, G: np.ndarray, l: np.ndarray, lam: float) -> float:
        """``sum_i l_i - ||V||^2 / (4 lam)``, ``V = sqrt(alpha) * (X^T G)^T``: the dual of (10) at a
        feasible point in node space (``G`` ``(n, M)``, ``l`` ``(n,)``)."""
        V = np.asarray(self.X.T @ G).T * self.sqrt_alpha[:, None]
        return float(np.sum(l)) - float(np.sum(V * V)) / (4.0 * lam)

    def lower_bound(self, dual, lam: float = 1.0) -> float:
        """A certified lower bound on (10) / (13) at a dual point, projected first.

        ``dual``: single-label, ``(n, q)`` masses over the candidate leaves; multi-label, a
        mapping ``{"sample": (K,), "sets": (K, M) bool, "beta": (K,)}`` of masses on label sets.
        Masses are clipped at 0 and each sample's total scaled down to at most 1 (its simplex
        with slack; the true label gets nothing), then :meth:`dual_value`.
        """
        n, M = self.T.shape
        if self.multilabel:
            sample = np.asarray(dual["sample"], dtype=np.int64)
            sets = np.asarray(dual["sets"], dtype=bool)
            beta = np.maximum(np.asarray(dual["beta"], dtype=float), 0.0)
            total = np.bincount(sample, weights=beta, minlength=n)
            beta = beta / np.maximum(total, 1.0)[sample]
            G = np.zeros((n, M))
            np.add.at(G, sample, beta[:, None] * (self.T[sample] - sets.astype(float)))
            l = np.bincount(sample, weights=beta * self.loss(sets, self.T[sample]), minlength=n)
            return self.dual_value(G, l, lam)
        beta = np.maximum(np.asarray(dual, dtype=float), 0.0).copy()
        beta[np.arange(n), self.leaf_pos] = 0.0
        beta /= np.maximum(beta.sum(axis=1), 1.0)[:, None]
        w = beta * self.scale_rows[self.held_row]
        G = w.sum(axis=1)[:, None] * self.T - np.asarray(self.A.T @ w.T).T
        l = (beta * self.offset_rows[self.held_row]).sum(axis=1)
        return self.dual_value(G, l, lam)

    def collapsed(self) -> CollapsedLeaves | None:
        """Single-label (10) / (13) with every group of interchangeable leaves replaced by one
        leaf, or None when no two leaves are interchangeable (or the model is multi-label).

        Leaves ``a, b`` are interchangeable when no sample holds them, they have the same
        parents, ``alpha_a = alpha_b`` and the same ``b``, ``sigma`` from every held leaf (then
        (9) agrees too).  Swapping them maps the problem onto itself; its optimal ``W`` is
        unique (``lam ||W||^2``), so ``W_a = W_b``.  On such points a group of ``k`` leaves is
        one leaf of multiplicity ``k``: ``W'_r = sqrt(k) W_a`` carries ``k ||W_a||^2`` as
        ``||W'_r||^2`` and scores ``sqrt(alpha_a / k) W'_r . x``; the margin (9) is
        unchanged.  The collapsed optimum is the full one, and the solution and dual point
        lift exactly (:class:`~hiercvx.models.nhsvm.CollapsedLeaves`).  (The margin engine
        collapses the same way on class kernels, :mod:`hiercvx.models.symmetry`; doing it here
        first means the dense pieces over all leaves are never built.)"""
        if self.multilabel:
            return None
        a_leaf = self.alpha[self.H.leaf_indices]
        groups = interchangeable_groups(self.H, self.held_leaves, a_leaf, self.offset_rows,
                                         self.scale_rows)
        if not groups:
            return None
        (Hc, kept, node_map, mult, leaf_map, kept_leaves), (leaf_pos, held, held_row, rows) = \
            CollapsedLeaves.relabel(self.H, groups, self.leaf_pos, self.held_leaves)
        model = NHSVMModel(
            X=self.X, H=Hc, alpha=self.alpha[kept], T=np.ascontiguousarray(self.T[:, kept]),
            multilabel=False, variant=self.variant, leaf_pos=leaf_pos, held_leaves=held,
            held_row=held_row, offset_rows=self.offset_rows[np.ix_(rows, kept_leaves)],
            scale_rows=self.scale_rows[np.ix_(rows, kept_leaves)], multiplicity=mult[kept],
            X_features=self.X_features, fit_intercept=self.fit_intercept,
            intercept_scaling=self.intercept_scaling)
        return CollapsedLeaves(full=self, model=model, kept=kept, node_map=node_map,
                               multiplicity=mult, leaf_map=leaf_map, kept_leaves=kept_leaves)



def _check_leaves_apart(H: Hierarchy, alpha: np.ndarray) -> None:
    """Refuse two leaves at normalized distance (9) 0.  Leaves are in each other's symmetric
    difference, so that happens exactly when both have ``alpha = 0`` and the same ancestors
    with ``alpha > 0``: checked in ``O(q depth)``, never on the ``(q, q)`` matrix."""
    leaves = H.leaves
    zero = np.flatnonzero(alpha[H.leaf_indices] <= 0)
    if zero.size < 2:
        return
    anc = sp.csr_matrix(H.ancestor_matrix[H.leaf_indices[zero]])
    seen: dict = {}
    for k, l in enumerate(zero.tolist()):
        cols = anc.indices[anc.indptr[k]:anc.indptr[k + 1]]
        key = tuple(sorted(cols[alpha[cols] > 0].tolist()))
        if key in seen:
            raise InputError(f"leaves {leaves[seen[key]]!r} and {leaves[l]!r} have normalized "
                             "distance (9) equal to 0: alpha is 0 on every node that separates "
                             "them, so no margin can tell them apart; use weights with alpha > 0 "
                             "on the leaves")
        seen[key] = l


def _single_label_pieces(model: NHSVMModel) -> None:
    """The rows of ``b`` and ``sigma`` from the held leaves (margin (9), or (13)), checked."""
    H, a = model.H, model.alpha
    _check_leaves_apart(H, a)
    model.held_leaves, model.held_row = held_rows(model.leaf_pos)
    dist = leaf_pair_loss(H, model.held_leaves, "structural", alpha=a)   # (9), held rows
    own = np.arange(len(H.leaves))[None, :] == model.held_leaves[:, None]
    dist[own] = 0.0
    if model.variant == "nhsvm":
        model.offset_rows, model.scale_rows = dist, np.ones_like(dist)
    else:  # (13): each row divided by the normalized distance, required margin 1
        model.offset_rows = (~own).astype(float)
        model.scale_rows = np.where(own, 0.0, 1.0 / np.where(own, 1.0, dist))


def prepare(X, Y, H: Hierarchy, alpha=None, variant: str = "nhsvm", *, multilabel: bool | None = None,
            loss=None, T=None, fit_intercept: bool = False, intercept_scaling: float = 1.0,
            check_input: bool = True) -> NHSVMModel:
    """Validate NHSVM inputs once (the references and the fast solvers run on the result).

    ``alpha``: an array over ``H.nodes`` (checked by :func:`check_path_weights` with ``T``), or
    ``None`` / ``"power"`` on a tree (the closed form of (6), rho 2); on DAGs and for (7), (8)
    the weights are a program: :func:`hiercvx.formulations.nhsvm.prepare` solves it first.  ``Y``: one leaf per sample (single-label) or one set of leaves per sample
    (multi-label; ``multilabel=None`` infers it from ``Y``).  ``loss`` (multi-label only): a
    :class:`~hiercvx.inference.DecomposableLoss`, ``"leaf_hamming"`` (default, the paper's
    ``Delta_L``), ``"hamming"`` or per-node costs.  ``variant``: ``"nhsvm"`` (alias ``"10"``)
    or ``"13"``.  ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's regularized bias, one
    per node (module docstring).  ``check_input=False`` skips the check of ``X`` (for a caller
    that validated it already, e.g. an estimator).
    """
    H = check_hierarchy(H)
    X = check_features(X) if check_input else X
    scaling = bias_scaling(fit_intercept, intercept_scaling)
    if variant == "10":
        variant = "nhsvm"
    if variant not in VARIANTS:
        raise InputError(f"unknown NHSVM variant {variant!r}; choose 'nhsvm' (eq. (10)) or '13' (eq. (13))")
    Tm, leaf_pos, multilabel = closed_labels(Y, H, X.shape[0], multilabel)
    a = resolve_alpha(alpha, H, check_T(T) if T is not None else None)
    model = NHSVMModel(X=X if scaling is None else append_constant(X, scaling), H=H, alpha=a,
                       T=Tm, multilabel=multilabel, variant=variant, leaf_pos=leaf_pos,
                       X_features=X, fit_intercept=scaling is not None,
                       intercept_scaling=1.0 if scaling is None else scaling)
    if multilabel:
        if variant == "13":
            raise InputError("variant '13' is single-label only: its normalized margin does not "
                             "decompose over nodes, so the multi-label argmax has no exact "
                             "separation oracle (paper, end of section 5.1); use variant='nhsvm'")
        model.loss = as_loss("leaf_hamming" if loss is None else loss, H)
        return model
    if loss is not None:
        raise InputError("single-label NHSVM uses the normalized structural error (9) as its margin; "
                         "loss= applies to multi-label problems only (drop it, or pass multilabel=True)")
    _single_label_pieces(model)
    return model


def node_scores(W, X, alpha) -> np.ndarray:
    """Node scores ``s_n(x) = sqrt(alpha_n) W_n . x`` ``(n, M)``; a label set's potential is
    ``sum_{n in y} s_n`` (eq. (10)); predict with :func:`hiercvx.inference.best_leaf` or
    :func:`hiercvx.inference.best_label_set`."""
    XW = X @ np.asarray(W, dtype=float).T
    return dense(XW) * np.sqrt(np.asarray(alpha, dtype=float))


def primal_objective(W, data: NHSVMModel, lam: float, oracle: LabelSetOracle | None = None,
                     return_slacks: bool = False):
    """The NHSVM objective at node weights ``W`` ``(M, d)``, recomputed in numpy.

    ``lam ||W||_F^2 + sum_i xi_i`` with ``xi_i = max_y [s_i(y) - s_i(y_i) + Delta(y, y_i)]``:
    over the leaves with the margin (9) (variant ``"nhsvm"``, eq. (10)), over the leaves with
    the normalized difference of (13) (variant ``"13"``), or over the multi-label space with
    the decomposable loss, maximized exactly by ``oracle`` (a
    :class:`~hiercvx.inference.LabelSetOracle`; built when not given).  ``W`` is over the
    model's own features ``data.X`` (with ``fit_intercept``, the bias column included:
    :meth:`NHSVMModel.objective` takes the weights and biases apart).
    """
    W = np.asarray(W, dtype=float)
    reg = lam * float(np.sum(W * W))
    if data.multilabel:
        oracle = oracle if oracle is not None else LabelSetOracle(data.H)
        xi = multilabel_slacks(W, data, oracle)[0]
    else:  # (10) or (13): the loss-augmented argmax over the leaves, through the sparse paths
        xi = data.oracle(node_scores(W, data.X, data.scored_alpha))[0]
    value = reg + float(xi.sum())
    return (value, xi) if return_slacks else value


def multilabel_slacks(W, data: NHSVMModel, oracle: LabelSetOracle):
    """``(xi, Z)``: exact slacks and the most violating label sets (loss-augmented inference,
    :meth:`NHSVMModel.oracle` with ``oracle``)."""
    return data.oracle(node_scores(W, data.X, data.scored_alpha), label_oracle=oracle)


# ====================================================================== shared-norm SVM (14)
@dataclass(eq=False)
class SharedNormModel(NodeBias, LeafVertices, Model):
    """Validated inputs of the shared-norm SVM (14) (:func:`prepare_shared`), single-label.

    ``leaf_pos``: each sample's leaf (position in ``H.leaves``); ``T`` ``(n, M)``: its closed
    label set; ``A``: the leaf-path matrix (sparse); ``held_leaves``: the leaves some sample
    holds (positions in ``H.leaves``, sorted), ``held_row[i]``: sample ``i``'s row among them;
    ``loss_rows`` ``(len(held_leaves), q)``: ``Delta`` from each held leaf to every leaf (the
    only rows of the loss the problem uses).  ``X``: the features the solvers see (``[X, s]``
    with ``fit_intercept``), ``X_features``: as given.

    ``multiplicity`` (None: all 1) makes node ``n`` stand for ``k_n`` interchangeable leaves
    (:meth:`collapsed`): its score is ``U_n . x / sqrt(k_n)`` (so ``Lam = A diag(k)^(-1/2)``),
    and the regularizer keeps the form ``sum_n ||U_n||^2 / alpha_n``.

    The dense pieces over all leaves are built on first use only (a wide hierarchy never
    needs them on the fast path): ``loss`` ``(q, q)`` (``Delta`` over ``H.leaves``,
    ``[true, predicted]``), ``Lam`` (the dense attributes (1)), ``margin`` (the pair model of
    :mod:`hiercvx.models.margin`, class scores ``X U^T Lam^T``, used by the CVXPY
    references), ``paths`` / ``offset`` / ``scale`` (the leaf vertices of the weight step).
    """

    X: object
    H: Hierarchy
    leaf_pos: np.ndarray
    T: np.ndarray
    A: sp.csr_matrix
    held_leaves: np.ndarray
    held_row: np.ndarray
    loss_rows: np.ndarray
    loss_spec: object = "zero_one"
    multiplicity: np.ndarray | None = None
    X_features: object = None
    fit_intercept: bool = False
    intercept_scaling: float = 1.0

    method = "shared_norm"
    equations = {"primal": "(14)", "alpha step": "(20)", "shared norm": "(16)"}
    variables = {
        "U": Variable("(n_nodes, n_features)", "node weights; class scores X U^T A^T"),
        "alpha": Variable("(n_nodes,)", "sharing weights, every leaf's path sum <= 1"),
        "xi": Variable("(n_samples,)", "multi-class hinge slack of each sample"),
        "intercept": Variable("(n_nodes,)", "node biases b_n with fit_intercept (LIBLINEAR's, "
                                            "regularized as b_n^2 / (s^2 alpha_n))"),
        "beta": Variable("(n_samples, n_leaves)", "pair multipliers of the margin rows", "dual"),
        "mu": Variable("(n_leaves,)", "multipliers of the path constraints A alpha <= 1", "dual"),
    }

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_nodes(self) -> int:
        return len(self.H)

    @property
    def node_scale(self) -> np.ndarray:
        """``1 / sqrt(k_n)``: the factor of node ``n``'s score (ones without ``multiplicity``)."""
        if self.multiplicity is None:
            return np.ones(self.n_nodes)
        return 1.0 / np.sqrt(self.multiplicity)

    # the dense pieces, built on first use ----------------------------------------------------
    @cached_property
    def loss(self) -> np.ndarray:
        """``Delta`` ``(q, q)`` over ``H.leaves`` (``[true, predicted]``)."""
        return class_loss(self.H, self.loss_spec)

    @cached_property
    def Lam(self) -> np.ndarray:
        """The attributes (1), dense: ``A`` with node ``n``'s column times ``1 / sqrt(k_n)``."""
        return self.A.toarray() * self.node_scale[None, :]

    @cached_property
    def margin(self) -> _margin.MarginData:
        return one_leaf_margin(self.leaf_pos, len(self.H.leaves), self.loss, self.Lam)

    @cached_property
    def _vertices(self):
        L = self.loss
        return leaf_vertices(self.H, L, np.ones_like(L))

    # the problem -------------------------------------------------------------------------------
    def scores(self, weights, X=None, intercept=None) -> np.ndarray:
        """Node scores ``U_n . x + b_n`` ``(n, M)`` of ``X`` (default: the training rows) at ``U``
        without the bias column and ``intercept`` ``b`` (None: zeros)."""
        U, X = self._scored(weights, X, intercept)
        return dense(X @ U.T) * self.node_scale

    def hinge(self, U) -> np.ndarray:
        """Each sample's multi-class hinge ``max_l [S_il - S_{i l_i} + Delta(l_i, l)]``, ``S = X U^T A^T``
        (``U`` over the model's own features ``X``: with a bias, its column included)."""
        S = dense(self.X @ np.asarray(U, dtype=float).T) * self.node_scale
        return self.oracle(S)[0]

    def regularizer(self, U, alpha=None) -> float:
        """``sum_n ||U_n||^2 / alpha_n`` at ``alpha`` scaled to feasibility; ``alpha=None``: the
        optimal alpha (20) for ``U`` (closed form, trees only).  ``U`` over the model's own
        features (with a bias, its column included)."""
        U = np.asarray(U, dtype=float)
        b = np.einsum("ij,ij->i", U, U)
        if alpha is None:
            if not self.H.is_tree:
                raise InputError("the shared-norm objective on a DAG needs alpha: pass the alpha "
                                 "that goes with U (the alpha step (20) is a program on DAGs)")
            alpha = optimal_alpha(U, self.H)
        return ratio_sum(b, scaled_alpha(alpha, self.A))

    def objective(self, weights, lam: float = 1.0, alpha=None, intercept=None) -> float:
        """(14) at ``(U, alpha)`` and the node biases ``intercept``: ``lam sum_n ||U~_n||^2 /
        alpha_n + sum_i hinge_i`` with ``U~ = [U, b / s]`` (``U`` without the bias column)."""
        return self.augmented_objective(self.augmented_weights(weights, intercept), lam, alpha)

    def augmented_objective(self, U, lam: float = 1.0, alpha=None) -> float:
        """(14) at ``U`` over the model's own features ``X`` (with a bias, its column included)."""
        return lam * self.regularizer(U, alpha) + float(self.hinge(U).sum())

    def objective_at(self, solution, **params) -> float:
        """:meth:`objective` at a solution's weights, biases and ``alpha`` (``values`` or
        ``extras``; without one, the optimal alpha (20) for the weights)."""
        W, b = self.solution_weights(solution)
        found = [getattr(solution, k, None) or {} for k in ("values", "extras")]
        alpha = next((f["alpha"] for f in found if f.get("alpha") is not None), None)
        return self.objective(W, intercept=b, alpha=alpha, **params)

    def oracle(self, scores, rows=None):
        """``(xi, best leaf or -1)`` at node scores ``scores`` (loss-augmented, over the leaves):
        ``xi_i = max(0, max_{l != l_i} Delta(l_i, l) + s_i(l) - s_i(l_i))``, the leaf path sums
        through the sparse ``A`` (``O(n nnz(A))``, no dense class-by-class array but the
        ``(n, q)`` violations)."""
        rows = np.arange(scores.shape[0]) if rows is None else np.asarray(rows)
        offset = self.loss_rows[self.held_row[rows]]
        return leaf_violations(scores, self.leaf_pos[rows], self.A, offset, np.ones_like(offset))

    def dual_value(self, G: np.ndarray, l: np.ndarray, lam: float) -> float:
        """The dual of (14) at a feasible point in node space: ``sum_i l_i -
        min_path_cover(||(G^T X)_n||^2 / (4 lam k_n))`` (``formulations/nhsvm.md``)."""
        return self.dual_value_and_slack(G, l, lam)[0]

    def dual_value_and_slack(self, G: np.ndarray, l: np.ndarray,
                             lam: float) -> tuple[float, np.ndarray]:
        """:meth:`dual_value` and each node's slack in the path cover, ``(A^T mu)_n - need_n``
        over the largest ``need`` (``inf`` where ``need_n = 0``): by complementary slackness a
        node with slack at the optimum has ``alpha_n = 0`` (``U_n = 0``) -- what the
        alternating solver reads to switch nodes off."""
        V = np.asarray(self.X.T @ G).T
        need = np.einsum("ij,ij->i", V, V) * self.node_scale ** 2 / (4.0 * lam)
        mu, cover_value = min_path_cover(need, self.H)
        top = float(need.max()) if need.size else 0.0
        slack = (self.A.T @ mu - need) / top if top > 0 else np.zeros(len(need))
        slack[need <= 0] = np.inf  # nothing asked of the node: alpha_n = 0 is optimal
        return float(np.sum(l)) - cover_value, slack

    def lower_bound(self, dual, lam: float = 1.0) -> float:
        """Certified bound at ``(n, q)`` masses over the candidate leaves, projected first
        (clipped at 0, the true leaf's set to 0, each row's total scaled to at most 1)."""
        n = self.n_samples
        beta = np.maximum(np.asarray(dual, dtype=float), 0.0).copy()
        beta[np.arange(n), self.leaf_pos] = 0.0
        beta /= np.maximum(beta.sum(axis=1), 1.0)[:, None]
        G = beta.sum(axis=1)[:, None] * self.T - np.asarray(self.A.T @ beta.T).T
        l = (beta * self.loss_rows[self.held_row]).sum(axis=1)
        return self.dual_value(G, l, lam)

    # interchangeable leaves ----------------------------------------------------------------------
    def collapsed(self) -> CollapsedLeaves | None:
        """This problem with every group of interchangeable leaves replaced by one leaf, or
        None when no two leaves are interchangeable.

        Leaves ``a, b`` are interchangeable when no sample holds them, they have the same
        parents and the same loss from every held leaf (``Delta(t, a) = Delta(t, b)``).  Then
        swapping them maps (14) onto itself, and by convexity an optimum with ``U_a = U_b``,
        ``alpha_a = alpha_b`` exists (average an optimum over the group's permutations).  On
        such points a group of ``k`` leaves is one leaf of multiplicity ``k``: ``U'_r =
        sqrt(k) U_a`` gives ``sum_{a in G} ||U_a||^2 / alpha_a = ||U'_r||^2 / alpha_r`` and
        the score ``U_a . x = U'_r . x / sqrt(k)``, and its path constraint is theirs.  So
        the optimum of the collapsed model is that of (14), and its solution and dual point
        lift exactly (:class:`~hiercvx.models.nhsvm.CollapsedLeaves`).  This is what makes a wide
        hierarchy cost what its data use (:mod:`hiercvx.models.symmetry` does the same for margin
        models)."""
        groups = interchangeable_groups(self.H, self.held_leaves, self.loss_rows)
        if not groups:
            return None
        (Hc, kept, node_map, mult, leaf_map, kept_leaves), (leaf_pos, held, held_row, rows) = \
            CollapsedLeaves.relabel(self.H, groups, self.leaf_pos, self.held_leaves)
        loss_rows = self.loss_rows[np.ix_(rows, kept_leaves)]
        loss = np.zeros((len(kept_leaves), len(kept_leaves)))   # rows of idle leaves unused
        loss[held] = loss_rows
        model = SharedNormModel(
            X=self.X, H=Hc, leaf_pos=leaf_pos, T=np.ascontiguousarray(self.T[:, kept]),
            A=leaf_paths(Hc), held_leaves=held, held_row=held_row, loss_rows=loss_rows,
            loss_spec=loss, multiplicity=mult[kept], X_features=self.X_features,
            fit_intercept=self.fit_intercept, intercept_scaling=self.intercept_scaling)
        return CollapsedLeaves(full=self, model=model, kept=kept, node_map=node_map,
                               multiplicity=mult, leaf_map=leaf_map, kept_leaves=kept_leaves)


def _held_loss_rows(H: Hierarchy, loss, held: np.ndarray) -> np.ndarray:
    """``Delta`` from each held leaf (positions ``held`` in ``H.leaves``) to every leaf:
    ``(len(held), q)``, the only rows of the loss (14) uses.  A loss name is evaluated on those
    pairs only (``O(len(held) q)``, not the ``(q, q)`` matrix); an array is checked whole."""
    if not isinstance(loss, str):
        return class_loss(H, loss)[held]
    rows = leaf_pair_loss(H, held, loss)
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise InputError("the loss matrix must be finite and non-negative")
    return rows


def prepare_shared(X, y, H: Hierarchy, loss="zero_one", *, fit_intercept: bool = False,
                   intercept_scaling: float = 1.0, check_input: bool = True) -> SharedNormModel:
    """Validate the shared-norm SVM's inputs once: ``y`` one leaf per sample, ``loss`` a name of
    :data:`hiercvx.losses.LOSSES` or a ``(q, q)`` array over ``H.leaves``; ``fit_intercept``,
    ``intercept_scaling``: LIBLINEAR's regularized bias, one per node (module docstring);
    ``check_input=False``: ``X`` validated by the caller.  Only the loss rows of the held
    leaves and the sparse leaf paths are built (the ``(q, q)`` / ``(q, M)`` pieces on first use,
    :class:`~hiercvx.models.nhsvm.SharedNormModel`)."""
    H = check_hierarchy(H)
    X = check_features(X) if check_input else X
    scaling = bias_scaling(fit_intercept, intercept_scaling)
    T, leaf_pos, _ = closed_labels(y, H, X.shape[0], multilabel=False)
    leaf_pos = np.ascontiguousarray(leaf_pos, dtype=np.int64)
    held, held_row = held_rows(leaf_pos)
    loss_rows = _held_loss_rows(H, loss, held)
    return SharedNormModel(X=X if scaling is None else append_constant(X, scaling), H=H,
                           leaf_pos=leaf_pos, T=np.asarray(T), A=leaf_paths(H), held_leaves=held,
                           held_row=held_row, loss_rows=loss_rows,
                           loss_spec=loss if isinstance(loss, str) else np.asarray(loss, dtype=float),
                           X_features=X, fit_intercept=scaling is not None,
                           intercept_scaling=1.0 if scaling is None else scaling)
