"""
Sibling-margin HSVM and hierarchical psi-learning
=================================================

Wang, Shen & Pan: sibling-margin HSVM and hierarchical psi-learning, end to end.

data (Example 2) -> exact HSVM reference (certified) -> fast QP solver (checked) ->
HPSI by the DC algorithm -> estimators and the paper's test errors.
"""

import numpy as np

import hiercvx as hc
from hiercvx.datasets import make_wang_example2
from hiercvx.estimators import HierarchicalPsiClassifier, SiblingMarginSVC
from hiercvx.formulations import hpsi
from hiercvx.models.sibling import prepare
from hiercvx.solvers import sibling_qp
from hiercvx.testing import assert_fast_matches_reference

train = make_wang_example2(n_samples=100, random_state=0)
test = make_wang_example2(n_samples=2000, random_state=1)
H = train.hierarchy
print(H, f"- Bayes error {train.bayes_error:.3f}")

# The HSVM of (2): one function per non-root node, sum-to-zero over siblings, hinge on u_min.
ref = hpsi.primal(train.X, train.y, H, C=1.0).solve()
print(ref.certificate())

# The fast solver of the same QP, on the same validated model, agrees with the reference.
model = prepare(train.X, train.y, H)
fast = sibling_qp.solve(model, C=1.0, tol=1e-8)
assert_fast_matches_reference(fast, ref, rtol=1e-6)
print(fast)

# HPSI: the psi-loss minimized by DC steps, each a convex QP; the cost never increases.
# (C is not tuned here; the paper tunes it on an independent sample, see tune_on_holdout.)
hsvm_est = SiblingMarginSVC(hierarchy=H, C=1.0).fit(train.X, train.y)
psi_est = HierarchicalPsiClassifier(hierarchy=H, C=1.0).fit(train.X, train.y)
print("DC cost path:", np.round(psi_est.dc_objectives_, 4))
for name, est in [("HSVM", hsvm_est), ("HPSI", psi_est)]:
    errors = hc.metrics.test_errors(test.y, est.predict(test.X), hierarchy=H)
    print(name, {k: round(float(v), 3) for k, v in errors.items()})
