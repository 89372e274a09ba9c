"""``hiercvx demo`` / ``make demo``: the main job on built-in data, printed readably.

Synthetic data of the Cai thesis (section 7.1.1) -> the hierarchical SVM (thesis (4.10))
as a certified CVXPY reference -> the fast working-set solver checked against it -> the
scikit-learn estimator and its hierarchical F1.
"""

from __future__ import annotations

import time

import numpy as np


def run_demo(verbose: bool = True, n_samples: int = 150, random_state: int = 0) -> dict:
    from . import metrics
    from .datasets import make_cai_synthetic
    from .estimators import HierarchicalSVC
    from .formulations import hsvm
    from .solvers.working_set import solve_hsvm

    out = print if verbose else (lambda *a, **k: None)
    ds = make_cai_synthetic(n_samples=n_samples, n_features=10, branching=3, depth=2,
                            random_state=random_state)
    H = ds.hierarchy
    n_labels = np.mean([len(s) for s in ds.y])
    out(f"Data: Cai thesis 7.1.1 synthetic, {ds.X.shape[0]} samples x {ds.X.shape[1]} features, "
        f"{H!r}, {n_labels:.2f} labels per sample\n")

    out("Reference: hierarchical SVM primal (thesis (4.10)), half symmetric-difference loss, "
        "unit-norm class attributes, C = 1")
    prob = hsvm.primal(ds.X, ds.y, H, C=1.0)
    sol = prob.solve()
    out(sol.certificate() + "\n")

    classes, Lam, data = hsvm.prepare(ds.X, ds.y, H)
    t0 = time.perf_counter()
    fast = solve_hsvm(ds.X, data, C=1.0, tol=1e-7)
    t_fast = time.perf_counter() - t0
    rel = abs(fast.objective - sol.objective) / max(1.0, abs(sol.objective))
    out(f"Fast solver (thesis Algorithm 2): objective {fast.objective:.10g}, certified gap "
        f"{fast.gap:.1e}, {fast.n_iter} passes, {t_fast:.3f}s; relative difference to the "
        f"reference {rel:.1e}\n")

    n_train = int(0.7 * len(ds.y))
    est = HierarchicalSVC(hierarchy=H).fit(ds.X[:n_train], ds.y[:n_train])
    pred = est.predict(ds.X[n_train:])
    hf1 = metrics.hierarchical_f1(ds.y[n_train:], pred, hierarchy=H)
    out(f"Estimator: HierarchicalSVC(solver='fast') trained on {n_train} samples; hierarchical F1 "
        f"on the other {len(ds.y) - n_train}: {hf1:.3f} (gap_ {est.gap_:.1e})")
    return {"reference": sol, "fast": fast, "hierarchical_f1": hf1}
