"""The exact reference of multi-label NHSVM (10): a certified cutting-plane loop.

The label space ``Y_m`` of section 3 is exponential, so the reference solves a master QP over a
working set of label sets (declared in CVXPY) and adds, every round, each sample's most
violating label set found by exact loss-augmented inference
(:class:`~hiercvx.inference.LabelSetOracle`: tree DP, or the DAG program (19)).  It stops on a
certified relative gap: an exact primal value at the master's weights against the dual bound
of the full problem at the master's projected duals (:meth:`NHSVMModel.lower_bound`).

:func:`hiercvx.formulations.nhsvm.primal` returns a :class:`CuttingPlaneProblem` for
multi-label ``Y``; :func:`cutting_plane_from_model` builds one from a prepared model.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from ..exceptions import InputError, SolverError
from ..inference import LabelSetOracle
from ..models.nhsvm import NHSVMModel, multilabel_slacks, primal_objective
from ..describe import Symbol
from ..reference import Formulation, ReferenceProblem, check_size, choose_solver
from ..result import Solution, relative_gap

logger = logging.getLogger(__name__)

__all__ = ["Options", "CuttingPlaneProblem", "cutting_plane_formulation", "cutting_plane_from_model",
           "row_kron"]


@dataclass(frozen=True)
class Options:
    """Settings of :meth:`CuttingPlaneProblem.solve` (its keywords ``gap_tol``, ``max_iter``,
    ``cut_tol`` override the fields of the same name).

    Attributes
    ----------
    gap_tol : certified relative gap to stop at; 1e-6, the default of every CVXPY reference
        (:meth:`hiercvx.ReferenceProblem.solve`).
    max_iter : rounds (one master QP each) before a :class:`~hiercvx.SolverError`; the loop
        adds every violated sample's label set per round, so few rounds suffice.
    cut_tol : a label set enters a working set when its exact slack exceeds the master's by
        more than this: below, a conic solver's residuals, not a violation.
    duality_slack : a lower bound above the objective by more than ``max(gap_tol, this)``
        (relative) breaks weak duality and raises; 1e-7 is above the master's solver accuracy.
    """

    gap_tol: float = 1e-6
    max_iter: int = 200
    cut_tol: float = 1e-9
    duality_slack: float = 1e-7


def row_kron(C: sp.csr_matrix, X, sample: np.ndarray) -> sp.csr_matrix:
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


def cutting_plane_formulation(fit_intercept: bool = False) -> Formulation:
    """The master QP of multi-label (10) (:class:`CuttingPlaneProblem`), over its working set;
    ``fit_intercept``: the same master on ``x~ = [x, s]`` (LIBLINEAR's bias)."""
    form = Formulation(
        objective=("lam ||W||_F^2 + sum_i xi_i", "\\lambda \\|W\\|_F^2 + \\sum_i \\xi_i", "(10)"),
        constraints={"cuts": (("sum_n c_kn <w_n, x_{i_k}> + xi_{i_k} >= Delta(z_k, y_{i_k}) for each cut "
                               "k = (i_k, z_k) of the working set"),
                              ("\\textstyle\\sum_n c_{kn} \\langle w_n, x_{i_k} \\rangle + \\xi_{i_k} \\ge "
                               "\\Delta(z_k, y_{i_k}) \\quad \\forall k"), "(10) over Y_m"),
                     "xi_nonneg": ("xi >= 0", "\\xi \\ge 0", "(10)")},
        variables={"w": Symbol("vec(W), the node weights w_n (M x d) row by row",
                               "$\\mathrm{vec}(W)$, the node weights $w_n$ ($M \\times d$) row by row",
                               shape=("M*d",)),
                   "xi": Symbol("one slack per example", "one slack per example", "\\xi", ("N",))},
        dims={"N": ("examples", "examples")},  # the sheet's N; n is a node
        notation={"n": Symbol("a node of the hierarchy (sum_n: over all M nodes)",
                              "a node of the hierarchy ($\\sum_n$: over all $M$ nodes)"),
                  "c_kn": Symbol("sqrt(alpha_n) ([n in y_{i_k}] - [n in z_k])",
                                 "$\\sqrt{\\alpha_n}\\, ([n \\in y_{i_k}] - [n \\in z_k])$, with $\\alpha_n$ "
                                 "the path weights", "c_{kn}"),
                  "y_i": Symbol("the label set of example i", "the label set of example $i$"),
                  "Delta": Symbol("the decomposable loss of section 7.1 (leaf Hamming by default)",
                                  "the decomposable loss of section 7.1 (leaf Hamming by default)",
                                  "\\Delta"),
                  "Y_m": Symbol("the multi-label space; each round adds the most violating label sets "
                                "(exact loss-augmented inference: tree DP, or (19) on DAGs)",
                                "the multi-label space; each round adds the most violating label sets "
                                "(exact loss-augmented inference: the tree DP, or (19) on DAGs)")})
    if not fit_intercept:
        return form
    cuts = form.constraints["cuts"]
    return Formulation(
        objective=("lam ||W~||_F^2 + sum_i xi_i", "\\lambda \\|\\tilde W\\|_F^2 + \\sum_i \\xi_i",
                   form.objective.eq),
        constraints={"cuts": (cuts.text.replace("<w_n, x_{i_k}>", "<w~_n, x~_{i_k}>"),
                              cuts.latex.replace("\\langle w_n, x_{i_k} \\rangle",
                                                 "\\langle \\tilde w_n, \\tilde x_{i_k} \\rangle"),
                              cuts.eq),
                     "xi_nonneg": form.constraints["xi_nonneg"]},
        variables={**form.variables,
                   "w": Symbol("vec(W~), W~ = [W, b / s] the node weights w~_n (M x f) row by row",
                               "$\\mathrm{vec}(\\tilde W)$, $\\tilde W = [W,\\ b / s]$ the node "
                               "weights $\\tilde w_n$ ($M \\times f$) row by row", shape=("M*f",))},
        dims={**form.dims, "f": ("columns of x~ = [x, s]: d + 1", "columns of $\\tilde x = [x, s]$: "
                                 "$d + 1$")},
        notation={**form.notation,
                  "x~": Symbol("[x, s], s = intercept_scaling: the features with the constant feature "
                               "of the node biases b_n (LIBLINEAR's bias, not in the paper)",
                               "$[x, s]$: the features with the constant feature $s$ of the node "
                               "biases $b_n$ (LIBLINEAR's bias, not in the paper)", "\\tilde x")})


class CuttingPlaneProblem(ReferenceProblem):
    """Multi-label NHSVM (10) over ``Y_m`` by an exact cutting-plane loop.

    Master QP (a relaxation: only the label sets of the working set)::

        min_{W, xi}  lam ||W||_F^2 + sum_i xi_i
        s.t.  sum_n c_{k,n} (W_n . x_{i_k}) + xi_{i_k} >= Delta(z_k, y_{i_k})   for each cut k = (i_k, z_k),
              xi >= 0,      c_{k,n} = sqrt(alpha_n) ([n in y_{i_k}] - [n in z_k]),

    declared as one sparse inequality ``Phi vec(W) + E xi >= Delta`` (``Phi`` the row-wise
    Kronecker product of the cut coefficients and the samples' features; a cut touches only the
    nodes of ``y_i xor z_k``).  Adding cuts **rebuilds** the CVXPY problem each round (the
    build time is reported in ``build_time``): as a ``cvxpy.Parameter`` the ``(cuts x nodes)``
    cut data would make CVXPY's DPP canonicalization allocate a tensor quadratic in its number
    of entries.  Clarabel, the default QP solver, has no warm start, so none is attempted.
    ``lam`` stays a parameter.

    Each round: solve the master; its dual point (duals of the cut rows, clipped and scaled to
    ``sum_k beta_k <= 1`` per sample) is feasible for the dual of the *full* problem (the missing
    cuts get multiplier 0), so ``sum_k beta_k Delta_k - ||Phi^T beta||^2 / (4 lam)`` is a lower
    bound on its optimum; the exact objective at the master's ``W`` (loss-augmented inference by
    :class:`~hiercvx.inference.LabelSetOracle`) is an upper bound.  Stop when the best bounds'
    relative gap is ``<= gap_tol``; otherwise add, for every sample whose exact slack exceeds
    the master's, its most violating label set.

    ``max_size`` limits the nonzeros of every master the loop builds, checked before each
    build.  The master grows by its cuts, so a refusal names a limit that admits the whole
    loop: the master's size when the loop starts plus ``max_iter`` rounds of at most one cut
    per sample, each over the nodes of positive path weight (before :meth:`solve` is called,
    ``max_iter`` is the constructor's, by default ``Options``' default).
    """

    def __init__(self, data: NHSVMModel, lam: float, *, inference: str = "auto",
                 max_size: int | None = None, max_iter: int | None = None,
                 started: float | None = None):
        t0 = time.perf_counter() if started is None else started
        self.nhsvm_data = data
        self.oracle = LabelSetOracle(data.H, inference)
        self.max_size = max_size
        n, M = data.T.shape
        self._X = sp.csr_matrix(data.X)
        self._lam = cp.Parameter(pos=True, value=lam, name="lam")
        self._cut_sample = np.zeros(0, dtype=np.int64)
        self._cut_sets = np.zeros((0, M), dtype=bool)
        self._keys: set = set()
        self.n_builds = 0
        # a round adds at most one cut per sample, over the nodes of positive path weight
        self._round_nnz = int(np.count_nonzero(data.sqrt_alpha)) * self._X.nnz + n
        self._rounds = Options().max_iter if max_iter is None else int(max_iter)
        self._start_nnz = self._master_size()[2]
        self._build()
        super().__init__(self.problem, variables=self.variables, objective=self._objective,
                         lower_bound=self._bound_from_duals, weights=self._weights,
                         constraints=self.constraints, parameters={"lam": self._lam},
                         name="NHSVM primal (10), multi-label, cutting planes",
                         build_time=time.perf_counter() - t0,
                         formulation=cutting_plane_formulation(data.fit_intercept),
                         data={"nhsvm": data, "X": data.X, "H": data.H, "alpha": data.alpha,
                               # w is M*d (M*f with a bias): no single shape gives M and d
                               "dimensions": {"M": M, ("f" if data.fit_intercept else "d"):
                                              data.X.shape[1]}})

    @property
    def instance_note(self) -> str:
        """What the size of the declared master stands for (a line of
        :meth:`~hiercvx.reference.ReferenceProblem.describe`)."""
        K = len(self._cut_sample)
        if K == 0:
            return ("the master of an empty working set: no cuts yet; each round of solve() "
                    "adds the most violating label sets")
        return f"the master over its working set of {K:,} cut{'s' if K != 1 else ''}"

    # ------------------------------------------------------------------ the master problem
    def _cut_coefficients(self) -> sp.csr_matrix:
        """``(K, M)`` cut coefficients ``c_kn`` of the working set."""
        data = self.nhsvm_data
        true_sets = data.T[self._cut_sample]
        return sp.csr_matrix((true_sets.astype(float) - self._cut_sets) * data.sqrt_alpha)

    def _master_size(self, coef: sp.csr_matrix | None = None) -> tuple[int, int, int]:
        """``(variables, constraint rows, nonzeros)`` of the master over the working set."""
        n, d = self.nhsvm_data.X.shape
        M = len(self.nhsvm_data.H)
        K = len(self._cut_sample)
        coef = self._cut_coefficients() if coef is None else coef
        row_nnz = np.diff(self._X.indptr)[self._cut_sample]
        nnz = int(np.diff(coef.indptr) @ row_nnz) if K else 0
        return M * d + n, K + n, nnz + K + M * d + n

    def _check_size(self, coef: sp.csr_matrix) -> None:
        """Refuse a master over ``max_size``; the refusal names a limit that admits every
        master of the loop: the size at its start plus ``max_iter`` rounds of cuts."""
        n_vars, n_rows, nnz = self._master_size(coef)
        check_size(n_vars, n_rows, nnz, self.max_size,
                   what=f"the cutting-plane master ({len(self._cut_sample)} cuts)",
                   grows_to=self._start_nnz + self._rounds * self._round_nnz,
                   growth=(f"each of the loop's max_iter={self._rounds} rounds adds at most "
                           f"one cut per sample, at most {self._round_nnz:,} nonzeros"))

    def _build(self):
        data = self.nhsvm_data
        n, d = data.X.shape
        M = len(data.H)
        K = len(self._cut_sample)
        true_sets = data.T[self._cut_sample]
        coef = self._cut_coefficients()
        self._check_size(coef)
        self._phi = row_kron(coef, self._X, self._cut_sample)
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
        """Dual objective of the full problem at the master's cut duals, projected
        (:meth:`NHSVMModel.lower_bound`; the missing cuts get multiplier 0)."""
        if len(self._cut_sample) == 0:
            return 0.0   # the objective is non-negative
        return self.nhsvm_data.lower_bound({"sample": self._cut_sample, "sets": self._cut_sets,
                                            "beta": duals["cuts"]}, lam=self._lam_value())

    # ------------------------------------------------------------------ the loop
    def _solve_master(self, name: str, solver_verbose: bool, solver_options: dict):
        """Solve the master QP; ``(W, xi, duals, solve seconds, build seconds)``."""
        t_round = time.perf_counter()
        try:
            self.problem.solve(solver=name, verbose=solver_verbose, **solver_options)
        except cp.error.SolverError as exc:
            raise SolverError(f"{self.name}: the master QP failed: {exc}", status="error",
                              solver=name) from exc
        stats = self.problem.solver_stats
        wall = time.perf_counter() - t_round
        inner = stats.solve_time if stats is not None and stats.solve_time is not None else wall
        if self.problem.status != cp.OPTIMAL:
            raise SolverError(f"{self.name}: the master QP was not solved to optimality; try "
                              "another solver", status=self.problem.status, solver=name)
        W = self._weights({"w": self.variables["w"].value})
        xi = np.asarray(self.variables["xi"].value, dtype=float)
        duals = {k: c.dual_value for k, c in self.constraints.items() if k == "cuts"}
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(xi))
                and all(np.all(np.isfinite(v)) for v in duals.values())):
            raise SolverError(f"{self.name}: the master QP returned non-finite values",
                              status=self.problem.status, solver=name)
        return W, xi, duals, inner, max(wall - inner, 0.0)

    def solve(self, solver: str | None = None, *, gap_tol: float | None = None,
              max_iter: int | None = None, verbose: bool = True, solver_verbose: bool = False,
              cut_tol: float | None = None, options: Options | None = None,
              **solver_options) -> Solution:
        """Run the cutting-plane loop to a relative gap ``<= gap_tol``; see the class docstring.
        ``options``: ``Options`` (``gap_tol``, ``max_iter``, ``cut_tol`` override it).

        Returns a :class:`~hiercvx.result.Solution` with ``history`` (per round: ``objective``
        = exact objective at the master's weights, ``lower_bound`` = the master's dual bound,
        best-so-far ``gap``, ``n_cuts``), ``n_iter`` rounds and the extras ``n_cuts`` (label sets
        in the final working set) and ``n_rebuilds`` (master rebuilds).
        ``verbose``: a tqdm progress bar over rounds (every round is also an INFO record of the
        ``hiercvx`` logger, which an estimator's ``verbose`` prints); ``solver_verbose``: the QP
        solver's log.
        The working set is kept between calls (``prob.set(lam=...).solve()`` starts from it; the
        cuts do not depend on ``lam``).  Raises :class:`~hiercvx.SolverError` when the master is
        not solved to optimality, when no violated label set is left but the gap is still open
        (an inaccurate master solve), or after ``max_iter`` rounds.
        """
        options = replace(Options() if options is None else options,
                          **{k: v for k, v in (("gap_tol", gap_tol), ("max_iter", max_iter),
                                               ("cut_tol", cut_tol)) if v is not None})
        gap_tol, max_iter, cut_tol = options.gap_tol, options.max_iter, options.cut_tol
        data = self.nhsvm_data
        name = choose_solver(self.problem, solver)
        self._rounds, self._start_nnz = max_iter, self._master_size()[2]  # this loop's size bound
        solve_time, build_time = 0.0, self.declare_time
        builds_before = self.n_builds
        best = {"ub": np.inf, "lb": -np.inf, "W": None, "xi": None, "beta": None}
        history: dict = {}
        gap = np.inf
        bar = tqdm(total=max_iter, desc="NHSVM cutting planes", unit="round", disable=not verbose)
        try:
            for it in range(1, max_iter + 1):
                W, xi_master, duals, inner, outer = self._solve_master(name, solver_verbose,
                                                                      solver_options)
                solve_time += inner
                build_time += outer
                lb = self._bound_from_duals(None, duals)
                ub, xi_true = primal_objective(W, data, self._lam_value(), self.oracle,
                                               return_slacks=True)
                if lb > best["lb"]:
                    best["lb"], best["beta"] = lb, duals.get("cuts")
                if ub < best["ub"]:
                    best.update(ub=ub, W=W, xi=xi_true)
                gap = relative_gap(best["ub"], best["lb"])
                for key, value in (("objective", ub), ("lower_bound", lb), ("gap", gap),
                                   ("n_cuts", len(self._cut_sample))):
                    history.setdefault(key, []).append(value)
                bar.update(1)
                bar.set_postfix(gap=f"{gap:.2e}", cuts=len(self._cut_sample))
                logger.info("cutting planes round %d/%d: objective %.6g, bound %.6g, gap %.3e, "
                            "%d cuts", it, max_iter, ub, lb, gap, len(self._cut_sample))
                if gap < -max(gap_tol, options.duality_slack):
                    raise SolverError(f"{self.name}: the lower bound exceeds the exact objective, "
                                      "which weak duality forbids", status=self.problem.status,
                                      solver=name, gap=gap)
                if gap <= gap_tol:
                    break
                build_time += self._add_violated(W, xi_true - xi_master, cut_tol, gap_tol, gap, name)
            else:
                raise SolverError(f"{self.name}: not converged after max_iter={max_iter} rounds; "
                                  "raise max_iter", status="max_iter", solver=name, gap=gap)
        finally:
            bar.close()
        logger.info("cutting planes: %d rounds, %d cuts, gap %.2e", it, len(self._cut_sample), gap)
        return Solution(
            objective=float(best["ub"]), lower_bound=float(best["lb"]), status="optimal",
            solver=name, build_time=build_time, solve_time=solve_time, weights=best["W"],
            values={"W": best["W"], "xi": best["xi"]}, duals={"cuts": best["beta"]},
            solver_objective=float(self.problem.value),
            solver_objective_meaning=(f"the last master's optimum, over its {len(self._cut_sample):,} "
                                      "cuts: a relaxation"),
            problem_class="QP", name=self.name,
            n_iter=it, converged=True, tol=gap_tol, history=history,
            extras={"n_cuts": len(self._cut_sample), "n_rebuilds": self.n_builds - builds_before})

    def _add_violated(self, W, violation, cut_tol, gap_tol, gap, name) -> float:
        """Add every sample's most violating label set at ``W``; returns the seconds spent
        rebuilding.  Raises when nothing is left to add while the gap is open."""
        _, Z = multilabel_slacks(W, self.nhsvm_data, self.oracle)
        t_build = time.perf_counter()
        added = self._add_cuts(Z, violation, cut_tol)
        if added == 0:
            raise SolverError(f"{self.name}: no violated label set is left but the gap is "
                              f"still over gap_tol={gap_tol:g}; the master QP is not solved "
                              "accurately enough (tighten the solver's tolerances or try "
                              "another solver)", status="stalled", solver=name, gap=gap)
        return time.perf_counter() - t_build


def cutting_plane_from_model(model: NHSVMModel, lam: float = 1.0, *, inference: str = "auto",
                             max_size: int | None = None, max_iter: int | None = None,
                             started: float | None = None) -> CuttingPlaneProblem:
    """The cutting-plane reference of multi-label NHSVM (10) on a prepared model (no checks
    beyond the model's own).  ``max_iter``: the rounds a ``max_size`` refusal of the first
    master counts on (pass the ``max_iter`` that :meth:`CuttingPlaneProblem.solve` will get)."""
    if not model.multilabel:
        raise InputError("the cutting-plane reference is for multi-label NHSVM; single-label "
                         "problems are declared whole by hiercvx.formulations.nhsvm.primal_from_model")
    return CuttingPlaneProblem(model, lam, inference=inference, max_size=max_size,
                               max_iter=max_iter, started=started)
