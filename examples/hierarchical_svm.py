"""
Cai & Hofmann's hierarchical SVM, end to end
============================================

Cai & Hofmann's hierarchical SVM end to end.  The first run of a fresh install compiles the
fast solver's kernels (numba), which can take up to a minute; they are cached on disk, and
later runs take seconds.

data -> exact reference (CVXPY, certified) -> fast solver (checked against it) -> estimator.
"""

import numpy as np

import hiercvx as hc
import hiercvx.testing  # noqa: F401  (hc.testing below)
from hiercvx.datasets import make_cai_synthetic
from hiercvx.estimators import HierarchicalSVC
from hiercvx.formulations import hsvm
from hiercvx.models.hsvm import prepare
from hiercvx.solvers import working_set

# 1. Data: the thesis' synthetic multi-label tree (section 7.1.1).
ds = make_cai_synthetic(n_samples=120, n_features=8, branching=3, depth=2, random_state=1)
X, Y, H = ds.X, ds.y, ds.hierarchy
print(H, f"- {len(Y)} samples, {np.mean([len(s) for s in Y]):.2f} labels each")

# 2. The exact reference: primal (4.10), solved and certified (recomputed objective, dual bound).
sol = hsvm.primal(X, Y, H, C=1.0).solve()
print(sol.certificate())

# The dual (4.15) is a second, independent route to the same optimum.
dual = hsvm.dual(X, Y, H, C=1.0).solve()
assert abs(dual.objective - sol.objective) <= 1e-5 * max(1, abs(sol.objective))

# 3. The fast solver (thesis Algorithm 2) runs on the validated model and stops on a
#    certified duality gap.
model = prepare(X, Y, H)
# The kernels compile on their first call (once per install): one solve on a model of its own
# runs every kernel this problem needs, so that the time printed below is the solve's alone,
# comparable with the reference's.
working_set.solve(prepare(X, Y, H), C=1.0, tol=1e-6)
fast = working_set.solve(model, C=1.0, tol=1e-6)
print(fast)
hc.testing.assert_fast_matches_reference(fast, sol, rtol=1e-5)

# 4. The estimator: fit, predict label sets, score with hierarchical F1.
est = HierarchicalSVC(hierarchy=H).fit(X[:90], Y[:90])
pred = est.predict(X[90:])
print("hierarchical F1 on held-out samples:",
      round(hc.metrics.hierarchical_f1(Y[90:], pred, hierarchy=H), 3))
