"""Node scores of the hierarchical estimators on the Clus-HMC yeast data: AU(PRC) of every
decoding of ``node_decision_function`` beside one-vs-rest baselines, in one run.

Data: cellcycle_FUN (FunCat tree) and cellcycle_GO (GO DAG) from the Clus-HMC splits, label
sets reduced to their most specific members, features mean-imputed and standardized on the
training rows of each fit.  Protocol (that of ``hiercvx reproduce hmc-aupr``): each
hyperparameter point (``C``; ``sigma`` of the Gaussian kernel as multiples of the median
distance) is fitted on train and scored on valid; the point with the best calibrated AU(PRC)
on valid is refitted on train + valid and scored on test.  One fit gives every decoding:

* ``calibrated``: the default, :class:`hiercvx.metrics.NodeCalibration` (training node
  frequencies plus a fitted slope on the estimator's node margins);
* ``max_marginal``, ``threshold``, ``standardized``, ``best_class``:
  :func:`hiercvx.metrics.node_margins` (``best_class`` is the best class at or below a node);
* with ``--cv K``, ``cv-pooled`` and ``cv-per-node``: the calibration refitted on cross-fitted
  margins (``K`` more fits, :meth:`cross_fitted_node_margins`), one pooled pair or a pair per
  node (``shrinkage`` 1, :func:`hiercvx.metrics.fit_node_calibration`).

Rows: ``HierarchicalSVC`` (Cai thesis (4.10) on label sets; linear, and Gaussian on the
low-rank kernel factor of :mod:`hiercvx.solvers.low_rank_kernel`), ``NormalizedHierarchicalSVC``
(NHSVM paper (10); linear), ``TopDownSVC`` (Cai thesis 7.4.2; linear, and on the exact
Gaussian kernel), ``MulticlassSVC`` on
the label sets (flat Crammer-Singer; node scores by the public :mod:`hiercvx.metrics`
functions), one-vs-rest
``LinearSVC`` and ``LogisticRegression`` over the nodes with a positive in training (linear, and
logistic on Nystrom features of the Gaussian kernel), ``node-ridge``
(:class:`~hiercvx.estimators.NodeKernelRidge` on the exact Gaussian kernel, ``alpha = 1 / C``;
decodings ``calibrated`` and ``ridge``), and ``prior`` (every sample scored by the
training frequency of each node: the floor a ranking must beat).  The published AU(PRC) of
C-HMCNN (Giunchiglia & Lukasiewicz, NeurIPS 2020) is printed beside; their evaluation leaves
out the root and, on GO, the three namespace roots (every gene of cellcycle_GO holds them):
``--skip-universal`` leaves out the nodes every training sample holds, the same nodes here.

    .venv/bin/python benchmarks/bench_node_scores.py [--data cellcycle_FUN] [--rows hsvm,ovr]
        [--C 0.1,1] [--sigma 1] [--tol 1e-3] [--n 400] [--cv 5]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from hiercvx.estimators import (HierarchicalSVC, MulticlassSVC, NodeKernelRidge,
                                NormalizedHierarchicalSVC, TopDownSVC)
from hiercvx.kernels import Kernel, median_heuristic
from hiercvx.metrics import (NODE_MARGINS, au_prc, evaluated_nodes, fit_node_calibration,
                             node_log_odds, node_margins)
from hiercvx.reproduce.hmc_aupr import PUBLISHED, load_splits
from hiercvx.solvers import low_rank_kernel, margin_engine

DECODINGS = ("calibrated",) + NODE_MARGINS
CV_DECODINGS = ("cv-pooled", "cv-per-node")


def _hsvm(H, C, sigma, args):
    if sigma is None:
        return HierarchicalSVC(hierarchy=H, C=C, tol=args.tol)
    options = margin_engine.Options(low_rank=low_rank_kernel.Options(max_rank=args.rank,
                                                                     from_samples=0))
    return HierarchicalSVC(hierarchy=H, C=C, tol=args.tol, kernel=Kernel("rbf", sigma=sigma),
                           solver_options=options)


ROWS = {  # name -> (make(H, C, sigma, args), Gaussian?, flat one-vs-rest?)
    "hsvm": (_hsvm, False, False),
    "hsvm-rbf": (_hsvm, True, False),
    "nhsvm": (lambda H, C, s, a: NormalizedHierarchicalSVC(hierarchy=H, C=C, tol=a.tol), False, False),
    "topdown": (lambda H, C, s, a: TopDownSVC(hierarchy=H, C=C, tol=a.tol), False, False),
    "topdown-rbf": (lambda H, C, s, a: TopDownSVC(hierarchy=H, C=C, tol=a.tol,
                                                  kernel=Kernel("rbf", sigma=s)), True, False),
    "multiclass": (lambda H, C, s, a: _FlatLabelSets(H, C, a.tol), False, False),
    "ovr-linearsvc": (lambda H, C, s, a: OneVsRestClassifier(LinearSVC(C=C)), False, True),
    "ovr-logistic": (lambda H, C, s, a: OneVsRestClassifier(LogisticRegression(C=C, max_iter=1000)),
                     False, True),
    "ovr-logistic-rbf": (lambda H, C, s, a: make_pipeline(
        Nystroem(gamma=0.5 / s ** 2, n_components=a.rank, random_state=0),
        OneVsRestClassifier(LogisticRegression(C=C, max_iter=1000))), True, True),
    "node-ridge": (lambda H, C, s, a: NodeKernelRidge(hierarchy=H, alpha=1.0 / C,
                                                      kernel=Kernel("rbf", sigma=s)), True, False),
}


class _FlatLabelSets:
    """``MulticlassSVC`` on the label sets (flat: no hierarchy), given node scores through the
    public functions: :func:`hiercvx.metrics.node_margins` of its class scores, calibrated by
    :func:`hiercvx.metrics.fit_node_calibration` on the training samples."""

    def __init__(self, H, C, tol):
        self.H, self.est = H, MulticlassSVC(C=C, tol=tol)

    def fit(self, X, y):
        self.est.fit(X, y)
        margins = node_margins(self.est.decision_function(X), self.est.classes_, self.H,
                               method="standardized")
        self.calibration = fit_node_calibration(margins, y, self.H)
        return self

    def node_decision_function(self, X, method="calibrated"):
        m = node_margins(self.est.decision_function(X), self.est.classes_, self.H,
                         method="standardized" if method == "calibrated" else method,
                         threshold=self.est.threshold_)
        return self.calibration.scores(m) if method == "calibrated" else m


def _scores(name, model, X, H, nodes, cross_fitted=None) -> dict:
    """``{decoding: (n, n_nodes) scores}`` of a fitted row on ``X`` (``cross_fitted``:
    ``{decoding: NodeCalibration}`` fitted on cross-fitted margins)."""
    if ROWS[name][2]:
        S = np.asarray(model.decision_function(X), dtype=float).reshape(X.shape[0], -1)
        out = np.full((X.shape[0], len(H.nodes)), S.min() - 1.0)
        out[:, np.flatnonzero(nodes)] = S
        return {"ovr": out}
    if isinstance(model, NodeKernelRidge):
        return {d: model.node_decision_function(X, method=d) for d in ("calibrated", "ridge")}
    out = {d: model.node_decision_function(X, method=d) for d in DECODINGS}
    for d, calibration in (cross_fitted or {}).items():
        out[d] = calibration.scores(model.node_decision_function(X, method=calibration.method))
    return out


def _cross_fitted(model, X, y, H, args) -> dict:
    """``{decoding: NodeCalibration}`` on the cross-fitted margins of a hierarchical row."""
    if not args.cv or not hasattr(model, "cross_fitted_node_margins"):
        return {}
    margins = model.cross_fitted_node_margins(X, y, cv=args.cv)
    method = model._node_margin_method
    return {"cv-pooled": fit_node_calibration(margins, y, H, method=method),
            "cv-per-node": fit_node_calibration(margins, y, H, method=method, shrinkage=1.0)}


def _fit(name, H, C, sigma, train, test, args):
    """``({decoding: AU(PRC) on test}, fit seconds)`` of row ``name`` trained on ``train``."""
    (X, y), (X_test, y_test) = train, test
    prep = make_pipeline(SimpleImputer(), StandardScaler()).fit(X)
    X, X_test = prep.transform(X), prep.transform(X_test)
    nodes = _evaluated(y, H, args)
    model = ROWS[name][0](H, C, sigma, args)
    t0 = time.perf_counter()
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="Label .* is present in all training examples")
        if ROWS[name][2]:
            model.fit(X, np.asarray(H.closure(y), dtype=int)[:, nodes])
        else:
            model.fit(X, y)
        seconds = time.perf_counter() - t0
        cross_fitted = _cross_fitted(model, X, y, H, args)
    scores = _scores(name, model, X_test, H, nodes, cross_fitted)
    return {d: au_prc(y_test, S, H, nodes=nodes) for d, S in scores.items()}, seconds


def _evaluated(y, H, args):
    """The nodes scored: those with a positive in ``y``, the nodes every sample of ``y`` holds
    (on GO the three namespace roots, which C-HMCNN's evaluation leaves out) only without
    ``args.skip_universal``."""
    nodes = evaluated_nodes(y, H, with_positives=True)
    if not args.skip_universal:
        universal = np.asarray(H.closure(y), dtype=bool).all(axis=0)
        universal[H.index(H.root)] = False
        nodes |= universal
    return nodes


def _subsample(part, n, rng):
    X, y = part
    if n is None or n >= len(y):
        return part
    take = np.sort(rng.permutation(len(y))[:n])
    return X[take], [y[i] for i in take]


def run(data: str, args) -> None:
    splits = load_splits(data)
    H = splits.hierarchy
    rng = np.random.default_rng(0)
    train = _subsample(splits.parts["train"], args.n, rng)
    valid = _subsample(splits.parts["valid"], args.n, rng)
    test = splits.parts["test"]
    both = (np.vstack([train[0], valid[0]]), train[1] + valid[1])
    Z = make_pipeline(SimpleImputer(), StandardScaler()).fit_transform(train[0])
    median = median_heuristic(Z)
    y_both, y_test = both[1], test[1]
    prior = np.broadcast_to(node_log_odds(y_both, H), (len(y_test), len(H.nodes)))
    print(f"{data}: {len(train[1])} train, {len(valid[1])} valid, {len(y_test)} test, "
          f"{len(H.nodes)} nodes; median distance {median:.3g}; published C-HMCNN "
          f"{PUBLISHED.get((data, 'C-HMCNN (published)'), float('nan')):.3f}", flush=True)
    columns = DECODINGS + (CV_DECODINGS if args.cv else ()) + ("ridge",)
    print(f"{'row':18s} {'C':>6s} {'sigma':>6s} {'valid':>6s} {'fit s':>7s} | test AU(PRC): "
          + " ".join(f"{d:>12s}" for d in columns), flush=True)
    print(f"{'prior':18s} {'':6s} {'':6s} {'':6s} {'':7s} | "
          f"{au_prc(y_test, prior, H, nodes=_evaluated(y_both, H, args)):12.4f}", flush=True)
    for name in args.rows:
        gaussian = ROWS[name][1]
        grid = [(C, f * median if gaussian else None) for C in args.C
                for f in (args.sigma if gaussian else [1.0])]
        valid_scores = [] if len(grid) > 1 else [float("nan")]  # one point: no valid fit
        for C, sigma in grid if len(grid) > 1 else []:
            values, seconds = _fit(name, H, C, sigma, train, valid, args)
            key = "ovr" if "ovr" in values else "calibrated"
            valid_scores.append(values[key])
            if args.verbose:
                print(f"  {name} C={C:g} sigma={sigma} valid {values} ({seconds:.0f} s)", flush=True)
        best = int(np.argmax(valid_scores))
        C, sigma = grid[best]
        values, seconds = _fit(name, H, C, sigma, both, test, args)
        cells = (f"{values['ovr']:12.4f}" if "ovr" in values
                 else " ".join(f"{values[d]:12.4f}" if d in values else f"{'-':>12s}"
                               for d in columns))
        print(f"{name:18s} {C:6g} {'' if sigma is None else f'{sigma:.3g}':>6s} "
              f"{valid_scores[best]:6.4f} {seconds:7.1f} | {cells}", flush=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="cellcycle_FUN,cellcycle_GO")
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--C", default="0.1,1", help="C grid (every row)")
    p.add_argument("--sigma", default="1", help="Gaussian widths, multiples of the median distance")
    p.add_argument("--tol", type=float, default=1e-3, help="certified relative gap of the fits")
    p.add_argument("--rank", type=int, default=1000, help="kernel factor / Nystrom rank")
    p.add_argument("--n", type=int, default=None, help="subsample train and valid to n samples")
    p.add_argument("--verbose", action="store_true", help="print every grid point")
    p.add_argument("--cv", type=int, default=0,
                   help="folds of the cross-fitted calibrations (0: none)")
    p.add_argument("--skip-universal", action="store_true",
                   help="leave out the nodes every training sample holds (GO's namespace roots)")
    args = p.parse_args(argv)
    args.rows = args.rows.split(",")
    unknown = sorted(set(args.rows) - set(ROWS))
    if unknown:
        p.error(f"unknown rows {unknown}; choose among {list(ROWS)}")
    args.C = [float(c) for c in args.C.split(",")]
    args.sigma = [float(s) for s in args.sigma.split(",")]
    for data in args.data.split(","):
        run(data, args)


if __name__ == "__main__":
    main()
