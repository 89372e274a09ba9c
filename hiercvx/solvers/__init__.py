"""Fast algorithms on the models of :mod:`hiercvx.models`, one module per algorithm.

Every solver has one signature, ``solve(model, C, *, tol, max_iter, verbose, ...)``, and
returns the one result type :class:`hiercvx.result.Solution` (objective recomputed at the
returned weights, certified lower bound, gap, status, iterations, times, per-solver
``extras``); a solver that stops above ``tol`` issues one ``ConvergenceWarning``.

- :mod:`.primitives` — shared numeric kernels: dense / CSR / Gram row access,
  budget-constrained block steps, certificate scheduling
- :mod:`.crammer_singer` — flat Crammer–Singer, sequential dual with shrinking
- :mod:`.working_set` — Cai–Hofmann hierarchical SVM, variable selection (thesis Alg. 2)
- :mod:`.interior_point` — the margin family (Crammer–Singer, Cai–Hofmann) by a primal-dual
  interior-point method; :mod:`.margin_engine` chooses among the margin solvers;
  :mod:`.interior_point_cg` the same iteration with matrix-free Newton systems (conjugate
  gradients) for primal dimensions too large to factorize
- :mod:`.labelset` — the margin family on label sets by cutting planes over pairs with the
  loss-augmented oracle (the working set solves the model restricted to the pairs met);
  :mod:`.labelset_smoothing` its primal points by L-BFGS on the smoothed primal over every
  pair
- :mod:`.low_rank_kernel` — a kernel margin model solved as the linear one on a
  pivoted-Cholesky factor of its kernel (the margin engine's entry takes it for large kernels)
- :mod:`.orthogonal_dual` — the orthogonal-transfer family by dual block-coordinate ascent on
  the SDP lifting (the estimators' default)
- :mod:`.rda` — regularized dual averaging with optimality bounds (Zhou et al., Alg. 1)
- :mod:`.nhsvm_fw`, :mod:`.shared_norm` — NHSVM: block-coordinate Frank–Wolfe; closed-form
  alpha step and the alternating shared-norm SVM
- :mod:`.sibling_qp`, :mod:`.dc` — sibling-margin SVM of Wang et al. and the DC loop of HPSI
- :mod:`.perceptron` — hierarchical perceptrons and Hieron (thesis Alg. 3–7)
"""

from ..result import Solution

__all__ = ["Solution"]
