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


@pytest.mark.parametrize("name", ["eps_share", "program_eps_share"])
@pytest.mark.parametrize("share", [1.0, 3.0, -0.1, float("nan")])
def test_an_eps_share_outside_zero_one_is_refused(name, share):
    with pytest.raises(hc.InputError, match=name):
        nhsvm_fw.solve(_model(), 0.5, method="pairwise",
                       options=nhsvm_fw.Options(**{name: share}))


@pytest.mark.parametrize("inference", ["dp", "lp"])
def test_the_eps_share_of_the_oracle_kind_decides_the_visits(inference):
    """With a cheap label-set oracle (the tree DP) the sweeps drop blocks by ``eps_share``,
    with a program (19) per sample by ``program_eps_share``: the other share leaves every
    visit unchanged."""
    H = random_hierarchy(np.random.default_rng(4), 12, dag=inference == "lp")
    X, Y = planted_sets(H, n=40, d=4, seed=5)
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    used, unused = ("program_eps_share", "eps_share") if inference == "lp" else \
        ("eps_share", "program_eps_share")

    def visits(**shares):
        res = nhsvm_fw.solve(model, 0.5, method="pairwise", tol=1e-9, max_iter=15,
                             inference=inference, options=nhsvm_fw.Options(**shares))
        return res.history["visits"]

    base = visits(**{used: 0.1, unused: 0.1})
    assert visits(**{used: 0.1, unused: 0.9}) == base
    assert visits(**{used: 0.9, unused: 0.1}) != base


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


# ---------------------------------------------------------------- weights stored by feature

def _weights_cases():
    """``(name, model)``: label sets on a random tree and DAG (the sweeps' blocks read every
    node, or are held relative to the all-ones set), and on a wide tree with a loss that only
    counts missed nodes (its first vertices differ from the true sets on a few nodes: blocks
    whose support is a short list)."""
    from hiercvx.inference import DecomposableLoss
    cases = []
    for shape in ("tree", "dag"):
        H = random_hierarchy(np.random.default_rng(2), 12, dag=shape == "dag")
        X, Y = planted_sets(H, n=40, d=4, seed=3)
        cases.append((shape, nhsvm.prepare(X, Y, H, multilabel=True)))
    rng = np.random.default_rng(0)
    paths = [f"A{a}/B{a}{b}" for a in range(6) for b in range(5)]
    H = hc.Hierarchy.from_paths(paths)
    centers = 3 * rng.standard_normal((len(paths), 5))
    picks = rng.integers(len(paths), size=(60, 2))
    X = centers[picks[:, 0]] + rng.standard_normal((60, 5))
    Y = [{paths[a]} | ({paths[b]} if b % 3 == 0 else set()) for a, b in picks]
    missed = DecomposableLoss(np.zeros(len(H)), np.ones(len(H)))
    cases.append(("wide", nhsvm.prepare(X, Y, H, multilabel=True, loss=missed)))
    return cases


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("case", range(3))
def test_sweeps_keep_the_weights_the_dual_map_of_the_masses_in_either_layout(case, sparse):
    """After compiled sweeps from a filled cache, ``V`` (updated in place by every visit) equals
    ``W(beta)`` rebuilt from the cached masses, with the weights stored by node or by feature,
    one block at a time or in batches (dense rows; CSR rows are never batched);
    the three cases between them visit blocks of every kind (all nodes, all-ones reference,
    a short support list)."""
    import copy

    import scipy.sparse as sp

    from hiercvx.solvers._nhsvm_dual import vertex_model
    from hiercvx.solvers._nhsvm_kernels import pairwise_sweeps
    from hiercvx.solvers.primitives import row_sq_norms

    name, model = _weights_cases()[case]
    if sparse:
        model = nhsvm.prepare(sp.csr_matrix(model.X), [set(np.asarray(model.H.nodes)[t]) for t in
                                                    model.T], model.H, multilabel=True,
                              loss=model.loss)
    with pytest.warns(Warning):  # three passes do not converge
        res = nhsvm_fw.solve(model, 0.5, method="pairwise", max_iter=3, tol=1e-14)
    vm = vertex_model(model)
    state = res.extras["state"]
    state.sync_gram(vm)
    n, M = model.T.shape
    kinds = set()
    for i in range(n):
        kinds.add("ones" if state.sref[i] == 1 else "all" if 2 * state.slen[i] >= M else "list")
    for by_feature, batch in ((False, 1), (True, 1), (True, 3), (True, 16)):
        st = copy.deepcopy(state)
        V = st.rebuild_weights(vm)
        l = st.l.copy()
        pairwise_sweeps(np.arange(n, dtype=np.int64), 3, 5, vm.rows, V, vm.sqrt_alpha,
                        np.ascontiguousarray(model.T, dtype=float), st.cache, l,
                        row_sq_norms(vm.rows), 1.0, 0.0, 20, np.zeros(n), 2, by_feature, batch)
        st.resync(vm)
        rebuilt = st.rebuild_weights(vm)
        assert np.abs(V - rebuilt).max() <= 1e-10 * max(1.0, np.abs(rebuilt).max())
        np.testing.assert_allclose(l, st.l, rtol=0, atol=1e-10)
        assert not np.allclose(V, state.rebuild_weights(vm))  # the sweeps moved
    # a batch only reassociates the sums: one step per visit (no near-tied pairwise choices to
    # tip) gives the same sweep with or without batches
    runs = []
    for batch in (1, 3, 16):
        st = copy.deepcopy(state)
        V = st.rebuild_weights(vm)
        gaps = np.zeros(n)
        pairwise_sweeps(np.arange(n, dtype=np.int64), 1, 5, vm.rows, V, vm.sqrt_alpha,
                        np.ascontiguousarray(model.T, dtype=float), st.cache, st.l.copy(),
                        row_sq_norms(vm.rows), 1.0, 0.0, 1, gaps, 2, True, batch)
        runs.append((V, gaps))
    for V, gaps in runs[1:]:
        np.testing.assert_allclose(V, runs[0][0], rtol=0, atol=1e-12 * np.abs(V).max())
        np.testing.assert_allclose(gaps, runs[0][1], rtol=0, atol=1e-12 * np.abs(gaps).max())
    if name == "wide":
        assert "list" in kinds
    else:
        assert "all" in kinds


@pytest.mark.parametrize("structure", ["tree", "dag"])
def test_every_layout_and_batch_certifies_the_reference_optimum(structure):
    H = random_hierarchy(np.random.default_rng(11), 9, dag=structure == "dag")
    X, Y = planted_sets(H, n=24, d=3, seed=5)
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    ref = nhsvm.primal(X, Y, H, lam=0.5, multilabel=True).solve(verbose=False)
    for layout, batch in (("nodes", 1), ("features", 1), ("features", 16)):
        res = nhsvm_fw.solve(model, 0.5, method="pairwise", tol=1e-8, max_iter=3000,
                             options=nhsvm_fw.Options(layout=layout, batch=batch))
        assert res.converged
        assert res.objective == pytest.approx(ref.objective, rel=1e-5)
        assert res.lower_bound <= ref.objective * (1 + 1e-9)


@pytest.mark.parametrize("field, value", [("layout", "columns"), ("feature_layout_share", 1.5),
                                          ("feature_layout_share", float("nan")), ("batch", 0),
                                          ("batch", 2.5)])
def test_a_layout_setting_outside_its_range_is_refused(field, value):
    with pytest.raises(hc.InputError, match=field):
        nhsvm_fw.solve(_model(), 0.5, method="pairwise",
                       options=nhsvm_fw.Options(**{field: value}))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("full", [False, True])
def test_feature_major_products_and_updates_equal_numpy(full, sparse):
    import scipy.sparse as sp

    from hiercvx.solvers._nhsvm_feature_kernels import feature_products, feature_update
    from hiercvx.solvers.primitives import row_data

    rng = np.random.default_rng(4)
    X = rng.standard_normal((5, 11)) * (rng.random((5, 11)) < 0.6)
    rows = row_data(sp.csr_matrix(X) if sparse else X)
    mode, Xd, indptr, indices, xvals, _ = rows
    F = rng.standard_normal((11, 9))
    nodes = np.array([1, 4, 5, 8], dtype=np.int32)
    chosen = np.arange(9) if full else nodes
    out = np.full(9, np.nan)
    feature_products(mode, F, 2, Xd, indptr, indices, xvals, nodes, nodes.size, full, out)
    np.testing.assert_allclose(out[chosen], (X[2] @ F)[chosen], rtol=1e-12, atol=1e-12)
    coef = np.zeros(9)
    coef[nodes] = rng.standard_normal(nodes.size)
    expected = F + np.outer(X[3], coef)
    feature_update(mode, F, 3, Xd, indptr, indices, xvals, nodes, nodes.size, full, coef)
    np.testing.assert_allclose(F, expected, rtol=1e-12, atol=1e-12)


def test_batched_products_and_updates_equal_numpy():
    from hiercvx.solvers._nhsvm_feature_kernels import batch_products, batch_update

    rng = np.random.default_rng(6)
    X = rng.standard_normal((9, 7))
    F = rng.standard_normal((7, 13))
    rows = np.array([4, 0, 7, 2], dtype=np.int64)
    base, gram, xb = np.zeros((6, 13)), np.zeros((6, 6)), np.zeros((6, 7))
    batch_products(F, X, rows, 3, base, gram, xb)
    np.testing.assert_allclose(base[:3], X[rows[:3]] @ F, rtol=1e-12)
    np.testing.assert_allclose(gram[:3, :3], X[rows[:3]] @ X[rows[:3]].T, rtol=1e-12)
    coefs = np.zeros((6, 13))
    coefs[:3] = rng.standard_normal((3, 13))
    expected = F + X[rows[:3]].T @ coefs[:3]
    batch_update(F, 3, coefs, xb)
    np.testing.assert_allclose(F, expected, rtol=1e-12)
    assert not coefs.any()
