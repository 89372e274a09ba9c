"""Hierarchical perceptrons (Cai thesis, chapter 5) and Hieron (thesis 7.5.2).

Every algorithm here works on the margin constraints of the hierarchical SVM, thesis (4.10):
for example i and a pair ``p = (i, y, ybar)`` of a relevant class ``y in Y_i`` and an
irrelevant class ``ybar``, the pair margin is

    <w, dPhi_i(y, ybar)> = S_iy - S_iybar,     S = X W^T Lam^T   (class scores, thesis (3.8))

and ``w`` is always a sum of pair features, ``w(alpha) = sum_p alpha_p dPhi_p`` (thesis (5.6),
the same expansion as the SVM's (4.12)).  The pairs, losses and class kernel ``Q = Lam Lam^T``
come from :func:`hiercvx.models.margin.margin_data` (built by ``hsvm.prepare``), so the
perceptrons and the SVM see the same constraints.  What differs is how a violated pair is
picked and how far ``w`` moves along its feature:

==================  ======================================  ================================
algorithm           pair picked at example i                step along ``dPhi_p``
==================  ======================================  ================================
Alg. 3 (flat)       ``argmin_p S_iy - S_iybar`` if <= 0     1 (indicator attributes, 0/1 loss)
Alg. 4/5 (online)   same                                    ``Delta_p``            (thesis 5.2)
Alg. 6 (averaged)   same; the output is the average of      ``Delta_p``
                    all L intermediate ``w`` ((5.15))
Alg. 7 (Minover)    ``argmin`` over *all* examples' pairs   ``Delta_p``
Hieron online       same as Alg. 4                          ``tau = (sqrt(Delta_p) - m_p) /
                                                            ||dPhi_p||^2``       ((7.8)-(7.9))
Hieron averaged     ``argmax_p sqrt(Delta_p) - m_p`` if > 0
                    (the margin-rescaled hinge of (4.10)
                    with loss ``sqrt(Delta)``), averaged
==================  ======================================  ================================

(``m_p`` the current pair margin.)  Because ``argmin_p (S_iy - S_iybar)`` separates into
``min_{y in Y_i} S_iy - max_{ybar notin Y_i} S_iybar``, a perceptron step costs O(q) to select
and O(q nnz(x_i)) to apply; the hinge selection of averaged Hieron scans the example's pairs.

Forms.  The *primal* form (Algorithm 4, linear kernel) keeps the class weights
``U = Lam W = Q G^T X`` (thesis (3.9); ``(q, d)``) so that scoring an example costs ``q nnz(x_i)``;
the node weights ``W = Lam^T G^T X`` are rebuilt from the update log at the end (equation
(5.6)/(4.12)).  The *dual* form (Algorithm 5) keeps ``G Q`` (``(n, q)``, one row per example)
and scores ``x_i`` by ``sum_j k(x_i, x_j) (G Q)_j`` over the examples updated so far; kernel
rows are computed block by block (a block's rows against the current support and the block
itself), which is exact for the online order.

The update log ``(step l, example i, y, ybar, tau)`` holds one row per update, so memory is
O(updates).  The averaged output is read off the log with (5.15):
``w_avg = 1/L sum_l (L + 1 - l) tau^l dPhi^l`` with L the number of examples visited.

Minover keeps ``T_p = <w(alpha), dPhi_p>`` for every pair (5.16) and updates it with one kernel
column per step (5.17); the final ``T`` is returned as ``margins``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
from numba import njit
from tqdm.auto import tqdm

from .._validation import check_features
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginData
from ..kernels import Kernel, check_psd, make_kernel
from ..result import ITERATION_LIMIT, Solution
from .primitives import MODE_DENSE, row_data, row_sq_norms

logger = logging.getLogger(__name__)

__all__ = [
    "perceptron",
    "flat_perceptron",
    "flat_margin_data",
    "UpdateLog",
    "classifier_scores",
    "support_of",
    "update_bound",
    "VARIANTS",
    "UPDATES",
    "SELECTIONS",
    "MAX_EPOCHS_CAP",
]

VARIANTS = ("online", "averaged", "minover")
UPDATES = ("perceptron", "hieron")
SELECTIONS = ("mistake", "hinge")
#: ``max_epochs=None`` runs until an epoch without mistakes, but never beyond this many epochs
#: (then a ConvergenceWarning says the data may not be separable).
MAX_EPOCHS_CAP = 1000
_HINGE_RTOL = 1e-9  # hinge selection: a pair is violated when sqrt(Delta) - margin > this * sqrt(Delta)
_PSD_CHECK_MAX = 2000  # rows of a precomputed kernel checked for positive semidefiniteness
_BLOCK_ENTRIES = 4_000_000  # kernel block budget (rows x columns) of the dual form
_FULL_GRAM_MAX_N = 4000  # the dual form and Minover precompute the Gram matrix up to this n


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------

@dataclass
class UpdateLog:
    """One row per update: visit number ``step`` (1-based over all visits; Minover: iteration),
    ``example``, the pair ``(y, ybar)`` (class indices) and the step size ``tau``
    (``Delta(y, ybar)`` for the perceptron, (7.8) for Hieron)."""

    step: np.ndarray
    example: np.ndarray
    y: np.ndarray
    ybar: np.ndarray
    tau: np.ndarray

    def __len__(self) -> int:
        return len(self.step)

    @classmethod
    def concatenate(cls, parts) -> "UpdateLog":
        parts = list(parts)
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                       np.zeros(0, np.int64), np.zeros(0))
        return cls(*(np.concatenate([getattr(p, f) for p in parts])
                     for f in ("step", "example", "y", "ybar", "tau")))

    def coefficients(self, n_samples: int, n_classes: int, weights=None) -> sp.csr_matrix:
        """Expansion coefficients ``G`` ``(n, q)``: ``+w_u tau_u`` at ``(i_u, y_u)``,
        ``-w_u tau_u`` at ``(i_u, ybar_u)`` summed over updates u (thesis (5.6))."""
        v = self.tau if weights is None else self.tau * weights
        rows = np.concatenate([self.example, self.example])
        cols = np.concatenate([self.y, self.ybar])
        G = sp.csr_matrix((np.concatenate([v, -v]), (rows, cols)), shape=(n_samples, n_classes))
        G.sum_duplicates()
        return G

    def averaged_coefficients(self, n_samples: int, n_classes: int, n_steps: int) -> sp.csr_matrix:
        """Thesis (5.15): the average of the ``L = n_steps`` intermediate weight vectors has
        coefficients ``sum_u (L + 1 - l_u) / L tau_u`` -- from the log alone."""
        if n_steps <= 0:
            return sp.csr_matrix((n_samples, n_classes))
        return self.coefficients(n_samples, n_classes, (n_steps + 1 - self.step) / n_steps)

    def alpha(self, data: MarginData) -> np.ndarray:
        """The dual variables ``alpha_p`` over ``data``'s pairs (Algorithm 5's state)."""
        key = (data.pair_i.astype(np.int64) * data.n_classes + data.pair_y) * data.n_classes + data.pair_ybar
        ukey = (self.example * data.n_classes + self.y) * data.n_classes + self.ybar
        pos = np.searchsorted(key, ukey)  # pairs are sorted by (i, y, ybar)
        if len(ukey) and (np.any(pos >= len(key)) or np.any(key[np.minimum(pos, len(key) - 1)] != ukey)):
            raise InputError("the update log does not match the pairs of this MarginData")
        return np.bincount(pos, weights=self.tau, minlength=data.n_pairs)


def classifier_scores(X, *, coefficients: sp.csr_matrix, class_weights, Q: np.ndarray,
                      kernel: Kernel, X_train=None) -> np.ndarray:
    """Class scores ``(n_new, q)`` of a trained perceptron: ``X U^T`` with the class weights
    ``U = Q G^T X_train`` (linear kernel), else ``K(X, X_train) G Q`` (thesis (5.6)); for
    ``"precomputed"``, ``X`` is the kernel between the new points and all training points.
    A solution's ``sol.class_scores(X)`` is this function with its own classifier bound."""
    if class_weights is not None:
        XU = X @ class_weights.T
        return XU.toarray() if sp.issparse(XU) else np.asarray(XU)
    sv = support_of(coefficients)
    GQ = np.asarray(coefficients[sv] @ Q)
    if kernel.name == "precomputed":
        K = np.asarray(X, dtype=float)[:, sv]
    else:
        K = kernel(X, X_train[sv]) if len(sv) else np.zeros((X.shape[0], 0))
    return K @ GQ


def support_of(coefficients: sp.csr_matrix) -> np.ndarray:
    """Indices of the examples with a non-zero row of expansion coefficients ``G``."""
    return np.flatnonzero(np.diff(coefficients.indptr) > 0)


def update_bound(R: float, P: float, loss_min: float, loss_max: float, gamma: float) -> float:
    """Thesis Proposition 5, (5.12): the online hierarchical perceptron makes at most
    ``(2 Delta_max R P / (Delta_min gamma))^2`` updates when a unit ``w*`` ranks every training
    example correctly with margin ``gamma > 0`` (``R = max ||x_i||``, ``P = max ||Lam(y)||``)."""
    if not (gamma > 0 and loss_min > 0):
        raise InputError("the bound needs a positive margin gamma and a positive smallest loss")
    return float((2.0 * loss_max * R * P / (loss_min * gamma)) ** 2)


# --------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------

@njit(cache=True)
def _select(s, i, pos_ptr, pos_idx, mark, loss, hinge):
    """The pair of example i to update, from its class scores ``s``.

    ``mistake``: ``(argmin_{Y_i} s, argmax_{not Y_i} s)``, violated iff margin <= 0 (thesis
    Alg. 4 step 4-5).  ``hinge``: ``argmax_p sqrt(Delta_p) - margin_p``, violated iff
    ``> 1e-9 sqrt(Delta_p)`` (batch Hieron).  Ties go to the first pair in (y, ybar) order.  Returns (y, ybar, margin,
    violated)."""
    q = s.shape[0]
    p0 = pos_ptr[i]
    p1 = pos_ptr[i + 1]
    for k in range(p0, p1):
        mark[pos_idx[k]] = 1
    by = -1
    bb = -1
    if hinge:
        best = -np.inf
        for k in range(p0, p1):
            y = pos_idx[k]
            for r in range(q):
                if mark[r] == 0:
                    v = np.sqrt(loss[y, r]) - (s[y] - s[r])
                    if v > best:
                        best = v
                        by = y
                        bb = r
        # a Hieron step leaves its pair's hinge at exactly 0: count only what rounding cannot make
        violated = best > _HINGE_RTOL * np.sqrt(loss[by, bb])
    else:
        lo = np.inf
        for k in range(p0, p1):
            y = pos_idx[k]
            if s[y] < lo:
                lo = s[y]
                by = y
        hi = -np.inf
        for r in range(q):
            if mark[r] == 0 and s[r] > hi:
                hi = s[r]
                bb = r
        violated = lo - hi <= 0.0
    for k in range(p0, p1):
        mark[pos_idx[k]] = 0
    return by, bb, s[by] - s[bb], violated


@njit(cache=True)
def _step_size(y, ybar, margin, loss, qdist, kii, hieron):
    """``Delta(y, ybar)`` (perceptron) or Hieron's (7.8) ``(sqrt(Delta) - margin) / ||dPhi||^2``
    (0 when ``dPhi = 0``: no step can change the margin)."""
    if not hieron:
        return loss[y, ybar]
    denom = qdist[y, ybar] * kii
    if denom <= 0.0:
        return 0.0
    return (np.sqrt(loss[y, ybar]) - margin) / denom


@njit(cache=True)
def _pick(s, i, pos_ptr, pos_idx, mark, loss, qdist, kii, hieron, hinge):
    """Example i's pair and step: ``(y, ybar, tau, violated)`` (:func:`_select`, then
    :func:`_step_size` when violated; ``tau = 0`` otherwise)."""
    y, yb, margin, violated = _select(s, i, pos_ptr, pos_idx, mark, loss, hinge)
    if not violated:
        return y, yb, 0.0, False
    return y, yb, _step_size(y, yb, margin, loss, qdist, kii, hieron), True


@njit(cache=True)
def _log_update(log_step, log_i, log_y, log_yb, log_tau, nu, step, i, y, yb, tau):
    """Record update ``nu`` (step, example, pair, size) for the replay; returns ``nu + 1``."""
    log_step[nu] = step
    log_i[nu] = i
    log_y[nu] = y
    log_yb[nu] = yb
    log_tau[nu] = tau
    return nu + 1


@njit(cache=True)
def _primal_epoch(order, mode, Xd, indptr, indices, vals, UT, Q, pos_ptr, pos_idx, loss, qdist,
                  kdiag, hieron, hinge, step0, log_step, log_i, log_y, log_yb, log_tau):
    """One epoch of Algorithm 4 (primal, linear kernel) on class weights ``UT = U^T`` ``(d, q)``;
    ``mode`` and the row arrays are :func:`~hiercvx.solvers.primitives.row_data`'s.  Scoring
    and updating all q classes in one pass over ``x_i`` (``UT[k]`` contiguous) is about 1.5x
    (dense) to 3x (CSR) faster than q calls of ``row_dot`` / ``row_axpy``, so not shared.

    Returns ``(updates, violations)``; updates are appended to the log arrays."""
    q = Q.shape[0]
    d = UT.shape[0]
    s = np.empty(q)
    c = np.empty(q)
    nzr = np.empty(q, dtype=np.int64)
    mark = np.zeros(q, dtype=np.uint8)
    nu = 0
    nv = 0
    for t in range(order.shape[0]):
        i = order[t]
        s[:] = 0.0
        if mode == MODE_DENSE:
            for k in range(d):
                xk = Xd[i, k]
                if xk != 0.0:
                    for r in range(q):
                        s[r] += UT[k, r] * xk
        else:
            for kk in range(indptr[i], indptr[i + 1]):
                k = indices[kk]
                xk = vals[kk]
                for r in range(q):
                    s[r] += UT[k, r] * xk
        y, yb, tau, violated = _pick(s, i, pos_ptr, pos_idx, mark, loss, qdist, kdiag[i], hieron,
                                     hinge)
        if not violated:
            continue
        nv += 1
        if tau == 0.0 and hieron:
            continue
        # U += tau (Q[:, y] - Q[:, ybar]) x_i^T   (the update of (5.3), in class coordinates)
        m = 0
        for r in range(q):
            cr = tau * (Q[r, y] - Q[r, yb])
            if cr != 0.0:
                c[m] = cr
                nzr[m] = r
                m += 1
        if mode == MODE_DENSE:
            for k in range(d):
                xk = Xd[i, k]
                if xk != 0.0:
                    for a in range(m):
                        UT[k, nzr[a]] += c[a] * xk
        else:
            for kk in range(indptr[i], indptr[i + 1]):
                k = indices[kk]
                xk = vals[kk]
                for a in range(m):
                    UT[k, nzr[a]] += c[a] * xk
        nu = _log_update(log_step, log_i, log_y, log_yb, log_tau, nu, step0 + t + 1, i, y, yb, tau)
    return nu, nv


@njit(cache=True)
def _dual_block(rows, Kb, cols, GQ, is_sv, Q, pos_ptr, pos_idx, loss, qdist, kdiag, hieron, hinge,
                step0, log_step, log_i, log_y, log_yb, log_tau, nu0):
    """Algorithm 5 on one block of the visiting order: ``Kb[t, c] = k(x_rows[t], x_cols[c])``;
    scores ``s = sum_c Kb[t, c] (G Q)[cols[c]]`` over the support; updates ``(G Q)_i``."""
    q = Q.shape[0]
    s = np.empty(q)
    mark = np.zeros(q, dtype=np.uint8)
    nu = nu0
    nv = 0
    for t in range(rows.shape[0]):
        i = rows[t]
        s[:] = 0.0
        for c in range(cols.shape[0]):
            j = cols[c]
            if is_sv[j]:
                kij = Kb[t, c]
                if kij != 0.0:
                    for r in range(q):
                        s[r] += kij * GQ[j, r]
        y, yb, tau, violated = _pick(s, i, pos_ptr, pos_idx, mark, loss, qdist, kdiag[i], hieron,
                                     hinge)
        if not violated:
            continue
        nv += 1
        if tau == 0.0 and hieron:
            continue
        for r in range(q):
            GQ[i, r] += tau * (Q[y, r] - Q[yb, r])
        is_sv[i] = True
        nu = _log_update(log_step, log_i, log_y, log_yb, log_tau, nu, step0 + t + 1, i, y, yb, tau)
    return nu, nv


@njit(cache=True)
def _minover_update(T, col, pair_i, pair_y, pair_ybar, cvec, tau):
    """Thesis (5.17): ``T_p += tau k(x_i*, x_{i_p}) (c_{y_p} - c_{ybar_p})`` with
    ``c = Q[y*] - Q[ybar*]``; returns the new ``argmin_p T_p``."""
    best = 0
    lo = np.inf
    for p in range(T.shape[0]):
        kij = col[pair_i[p]]
        if kij != 0.0:
            T[p] += tau * kij * (cvec[pair_y[p]] - cvec[pair_ybar[p]])
        if T[p] < lo:
            lo = T[p]
            best = p
    return best


@njit(cache=True)
def _minover_full(T, K, pair_i, pair_y, pair_ybar, pair_loss, Q, max_iter, log_i, log_y, log_yb,
                  log_tau):
    """Algorithm 7 with a precomputed Gram matrix; returns (iterations, converged)."""
    q = Q.shape[0]
    cvec = np.empty(q)
    best = 0
    lo = np.inf
    for p in range(T.shape[0]):
        if T[p] < lo:
            lo = T[p]
            best = p
    for it in range(max_iter):
        if T[best] > 0.0:
            return it, True
        i = pair_i[best]
        y = pair_y[best]
        yb = pair_ybar[best]
        tau = pair_loss[best]
        for r in range(q):
            cvec[r] = Q[y, r] - Q[yb, r]
        log_i[it] = i
        log_y[it] = y
        log_yb[it] = yb
        log_tau[it] = tau
        best = _minover_update(T, K[i], pair_i, pair_y, pair_ybar, cvec, tau)
    return max_iter, T[best] > 0.0


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------

def flat_margin_data(Y) -> MarginData:
    """The flat multi-label perceptron's model (Algorithm 3): indicator attributes (one weight
    vector per class, ``Lam = I``) and the 0/1 loss, as a :class:`MarginData`."""
    Y = np.asarray(Y, dtype=bool)
    if Y.ndim != 2:
        raise InputError(f"Y must be a bool (n_samples, n_classes) matrix, got shape {Y.shape}")
    q = Y.shape[1]
    return _margin.margin_data(Y, 1.0 - np.eye(q), Lam=np.eye(q))


def _positives(Y: np.ndarray):
    Yc = sp.csr_matrix(Y)
    Yc.sort_indices()
    return Yc.indptr.astype(np.int64), Yc.indices.astype(np.int64)


def _kernel_diag(X, kernel: Kernel) -> np.ndarray:
    if kernel.name == "linear":
        return row_sq_norms(row_data(X))
    if kernel.name == "precomputed":
        return np.diag(X).astype(float).copy()
    if kernel.name == "rbf":
        return np.ones(X.shape[0])
    out = np.empty(X.shape[0])
    for a in range(0, X.shape[0], 256):
        b = min(a + 256, X.shape[0])
        out[a:b] = np.diag(kernel(X[a:b], X[a:b]))
    return out


def _row_groups(X) -> np.ndarray:
    """Group id of every row, equal ids for identical rows (CSR rows without densifying)."""
    if not sp.issparse(X):
        _, inv = np.unique(np.asarray(X), axis=0, return_inverse=True)
        return inv.ravel()
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    ids: dict = {}
    out = np.empty(X.shape[0], dtype=np.int64)
    for r in range(X.shape[0]):
        a, b = X.indptr[r], X.indptr[r + 1]
        out[r] = ids.setdefault((X.indices[a:b].tobytes(), X.data[a:b].tobytes()), len(ids))
    return out


def _refuse_unseparable(X, data: MarginData, kernel: Kernel, kdiag: np.ndarray) -> None:
    """With ``max_epochs=None``: refuse data on which no perceptron can ever stop.

    Exact sufficient conditions for non-separability: an example with a zero feature vector
    (every class scores 0), a relevant/irrelevant pair with identical class attributes (the
    pair margin is identically 0), or two examples with identical features whose label sets
    are not nested (each needs the other's order reversed; the footnote of thesis 7.5.1).
    """
    zero = np.flatnonzero(kdiag <= 0)
    if len(zero):
        raise InputError(f"example {zero[0]} has a zero feature vector (kernel value 0), so every class "
                         "scores 0 on it and its ranking is never strictly right: with max_epochs=None "
                         "the perceptron would loop forever; remove such rows or set max_epochs")
    qd = np.diag(data.Q)[:, None] + np.diag(data.Q)[None, :] - 2 * data.Q
    flat = qd[data.pair_y, data.pair_ybar] <= 1e-12 * max(1.0, float(np.abs(data.Q).max()))
    if np.any(flat):
        p = int(np.flatnonzero(flat)[0])
        raise InputError(f"classes {data.pair_y[p]} and {data.pair_ybar[p]} have identical attribute "
                         f"vectors, so no weight vector can rank one above the other (example "
                         f"{data.pair_i[p]} needs that): with max_epochs=None the perceptron would loop "
                         "forever; use other class attributes or set max_epochs")
    # identical inputs with non-nested label sets
    if kernel.name == "precomputed":
        K = np.asarray(X, dtype=float)
        dist = kdiag[:, None] + kdiag[None, :] - 2 * K
        a, b = np.nonzero(np.triu(dist <= 1e-12 * max(1.0, float(kdiag.max())), k=1))
    else:
        inv = _row_groups(X)
        counts = np.bincount(inv)
        dup = np.flatnonzero(counts[inv] > 1)
        order = dup[np.argsort(inv[dup], kind="stable")]
        a = b = np.zeros(0, dtype=int)
        for g in (np.split(order, np.flatnonzero(np.diff(inv[order])) + 1) if len(order) else []):
            Yg = data.Y[g].astype(np.int64)
            only = Yg @ (1 - Yg).T  # only[u, v] > 0: u has a label that v lacks
            u, v = np.nonzero(np.triu((only > 0) & (only.T > 0), k=1))
            if len(u):
                a, b = g[u[:1]], g[v[:1]]
                break
    if len(a):
        Y = data.Y
        clash = (Y[a] & ~Y[b]).any(axis=1) & (Y[b] & ~Y[a]).any(axis=1)
        if np.any(clash):
            k = int(np.flatnonzero(clash)[0])
            raise InputError(f"examples {a[k]} and {b[k]} have identical features but label sets that "
                             "are not nested, so no classifier ranks both correctly: with "
                             "max_epochs=None the perceptron would loop forever; deduplicate the data "
                             "or set max_epochs")


def _check_options(variant, update, selection, form, kernel: Kernel, data: MarginData):
    if variant not in VARIANTS:
        raise InputError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if update not in UPDATES:
        raise InputError(f"update must be one of {UPDATES}, got {update!r}")
    if variant == "minover" and update == "hieron":
        raise InputError("Minover (thesis Algorithm 7) is defined for the perceptron update only; use "
                         "update='perceptron' or variant='online'/'averaged' with update='hieron'")
    if selection is None:
        # batch (averaged) Hieron picks the pair by Hieron's hinge (thesis 7.5.2)
        selection = "hinge" if (update == "hieron" and variant == "averaged") else "mistake"
    if selection not in SELECTIONS:
        raise InputError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if variant == "minover" and selection != "mistake":
        raise InputError("Minover selects the globally smallest margin (selection='mistake')")
    linear = kernel.is_linear
    if form is None:
        form = "primal" if linear else "dual"
    if form not in ("primal", "dual"):
        raise InputError(f"form must be 'primal' or 'dual', got {form!r}")
    if form == "primal" and not linear:
        raise InputError(f"the primal form (Algorithm 4) needs the linear kernel, got kernel "
                         f"{kernel.name!r}; use form='dual' (Algorithm 5)")
    return selection, form


# --------------------------------------------------------------------------------------------
# Drivers
# --------------------------------------------------------------------------------------------

def perceptron(X, data: MarginData, *, variant: str = "online", update: str = "perceptron",
               kernel="linear", sigma: float | None = None, max_epochs: int | None = 20,
               shuffle: bool = True, random_state=0, selection: str | None = None,
               form: str | None = None, callback=None, verbose: bool = False) -> Solution:
    """Train a hierarchical perceptron on the margin model ``data`` (from ``hsvm.prepare`` or
    :func:`hiercvx.models.margin.margin_data`; its pairs, losses ``Delta`` and class kernel
    ``Q`` are those of the hierarchical SVM (4.10)).

    Parameters
    ----------
    X : (n, d) dense or CSR features; for ``kernel="precomputed"`` the (n, n) Gram matrix.
    variant : ``"online"`` (Alg. 4/5), ``"averaged"`` (Alg. 6 via (5.15)) or ``"minover"`` (Alg. 7).
    update : ``"perceptron"`` (step ``Delta``) or ``"hieron"`` ((7.8)-(7.9)).
    max_epochs : kappa; Minover makes at most ``kappa n`` steps.  ``None`` runs until an epoch
        without violations after refusing provably non-separable data, capped at
        :data:`MAX_EPOCHS_CAP` epochs with a ``ConvergenceWarning``.
    shuffle : visit the examples in a fresh random order each epoch (seeded by
        ``random_state``); ``False`` visits them in index order as in the thesis.
    selection : ``"mistake"`` (Alg. 4) or ``"hinge"`` (batch Hieron); the default is
        ``"hinge"`` for averaged Hieron and ``"mistake"`` otherwise.
    form : ``"primal"`` (linear kernel only; the default for it) or ``"dual"``.
    callback : called as ``callback(epoch, scores)`` after every epoch of the online and
        averaged variants, where ``scores(X_new)`` gives the current (last, not averaged)
        weight vector's class scores.

    Returns
    -------
    :class:`~hiercvx.result.Solution`.  A perceptron minimizes no objective, so ``objective``
    is what it can honestly report: the training hinge ``sum_i Cw_i xi_i`` of the margin
    constraints (4.10) at the returned classifier (the hierarchical SVM's loss term, without
    its regularizer); ``lower_bound`` is ``-inf`` (no certificate).  ``converged``: an epoch
    without a violated pair (Minover: every ``T_p > 0``), ``status`` ``"separated"`` then;
    ``n_iter`` counts epochs; ``weights`` are the node weights ``W = Lam^T G^T X`` (linear
    kernel and class attributes only).  ``extras`` (read as attributes): ``variant``,
    ``update``, ``selection``, ``form``, ``coefficients`` ``G`` (``(n, q)`` CSR: scores are
    ``K(X_new, X) G Q``), ``class_weights`` ``U = Q G^T X`` (linear kernel), ``support``,
    ``n_updates``, ``n_steps`` (L, examples visited; Minover: iterations), ``n_epochs``,
    ``n_violated`` (training examples whose worst pair margin is ``<= 0``), ``log`` (the
    :class:`UpdateLog`), ``Q``, ``kernel``, ``X_train``, ``margins`` (Minover's ``T``) and
    ``class_scores(X_new)`` (:func:`classifier_scores` of this classifier).  ``history``
    holds the violations and updates of every epoch.
    """
    t0 = time.perf_counter()
    X, k, max_epochs, capped = _check_inputs(X, data, kernel, sigma, max_epochs)
    selection, form = _check_options(variant, update, selection, form, k, data)
    kdiag = _kernel_diag(X, k)
    if capped:
        _refuse_unseparable(X, data, k, kdiag)
    Q = np.ascontiguousarray(data.Q, dtype=float)
    if variant == "minover":
        res = _run_minover(X, data, k, Q, max_epochs, verbose)
    else:
        loss = np.ascontiguousarray(data.loss, dtype=float)
        qdist = np.diag(Q)[:, None] + np.diag(Q)[None, :] - 2 * Q  # ||Lam_y - Lam_ybar||^2
        pos_ptr, pos_idx = _positives(data.Y)
        res = _run_epochs(X, data, k, Q, loss, qdist, kdiag, pos_ptr, pos_idx, update == "hieron",
                          selection == "hinge", form, max_epochs, shuffle, random_state, callback,
                          verbose)
    log, n_steps, n_epochs, converged, margins, history = res
    sol = _solution(X, data, k, Q, log, n_steps, n_epochs, converged, margins, history,
                    variant=variant, update=update, selection=selection, form=form)
    if not converged and capped:
        sol.warn_unless_converged("epochs", reason=f"with violations left ({len(log)} updates; "
                                  f"max_epochs=None is capped at {MAX_EPOCHS_CAP}): the data may "
                                  "not be separable")
    elif not converged:
        logger.info("%s %s perceptron: violations remain after %d epochs (%d updates)", variant,
                    update, n_epochs, len(log))
    sol.solve_time = time.perf_counter() - t0
    return sol


def _check_inputs(X, data: MarginData, kernel, sigma, max_epochs):
    """``(X, kernel, max_epochs, capped)``: features checked (CSR canonical: duplicate entries
    summed), precomputed and callable kernels checked for positive semidefiniteness,
    ``max_epochs=None`` replaced by :data:`MAX_EPOCHS_CAP` (``capped``)."""
    if not isinstance(data, MarginData):
        raise InputError("data must be a MarginData (see hiercvx.formulations.hsvm.prepare)")
    precomputed = isinstance(kernel, str) and kernel == "precomputed"
    if isinstance(kernel, Kernel):
        precomputed = kernel.name == "precomputed"
    X = check_features(X, allow_sparse=not precomputed)
    if sp.issparse(X) and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    n = data.n_samples
    n_rel = data.Y.sum(axis=1)
    bad = np.flatnonzero((n_rel == 0) | (n_rel == data.n_classes))
    if len(bad):
        raise InputError(f"example {bad[0]} has {'no' if n_rel[bad[0]] == 0 else 'every class as a'} "
                         "relevant class; every example needs a relevant and an irrelevant class")
    if X.shape[0] != n:
        raise InputError(f"X has {X.shape[0]} rows but the margin data has {n} examples")
    if precomputed:
        if X.shape != (n, n):
            raise InputError(f"a precomputed kernel must be the ({n}, {n}) Gram matrix of the training "
                             f"examples, got shape {X.shape}")
        # a principal block of a PSD matrix is PSD; checking at most 2000 rows bounds the cost
        m = min(n, _PSD_CHECK_MAX)
        check_psd(X[:m, :m], what="precomputed kernel matrix" + (f" (first {m} rows)" if m < n else ""))
    k = kernel if isinstance(kernel, Kernel) else make_kernel(kernel, X=None if precomputed else X,
                                                              sigma=sigma)
    if k.name == "callable":  # a user kernel must be PSD: check a sample's Gram matrix
        m = min(n, 300)
        check_psd(k(X[:m]), what="Gram matrix of the kernel callable (first 300 examples)")
    if max_epochs is None:
        return X, k, MAX_EPOCHS_CAP, True
    try:
        ok = int(max_epochs) == max_epochs and max_epochs >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(max_epochs, bool):
        raise InputError(f"max_epochs must be a positive integer or None, got {max_epochs!r}")
    return X, k, int(max_epochs), False


def _solution(X, data: MarginData, k: Kernel, Q, log: UpdateLog, n_steps, n_epochs, converged,
              margins, history, **options) -> Solution:
    """The returned classifier (last or averaged ``w``, (5.6) / (5.15)) as a :class:`Solution`
    whose objective is its training hinge on (4.10) (see :func:`perceptron`)."""
    n, q = data.n_samples, data.n_classes
    if options["variant"] == "averaged":
        G = log.averaged_coefficients(n, q, n_steps)
    else:
        G = log.coefficients(n, q)
    U = W = None
    if k.is_linear:
        GX = np.asarray((G.T @ X).toarray() if sp.issparse(X) else G.T @ X)  # (q, d)
        U = Q @ GX
        if data.Lam is not None:
            W = data.Lam.T @ GX
    X_train = None if (k.is_linear or k.name == "precomputed") else X
    scores = partial(classifier_scores, coefficients=G, class_weights=U, Q=Q, kernel=k,
                     X_train=X_train)
    hinge, worst = _training_hinge(scores(X), data)
    variant, update, form = options["variant"], options["update"], options["form"]
    return Solution(
        objective=float(data.Cw @ hinge), lower_bound=-np.inf, weights=W,
        status="separated" if converged else ITERATION_LIMIT, solver="perceptron",
        n_iter=n_epochs, converged=converged, history=history,
        name=f"{variant} {update} perceptron ({form})",
        extras=dict(options, coefficients=G, class_weights=U, support=support_of(G),
                    n_updates=len(log), n_steps=n_steps, n_epochs=n_epochs,
                    n_violated=int(np.count_nonzero(worst <= 0)), log=log, Q=Q, kernel=k,
                    X_train=X_train, margins=margins, class_scores=scores))


def _training_hinge(S: np.ndarray, data: MarginData):
    """``(xi, worst)`` per example at class scores ``S``: the slack of (4.10) (as
    :func:`hiercvx.models.margin.slacks`, in one compiled pass instead of its temporaries of
    the size of the pairs) and the smallest pair margin."""
    return _hinge_pass(np.ascontiguousarray(S, dtype=float), data.pair_ptr, data.pair_y,
                       data.pair_ybar, data.pair_loss, data.rescaling == "slack")


@njit(cache=True)
def _hinge_pass(S, pair_ptr, pair_y, pair_ybar, pair_loss, slack_rescaling):
    """Per example i: ``xi_i = max(0, max_p v_p)`` with ``v_p = Delta_p (1 - m_p)`` (slack
    rescaling) or ``Delta_p - m_p`` (margin rescaling), and ``min_p m_p``; pairs by example."""
    n = pair_ptr.shape[0] - 1
    xi = np.zeros(n)
    worst = np.full(n, np.inf)
    for i in range(n):
        for p in range(pair_ptr[i], pair_ptr[i + 1]):
            m = S[i, pair_y[p]] - S[i, pair_ybar[p]]
            v = pair_loss[p] * (1.0 - m) if slack_rescaling else pair_loss[p] - m
            xi[i] = max(xi[i], v)
            worst[i] = min(worst[i], m)
    return xi, worst


def _empty_log(size: int):
    return (np.zeros(size, np.int64), np.zeros(size, np.int64), np.zeros(size, np.int64),
            np.zeros(size, np.int64), np.zeros(size))


def _progress(total, verbose, desc):
    if not verbose:
        return None
    return tqdm(total=total, desc=desc, leave=False)


def _run_epochs(X, data, k, Q, loss, qdist, kdiag, pos_ptr, pos_idx, hieron, hinge, form,
                max_epochs, shuffle, random_state, callback, verbose):
    n, q = data.n_samples, data.n_classes
    rng = np.random.default_rng(random_state)
    parts = []
    history = {"violations": [], "updates": []}
    converged = False
    steps = 0
    epoch = 0
    if form == "primal":
        rows = row_data(X)
        UT = np.zeros((X.shape[1], q))

        def scores(Xn):
            S = Xn @ UT
            return S.toarray() if sp.issparse(S) else np.asarray(S)
    else:
        GQ = np.zeros((n, q))
        is_sv = np.zeros(n, dtype=np.bool_)
        # small n: one Gram matrix for all epochs instead of kernel blocks in every epoch
        gram = np.asarray(X, dtype=float) if k.name == "precomputed" else (
            k(X) if n <= _FULL_GRAM_MAX_N else None)

        def scores(Xn):
            sv = np.flatnonzero(is_sv)
            Kn = np.asarray(Xn, dtype=float)[:, sv] if k.name == "precomputed" else (
                k(Xn, X[sv]) if len(sv) else np.zeros((Xn.shape[0], 0)))
            return Kn @ GQ[sv]
    bar = _progress(max_epochs, verbose, "perceptron epochs")
    for epoch in range(1, max_epochs + 1):
        order = rng.permutation(n).astype(np.int64) if shuffle else np.arange(n, dtype=np.int64)
        buf = _empty_log(n)
        if form == "primal":
            nu, nv = _primal_epoch(order, rows.mode, rows.X, rows.indptr, rows.indices, rows.xvals,
                                   UT, Q, pos_ptr, pos_idx, loss, qdist, kdiag, hieron, hinge,
                                   steps, *buf)
        else:
            nu, nv = _dual_epoch(order, X, k, gram, GQ, is_sv, Q, pos_ptr, pos_idx, loss, qdist,
                                 kdiag, hieron, hinge, steps, buf)
        steps += n
        parts.append(UpdateLog(*(a[:nu] for a in buf)))
        history["violations"].append(int(nv))
        history["updates"].append(int(nu))
        if bar is not None:
            bar.update(1)
            bar.set_postfix(violations=int(nv))
        if callback is not None:
            callback(epoch, scores)
        if nv == 0:
            converged = True
            break
    if bar is not None:
        bar.close()
    return UpdateLog.concatenate(parts), steps, epoch, converged, None, history


def _dual_epoch(order, X, k, gram, GQ, is_sv, Q, pos_ptr, pos_idx, loss, qdist, kdiag, hieron, hinge,
                steps, buf):
    """Algorithm 5 over one epoch, in blocks whose kernel rows (against the support so far plus
    the block) fit the block budget; exact because the support only grows inside a block."""
    n = len(order)
    nu_total = nv_total = 0
    start = 0
    while start < n:
        n_sv = int(is_sv.sum())
        size = max(1, min(n - start, _BLOCK_ENTRIES // max(1, n_sv + 1), 2048))
        rows = order[start:start + size]
        cols = np.union1d(np.flatnonzero(is_sv), rows).astype(np.int64)
        if gram is not None:
            Kb = np.ascontiguousarray(gram[np.ix_(rows, cols)])
        else:
            Kb = np.ascontiguousarray(k(X[rows], X[cols]), dtype=float)
        nu_total, nv = _dual_block(rows, Kb, cols, GQ, is_sv, Q, pos_ptr, pos_idx, loss, qdist,
                                   kdiag, hieron, hinge, steps + start, *buf, nu_total)
        nv_total += nv
        start += size
    return nu_total, nv_total


def _run_minover(X, data, k, Q, max_epochs, verbose):
    """Algorithm 7: the globally smallest pair margin ``T_p`` (5.16) is corrected until all are
    positive; ``T`` is maintained by (5.17)."""
    n = data.n_samples
    P = data.n_pairs
    max_iter = max_epochs * n
    T = np.zeros(P)
    pair_i = data.pair_i.astype(np.int64)
    pair_y = data.pair_y.astype(np.int64)
    pair_ybar = data.pair_ybar.astype(np.int64)
    pair_loss = np.ascontiguousarray(data.pair_loss, dtype=float)
    if n <= _FULL_GRAM_MAX_N:
        K = np.ascontiguousarray(np.asarray(X, dtype=float) if k.name == "precomputed" else k(X))
        buf = _empty_log(max_iter)
        it, converged = _minover_full(T, K, pair_i, pair_y, pair_ybar, pair_loss, Q, max_iter,
                                      *buf[1:])
    else:
        cache: dict[int, np.ndarray] = {}
        cache_budget = 2 * 10 ** 8 // (8 * n)  # columns kept (about 200 MB)
        buf = _empty_log(0)
        rows = {"i": [], "y": [], "yb": [], "tau": []}
        best = int(np.argmin(T))
        converged = False
        it = 0
        bar = _progress(max_iter, verbose, "Minover steps")
        for it in range(max_iter):
            if T[best] > 0:
                converged = True
                break
            i, y, yb, tau = int(pair_i[best]), int(pair_y[best]), int(pair_ybar[best]), float(pair_loss[best])
            col = cache.get(i)
            if col is None:
                col = (np.asarray(X[:, i], dtype=float).ravel() if k.name == "precomputed"
                       else k(X, X[i:i + 1]).ravel())
                if len(cache) < cache_budget:
                    cache[i] = col
            for key, v in zip(("i", "y", "yb", "tau"), (i, y, yb, tau)):
                rows[key].append(v)
            best = _minover_update(T, np.ascontiguousarray(col), pair_i, pair_y, pair_ybar,
                                   Q[y] - Q[yb], tau)
            if bar is not None:
                bar.update(1)
        else:
            it = max_iter
            converged = bool(T[best] > 0)
        if bar is not None:
            bar.close()
        buf = (np.zeros(0, np.int64), np.array(rows["i"], np.int64), np.array(rows["y"], np.int64),
               np.array(rows["yb"], np.int64), np.array(rows["tau"], float))
        it = len(rows["i"])
    it = int(it)
    log = UpdateLog(np.arange(1, it + 1, dtype=np.int64), buf[1][:it], buf[2][:it], buf[3][:it],
                    buf[4][:it])
    n_epochs = int(np.ceil(it / n)) if it else 1
    return log, it, n_epochs, bool(converged), T, {"updates": [it]}


def flat_perceptron(X, Y, *, variant: str = "online", max_epochs: int | None = 20, shuffle=True,
                    random_state=0, **kwargs) -> Solution:
    """Algorithm 3, the flat multi-label perceptron: ``w_y += x_i``, ``w_ybar -= x_i`` for the
    lowest-scoring relevant and highest-scoring irrelevant class.  It is Algorithm 4 with
    indicator attributes and the 0/1 loss (:func:`flat_margin_data`); ``weights`` are the
    class weight vectors ``(q, d)``."""
    return perceptron(X, flat_margin_data(Y), variant=variant, max_epochs=max_epochs,
                      shuffle=shuffle, random_state=random_state, **kwargs)
