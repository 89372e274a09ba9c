"""
The hierarchy, and the classes a model confuses
===============================================

A hierarchical SVM (Cai's thesis (4.10)) is fitted on the balanced synthetic tree of Choi,
Sasaki & Srebro (section 8.1: a weight vector per node, a sample's leaf the one of largest
potential).  The tree is drawn with each leaf coloured by its recall on held-out samples,
and every confusion made at least twice (true leaf -> predicted leaf) as an arc whose
width grows with its count.  An error between siblings costs little under a hierarchical
loss (the prediction shares every ancestor but one with the truth); an arc that crosses
the root costs the most.  The script prints how many errors stay between siblings.
"""

from collections import Counter

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np

from hiercvx.datasets import make_nhsvm_balanced
from hiercvx.estimators import HierarchicalSVC

ds = make_nhsvm_balanced(n_samples=600, n_features=8, depth=4, branching=2, random_state=0)
X, y, H = ds.X, np.asarray(ds.y), ds.hierarchy
Xtr, ytr, Xte, yte = X[:200], y[:200], X[200:], y[200:]
pred = HierarchicalSVC(hierarchy=H, C=1.0).fit(Xtr, ytr).predict(Xte)
print(f"{H}: held-out accuracy {np.mean(pred == yte):.3f}")

confusions = Counter((t, p) for t, p in zip(yte.tolist(), pred.tolist()) if t != p)
siblings = sum(c for (t, p), c in confusions.items() if p in H.siblings(t))
print(f"{sum(confusions.values())} errors, {siblings} of them between siblings")

# %%
# Positions: leaves evenly spaced in the order of a depth-first walk, every inner node
# above the middle of its children.
order = [v for v in nx.dfs_preorder_nodes(nx.DiGraph([(H.parents(v)[0], v) for v in H.nodes
                                                      if H.parents(v)]), H.root)
         if v in set(H.leaves)]
pos = {v: (float(i), -float(H.depth(v))) for i, v in enumerate(order)}
for v in reversed(H.nodes):
    if v not in pos:
        xs = [pos[c][0] for c in H.children(v)]
        pos[v] = (float(np.mean(xs)), -float(H.depth(v)))

tree = nx.DiGraph([(p, v) for v in H.nodes for p in H.parents(v)])
recall = {v: np.mean(pred[yte == v] == v) if np.any(yte == v) else np.nan for v in H.leaves}

fig, ax = plt.subplots(figsize=(7.0, 4.2))
nx.draw_networkx_edges(tree, pos, ax=ax, edge_color="0.6", arrows=False)
inner = [v for v in H.nodes if v not in recall]
nx.draw_networkx_nodes(tree, pos, nodelist=inner, node_color="0.85", node_size=250, ax=ax)
leaves = list(recall)
artist = nx.draw_networkx_nodes(tree, pos, nodelist=leaves, node_size=420, ax=ax,
                                node_color=[recall[v] for v in leaves], cmap="RdYlGn",
                                vmin=0.5, vmax=1.0)
nx.draw_networkx_labels(tree, pos, font_size=8, ax=ax)
top = max(confusions.values())
conf_graph = nx.DiGraph()
conf_graph.add_nodes_from(leaves)
for (t, p), c in confusions.items():
    if c >= 2:
        conf_graph.add_edge(t, p, weight=c)
nx.draw_networkx_edges(conf_graph, pos, ax=ax, edge_color="tab:red", alpha=0.7,
                       width=[0.5 + 4.0 * d["weight"] / top for *_, d in conf_graph.edges(data=True)],
                       connectionstyle="arc3,rad=-0.45", arrowsize=10, node_size=420)
fig.colorbar(artist, ax=ax, label="recall of the leaf")
ax.set_title("Confusions of a hierarchical SVM (red: true leaf -> predicted leaf)", fontsize=10)
ax.axis("off")
fig.tight_layout()
plt.show()
