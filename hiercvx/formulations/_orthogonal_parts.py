"""Pieces shared by the CVXPY declarations of orthogonal transfer and its baselines.

Zhou, Xiao, Wu, "Hierarchical Classification via Orthogonal Transfer", ICML 2011: the margin
rows of (4) / (12) as one sparse matrix inequality, the size estimate checked before
compiling, the representer basis of Theorem 3 (weights in the row space of the data), the
bias columns of LIBLINEAR's regularized intercept, and values recovered from the solved
variables.  The declarations themselves are in :mod:`hiercvx.formulations.orthogonal`.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ..models.orthogonal import PairModel
from ..reference import check_size

__all__ = ["margin_constraint", "estimate", "_representer_basis", "features", "_node_rows", "bias_columns",
           "objective_augmented", "Recovered", "QPRoutes", "QPDualRoutes", "SDPRoutes",
           "SDPDualRoutes"]


def margin_constraint(model: PairModel, F, V, xi):
    """The rows ``<w_pos - w_neg, x> + xi_s / Delta_p >= 1`` as one sparse matrix inequality.

    ``F`` are the features used by the variable ``V`` (``(n_vars, r)`` weights of
    ``model.var_nodes``): ``X`` or its representer coordinates.  Written so that the dual of
    row p is the margin model's ``alpha_p``.
    """
    d = model.data
    n, q, P = model.n_samples, d.n_classes, d.n_pairs
    if model.method == "treeloss":  # class scores through the ancestor sums (3)
        scores = F @ V.T @ d.Lam[:, model.var_nodes].T
        col = np.arange(q)
    else:  # classes are nodes: a class's score is its own weight's
        scores = F @ V.T
        col = np.full(q, -1)
        col[model.var_nodes] = np.arange(len(model.var_nodes))
    width = scores.shape[1]
    k = model.slack_example[d.pair_i]
    rows = np.arange(P)
    D = sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                       (np.r_[rows, rows], np.r_[k * width + col[d.pair_y], k * width + col[d.pair_ybar]])),
                      shape=(P, n * width))
    E = sp.csr_matrix((d.pair_cost, (rows, d.pair_i)), shape=(P, d.n_samples))
    return D @ cp.vec(scores, order="C") + E @ xi >= np.ones(P)


def estimate(model: PairModel, r: int, what: str, max_size, extra_vars=0, extra_rows=0, extra_nnz=0):
    d = model.data
    n_vars = len(model.var_nodes)
    nnz = 3 * d.n_pairs + model.n_samples * n_vars * r + d.n_classes * n_vars * model.n_samples
    check_size(n_vars * r + d.n_samples + extra_vars, d.n_pairs + d.n_samples + extra_rows,
               nnz + extra_nnz, max_size, what=what)


def _representer_basis(X):
    """``(Z, Bt)``: ``Bt`` ``(r, d)`` with orthonormal rows spanning the rows of X and
    ``Z = X Bt^T`` (Theorem 3): weights ``W = V Bt`` lose nothing and ``<w_i, w_j> = <v_i, v_j>``.

    Dense X: thin SVD, dropping singular values below ``1e-12 s_max`` (numerical zeros).
    Sparse X (no dense copy of X): eigenvectors of ``X X^T`` above ``1e-12 lambda_max``, then
    a QR of ``X^T U`` for exactly orthonormal rows.  The certificate is computed on the
    original X either way, so a dropped near-null direction can cost gap, never validity.
    """
    if sp.issparse(X):
        lam, U = np.linalg.eigh((X @ X.T).toarray())
        keep = lam > 1e-12 * max(float(lam.max()), 1e-300)
        Q, _ = np.linalg.qr(np.asarray(X.T @ U[:, keep]))
        return np.asarray(X @ Q), Q.T
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    keep = s > 1e-12 * max(float(s[0]), 1e-300)
    return U[:, keep] * s[keep], Vt[keep]


def features(X, representer: bool | None):
    """``(F, basis)``: the features the SDP's variable multiplies -- X itself (``basis`` None)
    or its representer coordinates (Theorem 3; default when ``n_features > n_samples``)."""
    use_rep = (X.shape[1] > X.shape[0]) if representer is None else bool(representer)
    if use_rep:
        Z, Bt = _representer_basis(X)
        if Z.shape[1] > 0:
            return Z, Bt
    return X, None


def _node_rows(model: PairModel) -> sp.csr_matrix:
    """``(n_nodes, n_vars)`` 0/1: puts the values of ``var_nodes`` on their rows of ``H.nodes``."""
    k = len(model.var_nodes)
    return sp.csr_matrix((np.ones(k), (model.var_nodes, np.arange(k))), shape=(len(model.H), k))


def bias_columns(model: PairModel, V):
    """``(V~, intercept)``: with ``fit_intercept`` the weights ``V~ = [V, b / s]`` of the
    augmented features, ``b`` a new variable (one bias per weighted node), and the per-node
    intercept expression (``b`` on the rows of ``var_nodes``, 0 elsewhere); without,
    ``(V, None)``."""
    s = model.bias_scaling
    if s is None:
        return V, None
    b = cp.Variable(V.shape[0], name="b")
    V_aug = cp.hstack([V, cp.reshape(b, (V.shape[0], 1), order="C") / s])
    return V_aug, _node_rows(model) @ b


def objective_augmented(model: PairModel, W_aug, C: float) -> float:
    """(7) at augmented weights ``[W, b / s]`` (the recovered points of the duals)."""
    W, b = model.split_weights(W_aug)
    return model.objective(W, C=C, intercept=b if model.fit_intercept else None)


class Recovered:
    """A value of ``sol.values`` that no CVXPY variable holds: ``value`` recomputes it from the
    solved variables (the duals' intercept, ``s`` times the last column of the recovered
    ``W~``); ``shape`` as a variable's."""

    def __init__(self, shape, compute):
        self.shape = tuple(shape)
        self._compute = compute

    @property
    def value(self):
        return self._compute()


# ---------------------------------------------------------------------- the numpy routes
# Module-level classes, never closures, so a ReferenceProblem pickles; ``Cp`` is the
# declaration's C parameter, read at every call.
class QPRoutes:
    """A baseline primal's numpy routes (weights ``W`` over ``model.var_nodes``)."""

    variable = "W"

    def __init__(self, model: PairModel, Cp):
        self.model, self.Cp = model, Cp

    def weights(self, v):
        return self.model.full_weights(v[self.variable])

    def objective(self, v):
        return self.model.objective(self.weights(v), C=float(self.Cp.value), intercept=v.get("intercept"))

    def lower_bound(self, v, duals):
        return self.model.lower_bound(duals["margin"], C=float(self.Cp.value))

    def infeasibility(self, v):
        model = self.model
        return model.violation(model.augmented_weights(self.weights(v), v.get("intercept")), v["xi"])


class SDPRoutes(QPRoutes):
    """The lifted SDP's numpy routes (weights in the representer ``basis`` when there is one;
    ``K`` the comparison matrix and ``pairs`` its off-diagonal entries in the epigraph)."""

    variable = "V"

    def __init__(self, model: PairModel, Cp, basis, K, pairs):
        super().__init__(model, Cp)
        self.basis, self.K, self.pairs = basis, K, pairs

    def weights(self, v):
        return self.model.full_weights(v["V"], self.basis)

    def lower_bound(self, v, duals):
        pi, pj = self.pairs
        S = np.diag(np.diag(self.K)).astype(float)
        if len(pi):  # off-diagonal entries of the box from the epigraph's duals
            s = duals["abs_upper"] - duals["abs_lower"]
            S[pi, pj] = s
            S[pj, pi] = s
        return self.model.lower_bound((duals["margin"], S), C=float(self.Cp.value))


class QPDualRoutes:
    """A baseline dual's numpy routes: ``W~ = R^{-1} U(alpha)`` over the augmented features
    (``alpha`` the declaration's variable, for the recovered intercept)."""

    def __init__(self, model: PairModel, Cp, alpha):
        self.model, self.Cp, self.alpha = model, Cp, alpha

    def augmented(self, a):
        model = self.model
        U = model.node_gradient(a)[model.var_nodes]
        return model.full_weights(np.linalg.solve(model.S, U))

    def objective(self, v):
        return objective_augmented(self.model, self.augmented(v["alpha"]), float(self.Cp.value))

    def lower_bound(self, v, duals):
        return self.model.lower_bound(v["alpha"], C=float(self.Cp.value))

    def weights(self, v):
        return self.model.split_weights(self.augmented(v["alpha"]))[0]

    def intercept(self):
        if self.alpha.value is None:
            return None
        return self.model.split_weights(self.augmented(self.alpha.value))[1]


class SDPDualRoutes:
    """The lifted SDP dual's numpy routes: ``W`` from the dual point (``S^{-1} U(alpha)``) or
    from the multiplier ``Z`` of the PSD block ``lift`` (``-Z_21 Z_11^{-1}``), whichever is
    better (both are feasible points of (4)); ``variables`` ``(alpha, S)``, ``r`` the size of
    the block's first part."""

    def __init__(self, model: PairModel, Cp, basis, lift, variables, r: int):
        self.model, self.Cp, self.basis, self.lift = model, Cp, basis, lift
        self.variables, self.r = variables, int(r)

    def _from_dual_point(self, v):
        model = self.model
        U = model.node_gradient(v["alpha"])[model.var_nodes]
        if self.basis is not None:
            U = U @ self.basis.T
        return model.full_weights(np.linalg.solve(model.box_matrix(v["S"]), U), self.basis)

    def _from_lift_multiplier(self):
        Z, r = self.lift.dual_value, self.r
        if Z is None:
            return None
        Z = np.asarray(Z, dtype=float)
        try:
            return self.model.full_weights(-np.linalg.solve(Z[:r, :r], Z[r:, :r].T).T, self.basis)
        except np.linalg.LinAlgError:
            return None

    def _candidates(self, v):
        return [W for W in (self._from_dual_point(v), self._from_lift_multiplier()) if W is not None]

    def _value(self, W):
        return objective_augmented(self.model, W, float(self.Cp.value))

    def objective(self, v):  # both recoveries are feasible points of (4): the better one bounds
        return min(self._value(W) for W in self._candidates(v))

    def augmented(self, v):  # the better recovered W~ = [W, b / s]
        return min(self._candidates(v), key=self._value)

    def lower_bound(self, v, duals):
        return self.model.lower_bound((v["alpha"], v["S"]), C=float(self.Cp.value))

    def weights(self, v):
        return self.model.split_weights(self.augmented(v))[0]

    def intercept(self):
        alpha, S = self.variables
        if alpha.value is None or S.value is None:
            return None
        return self.model.split_weights(self.augmented({"alpha": alpha.value, "S": S.value}))[1]
