"""Fast flat Crammer–Singer multi-class SVM: sequential dual coordinate ascent with shrinking.

The objective is LIBLINEAR's ``MCSVM_CS`` (the one ``LinearSVC(multi_class="crammer_singer")``
minimizes; see :func:`hiercvx.formulations.multiclass.primal`)::

    min_W  1/2 ||W||_F^2 + sum_i C_i xi_i,   xi_i = max(0, max_{m != y_i} 1 - (w_{y_i} - w_m) . x_i)

with ``C_i = C * sample_weight_i * class_weight[y_i]`` and, with ``fit_intercept``, a constant
feature ``intercept_scaling`` appended to X whose weight is regularized like the others.  This
is the shared margin model of :mod:`hiercvx.formulations._margin` with ``Lam = I`` and the 0/1
loss (slack and margin rescaling coincide).

Dual in the Crammer–Singer parametrisation, ``beta`` ``(n, q)`` = the expansion coefficients
``G`` of the margin model (``beta[i, m] = -alpha_(i, y_i, m)`` for ``m != y_i``)::

    min_beta  1/2 ||W(beta)||^2 + sum_i sum_{m != y_i} beta_im,   W(beta) = beta^T X
    s.t.      beta_im <= C_i [m = y_i],   sum_m beta_im = 0.

Example i's block (the others frozen) is ``min 1/2 A ||b||^2 + B . b`` over the same
constraints, ``A = ||x_i||^2``, ``B_m = g_m - A beta_im`` with the gradient
``g_m = w_m . x_i + [m != y_i]``.  Its KKT conditions give ``b_m = min(C_m, (phi - B_m)/A)``
where ``phi`` solves ``sum_m max(0, D_m - phi) = A C_i``, ``D_m = B_m + A C_m``: a
water-filling level found after sorting ``D`` (Crammer & Singer's fixed point; the sequential
dual method of Keerthi et al. that LIBLINEAR implements).  An example is skipped when its KKT
violation ``max_m g_m - min_{m: beta_im < C_m} g_m`` (the thesis' psi_i, (4.32)) is below the
current threshold.  Shrinking as in LIBLINEAR: a class at its cap whose gradient is strictly
below that of every class that may still decrease is left out of the example's block, and an
example left with one class is left out of the passes, until the shrunk problem is solved to
the threshold or a certificate finds the example violated again.

Stopping is certified as in :mod:`hiercvx.solvers.working_set`: the relative duality gap
between the primal recomputed at ``W(beta)`` and the dual at the (feasible) ``beta``,
both evaluated with :mod:`hiercvx.formulations._margin`.  The working-set solver's Newton
step on the settled support (its step 8b) is shared; it rescues the nearly hard-margin
problems on which coordinate descent (ours and LIBLINEAR's) needs 10^4 passes.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.sparse as sp
from numba import njit
from threadpoolctl import threadpool_limits

from .._validation import check_features, check_positive
from ..exceptions import InputError, LabelError
from ..models import margin as _margin
from ._result import SolverResult, reached
from .working_set import (_MODE_DENSE, _MODE_SPARSE, _Schedule, _State, _axpy_row,
                          _axpy_row_sparse, _dot_row, _dot_row_sparse)

logger = logging.getLogger(__name__)

__all__ = ["solve", "margin_data"]


@njit(cache=True)
def _block_solve(g, b, cap, k, C_i, A, Bv, D, out):
    """Exact minimizer of example i's block over its ``k`` unshrunk classes, into ``out``.

    ``min_b 1/2 A ||b - b_old||^2 + g . (b - b_old)`` s.t. ``b_t <= cap_t`` and ``sum_t b_t``
    fixed (= the sum of ``b_old``; the shrunk classes sit at their caps, so
    ``sum_t (cap_t - b_t) = C_i``).  KKT: ``b_t = min(cap_t, (phi - B_t)/A)`` with
    ``B_t = g_t - A b_old_t`` and ``phi`` the level where ``sum_t max(0, D_t - phi) = A C_i``,
    ``D_t = B_t + A cap_t`` (found after sorting D).  For ``A = 0`` (a zero row) the problem
    is linear and the whole ``C_i`` goes to the class of largest gradient.
    """
    if A <= 0.0:
        best = 0
        for t in range(1, k):
            if g[t] > g[best]:
                best = t
        for t in range(k):
            out[t] = cap[t]
        out[best] -= C_i
        return
    for t in range(k):
        Bv[t] = g[t] - A * b[t]
        D[t] = Bv[t] + A * cap[t]
    for t in range(1, k):  # insertion sort, descending (k is small)
        v = D[t]
        j = t - 1
        while j >= 0 and D[j] < v:
            D[j + 1] = D[j]
            j -= 1
        D[j + 1] = v
    total = -A * C_i
    phi = 0.0
    for t in range(k):
        total += D[t]
        phi = total / (t + 1)
        if t == k - 1 or D[t + 1] <= phi:
            break
    for t in range(k):
        out[t] = min(cap[t], (phi - Bv[t]) / A)


@njit(cache=True)
def _cs_sweep(order, sparse, X, indptr, indices, xvals, W, beta, y, budget, sqnorm, eps, active,
              classes, n_active_classes):
    """One pass over ``order``; returns (largest violation met, visits, multiply-adds).

    Shrinking (as in LIBLINEAR): a class at its cap whose gradient lies strictly below every
    class that could still decrease is moved behind ``n_active_classes[i]`` in the row
    ``classes[i]`` and skipped; an example left with one class is marked inactive.
    """
    q = W.shape[0]
    g = np.empty(q)
    b = np.empty(q)
    cap = np.empty(q)
    Bv = np.empty(q)
    D = np.empty(q)
    new = np.empty(q)
    psi_max = 0.0
    visits = 0
    work = 0.0
    for i in order:
        C_i = budget[i]
        if C_i <= 0.0:
            active[i] = 0
            continue
        y_i = y[i]
        k = n_active_classes[i]
        row = indptr[i + 1] - indptr[i] if sparse else X.shape[1]
        work += k * row
        # gradient g_m = w_m . x_i + [m != y_i] over the unshrunk classes
        g_max = -np.inf
        g_min = np.inf
        for t in range(k):
            m = classes[i, t]
            if sparse:
                v = _dot_row_sparse(W, m, indptr, indices, xvals, i)
            else:
                v = _dot_row(W, m, X, i)
            if m != y_i:
                v += 1.0
            g[t] = v
            b[t] = beta[i, m]
            cap[t] = C_i if m == y_i else 0.0
            if v > g_max:
                g_max = v
            if b[t] < cap[t] and v < g_min:
                g_min = v
        t = 0
        while t < k:
            if b[t] >= cap[t] and g[t] < g_min:
                k -= 1
                m = classes[i, t]
                classes[i, t] = classes[i, k]
                classes[i, k] = m
                g[t], g[k] = g[k], g[t]
                b[t], b[k] = b[k], b[t]
                cap[t], cap[k] = cap[k], cap[t]
            else:
                t += 1
        n_active_classes[i] = k
        psi = g_max - g_min
        if psi > psi_max:
            psi_max = psi
        if k <= 1:
            active[i] = 0
            continue
        if psi <= eps:
            continue
        visits += 1
        _block_solve(g, b, cap, k, C_i, sqnorm[i], Bv, D, new)
        for t in range(k):
            d = new[t] - b[t]
            if d != 0.0:
                m = classes[i, t]
                beta[i, m] = new[t]
                work += row
                if sparse:
                    _axpy_row_sparse(W, m, d, indptr, indices, xvals, i)
                else:
                    _axpy_row(W, m, d, X, i)
    return psi_max, visits, work


def margin_data(y_index, n_classes: int, example_weights=None) -> _margin.MarginData:
    """The flat Crammer–Singer instance of the shared margin model (Lam = I, 0/1 loss)."""
    y_index = np.asarray(y_index)
    Y = np.zeros((len(y_index), n_classes), dtype=bool)
    Y[np.arange(len(y_index)), y_index] = True
    return _margin.margin_data(Y, 1.0 - np.eye(n_classes), Lam=np.eye(n_classes),
                               rescaling="slack", sample_weight=example_weights)


def _pair_alpha(beta, data):
    """Pair multipliers ``alpha_(i, y_i, m) = -beta_im`` (clipped at 0: rounding only)."""
    return np.maximum(-beta[data.pair_i, data.pair_ybar], 0.0)


def solve(X, y_int, C: float = 1.0, sample_weight=None, class_weight=None, fit_intercept: bool = False,
          intercept_scaling: float = 1.0, tol: float = 1e-6, max_iter: int = 10_000, n_classes=None,
          alpha0=None, check_every: int = 10, polish: bool = True, random_state=0,
          verbose: bool = False) -> SolverResult:
    """Crammer–Singer by sequential dual block coordinate descent (closed-form blocks, shrinking).

    Parameters
    ----------
    X : (n, d) array or CSR matrix
    y_int : (n,) integer class indices in ``0 .. n_classes - 1``
    C : positive float
    sample_weight, class_weight : ``C_i = C * sample_weight_i * class_weight[y_i]``;
        ``class_weight`` is None, a dict ``{class index: weight}`` or ``"balanced"``
        (see :func:`hiercvx.formulations.multiclass.example_weights`)
    fit_intercept, intercept_scaling : LIBLINEAR's bias: a constant feature ``intercept_scaling``
        appended to X, its weight regularized
    tol : certified relative duality gap to reach
    max_iter : passes over the data (a ``ConvergenceWarning`` when they run out)
    n_classes : number of classes (default ``max(y_int) + 1``)
    alpha0 : optional warm start, pair multipliers in the order of :func:`margin_data`
    check_every : least number of passes between certificates (more when a certificate is
        expensive relative to a pass; also certified when a full pass meets no violation above
        the threshold)
    polish : Newton steps on the union of the working sets when the support of the dual
        settled between two certificates (see ``working_set._State.newton_step``)

    Returns
    -------
    SolverResult: ``weights`` the class weights ``(q, d)``; ``result.intercept`` ``(q,)``
    (``intercept_scaling`` times the weight of the constant feature; zeros without
    intercept); ``dual`` the pair multipliers; ``objective`` / ``lower_bound`` over the
    augmented features, recomputed with :mod:`hiercvx.formulations._margin`.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        return _solve(X, y_int, C, sample_weight, class_weight, fit_intercept, intercept_scaling,
                      tol, max_iter, n_classes, alpha0, check_every, polish, random_state, verbose)


def _solve(X, y_int, C, sample_weight, class_weight, fit_intercept, intercept_scaling, tol,
           max_iter, n_classes, alpha0, check_every, polish, random_state, verbose):
    from ..formulations.multiclass import example_weights

    t_start = time.perf_counter()
    X = check_features(X)
    C = check_positive(C)
    tol = float(tol)
    if not (np.isfinite(tol) and tol >= 0):
        raise InputError(f"tol must be a non-negative number, got {tol!r}")
    n, d = X.shape
    y = np.asarray(y_int)
    if y.shape != (n,) or (y.size and y.dtype.kind not in "iu"):
        raise LabelError(f"y_int must hold {n} integer class indices (one per row of X), got "
                         f"shape {y.shape} and dtype {y.dtype}; encode labels with np.unique(..., "
                         "return_inverse=True)")
    q = int(y.max()) + 1 if n_classes is None else int(n_classes)
    if y.min() < 0 or y.max() >= q:
        raise LabelError(f"class indices must lie in 0..{q - 1}, got {y.min()}..{y.max()}")
    if q < 2:
        raise LabelError("Crammer–Singer needs at least two classes")
    y = y.astype(np.int64)
    Cw = example_weights(y, np.arange(q), sample_weight, class_weight)
    data = margin_data(y, q, Cw)
    if fit_intercept:
        intercept_scaling = check_positive(intercept_scaling, "intercept_scaling")
        col = np.full((n, 1), intercept_scaling)
        X = sp.hstack([X, sp.csr_matrix(col)], format="csr") if sp.issparse(X) else np.hstack([X, col])
    sparse = sp.issparse(X)
    if sparse:
        X = sp.csr_matrix(X)
        X.sort_indices()
        Xd = np.zeros((1, 1))
        indptr, indices = X.indptr.astype(np.int64), X.indices.astype(np.int64)
        xvals = np.ascontiguousarray(X.data, dtype=float)
        sqnorm = np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    else:
        Xd = X = np.ascontiguousarray(X, dtype=float)
        indptr, indices, xvals = np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1)
        sqnorm = np.einsum("ij,ij->i", X, X)
    budget = np.ascontiguousarray(C * Cw, dtype=float)
    eye = data.Lam

    beta = np.zeros((n, q))
    if alpha0 is not None:
        alpha0 = np.asarray(alpha0, dtype=float)
        if alpha0.shape != (data.n_pairs,) or not np.all(np.isfinite(alpha0)):
            raise InputError(f"alpha0 must hold {data.n_pairs} finite pair multipliers, got shape "
                             f"{alpha0.shape}")
        beta = _margin.coefficients(_margin.project_dual(alpha0, data, C), data)

    state = _State(_MODE_SPARSE if sparse else _MODE_DENSE, X, None, data, C)

    rng = np.random.default_rng(random_state)
    log = logger.info if verbose else logger.debug
    history = {k: [] for k in ("n_iter", "objective", "lower_bound", "gap", "time")}
    active = np.ones(n, dtype=np.int8)
    classes = np.tile(np.arange(q, dtype=np.int64), (n, 1))
    n_active_classes = np.full(n, q, dtype=np.int64)
    n_iter, converged, eps, pass_max = 0, False, 0.0, np.inf
    W = np.zeros((q, X.shape[1]))
    schedule = _Schedule(check_every, state.certificate_work())
    while True:
        if schedule.due():
            alpha = _margin.project_dual(_pair_alpha(beta, data), data, C)
            primal, dual, psi = state.checkpoint(alpha, tol, polish)
            # re-synchronise beta and W with the certified point
            beta = np.ascontiguousarray(state.G.copy())
            W = np.ascontiguousarray(state.W.copy())
            gap = (primal - dual) / max(1.0, abs(primal))
            for key, val in (("n_iter", n_iter), ("objective", primal), ("lower_bound", dual),
                             ("gap", gap), ("time", time.perf_counter() - t_start)):
                history[key].append(val)
            log("pass %d: primal %.10g dual %.10g gap %.3e", n_iter, primal, dual, gap)
            if gap <= tol:
                converged = True
                break
            psi_ok = tol * max(1.0, abs(primal)) / max(float(budget.sum()), np.finfo(float).tiny)
            # Like LIBLINEAR, a fixed small violation threshold (here one that certifies tol:
            # gap <= sum_i C_i psi_i) with shrinking; unlike it, shrunk examples found violated
            # at a certificate come back at once.
            eps = 0.1 * psi_ok
            back = psi > eps
            active[back] = 1
            n_active_classes[back] = q
            schedule.certified()
        if n_iter >= max_iter:
            break
        order = rng.permutation(np.flatnonzero(active)).astype(np.int64)
        pass_max, _, work = _cs_sweep(order, sparse, Xd, indptr, indices, xvals, W, beta, y, budget,
                                sqnorm, eps, active, classes, n_active_classes)
        n_iter += 1
        schedule.passed(work)
        state.pass_work += work
        if pass_max <= eps:
            if active.all() and (n_active_classes == q).all():
                schedule.now()
            else:  # converged on the shrunk problem: check everything again
                active[:] = 1
                n_active_classes[:] = q

    alpha = _margin.project_dual(_pair_alpha(beta, data), data, C)
    G = _margin.coefficients(alpha, data)
    W_aug = _margin.weights_from_coefficients(G, X, eye)
    objective = _margin.primal_objective(W_aug, X, data, C)
    lower = _margin.dual_objective_linear(alpha, X, data)
    converged = converged and reached((objective - lower) / max(1.0, abs(objective)), tol)
    coef = W_aug[:, :d] if fit_intercept else W_aug
    res = SolverResult(weights=np.ascontiguousarray(coef), objective=float(objective),
                       lower_bound=float(lower), n_iter=n_iter, converged=converged, tol=tol,
                       dual=alpha, history=history, solve_time=time.perf_counter() - t_start,
                       name="Crammer-Singer sequential dual")
    res.intercept = (intercept_scaling * W_aug[:, d]) if fit_intercept else np.zeros(q)
    res.coefficients = G
    res.warn_unless_converged("passes", stacklevel=3)  # points at the caller of solve
    res.history["n_newton"] = state.n_newton
    return res
