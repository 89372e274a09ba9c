"""The hiercvx pytest plugin: certified reference problems as fixtures.

Installed hiercvx registers it as a ``pytest11`` entry point (or load it with
``pytest -p hiercvx.testing.plugin``).  It provides

- ``--hiercvx-seed N``: the base seed of every generated problem (default 0); the fixture
  ``hiercvx_seed`` returns it (pass it to ``check_solver(..., random_state=hiercvx_seed)``);
- the fixture ``hierarchy``: one test per shape (a tree, a DAG, a deep chain, a star, a tree
  with a one-child node);
- the fixture ``reference_problem``: a :class:`hiercvx.testing.Problem` with its certified
  reference (``problem.reference()``); the method comes from :func:`parametrize_with_references`
  or from the marker ``@pytest.mark.hiercvx_method("hsvm")`` (default ``"hsvm"`` on a tree);
- :func:`parametrize_with_references` ``(method, structures=None, seeds=(0,), ...)``: runs the
  test once per generated problem of ``method``, as scikit-learn's ``parametrize_with_checks``;
  the test ids name the seed each problem is generated at (``seeds`` shifted by
  ``--hiercvx-seed``).

The module itself imports pytest only: hiercvx's registry and references are imported when a
fixture or :func:`parametrize_with_references` is used, so a test run that uses none of them
does not pay for them.

>>> from hiercvx.testing.plugin import parametrize_with_references
>>> @parametrize_with_references("multiclass")
... def test_my_solver(reference_problem):
...     p = reference_problem
...     W = my_fit(p.X, p.Y, p.H, **p.options)
...     assert abs(hiercvx.testing.objective(p.method, W, p.X, p.Y, p.H, **p.options)
...                - p.reference().objective) < 1e-4
"""

from __future__ import annotations

from functools import lru_cache

import pytest

__all__ = ["HIERARCHIES", "parametrize_with_references", "pytest_addoption", "pytest_configure",
           "pytest_generate_tests"]

#: the shapes the ``hierarchy`` fixture runs a test on (``HIERARCHIES`` maps them to hierarchies)
SHAPES = ("tree", "dag", "chain", "star", "one_child")


@lru_cache(maxsize=1)
def _hierarchies() -> dict:
    from ..hierarchy import Hierarchy
    from ..methods.cases import DAG, TREE
    return {
        "tree": TREE,
        "dag": DAG,
        "chain": Hierarchy.from_parents({"r": None, "a": "r", "b": "a", "c": "b", "c1": "c", "c2": "c"}),
        "star": Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(5)}}),
        "one_child": Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "A1": "A", "A2": "A",
                                             "B1": "B", "B1a": "B1", "B1b": "B1"}),
    }


def __getattr__(name: str):
    if name == "HIERARCHIES":   # built on first use: the hierarchies import hiercvx's registry
        return _hierarchies()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_addoption(parser):
    group = parser.getgroup("hiercvx")
    group.addoption("--hiercvx-seed", action="store", type=int, default=0,
                    help="base seed of the problems hiercvx generates (default 0)")


def pytest_configure(config):
    config.addinivalue_line("markers", "hiercvx_method(name, structure=None): the registered method "
                                       "(and structure) of the reference_problem fixture")
    config.addinivalue_line("markers", "hiercvx_references(method, ...): set by "
                                       "hiercvx.testing.plugin.parametrize_with_references")


def _base_seed(config) -> int:
    return int(config.getoption("hiercvx_seed", default=0) or 0)


@pytest.fixture
def hiercvx_seed(request) -> int:
    """The ``--hiercvx-seed`` option (default 0)."""
    return _base_seed(request.config)


@pytest.fixture(params=list(SHAPES), ids=list(SHAPES))
def hierarchy(request):
    """Each shape of :data:`SHAPES` in turn (a :class:`~hiercvx.hierarchy.Hierarchy`)."""
    return _hierarchies()[request.param]


@pytest.fixture
def reference_problem(request, hiercvx_seed):
    """A generated :class:`~hiercvx.testing.Problem` (data, options, certified reference).

    Parametrized by :func:`parametrize_with_references`; otherwise from the marker
    ``hiercvx_method(name, structure=None)``, or ``hsvm`` on a tree.  ``--hiercvx-seed`` shifts
    the seed."""
    from .problems import as_method, problems_for
    spec = getattr(request, "param", None)
    if spec is None:
        marker = request.node.get_closest_marker("hiercvx_method")
        name = marker.args[0] if marker and marker.args else "hsvm"
        structure = None
        if marker is not None:
            structure = marker.kwargs.get("structure", marker.args[1] if len(marker.args) > 1 else None)
        method = as_method(name)
        spec = {"method": name, "structures": [structure or method.structures[0]], "seed": 0,
                "options": {}}
    method = as_method(spec["method"])
    problems = problems_for(method, structures=spec["structures"], seeds=(spec["seed"] + hiercvx_seed,),
                            n=spec.get("n"), d=spec.get("d"), **spec["options"])
    return problems[spec.get("index", 0)]


def parametrize_with_references(method, structures=None, seeds=(0,), n=None, d=None, **options):
    """Decorator: run the test once per generated problem of ``method`` (one per built-in case
    of each of ``structures``, default all the method supports, and per seed), the problem
    handed over by the ``reference_problem`` fixture.  ``n``, ``d`` resize the problems;
    ``options`` override parameters and model options (``C=0.1``, ``fit_intercept=True``).
    The tests are generated when pytest collects them (:func:`pytest_generate_tests`), so their
    ids carry the seed each problem is generated at: ``seeds`` shifted by ``--hiercvx-seed``
    (``hsvm-tree-seed3`` under ``--hiercvx-seed 3``)."""
    from .problems import as_method
    name = as_method(method).name
    return pytest.mark.hiercvx_references(name, structures=structures, seeds=tuple(seeds), n=n, d=d,
                                          options=dict(options))


def pytest_generate_tests(metafunc):
    """Parametrize a test marked by :func:`parametrize_with_references` over its problems."""
    marker = metafunc.definition.get_closest_marker("hiercvx_references")
    if marker is None or "reference_problem" not in metafunc.fixturenames:
        return
    specs, ids = _reference_specs(*marker.args, base=_base_seed(metafunc.config), **marker.kwargs)
    metafunc.parametrize("reference_problem", specs, ids=ids, indirect=True)


def _reference_specs(method, structures=None, seeds=(0,), n=None, d=None, options=None, base=0):
    """``(specs, ids)``: one fixture spec per generated problem, ids with the effective seed."""
    from .problems import as_method
    m = as_method(method)
    wanted = tuple(m.structures) if structures is None else tuple(structures)
    specs, ids = [], []
    for structure in wanted:
        count = sum(1 for case in m.cases(True) if case.structure == structure)
        for seed in seeds:
            for index in range(count):
                specs.append({"method": m.name, "structures": [structure], "seed": int(seed),
                              "index": index, "n": n, "d": d, "options": dict(options or {})})
                ids.append(f"{m.name}-{structure}{'' if count == 1 else index}-seed{int(seed) + base}")
    return specs, ids
