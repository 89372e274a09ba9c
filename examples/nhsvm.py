"""
The normalized hierarchical SVM and the shared-norm SVM
=======================================================

The Normalized Hierarchical SVM and the shared-norm SVM end to end.  The first run of a fresh
install compiles the fast solvers' kernels (numba), which can take up to two minutes; they are
cached on disk, and later runs take seconds.

data -> exact reference (CVXPY, certified) -> fast solver (certified, checked against it)
-> estimators (single-label and multi-label).
"""

import numpy as np

import hiercvx as hc
import hiercvx.testing  # noqa: F401  (hc.testing below)
from hiercvx.datasets import make_nhsvm_unbalanced
from hiercvx.estimators import MulticlassSVC
from hiercvx.estimators.nhsvm import NormalizedHierarchicalSVC, SharedNormSVC
from hiercvx.formulations import nhsvm
from hiercvx.models.nhsvm import prepare, prepare_shared
from hiercvx.solvers import nhsvm_fw, shared_norm

# 1. Data: the paper's unbalanced synthetic tree (section 8.1), small.
ds = make_nhsvm_unbalanced(n_samples=1200, n_features=30, depth=6, random_state=0)
X, y, H = ds.X, ds.y, ds.hierarchy
Xtr, ytr, Xte, yte = X[:300], y[:300], X[300:], y[300:]
print(H, "- leaves at depths", sorted(H.depth(v) for v in H.leaves))

# 2. The exact reference: NHSVM (10) with the path weights (6), solved and certified.
alpha = nhsvm.path_weights(H)                    # (6), rho = 2: every root-leaf path sums to 1
ref = nhsvm.primal(Xtr, ytr, H, lam=0.1, alpha=alpha).solve()
print(ref.certificate())

# 3. The fast solver: pairwise block-coordinate Frank-Wolfe on the dual, stopped on a
#    certified duality gap, checked against the reference.
model = prepare(Xtr, ytr, H, alpha=alpha)        # validated once, shared with the reference
# The kernels compile on their first call (once per install): one solve on a model of its own
# runs every kernel this problem needs, so that the time printed below is the solve's alone,
# comparable with the reference's.
nhsvm_fw.solve(prepare(Xtr, ytr, H, alpha=alpha), lam=0.1, tol=1e-7)
fast = nhsvm_fw.solve(model, lam=0.1, tol=1e-7)
print(fast)
hc.testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)

# Multi-label: label sets of leaves; the reference is a cutting-plane loop whose separation
# oracle is loss-augmented inference (tree DP), and so is the fast solver's.
rng = np.random.default_rng(1)
leaves = np.array(H.leaves, dtype=object)
Y = [frozenset({a, rng.choice(leaves)}) if rng.random() < 0.3 else frozenset({a}) for a in ytr[:80]]
multi_ref = nhsvm.primal(Xtr[:80], Y, H, lam=0.5).solve(verbose=False)
multi_fast = nhsvm_fw.solve(prepare(Xtr[:80], Y, H), lam=0.5, tol=1e-7)
hc.testing.assert_fast_matches_reference(multi_fast, multi_ref, rtol=1e-6)
print(f"multi-label: cutting planes {multi_ref.objective:.6f} ({multi_ref.n_iter} rounds), "
      f"fast {multi_fast.objective:.6f} (gap {multi_fast.gap:.1e})")

# 4. The shared-norm SVM (14): alpha learned with the weights.  The alternating algorithm
#    (closed-form alpha step, then the weights) is certified by the dual of (14).
sub = slice(0, 120)
shared_ref = nhsvm.shared_primal(Xtr[sub], ytr[sub], H, lam=1.0).solve()
shared = shared_norm.solve(prepare_shared(Xtr[sub], ytr[sub], H), lam=1.0, tol=1e-5)
hc.testing.assert_fast_matches_reference(shared, shared_ref, rtol=1e-5)
print(f"shared-norm SVM: reference {shared_ref.objective:.6f}, alternating {shared.objective:.6f} "
      f"after {shared.n_iter} alpha steps (gap {shared.gap:.1e})")
print("learned alpha:", dict(zip(H.nodes, shared.alpha.round(3).tolist())))

# 5. Estimators: NHSVM and SSVM against a flat multi-class SVM on held-out data.
for est in (MulticlassSVC(C=5.0, tol=1e-4), NormalizedHierarchicalSVC(hierarchy=H, C=5.0),
            SharedNormSVC(hierarchy=H, C=5.0)):
    est.fit(Xtr, ytr)
    print(f"{type(est).__name__:<28} test accuracy {est.score(Xte, yte):.3f}")
est = NormalizedHierarchicalSVC(hierarchy=H, C=1.0).fit(Xtr[:80], Y)
print("multi-label predictions (best label set of Y_m):", est.predict(Xte[:3]))
