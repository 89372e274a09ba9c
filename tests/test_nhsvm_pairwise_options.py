"""Settings of the NHSVM pairwise solver (:class:`hiercvx.solvers.nhsvm_fw.Options`) that would
stall it are refused with the setting's name; the valid ones still certify the optimum."""

from __future__ import annotations

import numpy as np
import pytest

import hiercvx as hc
from hiercvx.formulations import nhsvm
from hiercvx.solvers import nhsvm_fw

from labelset_cases import planted_sets, random_hierarchy


def _model():
    H = random_hierarchy(np.random.default_rng(0), 7, dag=False)
    X, Y = planted_sets(H, n=12, d=3, seed=1)
    return nhsvm.prepare(X, Y, H, multilabel=True)


@pytest.mark.parametrize("share", [1.0, 3.0, -0.1, float("nan")])
def test_an_eps_share_outside_zero_one_is_refused(share):
    with pytest.raises(hc.InputError, match="eps_share"):
        nhsvm_fw.solve(_model(), 0.5, method="pairwise", options=nhsvm_fw.Options(eps_share=share))


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_eps_shares_inside_zero_one_certify(share):
    res = nhsvm_fw.solve(_model(), 0.5, method="pairwise", tol=1e-8,
                         options=nhsvm_fw.Options(eps_share=share))
    assert res.converged
    assert (res.objective - res.lower_bound) / max(abs(res.objective), 1.0) <= 1e-8


@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_reading_ahead_leaves_the_iterates_unchanged(shape):
    """``ahead`` only reads data before it is used: the same steps, bit for bit."""
    H = random_hierarchy(np.random.default_rng(2), 12, dag=shape == "dag")
    X, Y = planted_sets(H, n=40, d=4, seed=3)
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    runs = [nhsvm_fw.solve(model, 0.5, method="pairwise", tol=1e-9, max_iter=30,
                           options=nhsvm_fw.Options(ahead=ahead)) for ahead in (0, 1, 8, 100)]
    for res in runs[1:]:
        assert res.n_iter == runs[0].n_iter
        assert res.objective == runs[0].objective and res.lower_bound == runs[0].lower_bound
        np.testing.assert_array_equal(res.weights, runs[0].weights)
