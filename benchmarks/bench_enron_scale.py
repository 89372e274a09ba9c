"""How close to hard-margin a label-set fit is, on text features: ``NormalizedHierarchicalSVC``
and ``HierarchicalSVC`` at their defaults on Enron_corr's label sets, beside one-vs-rest
``LinearSVC`` over the nodes fitted in the same run, with the features in three forms.

Scaling every row by ``s`` is the same hinge problem at ``C s^2``, so ``C max_i ||x_i||^2``
(about the number of features for standardized data) says how close to hard-margin a fit is.
Enron_corr has about as many training messages (988) as word features (1001): standardized,
every label set can be separated and the fit at ``C = 1`` is nearly hard-margin.  The rows:

- ``standardized``: mean imputation and ``StandardScaler`` fitted on train + valid, ``C = 1``;
- ``unit rows``: the same, then ``Normalizer`` (rows of unit length, as the
  ``flat-vs-hierarchical`` reproduction does), ``C = 1``;
- ``standardized, C = 1/d``: the standardized features at ``C = 1 / n_features``.

Each row: wall seconds of each fit (compiled kernels warmed up before the clock), passes, the
certified relative gap (and whether it reached the default ``tol``), ``HierarchicalSVC``
capped at ``--max-iter`` passes; the one-vs-rest fit's seconds and how many of its node
problems stopped at LIBLINEAR's ``max_iter`` (at the row's ``C``); the ratio of each estimator
to it.

    .venv/bin/python benchmarks/bench_enron_scale.py [--max-iter 10000] [--forms standardized unit small_c]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from hiercvx.datasets import load_arff
from hiercvx.estimators import HierarchicalSVC, NormalizedHierarchicalSVC

from _rows import converged, warm_up
from bench_nhsvm_labelsets import DATA, Clock, one_vs_rest

FORMS = ("standardized", "unit", "small_c")


def load(form: str):
    """Enron_corr train + valid in ``form`` and the ``C`` of that row."""
    train, test = (load_arff(DATA / f"Enron_corr_{s}.arff") for s in ("trainvalid", "test"))
    steps = [SimpleImputer(), StandardScaler()] + ([Normalizer()] if form == "unit" else [])
    prep = make_pipeline(*steps).fit(train.X)
    X, Xte = prep.transform(train.X), prep.transform(test.X)
    X, Xte = (A.toarray() if hasattr(A, "toarray") else np.asarray(A) for A in (X, Xte))
    C = 1.0 / X.shape[1] if form == "small_c" else 1.0
    return train.hierarchy, X, list(train.y), Xte, C


def fit(cls, H, X, y, Xte, C, max_iter):
    est = cls(hierarchy=H, C=C)
    if cls is HierarchicalSVC:
        est.set_params(max_iter=max_iter)
    warm_up(est, X, y, Xte)
    with Clock() as clock, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # reported in the row instead
        est.fit(X, y)
    return est, clock


def run(form: str, max_iter: int) -> None:
    H, X, y, Xte, C = load(form)
    peer, _, _, n_nodes, stopped = one_vs_rest(H, X, y, Xte, C=C)
    load_ = C * float(np.einsum("ij,ij->i", X, X).max())
    print(f"\n{form}: {X.shape[0]} samples x {X.shape[1]} features, C = {C:.3g}, "
          f"C max ||x||^2 = {load_:.3g}")
    print(f"  one-vs-rest LinearSVC over {n_nodes} nodes: {peer.wall:.1f} s "
          f"({stopped} stopped at max_iter)")
    for cls in (NormalizedHierarchicalSVC, HierarchicalSVC):
        est, clock = fit(cls, H, X, y, Xte, C, max_iter)
        state = "converged" if converged(est) else "not converged"
        print(f"  {cls.__name__:27s} {clock.wall:8.1f} s  {clock.wall / peer.wall:7.2f}x  "
              f"{est.n_iter_:6d} passes  gap {est.gap_:.1e} ({state}, tol {est.tol:g})",
              flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-iter", type=int, default=10000,
                        help="HierarchicalSVC's passes at most (its default)")
    parser.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS))
    args = parser.parse_args(argv)
    for form in args.forms:
        run(form, args.max_iter)


if __name__ == "__main__":
    main()
