"""NHSVM vs a flat multi-label SVM on cellcycle_GO.

Data: ``../shared/data/hmc/cellcycle_GO.{train,valid,test}.arff`` (yeast cell-cycle expression,
77 features with missing values, Gene Ontology DAG of 4126 nodes, ~37 nodes per closed label
set).  Models are trained on ``train``; ``lam`` is picked on ``valid`` (hierarchical F1); the
chosen model is scored on ``test``.  No refit on train+valid: the reduced label space below
is built from the train labels alone, and a refit on 2473 samples would cost another fit.

Features: mean imputation + standardization (a scikit-learn pipeline fitted on ``train``),
plus a constant feature so that every node / class gets a bias.

REDUCTION (printed by the script).  This benchmark compares NHSVM with the paper's flat model
on a reduced label space, solved by the LP route of program (19) (``inference="lp"``) over
a lam path; the estimators on the full GO DAG, with the default oracle, are measured by
``bench_nhsvm_labelsets.py`` and ``bench_dag_oracle.py``.  The label space is cut:

1. keep the GO nodes annotated (after closing upward) to at least k = 50 training samples --
   support can only grow towards the root, so this is an ancestor-closed sub-DAG -- and
   restrict every label set to it (validation and test labels too: the main scores are on
   the reduced label space; "hF full" also scores the predictions against the full labels);
2. merge nodes that co-occur in every training label set (NHSVM section 5.2,
   ``Hierarchy.minimal_graph``): a label-preserving change of the graph, undone when the
   predictions are mapped back to GO terms;
3. GO labels often stop at internal terms; NHSVM's label sets are sets of leaves, so every
   internal node that ends some training label set gets a "self" leaf
   (``Hierarchy.with_self_leaves``), dropped again when predictions are mapped back.

Models (both structured SVMs over the same label sets, same solver, same leaf-Hamming loss
``Delta_L`` of section 7.1, same lam grid):

* NHSVM  ``NormalizedHierarchicalSVC``'s problem (10) on the reduced DAG, path weights of the DAG
  relaxation (8) (T = 1.5), LP inference with ILP fallback.
* Flat   the paper's flat model (section 4: ``alpha_n = 1`` on the leaves and 0 elsewhere):
  the same problem on a one-level hierarchy over the same leaves, so the label space is any
  non-empty set of them (but for that "non-empty", the loss splits into one-vs-rest hinge
  losses: binary relevance with linear SVMs).  Its predicted leaves are closed upward in the GO DAG for scoring.

The lam path is solved from the largest lam down, each solve warm-started from the previous
dual point (the dual feasible set of (10) does not depend on lam), to a certified relative
gap (3e-3) or a per-lam time limit (90 s; the remaining lams are skipped once a path has
taken 180 s); the achieved gaps are printed.  ``--quick``: support >= 100, three lams, gap 1e-2.

Metrics (micro-averaged over the test samples, GO terms, root excluded):
hP / hR / hF  hierarchical precision / recall / F1 (Kiritchenko et al.) on the closed sets;
              note hF is also the micro-F1 over the nodes of the closed sets;
micro-F1 (specific)  micro-F1 on the most specific terms only (the members of a closed set
              none of whose children is in it): exact-term hits, no credit for ancestors;
hF full       hF against the test labels on the full DAG (terms cut by the reduction count as
              missed: recall is bounded by the reduction).
A reference row, "Majority", predicts one constant set for every sample: the kept terms present
in at least half of the training label sets.

    .venv/bin/python benchmarks/bench_nhsvm_go.py [--quick]
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import hiercvx as hc
from hiercvx.datasets import load_arff
from hiercvx.formulations import nhsvm
from hiercvx.inference import LabelSetOracle
from hiercvx.metrics import hierarchical_precision_recall_f1, micro_f1
from hiercvx.solvers import nhsvm_fw
from hiercvx.datasets._common import hmc_data_dir

warnings.simplefilter("ignore", ConvergenceWarning)

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc


# ----------------------------------------------------------------------------- label space
class ReducedLabelSpace:
    """The reduced GO label space (steps 1-3 of the module docstring) and the maps both ways."""

    def __init__(self, H: hc.Hierarchy, train_labels, min_support: int):
        self.H = H
        closed = H.closure(train_labels, sparse=True)
        support = np.asarray(closed.sum(axis=0)).ravel()
        keep = np.flatnonzero(support >= min_support)           # ancestor-closed (support is monotone)
        self.kept = keep
        kept_names = [H.nodes[j] for j in keep]
        kept_set = set(kept_names)
        self.sub = hc.Hierarchy([(p, c) for p, c in H.edges if p in kept_set and c in kept_set],
                                nodes=kept_names)
        sub_sets = self._restrict(closed)
        self.minimal = self.sub.minimal_graph(sub_sets)
        G = self.minimal.hierarchy
        Z = G.closure(self.minimal.transform(sub_sets))
        terminal = self._terminal(Z, G)
        ends_inside = np.flatnonzero((terminal & ~G.leaf_mask).any(axis=0))
        self.partial = G.with_self_leaves([G.nodes[j] for j in ends_inside])
        self.F = self.partial.hierarchy
        # each training sample as a set of leaves of F
        self.train_leaf_sets = [frozenset(self.partial.self_leaf.get(G.nodes[j], G.nodes[j])
                                          for j in np.flatnonzero(row)) for row in terminal]
        # F node -> the GO terms it stands for (a self leaf stands for nothing new)
        groups = self.minimal.groups
        self._members = [() if v in self.partial.owner else groups.get(v, (v,)) for v in self.F.nodes]

    def _restrict(self, closed):
        """Closed GO label sets (CSR over H.nodes) restricted to the kept terms."""
        sub = closed[:, self.kept].tocsr()
        names = np.array([self.H.nodes[j] for j in self.kept], dtype=object)
        return [frozenset(names[sub.indices[sub.indptr[i]:sub.indptr[i + 1]]].tolist())
                for i in range(sub.shape[0])]

    @staticmethod
    def _terminal(Z: np.ndarray, G: hc.Hierarchy) -> np.ndarray:
        """Members of each closed set with no child in the set (bool, same shape as Z)."""
        parent, child = G.edge_index[:, 0], G.edge_index[:, 1]
        edges = sp.csr_matrix((np.ones(len(parent)), (parent, child)), shape=(len(G), len(G)))
        has_child = np.asarray((edges @ Z.T.astype(float)).T) > 0   # some child of the node is in
        return Z & ~has_child

    def restrict(self, labels) -> list[frozenset]:
        """GO label sets closed upward and cut to the kept terms (the reduced truth)."""
        return self._restrict(self.H.closure(labels, sparse=True))

    def decode(self, Z: np.ndarray) -> list[frozenset]:
        """Indicators over F.nodes -> closed sets of GO terms."""
        return [frozenset(t for j in np.flatnonzero(row) for t in self._members[j]) for row in Z]

    def specific(self, sets) -> list[frozenset]:
        """The most specific terms of closed GO label sets (members with no child in the set)."""
        Z = self.H.closure(sets)
        T = self._terminal(Z, self.H)
        T[:, self.H.index(self.H.root)] = False
        names = np.array(self.H.nodes, dtype=object)
        return [frozenset(names[row].tolist()) for row in T]

    def describe(self, k: int) -> str:
        G = self.minimal.hierarchy
        return (f"  1. GO terms with support >= {k} in train: {len(self.sub)} of {len(self.H)} nodes "
                f"({len(self.sub.leaves)} leaves), {'tree' if self.sub.is_tree else 'DAG'}\n"
                f"  2. minimal graph (co-occurring terms merged): {len(G)} nodes\n"
                f"  3. self leaves for {len(self.partial.self_leaf)} internal terms that end a label set: "
                f"{len(self.F)} nodes, {len(self.F.leaves)} leaves, "
                f"{'tree' if self.F.is_tree else 'DAG'}, depth {int(self.F.depths.max())}")


# ----------------------------------------------------------------------------- models
def flat_hierarchy(leaves) -> tuple[hc.Hierarchy, np.ndarray]:
    root = "<flat-root>"
    Hf = hc.Hierarchy([(root, leaf) for leaf in leaves], root=root)
    alpha = np.ones(len(Hf))
    alpha[Hf.index(root)] = 0.0   # the paper's flat model: alpha = 1 on the leaves, 0 elsewhere
    return Hf, alpha


class PathModel:
    """One model kind (NHSVM or flat) over the lam grid: warm-started solves, predictions."""

    def __init__(self, name, X, leaf_sets, H, alpha, T=None, inference="lp"):
        self.name = name
        t0 = time.perf_counter()
        self.data = nhsvm.prepare(X, leaf_sets, H, alpha=alpha, multilabel=True, T=T)
        self.H = H
        self.inference = inference
        self.oracle = LabelSetOracle(H, "dp" if H.is_tree else inference)
        self.state = None
        self.fit_time = time.perf_counter() - t0  # cumulated over the path

    def fit(self, lam, tol, time_limit):
        t0 = time.perf_counter()
        res = nhsvm_fw.solve(self.data, lam, tol=tol, max_iter=10_000, time_limit=time_limit,
                             inference="dp" if self.H.is_tree else self.inference, state=self.state)
        self.state = res.state
        self.W = res.weights
        elapsed = time.perf_counter() - t0
        self.fit_time += elapsed
        return res, elapsed

    def predict(self, X, W=None):
        """Best label sets (indicators over self.H.nodes) and the time it took."""
        t0 = time.perf_counter()
        S = nhsvm.node_scores(self.W if W is None else W, X, self.data.alpha)
        Z = self.oracle.solve(S, verbose=False)
        return Z, time.perf_counter() - t0


def scores(space: ReducedLabelSpace, pred_sets, true_reduced, true_full, true_specific):
    H = space.H
    hp, hr, hf = hierarchical_precision_recall_f1(true_reduced, pred_sets, H)
    mf = micro_f1(true_specific, space.specific(pred_sets), H)
    hf_full = hierarchical_precision_recall_f1(true_full, pred_sets, H)[2]
    return hp, hr, hf, mf, hf_full


# ----------------------------------------------------------------------------- main
def main(quick: bool = False):
    paths = {s: DATA / f"cellcycle_GO.{s}.arff" for s in ("train", "valid", "test")}
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing:
        print(f"cellcycle_GO data absent ({', '.join(missing)}); nothing to benchmark")
        return
    t_start = time.perf_counter()
    k = 100 if quick else 50
    grid = (1000.0, 100.0, 10.0) if quick else (1e4, 3e3, 1e3, 300.0, 100.0, 30.0, 10.0, 3.0, 1.0)
    tol = 1e-2 if quick else 3e-3
    time_limit = 30.0 if quick else 90.0
    path_budget = 60.0 if quick else 180.0   # per model: smaller lams are skipped past it

    train, valid, test = (load_arff(p) for p in paths.values())
    H = train.hierarchy
    prep = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler()).fit(train.X)

    def features(ds):
        X = prep.transform(ds.X)
        return np.hstack([X, np.ones((X.shape[0], 1))])

    Xtr, Xva, Xte = features(train), features(valid), features(test)
    space = ReducedLabelSpace(H, train.y, k)
    print(f"cellcycle_GO: {train.n_samples} train / {valid.n_samples} valid / {test.n_samples} test "
          f"samples, {train.n_features} features (+1 constant), GO {H!r}")
    print("Reduction of the label space (train labels only):")
    print(space.describe(k))
    truth = {}
    for split, ds in (("valid", valid), ("test", test)):
        red = space.restrict(ds.y)
        truth[split] = (red, list(ds.y), space.specific(red))
    root = H.index(H.root)
    closed_test = H.closure(test.y, sparse=True)
    n_full = closed_test.sum() - closed_test[:, root].sum()
    n_kept = sum(len(r - {H.root}) for r in truth["test"][0])
    kept_share = n_kept / n_full
    print(f"  test labels keep {100 * kept_share:.1f}% of their closed GO terms (root excluded)")
    print(f"Training: pairwise BCFW on (10), leaf-Hamming loss, lam path {grid} warm-started, "
          f"certified relative gap {tol:g} or {time_limit:g}s per lam ({path_budget:g}s per path); "
          f"lam chosen on valid hF")

    Hf, alpha_flat = flat_hierarchy(space.F.leaves)
    models = [PathModel("NHSVM", Xtr, space.train_leaf_sets, space.F, None, T=nhsvm.DAG_T),
              PathModel("Flat", Xtr, space.train_leaf_sets, Hf, alpha_flat)]
    results = {}
    for model in models:
        best = None
        for lam in grid:
            if model.fit_time > path_budget:
                print(f"  {model.name:<6} lam={lam:<6g} skipped: the path took {model.fit_time:.0f}s "
                      f"(budget {path_budget:g}s)")
                continue
            res, t_fit = model.fit(lam, tol, time_limit)
            Z, _ = model.predict(Xva)
            pred = decode_for(model, space, Z)
            hp, hr, hf_valid = scores(space, pred, *truth["valid"])[:3]
            size = np.mean([len(p) - 1 for p in pred])
            print(f"  {model.name:<6} lam={lam:<6g} fit {t_fit:6.1f}s  passes {res.n_iter:>3}  "
                  f"gap {res.gap:8.1e}  valid hP {hp:.3f} hR {hr:.3f} hF {hf_valid:.3f}  "
                  f"terms/sample {size:5.1f}")
            sys.stdout.flush()
            if best is None or hf_valid > best[0]:
                best = (hf_valid, lam, model.W.copy(), res.gap)
        if best[1] == max(grid):
            print(f"  {model.name}: valid hF is best at the largest lam of the grid, the most "
                  f"regularized model tried (as lam grows, W ~ 1/lam and the predictions stop changing)")
        Z, t_pred = model.predict(Xte, W=best[2])
        results[model.name] = (best[1], best[3], model.fit_time, t_pred,
                               scores(space, decode_for(model, space, Z), *truth["test"]))

    # reference point: one constant label set, the kept terms in at least half of the training sets
    t0 = time.perf_counter()
    train_red = space.restrict(train.y)
    counts = {}
    for r in train_red:
        for term in r:
            counts[term] = counts.get(term, 0) + 1
    majority = frozenset(t for t, c in counts.items() if 2 * c >= len(train_red))
    results["Majority"] = (np.nan, np.nan, time.perf_counter() - t0, 0.0,
                           scores(space, [majority] * test.n_samples, *truth["test"]))

    print(f"\nTest ({test.n_samples} samples; fit = whole lam path incl. setup, predict = test inference; "
          f"Majority = the constant set of the kept terms in >= half of the training label sets, "
          f"{len(majority) - 1} terms)")
    print(f"  {'model':<8} {'lam':>6} {'gap':>8} {'fit s':>7} {'pred s':>7} {'hP':>6} {'hR':>6} {'hF':>6} "
          f"{'microF1(specific)':>18} {'hF full':>8}")
    for name, (lam, gap, t_fit, t_pred, (hp, hr, hf, mf, hf_full)) in results.items():
        lam, gap = (f"{lam:g}", f"{gap:.1e}") if np.isfinite(lam) else ("-", "-")
        print(f"  {name:<8} {lam:>6} {gap:>8} {t_fit:>7.1f} {t_pred:>7.2f} {hp:>6.3f} {hr:>6.3f} "
              f"{hf:>6.3f} {mf:>18.3f} {hf_full:>8.3f}")
    print(f"\ntotal {time.perf_counter() - t_start:.0f}s")


def decode_for(model: PathModel, space: ReducedLabelSpace, Z: np.ndarray) -> list[frozenset]:
    """Predicted indicators over the model's nodes -> closed sets of GO terms."""
    if model.H is space.F:
        return space.decode(Z)
    # flat: its leaves are F's leaves; close them upward in F
    leaves = np.array(model.H.leaves, dtype=object)
    leaf_cols = np.array([model.H.index(v) for v in leaves])
    sets = [frozenset(leaves[row].tolist()) for row in Z[:, leaf_cols]]
    return space.decode(space.F.closure(sets))


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
