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

==================  ============================================  ==================================
algorithm           pair picked at example i                      step along ``dPhi_p``
==================  ============================================  ==================================
Alg. 3 (flat)       ``argmin_p S_iy - S_iybar`` if <= 0           1 (indicator attributes, 0/1 loss)
Alg. 4/5 (online)   same                                          ``Delta_p``            (thesis 5.2)
Alg. 6 (averaged)   same; the output is the average of            ``Delta_p``
                    all L intermediate ``w`` ((5.15))
Alg. 7 (Minover)    ``argmin`` over *all* examples' pairs         ``Delta_p``
Hieron online       same as Alg. 4                                ``tau = (sqrt(Delta_p) - m_p) /
                                                                  ||dPhi_p||^2``       ((7.8)-(7.9))
Hieron averaged     ``argmax_p sqrt(Delta_p) - m_p`` if > 0
                    (the margin-rescaled hinge of (4.10)
                    with loss ``sqrt(Delta)``), averaged
==================  ============================================  ==================================

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

from .._validation import check_features
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginData
from ..kernels import Kernel, check_psd, make_kernel
from ..result import ITERATION_LIMIT, Solution
from . import _perceptron_kernels as kern
from .primitives import row_data, row_sq_norms

logger = logging.getLogger(__name__)

__all__ = ["perceptron", "flat_perceptron", "flat_margin_data", "UpdateLog", "classifier_scores",
           "support_of", "update_bound", "VARIANTS", "UPDATES", "SELECTIONS", "Options"]

VARIANTS = ("online", "averaged", "minover")
UPDATES = ("perceptron", "hieron")
SELECTIONS = ("mistake", "hinge")


@dataclass(frozen=True)
class Options:
    """Settings of :func:`perceptron` beyond its algorithm choices.

    Attributes
    ----------
    max_epochs_cap : int
        ``max_epochs=None`` runs until an epoch without mistakes, but never beyond this many
        epochs (then a ``ConvergenceWarning`` says the data may not be separable): Novikoff's
        bound (thesis Proposition 5, (5.12)) is finite but unknown.
    hinge_rtol : float
        The hinge selection updates a pair when ``sqrt(Delta) - margin > hinge_rtol
        sqrt(Delta)``: a Hieron step leaves its pair's hinge at 0 up to rounding, which is not
        worth a step.  It does not decide when training stops: that is an epoch without
        mistakes (thesis Alg. 6 step 12), which Hieron's projections reach on separable data,
        whereas a zero hinge on every pair they only approach.
    psd_check_max : int
        Rows of a precomputed kernel checked for positive semidefiniteness by its eigenvalues (a
        principal block of a PSD matrix is PSD; the check is cubic); the whole matrix is checked
        for symmetry, its diagonal and Cauchy-Schwarz in ``O(n^2)`` (``check_gram_block``).  0
        skips the check, for a caller that checked the Gram matrix before adding the bias to it
        (rounding is judged at the precision of the user's entries, which ``K + s**2`` in
        float64 no longer shows).
    block_entries : int
        Kernel entries (rows x columns) of one block of the dual form (32 MB).
    full_gram_max_n : int
        The dual form and Minover precompute the whole Gram matrix up to this many examples (128
        MB), else kernel blocks / columns are computed as needed.
    minover_cache_bytes : int
        Kernel columns Minover keeps without a full Gram matrix (200 MB).
    """

    max_epochs_cap: int = 1000
    hinge_rtol: float = 1e-9
    psd_check_max: int = 2000
    block_entries: int = 4_000_000
    full_gram_max_n: int = 4000
    minover_cache_bytes: int = 200_000_000

    def __post_init__(self):
        for what in ("max_epochs_cap", "psd_check_max", "block_entries", "full_gram_max_n",
                     "minover_cache_bytes"):
            value = getattr(self, what)
            least = 0 if what == "psd_check_max" else 1
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                raise InputError(f"Options.{what} must be a {'non-negative' if least == 0 else 'positive'}"
                                 f" integer, got {value!r}")
        if not (np.isfinite(self.hinge_rtol) and self.hinge_rtol >= 0):
            raise InputError(f"Options.hinge_rtol must be a non-negative number, got {self.hinge_rtol!r}")


def check_gram_block(K, max_rows: int, rtol: float = 1e-6) -> None:
    """Refuse a precomputed Gram matrix ``K`` that is not PSD, by tests that cost ``O(n^2)`` on
    the whole matrix and an eigenvalue test on its leading ``max_rows`` block.

    Whole matrix (necessary conditions, to relative tolerance ``rtol``, loose enough for entries
    rounded in float32): symmetry, a non-negative diagonal and Cauchy-Schwarz
    ``|K_ij| <= sqrt(K_ii K_jj)``.  A principal block of a PSD matrix is PSD, so a leading
    block bounds the cubic cost of the eigenvalue test.  ``max_rows=0`` checks nothing."""
    n = K.shape[0]
    m = min(n, max_rows)
    if not m:
        return
    K = np.asarray(K)
    what = "precomputed kernel matrix"
    scale = float(np.max(np.abs(K))) if K.size else 0.0
    asym = np.abs(K - K.T) > rtol * scale
    if asym.any():
        i, j = np.argwhere(asym)[0]
        raise InputError(f"the {what} is not symmetric: K[{i}, {j}] = {K[i, j]:.6g} but K[{j}, {i}] = "
                         f"{K[j, i]:.6g}; pass the Gram matrix k(x_i, x_j) of the training examples "
                         "(symmetrize a rounded one by (K + K.T) / 2)")
    d = np.diag(K).astype(float)
    if d.min() < -rtol * scale:
        i = int(np.argmin(d))
        raise InputError(f"the {what} is not positive semidefinite: its diagonal entry K[{i}, {i}] = "
                         f"{d[i]:.6g} is negative (a kernel gives k(x, x) >= 0); pass a valid Gram "
                         "matrix")
    root = np.sqrt(np.maximum(d, 0.0))
    bad = np.abs(K) > np.outer(root, root) * (1 + rtol) + rtol * scale
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(f"the {what} is not positive semidefinite: |K[{i}, {j}]| = {abs(K[i, j]):.6g} "
                         f"exceeds sqrt(K[{i}, {i}] K[{j}, {j}]) = {root[i] * root[j]:.6g} "
                         "(Cauchy-Schwarz); pass a valid Gram matrix")
    check_psd(K[:m, :m], what=what + (f" (first {m} rows)" if m < n else ""))


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
# Input handling
# --------------------------------------------------------------------------------------------

def flat_margin_data(Y) -> MarginData:
    """The flat multi-label perceptron's model (Algorithm 3): indicator attributes (one weight
    vector per class, ``Lam = I``) and the 0/1 loss, as a
    :class:`~hiercvx.models.margin.MarginData`."""
    Y = np.asarray(Y, dtype=bool)
    if Y.ndim != 2:
        raise InputError(f"Y must be a bool (n_samples, n_classes) matrix, got shape {Y.shape}")
    q = Y.shape[1]
    return _margin.margin_data(Y, 1.0 - np.eye(q), Lam=np.eye(q))


def step_scale(data: MarginData) -> np.ndarray:
    """The scale ``c_i = Cw_i / max_j Cw_j`` of each example's step (``data.Cw``, the sample
    weights; all ones without weights).

    A weighted perceptron step is ``tau = c_i Delta(y, ybar)`` along ``dPhi_i`` (the update of
    Alg. 4-7 with ``Delta`` scaled per example; ``alpha_p``'s increment in (5.6)): only ratios
    matter, since the perceptron's mistakes, hence its classifier up to a positive factor, are
    unchanged when every step is scaled alike.  A weighted Hieron step is ``c_i`` times (7.8):
    a relaxed projection that moves ``w`` the fraction ``c_i`` in ``(0, 1]`` of the way to the
    example's margin constraint (the full step (7.8) for the heaviest examples).  An example
    of weight 0 is never updated nor counted as a mistake."""
    Cw = np.asarray(data.Cw, dtype=float)
    top = float(Cw.max()) if Cw.size else 0.0
    if not top > 0:
        raise InputError("the sample weights (data.Cw) are zero everywhere: give at least one "
                         "example a positive weight")
    return Cw / top


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


def _refuse_unseparable(X, data: MarginData, kernel: Kernel, kdiag: np.ndarray,
                        scale: np.ndarray) -> None:
    """With ``max_epochs=None``: refuse data on which no perceptron can ever stop.

    Exact sufficient conditions for non-separability: an example with a zero feature vector
    (every class scores 0), a relevant/irrelevant pair with identical class attributes (the
    pair margin is identically 0), or two examples with identical features whose label sets
    are not nested (each needs the other's order reversed; the footnote of thesis 7.5.1).
    Examples of weight 0 (``scale``, :func:`step_scale`) are not trained on and not checked.
    """
    used = scale > 0
    zero = np.flatnonzero((kdiag <= 0) & used)
    if len(zero):
        raise InputError(f"example {zero[0]} has a zero feature vector (kernel value 0), so every class "
                         "scores 0 on it and its ranking is never strictly right: with max_epochs=None "
                         "the perceptron would loop forever; remove such rows or set max_epochs")
    qd = np.diag(data.Q)[:, None] + np.diag(data.Q)[None, :] - 2 * data.Q
    flat = (qd[data.pair_y, data.pair_ybar] <= 1e-12 * max(1.0, float(np.abs(data.Q).max()))) & \
        used[data.pair_i]
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
        close = (dist <= 1e-12 * max(1.0, float(kdiag.max()))) & used[:, None] & used[None, :]
        a, b = np.nonzero(np.triu(close, k=1))
    else:
        inv = _row_groups(X)
        counts = np.bincount(inv, weights=used)
        dup = np.flatnonzero((counts[inv] > 1) & used)
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
               form: str | None = None, callback=None, verbose: bool = False,
               options: Options | None = None) -> Solution:
    """Train a hierarchical perceptron on the margin model ``data`` (from ``hsvm.prepare`` or
    :func:`hiercvx.models.margin.margin_data`; its pairs, losses ``Delta`` and class kernel
    ``Q`` are those of the hierarchical SVM (4.10)).

    Parameters
    ----------
    X : (n, d) dense or CSR features; for ``kernel="precomputed"`` the (n, n) Gram matrix.
    variant : ``"online"`` (Alg. 4/5), ``"averaged"`` (Alg. 6 via (5.15)) or ``"minover"`` (Alg. 7).
    update : ``"perceptron"`` (step ``Delta``) or ``"hieron"`` ((7.8)-(7.9)).
    max_epochs : kappa; Minover makes at most ``kappa n`` steps (n: examples of positive weight).
        ``None`` runs until an epoch without violations after refusing provably non-separable
        data, capped at ``options.max_epochs_cap`` epochs with a ``ConvergenceWarning``.
    shuffle : visit the examples in a fresh random order each epoch (seeded by
        ``random_state``); ``False`` visits them in index order as in the thesis.
    selection : ``"mistake"`` (Alg. 4) or ``"hinge"`` (batch Hieron); the default is
        ``"hinge"`` for averaged Hieron and ``"mistake"`` otherwise.
    form : ``"primal"`` (linear kernel only; the default for it) or ``"dual"``.
    callback : called as ``callback(epoch, scores)`` after every epoch of the online and
        averaged variants, where ``scores(X_new)`` gives the current (last, not averaged)
        weight vector's class scores.
    verbose : one INFO line per epoch (Minover: after steps 1, 2, 4, 8, ...).
    options : :class:`Options` (default ``Options()``).

    Sample weights are ``data.Cw`` (:func:`step_scale`: every step is scaled by ``Cw_i / max Cw``;
    weight 0 drops an example: never visited, it adds no step to the average (5.15)).

    Returns
    -------
    :class:`~hiercvx.result.Solution`.  A perceptron minimizes no objective, so ``objective``
    is what it can honestly report: the training hinge ``sum_i Cw_i xi_i`` of the margin
    constraints (4.10) at the returned classifier (the hierarchical SVM's loss term, without
    its regularizer); ``lower_bound`` is ``-inf`` (no certificate).  Training stops on an
    epoch without mistakes (no visited example had a pair margin ``<= 0``; thesis Alg. 6
    step 12; Minover: every ``T_p > 0``) or after ``max_epochs``.  ``status`` describes the
    returned classifier: ``"separated"`` (``converged``) when training stopped so and the
    returned classifier ranks every training example correctly; ``"not_separated"`` when it
    stopped so but the returned classifier still mis-ranks some (the averaged variant: the
    last iterate separates, the average of the iterates need not; batch Hieron: its updates
    inside the last epoch); ``"iteration_limit"`` when ``max_epochs`` ran out;
    ``n_iter`` counts epochs; ``weights`` are the node weights ``W = Lam^T G^T X`` (linear
    kernel and class attributes only).  ``extras`` (read as attributes): ``variant``,
    ``update``, ``selection``, ``form``, ``coefficients`` ``G`` (``(n, q)`` CSR: scores are
    ``K(X_new, X) G Q``), ``class_weights`` ``U = Q G^T X`` (linear kernel), ``support``,
    ``n_updates``, ``n_steps`` (L, examples visited; Minover: iterations), ``n_epochs``,
    ``stopped`` (whether the stopping rule was met), ``n_violated`` (training examples of
    positive weight whose worst pair margin is ``<= 0`` at the returned classifier), ``log`` (the
    :class:`UpdateLog`), ``Q``, ``kernel``, ``X_train``, ``margins`` (Minover's ``T``) and
    ``class_scores(X_new)`` (:func:`classifier_scores` of this classifier).  ``history``
    holds the violations (pairs picked for an update), mistakes and updates of every epoch.
    """
    t0 = time.perf_counter()
    options = Options() if options is None else options
    if not isinstance(options, Options):
        raise InputError(f"options must be a hiercvx.solvers.perceptron.Options, got {type(options).__name__}")
    X, k, max_epochs, capped = _check_inputs(X, data, kernel, sigma, max_epochs, options)
    selection, form = _check_options(variant, update, selection, form, k, data)
    scale, kdiag = step_scale(data), _kernel_diag(X, k)
    if capped:
        _refuse_unseparable(X, data, k, kdiag, scale)
    Q = np.ascontiguousarray(data.Q, dtype=float)
    if variant == "minover":
        res = _run_minover(X, data, k, Q, scale, max_epochs, verbose, options)
    else:
        qdist = np.diag(Q)[:, None] + np.diag(Q)[None, :] - 2 * Q  # ||Lam_y - Lam_ybar||^2
        pos_ptr, pos_idx = _positives(data.Y)
        rule = kern.PairRule(pos_ptr, pos_idx, np.ascontiguousarray(data.loss, dtype=float), qdist, kdiag, Q,
                             update == "hieron", selection == "hinge", float(options.hinge_rtol), scale)
        res = _run_epochs(X, data, k, rule, form, max_epochs, shuffle, random_state, callback, verbose,
                          options)
    log, n_steps, n_epochs, stopped, margins, history = res
    sol = _solution(X, data, k, Q, scale, log, n_steps, n_epochs, stopped, margins, history,
                    variant=variant, update=update, selection=selection, form=form)
    _report_stop(sol, variant, stopped, capped, options)
    sol.solve_time = time.perf_counter() - t0
    return sol


def _report_stop(sol: Solution, variant, stopped, capped, options: Options) -> None:
    """A ``ConvergenceWarning`` when ``max_epochs=None`` hit its cap; an INFO line when the
    returned classifier still mis-ranks training examples."""
    if not stopped and capped:
        rule_text = ("a pair margin <= 0 left" if variant == "minover" else
                     "a mistake (a training example ranked wrongly when visited) in every epoch")
        sol.warn_unless_converged("epochs", reason=f"with {rule_text} ({sol.n_updates} updates; "
                                  f"max_epochs=None is capped at {options.max_epochs_cap}): the data may "
                                  "not be separable")
    elif not sol.converged:
        logger.info("%s: %d training examples mis-ranked after %d epochs (%d updates)%s", sol.name,
                    sol.n_violated, sol.n_epochs, sol.n_updates,
                    " although the last epoch had no mistake" if stopped else "")


def _check_inputs(X, data: MarginData, kernel, sigma, max_epochs, options: Options):
    """``(X, kernel, max_epochs, capped)``: features checked (CSR canonical: duplicate entries
    summed), precomputed and callable kernels checked for positive semidefiniteness,
    ``max_epochs=None`` replaced by ``options.max_epochs_cap`` (``capped``)."""
    if not isinstance(data, MarginData):
        raise InputError("data must be a MarginData (see hiercvx.models.hsvm.prepare)")
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
        check_gram_block(X, options.psd_check_max)
    k = kernel if isinstance(kernel, Kernel) else make_kernel(kernel, X=None if precomputed else X,
                                                              sigma=sigma)
    if k.name == "callable":  # a user kernel must be PSD: check a sample's Gram matrix
        m = min(n, 300)
        check_psd(k(X[:m]), what="Gram matrix of the kernel callable (first 300 examples)")
    if max_epochs is None:
        return X, k, int(options.max_epochs_cap), True
    try:
        ok = int(max_epochs) == max_epochs and max_epochs >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(max_epochs, bool):
        raise InputError(f"max_epochs must be a positive integer or None, got {max_epochs!r}")
    return X, k, int(max_epochs), False


def algorithm_name(variant: str, update: str, form: str) -> str:
    """``"averaged Hieron (primal)"``, ``"online perceptron (dual)"``, ``"Minover perceptron (dual)"``."""
    what = "Hieron" if update == "hieron" else "perceptron"
    return f"{'Minover' if variant == 'minover' else variant} {what} ({form})"


def _solution(X, data: MarginData, k: Kernel, Q, scale, log: UpdateLog, n_steps, n_epochs, stopped,
              margins, history, **options) -> Solution:
    """The returned classifier (last or averaged ``w``, (5.6) / (5.15)) as a :class:`Solution`
    whose objective is its training hinge on (4.10) and whose status describes it (see
    :func:`perceptron`)."""
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
    S = scores(X)
    hinge, worst = _training_hinge(S, data)
    n_violated = int(np.count_nonzero((worst <= 0) & (scale > 0)))
    if margins is not None and np.isnan(margins).any():  # Minover's pairs of weight-0 examples
        gone = np.isnan(margins)
        margins[gone] = (S[data.pair_i[gone], data.pair_y[gone]]
                         - S[data.pair_i[gone], data.pair_ybar[gone]])
    separated = bool(stopped) and n_violated == 0
    status = "separated" if separated else ("not_separated" if stopped else ITERATION_LIMIT)
    return Solution(
        objective=float(data.Cw @ hinge), lower_bound=-np.inf, weights=W,
        status=status, solver="perceptron", n_iter=n_epochs, converged=separated, history=history,
        name=algorithm_name(options["variant"], options["update"], options["form"]),
        extras=dict(options, coefficients=G, class_weights=U, support=support_of(G),
                    n_updates=len(log), n_steps=n_steps, n_epochs=n_epochs, stopped=bool(stopped),
                    n_violated=n_violated, log=log, Q=Q, kernel=k,
                    X_train=X_train, margins=margins, class_scores=scores))


def _training_hinge(S: np.ndarray, data: MarginData):
    """``(xi, worst)`` per example at class scores ``S``: the slack of (4.10) (as
    :func:`hiercvx.models.margin.slacks`, in one compiled pass instead of its temporaries of
    the size of the pairs) and the smallest pair margin."""
    return kern.hinge_pass(np.ascontiguousarray(S, dtype=float), data.pair_ptr, data.pair_y,
                           data.pair_ybar, data.pair_loss, data.rescaling == "slack")


def _run_epochs(X, data, k, rule: kern.PairRule, form, max_epochs, shuffle, random_state, callback,
                verbose, options: Options):
    """Algorithms 4 (primal form) and 5 (dual form) epoch by epoch until an epoch without a
    mistake (Alg. 6 step 12) or ``max_epochs``; returns ``(log, steps, epochs, stopped, None,
    history)``."""
    n, q = data.n_samples, data.n_classes
    rng = np.random.default_rng(random_state)
    parts = []
    history = {"violations": [], "mistakes": [], "updates": []}
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
            k(X) if n <= options.full_gram_max_n else None)

        def scores(Xn):
            sv = np.flatnonzero(is_sv)
            Kn = np.asarray(Xn, dtype=float)[:, sv] if k.name == "precomputed" else (
                k(Xn, X[sv]) if len(sv) else np.zeros((Xn.shape[0], 0)))
            return Kn @ GQ[sv]
    active = np.flatnonzero(rule.weight > 0).astype(np.int64)  # weight 0: never visited nor a step
    for epoch in range(1, max_epochs + 1):
        order = active[rng.permutation(len(active))] if shuffle else active
        buf = kern.empty_log(len(order))
        if form == "primal":
            nu, nv, nm = kern.primal_epoch(order, rows, UT, rule, steps, buf)
        else:
            nu, nv, nm = _dual_epoch(order, X, k, gram, GQ, is_sv, rule, steps, buf,
                                     options.block_entries)
        steps += len(order)
        parts.append(UpdateLog(*(a[:nu] for a in buf)))
        history["violations"].append(int(nv))
        history["mistakes"].append(int(nm))
        history["updates"].append(int(nu))
        if verbose:  # one line per epoch, which an estimator's verbose prints or counts
            logger.info("perceptron epoch %d/%d: %d mistakes, %d updates", epoch, max_epochs,
                        nm, nu)
        if callback is not None:
            callback(epoch, scores)
        if nm == 0:
            converged = True
            break
    return UpdateLog.concatenate(parts), steps, epoch, converged, None, history


def _dual_epoch(order, X, k, gram, GQ, is_sv, rule, steps, buf, block_entries):
    """Algorithm 5 over one epoch, in blocks whose kernel rows (against the support so far plus
    the block) fit ``block_entries``; exact because the support only grows inside a block."""
    n = len(order)
    nu_total = nv_total = nm_total = 0
    start = 0
    while start < n:
        n_sv = int(is_sv.sum())
        size = max(1, min(n - start, block_entries // max(1, n_sv + 1), 2048))
        rows = order[start:start + size]
        cols = np.union1d(np.flatnonzero(is_sv), rows).astype(np.int64)
        if gram is not None:
            Kb = np.ascontiguousarray(gram[np.ix_(rows, cols)])
        else:
            Kb = np.ascontiguousarray(k(X[rows], X[cols]), dtype=float)
        nu_total, nv, nm = kern.dual_block(rows, Kb, cols, GQ, is_sv, rule, steps + start, buf,
                                           nu_total)
        nv_total += nv
        nm_total += nm
        start += size
    return nu_total, nv_total, nm_total


def _run_minover(X, data, k, Q, scale, max_epochs, verbose, options: Options):
    """Algorithm 7: the globally smallest pair margin ``T_p`` (5.16) is corrected until all are
    positive; ``T`` is maintained by (5.17).  With at most ``options.full_gram_max_n`` examples
    on a precomputed Gram matrix, else on kernel columns computed as needed.  Pairs of
    examples of weight 0 take no part (their entries of the returned ``T`` are nan, filled
    from the classifier by :func:`_solution`); the step of a pair is ``scale_i Delta_p``."""
    n, n_pos = data.n_samples, int(np.count_nonzero(scale > 0))  # epochs of the trained examples
    max_iter = max_epochs * n_pos
    keep = np.flatnonzero(scale[data.pair_i] > 0)
    pairs = kern.MinoverPairs(data.pair_i[keep].astype(np.int64), data.pair_y[keep].astype(np.int64),
                              data.pair_ybar[keep].astype(np.int64),
                              np.ascontiguousarray(data.pair_loss[keep] * scale[data.pair_i[keep]],
                                                   dtype=float))
    T = np.zeros(len(keep))
    if n <= options.full_gram_max_n:
        K = np.ascontiguousarray(np.asarray(X, dtype=float) if k.name == "precomputed" else k(X))
        buf = kern.empty_log(max_iter)
        it, converged, chunk = 0, False, 1
        while it < max_iter and not converged:  # chunks of 1, 1, 2, 4, ... steps when verbose
            end = min(max_iter, it + chunk) if verbose else max_iter
            it, converged = kern.minover_full(T, K, pairs, Q, it, end, buf)
            it, converged = int(it), bool(converged)
            if verbose:
                logger.info("Minover step %d/%d: smallest pair margin %.6g", it, max_iter,
                            float(T.min()) if len(T) else np.inf)
                chunk = it
    else:
        buf, converged = _minover_columns(X, k, Q, T, pairs, max_iter, verbose,
                                          options.minover_cache_bytes // (8 * n))
        it = len(buf.example)
    it = int(it)
    log = UpdateLog(np.arange(1, it + 1, dtype=np.int64), buf.example[:it], buf.y[:it], buf.ybar[:it],
                    buf.tau[:it])
    n_epochs = int(np.ceil(it / n_pos)) if it else 1
    margins = np.full(data.n_pairs, np.nan)
    margins[keep] = T
    return log, it, n_epochs, bool(converged), margins, {"updates": [it]}


def _minover_columns(X, k, Q, T, pairs, max_iter, verbose, cache_budget):
    """Algorithm 7 on kernel columns computed as needed (at most ``cache_budget`` kept);
    returns the log of its steps and whether every ``T_p > 0``."""
    cache: dict[int, np.ndarray] = {}
    rows = {"i": [], "y": [], "yb": [], "tau": []}
    best = int(np.argmin(T))
    converged = False
    for step in range(1, max_iter + 1):
        if T[best] > 0:
            converged = True
            break
        i, y, yb, tau = int(pairs.i[best]), int(pairs.y[best]), int(pairs.ybar[best]), float(pairs.loss[best])
        col = cache.get(i)
        if col is None:
            col = (np.asarray(X[:, i], dtype=float).ravel() if k.name == "precomputed"
                   else k(X, X[i:i + 1]).ravel())
            if len(cache) < cache_budget:
                cache[i] = col
        for key, v in zip(("i", "y", "yb", "tau"), (i, y, yb, tau)):
            rows[key].append(v)
        best = kern.minover_update(T, np.ascontiguousarray(col), pairs, Q[y] - Q[yb], tau)
        if verbose and step & (step - 1) == 0:  # steps 1, 2, 4, 8, ...: few lines however many
            logger.info("Minover step %d/%d: smallest pair margin %.6g", step, max_iter,
                        float(T[best]))
    else:
        converged = bool(T[best] > 0)
    it = len(rows["i"])
    buf = kern.LogArrays(np.zeros(it, np.int64), np.array(rows["i"], np.int64), np.array(rows["y"], np.int64),
                         np.array(rows["yb"], np.int64), np.array(rows["tau"], float))
    return buf, converged


def flat_perceptron(X, Y, *, variant: str = "online", max_epochs: int | None = 20, shuffle=True,
                    random_state=0, **kwargs) -> Solution:
    """Algorithm 3, the flat multi-label perceptron: ``w_y += x_i``, ``w_ybar -= x_i`` for the
    lowest-scoring relevant and highest-scoring irrelevant class.  It is Algorithm 4 with
    indicator attributes and the 0/1 loss (:func:`flat_margin_data`); ``weights`` are the
    class weight vectors ``(q, d)``."""
    return perceptron(X, flat_margin_data(Y), variant=variant, max_epochs=max_epochs,
                      shuffle=shuffle, random_state=random_state, **kwargs)
