"""A :class:`~hiercvx.reference.ReferenceProblem` pickles (its numpy routes are module-level
callables, never closures), for every method's primal and dual, and the unpickled problem
solves to the same certified answer."""

import pickle

import numpy as np
import pytest

from hiercvx import methods

CASES = [(name, role) for name in methods.names() for role in methods.get(name).references]


def _built(name, role):
    method = methods.get(name)
    case = method.cases(True)[0]
    return method.references[role](case.X, case.Y, case.H, **case.model_options, **case.params)


@pytest.mark.parametrize("name,role", CASES, ids=[f"{n}-{r}" for n, r in CASES])
def test_reference_problem_pickles_and_solves_to_the_same_certificate(name, role):
    prob = _built(name, role)
    copy = pickle.loads(pickle.dumps(prob))
    assert type(copy) is type(prob)
    first, second = prob.solve(), copy.solve()
    assert second.objective == pytest.approx(first.objective, rel=1e-6, abs=1e-9)
    assert second.lower_bound == pytest.approx(first.lower_bound, rel=1e-6, abs=1e-9)
    assert second.gap <= max(first.gap, 1e-6) * 10
    W1, W2 = (np.asarray(getattr(s.weights, "coef", s.weights), dtype=float)
              for s in (first, second))
    assert W2.shape == W1.shape
    # a solved problem pickles too (the solvers' native caches are left out) and solves again
    again = pickle.loads(pickle.dumps(prob)).solve()
    assert again.objective == pytest.approx(first.objective, rel=1e-6, abs=1e-9)


def test_a_reference_with_an_intercept_pickles_its_recovered_values():
    method = methods.get("orthogonal")
    case = method.cases(True)[0]
    prob = method.references["dual"](case.X, case.Y, case.H, **case.model_options, **case.params,
                                      fit_intercept=True)
    first, second = prob.solve(), pickle.loads(pickle.dumps(prob)).solve()
    assert np.allclose(second.values["intercept"], first.values["intercept"], atol=1e-5)


def _other_problems():
    from hiercvx.formulations import hsvm, nhsvm
    from hiercvx.methods.cases import problem

    X, Y, H = problem("tree", n=20, d=3, seed=0)
    U = np.random.default_rng(0).standard_normal((len(H), 3))
    leaves = np.random.default_rng(1).standard_normal((len(H.leaves), 3))
    return {"hsvm.class_form": lambda: hsvm.class_form(X, Y, H, C=1.0),
            "nhsvm.alpha_step": lambda: nhsvm.alpha_step(U, H),
            "nhsvm.shared_norm_problem (16)": lambda: nhsvm.shared_norm_problem(leaves, H),
            "nhsvm.shared_norm_problem (17)": lambda: nhsvm.shared_norm_problem(leaves),
            "nhsvm.path_weights_problem power": lambda: nhsvm.path_weights_problem(H),
            "nhsvm.path_weights_problem maxmin": lambda: nhsvm.path_weights_problem(H, "maxmin"),
            "nhsvm.path_weights_problem dag": lambda: nhsvm.path_weights_problem(H, "dag")}


@pytest.mark.parametrize("what", sorted(_other_problems()))
def test_every_other_reference_problem_pickles(what):
    prob = _other_problems()[what]()
    first, second = prob.solve(), pickle.loads(pickle.dumps(prob)).solve()
    assert second.objective == pytest.approx(first.objective, rel=1e-6, abs=1e-9)
    assert second.lower_bound == pytest.approx(first.lower_bound, rel=1e-6, abs=1e-9)
