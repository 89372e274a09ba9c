"""Dogfood of the public testing API (:mod:`hiercvx.testing`): five classic bugs planted in small
CVXPY-free solvers are each caught by ``check_solver`` with a message that points at the bug;
the correct versions and the project's own fast solvers pass; ``kkt_report`` and ``objective``
give numbers a test can assert on; the strategies and the pytest plugin work from the package.

The small solvers maximize the dual of the pairwise-ranking SVM (Cai thesis (4.15); Crammer–Singer
with ``Lam = I`` and the 0/1 loss) with SciPy's SLSQP and recover the weights by (4.12),
``W = sum_p alpha_p (Lam_y - Lam_ybar)^T x_i``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from hiercvx import class_attributes, methods, testing
from hiercvx.exceptions import InputError
from hiercvx.losses import loss_matrix
from hiercvx.result import Solution
from hiercvx.testing import check_solver, kkt_report, problems_for
from hiercvx.testing.strategies import chains, datasets, one_child_trees, stars

BUGS = ("bias", "sample_weight", "loss", "ancestors", "sign")


@pytest.fixture(autouse=True)
def one_blas_thread():
    """One BLAS thread: SLSQP and the project's solvers take thousands of steps on arrays of a
    few hundred numbers here, where a second thread only adds its wake-ups (and on a busy
    machine waits for a core)."""
    with threadpool_limits(limits=1):
        yield


# ------------------------------------------------------------------ the small solvers
def dual_svm(X, Y, Lam, loss, budget, rescaling="slack", recovery_sign=-1.0):
    """``(W, dual value)``: the margin-model dual by SLSQP; ``recovery_sign`` is the sign of the
    irrelevant class's term in the weight recovery (4.12) (-1 is right)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    pi, py, pyb = np.nonzero(Y[:, :, None] & ~Y[:, None, :])
    delta = loss[py, pyb]
    offset = np.ones(len(pi)) if rescaling == "slack" else delta
    cost = 1.0 / delta if rescaling == "slack" else np.ones(len(pi))
    # row p of D is vec((Lam_y - Lam_ybar)^T x_i): W(alpha) = reshape(D^T alpha)
    D = np.einsum("pm,pd->pmd", Lam[py] - Lam[pyb], X[pi]).reshape(len(pi), -1)
    A = (pi[None, :] == np.arange(X.shape[0])[:, None]) * cost[None, :]

    def negative_dual(a):
        w = D.T @ a
        return 0.5 * w @ w - offset @ a, D @ w - offset

    res = minimize(negative_dual, np.zeros(len(pi)), jac=True, method="SLSQP",
                   bounds=[(0, None)] * len(pi),
                   constraints=[{"type": "ineq", "fun": lambda a: budget - A @ a, "jac": lambda a: -A}],
                   options={"ftol": 1e-15, "maxiter": 3000})
    if recovery_sign != -1.0:
        D = np.einsum("pm,pd->pmd", Lam[py] + Lam[pyb], X[pi]).reshape(len(pi), -1)
    return (D.T @ res.x).reshape(Lam.shape[1], X.shape[1]), -float(res.fun)


def fit_multiclass(X, y, H=None, C=1.0, sample_weight=None, class_weight=None, fit_intercept=False,
                   intercept_scaling=1.0, bug=None):
    """Crammer–Singer (LIBLINEAR's MCSVM_CS objective, with its bias feature)."""
    classes, yi = np.unique(np.asarray(y), return_inverse=True)
    n, q = len(yi), len(classes)
    ignore_weights = sample_weight is None or bug == "sample_weight"
    sw = np.ones(n) if ignore_weights else np.asarray(sample_weight, dtype=float)
    cw = np.ones(q)
    if isinstance(class_weight, dict):
        cw = np.array([class_weight[c] for c in classes], dtype=float)
    elif class_weight == "balanced":
        cw = sw.sum() / (q * np.bincount(yi, weights=sw, minlength=q))
    per_sample = sw * cw[yi]
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    with_bias = fit_intercept and bug != "bias"
    if with_bias:
        Xd = np.hstack([Xd, np.full((n, 1), intercept_scaling)])
    Y = np.zeros((n, q), dtype=bool)
    Y[np.arange(n), yi] = True
    W, dual = dual_svm(Xd, Y, np.eye(q), 1.0 - np.eye(q), C * per_sample,
                       recovery_sign=+1.0 if bug == "sign" else -1.0)
    if bug == "sign":  # reports its (correct) dual value next to wrongly recovered weights
        return Solution(objective=dual, lower_bound=dual, weights=W, solver="slsqp")
    if not fit_intercept:
        return W
    if not with_bias:
        return {"weights": W, "intercept": np.zeros(q)}
    return {"weights": W[:, :-1], "intercept": intercept_scaling * W[:, -1]}


def fit_hsvm(X, Y, H, C=1.0, rescaling="slack", bug=None):
    """The Cai–Hofmann hierarchical SVM (4.10): classes the leaves, attributes ``class_depth``,
    loss ``half_symmetric`` (the registry's defaults); node weights in ``H.nodes`` order."""
    classes = list(H.leaves)
    Ybool = np.zeros((X.shape[0], len(classes)), dtype=bool)
    for i, labels in enumerate(Y):
        for label in (labels if isinstance(labels, (set, frozenset)) else [labels]):
            Ybool[i, classes.index(label)] = True
    Lam = class_attributes(H, classes, scheme="class_depth")
    if bug == "ancestors":  # each class keeps its own node only
        own = np.zeros_like(Lam)
        own[np.arange(len(classes)), [H.nodes.index(c) for c in classes]] = 1.0
        Lam = Lam * own
    loss = loss_matrix(H, loss="zero_one" if bug == "loss" else "half_symmetric", classes=classes)
    W, _ = dual_svm(X, Ybool, Lam, loss, C * np.ones(X.shape[0]), rescaling)
    return W


def failure(fit, method, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        check_solver(fit, method, **kwargs)
    return str(info.value)


def assert_first_line(message: str, method: str):
    first = message.splitlines()[0]
    assert first.startswith(f"check_solver({method!r}) failed on ")
    for part in ("seed=", "n=", "d=", "your objective", "reference"):
        assert part in first, first
    assert "array(" not in message and len(message) < 6000  # short: no arrays dumped


# ------------------------------------------------------------------ the correct solvers pass
@pytest.mark.slow  # 37 s loaded; the project solvers pass check_solver below
def test_correct_small_solvers_pass():
    outcomes = check_solver(fit_multiclass, "multiclass")
    assert all(o.ok for o in outcomes) and not any(o.skipped for o in outcomes)
    outcomes = check_solver(fit_hsvm, "hsvm")
    assert {o.problem.structure for o in outcomes} == set(methods.get("hsvm").structures)
    check_solver(fit_multiclass, "multiclass", structures=["flat"],
                 problems=problems_for("multiclass", structures=["flat"], fit_intercept=True))


# ------------------------------------------------------------------ five planted bugs
# the planted-bug checks run on problems of 12 samples: the cost of the small solvers' SLSQP
# duals grows fast with their pairs, and the diagnoses do not depend on the size
def test_bias_forgotten_is_caught():
    msg = failure(partial(fit_multiclass, bug="bias"), "multiclass",
                  problems=problems_for("multiclass", structures=["flat"], fit_intercept=True, n=12))
    assert_first_line(msg, "multiclass")
    assert "your intercept differs from the optimum's" in msg
    assert "diagnosis: the intercept is not fitted" in msg


@pytest.mark.slow  # 14 s; the other planted bugs are caught in the default run
def test_C_not_scaled_by_sample_weight_is_caught():
    msg = failure(partial(fit_multiclass, bug="sample_weight"), "multiclass")
    assert_first_line(msg, "multiclass")
    assert "sample_weight=<array" in msg.splitlines()[0] or "sample_weight" in msg
    assert "every failing problem sets sample_weight, no passing one does" in msg
    assert "diagnosis: sample_weight is ignored" in msg


def test_wrong_loss_is_caught():
    msg = failure(partial(fit_hsvm, bug="loss"), "hsvm",
                  problems=problems_for("hsvm", structures=["tree"], n=12))
    assert_first_line(msg, "hsvm")
    assert "diagnosis: the wrong loss" in msg and "loss='zero_one'" in msg


def test_ancestors_missing_is_caught():
    msg = failure(partial(fit_hsvm, bug="ancestors"), "hsvm",
                  problems=problems_for("hsvm", structures=["tree"], n=12))
    assert_first_line(msg, "hsvm")
    assert "diagnosis: ancestors are missing" in msg


def test_sign_error_in_dual_recovery_is_caught():
    msg = failure(partial(fit_multiclass, bug="sign"), "multiclass",
                  problems=problems_for("multiclass", structures=["flat"], n=12))
    assert_first_line(msg, "multiclass")
    assert "reports objective" in msg and "recovered from the dual" in msg


def test_failure_shows_a_smaller_case_and_a_kkt_report():
    msg = failure(partial(fit_hsvm, bug="loss"), "hsvm", structures=["tree"])
    first_n = int(msg.splitlines()[0].split("n=")[1].split(",")[0])
    minimal = next(line for line in msg.splitlines() if line.startswith("smallest failing variant"))
    assert int(minimal.split("n=")[1].split()[0]) < first_n
    assert "reproduce: p = hiercvx.testing.problems_for('hsvm'" in msg
    assert "optimality:" in msg and "weight rows farthest" in msg


# ------------------------------------------------------------------ objective and kkt_report
def test_objective_and_kkt_report_at_the_optimum_and_off_it():
    p = problems_for("hsvm", structures=["tree"], n=16)[0]
    ref = p.reference()
    assert testing.objective("hsvm", ref.weights, p.X, p.Y, p.H, **p.options) == pytest.approx(ref.objective)
    good = kkt_report("hsvm", ref, p.X, p.Y, p.H, reference=ref, **p.options)
    assert good.ok() and good.max_slack_difference < 1e-5 and good.max_weight_difference < 1e-4
    W = fit_hsvm(p.X, p.Y, p.H, bug="loss", **p.options)
    bad = kkt_report("hsvm", W, p.X, p.Y, p.H, **p.options)
    assert not bad.ok() and bad.suboptimality > 1e-3
    excess = [v.excess for v in bad.optimality]
    assert excess == sorted(excess, reverse=True) and bad.optimality[0].sample in range(16)
    assert " vs " in bad.optimality[0].pair  # the class pair (relevant vs irrelevant)
    text = str(bad)
    assert text.splitlines()[0].startswith("hsvm on given n=16") and "certified optimum" in text
    assert bad.max_violation == pytest.approx(float(bad.slacks.max()))


def test_kkt_report_without_reference_lists_margin_violations():
    p = problems_for("multiclass", structures=["flat"], n=12)[0]
    report = kkt_report("multiclass", np.zeros((5, p.d)), p.X, p.Y, p.H, reference=False, **p.options)
    assert report.n_violated == 12 and report.max_violation == pytest.approx(1.0)
    assert np.isnan(report.reference_objective) and "margin: 12 of 12 samples" in str(report)


def test_results_of_every_documented_kind_are_accepted():
    p = problems_for("multiclass", structures=["flat"], n=12)[0]
    ref = p.reference()
    for result in (ref, ref.objective, ref.weights, {"weights": ref.weights}):
        assert check_solver(lambda X, Y, H, result=result, **kw: result, "multiclass", problems=[p])[0].ok
    testing.assert_fast_matches_reference(ref.objective, ref)  # a float: no AttributeError
    testing.assert_same_optimum(ref.objective, ref)
    with pytest.raises(AssertionError, match="shape"):
        check_solver(lambda X, Y, H, **kw: ref.weights.T, "multiclass", problems=[p])


def test_a_solver_that_raises_or_takes_no_C_is_reported():
    p = problems_for("multiclass", structures=["flat"], n=12)[0]

    def broken(X, Y, H, C=1.0):
        raise RuntimeError("boom")
    assert "fit raised RuntimeError: boom" in failure(broken, "multiclass", problems=[p])
    with pytest.raises(InputError, match="parameters"):
        check_solver(lambda X, Y, H: None, "multiclass", problems=[p])


# ------------------------------------------------------------------ the project's own solvers
# RDA (Zhou et al. Alg. 1) is slow to a tight gap; dual_cd checks its methods in the default run
FAST = [pytest.param(name, solver, marks=[pytest.mark.slow] if solver == "rda" else [],
                     id=f"{name}-{solver}")
        for name in methods.names() for solver in methods.get(name).fast_solvers]


@pytest.mark.parametrize("name,solver", FAST)
def test_project_fast_solvers_pass_check_solver(name, solver):
    method = methods.get(name)
    fast = method.fast_solvers[solver]

    def fit(X, Y, H, **options):
        params = {k: v for k, v in options.items() if k in method.params}
        model_options = {k: v for k, v in options.items() if k not in method.params}
        return fast.solve(method.prepare(X, Y, H, **model_options), **params, **fast.options)

    try:
        # RDA stops at a certified relative gap of 2e-5: strong convexity (0.209 on these
        # cases) then bounds its weights' distance by sqrt(2 gap J / 0.209), about 1e-2, a tenth
        # of the optimum's norm (0.11 to 0.14), not the 1e-3 of the exact solvers
        # the option probes run with the method's first fast solver; the others (engine
        # variants of the same model) take the built-in cases
        first = solver == next(iter(method.fast_solvers))
        outcomes = check_solver(fit, method, rtol=max(fast.rtol, 1e-4),
                                problems=problems_for(method, probes=first),
                                weight_rtol=1e-1 if solver == "rda" else 1e-3)
    except InputError as exc:  # the registry entry's model and reference disagree (not ours)
        pytest.skip(str(exc))
    assert outcomes and all(o.ok for o in outcomes)


# ------------------------------------------------------------------ strategies from the package
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(datasets(kind="tree", n_min=6, n_max=14, d_max=3, sparse=False))
def test_reference_weights_pass_on_drawn_datasets(data):
    X, Y, H = data
    p = testing.Problem.from_arrays("hsvm", X, Y, H)
    try:
        p.model()
    except InputError:  # e.g. a drawn tree whose labels leave a sample without pairs
        return
    ref = p.reference()
    assert check_solver(lambda X, Y, H, **kw: ref.weights, "hsvm", problems=[p])[0].ok


@settings(max_examples=20, deadline=None)
@given(chains(), stars(), one_child_trees())
def test_shape_strategies(chain, star, one_child):
    assert max(chain.depth(v) for v in chain.nodes) >= 2
    assert all(star.is_leaf(v) for v in star.nodes if v != "root")
    assert any(len(one_child.children(v)) == 1 for v in one_child.nodes)


# ------------------------------------------------------------------ the pytest plugin
PLUGIN_TESTS = '''
    import pytest
    from hiercvx.testing.plugin import parametrize_with_references

    def test_hierarchy(hierarchy):
        assert len(hierarchy.leaves) >= 2

    def test_seed(hiercvx_seed):
        assert hiercvx_seed == 3

    @pytest.mark.hiercvx_method("multiclass")
    def test_marker(reference_problem):
        assert reference_problem.method.name == "multiclass" and reference_problem.seed == 3

    @parametrize_with_references("hsvm", structures=["tree", "dag"], n=12)
    def test_param(reference_problem):
        ref = reference_problem.reference()
        assert ref.gap < 1e-6 and reference_problem.n == 12
'''


def test_pytest_plugin(tmp_path):
    (tmp_path / "test_plugin_use.py").write_text(textwrap.dedent(PLUGIN_TESTS))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                          "hiercvx.testing.plugin", "--hiercvx-seed", "3", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "9 passed" in run.stdout, run.stdout[-2000:]


@pytest.mark.parametrize("wrong", [lambda x: -2e-6 * x, lambda x: 0 * x, lambda x: 2e-5 * x])
def test_check_gradient_is_scale_free(wrong):
    """A wrong gradient of a function with tiny values is caught as at any other scale."""
    f, x = (lambda x: 1e-6 * float(np.sum(x ** 2))), np.array([1.0, -2.0, 3.0])
    testing.check_gradient(f, lambda x: 2e-6 * x, x)
    with pytest.raises(AssertionError, match="directional derivative"):
        testing.check_gradient(f, wrong, x)
