"""
The duality gap of a fast solver beside the reference's objective
=================================================================

Cai's hierarchical SVM (thesis (4.10)) on the thesis's synthetic multi-label tree, solved
twice: by the CVXPY reference, which returns a certified optimum, and by the thesis's
Algorithm 2 (dual block coordinate ascent, ``hiercvx.solvers.working_set``), which records
a certificate after every pass: the primal objective (4.10) at its current weights and the
dual objective (4.14) at its current multipliers.  Weak duality puts the optimum between the
two, so the reference's objective must lie in the shrinking band.
"""

import matplotlib.pyplot as plt
import numpy as np

from hiercvx.datasets import make_cai_synthetic
from hiercvx.formulations import hsvm
from hiercvx.models.hsvm import prepare
from hiercvx.solvers import working_set

ds = make_cai_synthetic(n_samples=80, n_features=6, branching=3, depth=2, random_state=0)
X, Y, H = ds.X, ds.y, ds.hierarchy

reference = hsvm.primal(X, Y, H, C=10.0).solve()
print(reference.certificate())

# %%
# The fast solver, with a certificate after every pass and no exact step on the
# selected variables, so that the plot shows the passes themselves.
settings = working_set.Options(check_every=1, polish=False)
fast = working_set.solve(prepare(X, Y, H), C=10.0, tol=1e-7, options=settings)
hist = fast.history
passes = np.asarray(hist["n_iter"])
print(f"fast: objective {fast.objective:.6f}, gap {fast.gap:.1e} after {fast.n_iter} passes")
assert abs(fast.objective - reference.objective) <= 1e-5 * reference.objective

fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 6.0), sharex=True)
top.plot(passes, hist["objective"], label="primal (4.10) at the current weights")
top.plot(passes, hist["lower_bound"], label="dual (4.14) at the current multipliers")
top.axhline(reference.objective, color="k", ls="--", lw=1, label="reference (CVXPY) objective")
lo, hi = reference.objective * 0.8, reference.objective * 1.2
top.set_ylim(lo, hi)
top.set_ylabel("objective")
top.legend(loc="lower right", fontsize=8)
bottom.semilogy(passes, np.maximum(hist["gap"], 1e-16))
bottom.axhline(1e-7, color="gray", ls=":", lw=1)
bottom.set_xlabel("pass over the examples")
bottom.set_ylabel("relative duality gap")
fig.suptitle("Algorithm 2 against the certified reference")
fig.tight_layout()
plt.show()
