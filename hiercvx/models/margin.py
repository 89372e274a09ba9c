"""The pairwise-ranking large-margin model shared by Crammer–Singer and Cai–Hofmann.

One model, written once, used by the CVXPY references (``multiclass``, ``hsvm``), the fast
working-set solver and the estimators.

Notation (Cai thesis, chapter 4): q classes, M nodes, ``Lam`` the ``(q, M)`` class-attribute
matrix, ``W`` the ``(M, d)`` node weights, class scores ``S = X W^T Lam^T`` (``(n, q)``,
thesis (3.7)-(3.8)).  Example i has relevant classes ``Y_i`` and irrelevant ``Ybar_i``; the
pairs ``p = (i, y, ybar)`` with ``y in Y_i, ybar in Ybar_i`` carry the loss ``Delta_p``.

Primal, thesis (4.10) ("slack" rescaling) and its margin-rescaled variant::

    min_W 1/2 ||W||_F^2 + sum_i C_i xi_i
    slack:  xi_i = max(0, max_p Delta_p (1 - (S_iy - S_iybar)))
    margin: xi_i = max(0, max_p (Delta_p - (S_iy - S_iybar)))

Dual, thesis (4.15) (slack) / its margin analogue::

    max_alpha  sum_p alpha_p * b_p - 1/2 ||W(alpha)||^2,   alpha >= 0,
    slack:  b_p = 1,        sum_{p of i} alpha_p / Delta_p <= C_i
    margin: b_p = Delta_p,  sum_{p of i} alpha_p           <= C_i
    W(alpha) = sum_p alpha_p (Lam_y - Lam_ybar)^T x_i^T          thesis (4.12)

Everything is expressed through the expansion coefficients ``G`` (``(n, q)``):
``G[i, y] += alpha_p, G[i, ybar] -= alpha_p``, so ``W = Lam^T G^T X`` and, with an input
kernel ``K`` and class kernel ``Q = Lam Lam^T`` (thesis (4.16)-(4.17)),
``S = K G Q`` and ``||W||^2 = tr(G^T K G Q)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit

from .._validation import check_features
from ..bias import append_constant, join_bias, split_bias, with_bias
from ..exceptions import InputError
from ..kernels import Kernel, make_kernel
from ._base import Model, Variable
from ._labelset_kernels import most_violated
from ._pair_index import pair_offsets, pair_positions, pairs_at, relevant_lists

__all__ = ["RESCALINGS", "MarginData", "MarginModel", "margin_data", "label_pairs", "class_gram",
           "segment_max", "oracle", "oracle_slacks", "restrict", "sparse_dual", "on_support", "pair_positions",
           "pairs_at", "relevant_lists",
           "resolve_inputs", "slacks",
           "class_scores", "sparse_attributes", "primal_objective", "coefficients",
           "weights_from_coefficients",
           "kernel_objective", "project_dual", "dual_objective", "dual_objective_linear",
           "check_gram", "model_from_data"]

RESCALINGS = ("slack", "margin")


class _ListedOnDemand:
    """A pair array of :class:`MarginData`, listed from ``Y`` on its first read when the data
    were made without it (:func:`margin_data`): a solver that never reads the list -- the
    label-set engine, which works with the loss-augmented oracle -- never pays for it (on label
    sets over a GO DAG it holds tens of millions of pairs)."""

    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return None  # the dataclass default: not listed
        value = obj.__dict__.get(self.slot)
        if value is None:
            obj.list_pairs()
            value = obj.__dict__[self.slot]
        return value

    def __set__(self, obj, value):
        # the dataclass passes the descriptor itself as the default: not listed
        obj.__dict__[self.slot] = None if isinstance(value, _ListedOnDemand) else value


@dataclass
class MarginData:
    """Everything the margin model needs besides the inputs' Gram matrix or features.

    ``Y`` bool ``(n, q)`` relevant classes; ``Q`` ``(q, q)`` class Gram matrix; ``loss``
    ``(q, q)``; ``Cw`` per-example weights of C (``C_i = C * Cw[i]``); pair arrays of
    length P sorted by example, with ``pair_ptr`` the CSR-style offsets per example.  Pair
    arrays not given are listed from ``Y`` when first read (:attr:`pairs_listed`); their
    positions are known without the list (:func:`pair_positions`, :func:`pairs_at`).
    """

    Y: np.ndarray
    Q: np.ndarray
    loss: np.ndarray
    rescaling: str
    Cw: np.ndarray
    pair_i: np.ndarray = field(default=_ListedOnDemand(), repr=False, compare=False)
    pair_y: np.ndarray = field(default=_ListedOnDemand(), repr=False, compare=False)
    pair_ybar: np.ndarray = field(default=_ListedOnDemand(), repr=False, compare=False)
    pair_loss: np.ndarray = field(default=_ListedOnDemand(), repr=False, compare=False)
    pair_ptr: np.ndarray = field(default=_ListedOnDemand(), repr=False, compare=False)
    Lam: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return self.Y.shape[0]

    @property
    def n_classes(self) -> int:
        return self.Y.shape[1]

    @property
    def pairs_listed(self) -> bool:
        """Whether the pair arrays exist (reading one lists them all)."""
        return self.__dict__.get("_pair_i") is not None

    @property
    def n_pairs(self) -> int:
        if self.pairs_listed:
            return len(self.pair_i)
        return int(self.offsets()[-1])

    def offsets(self) -> np.ndarray:
        """``pair_ptr`` without listing the pairs (``pair_offsets``)."""
        return self.__dict__["_pair_ptr"] if self.__dict__.get("_pair_ptr") is not None \
            else pair_offsets(self.Y)

    def list_pairs(self) -> None:
        """List every pair of ``Y`` (:func:`label_pairs`) with its loss and offsets."""
        pi, py, pyb = label_pairs(self.Y)
        self.pair_i, self.pair_y, self.pair_ybar = pi, py, pyb
        self.pair_loss = np.asarray(self.loss, dtype=float)[py, pyb]
        self.pair_ptr = pair_offsets(self.Y)

    @property
    def pair_offset(self) -> np.ndarray:
        """``b_p``: 1 (slack rescaling) or ``Delta_p`` (margin rescaling)."""
        return np.ones(self.n_pairs) if self.rescaling == "slack" else self.pair_loss

    @property
    def pair_cost(self) -> np.ndarray:
        """Weight of ``alpha_p`` in the per-example budget: ``1/Delta_p`` or 1."""
        return 1.0 / self.pair_loss if self.rescaling == "slack" else np.ones(self.n_pairs)


def margin_data(Y: np.ndarray, loss: np.ndarray, *, Lam: np.ndarray | None = None,
                Q: np.ndarray | None = None, rescaling: str = "slack",
                sample_weight: np.ndarray | None = None) -> MarginData:
    """Pairs and per-example weights from a bool label matrix ``Y`` ``(n, q)``.

    Give the class attributes ``Lam`` ``(q, M)`` or a class kernel ``Q`` ``(q, q)``.
    Pairs whose loss is 0 would make the slack-rescaled constraint vacuous (thesis (4.10)
    divides by Delta), so they are refused rather than silently dropped.
    """
    if rescaling not in RESCALINGS:
        raise InputError(f"rescaling must be one of {RESCALINGS}, got {rescaling!r}")
    Y = np.asarray(Y, dtype=bool)
    n, q = Y.shape
    loss = np.asarray(loss, dtype=float)
    if loss.shape != (q, q):
        raise InputError(f"the loss matrix must be ({q}, {q}), got {loss.shape}")
    if Lam is not None:
        Lam = np.asarray(Lam, dtype=float)
        if Lam.shape[0] != q:
            raise InputError(f"class attributes need one row per class ({q}), got {Lam.shape}")
        Q = class_gram(Lam)
    elif Q is None:
        raise InputError("give class attributes Lam or a class kernel Q")
    Q = np.asarray(Q, dtype=float)
    if Q.shape != (q, q):
        raise InputError(f"the class kernel must be ({q}, {q}), got {Q.shape}")
    Cw = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if Cw.shape != (n,) or not np.all(np.isfinite(Cw)) or np.any(Cw < 0):
        raise InputError(f"sample weights must be {n} finite non-negative numbers")
    _check_pair_losses(Y, loss)
    return MarginData(Y=Y, Q=Q, loss=loss, rescaling=rescaling, Cw=Cw, Lam=Lam)


def _check_pair_losses(Y: np.ndarray, loss: np.ndarray) -> None:
    """Refuse a (relevant, irrelevant) pair of some example with a loss <= 0, the first in the
    pairs' order, without listing the pairs (a sparse product over the few such class pairs)."""
    bad = np.asarray(loss <= 0)
    np.fill_diagonal(bad, False)
    if not bad.any():
        return
    hit = np.asarray((sp.csr_matrix(Y, dtype=float) @ sp.csr_matrix(bad, dtype=float)).toarray()
                     > 0) & ~Y
    rows = np.flatnonzero(hit.any(axis=1))
    if rows.size == 0:
        return
    i = int(rows[0])
    y = next(c for c in np.flatnonzero(Y[i]) if np.any(bad[c] & ~Y[i]))
    ybar = int(np.flatnonzero(bad[y] & ~Y[i])[0])
    raise InputError(f"the loss between relevant class {y} and irrelevant class {ybar} "
                     f"(sample {i}) is {loss[y, ybar]:g}; the margin model needs a positive loss "
                     "between every relevant/irrelevant pair")


def label_pairs(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs ``(i, y, ybar)`` with ``y`` relevant and ``ybar`` irrelevant for example i,
    sorted by i, then y, then ybar: the order of ``np.nonzero(Y[:, :, None] & ~Y[:, None, :])``
    in O(pairs + n q) time and memory (not the ``(n, q, q)`` cube)."""
    Y = np.ascontiguousarray(Y, dtype=bool)
    n, q = Y.shape
    k = Y.sum(axis=1).astype(np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(k * (q - k), out=ptr[1:])
    P = int(ptr[-1])
    pair_i = np.empty(P, dtype=np.int64)
    pair_y = np.empty(P, dtype=np.int64)
    pair_ybar = np.empty(P, dtype=np.int64)
    _fill_pairs(Y, ptr, pair_i, pair_y, pair_ybar)
    return pair_i, pair_y, pair_ybar


@njit(cache=True)
def _fill_pairs(Y, ptr, pair_i, pair_y, pair_ybar):
    n, q = Y.shape
    irrelevant = np.empty(q, dtype=np.int64)
    for i in range(n):
        m = 0
        for c in range(q):
            if not Y[i, c]:
                irrelevant[m] = c
                m += 1
        p = ptr[i]
        for y in range(q):
            if Y[i, y]:
                for r in range(m):
                    pair_i[p] = i
                    pair_y[p] = y
                    pair_ybar[p] = irrelevant[r]
                    p += 1


def class_gram(Lam: np.ndarray) -> np.ndarray:
    """``Q = Lam Lam^T`` ``(q, q)`` through a sparse product when ``Lam`` is mostly zeros (class
    attributes are: a class's row holds its ancestors only)."""
    L = sparse_attributes(np.asarray(Lam, dtype=float))
    return np.asarray((L @ L.T).toarray()) if sp.issparse(L) else L @ L.T


def slacks(S: np.ndarray, data: MarginData) -> np.ndarray:
    """``xi_i`` at class scores ``S`` ``(n, q)`` (the smallest feasible slacks): over the listed
    pairs, or by the loss-augmented oracle (:func:`oracle`) when they are not listed."""
    if not data.pairs_listed:
        return oracle_slacks(S, data)
    diff = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    if data.rescaling == "slack":
        viol = data.pair_loss * (1.0 - diff)
    else:
        viol = data.pair_loss - diff
    return np.maximum(segment_max(viol, data.pair_ptr), 0.0)  # max(0, max over the pairs)


def oracle(S, data: MarginData):
    """Per example the most violated pair at class scores ``S`` ``(n, q)`` without listing the
    pairs: ``(y, ybar, violation)`` arrays of length n (``-1, -1, -inf`` for an example without
    pairs), the violation ``Delta (1 - (S_iy - S_iybar))`` (slack rescaling) or
    ``Delta - (S_iy - S_iybar)`` (margin rescaling), in ``O(|Y_i| q)`` per example."""
    S = np.ascontiguousarray(S, dtype=float)
    ptr, rel = relevant_lists(data.Y)
    n = S.shape[0]
    y, ybar, v = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    most_violated(S, ptr, rel, np.ascontiguousarray(data.loss, dtype=float),
                  data.rescaling == "slack", y, ybar, v)
    return y, ybar, v


def oracle_slacks(S, data: MarginData) -> np.ndarray:
    """``xi_i = max(0, max_p v_p)`` over every pair of example i, by the oracle (the list of
    pairs is neither needed nor read)."""
    return np.maximum(oracle(S, data)[2], 0.0)


def restrict(data: MarginData, pair_i, pair_y, pair_ybar) -> MarginData:
    """The same data on the pairs given (sorted as :func:`label_pairs` sorts them): the
    working set of a solver, or the support of a dual point."""
    pair_i = np.asarray(pair_i, dtype=np.int64)
    ptr = np.zeros(data.n_samples + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_i, minlength=data.n_samples), out=ptr[1:])
    return MarginData(Y=data.Y, Q=data.Q, loss=data.loss, rescaling=data.rescaling, Cw=data.Cw,
                      pair_i=pair_i, pair_y=np.asarray(pair_y, dtype=np.int64),
                      pair_ybar=np.asarray(pair_ybar, dtype=np.int64),
                      pair_loss=np.asarray(data.loss, dtype=float)[pair_y, pair_ybar],
                      pair_ptr=ptr, Lam=data.Lam)


def sparse_dual(data: MarginData, pair_i, pair_y, pair_ybar, alpha) -> sp.coo_array:
    """Multipliers ``alpha`` of the pairs given as a sparse vector over the data's whole pair
    list (``(n_pairs,)``, zero elsewhere), placed without listing it."""
    pos = pair_positions(data.Y, pair_i, pair_y, pair_ybar, offsets=data.offsets())
    return sp.coo_array((np.asarray(alpha, dtype=float), (pos,)), shape=(data.n_pairs,))


def on_support(alpha, data: MarginData):
    """``(values, data')``: a dual point over the data's pair list as values on ``data'``; a
    sparse vector (:func:`sparse_dual`) becomes its non-zeros on the data restricted to them
    (:func:`restrict`), so the full list is never formed; a dense one stays as it is."""
    if not sp.issparse(alpha):
        return np.asarray(alpha, dtype=float), data
    alpha = sp.coo_array(alpha)
    if alpha.shape != (data.n_pairs,):
        raise InputError(f"the dual point must hold one value per pair ({data.n_pairs}), got "
                         f"shape {alpha.shape}")
    alpha.sum_duplicates()
    order = np.argsort(alpha.coords[0], kind="stable")  # the list's order
    pos, values = alpha.coords[0][order], np.asarray(alpha.data, dtype=float)[order]
    pi, py, pyb = pairs_at(data.Y, pos, offsets=data.offsets())
    return values, restrict(data, pi, py, pyb)


def segment_max(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Per example the largest of its entries ``values[ptr[i]:ptr[i + 1]]`` (``-inf`` when it
    has none): ``np.maximum.reduceat`` over the non-empty segments (one pass, where
    ``maximum.at`` is unbuffered)."""
    ptr = np.asarray(ptr, dtype=np.int64)
    out = np.full(len(ptr) - 1, -np.inf)
    nonempty = np.flatnonzero(ptr[1:] > ptr[:-1])
    if nonempty.size:
        out[nonempty] = np.maximum.reduceat(values, ptr[nonempty])
    return out


def sparse_attributes(Lam):
    """``Lam`` as CSR when at most a tenth of it is non-zero (class attributes are: a class's
    row holds its ancestors), else as given; callers that multiply by it often convert once."""
    if not sp.issparse(Lam) and Lam.size and np.count_nonzero(Lam) <= 0.1 * Lam.size:
        return sp.csr_matrix(Lam)
    return Lam


def class_scores(W: np.ndarray, X, Lam: np.ndarray, *, cheapest: bool = False) -> np.ndarray:
    """``S = X W^T Lam^T`` for node weights ``W`` ``(M, d)``: ``(X W^T) Lam^T`` (``Lam``
    applied as a sparse matrix when mostly zeros: O(n nnz(Lam)) instead of O(n q M)).

    ``cheapest=True`` multiplies in the cheaper order instead: ``X (Lam W)^T``
    (``nnz(Lam) d + nnz(X) q`` multiply-adds) when that beats ``nnz(X) M + nnz(Lam) n``, as it
    does on hierarchies with fewer classes than nodes.  The smoothing solver asks for it, on
    its thousands of evaluations; the other callers keep the default order, since another
    order rounds differently."""
    Lam = sparse_attributes(Lam)
    if cheapest:
        q, M = Lam.shape
        n, d = X.shape
        nnz_X = X.nnz if sp.issparse(X) else n * d
        nnz_L = Lam.nnz if sp.issparse(Lam) else q * M
        if nnz_L * d + nnz_X * q <= nnz_X * M + nnz_L * n:
            return np.asarray(X @ np.asarray(Lam @ W).T)
    XW = X @ W.T
    XW = XW.toarray() if sp.issparse(XW) else np.asarray(XW)
    if sp.issparse(Lam):
        return np.asarray((Lam @ XW.T).T)
    return XW @ Lam.T


def primal_objective(W: np.ndarray, X, data: MarginData, C: float) -> float:
    """Thesis (4.10) at node weights ``W`` (linear kernel), slacks recomputed."""
    xi = slacks(class_scores(W, X, data.Lam), data)
    return 0.5 * float(np.sum(W * W)) + C * float(data.Cw @ xi)


def coefficients(alpha: np.ndarray, data: MarginData) -> np.ndarray:
    """Expansion coefficients ``G`` ``(n, q)`` of the dual point ``alpha`` (thesis (4.12))."""
    n, q = data.n_samples, data.n_classes
    alpha = np.asarray(alpha, dtype=float)
    base = data.pair_i * q
    G = np.bincount(base + data.pair_y, weights=alpha, minlength=n * q)
    G -= np.bincount(base + data.pair_ybar, weights=alpha, minlength=n * q)
    return G.reshape(n, q)


def weights_from_coefficients(G: np.ndarray, X, Lam: np.ndarray) -> np.ndarray:
    """Node weights ``W = Lam^T G^T X`` (``(M, d)``), thesis (4.12)."""
    GX = np.asarray((X.T @ G).T if sp.issparse(X) else G.T @ X)
    return np.asarray(sparse_attributes(Lam).T @ GX)  # O(nnz d), not O(q M d)


def kernel_objective(G: np.ndarray, K: np.ndarray, data: MarginData, C: float) -> float:
    """The primal objective for the representer-form weights ``G`` with Gram matrix ``K``."""
    KG = K @ G
    S = KG @ data.Q
    norm2 = float(np.sum(G * (KG @ data.Q)))
    return 0.5 * norm2 + C * float(data.Cw @ slacks(S, data))


def project_dual(alpha: np.ndarray, data: MarginData, C: float) -> np.ndarray:
    """The nearest-by-scaling dual feasible point: clip at 0, then shrink each example's
    block until its budget ``sum_p cost_p alpha_p <= C_i`` holds (a dense vector over the
    data's pairs; for a sparse one, restrict the data to its support first, :func:`on_support`)."""
    a = np.maximum(np.asarray(alpha, dtype=float), 0.0)
    used = np.bincount(data.pair_i, weights=a * data.pair_cost, minlength=data.n_samples)
    budget = C * data.Cw
    scale = np.ones(data.n_samples)
    over = used > budget
    scale[over] = budget[over] / used[over]
    return a * scale[data.pair_i]


def dual_objective(alpha: np.ndarray, K: np.ndarray, data: MarginData) -> float:
    """Thesis (4.14): ``sum_p b_p alpha_p - 1/2 tr(G^T K G Q)``; a lower bound on the
    primal optimum whenever ``alpha`` is dual feasible (see :func:`project_dual`)."""
    G = coefficients(alpha, data)
    return float(data.pair_offset @ alpha) - 0.5 * float(np.sum(G * (K @ G @ data.Q)))


def dual_objective_linear(alpha: np.ndarray, X, data: MarginData) -> float:
    """:func:`dual_objective` for the linear kernel without forming ``K`` (large n)."""
    W = weights_from_coefficients(coefficients(alpha, data), X, data.Lam)
    return float(data.pair_offset @ alpha) - 0.5 * float(np.sum(W * W))


# --------------------------------------------------------------------------------------------
# The model object both sides run on
# --------------------------------------------------------------------------------------------

def check_gram(K, n: int) -> np.ndarray:
    """A precomputed Gram matrix: finite, ``(n, n)``, symmetric (a dense float copy)."""
    K = np.ascontiguousarray(np.asarray(K.toarray() if sp.issparse(K) else K, dtype=float))
    if K.shape != (n, n) or not np.all(np.isfinite(K)):
        raise InputError(f"a precomputed kernel must be a finite ({n}, {n}) Gram matrix, got "
                         f"shape {K.shape}")
    if not np.allclose(K, K.T, atol=1e-10 * max(1.0, np.abs(K).max())):
        raise InputError("the precomputed kernel matrix is not symmetric; symmetrize it")
    return K


def refuse_intercept(intercept, bias_scaling) -> None:
    """Raise :class:`~hiercvx.exceptions.InputError` for a nonzero ``intercept`` given to a
    model without a bias (``bias_scaling`` None): its decision function has no ``+ b``, so such
    an intercept would otherwise be dropped unseen.  None and zeros pass."""
    if bias_scaling is not None or intercept is None:
        return
    try:
        b = np.asarray(intercept, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"intercept must be numeric, got {type(intercept).__name__}") from None
    if np.any(b != 0):
        raise InputError("the model has no intercept (prepared with fit_intercept=False) but a "
                         f"nonzero intercept was given (max |b| {float(np.nanmax(np.abs(b))):.3g}); "
                         "drop the intercept or prepare with fit_intercept=True")


class MarginModel(Model):
    """The pairwise-ranking model on validated inputs: what the references, the fast solvers
    and the estimators of Crammer–Singer and Cai–Hofmann share.

    ``X`` are the training features (dense or CSR), or the ``(n, n)`` Gram matrix when
    ``kernel.name == "precomputed"``; ``data`` the :class:`MarginData`; ``kernel`` a resolved
    :class:`hiercvx.kernels.Kernel`.  With the linear kernel and class attributes
    (``node_weights``) the primal variable is the node-weight matrix ``W`` ``(M, d)``;
    otherwise it is the coefficient matrix ``G`` ``(n, q)`` of the representer form
    (thesis (4.12): ``f_y = sum_i G_iy' Q_y'y k(x_i, .)``).  The dual variable is ``alpha``,
    one entry per pair of ``data``.

    ``intercept_scaling`` (None: no bias) adds LIBLINEAR's regularized bias
    (:mod:`hiercvx.bias`; the thesis (4.10) has none): ``X`` and ``kernel`` are the inputs as
    given (kept as ``X_features`` and ``input_kernel``) and the model runs on ``X`` / ``kernel``
    with the bias (:func:`hiercvx.bias.with_bias`): ``[X, s]`` for the linear kernel (then the
    solvers' node weights ``W~`` ``(M, d + 1)`` end in the bias column, split by
    :meth:`split_weights`), ``K + s^2`` for a precomputed Gram matrix, ``k + s^2`` otherwise.
    The user-facing ``objective(W, C, intercept=b)`` and ``scores(W, X, intercept=b)`` take
    the weights without that column and the per-row biases ``b`` (``(M,)``; a class's score
    gets ``Lam_y . b``).
    """

    method = "margin"
    equations = {"primal": "(4.10)", "dual": "(4.15)", "recovery": "(4.12)"}
    variables = {
        "W": Variable("(M, d)", "node weights (linear kernel with class attributes)"),
        "G": Variable("(n, q)", "expansion coefficients G(alpha) (other kernels)"),
        "xi": Variable("(n,)", "one slack per example"),
        "intercept": Variable("(M,)", "biases per row of W with fit_intercept (LIBLINEAR's, "
                                      "not in the thesis)"),
        "alpha": Variable("(P,)", "one multiplier per pair (i, y, ybar)", side="dual"),
    }

    def __init__(self, X, data: MarginData, kernel, classes=None, *,
                 intercept_scaling: float | None = None):
        self.X_features, self.input_kernel = X, kernel
        self.X, self.kernel = with_bias(X, kernel, intercept_scaling)
        self.data = data
        self.classes = classes
        self.fit_intercept = intercept_scaling is not None
        #: ``s`` of the bias feature (1.0 when there is no bias, as scikit-learn reports it)
        self.intercept_scaling = 1.0 if intercept_scaling is None else float(intercept_scaling)
        self._K = None

    @property
    def bias_scaling(self) -> float | None:
        """``intercept_scaling`` with a bias, None without (what :mod:`hiercvx.bias` takes)."""
        return self.intercept_scaling if self.fit_intercept else None

    # what the model is ----------------------------------------------------------------------
    @property
    def precomputed(self) -> bool:
        return self.kernel.name == "precomputed"

    @property
    def node_weights(self) -> bool:
        """Whether the primal variable is ``W`` (linear kernel with class attributes)."""
        return self.kernel.is_linear and self.data.Lam is not None

    @property
    def Lam(self):
        return self.data.Lam

    @property
    def K(self) -> np.ndarray:
        """The training Gram matrix (formed on first use; never for ``node_weights``)."""
        if self._K is None:
            self._K = (self.X if self.precomputed
                       else np.ascontiguousarray(self.kernel(self.X, self.X), dtype=float))
        return self._K

    # LIBLINEAR's bias column ------------------------------------------------------------------
    def augmented_weights(self, weights, intercept=None) -> np.ndarray:
        """``W~ = [W, b / s]``: the node (or class) weights of the model's own features from
        the weights ``W`` without the bias column and the biases ``b`` (None: zeros).  Without
        a bias ``W`` itself (``intercept`` must then be None or zeros: that model has none)."""
        refuse_intercept(intercept, self.bias_scaling)
        return join_bias(weights, intercept, self.bias_scaling)

    def split_weights(self, W_aug) -> tuple[np.ndarray, np.ndarray]:
        """``(W, b)`` of weights over the model's own features: the bias column split off,
        ``b = s * W~[:, -1]`` (``b`` zeros without a bias)."""
        return split_bias(W_aug, self.bias_scaling)

    @staticmethod
    def solution_intercept(solution):
        """The biases a solution carries: ``values["intercept"]`` (references) or
        ``extras["intercept"]`` (fast solvers); None when it has none."""
        values = getattr(solution, "values", None) or {}
        if values.get("intercept") is not None:
            return values["intercept"]
        return (getattr(solution, "extras", None) or {}).get("intercept")

    # the Model interface ---------------------------------------------------------------------
    def weights_from_dual(self, alpha) -> np.ndarray:
        """``W(alpha)`` (thesis (4.12)) or ``G(alpha)``, the primal variable at ``alpha``
        (over the model's own features: with a bias, its column included); ``alpha`` dense
        over the pairs or sparse (:func:`sparse_dual`)."""
        G = coefficients(*on_support(alpha, self.data))
        return weights_from_coefficients(G, self.X, self.data.Lam) if self.node_weights else G

    def objective(self, weights, C: float = 1.0, intercept=None) -> float:
        """Thesis (4.10) at ``W`` and the biases ``intercept`` (linear kernel with class
        attributes; see the class docstring), or at the representer coefficients ``G`` (the
        bias lives in the kernel), slacks recomputed."""
        if self.node_weights:
            W = self.augmented_weights(np.asarray(weights, dtype=float), intercept)
            return primal_objective(W, self.X, self.data, C)
        return kernel_objective(np.asarray(weights, dtype=float), self.K, self.data, C)

    def objective_at(self, solution, C: float = 1.0) -> float:
        """:meth:`objective` at a solution's weights and biases (:meth:`solution_intercept`)."""
        return self.objective(solution.weights, C, intercept=self.solution_intercept(solution))

    def lower_bound(self, dual, C: float = 1.0) -> float:
        """Thesis (4.14) at ``alpha`` projected onto the dual feasible set (weak duality);
        ``dual`` dense over the pairs or sparse (:func:`sparse_dual`)."""
        values, data = on_support(dual, self.data)
        alpha = project_dual(values, data, C)
        if self.node_weights:
            return dual_objective_linear(alpha, self.X, data)
        return dual_objective(alpha, self.K, data)

    def kernel_rows(self, X) -> np.ndarray:
        """``k~(X, X_train)`` ``(m, n)``, the kernel with the bias between new inputs as given
        and the training inputs (``X`` the ``(m, n)`` kernel rows when precomputed)."""
        if self.precomputed:
            K = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
            return K if not self.fit_intercept else K + self.intercept_scaling ** 2
        if self.kernel.is_linear and self.fit_intercept:
            X = append_constant(X, self.intercept_scaling)
        return np.asarray(self.kernel(X, self.X), dtype=float)

    def scores(self, weights, X, intercept=None) -> np.ndarray:
        """Class scores ``(m, q)``: ``X W^T Lam^T + 1 (Lam b)^T`` (thesis (3.8), ``b`` the
        per-row biases ``intercept``, if any) or ``k~(X, X_train) G Q`` (the bias in the
        kernel, :meth:`kernel_rows`)."""
        if self.node_weights:
            S = class_scores(weights, X, self.data.Lam)
            if intercept is None:
                return S
            b = np.asarray(intercept, dtype=float)
            return S + (self.data.Lam @ b)[None, :]
        return self.kernel_rows(X) @ weights @ self.data.Q

    def oracle(self, scores, *args, **kwargs):
        """Per example the most violated pair (thesis (4.24): largest ``(b_p - (S_iy -
        S_iybar)) / cost_p``): ``(y, ybar, violation)`` arrays of length n (``-1`` and
        ``-inf`` for an example without pairs)."""
        S = np.asarray(scores, dtype=float)
        d = self.data
        H = (d.pair_offset - (S[d.pair_i, d.pair_y] - S[d.pair_i, d.pair_ybar])) / d.pair_cost
        n = d.n_samples
        viol = segment_max(H, d.pair_ptr)
        best = np.full(n, -1, dtype=np.int64)
        hit = np.flatnonzero(H >= viol[d.pair_i])
        best[d.pair_i[hit[::-1]]] = hit[::-1]  # the first pair in order among ties
        y = np.where(best >= 0, d.pair_y[np.maximum(best, 0)], -1)
        ybar = np.where(best >= 0, d.pair_ybar[np.maximum(best, 0)], -1)
        return y, ybar, viol


def model_from_data(X, data: MarginData, kernel="linear", sigma=None, classes=None) -> MarginModel:
    """A :class:`MarginModel` from inputs ``X`` and an already built :class:`MarginData` (for
    callers that build the pairs themselves, e.g. NHSVM's single-label problem (10)).

    ``X``: finite features (dense or CSR), or the ``(n, n)`` Gram matrix with
    ``kernel="precomputed"``; ``kernel`` a name, a callable or a resolved
    :class:`~hiercvx.kernels.Kernel`.  Checks that ``X`` and ``data`` describe the same examples.
    """
    if not isinstance(data, MarginData):
        raise InputError("data must be a hiercvx.models.margin.MarginData (build it with "
                         "margin_data(Y, loss, Lam=...)), or use a paper's prepare(X, Y, H)")
    resolved = isinstance(kernel, Kernel)
    precomputed = (kernel.name if resolved else kernel) == "precomputed"
    n = data.n_samples
    if precomputed:
        X = check_gram(X, n)
    else:
        X = check_features(X)
        if X.shape[0] != n:
            raise InputError(f"X has {X.shape[0]} rows but the label data describe {n} examples")
        if sp.issparse(X):
            X.sort_indices()
    kern = kernel if resolved else make_kernel(kernel, X=None if precomputed else X, sigma=sigma)
    return MarginModel(X, data, kern, classes=classes)


def resolve_inputs(X, kernel, sigma, check_input: bool):
    """``(X, kernel)`` of a margin model: the features (or the precomputed Gram matrix) checked
    once when ``check_input``, the kernel resolved (shared by the multiclass and hsvm models)."""
    resolved = isinstance(kernel, Kernel)
    precomputed = (kernel.name if resolved else kernel) == "precomputed"
    if check_input:
        X = check_features(X, "X (the precomputed Gram matrix)" if precomputed else "X",
                           allow_sparse=not precomputed)
    if precomputed:
        if X.shape[0] != X.shape[1]:
            raise InputError("with kernel='precomputed' X must be the square (n, n) Gram matrix, "
                             f"got shape {X.shape}")
        X = check_gram(X, X.shape[0])
    kern = kernel if resolved else make_kernel(kernel, X=None if precomputed else X, sigma=sigma)
    return X, kern


