"""Normalized hierarchical SVM and the shared-norm SVM (seed ``001_387b6b34a68f4b02.txt``).

Notation (paper section 3-6): ``M`` nodes (``H.nodes``, root included), leaves ``L``
(``H.leaves``), ``anc(l)`` the ancestors of ``l`` with ``l`` itself (the paper's
``A-bar(l)``), node weights ``W`` ``(M, d)``, path weights ``alpha`` ``(M,)``.  The leaf-path
matrix ``A`` ``(|L|, M)`` has ``A[l, n] = 1`` iff ``n in anc(l)``.

Declarations (each returns a :class:`~hiercvx.ReferenceProblem`; see ``formulations/nhsvm.md``):

* :func:`path_weights_problem` / :func:`path_weights` -- alpha from (6) (``method="power"``,
  any ``rho > 1``), the max-min program (7) (``"maxmin"``, directional constraints) and the
  DAG relaxation (8) (``T``; ``method="dag"`` is (6) under (8) with ``T = 1.5``).
* :func:`primal` -- NHSVM (10) (= (11) = (12)) with the normalized attributes (5) and the
  normalized margin (9), or the variant (13).  Single-label: the pairwise model of
  :mod:`._margin` over the leaves with margin rescaling.  Multi-label: an exact cutting-plane
  loop (:class:`CuttingPlaneProblem`) with the decomposable loss of section 7.1.
* :func:`shared_primal` -- the shared-norm SVM (14), jointly convex in ``U`` and ``alpha``.
* :func:`alpha_step` -- problem (20) (its closed form on trees is
  :func:`hiercvx.solvers.shared_norm.optimal_alpha`).
* :func:`shared_norm` / :func:`shared_norm_problem` -- the structured shared norm (16) and,
  without a hierarchy, the shared norm (17); :func:`max_norm` and :func:`trace_norm` complete
  Theorem 2's chain.

Every certificate is a Lagrangian lower bound at a dual point built from the solver's duals
and repaired to exact feasibility in numpy; the objective is recomputed in numpy at the
returned weights (never the solver's number).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validation import check_features, check_positive
from ..exceptions import HierarchyError, InputError, LabelError, SolverError
from ..hierarchy import Hierarchy, _is_label_set, class_attributes
from ..inference import DecomposableLoss, LabelSetOracle, _as_loss
from ..reference import ReferenceProblem, ReferenceSolution, check_size, choose_solver
from ..models import margin as _margin

logger = logging.getLogger(__name__)

__all__ = [
    "PATH_METHODS",
    "VARIANTS",
    "DAG_T",
    "path_weights",
    "path_weights_problem",
    "check_path_weights",
    "NHSVMData",
    "prepare",
    "node_scores",
    "primal_objective",
    "primal",
    "CuttingPlaneProblem",
    "CuttingPlaneSolution",
    "shared_primal",
    "alpha_step",
    "shared_norm",
    "shared_norm_problem",
    "max_norm",
    "trace_norm",
]

PATH_METHODS = ("power", "maxmin", "dag")
VARIANTS = ("nhsvm", "13")
#: The paper's T in (8) for its DAG experiments (section 8.1).
DAG_T = 1.5


# ====================================================================== small helpers
def _check_hierarchy(H) -> Hierarchy:
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}; build one with "
                         "Hierarchy.from_parents / from_edges / from_paths")
    if len(H.leaf_indices) < 2:
        raise HierarchyError(f"the hierarchy has {len(H.leaf_indices)} leaf; NHSVM needs at least two "
                             "leaves (classes)")
    return H


def _leaf_paths(H: Hierarchy) -> sp.csr_matrix:
    """``A`` ``(|L|, M)``: ``A[l, n] = 1`` iff ``n in anc(l)`` (rows follow ``H.leaves``)."""
    return sp.csr_matrix(H.ancestor_matrix[H.leaf_indices], dtype=float)


def _edge_differences(H: Hierarchy) -> sp.csr_matrix:
    """``(n_edges, M)``: row ``e = (p, c)`` is ``e_c - e_p`` (directional constraint of (7))."""
    E = H.edge_index
    k = len(E)
    rows = np.r_[np.arange(k), np.arange(k)]
    cols = np.r_[E[:, 1], E[:, 0]]
    vals = np.r_[np.ones(k), -np.ones(k)]
    return sp.csr_matrix((vals, (rows, cols)), shape=(k, len(H)))


def _dense(a) -> np.ndarray:
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def _nnz(X) -> int:
    return int(X.nnz) if sp.issparse(X) else int(X.shape[0] * X.shape[1])


def _first_leaf_below(H: Hierarchy) -> np.ndarray:
    """For each node, the row (in ``H.leaves`` order) of one leaf below it."""
    D = sp.csr_matrix(H.descendant_matrix[:, H.leaf_indices])
    D.sort_indices()
    return D.indices[D.indptr[:-1]]


def _cover(mu: np.ndarray, need: np.ndarray, H: Hierarchy, A: sp.csr_matrix) -> np.ndarray:
    """Raise leaf multipliers ``mu >= 0`` until ``(A^T mu)_n >= need_n`` for every node.

    The dual of the path constraints ``A alpha <= 1`` needs this covering condition; the
    solver's multipliers meet it up to its tolerance.  Levels are repaired from the deepest
    up: a deficit at node ``n`` is added to one leaf below ``n``, which raises only ``n``'s
    and its ancestors' coverage, so repaired levels stay repaired.
    """
    from ..solvers.shared_norm import depth_levels

    mu = np.maximum(np.asarray(mu, dtype=float), 0.0).copy()
    first = _first_leaf_below(H)
    for level in reversed(depth_levels(H)):
        covered = A.T @ mu
        deficit = np.maximum(need[level] - covered[level], 0.0)
        if np.any(deficit > 0):
            np.add.at(mu, first[level], deficit)
    return mu


def _scaled_alpha(alpha, A: sp.csr_matrix) -> np.ndarray:
    """``alpha`` clipped at 0 and shrunk so that every path sum is at most 1 (feasible for (14),
    (16), (20))."""
    a = np.maximum(np.asarray(alpha, dtype=float), 0.0)
    top = float((A @ a).max()) if A.shape[0] else 0.0
    return a / top if top > 1.0 else a


def _ratio_sum(b: np.ndarray, alpha: np.ndarray) -> float:
    """``sum_n b_n / alpha_n`` with ``0 / 0 = 0`` and ``b / 0 = inf`` (b > 0)."""
    pos = b > 0
    if np.any(pos & (alpha <= 0)):
        return float("inf")
    return float(np.sum(b[pos] / alpha[pos]))


def _lagrangian_power_min(r: np.ndarray, rho: float, upper: float) -> np.ndarray:
    """``min_{0 <= a <= upper} a^rho - r a`` per coordinate."""
    a = np.zeros_like(r)
    pos = r > 0
    a[pos] = np.minimum((r[pos] / rho) ** (1.0 / (rho - 1.0)), upper)
    return a ** rho - r * a


# ====================================================================== path weights (6)-(8)
def _check_rho(rho) -> float:
    try:
        r = float(rho)
    except (TypeError, ValueError):
        raise InputError(f"rho must be a number > 1, got {rho!r}") from None
    if not (np.isfinite(r) and r > 1.0):
        raise InputError(f"rho must be finite and > 1 (problem (6) is not strictly convex at rho = 1; "
                         f"use method='maxmin' for the rho = 1 alternative (7)), got {rho!r}")
    return r


def _check_T(T) -> float | None:
    """``None`` (equality (4)) or a finite ``T > 1`` for the relaxation (8); ``T == 1`` is (4)."""
    if T is None:
        return None
    try:
        t = float(T)
    except (TypeError, ValueError):
        raise InputError(f"T must be a number >= 1, got {T!r}") from None
    if not (np.isfinite(t) and t >= 1.0):
        raise InputError(f"T must be finite and >= 1 (constraint (8) is 1 <= sum_(n in anc(l)) "
                         f"alpha_n <= T), got {T!r}")
    return None if t == 1.0 else t


def path_weights_problem(H: Hierarchy, method: str = "power", rho: float = 2.0, T=None,
                         directional: bool | None = None, max_size: int | None = None) -> ReferenceProblem:
    """The path-weight program as a certified :class:`~hiercvx.ReferenceProblem`.

    ``method="power"``: (6) ``min sum_n alpha_n^rho`` s.t. ``sum_{n in anc(l)} alpha_n = 1`` for
    every leaf, ``alpha >= 0`` (``rho > 1``).  ``"maxmin"``: (7) ``max min_n alpha_n`` under the
    same constraints, declared as ``min -t`` with ``alpha_n >= t`` (so ``sol.objective`` is
    ``-min_n alpha_n``).  ``"dag"``: (6) under the relaxation (8), ``T`` defaulting to 1.5.
    ``T`` (any method): replace the equality by (8) ``1 <= sum_{anc(l)} alpha <= T``.
    ``directional`` (any method; default True for ``"maxmin"`` as printed in (7), else False):
    ``alpha_child >= alpha_parent`` on every edge.

    Lower bound: the Lagrangian at the solver's multipliers (equalities free, inequalities
    clipped at 0), minimized in closed form over the box ``0 <= alpha_n, t <= max(1, T)``,
    which holds every feasible point's coordinates (each node lies on some leaf's path).
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    H = _check_hierarchy(H)
    if method not in PATH_METHODS:
        raise InputError(f"unknown path-weight method {method!r}; choose one of {PATH_METHODS}")
    rho = _check_rho(rho)
    if method == "dag" and T is None:
        T = DAG_T
    T = _check_T(T)
    directional = (method == "maxmin") if directional is None else bool(directional)
    M = len(H)
    A = _leaf_paths(H)
    n_leaves = A.shape[0]
    linear = method == "maxmin"
    check_size(M + 1, n_leaves + len(H.edge_index) + M, 2 * A.nnz + 4 * M, max_size,
               what=f"the path-weight program ({method})")
    nz = M + int(linear)

    def on_z(mat):  # a constraint matrix over alpha, padded with a zero column for t
        mat = sp.csr_matrix(mat)
        return sp.hstack([mat, sp.csr_matrix((mat.shape[0], 1))], format="csr") if linear else mat

    equalities, inequalities = {}, {}  # name -> (matrix over z, rhs); rows read G z >= h
    if T is None:
        equalities["paths"] = (on_z(A), np.ones(n_leaves))
    else:
        inequalities["paths_lower"] = (on_z(A), np.ones(n_leaves))
        inequalities["paths_upper"] = (on_z(-A), -T * np.ones(n_leaves))
    if directional and len(H.edge_index):
        inequalities["directional"] = (on_z(_edge_differences(H)), np.zeros(len(H.edge_index)))
    if linear:
        floor = sp.hstack([sp.identity(M, format="csr"), -np.ones((M, 1))], format="csr")
        inequalities["floor"] = (floor, np.zeros(M))

    alpha = cp.Variable(M, name="alpha")
    variables = {"alpha": alpha}
    if linear:
        t = cp.Variable(name="t")
        variables["t"] = t
        z = cp.hstack([alpha, cp.reshape(t, (1,), order="C")])
        objective_expr = -t
    else:
        z = alpha
        objective_expr = cp.sum_squares(alpha) if rho == 2.0 else cp.sum(cp.power(alpha, rho))
    constraints = {name: mat @ z == rhs for name, (mat, rhs) in equalities.items()}
    constraints.update({name: mat @ z >= rhs for name, (mat, rhs) in inequalities.items()})
    nonneg = alpha >= 0
    problem = cp.Problem(cp.Minimize(objective_expr), list(constraints.values()) + [nonneg])
    upper = 1.0 if T is None else T

    def stacked(values):
        a = np.asarray(values["alpha"], dtype=float)
        return np.r_[a, float(values["t"])] if linear else a

    def objective(values):
        a = np.asarray(values["alpha"], dtype=float)
        if linear:
            return -float(a.min())
        return float(np.sum(np.maximum(a, 0.0) ** rho))

    def lower_bound(values, duals):
        # Lagrangian f(z) - nu^T (A_eq z - b) - mu^T (G z - h); CVXPY's equality dual is -nu
        r = np.zeros(nz)
        const = 0.0
        for name, (mat, rhs) in equalities.items():
            nu = -np.asarray(duals[name], dtype=float)
            r += mat.T @ nu
            const += float(rhs @ nu)
        for name, (mat, rhs) in inequalities.items():
            mu = np.maximum(np.asarray(duals[name], dtype=float), 0.0)
            r += mat.T @ mu
            const += float(rhs @ mu)
        if linear:  # objective -t: coefficient 0 on alpha, -1 on t
            c = np.r_[np.zeros(M), -1.0]
            return const + float(np.minimum(0.0, (c - r) * upper).sum())
        return const + float(_lagrangian_power_min(r, rho, upper).sum())

    def infeasibility(values):
        zv = stacked(values)
        worst = float(max(0.0, -np.min(values["alpha"])))
        for mat, rhs in equalities.values():
            worst = max(worst, float(np.abs(mat @ zv - rhs).max()))
        for mat, rhs in inequalities.values():
            worst = max(worst, float(np.max(rhs - mat @ zv, initial=0.0)))
        return worst

    what = {"power": f"(6), rho={rho:g}", "maxmin": "(7)", "dag": f"(6), rho={rho:g}"}[method]
    relax = "" if T is None else f", relaxation (8) T={T:g}"
    return ReferenceProblem(
        problem, variables=variables, objective=objective, lower_bound=lower_bound,
        weights=lambda values: np.maximum(np.asarray(values["alpha"], dtype=float), 0.0),
        constraints=constraints, infeasibility=infeasibility,
        name=f"NHSVM path weights {what}{relax}{', directional' if directional else ''}",
        build_time=time.perf_counter() - t0,
        data={"H": H, "method": method, "rho": rho, "T": T, "directional": directional,
              "leaf_paths": A})


def path_weights(H: Hierarchy, method: str = "power", rho: float = 2.0, T=None,
                 directional: bool | None = None, *, solver: str | None = None,
                 return_solution: bool = False, max_size: int | None = None):
    """Node weights ``alpha`` over ``H.nodes`` from (6), (7) or (8); see :func:`path_weights_problem`.

    Returns the ``(M,)`` array (clipped at 0); with ``return_solution=True`` also the
    certified :class:`~hiercvx.ReferenceSolution` (``sol.objective``, ``sol.gap``; its
    ``problem`` via ``path_weights_problem``).  The max-min program (7) is an LP whose
    maximizer is generally not unique (only ``min alpha`` is); the solver's vertex is returned.
    """
    prob = path_weights_problem(H, method=method, rho=rho, T=T, directional=directional,
                                max_size=max_size)
    sol = prob.solve(solver=solver)
    alpha = np.asarray(sol.weights, dtype=float)
    return (alpha, sol) if return_solution else alpha


def check_path_weights(alpha, H: Hierarchy, T=None, tol: float = 1e-6) -> np.ndarray:
    """Validate node weights for (5): one finite value >= 0 per node of ``H.nodes`` and every
    leaf's ancestor sum ``sum_{n in anc(l)} alpha_n`` equal to 1 ((4)), or in ``[1, T]`` ((8)).

    Returns the weights as a float array (tiny negatives from a solver clipped to 0).
    """
    H = _check_hierarchy(H)
    T = _check_T(T)
    try:
        a = np.asarray(alpha, dtype=float)
    except (TypeError, ValueError):
        raise InputError("alpha must be a numeric array with one weight per node of H.nodes") from None
    M = len(H)
    if a.shape != (M,):
        raise InputError(f"alpha must have one weight per node of H.nodes (root included): length {M}, "
                         f"got shape {a.shape}; compute it with nhsvm.path_weights(H)")
    if not np.all(np.isfinite(a)):
        raise InputError("alpha has non-finite entries (NaN or inf)")
    if np.any(a < -tol):
        k = int(np.argmin(a))
        raise InputError(f"alpha must be non-negative; node {H.nodes[k]!r} has alpha = {a[k]:.6g}")
    a = np.maximum(a, 0.0)
    sums = _leaf_paths(H) @ a
    hi = 1.0 if T is None else T
    bad = np.flatnonzero((sums < 1.0 - tol) | (sums > hi + tol))
    if bad.size:
        k = int(bad[0])
        leaf = H.leaves[k]
        want = "equal 1 (constraint (4))" if T is None else f"lie in [1, {T:g}] (constraint (8))"
        raise InputError(f"alpha is infeasible for this hierarchy: the weights on the path to leaf "
                         f"{leaf!r} sum to {sums[k]:.6g}, but every leaf's ancestor sum must {want} "
                         f"({bad.size} leaves violate it). Use nhsvm.path_weights(H), or pass T= for "
                         "the DAG relaxation (8)")
    return a


# ====================================================================== labels and data
def _labels(Y, H: Hierarchy, n_samples: int, multilabel: bool | None):
    """``(T, leaf_pos, multilabel)``: closed label sets ``T`` ``(n, M)`` bool, each sample's leaf
    (position in ``H.leaves``; single-label only) and the label space used."""
    if sp.issparse(Y) or (isinstance(Y, np.ndarray) and Y.ndim == 2):
        inferred = True
    else:
        if isinstance(Y, (str, bytes)):
            raise LabelError("Y must hold one label (or label set) per sample, got a single string")
        Y = list(Y)
        inferred = any(_is_label_set(item, H) for item in Y)
    multilabel = inferred if multilabel is None else bool(multilabel)
    ind = H.label_indicator(Y)  # unknown node names raise LabelError here
    if ind.shape[0] != n_samples:
        raise InputError(f"Y has {ind.shape[0]} entries but X has {n_samples} rows; give one label "
                         "(or label set) per sample")
    leaf_mask = H.leaf_mask
    leaf_part = ind[:, np.flatnonzero(leaf_mask)]
    counts = np.asarray(leaf_part.sum(axis=1)).ravel()
    if np.any(counts == 0):
        i = int(np.flatnonzero(counts == 0)[0])
        labels = [H.nodes[j] for j in ind[i].indices]
        if labels:
            raise LabelError(f"sample {i} is labelled {labels!r}, which are internal nodes; NHSVM labels "
                             "are leaves (or sets of leaves). Use pp = H.with_self_leaves() and train on "
                             "pp.hierarchy with pp.transform(Y)")
        raise LabelError(f"sample {i} has an empty label set; every sample needs at least one leaf")
    leaf_cols = np.flatnonzero(leaf_mask)
    rows, cols = leaf_part.nonzero()
    leaves_only = sp.csr_matrix((np.ones(len(rows)), (rows, leaf_cols[cols])), shape=ind.shape)
    T = np.asarray(((leaves_only @ H.ancestor_matrix.astype(float)) > 0).toarray())
    stray = np.asarray(ind.toarray() & ~T)
    if stray.any():
        i, j = np.argwhere(stray)[0]
        raise LabelError(f"sample {i} has the internal node {H.nodes[j]!r} as a label without a leaf "
                         "below it; NHSVM labels are leaves. Use pp = H.with_self_leaves() and train "
                         "on pp.hierarchy with pp.transform(Y)")
    leaf_pos = None
    if not multilabel:
        if np.any(counts > 1):
            i = int(np.flatnonzero(counts > 1)[0])
            raise LabelError(f"sample {i} has {counts[i]} leaf labels; single-label NHSVM needs exactly "
                             "one per sample (pass multilabel=True for label sets)")
        leaf_pos = cols[np.argsort(rows, kind="stable")]   # positions in H.leaves
    return T, leaf_pos, multilabel


@dataclass
class NHSVMData:
    """Validated NHSVM inputs (:func:`prepare`); what the references and fast solvers share.

    ``T`` ``(n, M)`` bool: each sample's closed label set ``y_i``; ``leaf_pos``: its leaf
    (position in ``H.leaves``, single-label); ``Lam`` ``(|L|, M)``: normalized class attributes
    (5) of the leaves; ``structural`` ``(|L|, |L|)``: the normalized margin (9) between leaves;
    ``loss``: the decomposable loss of section 7.1 (multi-label); ``margin``: the pair model of
    :mod:`._margin` (single-label (10)).
    """

    X: object
    H: Hierarchy
    alpha: np.ndarray
    T: np.ndarray
    multilabel: bool
    variant: str
    leaf_pos: np.ndarray | None = None
    Lam: np.ndarray | None = None
    structural: np.ndarray | None = None
    loss: DecomposableLoss | None = None
    margin: _margin.MarginData | None = None

    @property
    def sqrt_alpha(self) -> np.ndarray:
        return np.sqrt(self.alpha)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]


def _resolve_alpha(alpha, H: Hierarchy, T) -> np.ndarray:
    if alpha is None:
        alpha = "power" if H.is_tree else "dag"
    if isinstance(alpha, str):
        return path_weights(H, method=alpha, T=T)
    return check_path_weights(alpha, H, T=T)


def prepare(X, Y, H: Hierarchy, alpha=None, variant: str = "nhsvm", *, multilabel: bool | None = None,
            loss=None, T=None) -> NHSVMData:
    """Validate NHSVM inputs once (the references and the fast solvers call this).

    ``alpha``: an array over ``H.nodes`` (checked by :func:`check_path_weights` with ``T``), a
    method of :func:`path_weights`, or ``None`` (``"power"`` with rho 2 on trees, ``"dag"`` with
    T = 1.5 on DAGs).  ``Y``: one leaf per sample (single-label) or one set of leaves per sample
    (multi-label; ``multilabel=None`` infers it from ``Y``).  ``loss`` (multi-label only): a
    :class:`~hiercvx.inference.DecomposableLoss`, ``"leaf_hamming"`` (default, the paper's
    ``Delta_L``), ``"hamming"`` or per-node costs.
    """
    H = _check_hierarchy(H)
    X = check_features(X)
    if variant == "10":
        variant = "nhsvm"
    if variant not in VARIANTS:
        raise InputError(f"unknown NHSVM variant {variant!r}; choose 'nhsvm' (eq. (10)) or '13' (eq. (13))")
    Tm, leaf_pos, multilabel = _labels(Y, H, X.shape[0], multilabel)
    a = _resolve_alpha(alpha, H, _check_T(T) if T is not None else None)
    data = NHSVMData(X=X, H=H, alpha=a, T=Tm, multilabel=multilabel, variant=variant, leaf_pos=leaf_pos)
    if multilabel:
        if variant == "13":
            raise InputError("variant '13' is single-label only: its normalized margin does not "
                             "decompose over nodes, so the multi-label argmax has no exact "
                             "separation oracle (paper, end of section 5.1); use variant='nhsvm'")
        data.loss = _as_loss("leaf_hamming" if loss is None else loss, H)
        return data
    if loss is not None:
        raise InputError("single-label NHSVM uses the normalized structural error (9) as its margin; "
                         "loss= applies to multi-label problems only (drop it, or pass multilabel=True)")
    from ..losses import loss_matrix

    leaves = H.leaves
    data.Lam = class_attributes(H, leaves, scheme="normalized", alpha=a)
    data.structural = loss_matrix(H, "structural", classes=leaves, alpha=a)
    off = ~np.eye(len(leaves), dtype=bool)
    if np.any(data.structural[off] <= 0):
        i, j = np.argwhere(off & (data.structural <= 0))[0]
        raise InputError(f"leaves {leaves[i]!r} and {leaves[j]!r} have normalized distance (9) equal "
                         "to 0: alpha is 0 on every node that separates them, so no margin can tell "
                         "them apart; use weights with alpha > 0 on the leaves")
    if variant == "nhsvm":
        Yb = np.zeros((X.shape[0], len(leaves)), dtype=bool)
        Yb[np.arange(X.shape[0]), leaf_pos] = True
        data.margin = _margin.margin_data(Yb, data.structural, Lam=data.Lam, rescaling="margin")
    return data


# ====================================================================== NHSVM objective
def node_scores(W, X, alpha) -> np.ndarray:
    """Node scores ``s_n(x) = sqrt(alpha_n) W_n . x`` ``(n, M)``; a label set's potential is
    ``sum_{n in y} s_n`` (eq. (10)); predict with :func:`hiercvx.inference.best_leaf` or
    :func:`hiercvx.inference.best_label_set`."""
    XW = X @ np.asarray(W, dtype=float).T
    return _dense(XW) * np.sqrt(np.asarray(alpha, dtype=float))


def primal_objective(W, data: NHSVMData, lam: float, oracle: LabelSetOracle | None = None,
                     return_slacks: bool = False):
    """The NHSVM objective at node weights ``W`` ``(M, d)``, recomputed in numpy.

    ``lam ||W||_F^2 + sum_i xi_i`` with ``xi_i = max_y [s_i(y) - s_i(y_i) + Delta(y, y_i)]``:
    over the leaves with the margin (9) (variant ``"nhsvm"``, eq. (10)), over the leaves with
    the normalized difference of (13) (variant ``"13"``), or over the multi-label space with
    the decomposable loss, maximized exactly by ``oracle`` (a
    :class:`~hiercvx.inference.LabelSetOracle`; built when not given).
    """
    W = np.asarray(W, dtype=float)
    reg = lam * float(np.sum(W * W))
    if data.multilabel:
        oracle = oracle if oracle is not None else LabelSetOracle(data.H)
        xi = _multilabel_slacks(W, data, oracle)[0]
    elif data.variant == "nhsvm":
        xi = _margin.slacks(_margin.class_scores(W, data.X, data.Lam), data.margin)
    else:
        xi = _slacks_13(W, data)
    value = reg + float(xi.sum())
    return (value, xi) if return_slacks else value


def _slacks_13(W, data: NHSVMData) -> np.ndarray:
    S = _margin.class_scores(W, data.X, data.Lam)
    n = S.shape[0]
    rows = np.arange(n)
    own = S[rows, data.leaf_pos][:, None]
    dist = data.structural[data.leaf_pos]           # (n, q), 0 at the true leaf
    safe = np.where(dist > 0, dist, 1.0)
    viol = np.where(dist > 0, 1.0 - (own - S) / safe, 0.0)
    return np.maximum(viol.max(axis=1), 0.0)


def _multilabel_slacks(W, data: NHSVMData, oracle: LabelSetOracle):
    """``(xi, Z)``: exact slacks and the most violating label sets (loss-augmented inference)."""
    S = node_scores(W, data.X, data.alpha)
    Z, info = oracle.solve(S, loss=data.loss, true_indicator=data.T, return_info=True, verbose=False)
    own = np.where(data.T, S, 0.0).sum(axis=1)
    return np.maximum(info.objective - own, 0.0), Z


# ====================================================================== NHSVM primal (10) / (13)
def primal(X, Y, H: Hierarchy, lam: float = 1.0, alpha=None, variant: str = "nhsvm", *,
           multilabel: bool | None = None, loss=None, T=None, inference: str = "auto",
           max_size: int | None = None):
    """NHSVM (10) (equivalently (11) / (12)) or its variant (13), as an exact reference.

    Eq. (10): ``min_W lam sum_n ||W_n||^2 + sum_i max_y [s_i(y) - s_i(y_i) + Delta(y, y_i)]``
    with ``s_i(y) = sum_{n in y} sqrt(alpha_n) W_n . x_i`` (the normalized attributes (5)).

    * Single-label (``Y`` one leaf per sample): ``y`` ranges over the leaves and
      ``Delta = ``(9); it is the pairwise model of :mod:`._margin` with ``Lam`` = (5), margin
      rescaling and ``C = 1 / (2 lam)`` (objective scaled by ``2 lam``).  Declared as
      ``D vec(X W^T Lam^T) + R xi >= e`` (one row per sample and leaf).  ``variant="13"``
      divides each row by ``Delta`` and asks for margin 1 (eq. (13)).  Returns a
      :class:`~hiercvx.ReferenceProblem`; lower bound: the dual objective at the rows' duals,
      projected onto the dual feasible set.
    * Multi-label (``Y`` sets of leaves): ``y`` ranges over ``Y_m`` and ``Delta`` is the
      decomposable loss of section 7.1 (``loss=``, default ``Delta_L``); returns a
      :class:`CuttingPlaneProblem` whose ``solve()`` runs the certified cutting-plane loop.

    Other arguments: ``alpha`` and ``T`` as in :func:`prepare` (``alpha=None``: (6) with rho 2
    on trees, (8) with T 1.5 on DAGs); ``variant`` ``"nhsvm"`` (alias ``"10"``) or ``"13"``;
    ``multilabel`` forces the label space (``None`` infers it from ``Y``); ``inference`` the
    separation oracle's method (``"auto"``: tree DP / DAG integer program (19)); ``max_size``
    raises the size limit.  ``lam`` is a ``cvxpy.Parameter`` (``prob.set(lam=...)``).
    ``sol.weights`` is ``W`` ``(M, d)``; score new points with :func:`node_scores`.
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    lam = check_positive(lam, "lam")
    data = prepare(X, Y, H, alpha=alpha, variant=variant, multilabel=multilabel, loss=loss, T=T)
    if data.multilabel:
        return CuttingPlaneProblem(data, lam, inference=inference, max_size=max_size, started=t0)
    X, Lam, H = data.X, data.Lam, data.H
    n, d = X.shape
    M = len(H)
    q = Lam.shape[0]
    path_len = float((Lam != 0).sum(axis=1).mean())
    check_size(M * d + n, n * q, int(2 * q * _nnz(X) * path_len) + 2 * n * q, max_size,
               what=f"the NHSVM primal ({'(10)' if data.variant == 'nhsvm' else '(13)'})")

    rows = np.arange(n * q)
    row_sample = rows // q
    other = rows % q
    own_col = row_sample * q + data.leaf_pos[row_sample]
    dist = data.structural[data.leaf_pos[row_sample], other]       # 0 on the sample's own leaf
    if data.variant == "nhsvm":
        scale = np.ones(n * q)
        e = dist
    else:
        scale = np.where(dist > 0, 1.0 / np.where(dist > 0, dist, 1.0), 0.0)
        e = (dist > 0).astype(float)
    D = sp.csr_matrix((np.r_[scale, -scale], (np.r_[rows, rows], np.r_[own_col, rows])),
                      shape=(n * q, n * q))
    D.sum_duplicates()
    D.eliminate_zeros()
    R = sp.csr_matrix((np.ones(n * q), (rows, row_sample)), shape=(n * q, n))

    lam_p = cp.Parameter(nonneg=True, value=lam, name="lam")
    W = cp.Variable((M, d), name="W")
    xi = cp.Variable(n, name="xi")
    S = X @ W.T @ Lam.T
    margin = D @ cp.vec(S, order="C") + R @ xi >= e
    problem = cp.Problem(cp.Minimize(lam_p * cp.sum_squares(W) + cp.sum(xi)), [margin])

    def current_lam() -> float:
        value = float(lam_p.value)
        if value <= 0:
            raise InputError(f"lam must be positive, got {value!r}")
        return value

    def objective(values):
        return primal_objective(values["W"], data, current_lam())

    def lower_bound(values, duals):
        lam_v = current_lam()
        beta = np.asarray(duals["margin"], dtype=float).reshape(n, q)
        if data.variant == "nhsvm":
            C = 1.0 / (2.0 * lam_v)
            md = data.margin
            a = _margin.project_dual(C * beta[md.pair_i, md.pair_ybar], md, C)
            return 2.0 * lam_v * _margin.dual_objective_linear(a, X, md)
        dist_i = data.structural[data.leaf_pos]
        b = np.where(dist_i > 0, np.maximum(beta, 0.0), 0.0)
        total = b.sum(axis=1)
        b *= np.where(total > 1.0, 1.0 / np.where(total > 1.0, total, 1.0), 1.0)[:, None]
        G = -np.where(dist_i > 0, b / np.where(dist_i > 0, dist_i, 1.0), 0.0)
        G[np.arange(n), data.leaf_pos] = -G.sum(axis=1)
        V = _margin.weights_from_coefficients(G, X, Lam)
        return float(b.sum()) - float(np.sum(V * V)) / (4.0 * lam_v)

    def infeasibility(values):
        Sv = _margin.class_scores(values["W"], X, Lam).ravel()
        resid = e - D @ Sv - R @ values["xi"]
        return max(0.0, float(resid.max()))

    label = "(10)" if data.variant == "nhsvm" else "(13)"
    return ReferenceProblem(
        problem, variables={"W": W, "xi": xi}, objective=objective, lower_bound=lower_bound,
        weights=lambda values: np.asarray(values["W"], dtype=float), constraints={"margin": margin},
        parameters={"lam": lam_p}, infeasibility=infeasibility,
        name=f"NHSVM primal {label}, single-label", build_time=time.perf_counter() - t0,
        data={"nhsvm": data, "X": X, "H": H, "alpha": data.alpha, "Lam": Lam,
              "structural": data.structural, "margin_data": data.margin, "selection": (D, R, e)})


# ====================================================================== multi-label cutting planes
@dataclass
class CuttingPlaneSolution(ReferenceSolution):
    """A :class:`~hiercvx.ReferenceSolution` from the cutting-plane loop, plus its trace.

    ``history``: one dict per round (``objective`` = exact objective at the master's weights,
    ``lower_bound`` = master's dual bound, best-so-far ``gap``, ``n_cuts``); ``n_iter``
    rounds; ``n_cuts`` label sets in the final working set; ``n_rebuilds`` master rebuilds.
    """

    n_iter: int = 0
    n_cuts: int = 0
    n_rebuilds: int = 0
    history: list = field(default_factory=list)


def _row_kron(C: sp.csr_matrix, X, sample: np.ndarray) -> sp.csr_matrix:
    """Row-wise Kronecker product: row k is ``kron(C[k], X[sample[k]])`` (``(K, M*d)`` CSR), so
    that ``Phi @ vec(W, "C")`` is ``sum_n C[k, n] (W_n . x_{sample[k]})``."""
    C = sp.csr_matrix(C)
    C.eliminate_zeros()
    Xc = sp.csr_matrix(X)
    K, M = C.shape
    d = Xc.shape[1]
    ck = np.repeat(np.arange(K), np.diff(C.indptr))
    xrow = np.asarray(sample)[ck]
    counts = np.diff(Xc.indptr)[xrow]
    total = int(counts.sum())
    if total == 0:
        return sp.csr_matrix((K, M * d))
    starts = Xc.indptr[xrow]
    pos = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)
    rows = np.repeat(ck, counts)
    cols = np.repeat(C.indices.astype(np.int64), counts) * d + Xc.indices[pos]
    vals = np.repeat(C.data, counts) * Xc.data[pos]
    return sp.csr_matrix((vals, (rows, cols)), shape=(K, M * d))


class CuttingPlaneProblem(ReferenceProblem):
    """Multi-label NHSVM (10) over ``Y_m`` by an exact cutting-plane loop.

    Master QP (a relaxation: only the label sets of the working set)::

        min_{W, xi}  lam ||W||_F^2 + sum_i xi_i
        s.t.  sum_n c_{k,n} (W_n . x_{i_k}) + xi_{i_k} >= Delta(z_k, y_{i_k})   for each cut k = (i_k, z_k),
              xi >= 0,      c_{k,n} = sqrt(alpha_n) ([n in y_{i_k}] - [n in z_k]),

    declared as one sparse inequality ``Phi vec(W) + E xi >= Delta`` (``Phi`` the row-wise
    Kronecker product of the cut coefficients and the samples' features; a cut touches only the
    nodes of ``y_i xor z_k``).  Adding cuts **rebuilds** the CVXPY problem each round (the
    build time is measured and reported in ``build_time``): keeping the cut data in
    ``cvxpy.Parameter`` s would avoid recompiling, but CVXPY's DPP canonicalization of a
    ``(cuts x nodes)`` parameter multiplying an expression allocates a tensor quadratic in the
    number of parameter entries (it ran out of memory at 600 cuts on 40 nodes).  Clarabel, the
    default QP solver, has no warm start, so none is attempted.  ``lam`` stays a parameter.

    Each round: solve the master; its dual point (duals of the cut rows, clipped and scaled to
    ``sum_k beta_k <= 1`` per sample) is feasible for the dual of the *full* problem (the missing
    cuts get multiplier 0), so ``sum_k beta_k Delta_k - ||Phi^T beta||^2 / (4 lam)`` is a lower
    bound on its optimum; the exact objective at the master's ``W`` (loss-augmented inference by
    :class:`~hiercvx.inference.LabelSetOracle`) is an upper bound.  Stop when the best bounds'
    relative gap is ``<= gap_tol``; otherwise add, for every sample whose exact slack exceeds
    the master's, its most violating label set.
    """

    def __init__(self, data: NHSVMData, lam: float, *, inference: str = "auto",
                 max_size: int | None = None, started: float | None = None):
        import cvxpy as cp

        t0 = time.perf_counter() if started is None else started
        self.nhsvm_data = data
        self.oracle = LabelSetOracle(data.H, inference)
        self.max_size = max_size
        n, M = data.T.shape
        self._X = sp.csr_matrix(data.X)
        self._lam = cp.Parameter(nonneg=True, value=lam, name="lam")
        self._cut_sample = np.zeros(0, dtype=np.int64)
        self._cut_sets = np.zeros((0, M), dtype=bool)
        self._keys: set = set()
        self.n_builds = 0
        self._build()
        super().__init__(self.problem, variables=self.variables, objective=self._objective,
                         lower_bound=self._bound_from_duals, weights=self._weights,
                         constraints=self.constraints, parameters={"lam": self._lam},
                         name="NHSVM primal (10), multi-label, cutting planes",
                         build_time=time.perf_counter() - t0,
                         data={"nhsvm": data, "X": data.X, "H": data.H, "alpha": data.alpha})

    # ------------------------------------------------------------------ the master problem
    def _build(self):
        import cvxpy as cp

        data = self.nhsvm_data
        n, d = data.X.shape
        M = len(data.H)
        K = len(self._cut_sample)
        true_sets = data.T[self._cut_sample]
        coef = sp.csr_matrix((true_sets.astype(float) - self._cut_sets) * data.sqrt_alpha)
        row_nnz = np.diff(self._X.indptr)[self._cut_sample]
        nnz = int(np.diff(coef.indptr) @ row_nnz) if K else 0
        check_size(M * d + n, K + n, nnz + K + M * d + n, self.max_size,
                   what=f"the cutting-plane master ({K} cuts)")
        self._phi = _row_kron(coef, self._X, self._cut_sample)
        self._offset = data.loss(self._cut_sets, true_sets) if K else np.zeros(0)
        w = cp.Variable(M * d, name="w")
        xi = cp.Variable(n, name="xi")
        constraints = {"xi_nonneg": xi >= 0}
        if K:
            E = sp.csr_matrix((np.ones(K), (np.arange(K), self._cut_sample)), shape=(K, n))
            constraints = {"cuts": self._phi @ w + E @ xi >= self._offset, **constraints}
        self.problem = cp.Problem(cp.Minimize(self._lam * cp.sum_squares(w) + cp.sum(xi)),
                                  list(constraints.values()))
        self.variables = {"w": w, "xi": xi}
        self.constraints = constraints
        self.n_builds += 1

    def _add_cuts(self, Z: np.ndarray, violation: np.ndarray, tol: float) -> int:
        """Add ``Z[i]`` for samples with ``violation > tol`` not already in their working set."""
        packed = np.packbits(Z, axis=1)
        new = [i for i in np.flatnonzero(violation > tol) if (int(i), packed[i].tobytes()) not in self._keys]
        if not new:
            return 0
        new = np.asarray(new, dtype=np.int64)
        self._keys.update((int(i), packed[i].tobytes()) for i in new)
        self._cut_sample = np.concatenate([self._cut_sample, new])
        self._cut_sets = np.concatenate([self._cut_sets, Z[new]])
        self._build()
        return len(new)

    def working_set(self) -> list[list[frozenset]]:
        """The label sets (node names) in each sample's working set."""
        H = self.nhsvm_data.H
        sets = H.label_sets(self._cut_sets)
        out = [[] for _ in range(self.nhsvm_data.n_samples)]
        for i, s in zip(self._cut_sample, sets):
            out[int(i)].append(s)
        return out

    # ------------------------------------------------------------------ certificates
    def _lam_value(self) -> float:
        value = float(self._lam.value)
        if value <= 0:
            raise InputError(f"lam must be positive, got {value!r}")
        return value

    def _weights(self, values) -> np.ndarray:
        return np.asarray(values["w"], dtype=float).reshape(len(self.nhsvm_data.H), -1)

    def _objective(self, values) -> float:
        return primal_objective(self._weights(values), self.nhsvm_data, self._lam_value(), self.oracle)

    def _bound_from_duals(self, values, duals) -> float:
        """Dual objective of the full problem at the master's projected cut duals."""
        if len(self._cut_sample) == 0:
            return 0.0   # the objective is non-negative
        lam = self._lam_value()
        beta = np.maximum(np.asarray(duals["cuts"], dtype=float), 0.0)
        total = np.bincount(self._cut_sample, weights=beta, minlength=self.nhsvm_data.n_samples)
        shrink = np.where(total > 1.0, 1.0 / np.where(total > 1.0, total, 1.0), 1.0)
        beta = beta * shrink[self._cut_sample]
        V = self._phi.T @ beta
        return float(beta @ self._offset) - float(V @ V) / (4.0 * lam)

    # ------------------------------------------------------------------ the loop
    def solve(self, solver: str | None = None, *, gap_tol: float = 1e-6, max_iter: int = 200,
              verbose: bool = True, solver_verbose: bool = False, cut_tol: float = 1e-9,
              **solver_options) -> CuttingPlaneSolution:
        """Run the cutting-plane loop to a relative gap ``<= gap_tol``; see the class docstring.

        ``verbose``: a tqdm progress bar over rounds; ``solver_verbose``: the QP solver's log.
        The working set is kept between calls (``prob.set(lam=...).solve()`` starts from it; the
        cuts do not depend on ``lam``).  Raises :class:`~hiercvx.SolverError` when the master is
        not solved to optimality, when no violated label set is left but the gap is still open
        (an inaccurate master solve), or after ``max_iter`` rounds.
        """
        import cvxpy as cp
        from tqdm.auto import tqdm

        data = self.nhsvm_data
        name = choose_solver(self.problem, solver)
        solve_time = 0.0
        build_time = self.declare_time
        builds_before = self.n_builds
        best = {"ub": np.inf, "lb": -np.inf, "W": None, "xi": None, "beta": None}
        history = []
        gap = np.inf
        bar = tqdm(total=max_iter, desc="NHSVM cutting planes", unit="round", disable=not verbose)
        try:
            for it in range(1, max_iter + 1):
                t_round = time.perf_counter()
                try:
                    self.problem.solve(solver=name, verbose=solver_verbose, **solver_options)
                except cp.error.SolverError as exc:
                    raise SolverError(f"{self.name}: the master QP failed: {exc}", status="error",
                                      solver=name) from exc
                stats = self.problem.solver_stats
                wall = time.perf_counter() - t_round
                inner = stats.solve_time if stats is not None and stats.solve_time is not None else wall
                solve_time += inner
                build_time += max(wall - inner, 0.0)
                if self.problem.status != cp.OPTIMAL:
                    raise SolverError(f"{self.name}: the master QP was not solved to optimality; try "
                                      "another solver", status=self.problem.status, solver=name)
                W = self._weights({"w": self.variables["w"].value})
                xi_master = np.asarray(self.variables["xi"].value, dtype=float)
                duals = {k: c.dual_value for k, c in self.constraints.items() if k == "cuts"}
                if not (np.all(np.isfinite(W)) and np.all(np.isfinite(xi_master))
                        and all(np.all(np.isfinite(v)) for v in duals.values())):
                    raise SolverError(f"{self.name}: the master QP returned non-finite values",
                                      status=self.problem.status, solver=name)
                lb = self._bound_from_duals(None, duals)
                ub, xi_true = primal_objective(W, data, self._lam_value(), self.oracle,
                                               return_slacks=True)
                if lb > best["lb"]:
                    best["lb"], best["beta"] = lb, duals.get("cuts")
                if ub < best["ub"]:
                    best.update(ub=ub, W=W, xi=xi_true)
                gap = (best["ub"] - best["lb"]) / max(1.0, abs(best["ub"]))
                history.append({"objective": ub, "lower_bound": lb, "gap": gap,
                                "n_cuts": len(self._cut_sample)})
                bar.update(1)
                bar.set_postfix(gap=f"{gap:.2e}", cuts=len(self._cut_sample))
                if gap < -max(gap_tol, 1e-7):
                    raise SolverError(f"{self.name}: the lower bound exceeds the exact objective, "
                                      "which weak duality forbids", status=self.problem.status,
                                      solver=name, gap=gap)
                if gap <= gap_tol:
                    break
                _, Z = _multilabel_slacks(W, data, self.oracle)
                t_build = time.perf_counter()
                added = self._add_cuts(Z, xi_true - xi_master, cut_tol)
                build_time += time.perf_counter() - t_build
                if added == 0:
                    raise SolverError(f"{self.name}: no violated label set is left but the gap is "
                                      f"still over gap_tol={gap_tol:g}; the master QP is not solved "
                                      "accurately enough (tighten the solver's tolerances or try "
                                      "another solver)", status="stalled", solver=name, gap=gap)
            else:
                raise SolverError(f"{self.name}: not converged after max_iter={max_iter} rounds; "
                                  "raise max_iter", status="max_iter", solver=name, gap=gap)
        finally:
            bar.close()
        logger.info("cutting planes: %d rounds, %d cuts, gap %.2e", it, len(self._cut_sample), gap)
        return CuttingPlaneSolution(
            objective=float(best["ub"]), lower_bound=float(best["lb"]), gap=float(gap),
            status="optimal", solver=name, build_time=build_time, solve_time=solve_time,
            weights=best["W"], values={"W": best["W"], "xi": best["xi"]},
            duals={"cuts": best["beta"]}, solver_objective=float(self.problem.value),
            problem_class="QP", name=self.name, n_iter=it, n_cuts=len(self._cut_sample),
            n_rebuilds=self.n_builds - builds_before, history=history)


# ====================================================================== shared-norm SVM (14)
def _leaf_labels(y, H: Hierarchy, n: int) -> np.ndarray:
    _, leaf_pos, _ = _labels(y, H, n, multilabel=False)
    return leaf_pos


def _class_loss(H: Hierarchy, loss) -> np.ndarray:
    q = len(H.leaves)
    if isinstance(loss, str):
        from ..losses import loss_matrix

        L = loss_matrix(H, loss, classes=H.leaves)
    else:
        try:
            L = np.asarray(loss, dtype=float)
        except (TypeError, ValueError):
            raise InputError("loss must be a loss name of hiercvx.losses.LOSSES or a (q, q) array "
                             "over H.leaves") from None
    if L.shape != (q, q):
        raise InputError(f"the loss matrix must be ({q}, {q}) over H.leaves, got shape {L.shape}")
    if not np.all(np.isfinite(L)) or np.any(L < 0):
        raise InputError("the loss matrix must be finite and non-negative")
    return L


def shared_primal(X, y, H: Hierarchy, lam: float = 1.0, loss="zero_one",
                  max_size: int | None = None) -> ReferenceProblem:
    """The shared-norm SVM (14), jointly convex in the node weights ``U`` and ``alpha``::

        min_{U, alpha}  lam sum_n ||U_n||^2 / alpha_n
                        + sum_i max_l [ sum_{n in anc(l)} U_n x_i - sum_{n in anc(l_i)} U_n x_i + Delta(l, l_i) ]
        s.t.  sum_{n in anc(l)} alpha_n <= 1 for every leaf l,   alpha >= 0.

    Single-label (the paper's section 6 is multi-class).  The regularizer is declared as one
    ``quad_over_lin(U_n, alpha_n)`` per node (Lemma 1's convexity argument term by term).
    ``loss``: a name of :data:`hiercvx.losses.LOSSES` or a ``(q, q)`` array over ``H.leaves``.

    Certificate: objective recomputed at ``(U, alpha_hat)`` with ``alpha_hat`` the returned
    ``alpha`` clipped and scaled to feasibility; lower bound ``sum_p beta_p Delta_p - sum_l mu_l``
    from the dual ``max sum beta Delta - 1^T mu`` s.t. ``(A^T mu)_n >= ||(Phi^T beta)_n||^2 /
    (4 lam)`` (derived in the sheet), at the projected pair duals ``beta`` and the path duals
    ``mu`` repaired to cover.  ``sol.weights`` is ``U`` ``(M, d)``; ``sol.values["alpha"]``.
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    H = _check_hierarchy(H)
    X = check_features(X)
    lam = check_positive(lam, "lam")
    n, d = X.shape
    leaf_pos = _leaf_labels(y, H, n)
    L = _class_loss(H, loss)
    M = len(H)
    q = len(H.leaves)
    A = _leaf_paths(H)
    Lam = A.toarray()                                   # indicator attributes (1)
    check_size(M * d + M + n, n * q + q + M, int(2 * q * _nnz(X) * A.sum() / q) + 2 * n * q + M * d,
               max_size, what="the shared-norm SVM (14)")
    Yb = np.zeros((n, q), dtype=bool)
    Yb[np.arange(n), leaf_pos] = True
    md = _margin.margin_data(Yb, L, Lam=Lam, rescaling="margin")

    rows = np.arange(n * q)
    row_sample = rows // q
    own_col = row_sample * q + leaf_pos[row_sample]
    e = L[leaf_pos[row_sample], rows % q]
    D = sp.csr_matrix((np.r_[np.ones(n * q), -np.ones(n * q)], (np.r_[rows, rows], np.r_[own_col, rows])),
                      shape=(n * q, n * q))
    D.sum_duplicates()
    D.eliminate_zeros()
    R = sp.csr_matrix((np.ones(n * q), (rows, row_sample)), shape=(n * q, n))

    lam_p = cp.Parameter(nonneg=True, value=lam, name="lam")
    U = cp.Variable((M, d), name="U")
    alpha = cp.Variable(M, name="alpha")
    xi = cp.Variable(n, name="xi")
    regularizer = cp.sum(cp.hstack([cp.quad_over_lin(U[k, :], alpha[k]) for k in range(M)]))
    margin = D @ cp.vec(X @ U.T @ Lam.T, order="C") + R @ xi >= e
    paths = A @ alpha <= 1
    problem = cp.Problem(cp.Minimize(lam_p * regularizer + cp.sum(xi)), [margin, paths, alpha >= 0])

    def lam_value() -> float:
        value = float(lam_p.value)
        if value <= 0:
            raise InputError(f"lam must be positive, got {value!r}")
        return value

    def objective(values):
        Uv = np.asarray(values["U"], dtype=float)
        a = _scaled_alpha(values["alpha"], A)
        norms = np.einsum("ij,ij->i", Uv, Uv)
        reg = _ratio_sum(norms, a)
        if H.is_tree:
            # the solver's alpha can be ~0 on a node whose row is tiny but not 0 (ratio inf);
            # the alpha that is optimal for U is feasible too and gives a valid, finite value
            from ..solvers.shared_norm import optimal_alpha

            reg = min(reg, _ratio_sum(norms, _scaled_alpha(optimal_alpha(Uv, H), A)))
        hinge = _margin.slacks(_margin.class_scores(Uv, X, Lam), md).sum()
        return lam_value() * reg + float(hinge)

    def lower_bound(values, duals):
        lam_v = lam_value()
        beta_full = np.asarray(duals["margin"], dtype=float).reshape(n, q)
        beta = _margin.project_dual(beta_full[md.pair_i, md.pair_ybar], md, 1.0)
        V = _margin.weights_from_coefficients(_margin.coefficients(beta, md), X, Lam)
        need = np.einsum("ij,ij->i", V, V) / (4.0 * lam_v)
        mu = _cover(duals["paths"], need, H, A)
        return float(md.pair_loss @ beta) - float(mu.sum())

    def infeasibility(values):
        Sv = _margin.class_scores(values["U"], X, Lam).ravel()
        a = np.asarray(values["alpha"], dtype=float)
        return max(0.0, float((e - D @ Sv - R @ values["xi"]).max()), float((A @ a).max()) - 1.0,
                   float(-a.min()))

    return ReferenceProblem(
        problem, variables={"U": U, "alpha": alpha, "xi": xi}, objective=objective,
        lower_bound=lower_bound, weights=lambda values: np.asarray(values["U"], dtype=float),
        constraints={"margin": margin, "paths": paths}, parameters={"lam": lam_p},
        infeasibility=infeasibility, name="shared-norm SVM (14)", build_time=time.perf_counter() - t0,
        data={"X": X, "H": H, "leaf_pos": leaf_pos, "loss": L, "Lam": Lam, "margin_data": md,
              "leaf_paths": A})


# ====================================================================== alpha step (20)
def _node_matrix(U, H: Hierarchy, name: str = "U") -> np.ndarray:
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric (n_nodes, n_features) array") from None
    if U.ndim != 2 or U.shape[0] != len(H):
        raise InputError(f"{name} must have one row per node of H.nodes (root included): shape "
                         f"({len(H)}, d), got {U.shape}")
    if not np.all(np.isfinite(U)):
        raise InputError(f"{name} has non-finite entries (NaN or inf)")
    return U


def alpha_step(U, H: Hierarchy, max_size: int | None = None) -> ReferenceProblem:
    """Problem (20): ``min_alpha sum_n ||U_n||^2 / alpha_n`` s.t. ``sum_{n in anc(l)} alpha_n <= 1``
    for every leaf, ``alpha >= 0``; ``U`` ``(M, d)`` node weights (rows in ``H.nodes`` order).

    Trees and DAGs.  The optimum has ``alpha_n = sqrt(b_n / (A^T mu)_n)`` (``b_n = ||U_n||^2``),
    so it is declared in the well-scaled variable ``gamma = alpha / sqrt(b)`` over the nodes
    with ``b_n > 0``: ``min sum_n sqrt(b_n) / gamma_n`` s.t. ``A diag(sqrt(b)) gamma <= 1``
    (row norms of a solution span many orders of magnitude; in ``alpha`` itself Clarabel loses
    accuracy).  Nodes with ``U_n = 0`` get ``alpha_n = 0`` (any weight there only uses budget).
    Lower bound: ``2 sum_n sqrt(b_n (A^T mu)_n) - sum_l mu_l`` at the clipped path duals ``mu``
    (the Lagrangian minimized over ``alpha``).  ``sol.weights`` is ``alpha`` clipped and scaled
    to feasibility.  On trees the closed form is :func:`hiercvx.solvers.shared_norm.optimal_alpha`.
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    H = _check_hierarchy(H)
    U = _node_matrix(U, H)
    M = len(H)
    A = _leaf_paths(H)
    check_size(M, A.shape[0] + M, A.nnz + 3 * M, max_size, what="the alpha step (20)")
    b = np.einsum("ij,ij->i", U, U)
    pos = np.flatnonzero(b > 0)
    root_b = np.sqrt(b[pos])
    gamma = cp.Variable(len(pos), name="gamma")
    if pos.size:
        scaled = sp.csr_matrix(A[:, pos].multiply(root_b[None, :]))
        paths = scaled @ gamma <= 1
        problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(root_b, cp.inv_pos(gamma)))),
                             [paths, gamma >= 0])
    else:  # U = 0: every feasible alpha is optimal, value 0
        paths = cp.Constant(np.zeros(A.shape[0])) <= 1
        problem = cp.Problem(cp.Minimize(0), [gamma >= 0] if gamma.size else [])

    def alpha_of(values) -> np.ndarray:
        a = np.zeros(M)
        if pos.size:
            a[pos] = root_b * np.maximum(np.asarray(values["gamma"], dtype=float), 0.0)
        return _scaled_alpha(a, A)

    def objective(values):
        return _ratio_sum(b, alpha_of(values))

    def lower_bound(values, duals):
        if not pos.size:
            return 0.0
        mu = np.maximum(np.asarray(duals["paths"], dtype=float), 0.0)
        c = A.T @ mu
        return 2.0 * float(np.sum(np.sqrt(b * c))) - float(mu.sum())

    return ReferenceProblem(
        problem, variables={"gamma": gamma} if pos.size else {}, objective=objective,
        lower_bound=lower_bound, weights=alpha_of,
        constraints={"paths": paths} if pos.size else {},
        name="shared-norm alpha step (20)", build_time=time.perf_counter() - t0,
        data={"H": H, "U": U, "squared_norms": b, "leaf_paths": A})


# ====================================================================== shared norms (16), (17)
def _check_matrix(U, name: str = "U") -> np.ndarray:
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric 2-D array") from None
    if U.ndim != 2 or 0 in U.shape:
        raise InputError(f"{name} must be a non-empty 2-D array, got shape {U.shape}")
    if not np.all(np.isfinite(U)):
        raise InputError(f"{name} has non-finite entries (NaN or inf)")
    return U


def _inverse_quadratic(U: np.ndarray, K: np.ndarray, rtol: float = 1e-12) -> float:
    """``tr(U^T K^+ U)`` for PSD ``K``, ``inf`` when ``U`` leaves the range of ``K``."""
    K = 0.5 * (K + K.T)
    s, Q = np.linalg.eigh(K)
    proj = Q.T @ U
    energy = np.einsum("ij,ij->i", proj, proj)
    small = s <= rtol * max(float(s.max()), 1e-300)
    if np.any(energy[small] > 1e-12 * max(1.0, float(energy.sum()))):
        return float("inf")
    return float(np.sum(energy[~small] / s[~small]))


def _psd_part(K: np.ndarray) -> np.ndarray:
    K = 0.5 * (K + K.T)
    s, Q = np.linalg.eigh(K)
    return (Q * np.maximum(s, 0.0)) @ Q.T


_RIDGES = (0.0, 1e-12, 1e-10, 1e-8, 1e-6)


def shared_norm_problem(U, H: Hierarchy | None = None, max_size: int | None = None) -> ReferenceProblem:
    """The squared shared norm as a convex program; ``sol.objective`` is ``||U||^2``.

    With ``H``: the structured shared norm (16), ``U`` ``(|L|, d)`` class weights, rows in
    ``H.leaves`` order.  With ``a_n^2 = alpha_n`` and node factors ``W_n = a_n V_n`` (16) is::

        ||U||_{s,G}^2 = min_{W, alpha} sum_n ||W_n||^2 / alpha_n   s.t.  A W = U,  A alpha <= 1,  alpha >= 0,

    declared with one ``quad_over_lin`` per node.  Objective recomputed as
    ``tr(U^T (A diag(alpha_hat) A^T)^{-1} U)`` (the best ``W`` for the returned, feasibility-
    scaled ``alpha_hat``); lower bound ``<Gamma, U> - 1^T mu`` with ``(A^T mu)_n >=
    ||(A^T Gamma)_n||^2 / 4`` (``mu`` repaired to cover).  ``sol.weights`` is ``alpha_hat``.

    Without ``H``: the shared norm (17) as the SDP (``r x c`` matrix ``U``)::

        ||U||_s^2 = min tr(Z_22)  s.t.  [[Z_11, U], [U^T, Z_22]] >= 0,  diag(Z_11) <= 1,

    (a factorization ``U = A V`` gives ``Z = [A; V^T][A; V^T]^T`` and back).  Objective
    recomputed as ``tr(U^T K^{-1} U)`` with ``K`` the returned ``Z_11`` made PSD with unit-bounded
    diagonal (plus a tiny ridge when singular); lower bound ``-<Gamma, U> - 1^T mu`` with ``mu``
    raised until ``diag(mu) - Gamma Gamma^T / 4 >= 0``.  ``sol.weights`` is that ``K``.
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    U = _check_matrix(U)
    r, c = U.shape
    if H is not None:
        H = _check_hierarchy(H)
        A = _leaf_paths(H)
        q, M = A.shape
        if r != q:
            raise InputError(f"U must have one row per leaf of H (in H.leaves order): {q} rows, got {r}")
        check_size(M * c + M, q * c + q + M, A.nnz * c + M * c + M, max_size,
                   what="the structured shared norm (16)")
        W = cp.Variable((M, c), name="W")
        alpha = cp.Variable(M, name="alpha")
        total = cp.sum(cp.hstack([cp.quad_over_lin(W[k, :], alpha[k]) for k in range(M)]))
        classes = A @ W == U
        paths = A @ alpha <= 1
        problem = cp.Problem(cp.Minimize(total), [classes, paths, alpha >= 0])

        def objective(values):
            a = _scaled_alpha(values["alpha"], A)
            return _inverse_quadratic(U, (A.multiply(a[None, :]) @ A.T).toarray())

        def lower_bound(values, duals):
            gamma = -np.asarray(duals["classes"], dtype=float)      # CVXPY adds +<dual, AW - U>
            V = A.T @ gamma
            need = np.einsum("ij,ij->i", V, V) / 4.0
            mu = _cover(duals["paths"], need, H, A)
            return float(np.sum(gamma * U)) - float(mu.sum())

        return ReferenceProblem(
            problem, variables={"W": W, "alpha": alpha}, objective=objective, lower_bound=lower_bound,
            weights=lambda values: _scaled_alpha(values["alpha"], A),
            constraints={"classes": classes, "paths": paths}, name="structured shared norm (16), squared",
            build_time=time.perf_counter() - t0, data={"U": U, "H": H, "leaf_paths": A})

    check_size((r + c) ** 2, r * c + r, (r + c) ** 2 + r * c, max_size, what="the shared norm (17)")
    Z = cp.Variable((r + c, r + c), PSD=True, name="Z")
    coupling = Z[:r, r:] == U
    rows = cp.diag(Z[:r, :r]) <= 1
    problem = cp.Problem(cp.Minimize(cp.trace(Z[r:, r:])), [coupling, rows])

    def kernel(values) -> np.ndarray:
        K = _psd_part(np.asarray(values["Z"], dtype=float)[:r, :r])
        top = float(np.diag(K).max())
        return K / top if top > 1.0 else K

    def objective(values):
        K = kernel(values)
        return min(_inverse_quadratic(U, (1.0 - eps) * K + eps * np.eye(r)) for eps in _RIDGES)

    def lower_bound(values, duals):
        gamma = np.asarray(duals["coupling"], dtype=float)
        mu = np.maximum(np.asarray(duals["rows"], dtype=float), 0.0)
        slack = np.linalg.eigvalsh(np.diag(mu) - gamma @ gamma.T / 4.0).min()
        mu = mu + max(0.0, -float(slack))
        return -float(np.sum(gamma * U)) - float(mu.sum())

    return ReferenceProblem(
        problem, variables={"Z": Z}, objective=objective, lower_bound=lower_bound, weights=kernel,
        constraints={"coupling": coupling, "rows": rows}, name="shared norm (17), squared",
        build_time=time.perf_counter() - t0, data={"U": U})


def shared_norm(U, H: Hierarchy | None = None, *, solver: str | None = None,
                return_solution: bool = False, max_size: int | None = None):
    """``||U||_{s,G}`` (16) with a hierarchy (``U`` one row per leaf, in ``H.leaves`` order) or
    ``||U||_s`` (17) without; the square root of :func:`shared_norm_problem`'s certified optimum."""
    sol = shared_norm_problem(U, H, max_size=max_size).solve(solver=solver)
    value = float(np.sqrt(max(sol.objective, 0.0)))
    return (value, sol) if return_solution else value


def trace_norm(U) -> float:
    """``||U||_*``, the sum of singular values (Theorem 2)."""
    return float(np.linalg.svd(_check_matrix(U), compute_uv=False).sum())


def max_norm(U, *, solver: str | None = None, return_solution: bool = False):
    """``||U||_max = min_{A B^T = U} ||A||_{2->inf} ||B||_{2->inf}`` (Srebro & Shraibman), the SDP
    ``min t`` s.t. ``[[Z_11, U], [U^T, Z_22]] >= 0``, ``diag(Z) <= t``, certified.

    Objective recomputed from an exactly feasible ``Z`` (``Z_11`` made PSD plus a ridge,
    ``Z_22 = U^T Z_11^{-1} U``, and the mirror image); lower bound ``-<Gamma, U> / 1^T mu`` at
    the duals with ``mu`` raised until the dual matrix is PSD.
    """
    import cvxpy as cp

    U = _check_matrix(U)
    r, c = U.shape
    Z = cp.Variable((r + c, r + c), PSD=True, name="Z")
    t = cp.Variable(name="t")
    coupling = Z[:r, r:] == U
    diagonal = cp.diag(Z) <= t
    problem = cp.Problem(cp.Minimize(t), [coupling, diagonal])

    def balanced(K: np.ndarray, V: np.ndarray) -> float:
        best = float("inf")
        for eps in _RIDGES[1:]:
            Kr = K + eps * np.eye(K.shape[0])
            other = V.T @ np.linalg.solve(Kr, V)
            best = min(best, max(float(np.diag(Kr).max()), float(np.diag(other).max())))
        return best

    def objective(values):
        Zv = _psd_part(np.asarray(values["Z"], dtype=float))
        return min(balanced(Zv[:r, :r], U), balanced(Zv[r:, r:], U.T))

    def lower_bound(values, duals):
        gamma = np.asarray(duals["coupling"], dtype=float)
        mu = np.maximum(np.asarray(duals["diagonal"], dtype=float), 0.0)
        C = np.diag(mu)
        C[:r, r:] = gamma / 2.0
        C[r:, :r] = gamma.T / 2.0
        mu = mu + max(0.0, -float(np.linalg.eigvalsh(C).min()))
        return -float(np.sum(gamma * U)) / float(mu.sum())

    prob = ReferenceProblem(problem, variables={"Z": Z, "t": t}, objective=objective,
                            lower_bound=lower_bound, weights=lambda values: values["Z"],
                            constraints={"coupling": coupling, "diagonal": diagonal},
                            name="max norm", data={"U": U})
    sol = prob.solve(solver=solver)
    return (sol.objective, sol) if return_solution else sol.objective
