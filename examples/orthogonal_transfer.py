"""
Orthogonal transfer, end to end
===============================

Orthogonal transfer (Zhou, Xiao, Wu 2011) end to end.  The first run of a fresh install
compiles the fast solvers' kernels (numba), which can take up to a minute; they are cached on
disk, and later runs take seconds.

data -> exact reference (the lifted SDP of (4), certified) -> RDA with optimality bounds
(Algorithm 1, checked against the reference) -> the scikit-learn estimator and its baselines.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import hiercvx as hc
from hiercvx import testing
from hiercvx.estimators.orthogonal import OrthogonalTransferSVC
from hiercvx.formulations import orthogonal as ot
from hiercvx.models import orthogonal as model_layer
from hiercvx.solvers import rda

# 1. Data: a two-level tree.  Features are built top-down: every node adds its own random
#    direction to its descendants' inputs, so the top level and each sibling group are
#    separated along different directions -- the situation orthogonal transfer is made for.
H = hc.Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "C": "root",
                               "A1": "A", "A2": "A", "B1": "B", "B2": "B", "B3": "B", "C1": "C", "C2": "C"})
rng = np.random.default_rng(0)
direction = rng.standard_normal((len(H), 8))
path = H.ancestor_matrix.toarray().astype(float)  # path[v, u] = 1 iff u is on v's path
leaves = H.leaf_indices
y_index = leaves[np.arange(160) % len(leaves)]
X = path[y_index] @ direction + 0.5 * rng.standard_normal((160, 8))
y = np.array([H.nodes[i] for i in y_index], dtype=object)
y[:6] = ["A", "B", "C", "A", "B", "C"]  # some labels stop at an internal node (partial paths)
X_train, y_train, X_test, y_test = X[:120], y[:120], X[120:], y[120:]

# 2. K by heuristic (6); Theorem 1 (convexity) and Corollary 2 (strong convexity) hold.
K, alpha = ot.heuristic_K(H, alpha=1.0, return_alpha=True)
print(f"heuristic (6): alpha={alpha:g}, convex: {ot.check_convexity(K)}, "
      f"sigma = lambda_min(Kbar) = {ot.strong_convexity(K):.3f}")

# 3. The exact reference: problem (4) as a semidefinite program (G = W W^T lifted), solved and
#    certified (objective recomputed in numpy, lower bound from a dual feasible point).  The
#    model validates the data and K once; the declaration and the fast solver share it.
model = model_layer.prepare(X_train, y_train, H, "orthogonal")
sol = ot.primal_from_model(model, C=2.0).solve()
print(sol.certificate())
W = sol.weights
print("lifting tight (G = W W^T):", np.allclose(sol.values["G"], W[1:] @ W[1:].T, atol=1e-6))

# 4. The fast solver: RDA with optimality bounds.  It stops when its own upper bound (best
#    iterate) and lower bound (averaged multipliers) are within tol, and every bound in its
#    history brackets the reference optimum.
# The kernels compile on their first call (once per install): one solve on a model of its own
# runs them, so that the time printed below is the solve's alone, comparable with the reference's.
rda.solve(model_layer.prepare(X_train, y_train, H, "orthogonal"), C=2.0, tol=1e-4)
fast = rda.solve(model, C=2.0, tol=1e-4)
print(fast)
testing.assert_fast_matches_reference(fast, sol, rtol=1e-4)
testing.assert_bounds_bracket(fast.history["lower"], fast.history["upper"], sol.objective, rtol=1e-6)
with warnings.catch_warnings():  # Algorithm 1 as printed, with the same budget: not converged
    warnings.simplefilter("ignore", ConvergenceWarning)
    paper = rda.solve(model, C=2.0, tol=1e-4, max_iter=fast.n_iter, averaging="uniform",
                      psi="identity", dual_bound=False)
print(f"after {fast.n_iter} iterations, Algorithm 1 as printed certifies a gap of {paper.gap:.1e}")

# 5. The estimator, with the four baselines of section 5 for comparison.  score() is 1 - the
#    paper's error rate (an internal test label is right when the prediction lies below it).
#    The estimator's C is LIBLINEAR's, Omega(W) + C sum_k xi_k, where (4) weighs the hinge by
#    C_paper / N; and it fits a bias by default, which (4) has not.  C = C_paper / N with
#    fit_intercept=False is problem (4) of the reference above, so the orthogonal row's
#    objective is the reference's, within its certified gap.
C_paper, N = 2.0, len(y_train)
print(f"the estimators on (4) and its baselines at C_paper = {C_paper:g} (estimator C = "
      f"C_paper / N = {C_paper / N:.4g}, no intercept); the reference's objective: {sol.objective:.4f}")
for method in ("orthogonal", "flatmult", "hiermult", "transfer", "treeloss"):
    labels = y_train if method != "flatmult" else np.where(np.isin(y_train, ["A", "B", "C"]),
                                                          np.char.add(y_train.astype(str), "1"), y_train)
    est = OrthogonalTransferSVC(hierarchy=H, C=C_paper / N, fit_intercept=False, method=method,
                                tol=1e-3).fit(X_train, labels)
    print(f"{method:>10}: objective {est.objective_:.4f} (certified gap {est.gap_:.1e}, "
          f"{est.n_iter_} iterations), test accuracy {est.score(X_test, y_test):.3f}")
