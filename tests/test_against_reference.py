"""The table that ties every paper's exact reference to its fast solver (DESIGN.md, "Layout").

One row per (paper, problem): a builder of the certified CVXPY reference and the fast solver
on the same seeded data.  Each row checks that the reference is certified and that the fast
solver agrees with it (objective, cross weak duality) via ``hiercvx.testing``.  The detailed
checks of each pair live in the paper's own test file; this table is the one place a new
paper adds a row.
"""

import numpy as np
import pytest

import hiercvx as hc
from hiercvx import testing
from hiercvx.formulations import hpsi, hsvm, multiclass, nhsvm, orthogonal
from hiercvx.solvers import crammer_singer, nhsvm_fw, rda, sibling_qp, working_set

TREE = hc.Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "A1": "A", "A2": "A", "B1": "B",
                                  "B2": "B", "B3": "B"})


def leaf_data(n=40, d=4, seed=0, multilabel=False):
    """Gaussian clusters, one per leaf of TREE (a shared direction per top-level branch)."""
    rng = np.random.default_rng(seed)
    leaves = np.array(TREE.leaves, dtype=object)
    centres = rng.standard_normal((len(leaves), d))
    y = leaves[np.arange(n) % len(leaves)]
    X = centres[np.arange(n) % len(leaves)] + 0.8 * rng.standard_normal((n, d))
    if multilabel:
        extra = leaves[rng.integers(0, len(leaves), n)]
        return X, [frozenset({a, b}) for a, b in zip(y, extra)]
    return X, y


def row_multiclass():
    X, y = leaf_data()
    y_int = np.searchsorted(np.unique(y), y)
    return (multiclass.primal(X, y_int, C=1.0).solve(),
            crammer_singer.solve(X, y_int, C=1.0, tol=1e-8), 1e-6)


def row_hsvm():
    X, Y = leaf_data(multilabel=True)
    ref = hsvm.primal(X, Y, TREE, C=1.0).solve()
    _, _, data = hsvm.prepare(X, Y, TREE)
    return ref, working_set.solve_hsvm(X, data, C=1.0, tol=1e-8), 1e-6


def row_hsvm_dag():
    dag = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"),
                                   ("B", "z")])
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3))
    Y = [{"x", "y", "z"}.difference({("x", "y", "z")[i % 3]}) if i % 4 == 0 else {("x", "y", "z")[i % 3]}
         for i in range(30)]
    ref = hsvm.primal(X, Y, dag, C=0.5, rescaling="margin").solve()
    _, _, data = hsvm.prepare(X, Y, dag, rescaling="margin")
    return ref, working_set.solve_hsvm(X, data, C=0.5, tol=1e-8), 1e-6


def row_orthogonal():
    X, y = leaf_data(n=24, d=3)
    ref = orthogonal.primal(X, y, TREE, C=1.0).solve()
    return ref, rda.solve(X, y, TREE, method="orthogonal", C=1.0, tol=1e-5), 1e-4


def row_treeloss():
    X, y = leaf_data(n=24, d=3)
    ref = orthogonal.treeloss(X, y, TREE, C=1.0).solve()
    return ref, rda.solve(X, y, TREE, method="treeloss", C=1.0, tol=1e-5), 1e-4


def row_nhsvm():
    X, y = leaf_data()
    ref = nhsvm.primal(X, y, TREE, lam=0.1).solve()
    return ref, nhsvm_fw.solve(X, y, TREE, lam=0.1, tol=1e-8), 1e-6


def row_hpsi():
    X, y = leaf_data()
    ref = hpsi.primal(X, y, TREE, C=1.0).solve()
    return ref, sibling_qp.solve_qp(X, y, TREE, C=1.0, tol=1e-8), 1e-6


ROWS = {
    "multiclass / crammer_singer": row_multiclass,
    "hsvm / working_set (tree, multi-label)": row_hsvm,
    "hsvm / working_set (DAG, margin rescaling)": row_hsvm_dag,
    "orthogonal / rda": row_orthogonal,
    "orthogonal.treeloss / rda": row_treeloss,
    "nhsvm / nhsvm_fw": row_nhsvm,
    "hpsi / sibling_qp": row_hpsi,
}


@pytest.mark.parametrize("name", list(ROWS))
def test_fast_solver_agrees_with_reference(name):
    ref, fast, rtol = ROWS[name]()
    testing.assert_certified(ref)
    assert fast.converged, f"{name}: {fast}"
    testing.assert_fast_matches_reference(fast, ref, rtol=rtol)
