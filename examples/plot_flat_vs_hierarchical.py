"""
Hierarchical F1 against C: flat and hierarchical SVM
====================================================

The flat multi-class SVM (Crammer & Singer) treats the leaves of a taxonomy as unrelated
classes; Cai's hierarchical SVM scores a leaf by the weights of every node on its path, so
that siblings share what their parent learned.  Hierarchical F1 credits a prediction for
the ancestors it shares with the truth.  Both are fitted over a grid of the slack penalty
``C`` on a small unbalanced synthetic tree (Choi, Sasaki & Srebro, section 8.1) and scored
on held-out samples.
"""

import matplotlib.pyplot as plt
import numpy as np

import hiercvx as hc
from hiercvx.datasets import make_nhsvm_unbalanced
from hiercvx.estimators import HierarchicalSVC, MulticlassSVC

ds = make_nhsvm_unbalanced(n_samples=500, n_features=10, depth=6, random_state=0)
X, y, H = ds.X, ds.y, ds.hierarchy
Xtr, ytr, Xte, yte = X[:150], y[:150], X[150:], y[150:]
print(H, "- leaves at depths", sorted(H.depth(v) for v in H.leaves))

Cs = np.logspace(-2, 2, 5)
scores = {"flat (MulticlassSVC)": [], "hierarchical (HierarchicalSVC)": []}
for C in Cs:
    for name, est in (("flat (MulticlassSVC)", MulticlassSVC(C=C)),
                      ("hierarchical (HierarchicalSVC)", HierarchicalSVC(hierarchy=H, C=C))):
        pred = est.fit(Xtr, ytr).predict(Xte)
        scores[name].append(hc.metrics.hierarchical_f1(yte, pred, hierarchy=H))
    print(f"C = {C:g}: " + ", ".join(f"{k.split()[0]} hF1 {v[-1]:.3f}" for k, v in scores.items()))

# %%
fig, ax = plt.subplots(figsize=(6.4, 4.0))
for (name, values), marker in zip(scores.items(), "os"):
    ax.semilogx(Cs, values, marker=marker, label=name)
ax.set_xlabel("C")
ax.set_ylabel("hierarchical F1 on held-out samples")
ax.legend()
ax.grid(alpha=0.3)
fig.tight_layout()
plt.show()
