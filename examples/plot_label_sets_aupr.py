"""
Label sets, node scores and AU(PRC)
===================================

In hierarchical multi-label classification every sample holds a *set* of labels, closed
upward in the taxonomy (a gene with function ``01/03/16`` also has ``01/03`` and ``01``).
The Clus-HMC literature ranks methods by AU(PRC): every (sample, node) pair is a prediction
scored by the model, and the area under the micro-averaged precision-recall curve of those
scores summarizes how well the model ranks the nodes a sample holds above the others.

This example fits three models on label sets of a synthetic taxonomy (Cai thesis section
7.1.1, with a share of the labels flipped so that the ranking is not trivial):

- ``HierarchicalSVC``, the Cai-Hofmann hierarchical SVM (thesis (4.10) on label sets), fitted
  with a certified duality gap;
- ``NormalizedHierarchicalSVC``, Choi, Sasaki & Srebro's normalized hierarchical SVM with
  its label-set inference (program (19));
- a flat one-vs-rest logistic regression over the nodes, the usual baseline.

``node_decision_function`` gives each model's score for every node of the hierarchy, with no
node above its ancestors; :func:`hiercvx.metrics.au_prc` ranks them as the field does.  On
the Clus-HMC yeast data the same steps are ``hiercvx reproduce hmc-aupr``.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import precision_recall_curve
from sklearn.multiclass import OneVsRestClassifier

import hiercvx as hc
from hiercvx.datasets import make_cai_synthetic
from hiercvx.estimators import HierarchicalSVC, NormalizedHierarchicalSVC

rng = np.random.default_rng(0)
ds = make_cai_synthetic(n_samples=400, n_features=20, branching=3, depth=3, random_state=0)
H, X = ds.hierarchy, ds.X
leaves = np.asarray(H.leaves)

# flip a leaf in or out of a fifth of the label sets (never leaving a set empty)
y = []
for labels in ds.y:
    labels = set(labels)
    if rng.random() < 0.2:
        leaf = leaves[rng.integers(len(leaves))]
        labels ^= {leaf} if labels != {leaf} else set()
    y.append(frozenset(labels))

train, test = slice(0, 250), slice(250, None)
Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
print(H, f"- {np.mean([len(s) for s in ytr]):.2f} leaves per training sample")

# %%
# Fit the two hierarchical SVMs; each result carries its certificate.
models = {
    "HierarchicalSVC": HierarchicalSVC(hierarchy=H, C=1.0),
    "NormalizedHierarchicalSVC": NormalizedHierarchicalSVC(hierarchy=H, C=1.0),
}
scores = {}
for name, est in models.items():
    est.fit(Xtr, ytr)
    scores[name] = est.node_decision_function(Xte)
    print(f"{name}: objective {est.objective_:.4f}, certified relative gap {est.gap_:.1e}")

# %%
# The flat baseline: one logistic regression per node with a positive in training, on the
# label sets closed upward; the others take the lowest score, then each node is raised to the
# best score below it (the max constraint of Giunchiglia & Lukasiewicz's C-HMCNN, NeurIPS 2020),
# as the hierarchical models' node scores are.
T = H.closure(ytr)
cols = np.flatnonzero(T.any(axis=0) & ~T.all(axis=0))
flat = OneVsRestClassifier(LogisticRegression(C=1.0, max_iter=1000)).fit(Xtr, T[:, cols])
margins = flat.decision_function(Xte)
S = np.full((Xte.shape[0], len(H.nodes)), margins.min() - 1.0)
S[:, cols] = margins
scores["one-vs-rest logistic"] = hc.metrics.coherent_node_scores(S, H)  # no node above a parent

# %%
# AU(PRC) over the nodes the literature evaluates (every node but the root and those every
# training sample holds), and the precision-recall curves behind it.
nodes = hc.metrics.evaluated_nodes(ytr, H)
truth = H.closure(yte)[:, nodes].ravel()
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for name, S in scores.items():
    aupr = hc.metrics.au_prc(yte, S, H, y_train=ytr)
    precision, recall, _ = precision_recall_curve(truth, S[:, nodes].ravel())
    ax.plot(recall, precision, label=f"{name} (AU(PRC) {aupr:.3f})")
    print(f"{name}: AU(PRC) {aupr:.3f}")
ax.set_xlabel("recall (micro, over sample-node pairs)")
ax.set_ylabel("precision")
ax.legend(loc="lower left")
ax.grid(alpha=0.3)
fig.tight_layout()
plt.show()
